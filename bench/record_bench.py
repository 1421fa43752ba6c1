"""How many commits and how long `record_io.record` takes for one submission, on a gradebook.

    .venv/bin/python bench/record_bench.py [--students 200] [--notebooks 5] [--cells 6] [--db-url URL]

Makes a gradebook with nbgrader's own API (one assignment of --notebooks notebooks of --cells
grade cells each; SQLite in a scratch folder unless --db-url names an empty database, e.g. a
PostgreSQL one), then records --students synthetic students twice (first sight, then a
regrade that sets the same rows again), with a late-penalty plugin, as `chapter autograde` does.
It prints the median and 90th percentile milliseconds per submission, and the database
commits per submission, counted by SQLAlchemy's engine `commit` event (on PostgreSQL two of
them are the writer lock's own connection taking and releasing the per-student lock; they
write nothing).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graders.engine import record_io  # noqa: E402
from graders.engine.course_dir import Course  # noqa: E402
from graders.engine.grading import NotebookResult, SubmissionResult  # noqa: E402

ASSIGNMENT = "a1"


class HalfOff:
    """A late-penalty plugin: half the score off for any lateness."""

    def late_submission_penalty(self, student, score, seconds):
        return score / 2


def make_gradebook(url: str, notebooks: int, cells: int) -> None:
    from datetime import datetime

    from nbgrader.api import Gradebook
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    with Gradebook(url, "course") as gb:
        gb.add_assignment(ASSIGNMENT, duedate=datetime(2026, 2, 1))
        for n in range(notebooks):
            gb.add_notebook(f"nb{n}", ASSIGNMENT)
            for c in range(cells):
                gb.add_grade_cell(f"test{c}", f"nb{n}", ASSIGNMENT, max_score=1.0, cell_type="code")
                gb.add_solution_cell(f"answer{c}", f"nb{n}", ASSIGNMENT)


def course_at(folder: Path, url: str) -> Course:
    return Course(root=str(folder), assignment=ASSIGNMENT, db_url=url, course_id="course",
                  submitted=str(folder / "submitted" / "{student}" / ASSIGNMENT),
                  autograded=str(folder / "autograded" / "{student}" / ASSIGNMENT),
                  source_dir=str(folder / "source" / ASSIGNMENT), ignore=[], notebooks={}, permissions=0o444,
                  begin_hidden="", end_hidden="", max_lines=1000, max_traceback=100,
                  exclude_overwriting=[], excluded_students=[])


def result_of(student: str, notebooks: int, cells: int) -> SubmissionResult:
    return SubmissionResult(student, "key", [
        NotebookResult(f"nb{n}", status="graded", score=float(cells), max_score=float(cells),
                       grades={f"test{c}": 1.0 for c in range(cells)},
                       comments={f"answer{c}": "ok" for c in range(cells)}) for n in range(notebooks)])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--notebooks", type=int, default=5)
    parser.add_argument("--cells", type=int, default=6)
    parser.add_argument("--db-url", help="an empty database (default: SQLite in a scratch folder)")
    args = parser.parse_args(argv)
    from nbgrader.api import Gradebook
    from sqlalchemy import event
    folder = Path(tempfile.mkdtemp(prefix="record-bench-"))
    url = args.db_url or f"sqlite:///{folder / 'gradebook.db'}"
    make_gradebook(url, args.notebooks, args.cells)
    course = course_at(folder, url)
    for i in range(args.students):
        stamp = course.submission_dir(f"s{i:04d}")
        stamp.mkdir(parents=True)
        (stamp / "timestamp.txt").write_text("2026-02-02 10:00:00 UTC\n")   # a day late
    with Gradebook(url, "course") as gb:
        commits = []
        event.listen(gb.engine, "commit", lambda conn: commits.append(1))
        for label in ("first record", "regrade"):
            times, before = [], len(commits)
            for i in range(args.students):
                started = time.perf_counter()
                record_io.record(gb, course, result_of(f"s{i:04d}", args.notebooks, args.cells), HalfOff())
                times.append(time.perf_counter() - started)
            times.sort()
            print(f"{label:<13} {args.students} submissions of {args.notebooks}x{args.cells} grades on "
                  f"{gb.engine.dialect.name}: median {1000 * statistics.median(times):6.1f} ms, "
                  f"p90 {1000 * times[int(0.9 * len(times))]:6.1f} ms, "
                  f"{(len(commits) - before) / args.students:.1f} commits a submission")
        penalty = gb.find_submission_notebook("nb0", ASSIGNMENT, "s0000").late_submission_penalty
        print(f"check: s0000 nb0 late penalty {penalty} (half of {args.cells})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
