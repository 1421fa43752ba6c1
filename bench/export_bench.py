"""Benchmark: `chapter export all` for a class of 200 students x 5 notebooks.

    .venv/bin/python bench/export_bench.py [--students 200] [--repeat 3]

A scratch course under a temporary folder gets a gradebook made with nbgrader's API
(tests/course/synthetic_gradebook.py): one assignment of 5 notebooks of 3 graded cells, every
7th student 5 h late, every 11th waiting for a manual grade, every 13th absent, and an ids.csv
mapping each to LMS ids. A deadlines.toml (0.2 points an hour, at most 1 point a notebook, 48 h
for every 21st student) is applied with `chapter deadlines`' code (timed); each export then also
checks that the gradebook's penalties are the policy's. It then times the export (Canvas and Moodle, in this
process, `--repeat` times) and one `chapter export all` as a command (its imports included), and
checks that every exported cell reads back as the gradebook's score minus penalty.
"""
from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _class import alembic_on_path, penalty, write_deadlines, write_ids  # noqa: E402
from graders.course.export import export  # noqa: E402
from graders.course import deadlines  # noqa: E402
from tests.course.synthetic_gradebook import DUE, make_gradebook  # noqa: E402

NOTEBOOKS = {f"nb{i}": [1.0, 2.0, 3.5] for i in range(1, 6)}
SCHEDULE = {"per": "hour", "kind": "points", "amount": 0.2, "cap": 1.0}


def build(root: Path, students: int) -> dict:
    """Make the gradebook; the score each exported student must get: the cells' sum minus the penalty."""
    from graders.course.deadlines import gradebook_of
    submissions = {}
    for n in range(students):
        if n % 13 == 12:
            continue
        scores = {nb: [round(((n * 7 + i * 3 + j) % 10) / 10 * m, 2) for j, m in enumerate(cells)]
                  for i, (nb, cells) in enumerate(NOTEBOOKS.items())}
        late = n % 7 == 6
        submissions[f"s{n:04d}", "worked"] = {"scores": scores, "late_hours": 5 if late else -1,
                                              "waiting": n % 11 == 10}
    make_gradebook(*gradebook_of(root), {"worked": NOTEBOOKS}, submissions)
    expected = {}
    for (student, _), given in submissions.items():
        if given["waiting"]:
            continue
        late = given["late_hours"] > 0 and int(student[1:]) % 21 != 20          # 48 h extension
        expected[student] = sum(sum(c) - penalty(sum(c), 3600 * given["late_hours"] if late else 0, SCHEDULE)
                                for c in given["scores"].values())
    write_deadlines(root, {"worked": DUE}, SCHEDULE,
                    {"worked": {f"s{n:04d}": {"hours": 48} for n in range(students) if n % 21 == 20}})
    write_ids(root, [f"s{n:04d}" for n in range(students)])
    return expected


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    alembic_on_path()
    from tests.conftest import copy_course
    with tempfile.TemporaryDirectory() as tmp:
        root = copy_course(Path(tmp), [])
        started = time.perf_counter()
        expected = build(root, args.students)
        print(f"gradebook of {args.students} students x {len(NOTEBOOKS)} notebooks made in "
              f"{time.perf_counter() - started:.1f} s (not timed below)")
        started = time.perf_counter()
        notes, changes = deadlines.apply(root, deadlines.load(root))
        print(f"chapter deadlines (in process): {time.perf_counter() - started:.3f} s, {len(changes)} penalties set")
        for lms in ("canvas", "moodle"):
            for run in range(args.repeat):
                started = time.perf_counter()
                written = export(root, "all", lms=lms, ids=root / "ids.csv", out=root / "exports")
                print(f"export all --lms {lms}, run {run + 1}: {time.perf_counter() - started:.3f} s "
                      f"({written.exported} grades, {len(written.apart_lines)} held apart)")
        with open(root / "exports" / "canvas-all.csv", newline="") as handle:
            rows = {r["ID"]: r for r in csv.DictReader(handle)}
        exported = {r["ID"]: r["worked"] for r in rows.values() if r["worked"] != ""}
        mismatched = sum(1 for student, score in expected.items()
                         if not abs(float(exported.pop(str(10_000 + int(student[1:])), "nan")) - score) < 1e-9)
        mismatched += len(exported)          # exported but not expected (a waiting one, an absent one)
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "graders.cli", "export", "all", "--ids",
                               str(root / "ids.csv"), "--course", str(root)], capture_output=True, text=True)
        wall = time.perf_counter() - started
        print(f"`chapter export all` as a command (imports included): {wall:.2f} s, exit {done.returncode}")
        print(f"round trip: {len(expected) - mismatched}/{len(expected)} scores read back equal to the cells' sum "
              f"minus the schedule's penalty (to 1e-9: the database sums in its own order)")
        return 0 if mismatched == 0 and done.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
