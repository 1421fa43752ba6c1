"""Reading the class: nbgrader's grades and the engine's per-check evidence of one assignment.

Every row is read by column name: the gradebook query labels its columns, and the engine's
evidence (`graders.evidence.read`) comes back as dicts. Nothing here computes a statistic.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

MIN_CLASS = 10        # students with a submission of the item: fewer, and only counts are shown
MIN_VARIANT = 5       # students in a variant: fewer, and that variant has no interval and no flag


@dataclass
class Item:
    """One notebook of the assignment, as the class did it."""
    name: str
    max_score: float
    scores: dict = field(default_factory=dict)       # student -> points (nbgrader's, manual included)
    variants: dict = field(default_factory=dict)     # student -> variant label
    checks: list = field(default_factory=list)       # (grade_id, answer key) in the problem's order
    verdicts: dict = field(default_factory=dict)     # (grade_id, key) -> Counter of statuses
    outcomes: dict = field(default_factory=dict)     # (grade_id, key) -> {student: status}
    cell_scores: dict = field(default_factory=dict)  # student -> {cell name: points}
    mistakes: dict = field(default_factory=dict)     # mistake name -> {student: set of keys}
    feedback: dict = field(default_factory=dict)     # mistake name -> its feedback line
    declared: list = field(default_factory=list)     # the problem's mistake names, in order
    technical: list = field(default_factory=list)    # (student, status, reasons)
    manual: list = field(default_factory=list)       # {"cell", "max", "scores": [...], "waiting": n}

    @property
    def students(self) -> int:
        return len(self.scores)

    @property
    def detailed(self) -> bool:
        """Large enough for percentages and intervals."""
        return self.students >= MIN_CLASS

    def add_verdict(self, student: str, cell: str, key: str, status: str) -> None:
        where = (cell, key)
        if where not in self.checks:
            self.checks.append(where)
        self.verdicts.setdefault(where, Counter())[status] += 1
        self.outcomes.setdefault(where, {})[student] = status


@dataclass
class ClassData:
    assignment: str
    course_id: str
    items: list
    students: list
    evidence_rows: int
    seconds: dict = field(default_factory=dict)
    set_aside: list = field(default_factory=list)    # (inbound folder, student it names, why)
    lateness: object = None                          # lateness.Lateness: due dates and penalties


def _grade_rows(gb, assignment: str) -> list:
    """Each grade of `assignment`: rows with .student, .notebook, .cell, .auto, .manual, .extra, .needs."""
    from nbgrader.api import (Assignment, BaseCell, Grade, Notebook, SubmittedAssignment,
                              SubmittedNotebook)
    return (gb.db.query(SubmittedAssignment.student_id.label("student"), Notebook.name.label("notebook"),
                        BaseCell.name.label("cell"), Grade.auto_score.label("auto"),
                        Grade.manual_score.label("manual"), Grade.extra_credit.label("extra"),
                        Grade.needs_manual_grade.label("needs"))
            .select_from(Grade)
            .join(SubmittedNotebook, Grade.notebook_id == SubmittedNotebook.id)
            .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
            .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
            .join(Notebook, SubmittedNotebook.notebook_id == Notebook.id)
            .join(BaseCell, Grade.cell_id == BaseCell.id)
            .filter(Assignment.name == assignment).all())


def _submitters(gb, assignment: str) -> list:
    from nbgrader.api import Assignment, SubmittedAssignment
    rows = (gb.db.query(SubmittedAssignment.student_id.label("student"))
            .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
            .filter(Assignment.name == assignment).all())
    return sorted({row.student for row in rows})


def collect(root, assignment: str) -> ClassData:
    """Grades and evidence of `assignment` from the course at `root`'s gradebook."""
    from nbgrader.api import Gradebook

    from graders import evidence, problems
    from graders.engine.course_dir import load_course
    from graders.variants import variant_for
    course = load_course(Path(root), assignment)
    with Gradebook(course.db_url, course.course_id) as gb:
        grades = _grade_rows(gb, assignment)
        students = _submitters(gb, assignment)
        check_rows, notebook_rows = evidence.read(gb.db.get_bind(), course.course_id, assignment)

    items = {}
    for name, nb in course.notebooks.items():
        cells = nb.grade_cells + nb.task_cells
        item = items[name] = Item(name, float(sum(c.max_score for c in cells)))
        try:
            problem = problems.get(name)
        except KeyError:       # a notebook the course grades without a registered problem
            problem = None
        if problem is not None:
            item.checks = [(cell, key) for cell, keys in problem.cells.items() for key in keys]
            item.feedback = {m.name: m.feedback for m in problem.mistakes}
            item.declared = [m.name for m in problem.mistakes]
        solutions = {c.name for c in nb.solution_cells}
        manual = [c for c in nb.task_cells] + [c for c in nb.grade_cells if c.name in solutions]
        item.manual = [{"cell": c.name, "max": float(c.max_score), "scores": [], "waiting": 0} for c in manual]
        for student in students:
            item.scores[student] = 0.0
            item.cell_scores[student] = {}
            item.variants[student] = variant_for(student, problem.assignment if problem and problem.assignment
                                                 else assignment)
    for row in grades:
        item = items.get(row.notebook)
        if item is None:
            continue
        score = row.manual if row.manual is not None else row.auto
        points = float(score or 0) + float(row.extra or 0)
        item.scores[row.student] = item.scores.get(row.student, 0.0) + points
        cells = item.cell_scores.setdefault(row.student, {})
        cells[row.cell] = cells.get(row.cell, 0.0) + points
        for entry in item.manual:
            if entry["cell"] == row.cell:
                if row.manual is not None:
                    entry["scores"].append(float(row.manual))
                elif row.needs:
                    entry["waiting"] += 1
    for row in notebook_rows:
        item = items.get(row["notebook"])
        if item is None or row["student"] not in item.scores:
            continue
        if row["variant"]:
            item.variants[row["student"]] = row["variant"]
        if row["technical_zero"]:
            item.technical.append((row["student"], row["status"], row["reasons"]))
    for row in check_rows:
        item = items.get(row["notebook"])
        if item is None or row["student"] not in item.scores:
            continue
        item.add_verdict(row["student"], row["grade_id"], row["answer_key"], row["status"])
        if row["mistake"]:
            item.mistakes.setdefault(row["mistake"], {}).setdefault(row["student"], set()).add(row["answer_key"])
    for item in items.values():
        item.technical.sort()
    return ClassData(assignment, course.course_id, list(items.values()), students, len(check_rows))
