"""A zygote whose notebooks use torch is two: the first serves notebooks that never name torch as
soon as it has imported everything else, while a second one, forked from it, imports torch (seconds)
and then serves the rest. Both apply every isolation layer, name their sandboxes' control groups
by the first one's pid, and stop together."""
import os
import resource
import signal
import time

import pytest

from graders.sandbox import cgroups
from graders.sandbox.linux import alive, children_of, stat_fields
from graders.sandbox.zygote import LIGHT_SOCKET, Limits, Zygote, socket_for, split_preload
from tests.namespaces import namespaces_permitted
from tests.sandbox.test_figures import job


LIMITS = Limits(cell_seconds=30, notebook_seconds=60)
# which zygote ran a cell shows in whether torch was there before the cell imported it; the
# light one is asked without naming the library, or the job would be sent to the other
SEEN = ("import sys\n"
        "preloaded = ('sympy' in sys.modules) + 2 * ('to' 'rch' in sys.modules)\n"   # 1: sympy, 2: torch
        "names = [line.rsplit('/', 1)[-1].strip() for line in open('/proc/self/cgroup')]\n"
        "group = [int(n.split('-')[2]) for n in names if n.startswith('chapter-sandbox-')][:1] or [-1]\n"
        "group = group[0]\n")


LIGHT = job(SEEN + "x = 6 * 7\n", ["preloaded", "group", "x"])
TORCH = job(SEEN + "import torch\nx = float(torch.ones(3).sum())\n", ["preloaded", "group", "x"])


def children_cpu():
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def own_cpu(pid):
    with open(f"/proc/{pid}/stat", "rb") as fh:
        fields = stat_fields(fh.read())
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")   # user + system time


def test_only_torch_waits_for_the_second_zygote():
    assert split_preload(["IPython", "numpy", "torch", "torch._dynamo", "sympy"]) == (
        ["IPython", "numpy", "sympy"], ["torch", "torch._dynamo"])
    assert split_preload(["IPython", "sympy"]) == (["IPython", "sympy"], [])


def test_a_job_goes_to_the_light_socket_only_when_no_cell_names_torch(tmp_path):
    full = str(tmp_path / "zygote.sock")
    plain = {"cells": [{"index": 0, "source": "x = 1"}, {"index": 1, "source": "import sympy"}]}
    assert socket_for(full, plain) == full                     # no light socket: the one zygote
    (tmp_path / LIGHT_SOCKET).touch()
    assert socket_for(full, plain) == str(tmp_path / LIGHT_SOCKET)
    for named in ("import torch", "from torch import nn", "y = torch_like"):
        assert socket_for(full, {"cells": plain["cells"] + [{"index": 2, "source": named}]}) == full
    assert socket_for(full, {"cells": [{"index": 0, "source": ["import torch"]}]}) == full   # not text


@pytest.mark.skipif(not namespaces_permitted(), reason="needs namespaces")
def test_both_zygotes_isolate_alike_and_stop_together():
    counted = children_cpu()
    zygote = Zygote(preload=("IPython", "sympy", "torch")).start().wait_ready()
    first = zygote.process.pid
    try:
        light, heavy = zygote.run(LIGHT, LIMITS), zygote.run(TORCH, LIMITS)
        second = children_of(first)
        second_cpu = own_cpu(second[0])   # importing torch
        assert light.status == heavy.status == "ok", (light.detail, heavy.detail)
        answers = light.cells[1]["answers"], heavy.cells[1]["answers"]
        assert answers[0]["preloaded"] == 1 and answers[0]["x"] == 42
        assert answers[1]["preloaded"] == 1 + 2 and answers[1]["x"] == 3.0
        in_force = [sorted(k for k, v in {**run.monitor_layers, **run.layers}.items() if v is True)
                    for run in (light, heavy)]
        assert in_force[0] == in_force[1] and "seccomp" in in_force[0]
        if cgroups.detect().get("error") is None:
            assert [seen["group"] for seen in answers] == [first, first]   # chapter-sandbox-<first>-<monitor>
        assert len(second) == 1 and alive(second[0])
    finally:
        zygote.close()
    assert not alive(first) and not alive(second[0])
    # the first reaped the second before it ended: nothing was left behind, and the second's work
    # is the grader's to account for (it was not, while the first ended without waiting)
    assert children_cpu() - counted >= second_cpu > 0.1
    plan = cgroups.detect()
    if "error" not in plan:
        assert cgroups.groups_of(plan, first) == []


@pytest.mark.skipif(not namespaces_permitted(), reason="needs namespaces")
def test_a_zygote_closed_while_its_second_still_imports_torch_closes_at_once():
    """A short run (a few light notebooks) ends before torch is imported: the second zygote has
    nothing to finish, so it is killed, not waited for (its import takes most of a second)."""
    zygote = Zygote(preload=("IPython", "torch")).start().wait_ready()
    first = zygote.process.pid
    try:
        deadline = time.monotonic() + 10
        while not children_of(first) and time.monotonic() < deadline:   # forked just after "ready"
            time.sleep(0.01)
        second = children_of(first)
        assert len(second) == 1
        assert zygote.run(LIGHT, LIMITS).status == "ok"
    finally:
        started = time.monotonic()
        zygote.close()
        took = time.monotonic() - started
    assert not alive(first) and not alive(second[0])
    assert took < 0.5, took


@pytest.mark.skipif(not namespaces_permitted(), reason="needs namespaces")
def test_when_the_second_zygote_dies_the_first_stops_and_says_why():
    zygote = Zygote(preload=("IPython", "torch")).start().wait_ready()
    try:
        deadline = time.monotonic() + 60
        while not children_of(zygote.process.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        second = children_of(zygote.process.pid)
        assert len(second) == 1
        os.kill(second[0], signal.SIGKILL)
        deadline = time.monotonic() + 10
        while zygote.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not zygote.alive()
        assert "second zygote" in zygote.log_tail()
    finally:
        zygote.close()
