"""Benchmark: `chapter report` for a class of 200 students x the 5 notebooks of `worked`.

    .venv/bin/python bench/report_bench.py [--repeat 3] [--fresh] [--per-variant 50]

The class is the synthetic one of tests/course/test_report.py (50 students per variant, each
declared mistake at a chosen rate, blanks, crashes, missing notebooks, one harder
variant), recorded by the engine's own `record` into an SQLite gradebook under
bench/out/report-class/ (built once, reused unless --fresh: recording 200 students
takes minutes on a busy machine). It then builds the report `--repeat` times and
prints each run's wall and CPU time (and the machine's load), split into reading the database, statistics, figures
and writing, against the target of 10 s, and how many checks the item statistics flag. Last, item statistics
alone on a synthetic 200 x 5 class with one planted bad check (tests/course/test_report_items.py): their time,
and whether that check, and no other, is flagged. The imports the command needs anyway
(nbgrader alone imports Jupyter's server stack) are timed once, apart. There is no plain-nbgrader counterpart:
nbgrader has no class report.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _class import ROOT, generated_course, load_line  # noqa: E402   (ROOT: the checkout, put on sys.path)
from graders.course.report import build_report  # noqa: E402
from graders.course.report import ITEM_COLUMNS  # noqa: E402
from tests.course.test_report import ASSIGNMENT, build_class  # noqa: E402
from tests.course.test_report_items import synthetic_class  # noqa: E402

TARGET_SECONDS = 10.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--fresh", action="store_true", help="record the class again")
    parser.add_argument("--per-variant", type=int, default=50, help="students per variant (4 variants)")
    args = parser.parse_args()
    course = ROOT / "bench" / "out" / "report-class"
    size = f"{4 * args.per_variant} students\n"
    marker = course / ".recorded"
    if args.fresh or not (course / "gradebook.db").exists() or not marker.exists() or marker.read_text() != size:
        shutil.rmtree(course, ignore_errors=True)
        started = time.perf_counter()
        generated_course(course)
        build_class(course, args.per_variant)
        marker.write_text(size)
        print(f"recorded {size.strip()} x 5 notebooks in {time.perf_counter() - started:.1f} s "
              "(record, not timed below)")
    started, cpu = time.perf_counter(), time.process_time()
    import matplotlib.backends.backend_agg  # noqa: F401
    import matplotlib.figure  # noqa: F401
    import nbgrader.api  # noqa: F401
    import scipy.stats  # noqa: F401

    from graders import problems
    for name in ("w1-memory", "w2-compute", "w3-range", "w4-activations", "w5-clip-decay"):
        problems.get(name)
    print(f"imports (nbgrader, matplotlib, scipy.stats, the problems; once per process): {time.perf_counter() - started:.2f} s "
          f"wall, {time.process_time() - cpu:.2f} s CPU")
    print(load_line())
    worst = 0.0
    for run in range(args.repeat):
        started, cpu = time.perf_counter(), time.process_time()
        written = build_report(course, ASSIGNMENT, out=course / "reports")
        total, cpu = time.perf_counter() - started, time.process_time() - cpu
        worst = max(worst, total)
        parts = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in written.seconds.items())
        print(f"run {run + 1}: {total:.2f} s wall, {cpu:.2f} s CPU ({parts})")
    students = len(written.tables[0].item.scores)
    notebooks = len(written.tables)
    flagged = [r for t in written.tables for r in t.statistics if r[ITEM_COLUMNS.index("flag")]]
    print(f"item statistics of the recorded class: {sum(len(t.statistics) for t in written.tables)} rows, "
          f"{len(flagged)} flagged NEGATIVE DISCRIMINATION (the class plants no bad check)")
    planted_ok = planted_class()
    print(f"report for {students} students x {notebooks} notebooks: slowest {worst:.2f} s "
          f"(target < {TARGET_SECONDS:g} s: {'met' if worst < TARGET_SECONDS else 'MISSED'}); {written.html}")
    return 0 if worst < TARGET_SECONDS and planted_ok else 1


def planted_class() -> bool:
    """Item statistics alone on issue 30's measure: 200 students x 5 notebooks, one planted bad check
    (tests/course/test_report_items.py's synthetic class). True when that check, and it alone, is flagged."""
    from graders.course.report import stats
    data = synthetic_class(200, variants="ABCD", items=5, planted=2)
    started, cpu = time.perf_counter(), time.process_time()
    totals = stats.assignment_totals(data.items)
    rows = [r for item in data.items for r in stats.item_statistics(item, totals)]
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    at = {c: ITEM_COLUMNS.index(c) for c in ("item", "check", "flag")}
    flagged = {(r[at["item"]], r[at["check"]]) for r in rows if r[at["flag"]]}
    ok = flagged == {("n3-planted", "bad")}
    print(f"item statistics, 200 students x 5 notebooks x {len(rows)} rows with one planted bad check: "
          f"{wall:.3f} s wall, {cpu:.3f} s CPU; flagged {sorted(flagged)} ({'right' if ok else 'WRONG'})")
    return ok


if __name__ == "__main__":
    sys.exit(main())
