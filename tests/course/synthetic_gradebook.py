"""A gradebook made with nbgrader's own API, for the export and deadline tests and the bench:
students x notebooks, each notebook with graded cells, chosen scores, submission times and waits."""
from __future__ import annotations

from datetime import datetime, timedelta

DUE = datetime(2026, 11, 20, 17, 0)        # naive UTC, as nbgrader keeps it


def make_gradebook(db_url: str, course_id: str, assignments: dict, submissions: dict) -> None:
    """assignments: name -> {notebook: [max score of each cell]};
    submissions: (student, assignment) -> {"scores": {notebook: [score of each cell]},
                                           "late_hours": float, "waiting": bool, "penalty": float}"""
    from nbgrader.api import Gradebook
    with Gradebook(db_url, course_id) as gb:
        for name, notebooks in assignments.items():
            gb.add_assignment(name, duedate=DUE)
            for notebook, cells in notebooks.items():
                gb.add_notebook(notebook, name)
                for i, max_score in enumerate(cells):
                    gb.add_grade_cell(f"c{i}", notebook, name, max_score=max_score, cell_type="code")
        for student in sorted({s for s, _ in submissions}):
            gb.add_student(student)
        for (student, name), given in submissions.items():
            sub = gb.add_submission(name, student,
                                    timestamp=DUE + timedelta(hours=given.get("late_hours", -1)))
            for notebook, scores in given["scores"].items():
                for i, score in enumerate(scores):
                    grade = gb.find_grade(f"c{i}", notebook, name, student)
                    grade.auto_score = score
                    grade.needs_manual_grade = bool(given.get("waiting")) and i == 0
                nb = gb.find_submission_notebook(notebook, name, student)
                nb.late_submission_penalty = given.get("penalty", 0.0) / len(given["scores"])
            gb.db.add(sub)
            gb.db.commit()


def built_once(tmp_path_factory, assignments: dict, submissions: dict):
    """A scratch course's gradebook.db holding `submissions`, made once (creating a gradebook runs
    alembic: seconds) for a test module to copy into each test's course with `course_from`."""
    import os
    import sys

    import pytest

    from graders.course.deadlines import gradebook_of
    from tests.conftest import copy_course
    with pytest.MonkeyPatch.context() as patch:
        # nbgrader runs `alembic` by name when it creates a gradebook, as `chapter` finds it: beside this Python
        patch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
        root = copy_course(tmp_path_factory.mktemp("built"), [])
        make_gradebook(*gradebook_of(root), assignments, submissions)
    return root / "gradebook.db"


def course_from(tmp_path, built):
    """A scratch course in `tmp_path` with a copy of the gradebook `built_once` made."""
    import shutil

    from tests.conftest import copy_course
    root = copy_course(tmp_path, [])
    shutil.copy(built, root / "gradebook.db")
    return root
