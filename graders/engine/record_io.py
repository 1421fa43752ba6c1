"""Writing results where nbgrader reads them: the gradebook (under a per-student lock) and autograded/."""
from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

from graders.engine.course_dir import Course
from graders.engine.shared import atomic_write
from graders.engine.times import naive_utc, read_timestamp, submitted_at
from graders.engine.grading import SubmissionResult


def record(gb, course: Course, result: SubmissionResult, late_plugin=None, handed_in=None) -> str:
    """Write one submission's grades into nbgrader's gradebook (values are set, never added).

    Returns why the submission has no usable time ("" when it has one): the student's side
    wrote timestamp.txt, so a time that does not parse or is out of range is refused, and the
    submission is recorded without a time (so with no late penalty), flagged by the caller.
    `handed_in`, (moment or None, why), gives the time of a submission that submitted/ no longer
    holds (chapter serve's attempt that stands); otherwise it is read there (submission_moment).
    """
    import warnings
    with warnings.catch_warnings(), writer_lock(gb, course.course_id, result.student):
        warnings.simplefilter("ignore")   # SQLAlchemy's autoflush notes inside nbgrader's own API
        try:
            from graders.evidence import ensure_tables
            ensure_tables(gb.db)   # made (the first time) and committed apart: a submission rolled
            if gb.db().in_transaction():   # back must not take the tables, and the next students, with it
                gb.db.commit()
            with one_transaction(gb):
                return _record(gb, course, result, late_plugin, handed_in)
        except BaseException:
            gb.db.rollback()     # nothing half-written is left for the next student's commit
            raise


@contextlib.contextmanager
def one_transaction(gb):
    """Make everything written to `gb` inside the block one database transaction.

    nbgrader's Gradebook methods (update_or_create_student, update_or_create_submission...)
    each commit. Inside the block the session's `commit` only does what a commit does to the
    session's objects (flush the changes, expire what was loaded, so what is read next comes
    from the database), and the transaction stays open: one commit at the end, or a rollback
    if the block raises. Another reader sees the whole submission or none of it, and a
    submission costs one commit (one fsync on SQLite) instead of four.
    """
    session = gb.db()          # this thread's Session, behind nbgrader's scoped_session

    def step():
        session.flush()
        session.expire_all()

    session.commit = step      # an instance attribute: shadows Session.commit for this session only
    try:
        yield
    except BaseException:
        del session.commit
        session.rollback()
        raise
    del session.commit
    session.commit()


@contextlib.contextmanager
def writer_lock(gb, course_id: str, student: str):
    """Let one grading process at a time write a given student's records.

    SQLite locks the whole file for every write. PostgreSQL lets writers run side
    by side, and nbgrader's update_or_create_* read, then insert: two graders
    recording the same new student (two assignments graded at once, or a rerun
    beside a run) would both insert and one would fail on the unique key. A
    session-level advisory lock per (course, student), held on its own connection
    across nbgrader's several commits, makes those steps atomic between graders.
    """
    engine = gb.db.get_bind()
    if engine.dialect.name != "postgresql":
        yield
        return
    from sqlalchemy import text
    key = int.from_bytes(hashlib.sha256(os.fsencode(f"{course_id}\0{student}")).digest()[:8], "big", signed=True)
    with engine.connect() as conn:
        conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": key})
        conn.commit()
        try:
            yield
        finally:
            gb.db.rollback()     # nothing uncommitted may outlive the lock
            conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})
            conn.commit()


def _record(gb, course: Course, result: SubmissionResult, late_plugin=None, handed_in=None) -> str:
    student, assignment = result.student, course.assignment
    gb.update_or_create_student(student)
    moment, why = handed_in if handed_in is not None else submission_moment(course, student)
    if moment is not None:
        submission = gb.update_or_create_submission(assignment, student, timestamp=naive_utc(moment))
    else:
        submission = gb.update_or_create_submission(assignment, student, timestamp=None)
    from nbgrader.api import Comment, Grade
    from sqlalchemy.orm import selectinload
    notebooks = submitted_notebooks(gb, submission.id, [nb.name for nb in result.notebooks], assignment, student)
    ids = [snb.id for snb in notebooks.values()]
    # read manual scores fresh and hold the rows, so a grade formgrader saves meanwhile is not
    # overwritten with a stale needs_manual_grade (SQLite ignores this and locks the file);
    # the submission's grades (and comments) in one query, each row's cell in the same round
    grades = gb.db.query(Grade).filter(Grade.notebook_id.in_(ids)).options(selectinload(Grade.cell)) \
        .with_for_update().populate_existing().all()
    comments = gb.db.query(Comment).filter(Comment.notebook_id.in_(ids)) \
        .options(selectinload(Comment.cell)).all()
    graded = {notebooks[nb.name].id: nb for nb in result.notebooks}    # each row's notebook, by its id
    for grade in grades:
        nb, name = graded[grade.notebook_id], grade.cell.name
        if name not in nb.grades:
            continue
        grade.auto_score = nb.grades[name]
        if nb.status == "missing":
            grade.needs_manual_grade = False
        else:
            grade.needs_manual_grade = grade.manual_score is not None or grade.auto_score is None
    for comment in comments:
        nb = graded[comment.notebook_id]
        if comment.cell.name in nb.comments:
            comment.auto_comment = nb.comments[comment.cell.name]
    from graders.evidence import keep
    keep(gb.db, course.course_id, assignment, result)    # the class report's evidence, replaced
    gb.db.commit()
    if late_plugin is not None:
        from nbgrader.api import SubmittedNotebook
        from sqlalchemy.orm import undefer
        gb.db.query(SubmittedNotebook).filter(SubmittedNotebook.id.in_(ids)) \
            .options(undefer(SubmittedNotebook.score)).all()     # the notebooks' new scores, in one query
        late = submission.total_seconds_late
        for nb in result.notebooks:
            snb = notebooks[nb.name]
            penalty = None
            if late > 0:
                penalty = late_plugin.late_submission_penalty(student, snb.score, late)
                if penalty is not None:
                    penalty = min(max(penalty, 0), snb.score)
            snb.late_submission_penalty = penalty     # set once: one UPDATE, not a reset and a set
        gb.db.commit()
    return why


def submitted_notebooks(gb, submission_id: str, names: list[str], assignment: str, student: str) -> dict:
    """{name: SubmittedNotebook} of one submission, in one query (nbgrader's find_submission_notebook
    is a five-table join per notebook); MissingEntry, as nbgrader's, for a name it does not have."""
    from nbgrader.api import MissingEntry, Notebook, SubmittedNotebook
    rows = gb.db.query(SubmittedNotebook, Notebook.name).join(Notebook, Notebook.id == SubmittedNotebook.notebook_id) \
        .filter(SubmittedNotebook.assignment_id == submission_id, Notebook.name.in_(set(names))).all()
    found = {name: snb for snb, name in rows}
    for name in names:
        if name not in found:
            raise MissingEntry(f"No such submitted notebook: {assignment}/{name} for {student}")
    return found


def submission_moment(course: Course, student: str):
    """(when the student submitted, "") from their timestamp.txt, or when collect found its files
    written, if later or if it has none that can be used (times.submitted_at); (None, why it is
    unusable), or (None, "") when there is none at all (a submission put in submitted/ by hand)."""
    text = read_timestamp(course.submission_dir(student))
    moment, why = submitted_at(course.root, course.assignment, student, text)
    return moment, "" if text is None else why


def untimed(course: Course, student: str) -> str:
    """Why the student's submission has no usable time ("" when it has one, or has none at all)."""
    return submission_moment(course, student)[1]


def write_autograded(course: Course, result: SubmissionResult) -> None:
    """autograded/<student>/<assignment>/: the notebooks, and the other files nbgrader copies."""
    from graders.engine.shared import find_all_files
    dest = course.autograded_dir(result.student)
    dest.mkdir(parents=True, exist_ok=True)
    for base in (course.submission_dir(result.student), Path(course.source_dir)):
        if not base.is_dir():
            continue
        for path in find_all_files(str(base), course.ignore + ["*.ipynb"]):
            if os.path.islink(path) or not os.path.isfile(path):   # a FIFO or a device is never read
                continue
            atomic_write(dest / os.path.relpath(path, base), Path(path).read_bytes(), course.permissions)
    for nb in result.notebooks:
        target = dest / f"{nb.name}.ipynb"
        if nb.notebook is None:
            if target.exists():
                target.unlink()
            continue
        atomic_write(target, nb.notebook.encode(), course.permissions)


def artifacts_present(gb, course, result) -> bool:
    from nbgrader.api import MissingEntry
    try:
        gb.find_submission(course.assignment, result.student)
    except MissingEntry:
        return False
    folder = course.autograded_dir(result.student)
    return all((folder / f"{nb.name}.ipynb").exists() for nb in result.notebooks if nb.notebook is not None)
