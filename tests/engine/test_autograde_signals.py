"""SIGTERM mid-run: sandboxes and scratch gone, the journal consistent, and the next run resumes."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import sys
import time
from pathlib import Path

import nbformat
import pytest

from graders.engine import journal
from graders.engine import autograde as ag
from graders import variants
from graders.engine.scratch import make_course
from tests.warm_nbgrader import nbgrader

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ASSIGNMENT, NB = "worked", "w1-memory"
CLASS = [variants.student_for(label, ASSIGNMENT, prefix=f"s{i}") for i, label in enumerate("ABCDABCD")]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The scratch course with NB generated into its gradebook, once: each test grades a copy."""
    course = make_course(ROOT, tmp_path_factory.mktemp("generated") / "course", only=[ASSIGNMENT])
    for path in (course / "source" / ASSIGNMENT).iterdir():
        if path.name != f"{NB}.ipynb":
            path.unlink()
    nbgrader("generate_assignment", ASSIGNMENT, "--force", cwd=course)
    return course


@pytest.fixture
def course(generated, tmp_path):
    """A fresh copy of the generated course (its gradebook holds no path) with the class submitted."""
    course = Path(shutil.copytree(generated, tmp_path / "course", symlinks=True))
    solution = nbformat.read(ROOT / "solutions" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    for sid in CLASS:
        folder = course / "submitted" / sid / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(solution, folder / f"{NB}.ipynb")
    return course


def recorded(course: Path) -> list[str]:
    folder = course / journal.JOURNAL / ASSIGNMENT
    done = []
    for path in folder.glob("*.json") if folder.exists() else ():
        entry = json.loads(path.read_text())      # every entry is whole JSON, whenever it was read
        if entry["state"] == "recorded":
            done.append(entry["result"]["student"])
    return done


@pytest.mark.parametrize("how, where", [("SIGTERM", "local"), ("SIGINT", "local"), ("SIGTERM", "scheduler")])
def test_sigterm_mid_run_cleans_up_and_the_next_run_resumes(course, tmp_path, request, how, where):
    """Stopped after the first recordings: exit 128 + the signal, no zygote folder or sandbox left,
    and the next run (local) resumes and finishes. On a cluster the grading process stops the same
    way; the workers, and their zygotes, are the cluster's and stay up."""
    stop = getattr(signal, how)
    # a temp directory of its own, shallow enough to hold the zygote's socket (a deeper one, such
    # as pytest's on a worker of its own, sends the zygote to /tmp, where this test would not see it)
    scratch = Path(tempfile.mkdtemp(prefix="chapter-signals-", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(scratch, ignore_errors=True))
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "graders.cli", "autograde", ASSIGNMENT, "--course", str(course),
               "--workers", "1", "--no-progress"]
    if where == "scheduler":
        command += ["--scheduler", request.getfixturevalue("dask_cluster").address]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not recorded(course) and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.2)
    assert process.poll() is None, "the run ended before it could be stopped"
    if where == "local":
        assert list(scratch.glob("chapter-zygote-*")), "the zygote's scratch folder is not where TMPDIR says"
    process.send_signal(stop)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 128 + stop, err
    assert f"stopped by {how}" in err
    assert not list(scratch.glob("chapter-zygote-*")), "the zygote's scratch folder was left behind"
    first = recorded(course)
    assert 1 <= len(first) < len(CLASS)
    report = ag.autograde(course, ASSIGNMENT, workers=2, progress=False, out=None)
    assert report.reused >= len(first)
    assert sorted(report.results) == sorted(CLASS) and not report.failed
    assert all(r.notebooks[0].score == 4.0 for r in report.results.values())
    assert sorted(recorded(course)) == sorted(CLASS)


def test_a_stopped_cluster_run_stops_its_sandboxes_on_the_workers(course, tmp_path, dask_cluster):
    """SIGTERM to `chapter autograde --scheduler` while a worker runs a notebook that sleeps: the
    run cancels its queued tasks and kills its running gradings, whose sandboxes die with them,
    instead of sleeping on to their own limit (three minutes of wall clock here)."""
    from distributed import Client
    from graders.sandbox import cgroups
    plan = cgroups.detect()
    if "error" in plan:
        pytest.skip(f"no control groups here: {plan['error']}")
    sleepy = CLASS[0]
    path = course / "submitted" / sleepy / ASSIGNMENT / f"{NB}.ipynb"
    nb = nbformat.read(path, as_version=4)
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    answer.source = "import time\ntime.sleep(150)\n" + answer.source
    nbformat.write(nb, path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "graders.cli", "autograde", ASSIGNMENT, "--course", str(course),
               "--no-progress", "--scheduler", dask_cluster.address]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with Client(dask_cluster.address, timeout="30s") as client:
        def sandboxes():
            def groups(dask_worker):
                return [name for plugin in dask_worker.plugins.values()
                        if getattr(plugin, "zygote", None) is not None and plugin.zygote.process is not None
                        for name in cgroups.groups_of(cgroups.detect(), plugin.zygote.process.pid)]
            return [name for names in client.run(groups).values() for name in names]
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and process.poll() is None and \
                not (len(recorded(course)) >= len(CLASS) - 1 and sandboxes()):
            time.sleep(0.3)
        assert process.poll() is None and sandboxes(), "the sleeping notebook was never seen running"
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=120)
        assert process.returncode == 128 + signal.SIGTERM, err
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and sandboxes():
            time.sleep(0.3)
        assert not sandboxes(), "the stopped run's sandbox slept on on its worker"
    assert sleepy not in recorded(course)
