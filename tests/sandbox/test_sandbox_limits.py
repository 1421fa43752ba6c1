"""The sandbox's per-notebook limits, fair time, fail-closed layers and seccomp allowlist.

One scratch course holds one `practice` notebook (real torch work). It is graded
once quietly (an honest student alone) and once in a hostile batch, where the same
honest student sits beside a CPU hog (sixty busy-looping children), a forking
memory hog and a notebook that fills its tmpfs. The hogs submit the full solution
too, so that without the guard they would score full marks.
"""
from __future__ import annotations

import errno
import os
import signal
import threading
import time
from pathlib import Path

import nbformat
import pytest

from bench.cotenancy_bench import cpu_hog, memory_hog
from graders.engine import autograde as ag
from graders.sandbox import cgroups, seccomp
from graders import variants
from graders.engine.scratch import make_course
from tests.warm_nbgrader import nbgrader
from graders.sandbox.zygote import Limits, SandboxUnavailable, Zygote
from tests.namespaces import namespaces_permitted
from tests.conftest import running

ROOT = Path(__file__).resolve().parents[2]
ASSIGNMENT = "practice"
NB = "p1-loss-scaler"
PLAN = cgroups.detect()

needs_isolation = pytest.mark.skipif(not namespaces_permitted() or "error" in PLAN,
                                     reason="namespaces or control groups are not available here")
pytestmark = needs_isolation

# A cell limit of 2 s: the honest notebook's heaviest cell needs well under 1 s of CPU, but a
# starved one would miss it if time were counted on the wall clock; the backstop is 20 s. The CPU
# hog's sixty children run until they have used the notebook limit (10 s of CPU time, all the
# honest notebook's cells need a few), and the hostile batch waits for them.
LIMITS = Limits(cell_seconds=2, notebook_seconds=10, wall_factor=10, memory_bytes=1 << 30, processes=128,
                file_bytes=512 << 20, tmp_bytes=1 << 30)

CPU_HOG = cpu_hog(60)
MEMORY_HOG = memory_hog(4, 400, hold=5)   # each child under its own 1 GiB RLIMIT_AS, 1.6 GiB together
TMPFS_FILL = """
import os
# The files are written by a child: filling tmpfs up to the memory limit can take over 2 s of
# CPU (the kernel reclaims before it gives up), and the cell's own CPU limit must not stop it first.
pid = os.fork()
if pid == 0:
    chunk = b'x' * (100 << 20)
    for place in ('/tmp', '/dev/shm', '/home/student'):   # 1.2 GiB of files in memory-backed folders
        for i in range(4):
            with open(f'{place}/fill-{i}', 'wb') as fh:
                fh.write(chunk)
    os._exit(0)
os.waitpid(pid, 0)
"""


def student(label, name):
    return variants.student_for(label, ASSIGNMENT, prefix=name)


def solution():
    return nbformat.read(ROOT / "solutions" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)


def with_first_cell(source):
    nb = solution()
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    nb.cells.insert(first + 1, nbformat.v4.new_code_cell(source))
    return nb


def submit(course, sid, nb):
    folder = course / "submitted" / sid / ASSIGNMENT
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / f"{NB}.ipynb")


def new_course(tmp_path_factory, name):
    course = make_course(ROOT, tmp_path_factory.mktemp(name), only=[ASSIGNMENT])
    for path in (course / "source" / ASSIGNMENT).iterdir():
        if path.name != f"{NB}.ipynb":
            path.unlink()
    nbgrader("generate_assignment", ASSIGNMENT, "--force", cwd=course)
    return course


def our_groups():
    return cgroups.groups_of(PLAN)


@pytest.fixture(scope="module")
def batches(tmp_path_factory):
    before = set(our_groups())
    honest = student("A", "honest")
    quiet = new_course(tmp_path_factory, "quiet")
    submit(quiet, honest, solution())
    quiet_report = ag.autograde(quiet, ASSIGNMENT, workers=1, limits=LIMITS, progress=False, out=None)
    hostile = new_course(tmp_path_factory, "hostile")
    cls = {"cpu": student("B", "cpu-hog"), "memory": student("C", "memory-hog"),
           "tmpfs": student("D", "tmpfs-fill"), "honest": honest}
    submit(hostile, cls["cpu"], with_first_cell(CPU_HOG))
    submit(hostile, cls["memory"], with_first_cell(MEMORY_HOG))
    submit(hostile, cls["tmpfs"], with_first_cell(TMPFS_FILL))
    submit(hostile, honest, solution())
    report = ag.autograde(hostile, ASSIGNMENT, workers=4, limits=LIMITS, progress=False, out=None)
    return {"quiet": quiet_report, "hostile": report, "cls": cls, "before": before, "after": set(our_groups())}


def notebook(report, sid):
    return report.results[sid].notebooks[0]


def test_honest_score_is_the_same_beside_a_cpu_hog(batches):
    """An honest practice notebook graded beside sixty busy-looping children scores as in a quiet run."""
    sid = batches["cls"]["honest"]
    quiet, hostile = notebook(batches["quiet"], sid), notebook(batches["hostile"], sid)
    assert quiet.score == quiet.max_score > 0, (quiet.reasons, quiet.feedback)
    assert hostile.grades == quiet.grades, (hostile.reasons, hostile.feedback)
    assert hostile.score == quiet.score and not hostile.reasons
    hog = notebook(batches["hostile"], batches["cls"]["cpu"])
    assert hog.run["status"] == "timeout" and f"{LIMITS.notebook_seconds:g} s limit" in hog.run["detail"], hog.run


def test_forking_memory_hog_is_stopped_as_a_whole(batches):
    """Four children of 400 MiB, each under the per-process limit, together over 1 GiB: stopped, 0."""
    hog = notebook(batches["hostile"], batches["cls"]["memory"])
    assert hog.score == 0 and hog.max_score > 0
    assert hog.run["status"] == "crashed"
    assert any("memory limit" in reason for reason in hog.reasons), hog.reasons


def test_tmpfs_counts_against_memory(batches):
    """Files written to /tmp, /dev/shm and the working folder are charged to the notebook's memory."""
    filler = notebook(batches["hostile"], batches["cls"]["tmpfs"])
    assert filler.score == 0
    assert any("memory limit" in reason for reason in filler.reasons), filler.reasons


def test_summary_lists_every_layer(batches):
    """The summary names namespaces, uid, seccomp, the control group and rlimits."""
    layers = batches["hostile"].layers_in_effect()
    for name in ("pid namespace", "mount namespace", "network namespace", "uid ", "seccomp allowlist",
                 "control group", "rlimits"):
        assert name in layers, layers
    assert "NOT in force" not in layers


def test_no_control_group_is_left_after_a_run(batches):
    """Every group a batch made is removed when it ends. A group is named after the zygote and the
    monitor that made it, and each notebook's result names its monitor: a new group whose monitor
    is none of the batches' belongs to another grading run on this machine, not to ours."""
    ours = {(nb.layers.get("monitor") or {}).get("monitor") for report in (batches["quiet"], batches["hostile"])
            for result in report.results.values() for nb in result.notebooks} - {None}
    assert len(ours) >= 2, ours      # one monitor a notebook, in both batches
    left = {name for name in batches["after"] - batches["before"] if cgroups.monitor_of(name) in ours}
    assert not left, left


# ---------------------------------------------------------------------- fail closed
JOB = {"cells": [{"index": 0, "source": "x = 6 * 7"},
                 {"index": 1, "source": "pass", "test": "t", "keys": ["x"]}], "env": {}}


@pytest.fixture(scope="module")
def broken_seccomp():
    zygote = Zygote(fail_layers=["seccomp"]).start().wait_ready()
    yield zygote
    zygote.close()


@pytest.mark.parametrize("layer", ["seccomp", "control_group", "pid_namespace", "mount_namespace",
                                   "network_namespace", "uid", "rlimits"])
def test_a_failed_layer_runs_no_student_code(layer, tmp_path):
    """When one layer cannot be applied, the job is refused as an infrastructure fault: nothing runs."""
    marker = tmp_path / "ran"
    os.chmod(tmp_path, 0o777)
    job = {"cells": [{"index": 0, "source": f"open({str(marker)!r}, 'w').write('x')\nx = 1"},
                     {"index": 1, "source": "pass", "test": "t", "keys": ["x"]}], "env": {}}
    with Zygote(fail_layers=[layer], preload=()) as zygote:
        with pytest.raises(SandboxUnavailable, match="no student code was run"):
            zygote.run(job, LIMITS)
    assert not marker.exists()


def test_degraded_mode_runs_and_says_what_is_missing():
    """With allow_degraded the notebook runs, and the layer that failed is reported."""
    with Zygote(fail_layers=["seccomp"], preload=(), allow_degraded=True) as zygote:
        run = zygote.run(JOB, LIMITS)
    assert run.cells[1]["answers"] == {"x": 42}
    assert "seccomp_error" in run.monitor_layers and run.monitor_layers.get("seccomp") is not True


def test_a_failed_layer_is_reported_not_graded(tmp_path_factory, broken_seccomp):
    """Through the engine: the notebook is NOT GRADED (retried, then reported), never scored."""
    course = new_course(tmp_path_factory, "failclosed")
    sid = student("A", "honest")
    submit(course, sid, solution())
    report = ag.autograde(course, ASSIGNMENT, workers=1, limits=LIMITS, progress=False, out=None,
                          zygote=broken_seccomp)
    assert sid in report.failed and sid not in report.results
    assert "seccomp" in report.failed[sid] and f"NOT GRADED {sid}" in report.summary()
    from nbgrader.api import Gradebook, MissingEntry
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        with pytest.raises(MissingEntry):
            gb.find_submission(ASSIGNMENT, sid)


# ---------------------------------------------------------------------- seccomp
REFUSED = ("pidfd_getfd", "process_madvise", "kcmp", "personality", "mknod", "mknodat", "iopl", "ioperm",
           "settimeofday", "clock_settime", "unshare", "setns", "mount", "ptrace", "bpf", "perf_event_open",
           "keyctl", "userfaultfd", "io_uring_setup", "init_module", "kexec_load", "process_vm_readv",
           "setuid", "chroot")


def test_seccomp_refuses_the_named_syscalls():
    """From inside a sandbox each named syscall fails with EPERM; ordinary ones still work."""
    lib = seccomp.library()
    numbers = {name: lib.seccomp_syscall_resolve_name(name.encode()) for name in REFUSED}
    numbers = {name: n for name, n in numbers.items() if n >= 0}
    assert {"pidfd_getfd", "kcmp", "personality", "settimeofday"} <= set(numbers)
    order = sorted(numbers)
    source = ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nresult = []\n"
              f"for number in {[numbers[n] for n in order]!r}:\n"
              "    ctypes.set_errno(0)\n"
              "    value = libc.syscall(number, 0, 0, 0, 0, 0)\n"
              "    result.append([value, ctypes.get_errno()])\n"
              "ctypes.set_errno(0)\n"
              "getppid = [libc.syscall(" + str(lib.seccomp_syscall_resolve_name(b'getppid'))
              + "), ctypes.get_errno()]\n"
              "import os\nnew_user = 0x10000000\n"
              "clone_user = libc.syscall(" + str(lib.seccomp_syscall_resolve_name(b"clone"))
              + ", new_user | 17, 0, 0, 0, 0), ctypes.get_errno()\n")
    job = {"cells": [{"index": 0, "source": source},
                     {"index": 1, "source": "pass", "test": "t", "keys": ["result", "getppid", "clone_user"]}],
           "env": {}}
    with Zygote(preload=()) as zygote:
        run = zygote.run(job, LIMITS)
    answers = run.cells[1]["answers"]
    result = dict(zip(order, answers["result"]))
    for name in order:
        assert result[name] == [-1, errno.EPERM], (name, result[name])
    assert answers["getppid"] == [0, 0]   # PID 1's parent, in its own PID namespace: allowed
    assert answers["clone_user"] == [-1, errno.EPERM]


def test_allowlist_builds_for_both_architectures(tmp_path):
    """The allowlist compiles by name for x86_64 and aarch64 (libseccomp resolves the numbers)."""
    import ctypes
    lib = seccomp.library()
    lib.seccomp_arch_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    sizes = {}
    for arch, token in (("x86_64", 0xC000003E), ("aarch64", 0xC00000B7)):
        ctx = seccomp.build(lib, arches=(token,))
        try:
            path = tmp_path / arch
            with open(path, "wb") as fh:
                assert lib.seccomp_export_bpf(ctx, fh.fileno()) == 0
            sizes[arch] = path.stat().st_size
        finally:
            lib.seccomp_release(ctx)
    assert all(size > 8 * 100 for size in sizes.values()), sizes   # one instruction is 8 bytes


# ---------------------------------------------------------------------- clean-up
SLEEPER = {"cells": [{"index": 0, "source": "import os, time\nfor _ in range(3):\n    os.fork()\ntime.sleep(60)"}],
           "env": {}}


def _run_in_background(zygote):
    def go():
        try:
            zygote.run(SLEEPER, LIMITS)
        except Exception:  # noqa: BLE001 - the zygote is killed under it
            pass
    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread


def _wait_for_group(zygote_pid, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        names = cgroups.groups_of(PLAN, zygote_pid)
        if names and len(cgroups.Group(PLAN, names[0]).pids()) >= 8:
            return names[0]
        time.sleep(0.1)
    raise AssertionError("the sandbox's control group never filled")


def test_no_group_left_after_the_zygote_is_killed():
    """SIGKILL the zygote mid-run: closing it kills the sandbox and removes its group."""
    zygote = Zygote(preload=()).start().wait_ready()
    pid = zygote.process.pid
    _run_in_background(zygote)
    name = _wait_for_group(pid)
    members = cgroups.Group(PLAN, name).pids()
    os.kill(pid, signal.SIGKILL)
    zygote.close()
    assert cgroups.groups_of(PLAN, pid) == []
    assert members and not [p for p in members if running(p)]


def test_no_group_left_after_zygote_and_monitor_are_killed():
    """Everything trusted SIGKILLed at once: the next zygote sweeps up the orphaned group."""
    zygote = Zygote(preload=()).start().wait_ready()
    pid = zygote.process.pid
    _run_in_background(zygote)
    name = _wait_for_group(pid)
    os.kill(cgroups.monitor_of(name), signal.SIGKILL)
    os.kill(pid, signal.SIGKILL)
    zygote.process.wait()
    # nobody of this zygote's is left to remove the group: a zygote that starts next sweeps it (the
    # fresh one below, or one of another grader on the machine, whichever starts first)
    zygote.process = None                             # forget it without its own sweep
    zygote.close()
    with Zygote(preload=()) as fresh:
        assert fresh.alive()
        assert name not in cgroups.groups_of(PLAN, pid)


def test_a_sandbox_whose_grader_goes_away_is_killed():
    """The grading process dies mid-notebook (a task past its limit, killed; a stopped run): its
    connection closes, and the monitor kills the sandbox and removes its group at once, instead
    of letting it run to its own limit while the zygote serves others."""
    with Zygote(preload=()) as zygote:
        pid = zygote.process.pid
        grader = os.fork()
        if grader == 0:
            try:
                zygote.run(SLEEPER, LIMITS)
            finally:
                os._exit(0)
        name = _wait_for_group(pid)
        members = cgroups.Group(PLAN, name).pids()
        os.kill(grader, signal.SIGKILL)
        os.waitpid(grader, 0)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and name in cgroups.groups_of(PLAN, pid):
            time.sleep(0.1)
        assert name not in cgroups.groups_of(PLAN, pid), "the sandbox ran on without its grader"
        assert members and not [p for p in members if running(p)]
        assert zygote.alive()


INSIDE = ("lambda text: ','.join(sorted(c for line in text.splitlines() for c in line.split(':')[1].split(',') "
          "if 'chapter-sandbox-' in line.split(':', 2)[2]))")
IN_GROUP = {"cells": [
    {"index": 0, "source": "import os\nr, w = os.pipe()\npid = os.fork()\nif pid == 0:\n"
                           "    os.write(w, open('/proc/self/cgroup', 'rb').read())\n    os._exit(0)\n"
                           f"os.waitpid(pid, 0)\ninside = {INSIDE}\nchild = inside(os.read(r, 1 << 16).decode())\n"
                           "mine = inside(open('/proc/self/cgroup').read())"},
    {"index": 1, "source": "pass", "test": "t", "keys": ["mine", "child"]}], "env": {}}


def test_the_notebook_and_its_children_are_in_its_group_in_every_hierarchy():
    """The sandbox joins v1 hierarchies through `tasks` (its one thread): the whole process moves,
    so the notebook and what it forks are in the sandbox's group wherever the plan has one."""
    controllers = {("freezer" if what == "kill" else what) for what, (version, _) in PLAN.items()
                   if what != "error" and version == 1}
    if not controllers:
        pytest.skip("no cgroup v1 hierarchy on this machine: this test is about joining v1 through `tasks`")
    with Zygote(preload=()) as zygote:
        run = zygote.run(IN_GROUP, LIMITS)
    answers = run.cells[1]["answers"]
    for who in ("mine", "child"):
        assert controllers <= set(answers[who]["str"].split(",")), (who, answers[who], controllers)
