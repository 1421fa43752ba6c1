"""The class report: evidence kept while grading, and counts, rates and fairness flags read back.

A synthetic class of 200 students (50 per variant) takes the `worked` assignment:
in each item some are correct, some make each of the item's declared mistakes at a
chosen rate, some hand in blanks, one per variant crashes and one per variant
submits nothing; in w1-memory variant C is made deliberately harder. Every
notebook is graded by the engine's own test-cell grading (the sandbox is replaced
by the answers it would send back) and recorded by the engine's own `record` into
a real nbgrader gradebook, on SQLite and on PostgreSQL. The report's counts must
equal the plan exactly, and only w1-memory's variant C may be flagged.
"""
from __future__ import annotations

import copy
import csv
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import create_engine, func, select

from graders.engine import course_dir
from graders.engine import grading
from graders.engine import record_io
from graders import evidence, problems, transport
from graders.course import report
from graders.engine.scratch import make_course
from tests.warm_nbgrader import nbgrader
from graders.variants import variant_for
from tests.engine.test_trusted_side import score_test_cell

ROOT = Path(__file__).resolve().parents[2]
ASSIGNMENT = "worked"
PER_VARIANT = 50
HARD_ITEM, HARD_VARIANT = "w1-memory", "C"
# students per variant making the item's 1st, 2nd, ... clean declared mistake
MISTAKE_COUNTS = (6, 4, 3, 2, 2, 1, 1)
HARD_MISTAKE_COUNTS = (20, 15)
BLANK, CRASHED, MISSING = 3, 1, 1


def class_ids(per_variant: int = PER_VARIANT) -> dict[str, list[str]]:
    """`per_variant` student ids for each variant of `worked`."""
    found, i = {v: [] for v in "ABCD"}, 0
    while any(len(ids) < per_variant for ids in found.values()):
        student = f"s{i:04d}"
        label = variant_for(student, ASSIGNMENT)
        if len(found[label]) < per_variant:
            found[label].append(student)
        i += 1
    return found


_CLEAN = {}     # (problem id, its declared mistakes) -> clean_mistakes' answer


def clean_mistakes(problem) -> list:
    """The declared mistakes that every variant diagnoses as themselves, failing the same checks.

    (A mistake may coincide with the right answer in one variant, or with another mistake;
    the plan's counts are exact only for those that do not.) Worked out once per problem and
    set of declared mistakes (a test elsewhere may replace them): the plan asks for every
    variant, the expected counts for every report."""
    key = (problem.id, problem.mistakes)
    if key not in _CLEAN:
        _CLEAN[key] = _clean_mistakes(problem)
    return list(_CLEAN[key])


def _clean_mistakes(problem) -> list:
    clean = []
    for mistake in problem.mistakes:
        seen = set()
        for params in problem.variants.values():
            # the reference and the mistake's answers as the grader remembers them per variant
            wrong = next(w for m, w in problem.mistaken(params) if m is mistake)
            answers = {**problem.reference(params), **wrong}
            graded = problem.grade(params, {k: transport.encode(v) for k, v in answers.items()})
            seen.add((graded.score, tuple(sorted(graded.mistakes.items()))))
        if len(seen) == 1:
            (_, diagnosed), = seen
            if diagnosed and {m for _, m in diagnosed} == {mistake.name}:
                clean.append((mistake, [k for k, _ in diagnosed]))
    return clean


def plan_for(item: str, variant: str, students: list[str]) -> dict[str, str]:
    """student -> profile: "correct", "blank", "crashed", "missing" or a mistake's name."""
    mistakes = [m.name for m, _ in clean_mistakes(problems.get(item))]
    counts = HARD_MISTAKE_COUNTS if (item, variant) == (HARD_ITEM, HARD_VARIANT) else MISTAKE_COUNTS
    profiles = ["missing"] * MISSING + ["crashed"] * CRASHED + ["blank"] * BLANK
    for name, count in zip(mistakes, counts):
        profiles += [name] * count
    profiles += ["correct"] * (len(students) - len(profiles))
    return dict(zip(students, profiles))


def graded_notebook(course, item: str, variant: str, profile: str) -> grading.NotebookResult:
    """One notebook as the engine grades it, given what the sandbox would have sent back."""
    instructor = course.notebooks[item]
    if profile == "missing":
        return grading.grade_notebook(course, instructor, "nobody", Path("/nonexistent/missing.ipynb"), None, None)
    problem = problems.get(item)
    params = problem.variants[variant]
    out = grading.NotebookResult(item, max_score=sum(c.max_score for c in instructor.grade_cells), variant=variant)
    answers = {}
    if profile != "blank":
        wrong = next((w for m, w in problem.mistaken(params) if m.name == profile), {})
        answers = {k: transport.encode(v) for k, v in {**problem.reference(params), **wrong}.items()}
    for grade_id, points in instructor.autograded_tests.items():
        keys = list(problem.cells[grade_id])
        message = ({"raised": True, "ename": "ZeroDivisionError"} if profile == "crashed" else
                   {"raised": False, "answers": {k: answers[k] for k in keys if k in answers}})
        test = {"name": grade_id, "keys": keys, "points": points}
        score, lines = score_test_cell(test, message, problem, params, variant, "", out)
        out.grades[grade_id] = score
        out.feedback += lines
    out.score = float(sum(out.grades.values()))
    return out


def make_class_course(into: Path, db_url: str | None = None) -> Path:
    """A scratch course with `worked` generated, its gradebook on SQLite or at `db_url`."""
    from tests.engine.test_cluster import course_with
    return course_with(into, db_url)


def build_class(root: Path, per_variant: int = PER_VARIANT) -> dict:
    """Record the synthetic class into the course at `root`; returns {item: {student: profile}}."""
    from nbgrader.api import Gradebook
    course = course_dir.load_course(root, ASSIGNMENT)
    ids = class_ids(per_variant)
    plan, cache = {}, {}
    for item in course.notebooks:
        plan[item] = {}
        for variant, students in ids.items():
            plan[item].update(plan_for(item, variant, students))
    with Gradebook(course.db_url, course.course_id) as gb:
        for variant, students in ids.items():
            for student in students:
                result = grading.SubmissionResult(student, "synthetic")
                for item in course.notebooks:
                    key = (item, variant, plan[item][student])
                    if key not in cache:
                        cache[key] = graded_notebook(course, *key)
                    result.notebooks.append(copy.deepcopy(cache[key]))
                record_io.record(gb, course, result)
    return plan


def expected(item: str, plan: dict) -> dict:
    """What the report must count for `item`, from the plan alone."""
    problem = problems.get(item)
    failing = {m.name: keys for m, keys in clean_mistakes(problem)}
    profiles = Counter(plan[item].values())
    checks = [(cell, key) for cell, keys in problem.cells.items() for key in keys]
    not_checked = profiles["missing"] + profiles["crashed"]
    rows = {}
    for cell, key in checks:
        fail = sum(n for name, n in profiles.items() if key in failing.get(name, ()))
        invalid = profiles["blank"]
        checked = len(plan[item]) - not_checked
        rows[(cell, key)] = {"checked": checked, "pass": checked - fail - invalid, "fail": fail,
                             "invalid": invalid, "undecided": 0, "not checked": not_checked}
    mistakes = {name: n for name, n in profiles.items() if name in failing}
    return {"checks": rows, "mistakes": mistakes, "technical": not_checked,
            "full marks": profiles["correct"]}


def check_report(written, plan) -> None:
    by_item = {t.item.name: t for t in written.tables}
    assert set(by_item) == set(plan)
    for item, t in by_item.items():
        want = expected(item, plan)
        got = {(r[1], r[2]): dict(zip(report.CHECK_COLUMNS[3:9], r[3:9])) for r in t.checks}
        assert got == want["checks"], item
        for row in t.checks:
            failed = row[5] + row[6]
            assert row[9] == f"{100 * failed / row[3]:.1f}%", row
        assert {r[1]: r[2] for r in t.mistakes} == want["mistakes"], item
        counts = [r[2] for r in t.mistakes]
        assert counts == sorted(counts, reverse=True)
        declared = {m.name: m.feedback for m in problems.get(item).mistakes}
        assert all(r[5] == declared[r[1]] for r in t.mistakes)
        assert len(t.item.technical) == want["technical"]
        assert t.overview["full marks"] == want["full marks"] and t.overview["students"] == len(plan[item])
        flagged = {v for v, e in t.variants.items() if e["flagged"]}
        assert flagged == ({HARD_VARIANT} if item == HARD_ITEM else set()), (item, t.variants)
        assert all(e["n"] == PER_VARIANT and e["ci"] is not None for e in t.variants.values())
    with open(written.checks_csv) as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == report.CHECK_COLUMNS
    assert rows[1:] == [[str(v) for v in r] for t in written.tables for r in t.checks]
    with open(written.mistakes_csv) as fh:
        rows = list(csv.reader(fh))
    assert rows[1:] == [[str(v) for v in r] for t in written.tables for r in t.mistakes]


@pytest.fixture(scope="module")
def sqlite_class(tmp_path_factory):
    course = make_class_course(tmp_path_factory.mktemp("sqlite-class"))
    return course, build_class(course)


# ---------------------------------------------------------------------- the statistics alone
def test_the_fairness_flag_is_rare_on_equal_variants_and_fires_on_a_harder_one():
    """On 4 equal variants (50 students each) the flag fires in at most 10% of 100 classes; a variant
    about 1 point (of 4) harder is flagged in at least 90% of them, the other three rarely."""
    rng = np.random.default_rng(20261201)
    points = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    fair, hard = np.array([0.1, 0.1, 0.2, 0.2, 0.4]), np.array([0.3, 0.2, 0.2, 0.15, 0.15])
    equal_alarms = hard_hits = others_flagged = 0
    trials = 100
    for trial in range(trials):
        groups = {v: rng.choice(points, size=50, p=fair) for v in "ABCD"}
        equal_alarms += any(e["flagged"] for e in report.variant_fairness(groups, seed=str(trial)).values())
        groups["C"] = rng.choice(points, size=50, p=hard)
        flags = report.variant_fairness(groups, seed=str(trial))
        hard_hits += flags["C"]["flagged"]
        others_flagged += any(flags[v]["flagged"] for v in "ABD")
    print(f"equal variants flagged in {equal_alarms}/{trials} classes; the harder one in {hard_hits}; "
          f"another beside it in {others_flagged}")
    assert equal_alarms <= 0.10 * trials, equal_alarms
    assert hard_hits >= 0.90 * trials, hard_hits
    assert others_flagged <= 0.10 * trials, others_flagged


def test_a_tiny_variant_gets_no_interval_and_no_flag():
    """A variant below MIN_VARIANT students has a mean but no interval and is never flagged."""
    groups = {"A": [4.0] * 30, "B": [4.0] * 30, "C": [0.0] * (report.MIN_VARIANT - 1)}
    out = report.variant_fairness(groups)
    assert out["C"]["ci"] is None and not out["C"]["flagged"] and out["C"]["mean"] == 0
    assert out["A"]["ci"] == (4.0, 4.0) and not out["A"]["flagged"]


# ---------------------------------------------------------------------- the evidence
def test_grade_names_the_declared_mistake_and_the_engine_keeps_the_verdicts(scratch_course):
    """Problem.grade sets Result.mistakes; the engine fills NotebookResult.checks with no values."""
    problem = problems.get("w1-memory")
    params = problem.variants["A"]
    wrong = next(m for m in problem.mistakes if m.name == "gib-not-bytes").wrong(params)
    answers = {**problem.solve(params), **wrong}
    graded = problem.grade(params, answers)
    assert graded.mistakes == {"total_bytes": "gib-not-bytes", "per_device_bytes": "gib-not-bytes"}
    out = grading.NotebookResult("w1-memory")
    test = {"name": "check_numbers", "keys": list(problem.cells["check_numbers"]), "points": 3.0}
    message = {"raised": False, "answers": {k: transport.encode(answers[k]) for k in test["keys"]}}
    score_test_cell(test, message, problem, params, "A", "", out)
    assert out.checks == {"check_numbers": {
        "bytes_per_param": {"status": "pass", "mistake": None},
        "total_bytes": {"status": "fail", "mistake": "gib-not-bytes"},
        "per_device_bytes": {"status": "fail", "mistake": "gib-not-bytes"}}}
    assert grading.SubmissionResult.from_json(grading.SubmissionResult("x", "k", [out]).to_json()).notebooks[0].checks \
        == out.checks


def evidence_counts(db_url):
    engine = create_engine(db_url)
    with engine.connect() as conn:
        checks = conn.execute(select(func.count()).select_from(evidence.checks_table)).scalar()
        notebooks = conn.execute(select(func.count()).select_from(evidence.notebooks_table)).scalar()
        mistakes = conn.execute(select(func.count()).select_from(evidence.checks_table)
                                .where(evidence.checks_table.c.mistake.is_not(None))).scalar()
    engine.dispose()
    return checks, notebooks, mistakes


def test_a_regrade_replaces_the_evidence_and_never_adds_it_twice(sqlite_class):
    """Recording a student again (now correct everywhere) replaces their rows; the totals stay put."""
    from nbgrader.api import Gradebook
    root, plan = sqlite_class
    course = course_dir.load_course(root, ASSIGNMENT)
    before = evidence_counts(course.db_url)
    student = next(s for s, p in plan[HARD_ITEM].items() if p == "gib-not-bytes")
    variant = variant_for(student, ASSIGNMENT)
    regraded = grading.SubmissionResult(student, "again", [graded_notebook(course, item, variant, plan[item][student])
                                                      for item in course.notebooks])
    with Gradebook(course.db_url, course.course_id) as gb:
        record_io.record(gb, course, regraded)
        record_io.record(gb, course, regraded)
        assert evidence_counts(course.db_url) == before
        regraded.notebooks[0] = graded_notebook(course, HARD_ITEM, variant, "correct")
        record_io.record(gb, course, regraded)
        checks, notebooks, mistakes = evidence_counts(course.db_url)
        assert (checks, notebooks) == before[:2] and mistakes == before[2] - 2
        regraded.notebooks[0] = graded_notebook(course, HARD_ITEM, variant, "gib-not-bytes")
        record_io.record(gb, course, regraded)      # put the class back as planned
    assert evidence_counts(course.db_url) == before


# ---------------------------------------------------------------------- the report
def test_the_report_counts_equal_the_plan_on_sqlite(sqlite_class, tmp_path, capsys):
    """200 students on SQLite: every count is the plan's, only the harder variant is flagged, CSV = tables."""
    from graders.cli import main
    root, plan = sqlite_class
    assert sum(len(v) for v in plan.values()) == 5 * 4 * PER_VARIANT
    assert main(["report", ASSIGNMENT, "--course", str(root), "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    written = report.build_report(root, ASSIGNMENT, out=tmp_path)
    check_report(written, plan)
    assert "POSSIBLY UNFAIR" in text and text.count("POSSIBLY UNFAIR") == 1
    assert "the five most common mistakes" in text and str(written.html) in text
    top = report.top_mistakes(written.tables)
    first = clean_mistakes(problems.get(HARD_ITEM))[0][0].name   # the planned commonest mistake
    assert top[0][:3] == (HARD_ITEM, first, 3 * MISTAKE_COUNTS[0] + HARD_MISTAKE_COUNTS[0])
    assert len(top) == 5
    page = written.html.read_text()
    assert "<script" not in page and "http://" not in page and "https://" not in page
    assert page.count('src="data:image/png;base64,') == 1 + 5


@pytest.mark.slow
def test_the_report_counts_equal_the_plan_on_postgresql(tmp_path, postgres_db):
    """The same class recorded into a PostgreSQL gradebook gives the same report, exactly."""
    root = make_class_course(tmp_path / "course", postgres_db())
    plan = build_class(root)
    written = report.build_report(root, ASSIGNMENT, out=tmp_path / "out")
    check_report(written, plan)


def test_a_tiny_class_shows_counts_only_and_manual_scores(tmp_path):
    """Three students of `theory`: counts but no percentage or interval; formgrader's manual scores shown."""
    from nbgrader.api import Gradebook
    root = make_course(ROOT, tmp_path / "course", only=["theory"])
    nbgrader("generate_assignment", "theory", "--force", cwd=root)
    course = course_dir.load_course(root, "theory")
    item = "t1-range-before-speed"
    task = course.notebooks[item].task_cells[0].name
    with Gradebook(course.db_url, course.course_id) as gb:
        for student in ("ada", "grace", "alan"):
            result = grading.SubmissionResult(student, "tiny")
            for name, instructor in course.notebooks.items():
                out = grading.NotebookResult(name, max_score=sum(c.max_score for c in instructor.grade_cells)
                                        + sum(c.max_score for c in instructor.task_cells))
                out.grades = {c.name: 0.0 for c in instructor.grade_cells}
                out.grades.update({c.name: None for c in instructor.task_cells})
                result.notebooks.append(out)
            record_io.record(gb, course, result)
        for student, points in (("ada", 3.0), ("grace", 1.5)):
            grade = gb.find_grade(task, item, "theory", student)
            grade.manual_score, grade.needs_manual_grade = points, False
        gb.db.commit()
    written = report.build_report(root, "theory", out=tmp_path / "out")
    t = next(t for t in written.tables if t.item.name == item)
    assert not t.item.detailed
    assert all(r[9] == "" for r in t.checks) and all(r[3] == "" for r in t.mistakes)
    assert all(e["ci"] is None and not e["flagged"] for e in t.variants.values())
    manual = {r[0]: r for r in report.manual_rows(t.item)}
    assert manual[task][2:] == [2, "2.25", "1.5 3", 1]
    assert sorted(t.item.scores.values()) == [0.0, 1.5, 3.0]
    page = written.html.read_text()
    assert "%" not in page.split("<h2>Class overview</h2>")[1].replace("95% interval", "")
    assert task in written.text and "1.5 3" in written.text
    assert not math.isnan(t.variants[next(iter(t.variants))]["mean"])
