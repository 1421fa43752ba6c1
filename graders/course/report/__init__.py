"""`chapter report ASSIGNMENT`: what the class got wrong, after grading.


The package is in four rooms: `data.py` reads the gradebook and the engine's per-check
verdicts (rows by column name); `stats.py` computes the tables, the variant fairness
test and the item statistics; `lateness.py` reads the deadlines part; `render.py` draws
the figures and writes the page, the text and the CSV files. `build_report` runs them in
that order.

It reads the gradebook's own database: nbgrader's grades (each cell's score, the manual
score where formgrader has given one), the engine's evidence (`graders.evidence`: each
check's verdict, the declared mistake it matched, the variant, the technical zeros) and
the due dates, submission times, extensions and late penalties. Beside it, it reads the
course's deadlines.toml and its set-aside ledger (`.chapter/set-aside/`). From them it
writes, in `reports/<assignment>/` of the course:

- `report.html`, one self-contained page (figures are matplotlib PNGs embedded as
  base64; no script, no network): a class overview, then per item the score
  histogram, each check's failure rate, the declared mistakes ranked by how many
  students made them (with each one's feedback line), the per-variant means with
  their intervals and the fairness flag, the technical zeros and the manual cells;
- `checks.csv`, `mistakes.csv` and `items.csv`: the per-check, per-mistake and item
  statistics tables, exactly as the page shows them, and `deadlines.csv` when the
  gradebook or deadlines.toml gives a due date (or deadlines.toml cannot be read);
and it prints the same tables as plain text.

Definitions (stated on the page too):
- a check's failure rate = (fail + invalid) / checked, where checked counts the
  students whose check ran (pass, fail, invalid or undecided); a check that did not
  run (cell not reached, notebook missing or broken) is counted as "not checked";
- a mistake is counted once per student, however many checks it matched;
- the interval of a variant's mean is a 95% percentile bootstrap interval (4000
  resamples of that variant's students, seeded from the assignment's and the item's names);
- a variant is flagged as possibly unfair by a step-down test: among the variants not
  yet flagged (at least three), the one whose mean is furthest from the pooled mean of
  the others' students is flagged when the percentile bootstrap interval of that
  difference, at level 1 - 0.05/k (k: the variants compared; Bonferroni), excludes 0;
  this repeats until one is not flagged. On equal variants the chance of any flag stays
  near 5% or below; one hard variant does not make the others look easy;
- below MIN_CLASS students (or MIN_VARIANT in a variant) only counts are shown: no
  percentages, no intervals, no flags;
- item statistics, per check over the class and per variant (`stats.item_statistics`):
  difficulty (share passing among the students whose check gave a verdict) and
  discrimination (scipy's point-biserial correlation of passing with the rest of the
  score: the assignment total minus the points of the check's cell). NEGATIVE
  DISCRIMINATION flags a correlation negative with a one-sided p below 0.05/m, m the
  correlations computed in the same table (Bonferroni). A check nobody or everybody
  passes has no correlation, and its row says so.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from graders.course.report import lateness
from graders.course.report.data import MIN_CLASS, MIN_VARIANT, ClassData, Item, collect
from graders.course.report.render import (MANUAL_COLUMNS, OVERVIEW_COLUMNS, RULES, VARIANT_COLUMNS, manual_rows,
                                          write_csv, figures, render_html, render_text)
from graders.course.report.stats import (ALPHA, CHECK_COLUMNS, DRAWS, ITEM_COLUMNS, MISTAKE_COLUMNS, NEGATIVE,
                                         ItemTables, item_statistics, point_biserial, tables, top_mistakes,
                                         variant_fairness)
from graders.engine.exchange import close_folder, read_set_aside
from graders.unicode import shown_name

__all__ = ["ALPHA", "CHECK_COLUMNS", "DRAWS", "ITEM_COLUMNS", "NEGATIVE", "item_statistics", "point_biserial", "MANUAL_COLUMNS", "MIN_CLASS", "MIN_VARIANT", "MISTAKE_COLUMNS",
           "OVERVIEW_COLUMNS", "RULES", "VARIANT_COLUMNS", "ClassData", "Item", "ItemTables", "Written",
           "build_report", "collect", "figures", "render_html", "render_text", "tables", "top_mistakes",
           "variant_fairness", "manual_rows"]


@dataclass
class Written:
    html: Path
    checks_csv: Path
    mistakes_csv: Path
    text: str
    seconds: dict
    tables: list
    items_csv: Path | None = None
    deadlines_csv: Path | None = None       # written when the assignment has a due date


def build_report(root, assignment: str, out: Path | None = None) -> Written:
    """Read, compute, draw and write the report of `assignment`; returns the paths and the text."""
    seconds = {}
    started = time.perf_counter()
    data = collect(root, assignment)
    data.set_aside = [(shown_name(e.folder), shown_name(e.claimed), shown_name(e.why))
                      for e in read_set_aside(root, assignment)]
    data.lateness = lateness.read(root, assignment)
    seconds["reading the database"] = time.perf_counter() - started
    mark = time.perf_counter()
    per_item = tables(data)
    seconds["statistics"] = time.perf_counter() - mark
    mark = time.perf_counter()
    images = figures(per_item)
    seconds["figures"] = time.perf_counter() - mark
    mark = time.perf_counter()
    folder = Path(out) if out else Path(root).resolve() / "reports" / assignment
    folder.mkdir(parents=True, exist_ok=True)
    if not out:      # who made which mistake: the instructor's alone
        close_folder(folder.parent)
    page = folder / "report.html"
    # a folder's name in bytes that are not UTF-8 (a set-aside submission's) is written escaped
    page.write_text(render_html(data, per_item, images), encoding="utf-8", errors="backslashreplace")
    write_csv(folder / "checks.csv", CHECK_COLUMNS, [r for t in per_item for r in t.checks])
    write_csv(folder / "mistakes.csv", MISTAKE_COLUMNS, [r for t in per_item for r in t.mistakes])
    write_csv(folder / "items.csv", ITEM_COLUMNS, [r for t in per_item for r in t.statistics])
    deadlines_csv = None
    if data.lateness.shown:
        deadlines_csv = folder / "deadlines.csv"
        write_csv(deadlines_csv, lateness.COLUMNS, data.lateness.rows)
    text = render_text(data, per_item)
    seconds["writing"] = time.perf_counter() - mark
    return Written(page, folder / "checks.csv", folder / "mistakes.csv", text, seconds, per_item,
                   folder / "items.csv", deadlines_csv)
