"""Benchmark: plain `nbgrader autograde` against `chapter autograde` on one synthetic class.

    .venv/bin/python bench/autograde_bench.py [--students 40] [--assignment worked] [--workers N]

It builds a scratch course with up to five notebooks of one assignment (those in
source/ with a registered problem), generates the assignment and its solutions
there, and writes a class of students, each with its own id (and so its own
variant):
  correct       the published solution
  partly wrong  the solution with one numeric answer changed
  blank         the released notebook
  mixed         some notebooks correct, the others blank
  broken        one notebook is not valid JSON, the others correct
The course is then copied twice, with the same gradebook. One copy is graded
by `nbgrader autograde ASSIGNMENT --force`, the other by `chapter autograde
ASSIGNMENT`; each command's whole wall time is measured (process start
included). The script prints the throughput of each and their ratio, and
checks that both give identical scores on every honest submission (all but
"broken", which plain nbgrader refuses as a whole).

It is not part of the test suite: plain nbgrader takes minutes.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graders import problems  # noqa: E402
from graders.build import make_course, nbgrader  # noqa: E402

KINDS = ("correct", "correct", "partly wrong", "blank", "mixed", "correct", "partly wrong", "broken")


def pick_notebooks(assignment: str, count: int) -> list[str]:
    known = set(problems.ids())
    names = sorted(p.stem for p in (ROOT / "source" / assignment).glob("*.ipynb") if p.stem in known)
    return names[:count]


def wrong_version(nb, problem):
    """The solution with one numeric answer changed (a partly wrong submission)."""
    nb = nbformat.reads(nbformat.writes(nb), as_version=4)
    numeric = [k for k, c in problem.checks.items() if type(c).__name__ in ("Number", "Count")]
    for key in numeric:
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("solution") and cell.cell_type == "code" and f"{key} =" in cell.source:
                cell.source += (f"\n{key} = {key} + 1 if isinstance({key}, int) else {key} * 1.5\n")
                return nb
    return nb


def build(scratch: Path, assignment: str, names: list[str], students: int) -> tuple[Path, dict]:
    course = make_course(ROOT, scratch / "base", only=[assignment])
    for path in (course / "source" / assignment).iterdir():
        if path.suffix == ".ipynb" and path.stem not in names or path.suffix != ".ipynb" and path.is_file():
            path.unlink()
    nbgrader("generate_assignment", assignment, "--force", cwd=course)
    nbgrader("generate_solution", assignment, "--force", cwd=course)
    solutions = {n: nbformat.read(course / "solutions" / assignment / f"{n}.ipynb", as_version=4) for n in names}
    blanks = {n: nbformat.read(course / "release" / assignment / f"{n}.ipynb", as_version=4) for n in names}
    wrongs = {n: wrong_version(solutions[n], problems.get(n)) for n in names}
    kinds = {}
    for i in range(students):
        student = f"bench-{i:03d}"
        kind = KINDS[i % len(KINDS)]
        kinds[student] = kind
        folder = course / "submitted" / student / assignment
        folder.mkdir(parents=True)
        for j, name in enumerate(names):
            target = folder / f"{name}.ipynb"
            if kind == "broken" and j == 0:
                target.write_text(nbformat.writes(solutions[name])[: 2000])   # cut off: not JSON
                continue
            pick = {"correct": solutions, "broken": solutions, "partly wrong": wrongs, "blank": blanks,
                    "mixed": solutions if (i + j) % 2 else blanks}[kind]
            nbformat.write(pick[name], target)
        (folder / "timestamp.txt").write_text("2026-11-30 12:00:00.000000 UTC\n")
    return course, kinds


def scores(course: Path, assignment: str) -> dict:
    with sqlite3.connect(course / "gradebook.db") as db:
        rows = db.execute(
            "select sa.student_id, n.name, sum(coalesce(g.manual_score, g.auto_score, 0)) "
            "from grade g join submitted_notebook sn on g.notebook_id = sn.id "
            "join notebook n on sn.notebook_id = n.id "
            "join submitted_assignment sa on sn.assignment_id = sa.id "
            "join assignment a on sa.assignment_id = a.id where a.name = ? "
            "group by sa.student_id, n.name", (assignment,)).fetchall()
    return {(student, nb): round(score, 9) for student, nb, score in rows}


def timed(args: list[str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and every process it waited for)."""
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if result.returncode not in (0, 1):
        print(result.stdout[-3000:], result.stderr[-3000:])
        raise SystemExit(f"{args[0]} failed with {result.returncode}")
    tail = [line for line in (result.stdout + result.stderr).splitlines() if "autograde" in line][-3:]
    for line in tail:
        print("   ", line[:200])
    return elapsed, cpu


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--assignment", default="worked")
    parser.add_argument("--notebooks", type=int, default=5)
    parser.add_argument("--workers", type=int, help="for chapter autograde (default: every core)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch courses")
    args = parser.parse_args(argv)
    bin_dir = Path(sys.executable).parent
    names = pick_notebooks(args.assignment, args.notebooks)
    if not names:
        raise SystemExit(f"no notebooks with registered problems in source/{args.assignment}")
    scratch = Path(tempfile.mkdtemp(prefix="autograde-bench-"))
    try:
        print(f"building {args.students} students x {len(names)} notebooks ({', '.join(names)}) in {scratch}")
        base, kinds = build(scratch, args.assignment, names, args.students)
        plain, ours = scratch / "plain", scratch / "ours"
        shutil.copytree(base, plain)
        shutil.copytree(base, ours)
        notebooks = args.students * len(names)

        print("plain nbgrader autograde ...")
        print(f"   load average before: {os.getloadavg()[0]:.2f}")
        t_plain, cpu_plain = timed([str(bin_dir / "nbgrader"), "autograde", args.assignment, "--force"], plain)
        print("chapter autograde ...")
        command = [str(bin_dir / "chapter"), "autograde", args.assignment, "--course", str(ours), "--no-progress"]
        if args.workers:
            command += ["--workers", str(args.workers)]
        print(f"   load average before: {os.getloadavg()[0]:.2f}")
        t_ours, cpu_ours = timed(command, ours)

        got_plain, got_ours = scores(plain, args.assignment), scores(ours, args.assignment)
        honest = [s for s, kind in kinds.items() if kind != "broken"]
        mismatches = [(s, n, got_plain.get((s, n)), got_ours.get((s, n))) for s in honest for n in names
                      if got_plain.get((s, n)) != got_ours.get((s, n))]
        compared = len(honest) * len(names)
        print()
        print(f"class: {args.students} students x {len(names)} notebooks = {notebooks} notebooks "
              f"({', '.join(f'{k}: {list(kinds.values()).count(k)}' for k in dict.fromkeys(KINDS))})")
        print(f"plain nbgrader autograde: {t_plain:7.1f} s  {notebooks / t_plain:6.2f} notebooks/s  "
              f"{args.students / t_plain:6.3f} students/s   CPU {cpu_plain:7.1f} s")
        print(f"chapter autograde:        {t_ours:7.1f} s  {notebooks / t_ours:6.2f} notebooks/s  "
              f"{args.students / t_ours:6.3f} students/s   CPU {cpu_ours:7.1f} s")
        print(f"speed-up: {t_plain / t_ours:.1f}x wall clock ({cpu_plain / cpu_ours:.1f}x less CPU time) "
              f"on {os.cpu_count()} cores")
        digest = hashlib.sha256(repr(sorted(got_ours.items())).encode()).hexdigest()[:12]
        if mismatches:
            print(f"MISMATCH on {len(mismatches)} of {compared} honest notebooks:")
            for row in mismatches[:20]:
                print("   ", row)
            return 1
        print(f"identical scores on all {compared} honest notebooks (scores digest {digest})")
        return 0
    finally:
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
