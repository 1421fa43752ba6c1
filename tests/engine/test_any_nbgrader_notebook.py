"""Any nbgrader notebook is graded, and honestly labelled: nbgrader's own user-guide course.

Its test cells are plain asserts, with no checks registered in `graders.problems`.
`chapter autograde` must give every cell the score plain `nbgrader autograde` gives it
(bitdiddle's and hacker's problem1: 1.5 and 3.0), never a silent 0, and say that such
cells were judged inside the student's process, and that the course's own nbgrader config leaves
formgrader's pages without the page protections.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import nbgrader
import pytest
from nbgrader.api import Gradebook

from graders.engine import autograde as ag
from tests.warm_nbgrader import nbgrader as run_nbgrader

pytestmark = pytest.mark.slow

USER_GUIDE = Path(nbgrader.__file__).parent / "docs" / "source" / "user_guide"
STUDENTS = ("bitdiddle", "hacker")
CONFIG = """c = get_config()
c.CourseDirectory.course_id = "example_course"
c.CourseDirectory.root = {root!r}
c.CourseDirectory.db_url = "sqlite:///" + {db!r}
"""


def user_guide_course(folder: Path) -> Path:
    """The user guide's ps1 with its two submissions, in a course of its own, assignment generated."""
    shutil.copytree(USER_GUIDE / "source", folder / "source")
    for student in STUDENTS:
        shutil.copytree(USER_GUIDE / "submitted" / student, folder / "submitted" / student)
    (folder / "nbgrader_config.py").write_text(CONFIG.format(root=str(folder), db=str(folder / "gradebook.db")))
    run_nbgrader("generate_assignment", "ps1", cwd=folder)
    return folder


def cell_scores(course: Path) -> dict:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "example_course") as gb:
        return {(student, nb.name, grade.name): grade.score
                for student in STUDENTS
                for nb in gb.find_submission("ps1", student).notebooks
                for grade in nb.grades if grade.cell.cell_type == "code"}


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    plain = user_guide_course(tmp_path_factory.mktemp("plain"))
    run_nbgrader("autograde", "ps1", cwd=plain)
    ours = user_guide_course(tmp_path_factory.mktemp("ours"))
    report = ag.autograde(ours, "ps1", workers=2, progress=False, out=None)
    return {"plain": cell_scores(plain), "ours": cell_scores(ours), "report": report}


def test_every_cell_scores_what_plain_nbgrader_gives(both):
    """Cell by cell, the sandboxed engine agrees with plain nbgrader on the user guide's course."""
    assert both["plain"], "plain nbgrader graded nothing"
    assert both["ours"] == both["plain"]


def test_problem1_totals_match_the_user_guide(both):
    """bitdiddle and hacker get 1.5 and 3.0 for problem1, as plain nbgrader gives them."""
    totals = {s: sum(v for (who, nb, _), v in both["ours"].items() if who == s and nb == "problem1")
              for s in STUDENTS}
    assert totals == {"bitdiddle": 1.5, "hacker": 3.0}


def test_such_cells_are_labelled_as_judged_inside(both):
    """Feedback and summary say these cells ran inside the student's process; none is a silent 0."""
    report = both["report"]
    assert not report.failed
    assert "judged inside the student's process" in report.summary()
    # its own nbgrader config names none of the course's page protections: the instructor is told
    assert "warning: formgrader's and the feedback's pages are not protected in this course" in report.summary()
    for student in STUDENTS:
        for nb in report.results[student].notebooks:
            assert bool(nb.inside) == (nb.name == "problem1"), nb.name   # problem2 is graded by hand
            scored = [line for line in nb.feedback if "points in this cell" in line]
            assert bool(scored) == (nb.name == "problem1"), (nb.name, nb.feedback)
            assert all("inside the notebook's own process" in line for line in scored)
            assert not any("no checks registered" in r for r in nb.reasons)
