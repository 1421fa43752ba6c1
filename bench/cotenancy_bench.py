"""Benchmark: does a hostile neighbour change an honest student's grade, and what does each sandbox hold?

    .venv/bin/python bench/cotenancy_bench.py [--students 4] [--notebooks 3] [--workers N]

It builds a scratch course with the `practice` assignment (notebooks that do real
torch work) and a small class of honest students, each submitting the published
solutions (each student has its own variant). The class is graded twice by
`graders.engine.autograde.autograde`, in this process:

  quiet    the honest class alone
  hostile  the same class, plus in the same batch a CPU-starving neighbour (sixty
           busy-looping children in its first notebook) and a memory-hoarding one
           (four children of 1 GiB each, under each process's limit, 4 GiB together)

Each notebook's time limit follows its solution's CPU time as the gate measured it in this
course (`.chapter/solution-seconds.json`; run `chapter status` first), as `chapter autograde`
sets it; `--ceiling` gives every notebook the configured ceiling instead, as before issue 29.

It prints each notebook's time limit, whether every honest score is identical in both runs, each run's wall
time, and for every sandbox the peak memory its control group really held
(memory.max_usage_in_bytes on cgroup v1, memory.peak on v2) against its limit,
with how the run ended. The hogs' notebooks hold the full solutions too, so a
guard that gave way would show as a hog with full marks.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graders.engine import autograde as ag  # noqa: E402
from graders import problems, variants  # noqa: E402
from graders.engine import grading, time_limits  # noqa: E402
from graders.engine.scratch import make_course, nbgrader  # noqa: E402

ASSIGNMENT = "practice"
def cpu_hog(children: int = 60) -> str:
    """A cell that starts `children` busy-looping processes and leaves them running."""
    return (f"import os, time\nfor _ in range({children}):\n    if os.fork() == 0:\n"
            "        while True:\n            pass\ntime.sleep(1)\n")


def memory_hog(children: int = 4, mib: int = 1024, hold: float = 10.0) -> str:
    """A cell whose `children` each fill `mib` MiB (under one process's limit) and hold it."""
    return ("import os, time\nkids = []\n"
            f"for _ in range({children}):\n    pid = os.fork()\n    if pid == 0:\n"
            f"        block = bytearray({mib} << 20)\n        for i in range(0, len(block), 4096):\n"
            f"            block[i] = 1\n        time.sleep({hold})\n        os._exit(0)\n"
            "    kids.append(pid)\nfor pid in kids:\n    os.waitpid(pid, 0)\n")


def pick_notebooks(count: int) -> list[str]:
    known = set(problems.ids())
    return sorted(p.stem for p in (ROOT / "source" / ASSIGNMENT).glob("*.ipynb") if p.stem in known)[:count]


def with_first_cell(nb, source):
    nb = nbformat.reads(nbformat.writes(nb), as_version=4)
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    nb.cells.insert(first + 1, nbformat.v4.new_code_cell(source))
    return nb


def build(scratch: Path, names: list[str], honest: list[str], hogs: dict, measured: bool = True) -> Path:
    course = make_course(ROOT, scratch, only=[ASSIGNMENT])
    if measured:   # the gate's measurements of these notebooks' solutions, as the course keeps them
        known = time_limits.read_measured(ROOT)
        kept = {f"{ASSIGNMENT}/{n}": known[f"{ASSIGNMENT}/{n}"]["seconds"] for n in names
                if time_limits.measured_seconds(ROOT, ASSIGNMENT, n, known) is not None}
        time_limits.record_measured(course, kept)
    for path in (course / "source" / ASSIGNMENT).iterdir():
        if path.suffix == ".ipynb" and path.stem not in names or path.suffix != ".ipynb" and path.is_file():
            path.unlink()
    nbgrader("generate_assignment", ASSIGNMENT, "--force", cwd=course)
    nbgrader("generate_solution", ASSIGNMENT, "--force", cwd=course)
    solutions = {n: nbformat.read(course / "solutions" / ASSIGNMENT / f"{n}.ipynb", as_version=4) for n in names}
    for student in honest + list(hogs):
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        for j, name in enumerate(names):
            nb = solutions[name]
            if student in hogs and j == 0:
                nb = with_first_cell(nb, hogs[student])
            nbformat.write(nb, folder / f"{name}.ipynb")
        (folder / "timestamp.txt").write_text("2026-11-30 12:00:00.000000 UTC\n")
    return course


def recording(log: Path):
    """Wrap the engine's run_job so that every sandbox's control-group account lands in `log`."""
    original_notebook, original_run = grading.grade_notebook, grading.run_job
    current = {}

    def grade_notebook(course, instructor, student, path, socket_path, limits, shared=None):
        current.update(student=student, notebook=instructor.name)
        return original_notebook(course, instructor, student, path, socket_path, limits, shared=shared)

    def run_job(socket_path, job, limits):
        run = original_run(socket_path, job, limits)
        with open(log, "a") as fh:
            fh.write(json.dumps({**current, "status": run.status, "detail": run.detail, **run.usage}) + "\n")
        return run

    grading.grade_notebook, grading.run_job = grade_notebook, run_job


def grade(course: Path, students: list[str], workers: int, log: Path):
    started = time.monotonic()
    report = ag.autograde(course, ASSIGNMENT, workers=workers, force=True, progress=False, out=None,
                          students=students)
    seconds = time.monotonic() - started
    usage = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    log.unlink(missing_ok=True)
    return report, seconds, usage


def scores(report, students):
    return {(s, nb.name): (nb.score, dict(nb.grades)) for s in students if s in report.results
            for nb in report.results[s].notebooks}


def mib(n):
    return f"{(n or 0) / (1 << 20):7.0f} MiB"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=4)
    parser.add_argument("--notebooks", type=int, default=3)
    parser.add_argument("--workers", type=int, default=None, help="default: honest students + 2")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--ceiling", action="store_true",
                        help="every notebook at the configured ceiling, not its solution's measured time")
    args = parser.parse_args(argv)
    names = pick_notebooks(args.notebooks)
    honest = [variants.student_for("ABCD"[i % 4], ASSIGNMENT, prefix=f"honest-{i}") for i in range(args.students)]
    hogs = {variants.student_for("A", ASSIGNMENT, prefix="cpu-hog"): cpu_hog(60),
            variants.student_for("B", ASSIGNMENT, prefix="memory-hog"): memory_hog(4, 1024)}
    workers = args.workers or len(honest) + len(hogs)
    scratch = Path(tempfile.mkdtemp(prefix="cotenancy-bench-"))
    try:
        print(f"practice: {len(honest)} honest students x {len(names)} notebooks ({', '.join(names)}), "
              f"{workers} workers, on {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
        course = build(scratch / "course", names, honest, hogs, measured=not args.ceiling)
        log = scratch / "usage.jsonl"
        recording(log)
        quiet, t_quiet, _ = grade(course, honest, workers, log)
        print(quiet.time_limits_line())
        print(f"quiet run:   {t_quiet:6.1f} s")
        hostile, t_hostile, usage = grade(course, honest + list(hogs), workers, log)
        print(f"hostile run: {t_hostile:6.1f} s (the same class, plus a CPU-starving and a memory-hoarding "
              f"neighbour)  load average {os.getloadavg()[0]:.2f}")
        before, after = scores(quiet, honest), scores(hostile, honest)
        same = before == after and len(before) == len(honest) * len(names)
        full = sum(1 for score, _ in before.values() if score > 0)
        print(f"honest scores identical in both runs: {'YES' if same else 'NO'} "
              f"({len(before)} notebooks, {full} with points)")
        if not same:
            for key in sorted(set(before) | set(after)):
                if before.get(key) != after.get(key):
                    print(f"   {key}: quiet {before.get(key)}  hostile {after.get(key)}")
        for hog in hogs:
            got = hostile.results.get(hog)
            total = sum(nb.score for nb in got.notebooks) if got else None
            first = got.notebooks[0] if got else None
            print(f"{hog}: {total} points; first notebook: {first.run.get('status') if first else '?'} "
                  f"({'; '.join(first.reasons[:1]) if first else hostile.failed.get(hog)})")
        print("peak memory each sandbox's control group held (hostile run):")
        print(f"   {'student':<28} {'notebook':<30} {'peak':>11} {'limit':>11}  cpu s   ended")
        for row in sorted(usage, key=lambda r: (r.get("student", ""), r.get("notebook", ""))):
            print(f"   {row.get('student', '?'):<28} {row.get('notebook', '?'):<30} {mib(row.get('memory_peak'))} "
                  f"{mib(row.get('memory_limit'))}  {row.get('cpu_seconds') or 0:5.1f}   {row['status']}"
                  + (f" ({row['detail'][:70]})" if row.get("detail") else ""))
        over = [r for r in usage if (r.get("memory_peak") or 0) > (r.get("memory_limit") or 1 << 62)]
        print(f"sandboxes above their limit: {len(over)} of {len(usage)}")
        return 0 if same and not over else 1
    finally:
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
