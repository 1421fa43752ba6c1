"""Benchmark and end-to-end check: one class after the deadline, through the README's commands.

    nice .venv/bin/python bench/after_deadline_bench.py [--students 200] [--keep DIR]

One synthetic class of `--students` students x the 5 notebooks of `worked`, in a scratch course:

- every 10th student (s0009, s0019, ...) never submits; the others hand in notebooks whose answer
  cells are tests/course/similarity_class.py's (each student's own code and expressions), with two
  planted copied pairs (renamed variables, reordered lines, the same rare mistake written another way);
- their grades are the engine's own (its cell grading, then `record` into the gradebook, the
  sandbox replaced by the answers it would send back): each student has an ability, and a check is
  passed when the ability clears that check's bar; one planted bad check (w3-range's
  max_log2_scale) is passed by the weaker half of the class only. A copier's grades are their source's.
  A failed check is an unanswered one (the engine's "invalid"). The notebooks' text and the grades
  are made apart: no sandbox runs the text (bench/autograde_bench.py times real grading);
- deadlines.toml: due dates, an hourly schedule in points with a cap and 10 minutes' grace, and
  extensions: 48 extra hours for some, a due date of their own for others, 24 h for some who are
  later still. The submissions' times (timestamp.txt) make some on time, some within grace, some
  late, some late but within their extension, some late beyond it.

Then, each as a process of its own (its imports included), timed:

    chapter deadlines
    chapter report worked
    chapter export all --lms canvas --ids ids.csv
    chapter export all --lms moodle --ids ids.csv

and PASS/FAIL for each condition (`check`): the exports read back with csv equal the gradebook's
notebook scores minus the penalty computed here (bench/_class.py's `penalty`, from each submission's
total_seconds_late and the schedule); extended students carry no penalty and the known-late ones
exactly theirs; both planted pairs rank in similarity's top 3; the planted check, and no other, is
flagged NEGATIVE DISCRIMINATION; absent students are listed apart, never exported as 0.
Exits 1 on any FAIL. tests/course/test_after_deadline_class.py runs the same code on 24 students.
"""
from __future__ import annotations

import argparse
import copy
import csv
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _class import (ROOT, generated_course, lms_id, load_line, penalty, similarity_answers,  # noqa: E402
                    sis_id, write_deadlines, write_ids)

ASSIGNMENT = "worked"
DUE = datetime(2026, 11, 20, 17, 0)                   # naive UTC, as nbgrader keeps it
SCHEDULE = {"per": "hour", "kind": "points", "amount": 0.5, "cap": 2.0, "grace_minutes": 10}
PLANTED_CHECK = ("w3-range", "max_log2_scale")        # passed by the weaker half of the class only
CODE_CELL = {"w1-memory": "answer_numbers", "w2-compute": "answer_numbers", "w3-range": "answer_numbers",
             "w4-activations": "answer_numbers", "w5-clip-decay": "answer_clipping"}
SIMILARITY_NOTEBOOK = dict(zip(CODE_CELL, ["n1-batching", "n2-decay", "n3-clipping", "n4-warmup", "n5-checkpoint"]))
HOUR = timedelta(hours=1)


@dataclass
class Plan:
    """What the class is made of, known before any command runs."""
    root: Path
    roster: list[str]
    absent: list[str]
    copies: list[tuple[str, str]]                      # (a, b) sorted, as similarity ranks them
    handed_in: dict = field(default_factory=dict)      # student -> naive UTC time
    kind: dict = field(default_factory=dict)           # student -> on time, grace, late, extended, late beyond
    extensions: dict = field(default_factory=dict)     # student -> {"hours": h} or {"due": datetime}
    scores: dict = field(default_factory=dict)         # student -> {notebook: points recorded}

    @property
    def present(self) -> list[str]:
        return [s for s in self.roster if s not in self.absent]

    def seconds_late(self, student: str) -> float:
        """Past the student's own due date (their extension included), from the plan alone."""
        own = DUE
        given = self.extensions.get(student)
        if given and "hours" in given:
            own = DUE + timedelta(hours=given["hours"])
        elif given:
            own = given["due"]
        return max(0.0, (self.handed_in[student] - own).total_seconds())


def timing(plan: Plan, n: int, student: str) -> None:
    """When student number n hands in, and their extension: every kind of lateness, in turn."""
    kind = n % 8
    if kind < 4:
        plan.kind[student], when = "on time", DUE - (1 + n % 5) * HOUR
    elif kind == 4:
        plan.kind[student], when = "grace", DUE + timedelta(minutes=7)
    elif kind == 5:
        plan.kind[student], when = "late", DUE + (1 + n % 6) * HOUR + timedelta(minutes=20)
    elif kind == 6:
        plan.kind[student], when = "extended", DUE + 30 * HOUR
        plan.extensions[student] = {"hours": 48}
    elif n % 16 == 15:
        plan.kind[student], when = "late beyond", DUE + 30 * HOUR              # 6 h past a 24 h extension
        plan.extensions[student] = {"hours": 24}
    else:
        plan.kind[student], when = "extended", DUE + 60 * HOUR
        plan.extensions[student] = {"due": DUE + 72 * HOUR}
    plan.handed_in[student] = when


def checks_of(problem) -> list[tuple[str, str]]:
    return [(cell, key) for cell, keys in problem.cells.items() for key in keys]


def failing(item: str, checks: list, ability: float, middle: float, rng: random.Random) -> frozenset:
    """The checks of `item` this student fails: those whose bar their ability (with a little noise for
    the notebook) does not clear; the planted check the other way round."""
    mine = ability + rng.gauss(0, 0.05)
    out = set()
    for j, (cell, key) in enumerate(checks):
        if (item, key) == PLANTED_CHECK:
            if ability >= middle:
                out.add(key)
        elif mine < 0.1 + 0.7 * j / max(1, len(checks) - 1):
            out.add(key)
    return frozenset(out)


def graded(course, item: str, variant: str, fails: frozenset):
    """The notebook as the engine grades it (prepare, grade together, finish: its `grade_cells` without
    the sandbox) when the student answered every check but `fails` right (the failed ones unanswered)."""
    from graders import problems, transport
    from graders.engine import grading
    problem = problems.get(item)
    params = problem.variants[variant]
    instructor = course.notebooks[item]
    out = grading.NotebookResult(item, max_score=sum(c.max_score for c in instructor.grade_cells), variant=variant)
    answers = {k: transport.encode(v) for k, v in problem.solve(params).items() if k not in fails}
    judged = {}
    for grade_id, points in instructor.autograded_tests.items():
        keys = list(problem.cells[grade_id])
        message = {"raised": False, "answers": {k: answers[k] for k in keys if k in answers}}
        judged[grade_id] = grading.prepare_test_cell({"name": grade_id, "keys": keys, "points": points},
                                                     message, problem, params, variant, "", out)
    grading.grade_together(problem, params, [j for j in judged.values() if isinstance(j, grading.Pending)])
    for grade_id, judgement in judged.items():      # as the engine's grade_cells: one child per notebook
        if isinstance(judgement, grading.Pending):
            judgement = grading.finish_test_cell(judgement, problem, params, variant, out)
        score, lines = judgement
        out.grades[grade_id] = score
        out.feedback += lines
    out.score = float(sum(out.grades.values()))
    return out


def handed_in_notebook(release: dict, code: str, expression: str, code_cell: str) -> dict:
    nb = copy.deepcopy(release)
    for cell in nb["cells"]:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id == code_cell:
            cell["source"] = code
        elif grade_id == "answer_expr":
            cell["source"] = expression
    return nb


def make_class(root: Path, students: int, seed: int = 30) -> Plan:
    """The class in the course folder `root`: submissions, gradebook, deadlines.toml and ids.csv."""
    from nbgrader.api import Gradebook

    from graders import problems
    from graders.engine import course_dir, grading, record_io
    from graders.variants import variant_for
    generated_course(root)
    roster = [f"s{n:04d}" for n in range(students)]
    absent = [s for n, s in enumerate(roster) if n % 10 == 9]
    pairs = ((3, students * 3 // 4), (students * 3 // 8 + 2, students - 4))
    assert not {roster[i] for pair in pairs for i in pair} & set(absent), pairs
    answers, _ = similarity_answers(students, pairs)
    plan = Plan(root, roster, absent, sorted((roster[i], roster[j]) for i, j in pairs))
    source_of = {roster[j]: roster[i] for i, j in pairs}
    rng = random.Random(seed)
    ability = {s: rng.random() for s in roster}
    for copier, source in source_of.items():
        ability[copier] = ability[source]
    present = plan.present
    middle = sorted(ability[s] for s in present)[len(present) // 2]
    course = course_dir.load_course(root, ASSIGNMENT)
    release = {nb: json.loads((root / "release" / ASSIGNMENT / f"{nb}.ipynb").read_text()) for nb in course.notebooks}
    checks = {item: checks_of(problems.get(item)) for item in course.notebooks}
    results, cache = {}, {}
    for n, student in enumerate(roster):
        if student in absent:
            continue
        timing(plan, n, student)
        folder = root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / "timestamp.txt").write_text(f"{plan.handed_in[student]:%Y-%m-%d %H:%M:%S}.000000 UTC")
        cells = answers.cells[f"s{n:03d}"]
        for item in course.notebooks:
            other = SIMILARITY_NOTEBOOK[item]
            nb = handed_in_notebook(release[item], cells[(other, "answer_code")], cells[(other, "answer_expr")],
                                    CODE_CELL[item])
            (folder / f"{item}.ipynb").write_text(json.dumps(nb))
    for student in present:
        if student in source_of:
            continue
        result = grading.SubmissionResult(student, "synthetic")
        for item in course.notebooks:
            fails = failing(item, checks[item], ability[student], middle, rng)
            key = (item, variant_for(student, ASSIGNMENT), fails)
            if key not in cache:
                cache[key] = graded(course, *key)
            result.notebooks.append(cache[key])
        results[student] = result
    for copier, source in source_of.items():        # the same answers, so the same verdicts
        results[copier] = grading.SubmissionResult(copier, "synthetic", copy.deepcopy(results[source].notebooks))
    with Gradebook(course.db_url, course.course_id) as gb:
        for student in present:
            record_io.record(gb, course, copy.deepcopy(results[student]))
            plan.scores[student] = {nb.name: nb.score for nb in results[student].notebooks}
    write_deadlines(root, {ASSIGNMENT: DUE}, SCHEDULE,
                    {ASSIGNMENT: {s: plan.extensions[s] for s in sorted(plan.extensions)}
                     | {absent[0]: {"hours": 24}}})
    write_ids(root, roster)
    return plan


# ============================================================================ the commands
COMMANDS = [("chapter deadlines", ["deadlines"]),
            ("chapter report worked", ["report", ASSIGNMENT]),
            ("chapter export all --lms canvas --ids ids.csv", ["export", "all", "--lms", "canvas", "--ids", "ids.csv"]),
            ("chapter export all --lms moodle --ids ids.csv", ["export", "all", "--lms", "moodle", "--ids", "ids.csv"])]


@dataclass
class Ran:
    line: str
    seconds: float
    cpu: float                                        # the process's user + system CPU seconds
    code: int
    out: str
    err: str


def run_commands(root: Path) -> list[Ran]:
    """Each command as an instructor runs it, in the course folder, as a process of its own (this
    checkout's `graders`, whatever `chapter` on PATH would import): its wall time, start included."""
    import os
    import resource
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    ran = []
    for line, args in COMMANDS:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "graders.cli", *args, "--course", str(root)], cwd=root,
                              env=env, capture_output=True, text=True)
        wall, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        ran.append(Ran(line, wall, cpu, done.returncode, done.stdout, done.stderr))
    return ran


# ============================================================================ the conditions
def _csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def gradebook_side(root: Path) -> dict:
    """student -> (total_seconds_late, {notebook: score}, {notebook: penalty}) as the gradebook holds them."""
    from nbgrader.api import Gradebook

    from graders.course.deadlines import gradebook_of
    out = {}
    with Gradebook(*gradebook_of(root)) as gb:
        for submission in gb.assignment_submissions(ASSIGNMENT):
            out[submission.student_id] = (
                float(submission.total_seconds_late),
                {nb.name: float(nb.score) for nb in submission.notebooks},
                {nb.name: float(nb.late_submission_penalty or 0) for nb in submission.notebooks})
    return out


def check(plan: Plan, ran: list[Ran]) -> list[tuple[str, bool, str]]:
    """(condition, PASS?, what was seen) for each condition the bench promises."""
    root = plan.root
    results = []

    def verdict(name, ok, seen=""):
        results.append((name, bool(ok), seen))

    failed = [f"{r.line} (exit {r.code}: {r.err.strip()[-300:]})" for r in ran if r.code != 0]
    verdict("every command exits 0", not failed, "; ".join(failed))
    book = gradebook_side(root)
    verdict("the gradebook holds every submission, and only those", set(book) == set(plan.present),
            f"{len(book)} submissions for {len(plan.present)} students who handed in")
    wrong_time = [s for s in plan.present if s in book and abs(book[s][0] - plan.seconds_late(s)) > 1e-6]
    verdict("total_seconds_late is each student's lateness past their own due date", not wrong_time,
            f"differ: {wrong_time[:5]}")
    wrong_scores = [s for s in plan.present if s in book and book[s][1] != plan.scores[s]]
    verdict("the gradebook's notebook scores are the ones recorded", not wrong_scores, f"differ: {wrong_scores[:5]}")
    expected, owed = {}, {}
    for student, (late, scores, _) in book.items():
        owed[student] = {nb: penalty(score, late, SCHEDULE) for nb, score in scores.items()}
        expected[student] = sum(scores[nb] - owed[student][nb] for nb in scores)
    owing = sorted(s for s in owed if sum(owed[s].values()) > 0)
    said = ran[0].out if ran and ran[0].line == COMMANDS[0][0] else ""
    count = re.search(r"^(\d+) penalties changed", said, re.M)
    named = all(f"{s}  {ASSIGNMENT}: penalty 0 ->" in said for s in owing)
    verdict("chapter deadlines names each student who now owes a penalty, and only those",
            count is not None and int(count.group(1)) == len(owing) and named,
            f"{len(owing)} owe one; it said {count.group(0) if count else said.strip()[-200:]!r}")
    by_kind = {}
    for student, kind in plan.kind.items():
        by_kind.setdefault(kind, []).append(student)
    extended = by_kind.get("extended", [])
    bad = [s for s in extended if s not in book or any(book[s][2].values()) or plan.handed_in[s] <= DUE]
    verdict("extended students, late for the class's date, carry no penalty", extended and not bad,
            f"{len(extended)} extended; wrong: {bad[:5]}")
    known_late = by_kind.get("late", []) + by_kind.get("late beyond", [])
    bad = [s for s in known_late
           if s not in book or any(abs(book[s][2][nb] - owed[s][nb]) > 1e-9 for nb in owed[s])]
    charged = sum(1 for s in known_late if s in book and sum(book[s][2].values()) > 0)
    verdict("the known-late students carry exactly their penalty (late, and late beyond an extension)",
            known_late and by_kind.get("late beyond") and not bad and charged,
            f"{len(known_late)} late, {charged} of them with points off; wrong: {bad[:5]}")
    on_time = by_kind.get("on time", []) + by_kind.get("grace", [])
    bad = [s for s in on_time if s not in book or any(book[s][2].values())]
    verdict("on-time and within-grace students carry no penalty", by_kind.get("grace") and not bad,
            f"{len(on_time)} students; wrong: {bad[:5]}")
    exports = root / "exports"
    for lms, column, key in (("canvas", "ID", lms_id), ("moodle", "ID number", sis_id)):
        name = f"{lms}-all.csv"
        try:
            rows = {r[column]: r[ASSIGNMENT] for r in _csv(exports / name)}
        except (OSError, KeyError) as error:
            verdict(f"{lms} export reads back as the gradebook's scores minus the penalty", False, repr(error))
            continue
        wrong = [s for s in plan.present
                 if s not in expected or rows.get(key(s)) in (None, "")
                 or abs(float(rows[key(s)]) - expected[s]) > 1e-9]
        verdict(f"{lms} export reads back as the gradebook's scores minus the penalty (to 1e-9)",
                not wrong and len(rows) == len(plan.roster),
                f"{len(plan.present) - len(wrong)}/{len(plan.present)} equal; {len(rows)} rows for "
                f"{len(plan.roster)} on the roster; wrong: {wrong[:5]}")
        blank = [s for s in plan.absent if rows.get(key(s)) != ""]
        verdict(f"{lms} export leaves absent students' cells empty (never 0)", not blank, f"not empty: {blank}")
    try:
        apart = {(r["student"], r["assignment"]): r["why"] for r in _csv(exports / "apart-all.csv")}
    except (OSError, KeyError) as error:
        apart = {("?", "?"): repr(error)}
    wanted = {(s, ASSIGNMENT): "no submission" for s in plan.absent}
    verdict("students without a submission, and only they, are listed apart as 'no submission'",
            apart == wanted, f"{len(apart)} apart: {sorted(apart.items())[:4]}")
    try:
        ranked = _csv(root / "reports" / ASSIGNMENT / "similarity.csv")
        top = [tuple(sorted((r["student a"], r["student b"]))) for r in ranked[:3]]
    except (OSError, KeyError) as error:
        top = [repr(error)]
    verdict("both planted copied pairs rank in similarity's top 3", set(plan.copies) <= set(top),
            f"planted {plan.copies}; top 3 {top}")
    try:
        flagged = {(r["item"], r["check"]) for r in _csv(root / "reports" / ASSIGNMENT / "items.csv")
                   if r["flag"] == "NEGATIVE DISCRIMINATION"}
    except (OSError, KeyError) as error:
        flagged = {(repr(error), "")}
    verdict("the planted bad check, and no other, is flagged NEGATIVE DISCRIMINATION",
            flagged == {PLANTED_CHECK}, f"flagged {sorted(flagged)}")
    try:
        shown = {r["student"]: r for r in _csv(root / "reports" / ASSIGNMENT / "deadlines.csv")}
    except (OSError, KeyError) as error:
        shown = {"?": {"error": repr(error)}}
    wrong = [s for s in plan.present if s not in shown
             or abs(float(shown[s]["penalty (points)"]) - sum(owed.get(s, {}).values())) > 1e-6
             or abs(float(shown[s]["hours late"]) - round(plan.seconds_late(s) / 3600, 2)) > 1e-9
             or (plan.kind[s] in ("extended", "late beyond")) != shown[s]["note"].startswith("extension of")]
    verdict("the report's deadlines.csv gives each student their lateness, penalty and extension",
            not wrong and set(shown) == set(plan.present), f"{len(shown)} rows; wrong: {wrong[:5]}")
    return results


def run(root: Path, students: int) -> tuple[Plan, list[Ran], list[tuple[str, bool, str]], float]:
    """Make the class in `root`, run the commands, check: (plan, commands, conditions, seconds to make)."""
    started = time.perf_counter()
    plan = make_class(root, students)
    made = time.perf_counter() - started
    ran = run_commands(root)
    return plan, ran, check(plan, ran), made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--keep", metavar="DIR", help="make the course here (emptied first) and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="after-deadline-") as tmp:
        root = Path(args.keep).resolve() if args.keep else Path(tmp) / "course"
        shutil.rmtree(root, ignore_errors=True)
        plan, ran, results, made = run(root, args.students)
        kinds = {k: sum(1 for v in plan.kind.values() if v == k) for k in sorted(set(plan.kind.values()))}
        print(f"class: {len(plan.roster)} students x 5 notebooks of {ASSIGNMENT}, {len(plan.absent)} without a "
              f"submission; {kinds}; planted pairs {plan.copies}; planted check {PLANTED_CHECK} "
              f"(made in {made:.1f} s, not timed below)")
        print(load_line())
        for r in ran:
            print(f"{r.seconds:6.2f} s wall, {r.cpu:5.2f} s CPU  {r.line}  (exit {r.code}; a process of its own, "
                  "imports included)")
        for name, ok, seen in results:
            print(f"{'PASS' if ok else 'FAIL'}  {name}" + (f"  [{seen}]" if seen else ""))
        if args.keep:
            print(f"course kept in {root}")
        return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
