"""The engine behind the gate, agreement with plain nbgrader, and a run killed halfway.

- The gate (`graders.course.gate.evaluate`) now grades through `chapter autograde`; it
  must still pass the published solution and refuse a broken one.
- On honest submissions the sandboxed engine and plain `nbgrader autograde`
  give the same scores (slow: it runs nbgrader's own pipeline).
- `chapter autograde` killed with SIGKILL halfway through resumes from its
  journal: nothing is lost, nothing is counted twice.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from graders.engine.journal import JOURNAL
from graders.engine import autograde as ag
from graders import variants
from graders.engine.scratch import make_course
from tests.warm_nbgrader import nbgrader
from graders.course.gate import evaluate
from graders.course.verify import autograde_nbgrader, autograde_sandboxed

ROOT = Path(__file__).resolve().parents[2]
ASSIGNMENT, NB = "worked", "w1-memory"


def course_root(into: Path, solution_edit=None) -> Path:
    """A minimal course root holding w1-memory only, with an optionally edited published solution."""
    (into / "source" / ASSIGNMENT).mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", into / "nbgrader_config.py")
    for folder in ("source", "release", "solutions"):
        (into / folder / ASSIGNMENT).mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / folder / ASSIGNMENT / f"{NB}.ipynb", into / folder / ASSIGNMENT / f"{NB}.ipynb")
    if solution_edit:
        path = into / "solutions" / ASSIGNMENT / f"{NB}.ipynb"
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            cell.source = solution_edit(cell.source)
        nbformat.write(nb, path)
    return into


def test_gate_passes_the_solution_and_refuses_a_broken_one(tmp_path):
    good = evaluate(course_root(tmp_path / "good"), [f"{ASSIGNMENT}/{NB}"])[NB]
    assert good.counts and good.blank_zero, good.reasons
    broken = course_root(tmp_path / "broken",
                         lambda s: s.replace('bytes_per_param = 2 + 2 + params["K"]',
                                             'bytes_per_param = 2 + params["K"]'))
    report = evaluate(broken, [f"{ASSIGNMENT}/{NB}"])[NB]
    assert not report.counts
    assert not any(report.solution.values())
    assert any("published solution scores" in r and "bytes_per_param" in r for r in report.reasons), \
        report.reasons


@pytest.mark.slow
def test_engine_agrees_with_plain_nbgrader_on_honest_submissions(tmp_path):
    root = course_root(tmp_path / "root")
    wrong = tmp_path / "wrong.ipynb"
    nb = nbformat.read(root / "solutions" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    for cell in nb.cells:   # the declared "no master copy" mistake: K - 4 bytes of optimizer state
        cell.source = cell.source.replace('2 + 2 + params["K"]', '2 + 2 + params["K"] - 4')
    nbformat.write(nb, wrong)
    submissions = {variants.student_for(label, ASSIGNMENT, prefix="agree"):
                   {NB: root / "solutions" / ASSIGNMENT / f"{NB}.ipynb"} for label in "ABCD"}
    submissions["agree-blank"] = {NB: root / "release" / ASSIGNMENT / f"{NB}.ipynb"}
    submissions["agree-wrong"] = {NB: wrong}
    plain = autograde_nbgrader(root, tmp_path / "plain", ASSIGNMENT, submissions)
    ours = autograde_sandboxed(root, tmp_path / "ours", ASSIGNMENT, submissions)
    for student in submissions:
        assert (ours[student][NB].score, ours[student][NB].max_score) == \
            (plain[student][NB].score, plain[student][NB].max_score), student
        if student != "agree-blank":   # the same feedback lines, word for word
            assert ours[student][NB].feedback == plain[student][NB].feedback, student


def _dump(db):
    with sqlite3.connect(db) as conn:
        return sorted(conn.execute(
            "select sa.student_id, sn.notebook_id, c.name, g.auto_score, g.needs_manual_grade "
            "from grade g join submitted_notebook sn on g.notebook_id = sn.id "
            "join submitted_assignment sa on sn.assignment_id = sa.id "
            "join base_cell c on g.cell_id = c.id").fetchall())


def test_a_killed_run_resumes_without_losing_or_double_counting(tmp_path):
    root = course_root(tmp_path / "root")
    course = make_course(root, tmp_path / "course", only=[ASSIGNMENT])
    nbgrader("generate_assignment", ASSIGNMENT, "--force", cwd=course)
    solution = root / "solutions" / ASSIGNMENT / f"{NB}.ipynb"
    # honest, but slow: 1 s before the answers, so that the run is caught with two or three of its
    # six recorded (the blank ones take a fraction of it; the journal is read every 0.1 s)
    slow = nbformat.read(solution, as_version=4)
    slow.cells.insert(1, nbformat.v4.new_code_cell("import time\ntime.sleep(1)"))
    students = {}
    for i in range(6):
        sid = f"s{i}"
        folder = course / "submitted" / sid / ASSIGNMENT
        folder.mkdir(parents=True)
        if i % 3 == 2:
            shutil.copy(root / "release" / ASSIGNMENT / f"{NB}.ipynb", folder / f"{NB}.ipynb")
            students[sid] = 0.0
        else:
            nbformat.write(slow, folder / f"{NB}.ipynb")
            students[sid] = 4.0
    journal = course / JOURNAL / ASSIGNMENT
    run = subprocess.Popen([str(Path(sys.executable).parent / "chapter"), "autograde", ASSIGNMENT,
                            "--course", str(course), "--workers", "1", "--no-progress"],
                           start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        done = [p for p in journal.glob("*.json") if json.loads(p.read_text())["state"] == "recorded"] \
            if journal.exists() else []
        if len(done) >= 2:
            break
        time.sleep(0.1)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    recorded = len(done)
    assert 2 <= recorded < len(students), "the run was not killed halfway"
    resumed = ag.autograde(course, ASSIGNMENT, workers=2, progress=False, out=None)
    assert resumed.reused >= recorded
    assert set(resumed.results) == set(students)
    for sid, score in students.items():
        assert resumed.results[sid].notebooks[0].score == score, (sid, resumed.results[sid].notebooks[0].reasons, resumed.results[sid].notebooks[0].feedback[:6], resumed.failed)
    after = _dump(course / "gradebook.db")
    assert len(after) == 2 * len(students)   # two graded cells each, no duplicate rows
    again = ag.autograde(course, ASSIGNMENT, workers=2, progress=False, out=None)
    assert again.reused == len(students) and _dump(course / "gradebook.db") == after
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for sid, score in students.items():
            assert gb.find_submission(ASSIGNMENT, sid).score == score
