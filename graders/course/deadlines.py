"""Deadlines as data: `deadlines.toml` in the course folder, applied by `chapter deadlines`.

    [penalty]                 # one schedule for every notebook
    per = "day"               # "hour" or "day": each started hour (day) late costs `amount`
    kind = "fraction"         # "fraction" of the notebook's score, or "points"
    amount = 0.1
    cap = 0.5                 # the most a notebook loses, in the same unit as amount
    grace_minutes = 5         # this late or less costs nothing (optional, default 0)

    [due]                     # a due date per assignment (TOML times; without an offset, UTC;
                              # a date alone is 23:59:59 UTC that day)
    worked = 2026-11-20T17:00:00Z

    [extensions.worked]       # per student: extra hours, or a due date of their own
    ann = { hours = 48 }
    bo = { due = 2026-11-25T12:00:00Z }

`chapter deadlines` writes the due dates into nbgrader's gradebook (Assignment.duedate) and each
submission's extension (SubmittedAssignment.extension; a student no longer listed loses theirs),
then recomputes every graded notebook's late_submission_penalty from its submission's
total_seconds_late and the schedule - nothing is regraded - and prints what changed. The file is
read and checked whole before anything is written: a malformed one changes nothing.

`DeadlinePenalty` is nbgrader's late-submission plugin with the same schedule
(c.AssignLatePenalties.plugin_class in nbgrader_config.py), so that `chapter autograde` and
`nbgrader autograde` give the penalties `chapter deadlines` gives. nbgrader keeps an extension on
a submission, so a student who submits after being granted one gets it when `chapter deadlines`
next runs (run it after grading; it is idempotent).
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

from nbgrader.plugins import LateSubmissionPlugin

from graders.course.pages import Preprocessor     # nbconvert's, on by default as nbgrader needs
from graders.feedback import points

FILE = "deadlines.toml"
UNITS = {"hour": 3600.0, "day": 86400.0}
KINDS = ("fraction", "points")
MAX_BYTES = 1_000_000


class DeadlineError(ValueError):
    """deadlines.toml is not usable: the message says where and why."""


@dataclass(frozen=True)
class Schedule:
    per: str = "day"
    kind: str = "fraction"
    amount: float = 0.0
    cap: float = 0.0
    grace_minutes: float = 0.0

    def penalty(self, score: float, seconds_late: float) -> float:
        """Points a notebook scoring `score`, handed in `seconds_late` late, loses (0..score)."""
        score = max(0.0, float(score or 0))
        if seconds_late <= self.grace_minutes * 60 or seconds_late <= 0:
            return 0.0
        units = math.ceil(seconds_late / UNITS[self.per])
        scale = score if self.kind == "fraction" else 1.0
        return min(units * self.amount * scale, self.cap * scale, score)


@dataclass
class Policy:
    schedule: Schedule | None = None
    due: dict = field(default_factory=dict)           # assignment -> naive UTC datetime
    extensions: dict = field(default_factory=dict)    # (assignment, student) -> timedelta


def _utc(value, where: str) -> datetime:
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(timezone.utc).replace(tzinfo=None)
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, 23, 59, 59)
    raise DeadlineError(f"{where}: {value!r} is not a date or time (write e.g. 2026-11-20T17:00:00Z)")


def _number(value, where: str, low: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < low:
        raise DeadlineError(f"{where}: {value!r} is not a number of at least {low:g}")
    return float(value)


def _unknown(table: dict, allowed: set, where: str) -> None:
    extra = sorted(set(table) - allowed)
    if extra:
        raise DeadlineError(f"{where}: unknown key{'s' if len(extra) > 1 else ''} {', '.join(extra)} "
                            f"(known: {', '.join(sorted(allowed))})")


def parse(text: str, name: str = FILE) -> Policy:
    """The policy in `text`; DeadlineError naming the place for anything it cannot use."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise DeadlineError(f"{name} is not valid TOML: {error}") from error
    _unknown(data, {"penalty", "due", "extensions"}, name)
    policy = Policy()
    if "penalty" in data:
        p = data["penalty"]
        if not isinstance(p, dict):
            raise DeadlineError(f"{name}: [penalty] must be a table")
        _unknown(p, {"per", "kind", "amount", "cap", "grace_minutes"}, f"{name} [penalty]")
        per, kind = p.get("per", "day"), p.get("kind", "fraction")
        if per not in UNITS:
            raise DeadlineError(f"{name} [penalty]: per = {per!r}; choose \"hour\" or \"day\"")
        if kind not in KINDS:
            raise DeadlineError(f"{name} [penalty]: kind = {kind!r}; choose \"fraction\" or \"points\"")
        amount = _number(p.get("amount", 0), f"{name} [penalty] amount")
        cap = p.get("cap")
        cap = (1.0 if kind == "fraction" else math.inf) if cap is None else _number(cap, f"{name} [penalty] cap")
        if kind == "fraction" and (amount > 1 or cap > 1):
            raise DeadlineError(f"{name} [penalty]: a fraction's amount and cap are at most 1")
        policy.schedule = Schedule(per, kind, amount, cap,
                                   _number(p.get("grace_minutes", 0), f"{name} [penalty] grace_minutes"))
    due = data.get("due", {})
    if not isinstance(due, dict):
        raise DeadlineError(f"{name}: [due] must be a table of assignment = date")
    for assignment, when in due.items():
        policy.due[assignment] = _utc(when, f"{name} [due] {assignment}")
    extensions = data.get("extensions", {})
    if not isinstance(extensions, dict):
        raise DeadlineError(f"{name}: [extensions] must hold one table per assignment")
    for assignment, students in extensions.items():
        where = f"{name} [extensions.{assignment}]"
        if assignment not in policy.due:
            raise DeadlineError(f"{where}: the assignment has no due date in [due]")
        if not isinstance(students, dict):
            raise DeadlineError(f"{where} must be a table of student = {{ hours = H }} or {{ due = DATE }}")
        for student, given in students.items():
            here = f"{where} {student}"
            if not isinstance(given, dict) or len(given) != 1 or not set(given) <= {"hours", "due"}:
                raise DeadlineError(f"{here}: give exactly one of {{ hours = H }} or {{ due = DATE }}")
            if "hours" in given:
                extra = timedelta(hours=_number(given["hours"], here + " hours"))
            else:
                extra = _utc(given["due"], here + " due") - policy.due[assignment]
                if extra < timedelta(0):
                    raise DeadlineError(f"{here}: due {given['due']} is before the assignment's own due date")
            policy.extensions[assignment, student] = extra
    return policy


def load(root: Path) -> Policy | None:
    """The course's policy, None when it has no deadlines.toml; DeadlineError when it is unusable."""
    path = Path(root) / FILE
    try:
        raw = path.read_bytes()[:MAX_BYTES + 1]
    except FileNotFoundError:
        return None
    except OSError as error:
        raise DeadlineError(f"cannot read {path}: {error}") from error
    if len(raw) > MAX_BYTES:
        raise DeadlineError(f"{path} is over {MAX_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DeadlineError(f"{path} is not UTF-8: {error}") from error
    return parse(text, str(path))


class OwnDueDates:
    """Each student's own due date (extension included) as deadlines.toml says, reread whenever
    the file changes: `chapter serve` counts the last attempt before it.

    `refresh()` rereads a changed file and returns the problem in one line when the new version is
    unusable; the last good version then stays in force. Called with (assignment, student), it
    gives that student's due date, or None when the file gives the assignment none.
    """

    def __init__(self, root: Path):
        self.path = Path(root) / FILE
        self.policy: Policy | None = None
        self._seen = ()

    def refresh(self) -> str | None:
        try:
            st = self.path.stat()
            seen = (st.st_mtime_ns, st.st_size, st.st_ino)
        except FileNotFoundError:
            seen = None
        except OSError as error:
            return f"cannot read {self.path}: {error}"
        if seen == self._seen:
            return None
        try:
            self.policy = load(self.path.parent)
        except DeadlineError as error:
            return str(error)
        self._seen = seen
        return None

    def __call__(self, assignment: str, student: str) -> datetime | None:
        if self.policy is None or assignment not in self.policy.due:
            return None
        return self.policy.due[assignment] + self.policy.extensions.get((assignment, student), timedelta(0))


def gradebook_of(root: Path):
    """(db_url, course_id) of the course at `root`, as its nbgrader_config.py says."""
    from graders.engine.course_dir import course_directory
    coursedir = course_directory(Path(root))
    return coursedir.db_url, coursedir.course_id


@dataclass
class Change:
    student: str
    assignment: str
    old: float
    new: float

    def line(self) -> str:
        return f"{self.student}  {self.assignment}: penalty {self.old:g} -> {self.new:g}"


def apply(root: Path, policy: Policy, dry_run: bool = False) -> tuple[list[str], list[Change]]:
    """Write the policy into the gradebook; recompute graded notebooks' penalties. (notes, changes)
    With dry_run, only say what would change."""
    from nbgrader.api import Assignment, Gradebook, SubmittedAssignment
    db_url, course_id = gradebook_of(Path(root))
    notes, changes = [], []
    with Gradebook(db_url, course_id) as gb:
        known = {a.name: a for a in gb.db.query(Assignment)}
        for assignment, when in sorted(policy.due.items()):
            if assignment not in known:
                notes.append(f"{assignment}: not in the gradebook yet; its due date is set once it is "
                             f"(run chapter deadlines again after generate/autograde)")
                continue
            if known[assignment].duedate != when:
                notes.append(f"{assignment}: due {known[assignment].duedate} -> {when} (UTC)")
                known[assignment].duedate = when
        for (assignment, student), extra in sorted(policy.extensions.items()):
            if assignment in known and not any(s.student_id == student for s in known[assignment].submissions):
                notes.append(f"{student}  {assignment}: extension kept for when they submit "
                             f"(run chapter deadlines again after grading)")
        submissions = (gb.db.query(SubmittedAssignment).join(Assignment)
                       .filter(Assignment.name.in_(list(policy.due))).all())
        for submission in submissions:
            name, student = submission.assignment.name, submission.student_id
            extension = policy.extensions.get((name, student))
            extension = extension if extension else None
            if submission.extension != extension:
                notes.append(f"{student}  {name}: extension {submission.extension} -> {extension}")
                submission.extension = extension
        gb.db.flush()
        schedule = policy.schedule
        for submission in submissions:
            late = submission.total_seconds_late
            old_total = new_total = 0.0
            for notebook in submission.notebooks:
                old = float(notebook.late_submission_penalty or 0)
                new = schedule.penalty(notebook.score, late) if schedule and late > 0 else 0.0
                new = min(max(new, 0.0), float(notebook.score or 0))
                old_total, new_total = old_total + old, new_total + new
                notebook.late_submission_penalty = new if new else None
            if not math.isclose(old_total, new_total, abs_tol=1e-12):
                changes.append(Change(submission.student_id, submission.assignment.name, old_total, new_total))
        if dry_run:
            gb.db.rollback()
        else:
            gb.db.commit()
    return notes + release_notes(Path(root), policy), changes


class DeadlinePenalty(LateSubmissionPlugin):
    """nbgrader's late-penalty plugin, with the schedule of the course's deadlines.toml."""

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float):
        if getattr(self, "_file", None) is None:    # read once a run, and again only when it changes
            self._file = OwnDueDates(Path(self.config.CourseDirectory.get("root") or "."))
        problem = self._file.refresh()
        if problem:
            self.log.error("no late penalty given: %s (fix it, then run chapter deadlines)", problem)
            return None
        policy = self._file.policy
        if policy is None or policy.schedule is None:
            return None
        return policy.schedule.penalty(score, total_seconds_late)


def due_sentence(due: datetime | None, extension: timedelta | None, handed_in: datetime | None,
                 seconds_late: float, penalty: float) -> str:
    """What a student reads at the top of their feedback about their own deadline."""
    if due is None:
        return ""
    own = due + extension if extension else due
    text = f"**Your due date:** {own:%Y-%m-%d %H:%M} UTC"
    if extension:
        hours = extension.total_seconds() / 3600
        text += f" (the class's {due:%Y-%m-%d %H:%M}, with your extension of {hours:g} h)"
    text += "."
    if handed_in is not None:
        text += f" Handed in {handed_in:%Y-%m-%d %H:%M} UTC"
        if seconds_late > 0:
            late = seconds_late / 3600
            text += f", {late:.1f} h late" + (f": a late penalty of {points(penalty)} on this notebook."
                                              if penalty else ", with no penalty.")
        else:
            text += ", on time."
    return text


class DueDateInFeedback(Preprocessor):
    """generate_feedback: a first cell telling the student their own due date (extension included),
    when they handed in, and the late penalty, in place of the release's due-date header (whose
    date is the class's). Nothing when the gradebook has no due date."""

    def preprocess(self, nb, resources):
        import nbformat
        from nbgrader.api import Gradebook, MissingEntry
        given = (resources or {}).get("nbgrader") or {}
        if not all(given.get(k) for k in ("db_url", "assignment", "student", "notebook")):
            return nb, resources
        try:
            with Gradebook(given["db_url"]) as gb:
                submission = gb.find_submission(given["assignment"], given["student"])
                notebook = gb.find_submission_notebook(given["notebook"], given["assignment"], given["student"])
                text = due_sentence(submission.assignment.duedate, submission.extension, submission.timestamp,
                                    submission.total_seconds_late, float(notebook.late_submission_penalty or 0))
        except MissingEntry:
            return nb, resources
        if text:   # in place of the release's header (the class's date): the student's own
            nb.cells = [c for c in nb.cells if not is_release_header(c)]
            nb.cells.insert(0, nbformat.v4.new_markdown_cell(text, metadata={"deadline": True}))
        return nb, resources


# ---------------------------------------------------------------- the due date in the release
# A plain markdown cell, the notebook's first: no nbgrader metadata, so nbgrader neither records
# it in the gradebook nor grades it or checks it, and a student who edits or deletes it changes
# no grade. Jupyter's own `editable`/`deletable` flags make it read-only in the notebook.
HEADER_ID = "chapter-due-date"


def is_release_header(cell) -> bool:
    """The release's due-date cell: by its id, or (a notebook older than nbformat 4.5 has no cell
    ids) by its metadata."""
    meta = cell.get("metadata")
    return cell.get("cell_type") == "markdown" and (
        cell.get("id") == HEADER_ID or (isinstance(meta, dict) and isinstance(meta.get("deadline"), dict)))


def _when(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M}" + (f":{moment:%S}" if moment.second else "") + " UTC"


def _share(value: float) -> str:
    return f"{value * 100:g}%"


def schedule_sentence(schedule: Schedule | None) -> str:
    """The late-penalty schedule in one plain sentence."""
    if schedule is None or schedule.amount == 0 or schedule.cap == 0:
        return "Work handed in after the due date loses nothing for being late."
    after = (f"more than {schedule.grace_minutes:g} minute{'' if schedule.grace_minutes == 1 else 's'} "
             "after the due date" if schedule.grace_minutes else "after the due date")
    unit = f"each {schedule.per}, or part of {'an' if schedule.per == 'hour' else 'a'} {schedule.per}, late"
    if schedule.kind == "fraction":
        cost = f"{_share(schedule.amount)} of the notebook's score for {unit}"
        most = "" if schedule.cap >= 1 else f", at most {_share(schedule.cap)}"
    else:
        cost = f"{points(schedule.amount)} for {unit}"
        most = f", at most {points(schedule.cap)}" if math.isfinite(schedule.cap) else ""
    return f"Work handed in {after} loses {cost}{most}, and never more than it scored."


def release_text(policy: Policy | None, assignment: str) -> str:
    """The header every student's released notebook of `assignment` opens with ('' when
    deadlines.toml gives it no due date)."""
    if policy is None or assignment not in policy.due:
        return ""
    return (f"**Due:** {_when(policy.due[assignment])}.\n\n"
            f"**Late work:** {schedule_sentence(policy.schedule)}\n\n"
            "An extension granted to you moves your own due date; your feedback shows it.")


def release_cell(policy: Policy | None, assignment: str):
    """The header cell of `release_text`, or None."""
    import nbformat
    text = release_text(policy, assignment)
    if not text:
        return None
    cell = nbformat.v4.new_markdown_cell(text, id=HEADER_ID)
    cell.metadata.update(deletable=False, editable=False,
                         deadline={"due": policy.due[assignment].isoformat()})
    return cell


class DueDateInRelease(Preprocessor):
    """generate_assignment: the release opens with the assignment's due date (UTC) and the
    late-penalty schedule, when the course's deadlines.toml gives one; otherwise nothing changes.
    A malformed deadlines.toml stops the generation with its message."""

    def preprocess(self, nb, resources):
        assignment = ((resources or {}).get("nbgrader") or {}).get("assignment")
        if not assignment:
            return nb, resources
        root = self.config.CourseDirectory.get("root") or "."
        cell = release_cell(load(Path(root)), assignment)
        if cell is not None:
            if (nb.get("nbformat"), nb.get("nbformat_minor", 0)) < (4, 5):
                del cell["id"]    # cell ids came with nbformat 4.5: an older notebook must not carry one
            nb.cells = [c for c in nb.cells if not is_release_header(c)]
            nb.cells.insert(0, cell)
        return nb, resources


def release_notes(root: Path, policy: Policy) -> list[str]:
    """One line for each assignment whose committed release/ shows another due date, or another
    schedule, than `policy` gives it."""
    import nbformat
    notes = []
    release = Path(root) / "release"
    folders = sorted(p.name for p in release.iterdir() if p.is_dir()) if release.is_dir() else []
    for assignment in folders:
        wanted = release_text(policy, assignment)
        shown = set()
        for path in sorted((release / assignment).glob("*.ipynb")):
            try:
                cells = nbformat.read(path, as_version=4).cells
            except Exception:   # an unreadable release is the build check's to report
                continue
            first = cells[0] if cells and is_release_header(cells[0]) else None
            shown.add((first.metadata.get("deadline", {}).get("due"), first.source) if first else (None, ""))
        if not shown or shown == {(policy.due[assignment].isoformat() if wanted else None, wanted)}:
            continue
        fix = f": run chapter build, then nbgrader release_assignment {assignment}"
        if not wanted:
            notes.append(f"release/{assignment} still shows a due date deadlines.toml no longer gives{fix}")
        elif all(due is None for due, _ in shown):
            notes.append(f"release/{assignment} shows no due date{fix}")
        elif any(due != policy.due[assignment].isoformat() for due, _ in shown):
            notes.append(f"release/{assignment} shows the old due date{fix}")
        else:
            notes.append(f"release/{assignment} shows the old late-penalty schedule{fix}")
    return notes
