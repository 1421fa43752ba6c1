"""Grading evidence: each check's verdict and the declared mistake it matched, kept per student.

The class report (`graders.course.report`) needs more than nbgrader's points: which check
failed, and which declared mistake reproduced the student's answer. The engine
keeps that in two tables of its own beside nbgrader's, in the gradebook's own
database (so it works the same on SQLite and PostgreSQL, and after a cluster run):

- `chapter_check_evidence`: one row per (student, notebook, hidden-test cell, answer key)
  with the check's status (pass, fail, invalid, undecided) and the mistake's name;
- `chapter_notebook_evidence`: one row per (student, notebook) with the variant, the
  engine's status, and whether it scored 0 for a non-mathematical reason (and why).

Only names and verdicts are kept, never an answer or a reference value. The rows
of a submission are written in the same transaction as its grades (`record`), under
the same per-student lock, and replaced as a whole when it is graded again.
"""
from __future__ import annotations

import json
import weakref

from sqlalchemy import (Boolean, Column, Float, Integer, MetaData, String, Table, Text,
                        UniqueConstraint, delete, select, text)

from graders.feedback import FAIL, INVALID, PASS, UNDECIDED

STATUSES = (PASS, FAIL, INVALID, UNDECIDED)
NAME = 160            # longest name kept (student ids, cell ids, keys, mistake names)
REASON = 500          # longest technical reason kept

metadata = MetaData()
checks_table = Table(
    "chapter_check_evidence", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("course", String(NAME), nullable=False),
    Column("assignment", String(NAME), nullable=False),
    Column("student", String(NAME), nullable=False),
    Column("notebook", String(NAME), nullable=False),
    Column("grade_id", String(NAME), nullable=False),
    Column("answer_key", String(NAME), nullable=False),
    Column("status", String(16), nullable=False),
    Column("mistake", String(NAME)),
    Column("variant", String(16), nullable=False),
    UniqueConstraint("course", "assignment", "student", "notebook", "grade_id", "answer_key",
                     name="chapter_check_evidence_once"),
)
notebooks_table = Table(
    "chapter_notebook_evidence", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("course", String(NAME), nullable=False),
    Column("assignment", String(NAME), nullable=False),
    Column("student", String(NAME), nullable=False),
    Column("notebook", String(NAME), nullable=False),
    Column("variant", String(16), nullable=False),
    Column("status", String(16), nullable=False),
    Column("score", Float, nullable=False),
    Column("max_score", Float, nullable=False),
    Column("technical_zero", Boolean, nullable=False),
    Column("reasons", Text, nullable=False),       # JSON list of the engine's own sentences
    UniqueConstraint("course", "assignment", "student", "notebook", name="chapter_notebook_evidence_once"),
)

_READY = weakref.WeakSet()    # engines whose tables this process has made sure of


def check_verdicts(statuses: dict, mistakes: dict, keys) -> dict:
    """{answer_key: {"status", "mistake"}} for one test cell, from a grade's statuses and mistakes.

    Takes plain dicts (answer key -> status, answer key -> mistake name), so it reads a
    `Result` as well as the same data sent back as JSON by a bounded child.
    """
    out = {}
    for key in keys:
        status = statuses.get(key)
        mistake = mistakes.get(key) if isinstance(mistakes, dict) else None
        out[str(key)] = {"status": status if status in STATUSES else UNDECIDED,
                         "mistake": str(mistake)[:NAME] if isinstance(mistake, str) and mistake else None}
    return out


def ensure_tables(session) -> None:
    """Create the evidence tables if they are missing, on the session's own connection."""
    engine = session.get_bind()
    if engine in _READY:
        return
    connection = session.connection()
    if engine.dialect.name == "postgresql":
        # two graders creating the tables at once would collide on PostgreSQL's catalog
        connection.execute(text("SELECT pg_advisory_xact_lock(8080808)"))
    metadata.create_all(connection, checkfirst=True)
    _READY.add(engine)


def keep(session, course_id: str, assignment: str, result) -> None:
    """Replace a submission's evidence with that of `result` (a SubmissionResult); no commit."""
    ensure_tables(session)
    where = dict(course=course_id or "", assignment=assignment, student=result.student)
    for table in (checks_table, notebooks_table):
        session.execute(delete(table).where(*(table.c[k] == v for k, v in where.items())))
    check_rows, notebook_rows = [], []
    for nb in result.notebooks:
        variant = str(nb.variant or "")[:16]
        reasons = [str(r)[:REASON] for r in (list(nb.reasons) + list(nb.notes))[:20]]
        notebook_rows.append(dict(where, notebook=nb.name, variant=variant, status=str(nb.status)[:16],
                                  score=float(nb.score), max_score=float(nb.max_score),
                                  technical_zero=bool(nb.technical_zero), reasons=json.dumps(reasons)))
        for grade_id, verdicts in (getattr(nb, "checks", None) or {}).items():
            for key, verdict in verdicts.items():
                check_rows.append(dict(where, notebook=nb.name, grade_id=str(grade_id)[:NAME],
                                       answer_key=str(key)[:NAME], status=verdict["status"],
                                       mistake=verdict["mistake"], variant=variant))
    if notebook_rows:
        session.execute(notebooks_table.insert(), notebook_rows)
    if check_rows:
        session.execute(checks_table.insert(), check_rows)


def read(engine, course_id: str, assignment: str):
    """(check rows, notebook rows) of one assignment, as lists of dicts; empty without the tables."""
    from sqlalchemy import inspect
    names = set(inspect(engine).get_table_names())
    if not {checks_table.name, notebooks_table.name} <= names:
        return [], []
    with engine.connect() as conn:
        checks = [dict(r._mapping) for r in conn.execute(
            select(checks_table).where(checks_table.c.course == (course_id or ""),
                                       checks_table.c.assignment == assignment))]
        notebooks = [dict(r._mapping) for r in conn.execute(
            select(notebooks_table).where(notebooks_table.c.course == (course_id or ""),
                                          notebooks_table.c.assignment == assignment))]
    for row in notebooks:
        try:
            row["reasons"] = [str(r) for r in json.loads(row["reasons"])]
        except (TypeError, ValueError):
            row["reasons"] = []
    return checks, notebooks
