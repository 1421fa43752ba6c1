"""The report's deadlines part: each student's own due date, when they handed in, and the late
penalty the gradebook holds, beside what deadlines.toml says now.

It reads nbgrader's gradebook (Assignment.duedate, each SubmittedAssignment's timestamp and
extension, each SubmittedNotebook's late_submission_penalty) and the course's deadlines.toml.
Where the two disagree (a due date moved, an extension granted after the gradebook last heard of
it), the row says so and names the command that brings them together: `chapter deadlines`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from graders.engine.times import naive_utc, read_retimed, submission_time
from graders.unicode import shown_name

COLUMNS = ["student", "due (UTC)", "handed in (UTC)", "hours late", "penalty (points)", "note"]


@dataclass
class Lateness:
    due: object = None                    # the gradebook's due date of the assignment (naive UTC)
    file_due: object = None               # deadlines.toml's, or None
    problem: str = ""                     # deadlines.toml could not be read: why
    rows: list = field(default_factory=list)
    out_of_step: int = 0                  # rows whose gradebook disagrees with deadlines.toml
    extended: int = 0                     # submissions with an extension in the gradebook

    @property
    def shown(self) -> bool:
        return self.due is not None or self.file_due is not None or bool(self.problem)

    def counts(self) -> dict:
        late = [r for r in self.rows if r[COLUMNS.index("hours late")]]
        return {"submissions": len(self.rows), "on time": len(self.rows) - len(late), "late": len(late),
                "penalised": sum(1 for r in late if r[COLUMNS.index("penalty (points)")]),
                "points taken": round(sum(r[COLUMNS.index("penalty (points)")] for r in self.rows), 6),
                "with an extension": self.extended}

    def summary(self) -> str:
        if not self.shown:
            return ""
        if self.due is None and self.file_due is None:
            return f"Deadlines: deadlines.toml could not be read ({self.problem})."
        due = self.due or self.file_due
        c = self.counts()
        text = (f"Due {due:%Y-%m-%d %H:%M} UTC: {c['submissions']} submissions, {c['on time']} on time, "
                f"{c['late']} late ({c['penalised']} penalised, {c['points taken']:g} points taken in all); "
                f"{c['with an extension']} with an extension.")
        if self.problem:
            text += f" deadlines.toml could not be read ({self.problem}): the gradebook's figures are shown."
        elif self.file_due is not None and self.due != self.file_due:
            text += (f" deadlines.toml says {self.file_due:%Y-%m-%d %H:%M} UTC but the gradebook says "
                     f"{'none' if self.due is None else format(self.due, '%Y-%m-%d %H:%M')}: "
                     "run `chapter deadlines`.")
        if self.out_of_step:
            text += (f" {self.out_of_step} row{'s differ' if self.out_of_step != 1 else ' differs'} from "
                     "deadlines.toml: run `chapter deadlines`.")
        return text


def _said(claimed: str) -> str:
    """What a retimed submission's timestamp.txt said, as the table shows it."""
    return _minute(submission_time(claimed)[0]) or shown_name(claimed[:40]) or "nothing"


def _minute(moment: datetime | None) -> str:
    """A time to the minute, as the table shows it (UTC); "" for none."""
    if moment is None:
        return ""
    return f"{naive_utc(moment) if moment.tzinfo is not None else moment:%Y-%m-%d %H:%M}"


def _hours(delta: timedelta | None) -> float:
    return 0.0 if not delta else delta.total_seconds() / 3600


def read(root, assignment: str) -> Lateness:
    """What the course's gradebook holds for `assignment`, beside its deadlines.toml."""
    from nbgrader.api import Gradebook

    from graders.course.deadlines import gradebook_of
    db_url, course_id = gradebook_of(root)
    with Gradebook(db_url, course_id) as gb:
        return _read(gb, root, assignment)


def _read(gb, root, assignment: str) -> Lateness:
    from nbgrader.api import MissingEntry

    from graders.course.deadlines import DeadlineError, load
    out = Lateness()
    try:
        out.due = gb.find_assignment(assignment).duedate
    except MissingEntry:
        return out
    policy = None
    try:
        policy = load(root)
    except DeadlineError as error:
        out.problem = str(error)
    if policy is not None:
        out.file_due = policy.due.get(assignment)
    retimed = {}
    for entry in read_retimed(root, assignment):
        retimed.setdefault(entry.student, []).append(entry)
    for sub in sorted(gb.assignment_submissions(assignment), key=lambda s: s.student_id):
        own = sub.duedate
        late = sub.total_seconds_late if own is not None else 0.0
        penalty = round(sum(float(nb.late_submission_penalty or 0) for nb in sub.notebooks), 6)
        notes = []
        if sub.extension:
            out.extended += 1
            notes.append(f"extension of {_hours(sub.extension):g} h")
        if late and not penalty:
            notes.append("late, no penalty (grace or schedule)")
        notes += [f"timestamp.txt said {_said(e.claimed)}; files written later"
                  for e in retimed.get(sub.student_id, ())
                  if (written := _minute(e.moment())) and written == _minute(sub.timestamp)]
        if policy is not None and out.file_due is not None:
            granted = _hours(policy.extensions.get((assignment, sub.student_id)))
            if granted != _hours(sub.extension):
                notes.append(f"deadlines.toml gives {granted:g} h of extension, the gradebook "
                             f"{_hours(sub.extension):g} h: run `chapter deadlines`")
                out.out_of_step += 1
        out.rows.append([sub.student_id, "" if own is None else f"{own:%Y-%m-%d %H:%M}",
                         "" if sub.timestamp is None else f"{sub.timestamp:%Y-%m-%d %H:%M}",
                         round(late / 3600, 2), penalty, "; ".join(notes)])
    return out
