"""Issue 30's measure, kept true: bench/after_deadline_bench.py's class at 24 students x 5 notebooks.

The bench's own code makes the class (two students without a submission, extensions of both
kinds, late, within-grace and late-beyond-extension submissions, two planted copied pairs, one
planted bad check), runs `chapter deadlines`, `chapter report worked` and `chapter export all`
for Canvas and Moodle as processes of their own, and every condition it prints must PASS here.
Then the checks are shown able to fail: an export with one score changed, an absent student
given a 0, a similarity table without a planted pair, an items table flagging nothing.
"""
from __future__ import annotations

import csv
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import after_deadline_bench as bench  # noqa: E402

STUDENTS = 24


@pytest.fixture(scope="module")
def after_deadline(tmp_path_factory):
    plan, ran, results, _ = bench.run(tmp_path_factory.mktemp("after-deadline") / "course", STUDENTS)
    return plan, ran, results


def verdicts(plan, ran) -> dict:
    return {name: (ok, seen) for name, ok, seen in bench.check(plan, ran)}


def test_every_condition_passes_on_a_class_of_24(after_deadline):
    plan, ran, results = after_deadline
    failed = [f"{name}: {seen}" for name, ok, seen in results if not ok]
    assert not failed, "\n".join(failed)
    kinds = set(plan.kind.values())
    assert kinds == {"on time", "grace", "late", "extended", "late beyond"}, kinds
    assert len(plan.absent) == 2 and len(plan.copies) == 2
    assert {r.line for r in ran} == {line for line, _ in bench.COMMANDS}


def test_the_conditions_cover_the_issues_measure(after_deadline):
    names = " | ".join(name for name, _, _ in after_deadline[2])
    for wanted in ("canvas export reads back", "moodle export reads back", "extended students",
                   "known-late students carry exactly", "top 3", "NEGATIVE DISCRIMINATION",
                   "without a submission", "leaves absent students' cells empty", "report's deadlines.csv"):
        assert wanted in names, wanted


def _rewrite(path: Path, change) -> None:
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    rows = change(rows)
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows(rows)


@pytest.fixture
def tampered(after_deadline, tmp_path):
    """Change one of the commands' files for one test; put it back after."""
    plan, ran, _ = after_deadline
    kept = []

    def tamper(relative: str, change):
        path = plan.root / relative
        shutil.copy(path, tmp_path / path.name)
        kept.append((tmp_path / path.name, path))
        _rewrite(path, change)
        return verdicts(plan, ran)
    yield tamper
    for saved, path in kept:
        shutil.copy(saved, path)


def _bump_first_score(rows):
    rows[1][-1] = str(float(rows[1][-1]) + 0.5)
    return rows


def test_a_changed_export_score_fails_the_round_trip(after_deadline, tampered):
    seen = tampered("exports/canvas-all.csv", _bump_first_score)
    assert seen["canvas export reads back as the gradebook's scores minus the penalty (to 1e-9)"][0] is False
    assert seen["moodle export reads back as the gradebook's scores minus the penalty (to 1e-9)"][0] is True


def test_an_absent_student_exported_as_0_fails(after_deadline, tampered):
    plan = after_deadline[0]
    absent = bench.sis_id(plan.absent[0])
    seen = tampered("exports/moodle-all.csv",
                    lambda rows: [r[:-1] + ["0"] if r[0] == absent else r for r in rows])
    assert seen["moodle export leaves absent students' cells empty (never 0)"][0] is False


def test_a_planted_pair_out_of_the_top_3_fails(after_deadline, tampered):
    plan = after_deadline[0]
    pair = set(plan.copies[0])
    seen = tampered(f"reports/{bench.ASSIGNMENT}/similarity.csv",
                    lambda rows: [r for r in rows if {r[1], r[2]} != pair])
    assert seen["both planted copied pairs rank in similarity's top 3"][0] is False


def test_an_unflagged_bad_check_fails(after_deadline, tampered):
    seen = tampered(f"reports/{bench.ASSIGNMENT}/items.csv",
                    lambda rows: [[("" if v == "NEGATIVE DISCRIMINATION" else v) for v in r] for r in rows])
    assert seen["the planted bad check, and no other, is flagged NEGATIVE DISCRIMINATION"][0] is False


def test_a_wrong_penalty_in_the_reports_deadlines_table_fails(after_deadline, tampered):
    column = "penalty (points)"
    seen = tampered(f"reports/{bench.ASSIGNMENT}/deadlines.csv",
                    lambda rows: [rows[0]] + [r[:rows[0].index(column)] + ["1.5"] + r[rows[0].index(column) + 1:]
                                              for r in rows[1:2]] + rows[2:])
    assert seen["the report's deadlines.csv gives each student their lateness, penalty and extension"][0] is False
