"""bench/roles.py gives each perf sample the role of its process in the command's tree."""
from __future__ import annotations

import pytest

from bench import roles


def fork(child, father):
    return f"    0/0         0.000000: PERF_RECORD_FORK({child}:{child}):({father}:{father})"


def execs(pid, comm):
    return f"    0/0         0.000000: PERF_RECORD_COMM exec: {comm}:{pid}/{pid}"


def samples(pid, n):
    return [f"{pid}/{pid} 100.{i:06d}: " for i in range(n)]


def test_each_process_of_the_tree_has_its_role():
    lines = [fork(10, 9), execs(10, "chapter"),            # the command (perf's child)
             fork(11, 10), execs(11, "python3"),           # zygote 1
             fork(12, 11),                                 # zygote 2, forked from it
             fork(13, 11), fork(14, 13),                   # a monitor of zygote 1 and its sandbox
             fork(15, 12), fork(16, 15), fork(17, 16),     # zygote 2's monitor, sandbox, and a process of the sandbox
             fork(18, 12), fork(19, 18),                   # another of zygote 2's monitors
             fork(20, 10), fork(21, 20),                   # a grading worker and its child
             fork(22, 10), execs(22, "ldconfig"),          # a program the command runs
             fork(23, 1)]                                  # outside the tree
    counts = {10: 5, 11: 7, 12: 11, 13: 2, 14: 30, 15: 1, 16: 40, 17: 3, 18: 1, 19: 20,
              20: 4, 21: 6, 22: 9, 23: 8, 0: 13}
    for pid, n in counts.items():
        lines += samples(pid, n)
    got = roles.classify("\n".join(lines), "/x/.venv/bin/chapter")
    expected = {"command": 5, "grading workers": 4, "their children": 6, "zygote 1": 7, "zygote 2": 11,
                "monitors": 4, "sandboxes": 93, "other programs": 9, "idle": 13, "rest of machine": 8}
    assert got == pytest.approx({r: n / roles.FREQUENCY for r, n in expected.items()})


def test_a_run_without_a_second_zygote_has_none():
    lines = [fork(10, 9), execs(10, "chapter"), fork(11, 10), execs(11, "python3"),
             fork(13, 11), fork(14, 13), *samples(13, 2), *samples(14, 5), *samples(11, 3)]
    got = roles.classify("\n".join(lines), "chapter")
    assert got["zygote 2"] == 0 and got["monitors"] == pytest.approx(2 / roles.FREQUENCY)
    assert got["sandboxes"] == pytest.approx(5 / roles.FREQUENCY)


def test_a_trace_without_the_command_is_refused():
    with pytest.raises(ValueError, match="chapter"):
        roles.classify("\n".join([fork(11, 10), *samples(11, 3)]), "chapter")
