"""record_io.py without a sandbox: one graded submission written where nbgrader reads it (a real
SQLite gradebook made by nbgrader's own API, and autograded/), its time read from the student's
timestamp.txt without trusting it, and a failure to record kept to that one student."""
from __future__ import annotations

import os
import shutil
import stat
import sys
from datetime import datetime
from pathlib import Path

import pytest

from graders.engine import record_io, run, shared
from graders.engine.run import GradingRun
from graders.engine.course_dir import Course
from graders.engine.grading import NotebookResult, SubmissionResult
from graders.engine.journal import Journal
from graders.engine.summary import Report
from graders.sandbox.zygote import Limits

ASSIGNMENT = "a1"


@pytest.fixture(scope="module")
def empty_gradebook(tmp_path_factory):
    """A gradebook holding the assignment (nbgrader checks its schema with `alembic`: on PATH)."""
    from nbgrader.api import Gradebook
    path = tmp_path_factory.mktemp("gradebook") / "gradebook.db"
    old = os.environ.get("PATH", "")
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + old
    try:
        with Gradebook(f"sqlite:///{path}", "course") as gb:
            gb.add_assignment(ASSIGNMENT)
            gb.add_notebook("nb", ASSIGNMENT)
            gb.add_grade_cell("test", "nb", ASSIGNMENT, max_score=2.0, cell_type="code")
            gb.add_solution_cell("answer", "nb", ASSIGNMENT)
    finally:
        os.environ["PATH"] = old
    return path


@pytest.fixture
def course(tmp_path, empty_gradebook):
    shutil.copy(empty_gradebook, tmp_path / "gradebook.db")
    (tmp_path / "source" / ASSIGNMENT).mkdir(parents=True)
    return Course(root=str(tmp_path), assignment=ASSIGNMENT, db_url=f"sqlite:///{tmp_path / 'gradebook.db'}",
                  course_id="course", submitted=str(tmp_path / "submitted" / "{student}" / ASSIGNMENT),
                  autograded=str(tmp_path / "autograded" / "{student}" / ASSIGNMENT),
                  source_dir=str(tmp_path / "source" / ASSIGNMENT), ignore=[".ipynb_checkpoints", "*.pyc"],
                  notebooks={}, permissions=0o444, begin_hidden="BEGIN HIDDEN TESTS", end_hidden="END HIDDEN TESTS",
                  max_lines=1000, max_traceback=100, exclude_overwriting=[], excluded_students=[])


def hand_in(course, student, timestamp=None):
    folder = course.submission_dir(student)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nb.ipynb").write_text("{}")
    if timestamp is not None:
        (folder / "timestamp.txt").write_text(timestamp)
    return folder


def result(student="s1", score=1.0, status="graded", notebook='{"graded": true}') -> SubmissionResult:
    return SubmissionResult(student, "key", [NotebookResult("nb", status=status, score=score, max_score=2.0,
                                                            grades={"test": score}, notebook=notebook)])


def gradebook(course):
    from nbgrader.api import Gradebook
    return Gradebook(course.db_url, course.course_id)


def test_a_submission_is_recorded_and_a_second_record_sets_not_adds(course):
    hand_in(course, "s1", "2026-02-01 10:00:00.000000 UTC")
    with gradebook(course) as gb:
        assert record_io.record(gb, course, result(score=1.0)) == ""
        assert record_io.record(gb, course, result(score=2.0)) == ""
        grade = gb.find_grade("test", "nb", ASSIGNMENT, "s1")
        assert (grade.auto_score, grade.needs_manual_grade) == (2.0, False)
        assert gb.find_submission(ASSIGNMENT, "s1").timestamp == datetime(2026, 2, 1, 10, 0)


def test_a_time_given_for_a_submission_no_longer_in_submitted_is_the_one_recorded(course):
    """chapter serve puts back an earlier attempt than the one submitted/ now holds: its own time."""
    from datetime import timezone
    hand_in(course, "s1", "2026-02-05 10:00:00")                  # the newest attempt's, late
    with gradebook(course) as gb:
        given = (datetime(2026, 2, 1, 9, 30, tzinfo=timezone.utc), "")
        assert record_io.record(gb, course, result(), handed_in=given) == ""
        assert gb.find_submission(ASSIGNMENT, "s1").timestamp == datetime(2026, 2, 1, 9, 30)
        assert record_io.record(gb, course, result(), handed_in=(None, "the timestamp 'x' does not parse")) \
            == "the timestamp 'x' does not parse"
        assert gb.find_submission(ASSIGNMENT, "s1").timestamp is None


def test_a_score_a_person_gave_is_kept_and_flagged_for_review(course):
    hand_in(course, "s1")
    with gradebook(course) as gb:
        record_io.record(gb, course, result(score=1.0))
        gb.find_grade("test", "nb", ASSIGNMENT, "s1").manual_score = 1.5
        gb.db.commit()
        record_io.record(gb, course, result(score=0.0))
        grade = gb.find_grade("test", "nb", ASSIGNMENT, "s1")
        assert (grade.manual_score, grade.auto_score, grade.needs_manual_grade) == (1.5, 0.0, True)


@pytest.mark.parametrize("stamp, why", [
    ("yesterday at noon", "does not parse"), ("3000-01-01 00:00:00", "out of range"), ("10:00", "no full date"),
])
def test_an_unusable_timestamp_is_recorded_without_a_time_and_said(course, stamp, why):
    hand_in(course, "s1", stamp)
    with gradebook(course) as gb:
        assert why in record_io.record(gb, course, result())
        assert gb.find_submission(ASSIGNMENT, "s1").timestamp is None
        assert gb.find_grade("test", "nb", ASSIGNMENT, "s1").auto_score == 1.0
    assert why in record_io.untimed(course, "s1")


def test_no_timestamp_at_all_is_not_a_fault_and_a_folder_named_like_one_is_none(course):
    folder = hand_in(course, "s1")
    assert record_io.submission_moment(course, "s1") == (None, "")
    (folder / "timestamp.txt").mkdir()
    assert record_io.submission_moment(course, "s1") == (None, "")


def test_a_collected_submission_without_a_timestamp_is_recorded_when_its_files_were_written(course):
    """Collect retimed it (times.Retimed with nothing claimed): its time is when its files were
    written, so a late penalty follows, where it was recorded with none."""
    from datetime import timezone
    from graders.engine import ledger
    from graders.engine.times import Retimed, retimed_path
    hand_in(course, "s1")
    path = retimed_path(course.root, ASSIGNMENT)
    path.parent.mkdir(parents=True)
    ledger.append(path, Retimed("s1+a1+x+y", "s1", "", "2026-02-03T08:00:00+00:00", 0.0))
    assert record_io.submission_moment(course, "s1") == (datetime(2026, 2, 3, 8, tzinfo=timezone.utc), "")
    with gradebook(course) as gb:
        assert record_io.record(gb, course, result()) == ""
        assert gb.find_submission(ASSIGNMENT, "s1").timestamp == datetime(2026, 2, 3, 8, 0)


def test_a_failing_record_is_rolled_back_and_the_session_serves_the_next(course):
    hand_in(course, "s1")
    broken = result()
    broken.notebooks.append(NotebookResult("not-in-the-gradebook", grades={"x": 1.0}))
    with gradebook(course) as gb:
        with pytest.raises(Exception):
            record_io.record(gb, course, broken)
        from nbgrader.api import MissingEntry
        with pytest.raises(MissingEntry):        # not half of it: not even the empty submission
            gb.find_submission(ASSIGNMENT, "s1")
        record_io.record(gb, course, result(score=2.0))    # the session is usable for the next student
        assert gb.find_grade("test", "nb", ASSIGNMENT, "s1").auto_score == 2.0


def test_autograded_gets_the_notebooks_and_the_files_nbgrader_copies(course):
    folder = hand_in(course, "s1", "2026-02-01 10:00:00 UTC")
    (folder / "mine.csv").write_text("1,2")
    (folder / "link.csv").symlink_to(folder / "mine.csv")
    (folder / "cache.pyc").write_bytes(b"\0")
    (folder / "other.ipynb").write_text("{}")
    (Path(course.source_dir) / "helpers.py").write_text("X = 1\n")
    record_io.write_autograded(course, result())
    dest = course.autograded_dir("s1")
    assert sorted(p.name for p in dest.iterdir()) == ["helpers.py", "mine.csv", "nb.ipynb", "timestamp.txt"]
    assert (dest / "nb.ipynb").read_text() == '{"graded": true}'
    assert stat.S_IMODE((dest / "nb.ipynb").stat().st_mode) == 0o444
    record_io.write_autograded(course, result(notebook=None))   # regraded as unreadable: the old copy goes
    assert not (dest / "nb.ipynb").exists()


def test_an_atomic_write_replaces_whole_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "deep" / "file.txt"
    shared.atomic_write(target, b"one", 0o640)
    shared.atomic_write(target, b"two")
    assert target.read_bytes() == b"two"
    assert [p.name for p in target.parent.iterdir()] == ["file.txt"]


def test_accept_records_and_journals_a_submission(course):
    hand_in(course, "s1")
    journal, report = Journal(course), Report(ASSIGNMENT)
    with gradebook(course) as gb:
        assert GradingRun(course, Limits(), journal, report).accept(gb, result())
        assert record_io.artifacts_present(gb, course, result())
    assert journal.get("s1", "key")["state"] == "recorded"
    assert report.results["s1"] == run.without_text(result()) and not report.failed
    assert report.results["s1"].notebooks[0].notebook is None                 # written; not held
    assert journal.get("s1", "key")["result"]["notebooks"][0]["notebook"] == result().notebooks[0].notebook


def test_a_student_who_cannot_be_recorded_is_reported_and_kept_for_the_next_run(course, monkeypatch):
    hand_in(course, "s1")
    journal, report = Journal(course), Report(ASSIGNMENT)

    def full_disk(*args, **kwargs):
        raise OSError("no space left on device")

    monkeypatch.setattr(run, "write_autograded", full_disk)
    with gradebook(course) as gb:
        assert not GradingRun(course, Limits(), journal, report).accept(gb, result())
        assert not record_io.artifacts_present(gb, course, result())
    assert report.failed["s1"].startswith("could not be recorded (OSError: no space left")
    assert journal.get("s1", "key")["state"] == "graded"       # graded once; the next run only records it
    assert "s1" not in report.results


def test_the_writer_lock_is_a_no_op_on_sqlite(course):
    with gradebook(course) as gb:
        with record_io.writer_lock(gb, course.course_id, "s1"):
            gb.update_or_create_student("s1")
        assert gb.find_student("s1").id == "s1"


def test_a_fifo_in_a_submission_does_not_hold_up_recording(course):
    import threading
    folder = hand_in(course, "s1")
    os.mkfifo(folder / "pipe")
    writer = threading.Thread(target=record_io.write_autograded, args=(course, result()), daemon=True)
    writer.start()
    writer.join(5)
    blocked = writer.is_alive()
    if blocked:        # let the stuck reader go: open the FIFO's other end, and close it
        os.close(os.open(folder / "pipe", os.O_WRONLY | os.O_NONBLOCK))
        writer.join(5)
    assert not blocked, "write_autograded waited on a FIFO"


class Refuses:
    """A late-penalty plugin that fails: the last step of recording a (late) submission."""

    def late_submission_penalty(self, student, score, seconds):
        raise RuntimeError("the plugin broke")


def late_gradebook(course):
    """The gradebook with a due date that s1's submission misses."""
    with gradebook(course) as gb:
        gb.update_or_create_assignment(ASSIGNMENT, duedate=datetime(2026, 2, 1))
    hand_in(course, "s1", "2026-02-02 10:00:00 UTC")


def test_a_submission_that_fails_half_way_leaves_nothing_another_reader_sees(course):
    import sqlite3
    late_gradebook(course)
    with gradebook(course) as gb:
        with pytest.raises(RuntimeError, match="the plugin broke"):
            record_io.record(gb, course, result(score=2.0), Refuses())
        with sqlite3.connect(Path(course.root) / "gradebook.db") as db:
            seen = {table: db.execute(f"select count(*) from {table}").fetchone()[0]
                    for table in ("student", "submitted_assignment", "grade")}
        assert seen == {"student": 0, "submitted_assignment": 0, "grade": 0}
        record_io.record(gb, course, result(score=2.0))     # and the next record on this session works
        assert gb.find_grade("test", "nb", ASSIGNMENT, "s1").auto_score == 2.0


def test_one_submission_is_one_commit(course):
    from sqlalchemy import event
    late_gradebook(course)

    class HalfOff:
        def late_submission_penalty(self, student, score, seconds):
            return score / 2

    hand_in(course, "s2", "2026-02-02 10:00:00 UTC")
    with gradebook(course) as gb:
        record_io.record(gb, course, result(score=2.0), HalfOff())      # (the evidence tables are made once)
        commits = []
        event.listen(gb.engine, "commit", lambda conn: commits.append(conn))
        record_io.record(gb, course, result("s2", score=2.0), HalfOff())   # a student's first submission
        record_io.record(gb, course, result(score=1.0), HalfOff())      # a regrade
        assert len(commits) == 2
        snb = gb.find_submission_notebook("nb", ASSIGNMENT, "s1")
        assert (snb.score, snb.late_submission_penalty) == (1.0, 0.5)  # the penalty saw the new score


def test_on_postgresql_a_failure_half_way_leaves_nothing_and_a_success_is_one_commit(course, postgres_db):
    import dataclasses

    from nbgrader.api import Gradebook
    from sqlalchemy import create_engine, event, text
    url = postgres_db()
    old = os.environ.get("PATH", "")
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + old
    try:
        with Gradebook(url, "course") as gb:
            gb.add_assignment(ASSIGNMENT, duedate=datetime(2026, 2, 1))
            gb.add_notebook("nb", ASSIGNMENT)
            gb.add_grade_cell("test", "nb", ASSIGNMENT, max_score=2.0, cell_type="code")
    finally:
        os.environ["PATH"] = old
    course = dataclasses.replace(course, db_url=url)
    hand_in(course, "s1", "2026-02-02 10:00:00 UTC")
    reader = create_engine(url)
    try:
        with Gradebook(url, "course") as gb:
            with pytest.raises(RuntimeError, match="the plugin broke"):
                record_io.record(gb, course, result(score=2.0), Refuses())
            with reader.connect() as conn:
                assert conn.execute(text("select count(*) from submitted_assignment")).scalar() == 0
            commits = []     # the session's commits (the writer lock's own connection commits apart)
            event.listen(gb.db(), "after_commit", lambda session: commits.append(session))
            record_io.record(gb, course, result(score=2.0))
            assert len(commits) == 1
        with reader.connect() as conn:
            assert conn.execute(text("select auto_score from grade")).scalar() == 2.0
    finally:
        reader.dispose()


class HalfOff:
    def late_submission_penalty(self, student, score, seconds):
        return score / 2


def test_a_submissions_queries_do_not_grow_with_its_notebooks(course):
    """Its notebooks, grades, comments and late scores are read in one query each, not one per
    notebook (nbgrader's find_submission_notebook per notebook cost most of a record's time)."""
    from sqlalchemy import event
    late_gradebook(course)
    with gradebook(course) as gb:
        for n in range(1, 4):
            gb.add_notebook(f"nb{n}", ASSIGNMENT)
            gb.add_grade_cell("test", f"nb{n}", ASSIGNMENT, max_score=2.0, cell_type="code")
            gb.add_solution_cell("answer", f"nb{n}", ASSIGNMENT)

    def submission(count, score):
        return SubmissionResult("s1", "key", [
            NotebookResult(name, score=score, max_score=2.0, grades={"test": score}, comments={"answer": None})
            for name in ["nb", "nb1", "nb2", "nb3"][:count]])

    with gradebook(course) as gb:
        record_io.record(gb, course, submission(4, 2.0), HalfOff())     # first sight: nbgrader adds the rows
        statements = []
        event.listen(gb.engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
        counts = {}
        for count in (1, 4):
            del statements[:]
            record_io.record(gb, course, submission(count, 2.0), HalfOff())   # a regrade: nothing changes
            counts[count] = len(statements)
        assert counts[4] == counts[1]
        record_io.record(gb, course, submission(4, 1.0), HalfOff())
        for name in ["nb", "nb1", "nb2", "nb3"]:
            snb = gb.find_submission_notebook(name, ASSIGNMENT, "s1")
            assert (snb.score, snb.late_submission_penalty) == (1.0, 0.5)   # the penalty saw the new score
