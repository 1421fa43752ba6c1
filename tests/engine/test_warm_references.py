"""A grading worker remembers references up front and declared mistakes once a check fails."""
import json
from types import SimpleNamespace

import pytest

from graders import problems, variants
from graders.engine.grading import NotebookResult, SubmissionResult, warm_references

W1 = problems.get("w1-memory")
W2 = problems.get("w2-compute")


@pytest.fixture
def course(tmp_path):
    """A course of three notebooks, of which the student submitted w1-memory and not-a-problem."""
    for name in ("w1-memory", "not-a-problem"):
        (tmp_path / f"{name}.ipynb").write_text("{}")
    return SimpleNamespace(notebooks={"w1-memory": None, "not-a-problem": None, "w2-compute": None},
                           assignment="worked", grades_only=False, submission_dir=lambda student: tmp_path)


def remembered(kind, params, problem=W1):
    memos = problem.__dict__.get("_memos", {})
    key = json.dumps(params, sort_keys=True, default=repr)
    return any(k[0] == kind and key in memo for k, memo in memos.items())


def student_of(label):
    return variants.student_for(label, "worked", prefix="warm")


def graded(student, status):
    checks = {"check_total": {"total_bytes": {"status": status, "mistake": None}}}
    return SubmissionResult(student, "key", [NotebookResult("w1-memory", checks=checks)])


def test_references_before_and_mistakes_only_after_a_failed_check(course, monkeypatch):
    monkeypatch.setattr(W1, "_memos", {}, raising=False)
    student = student_of("B")
    params = W1.variants["B"]
    warm_references(course, student)
    assert remembered("solve", params) and not remembered("mistakes", params)
    warm_references(course, student, after=graded(student, "pass"))
    assert not remembered("mistakes", params)
    warm_references(course, student, after=graded(student, "fail"))
    assert remembered("mistakes", params)
    assert not remembered("mistakes", W1.variants["A"])   # only the student's own variant


def test_a_run_for_its_grades_only_keeps_no_mistakes(course, monkeypatch):
    monkeypatch.setattr(W1, "_memos", {}, raising=False)
    student = student_of("C")
    params = W1.variants["C"]
    course.grades_only = True
    warm_references(course, student)
    assert remembered("solve", params)            # its own grading still needs them
    warm_references(course, student, after=graded(student, "fail"))
    assert not remembered("mistakes", params)


def test_a_notebook_not_submitted_gets_no_reference(course, monkeypatch):
    monkeypatch.setattr(W2, "_memos", {}, raising=False)
    student = student_of("A")
    warm_references(course, student)
    assert not remembered("solve", W2.variants["A"], W2)      # w2-compute was not submitted
