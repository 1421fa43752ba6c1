"""A grading worker remembers references up front and declared mistakes once a check fails."""
import json
from types import SimpleNamespace

from graders import problems, variants
from graders.engine.grading import NotebookResult, SubmissionResult, warm_references

W1 = problems.get("w1-memory")
COURSE = SimpleNamespace(notebooks={"w1-memory": None, "not-a-problem": None}, assignment="worked")


def remembered(kind, params):
    memos = W1.__dict__.get("_memos", {})
    key = json.dumps(params, sort_keys=True, default=repr)
    return any(k[0] == kind and key in memo for k, memo in memos.items())


def student_of(label):
    return variants.student_for(label, "worked", prefix="warm")


def graded(student, status):
    checks = {"check_total": {"total_bytes": {"status": status, "mistake": None}}}
    return SubmissionResult(student, "key", [NotebookResult("w1-memory", checks=checks)])


def test_references_before_and_mistakes_only_after_a_failed_check(monkeypatch):
    monkeypatch.setattr(W1, "_memos", {}, raising=False)
    student = student_of("B")
    params = W1.variants["B"]
    warm_references(COURSE, student)
    assert remembered("solve", params) and not remembered("mistakes", params)
    warm_references(COURSE, student, after=graded(student, "pass"))
    assert not remembered("mistakes", params)
    warm_references(COURSE, student, after=graded(student, "fail"))
    assert remembered("mistakes", params)
    assert not remembered("mistakes", W1.variants["A"])   # only the student's own variant
