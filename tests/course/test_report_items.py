"""Item statistics in the class report: difficulty, discrimination and the NEGATIVE DISCRIMINATION flag.

A synthetic class is made directly as the report reads it (`report.Item`): each student has an
ability, the same in every notebook; a notebook holds five ordinary checks a student passes
when able enough, a good check that follows ability too and a check everyone passes, each in
a cell of its own, and one notebook also holds a planted bad check that the stronger half of
the class fails. The bad check must be flagged (over the class and in each variant), the good
one never; the constant one has no correlation and says so; a class of 6 gets counts only.
The rows must reach items.csv, the page and the text, with no NaN anywhere.
"""
from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from graders.course import report
from graders.course.report import render, stats

GOOD, BAD, CONSTANT = ("c_good", "good"), ("c_bad", "bad"), ("c_all", "everyone")
ORDINARY = [(f"c_k{i}", f"k{i}") for i in range(5)]      # one check a cell, as most problems have


def synthetic_class(students: int, seed: int = 7, variants: str = "AB", items: int = 1,
                    planted: int = 0) -> report.ClassData:
    """`students` students in `variants` taking `items` notebooks; each student's ability is the
    same in every notebook. Notebook number `planted` (from 0) holds the bad check, passed by the
    weaker half of the class only; the others hold the ordinary, good and constant checks alone."""
    rng = np.random.default_rng(seed)
    ability = {f"s{i:03d}": float(a) for i, a in enumerate(rng.uniform(0, 1, students))}
    middle = float(np.median(list(ability.values())))
    notebooks = []
    for n in range(items):
        item = report.Item(f"n{n + 1}-planted" if n == planted else f"n{n + 1}", max_score=8.0)
        for i, (student, a) in enumerate(sorted(ability.items())):
            item.variants[student] = variants[i % len(variants)]
            verdicts = {key: "pass" if a + rng.normal(0, 0.15) > (j + 1) / 6 else "fail"
                        for j, key in enumerate(ORDINARY)}
            verdicts[GOOD] = "pass" if a + rng.normal(0, 0.1) > 0.5 else "invalid"
            if n == planted:
                verdicts[BAD] = "pass" if a < middle else "fail"
            verdicts[CONSTANT] = "pass"
            cells = {}
            for (cell, key), status in verdicts.items():
                item.add_verdict(student, cell, key, status)
                cells[cell] = cells.get(cell, 0.0) + (1.0 if status == "pass" else 0.0)
            item.cell_scores[student] = cells
            item.scores[student] = sum(cells.values())
        notebooks.append(item)
    return report.ClassData("planted", "course", notebooks, sorted(ability),
                            evidence_rows=sum(len(i.checks) * students for i in notebooks))


def rows_of(per_item) -> list[dict]:
    return [dict(zip(report.ITEM_COLUMNS, r)) for t in per_item for r in t.statistics]


def row(rows, check, variant="all") -> dict:
    (found,) = [r for r in rows if (r["cell"], r["check"]) == check and r["variant"] == variant]
    return found


def test_in_five_notebooks_only_the_planted_check_is_flagged():
    """200 students x 5 notebooks (the measure of issue 30): the one bad check, and nothing else."""
    rows = rows_of(report.tables(synthetic_class(200, variants="ABCD", items=5, planted=2)))
    flagged = {(r["item"], r["check"]) for r in rows if r["flag"]}
    assert flagged == {("n3-planted", "bad")}
    assert sum(1 for r in rows if r["flag"]) == 5     # the class and each of the 4 variants


def test_the_planted_bad_check_is_flagged_and_the_good_one_is_not():
    data = synthetic_class(80)
    rows = rows_of(report.tables(data))
    bad, good = row(rows, BAD), row(rows, GOOD)
    assert bad["flag"] == report.NEGATIVE and float(bad["discrimination"]) < -0.5, bad
    assert good["flag"] == "" and float(good["discrimination"]) > 0.5, good
    assert all(r["flag"] == "" for r in rows if (r["cell"], r["check"]) != BAD), rows
    assert all(float(row(rows, check)["discrimination"]) > 0.2 for check in ORDINARY)
    for variant in "AB":     # 40 students a variant: the bad check shows there too
        assert row(rows, BAD, variant)["flag"] == report.NEGATIVE
        assert row(rows, GOOD, variant)["flag"] == ""
    assert bad["students"] == 80 and bad["passing"] == 40 and bad["difficulty"] == "0.50"


def test_discrimination_is_scipys_point_biserial_against_the_rest_of_the_score():
    """The figure is scipy's, of passing against the total minus the check's own cell."""
    from scipy.stats import pointbiserialr
    data = synthetic_class(50)
    item = data.items[0]
    rows = rows_of(report.tables(data))
    students = sorted(item.scores)
    passed = [item.outcomes[GOOD][s] == "pass" for s in students]
    rest = [item.scores[s] - item.cell_scores[s][GOOD[0]] for s in students]
    assert row(rows, GOOD)["discrimination"] == f"{pointbiserialr(passed, rest)[0]:+.2f}"
    assert row(rows, GOOD)["difficulty"] == f"{sum(passed) / len(passed):.2f}"


def test_a_check_everyone_passes_has_no_correlation_and_says_so():
    rows = rows_of(report.tables(synthetic_class(40)))
    constant = row(rows, CONSTANT)
    assert constant["difficulty"] == "1.00" and constant["discrimination"] == "" and constant["flag"] == ""
    assert "everyone passed" in constant["note"]
    assert report.point_biserial([1, 1, 0, 0], [3, 3, 3, 3])[0] is None
    assert all("nan" not in str(v).lower() for r in rows for v in r.values())


def test_six_students_get_counts_only():
    rows = rows_of(report.tables(synthetic_class(6)))
    assert rows and all(r["difficulty"] == r["discrimination"] == r["flag"] == "" for r in rows)
    assert all("too few students" in r["note"] for r in rows)
    bad = row(rows, BAD)
    assert (bad["students"], bad["passing"]) == (6, 3)


def test_a_small_variant_gets_counts_only_beside_a_large_class():
    """12 students in 3 variants: the class figures are given, the variants (4 each) get counts only."""
    rows = rows_of(report.tables(synthetic_class(12, variants="ABC")))
    assert row(rows, GOOD)["difficulty"] != ""
    assert all(r["difficulty"] == "" and "too few" in r["note"] for r in rows if r["variant"] != "all")


def test_undecided_and_unchecked_students_are_left_out():
    data = synthetic_class(30)
    item = data.items[0]
    item.outcomes[GOOD]["s000"] = "undecided"
    del item.outcomes[GOOD]["s001"]
    rows = rows_of(report.tables(data))
    assert row(rows, GOOD)["students"] == 28 and row(rows, BAD)["students"] == 30


def test_the_rows_reach_items_csv_the_page_and_the_text(tmp_path):
    data = synthetic_class(60)
    per_item = report.tables(data)
    page = render.render_html(data, per_item, render.figures(per_item))
    text = render.render_text(data, per_item)
    render.write_csv(tmp_path / "items.csv", report.ITEM_COLUMNS, [r for t in per_item for r in t.statistics])
    with open(tmp_path / "items.csv", newline="") as fh:
        written = list(csv.reader(fh))
    assert written[0] == report.ITEM_COLUMNS
    assert written[1:] == [[str(v) for v in r] for t in per_item for r in t.statistics]
    assert 'data-table="items"' in page and page.count('<tr class="flagged">') == 3   # class, A, B
    assert report.NEGATIVE in text and "nan" not in text.lower().replace("planted", "")
    assert ">nan<" not in page.lower()


@pytest.mark.parametrize("trial", range(3))
def test_a_sound_class_raises_no_flag(trial):
    """Checks that all follow ability: no flag, whatever the sample."""
    data = synthetic_class(60, seed=100 + trial)
    item = data.items[0]
    del item.outcomes[BAD]
    item.checks.remove(BAD)
    rows = rows_of(stats.tables(data))
    assert not any(r["flag"] for r in rows)
    assert not any(isinstance(v, float) and math.isnan(v) for r in rows for v in r.values())
