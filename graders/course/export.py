"""Grades out to the LMS: `chapter export ASSIGNMENT|all [--lms canvas|moodle] [--ids ids.csv]`.

From the course's gradebook, one CSV the LMS's gradebook import takes, and one CSV of the students
held apart. The formats, as the LMSs document them:

- Canvas (Grades > Import): the layout of Canvas's own gradebook export, which its import takes
  back: a header row, then per student Student, ID, SIS User ID, SIS Login ID, Section and one
  column per assignment, named as in Canvas (a new name makes a new assignment there). Canvas
  matches a row by its name, ID or SIS User ID (Ohio State's CarmenCanvas guide "Import a CSV
  file to Carmen Grades" lists these columns); a blank cell leaves that student's grade as it is.
- Moodle (Grades > Import > CSV file): a header row, one identifier column that the import page
  maps ("Map from") to a user field ("Map to": ID number = useridnumber), and one column per grade
  item, mapped to the item on the same page.

The score of a submission is nbgrader's: the sum of its cells' scores (manual where given, else
automatic, plus extra credit) minus its late-submission penalty. A student whose work is not
graded for good - no submission, a cell still waiting for a person (nbgrader's needs_manual_grade,
which the engine also sets when the sandbox may have caused an error), or a submission the
exchange set aside - gets an empty cell, never a 0, and a line in the list apart.

ids.csv maps course ids (the logins nbgrader knows) to the LMS's: columns course_id, lms_id,
sis_id, section and optionally name and sis_login_id, one student a row. Without it, the course id stands for each.

Every field from a student (ids, names) is hostile. Control characters and invisible marks
(bidirectional overrides, zero-width characters) become spaces; then a field a spreadsheet would
run as a formula (starting, after any spaces, with = + - or @) gets a leading apostrophe, as OWASP's
"CSV Injection" page advises; and the csv module quotes commas, quotes and the rest.

Without ids.csv, the rows are the gradebook's students. A name known only from a set-aside
submission (a folder may claim any name) is listed apart, never made a row of the LMS's file.
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from graders.course import deadlines
from graders.course.deadlines import gradebook_of
from graders.engine.exchange import private_folder
from graders.engine.shared import atomic_write
from graders.unicode import UNSHOWN, shown_name

LMS = ("canvas", "moodle")
CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_ID_COLUMN = "ID number"
IDS_COLUMNS = ("course_id", "lms_id", "sis_id", "section")
APART_COLUMNS = ["student", "assignment", "why"]
MAX_IDS_ROWS = 100_000
MAX_FIELD = 200                       # characters of an id or a name worth keeping
_FORMULA_START = ("=", "+", "-", "@")


class ExportError(ValueError):
    """Something the instructor must fix (a bad ids.csv, an unknown assignment): a clear message."""


def safe_text(value) -> str:
    """A text field a spreadsheet shows as text: no formula, no control character, bounded."""
    text = UNSHOWN.sub(" ", "" if value is None else str(value))   # what shown_name escapes
    if text.lstrip(" ")[:1] in _FORMULA_START:   # a spreadsheet may trim the spaces a control became
        text = "'" + text
    return text[:MAX_FIELD]


def number(score: float) -> str:
    """A score as the shortest text that reads back as the same float ('7' for 7.0)."""
    text = repr(float(score))
    return text[:-2] if text.endswith(".0") else text


@dataclass
class Person:
    course_id: str
    lms_id: str = ""
    sis_id: str = ""
    section: str = ""
    name: str = ""
    login: str = ""


@dataclass
class Grades:
    """What the gradebook says, per assignment: a final score or the reason there is none."""
    assignments: list[str]
    students: list[str]
    scores: dict = field(default_factory=dict)      # (student, assignment) -> float
    apart: dict = field(default_factory=dict)       # (student, assignment) -> why
    claimed_only: set = field(default_factory=set)  # names only a set-aside submission gives


def read_ids(path: Path) -> dict[str, Person]:
    """ids.csv as course id -> Person; ExportError naming the row for anything malformed."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise ExportError(f"cannot read the ids file {path}: {error}") from error
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in (reader.fieldnames or [])]
    missing = [c for c in ("course_id", "lms_id") if c not in header]
    if missing:
        raise ExportError(f"{path}: the header must name the columns course_id and lms_id (and may name "
                          f"sis_id, section, name, sis_login_id); missing {', '.join(missing)}")
    reader.fieldnames = header
    people: dict[str, Person] = {}
    for number_, row in enumerate(reader, start=2):
        if number_ > MAX_IDS_ROWS:
            raise ExportError(f"{path}: more than {MAX_IDS_ROWS} rows")
        if None in row:
            raise ExportError(f"{path}, row {number_}: more fields than the header names")
        course_id = (row.get("course_id") or "").strip()
        if not course_id:
            raise ExportError(f"{path}, row {number_}: no course_id")
        if course_id in people:
            raise ExportError(f"{path}, row {number_}: the course id {course_id!r} is mapped twice")
        people[course_id] = Person(course_id, *((row.get(c) or "").strip() for c in IDS_COLUMNS[1:]),
                                   name=(row.get("name") or "").strip(),
                                   login=(row.get("sis_login_id") or "").strip())
    return people


def read_grades(root: Path, which: str, roster=()) -> Grades:
    """Every student's final score (penalty applied) in `which` ("all" or one assignment); the
    students are the gradebook's and the `roster`'s (ids.csv's), so one who never submitted is listed."""
    from nbgrader.api import Assignment, Gradebook, SubmittedAssignment

    from graders.engine.exchange import read_set_aside
    db_url, course_id = gradebook_of(root)
    with Gradebook(db_url, course_id) as gb:
        names = [a.name for a in gb.db.query(Assignment).order_by(Assignment.duedate, Assignment.name)]
        if which != "all":
            if which not in names:
                known = ", ".join(names) or "none"
                raise ExportError(f"no assignment {which!r} in the gradebook (it has: {known})")
            names = [which]
        grades = Grades(names, sorted({s.id for s in gb.students} | set(roster)))
        rows = (gb.db.query(Assignment.name, SubmittedAssignment.student_id, SubmittedAssignment.score,
                            SubmittedAssignment.late_submission_penalty, SubmittedAssignment.needs_manual_grade)
                .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
                .filter(Assignment.name.in_(names)).all())
    for assignment, student, score, penalty, waiting in rows:
        if waiting:
            grades.apart[student, assignment] = "a cell waits for a person's grade (formgrader)"
        else:
            grades.scores[student, assignment] = max(0.0, float(score or 0) - float(penalty or 0))
    for assignment in names:
        for entry in read_set_aside(Path(root), assignment):
            if not isinstance(entry.claimed, str) or not isinstance(entry.folder, str):
                continue                   # the ledger is the engine's; an entry it did not write is no one's
            # a folder's name is a student's choice: bytes that are not UTF-8, control characters
            claimed, folder, why = (shown_name(text) for text in (entry.claimed, entry.folder, str(entry.why)))
            key = (claimed, assignment)
            if key in grades.scores or key in grades.apart:
                grades.apart.setdefault(key, f"also a set-aside submission naming them ({folder}: {why}); "
                                             "their graded one is exported")
            else:
                grades.apart[key] = f"set aside ({folder}): {why}"
            if claimed not in grades.students:
                grades.students.append(claimed)
                grades.claimed_only.add(claimed)
        for student in grades.students:
            key = (student, assignment)
            if key not in grades.scores and key not in grades.apart and student not in grades.claimed_only:
                grades.apart[key] = "no submission"
    return grades


@dataclass
class Written:
    export: Path
    apart: Path
    exported: int                    # cells with a score
    apart_lines: list[str]


def export(root: Path, which: str, lms: str = "canvas", ids: Path | None = None,
           out: Path | None = None) -> Written:
    if lms not in LMS:
        raise ExportError(f"unknown LMS {lms!r}: choose {' or '.join(LMS)}")
    people = read_ids(ids) if ids else None
    stale = _penalties_behind(Path(root))
    if stale:
        raise ExportError(stale)
    grades = read_grades(Path(root), which, roster=people or ())
    out = Path(out) if out else Path(root) / "exports"
    if not out.exists() or out == Path(root) / "exports":   # a folder the instructor names and already has
        out = private_folder(out)                           # keeps its mode: /tmp stays /tmp
    label = re.sub(r"[^A-Za-z0-9._-]", "_", which)
    if lms == "canvas":
        header = CANVAS_COLUMNS + [safe_text(a) for a in grades.assignments]
    else:
        header = [MOODLE_ID_COLUMN] + [safe_text(a) for a in grades.assignments]
    table, apart, exported = [header], [], 0
    for student in grades.students:
        if people is not None:
            person = people.get(student)
        else:   # the course id stands for the LMS's; a name no graded work bears is no one's row
            person = None if student in grades.claimed_only else Person(student, student, student)
        unmapped = person is None or (lms == "moodle" and not person.sis_id)
        cells = []
        for assignment in grades.assignments:
            key = (student, assignment)
            if key in grades.apart:
                apart.append([student, assignment, grades.apart[key]])
            if key in grades.scores and not unmapped:
                cells.append(number(grades.scores[key]))
                exported += 1
            else:
                cells.append("")
        if people is None and person is None:
            continue                    # its set-aside lines, above, are all there is to say
        if unmapped:
            why = "not in the ids file" if person is None else "no sis_id in the ids file (Moodle's ID number)"
            apart.append([student, "all" if which == "all" else which, f"{why}: not exported"])
            continue
        if lms == "canvas":
            row = [person.name or student, person.lms_id, person.sis_id, person.login, person.section]
        else:
            row = [person.sis_id]
        table.append([safe_text(v) for v in row] + cells)
    export_path, apart_path = out / f"{lms}-{label}.csv", out / f"apart-{label}.csv"
    _write(export_path, table)
    _write(apart_path, [APART_COLUMNS] + [[safe_text(v) for v in row] for row in apart])
    lines = [f"APART {safe_text(s)} {safe_text(a)}: {why}" for s, a, why in apart]
    return Written(export_path, apart_path, exported, lines)


def _penalties_behind(root: Path) -> str:
    """Why the gradebook's penalties are not deadlines.toml's ('' when they are, or there is none):
    grades go out only with the penalties the instructor's policy gives."""
    try:
        policy = deadlines.load(root)
    except deadlines.DeadlineError as error:
        return f"{error}\nfix it and run `chapter deadlines` before exporting: the late penalties depend on it"
    if policy is None:
        return ""
    _, changes = deadlines.apply(root, policy, dry_run=True)
    if not changes:
        return ""
    shown = "\n  ".join(c.line() for c in changes[:10]) + ("\n  ..." if len(changes) > 10 else "")
    return (f"the gradebook's late penalties are not yet those of {deadlines.FILE} ({len(changes)} differ):\n  "
            f"{shown}\nrun `chapter deadlines` first")


def _write(path: Path, rows: list[list[str]]) -> None:
    text = io.StringIO(newline="")
    csv.writer(text, quoting=csv.QUOTE_MINIMAL).writerows(rows)
    atomic_write(path, text.getvalue().encode("utf-8"), 0o600)
