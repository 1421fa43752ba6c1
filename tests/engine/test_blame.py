"""A failure the sandbox may have caused is flagged for a person, never a final 0 (issue 29).

The sandbox is not a kernel: a system call outside its allowlist fails with EPERM, the root is
read-only. A correct notebook that fails only there keeps its cells ungraded for formgrader, is
listed as FLAGGED, and tells the student a person will grade them; a student's own error stays 0.
So does a cell holding an answer the grader could neither prove equal nor refute."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from nbgrader.api import Gradebook

from graders import variants
from graders.engine import blame
from graders.engine.autograde import autograde
from graders.sandbox.zygote import Limits
from tests.namespaces import namespaces_permitted
from tests.conftest import one_notebook_course

ROOT = Path(__file__).resolve().parents[2]
ASSIGNMENT, NB = "worked", "w1-memory"


def test_what_the_sandbox_may_cause(tmp_path):
    cause = lambda ename, evalue: blame.sandbox_cause(ename, evalue, str(tmp_path))  # noqa: E731
    assert "numpy" in cause("ModuleNotFoundError", "No module named 'numpy'")
    assert "json" in cause("ModuleNotFoundError", "No module named 'json.decoder'")    # the standard library
    assert cause("ModuleNotFoundError", "No module named 'graders'") is None             # hidden on purpose
    assert cause("ModuleNotFoundError", "No module named 'no_such_module_anywhere'") is None
    assert cause("ModuleNotFoundError", "No module named 'tests'") is None              # the project's, not installed
    (tmp_path / "shipped_helper.py").write_text("x = 1\n")
    assert "ships" in cause("ModuleNotFoundError", "No module named 'shipped_helper'")
    assert "EPERM" in cause("PermissionError", "[Errno 1] Operation not permitted")
    assert "read-only" in cause("OSError", "[Errno 30] Read-only file system: '/usr/x'")
    assert cause("PermissionError", "[Errno 13] Permission denied: '/etc/shadow'") is None
    assert cause("NameError", "name 'x' is not defined") is None
    assert cause("ValueError", "x" * 10_000_000 + "[Errno 1] Operation not permitted") is None   # read bounded


def test_the_first_fault_in_the_order_the_cells_ran():
    error = lambda text: {"raised": True, "ename": "PermissionError",  # noqa: E731
                          "outputs": [{"output_type": "error", "ename": "PermissionError", "evalue": text}]}
    run = SimpleNamespace(begun=[0, 2, 3], cells={
        0: {"raised": False}, 2: error("[Errno 13] Permission denied"), 3: error("[Errno 1] Operation not permitted")})
    assert blame.first_sandbox_fault(run, "/nonexistent") == (3, blame._OS_ERRORS["[Errno 1] Operation not permitted"])
    run.cells[3]["outputs"] = "not a list"
    assert blame.first_sandbox_fault(run, "/nonexistent") is None


@pytest.mark.skipif(not namespaces_permitted(), reason="needs namespaces and the seccomp allowlist")
def test_a_correct_notebook_that_fails_only_in_the_sandbox_is_flagged(tmp_path):
    course = one_notebook_course(tmp_path / "course", ASSIGNMENT, NB)

    def submission(prefix: str, first_line: str, variant="A", cell="answer_numbers", last_line=""):
        nb = nbformat.read(ROOT / "solutions" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
        answers = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == cell)
        answers.source = first_line + answers.source + last_line
        sid = variants.student_for(variant, ASSIGNMENT, prefix=prefix)
        folder = course / "submitted" / sid / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{NB}.ipynb")
        return sid

    # a named pipe: any kernel makes one; the sandbox's allowlist refuses mknod (EPERM)
    fifo = submission("fifo", "import os\nos.mkfifo('answers.pipe')\n")
    wrong = submission("wrong", "raise ValueError('my own bug')\n")
    # variant C (stage 2), equal to the reference times (√2 + √3)/√(5 + 2√6) = 1, which sympy
    # cannot prove: sampling agrees, no proof comes, so the verdict is undecided
    undecided = submission("undecided", "", last_line="\nper_device_expr = (2*N + (2 + K)*N/P) * (sp.sqrt(2) + sp.sqrt(3)) "
                           "/ sp.sqrt(5 + 2*sp.sqrt(6))\n", variant="C", cell="answer_expr")
    report = autograde(course, ASSIGNMENT, workers=2, limits=Limits(cell_seconds=30, notebook_seconds=60),
                       progress=False, out=None)
    flagged, own = report.results[fifo].notebooks[0], report.results[wrong].notebooks[0]
    assert flagged.grades["check_expr"] > 0                       # before the fault: graded as usual
    assert flagged.grades["check_numbers"] is None, flagged.grades  # after it: left to a person
    assert flagged.flags and "EPERM" in flagged.flags[0]
    assert any("your instructor will grade this cell" in line for line in flagged.feedback)
    assert not flagged.technical_zero
    assert own.grades["check_numbers"] == 0 and not own.flags       # the student's own error: 0, as before
    left = report.results[undecided].notebooks[0]
    assert left.grades["check_expr"] is None and left.grades["check_numbers"] == 3, left.grades
    assert left.flags and "per_device_expr" in left.flags[0] and not left.technical_zero
    assert any("could not decide per_device_expr" in line for line in left.feedback)
    assert left.score == 3
    summary = report.summary()
    assert "FLAGGED for a person (2)" in summary and fifo in summary and undecided in summary
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:   # formgrader lists it as needing a grade
        waiting = gb.find_grade("check_numbers", NB, ASSIGNMENT, fifo)
        assert waiting.needs_manual_grade and waiting.auto_score is None
        assert not gb.find_grade("check_numbers", NB, ASSIGNMENT, wrong).needs_manual_grade
        waiting = gb.find_grade("check_expr", NB, ASSIGNMENT, undecided)
        assert waiting.needs_manual_grade and waiting.auto_score is None
