"""`chapter autograde ASSIGNMENT`: grade every submission outside the students' interpreters.

Plain `nbgrader autograde` runs a student's cells and the hidden tests in one
kernel, so the student's code can rewrite the tests, read the gradebook or
leave a process behind. Here the two are split:

- The student's cells run in a sandbox (`graders.sandbox.zygote`): a process forked
  from a warm zygote that cannot import `graders`, sees no course files, has no
  network and runs under rlimits. At each graded test cell that the course's
  checks know, it runs the cell's VISIBLE part (hidden tests removed) and sends
  back that cell's answer keys as plain data (JSON; sympy as srepr text). A test
  cell no check knows (a plain nbgrader course's asserts) runs whole, hidden
  tests included, and its outputs are judged as nbgrader judges them.
- This process, which the student's code never touches, picks the variant
  from the submission's directory name (`variants.variant_for`), grades the
  answers with `Problem.grade`, and records the points in nbgrader's own
  gradebook, so that `nbgrader export`, `generate_feedback` and formgrader
  work unchanged. It also writes `autograded/<student>/<assignment>/<nb>.ipynb`
  with nbgrader-style outputs: each graded test cell prints its feedback lines
  and shows its points as its execute_result.

Per-cell semantics follow nbgrader's: cells run in order; locked and test cells
are overwritten with the instructor's versions (nbgrader's own ClearOutput and
OverwriteCells preprocessors, fed from a snapshot of the gradebook, and
`sanitize.deduplicate` for repeated cell ids); missing cells are re-added;
manually graded cells are left to formgrader. Unlike plain nbgrader, a test cell
the checks know is graded by its answers, each on its own: a visible check that
raises costs no answer its points, and output on stderr (a warning) never zeroes
it. A test cell no check knows scores 0 on an error or on output on stderr, as
under plain nbgrader.

With `--scheduler`, the grading of each submission runs as a task on a Dask
cluster instead of a local process pool (`graders.engine.cluster`); everything else
here, journal and gradebook included, is the same, and runs in this process.
The gradebook may be PostgreSQL: `record` then holds a per-student advisory
lock, so several graders can write one gradebook at once.

With `grades_only` (the gate's runs, whose only use is their grades), figures are built
but not rasterized to PNG and no declared mistakes are kept for later students; every
grade is what it would be otherwise.

Every submission is journaled under `.chapter/autograde/<assignment>/`, keyed
by a hash of the submission, the instructor's notebooks and the grader, so a
re-run changes nothing and a run killed halfway resumes where it stopped.
"""
from __future__ import annotations

import dataclasses
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from graders.engine.exchange import close_course, retimed_lines, set_aside_lines
from graders.engine.course_dir import check_data_files, discover, limits_from, load_config, load_course
from graders.engine.grading import SubmissionResult
from graders.engine.html_filters import page_warnings
from graders.engine.journal import Journal, fingerprint, submission_key
from graders.engine.record_io import artifacts_present, untimed
from graders.engine.run import GradingRun, late_penalties, without_text
from graders.engine.signals import Stopped, stop_signals
from graders.engine.summary import Report, isolation_warnings
from graders.engine.time_limits import for_notebook
from graders.engine.warm import zygote_for
from graders.sandbox.zygote import Limits, Zygote

if TYPE_CHECKING:
    from typing import Unpack

SET_ASIDE_SHOWN = 20       # set-aside submissions the summary names; anyone can make thousands


class Options(TypedDict, total=False):
    """`autograde`'s keyword parameters, each with its type; `DEFAULTS` holds what an absent one is."""
    workers: int | None           # local grading processes (None: one per CPU this process may use)
    limits: Limits | None         # the sandbox's limits (None: the course's nbgrader_config.py)
    force: bool                   # grade again what the journal already holds
    progress: bool                # a progress bar on stderr
    isolate: bool                 # sandbox namespaces and seccomp (False: tests only)
    zygote: Zygote | None         # a running zygote to grade with (None: one of this run's own)
    students: list | None         # only these students (None: every submission)
    out: object                   # where the summary goes: "stdout", an open file, or None
    scheduler: str | None         # a Dask scheduler's address: grade there (graders.engine.cluster)
    allow_degraded: bool          # grade even where an isolation layer is unavailable
    grades_only: bool             # the gate's runs: no PNGs, no declared mistakes kept


DEFAULTS: Options = {"workers": None, "limits": None, "force": False, "progress": True, "isolate": True,
                     "zygote": None, "students": None, "out": "stdout", "scheduler": None,
                     "allow_degraded": False, "grades_only": False}


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def autograde(root, assignment: str, **options: Unpack[Options]) -> Report:
    """Grade every submission of `assignment` in the course at `root`; see the module docstring.

    The keyword parameters are `Options`' (a name it does not have is a TypeError, as for any
    function). With `scheduler` (a Dask scheduler's address), each submission is graded as a
    task on that cluster's workers (`graders.engine.cluster`); the journal, the gradebook and
    the autograded folder are still written here, once per submission.

    SIGTERM or SIGINT stops the run: sandboxes and workers are killed, scratch folders
    removed, every submission already graded stays recorded, and SystemExit(128 + signal)
    is raised; the next run resumes where this one stopped.
    """
    import signal
    unknown = sorted(set(options) - set(DEFAULTS))
    if unknown:
        raise TypeError(f"autograde() got unexpected keyword arguments: {', '.join(unknown)}")
    chosen: Options = {**DEFAULTS, **options}
    try:
        with stop_signals():
            return _autograde(root, assignment, chosen)
    except Stopped as stop:
        name = signal.Signals(stop.signum).name
        print(f"autograde {assignment}: stopped by {name}; what was graded is recorded, and the next "
              "run resumes from there", file=sys.stderr)
        raise SystemExit(128 + stop.signum) from None


def _autograde(root, assignment: str, options: Options) -> Report:
    started = time.monotonic()
    root = Path(root).resolve()
    zygote = options["zygote"]
    own_zygote = zygote is None and not options["scheduler"]
    if own_zygote:   # it preloads (seconds) while the course, journal and gradebook are read
        zygote = zygote_for(root, assignment, options["isolate"], options["allow_degraded"])
    try:
        return _grade_course(root, assignment, options, zygote, started)
    finally:
        if own_zygote:
            zygote.close()


def _grade_course(root: Path, assignment: str, options: Options, zygote, started: float) -> Report:
    config = load_config(root)
    course = load_course(root, assignment, config)
    if options["grades_only"]:
        course = dataclasses.replace(course, grades_only=True)
    limits = options["limits"] or limits_from(config)
    workers = options["workers"] or default_workers()
    run = GradingRun(course, limits, Journal(course), Report(assignment, workers=workers),
                     late=late_penalties(config), workers=workers, scheduler=options["scheduler"],
                     isolate=options["isolate"], allow_degraded=options["allow_degraded"])
    report = run.report
    report.warnings += page_warnings(config)
    report.time_limits = {name: (for_notebook(limits, seconds).notebook_seconds, seconds is not None
                                 and seconds < limits.notebook_seconds)
                          for name, seconds in course.time_limits.items()}
    report.set_aside = set_aside_lines(root, assignment, most=SET_ASIDE_SHOWN) + retimed_lines(root, assignment)
    close_course(root, course.db_url)      # and warns, once, when other accounts can reach the course
    everyone = discover(course)
    if options["students"] is not None:
        everyone = [s for s in everyone if s in options["students"]]
    check_data_files(course, limits)
    todo = _reuse(run, everyone, fingerprint(course, limits), options["force"])
    if todo and run.scheduler:
        from graders.engine.cluster import grade_on_cluster
        run.progress = _progress(len(everyone), report.reused, assignment, options["progress"])
        try:
            grade_on_cluster(run, todo)
        finally:
            run.progress.close()
    elif todo:
        from graders import problems
        from graders.engine.local_pool import grade_locally
        for name in course.notebooks:   # import the assignment's problems while the zygote warms up:
            problems.known(name)        # the workers inherit them
        report.isolation = zygote.isolation
        report.sandbox_start = zygote.start_seconds()
        report.warnings += isolation_warnings(zygote)
        for warning in report.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        run.progress = _progress(len(everyone), report.reused, assignment, options["progress"])
        try:
            grade_locally(run, zygote, todo)
        finally:
            run.progress.close()
    close_course(root, course.db_url)      # autograded/ and the journal, made by this run
    report.seconds = time.monotonic() - started
    out = options["out"]
    if out == "stdout":   # the stdout of the moment of printing (redirect_stdout, a test's capture)
        out = sys.stdout
    if out is not None:
        print(report.summary(), file=out)
    return report


def _reuse(run: GradingRun, everyone: list, base: str, force: bool) -> list:
    """Key every submission (`run.keys`), take what the journal already holds, and return the
    students left to grade."""
    from nbgrader.api import Gradebook
    course, report, todo = run.course, run.report, []
    with Gradebook(course.db_url, course.course_id) as gb:
        for student in everyone:
            run.keys[student] = key = submission_key(course, student, base)
            entry = None if force else run.journal.get(student, key)
            if entry is None:
                todo.append(student)
                continue
            # graded before (perhaps by a run killed halfway): re-apply what is not yet recorded
            result = SubmissionResult.from_json(entry["result"])
            if entry["state"] != "recorded" or not artifacts_present(gb, course, result):
                if not run.accept(gb, result, fresh=False):
                    continue          # that student's failure, reported; the class goes on
            else:
                report.results[student] = without_text(result)
                why = untimed(course, student)
                if why:
                    report.untimed[student] = why
            report.reused += 1
    return todo


def _progress(total, done, assignment, enabled):
    from tqdm import tqdm
    tqdm.monitor_interval = 0
    return tqdm(total=total, initial=done, unit="student", desc=f"autograde {assignment}",
                disable=not enabled, file=sys.stderr, dynamic_ncols=True, smoothing=0.1)
