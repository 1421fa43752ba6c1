"""Outcomes of single checks, a problem's result, and the lines students read.

A feedback line names the check (the answer key) and what went wrong, and,
when a declared mistake reproduces the student's answer, what the mistake
probably was. It never contains the reference value.
"""
from __future__ import annotations

from dataclasses import dataclass, field

PASS, FAIL, INVALID, UNDECIDED = "pass", "fail", "invalid", "undecided"
# an answer neither proved equal to the reference nor refuted: it scores nothing here, and the
# engine leaves its cell for a person (formgrader) rather than record a 0
UNDECIDED_REASON = ("could not be decided in time: the grader neither proved it equal to the expression "
                    "for your variant nor found a point where the two differ.")
_MARK = {PASS: "✓", FAIL: "✗", INVALID: "✗", UNDECIDED: "?"}
# A display output a hidden test leaves in its cell under plain `nbgrader autograde` when an
# answer was undecided: the course's SaveAutoGrades (graders.engine.nbgrader_hooks) reads it
# and leaves the cell for a person instead of recording the points it lacks as lost.
UNDECIDED_MIME = "application/vnd.chapter.undecided+json"


def points(amount: float) -> str:
    """An amount of points in words: "1 point", "0.5 points", "2 points"."""
    return f"{amount:g} point{'' if amount == 1 else 's'}"


def cell_waits(variant: str, worth: float) -> str:
    """The first line of a test cell left for a person: no score is given yet."""
    return f"Variant {variant}: not graded yet; your instructor will grade the {points(worth)} of this cell"


def some(names: list[str], most: int = 10, sep: str = ", ", more: str = " and {} more") -> str:
    """At most `most` names, and how many more (a hostile notebook, or a machine, may hold thousands)."""
    return sep.join(names[:most]) + (more.format(len(names) - most) if len(names) > most else "")


def undecided_waits(keys) -> str:
    """A cell holding an answer the grader could neither prove equal to the reference nor refute."""
    return (f"? not graded yet: the grader could not decide {some([str(k) for k in keys])} either way, "
            "so this cell is not scored 0; your instructor will grade it")


@dataclass(frozen=True)
class Outcome:
    """The verdict of one check on one answer key."""
    status: str
    reason: str = ""

    @property
    def passed(self) -> bool:
        return self.status == PASS


@dataclass
class Result:
    """What `Problem.grade` returns: r.score, r.max_score, r.feedback."""
    score: float = 0.0
    max_score: float = 0.0
    feedback: list[str] = field(default_factory=list)
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    mistakes: dict[str, str] = field(default_factory=dict)   # answer key -> the declared mistake matched

    @property
    def full_marks(self) -> bool:
        return self.max_score > 0 and abs(self.score - self.max_score) < 1e-9


def line(key: str, outcome: Outcome, mistake_feedback: str | None = None,
         lead: str = "Likely mistake:") -> str:
    """One feedback line for `key`; `lead` introduces the declared mistake's text."""
    if outcome.passed:
        return f"{_MARK[PASS]} {key}: correct"
    text = f"{_MARK[outcome.status]} {key}: {outcome.reason}"
    if mistake_feedback:
        text += f" {lead} {mistake_feedback}"
    return text


INSTANT_LEAD = "Look again at:"   # before a declared mistake's instant text (graders.giveaway)
