"""The local pool's step, without a sandbox: `grade_locally`'s retries and reports, and the pool's
own bookkeeping. (A task past its deadline, a dying worker and an oversized result are in
test_trusted_side.py.)"""
from __future__ import annotations

import os
from types import SimpleNamespace

import nbgrader.api
import pytest

from graders.engine import grading, local_pool
from graders.engine.local_pool import LocalPool


class FakeZygote:
    """What grade_locally needs of a zygote: its pipes, its socket, alive(), close(), start()."""

    def __init__(self, alive=True):
        self.reads, self.writes = os.pipe()
        self.process = SimpleNamespace(stdin=os.fdopen(os.dup(self.writes), "wb"),
                                       stdout=os.fdopen(os.dup(self.reads), "rb"))
        self.socket_path, self._alive, self.restarts = "/nonexistent/socket", alive, 0

    def alive(self):
        return self._alive

    def close(self):
        pass

    def start(self):
        self.restarts += 1
        self._alive = True
        return self

    def wait_ready(self):
        return self


class NoGradebook:
    def __init__(self, db_url, course_id):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


class FakeRun:
    """A GradingRun that remembers what it was told."""

    def __init__(self, students):
        self.course = SimpleNamespace(db_url="sqlite:///unused", course_id="course")
        self.limits, self.workers = None, 2
        self.keys = {s: f"key-{s}" for s in students}
        self.accepted, self.not_graded_as, self.done = [], {}, 0

    def accept(self, gb, value):
        self.accepted.append(value)

    def finished(self):
        self.done += 1

    def not_graded(self, student, why):
        self.not_graded_as[student] = why


def _by_name(request):
    """Stands for grading one submission in a worker: the student's name says what happens.
    Attempts are counted in a file, since every worker is a fresh fork."""
    student, socket_path, key = request
    tally = os.path.join(os.environ["POOL_TALLY"], student)
    with open(tally, "a") as f:
        f.write(key + "\n")
    if student.startswith("ok"):
        return "ok", f"graded {student}"
    if student.startswith("flaky") and open(tally).read().count("\n") >= 2:
        return "ok", f"graded {student} on a retry"
    if student.startswith("infra") or student.startswith("flaky"):
        return "infra", "the sandbox could not be reached"
    if student.startswith("refused"):
        return "not_graded", "the notebook is not a notebook"
    if student.startswith("dies"):
        os._exit(9)
    raise AssertionError(student)


@pytest.fixture
def graded(tmp_path, monkeypatch):
    tally = tmp_path / "tally"
    tally.mkdir()
    monkeypatch.setenv("POOL_TALLY", str(tally))
    monkeypatch.setattr(local_pool, "_grade_request", _by_name)
    monkeypatch.setattr(grading, "task_seconds", lambda course, limits: 30.0)
    monkeypatch.setattr(nbgrader.api, "Gradebook", NoGradebook)   # what is kept is FakeRun's to see

    def grade(students, zygote=None):
        run, zygote = FakeRun(students), zygote or FakeZygote()
        local_pool.grade_locally(run, zygote, list(students))
        tries = {s: (tally / s).read_text().splitlines() for s in students if (tally / s).exists()}
        return run, zygote, tries
    return grade


def test_each_graded_submission_is_accepted_once_with_its_own_key(graded):
    run, _, tries = graded(["ok-a", "ok-b", "ok-c"])
    assert sorted(run.accepted) == ["graded ok-a", "graded ok-b", "graded ok-c"] and run.done == 3
    assert tries == {s: [f"key-{s}"] for s in ("ok-a", "ok-b", "ok-c")} and not run.not_graded_as


def test_an_infrastructure_fault_is_tried_three_times_then_reported_not_graded(graded):
    run, _, tries = graded(["infra-a", "ok-b"])
    assert len(tries["infra-a"]) == 3 and len(tries["ok-b"]) == 1
    assert run.not_graded_as == {"infra-a": "the sandbox could not be reached"}
    assert run.accepted == ["graded ok-b"]


def test_a_fault_that_clears_on_a_retry_is_graded(graded):
    run, _, tries = graded(["flaky-a"])
    assert run.accepted == ["graded flaky-a on a retry"] and len(tries["flaky-a"]) == 2
    assert not run.not_graded_as


def test_a_refused_submission_is_reported_at_once_and_never_retried(graded):
    run, _, tries = graded(["refused-a"])
    assert run.not_graded_as == {"refused-a": "the notebook is not a notebook"} and len(tries["refused-a"]) == 1
    assert run.accepted == [] and run.done == 0


def test_a_dying_worker_is_retried_and_a_dead_zygote_restarted_between_rounds(graded):
    run, zygote, tries = graded(["dies-a", "ok-b"], zygote=FakeZygote(alive=False))
    assert len(tries["dies-a"]) == 3 and "died" in run.not_graded_as["dies-a"]
    assert zygote.restarts == 1          # found dead after the first round; alive once restarted
    assert run.accepted == ["graded ok-b"]


def _double(task):
    return task * 2


def test_the_request_is_made_when_its_task_starts_and_a_free_worker_starts_before_the_caller_records():
    """`request(task)` runs as each task is handed out, so it can carry state fresh at that moment;
    a worker that has ended its task has the next one while the caller handles the result."""
    made = []

    def request(task):
        made.append(task)
        return task
    with LocalPool(1, _double) as pool:
        events = pool.results(["a", "b", "c"], seconds=30, request=request)
        first = next(events)
        assert first[:3] == ("a", "ok", "aa") and made == ["a", "b"] and pool.running() == 1
        second = next(events)
        assert second[:3] == ("b", "ok", "bb") and made == ["a", "b", "c"] and pool.running() == 1
        assert [e[:3] for e in events] == [("c", "ok", "cc")] and made == ["a", "b", "c"]
        assert pool.running() == 0 and pool.has_room()
