"""The trusted side's own time per notebook and per submission, without the sandbox's.

    PYTHONPATH=. .venv/bin/python bench/trusted_bench.py COURSE [--assignment worked] [--repeats 4]

COURSE is a built class (nbgrader's folders and gradebook, students in submitted/; e.g.
one `bench/autograde_bench.py --keep` leaves); it is copied first, nothing in it is changed.
Each notebook runs once in the sandbox; its run is then replayed `--repeats` times on the
trusted side alone, one notebook at a time, as `grading.grade_notebook` does it:

  prepare       read + sanitize + build_job
  comparison    grade_cells (the submission's grading child answers Problem.grade: its time is
                in the wall column, not in this process's CPU)

and each submission (its notebooks' results) is accepted into the copy's gradebook twice, as a
grading run does (GradingRun.accept: journal, gradebook, autograded/), first sight then again,
with the statements SQLAlchemy sends counted. Medians of this process's CPU time and of wall
time; the first replay warms imports and is not counted. The machine is shared: compare runs
made side by side.
"""
from __future__ import annotations

import argparse
import copy
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def capture(loaded, limits, course: Path) -> list:
    """(student, notebook, run) of every notebook that reaches the sandbox."""
    from graders.engine import course_dir, grading, sanitize, snapshot
    from graders.sandbox.zygote import Zygote, run_job
    runs = []
    with Zygote(secrets=[course]) as zygote:
        for student in course_dir.discover(loaded):
            for name, instructor in loaded.notebooks.items():
                try:
                    nb = snapshot.read_submission(loaded.submission_dir(student) / f"{name}.ipynb")
                    nb, _ = sanitize.sanitize(nb, instructor, loaded.assignment, student,
                                              loaded.begin_hidden, loaded.end_hidden)
                    job, _ = grading.build_job(loaded, instructor, nb, student)
                except Exception:  # noqa: BLE001 - a broken or missing notebook: nothing to time
                    continue
                runs.append((student, name, run_job(zygote.socket_path, job, limits)))
    return runs


def replay(loaded, runs: list, repeats: int):
    """Per-notebook CPU and wall seconds of prepare and comparison; the last replay's results."""
    from graders.engine import grading, sanitize, snapshot
    times = {key: [] for key in ("prepare cpu", "prepare wall", "comparison cpu", "comparison wall")}
    by_student, results = {}, {}
    for student, name, run in runs:
        by_student.setdefault(student, []).append((name, run))
    for repeat in range(repeats + 1):
        results = {}
        for student, items in by_student.items():
            with grading.SharedGrading(loaded, student) as shared:
                for name, run in items:
                    instructor, run = loaded.notebooks[name], copy.deepcopy(run)
                    c0, t0 = time.process_time(), time.perf_counter()
                    nb = snapshot.read_submission(loaded.submission_dir(student) / f"{name}.ipynb")
                    nb, notes = sanitize.sanitize(nb, instructor, loaded.assignment, student,
                                                  loaded.begin_hidden, loaded.end_hidden)
                    job, tests = grading.build_job(loaded, instructor, nb, student)
                    c1, t1 = time.process_time(), time.perf_counter()
                    out = grading.NotebookResult(name, notes=notes)
                    grading.grade_cells(loaded, instructor, nb, student, run, tests, out, shared=shared)
                    c2, t2 = time.process_time(), time.perf_counter()
                    results.setdefault(student, grading.SubmissionResult(student, "bench")).notebooks.append(out)
                    if repeat:
                        for key, value in (("prepare cpu", c1 - c0), ("prepare wall", t1 - t0),
                                           ("comparison cpu", c2 - c1), ("comparison wall", t2 - t1)):
                            times[key].append(value)
    return times, results


def accept_all(loaded, config, limits, results: dict) -> dict:
    """CPU seconds and statements per submission of GradingRun.accept, first sight then again."""
    from nbgrader.api import Gradebook
    from sqlalchemy import event

    from graders.engine.journal import Journal
    from graders.engine.run import GradingRun, late_penalties
    from graders.engine.summary import Report
    run = GradingRun(loaded, limits, Journal(loaded), Report(loaded.assignment), late_penalties(config))
    out = {}
    with Gradebook(loaded.db_url, loaded.course_id) as gb:
        statements = []
        event.listen(gb.engine, "before_cursor_execute", lambda *args: statements.append(1))
        for label in ("first", "again"):
            cpu, before = [], len(statements)
            for result in results.values():
                c0 = time.process_time()
                if not run.accept(gb, result):
                    raise SystemExit(f"{result.student} could not be recorded: {run.report.failed}")
                cpu.append(time.process_time() - c0)
            out[label] = (cpu, (len(statements) - before) / max(1, len(results)))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("course", type=Path)
    parser.add_argument("--assignment", default="worked")
    parser.add_argument("--repeats", type=int, default=4)
    args = parser.parse_args(argv)
    from graders.engine import course_dir
    course = Path(tempfile.mkdtemp(prefix="trusted-bench-")) / "course"
    shutil.copytree(args.course, course, symlinks=True)
    config = course_dir.load_config(course)
    loaded = course_dir.load_course(course, args.assignment, config)
    limits = course_dir.limits_from(config)
    runs = capture(loaded, limits, course)
    if not runs:
        raise SystemExit("no notebook reached the sandbox")
    times, results = replay(loaded, runs, args.repeats)
    print(f"{len(runs)} notebooks, each replayed {args.repeats} times (medians, ms a notebook):")
    for key, values in times.items():
        print(f"   {key:<16} {1000 * statistics.median(values):7.2f}   (mean {1000 * statistics.fmean(values):.2f})")
    for label, (cpu, statements) in accept_all(loaded, config, limits, results).items():
        print(f"accept, {label:<5} {1000 * statistics.median(cpu):7.1f} ms CPU a submission (median of {len(cpu)}), "
              f"{statements:.1f} statements")
    shutil.rmtree(course.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
