"""`chapter autograde ASSIGNMENT`: grade every submission outside the students' interpreters.

Plain `nbgrader autograde` runs a student's cells and the hidden tests in one
kernel, so the student's code can rewrite the tests, read the gradebook or
leave a process behind. Here the two are split:

- The student's cells run in a sandbox (`graders.sandbox.zygote`): a process forked
  from a warm zygote that cannot import `graders`, sees no course files, has no
  network and runs under rlimits. At each graded test cell it runs the cell's
  VISIBLE part (hidden tests removed) and sends back that cell's answer keys
  as plain data (JSON; sympy as srepr text).
- This process, which the student's code never touches, picks the variant
  from the submission's directory name (`variants.variant_for`), grades the
  answers with `Problem.grade`, and records the points in nbgrader's own
  gradebook, so that `nbgrader export`, `generate_feedback` and formgrader
  work unchanged. It also writes `autograded/<student>/<assignment>/<nb>.ipynb`
  with nbgrader-style outputs: each graded test cell prints its feedback lines
  and shows its points as its execute_result.

Per-cell semantics follow nbgrader's: cells run in order; a test cell whose
visible part raises scores 0; locked and test cells are overwritten with the
instructor's versions (nbgrader's own ClearOutput, DeduplicateIds and
OverwriteCells preprocessors, fed from a snapshot of the gradebook); missing
cells are re-added; manually graded cells are left to formgrader. Unlike
plain nbgrader, output on stderr (a warning) never zeroes a cell.

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
import functools
import os
import sys
import time
from pathlib import Path

from graders.engine.exchange import close_course, set_aside_lines
from graders.engine.course_dir import _quiet, check_data_files, discover, limits_from, load_config, load_course
from graders.engine.grading import SubmissionResult, grade_submission, task_seconds, warm_references
from graders.engine.journal import Journal, fingerprint, submission_key
from graders.engine.record_io import _artifacts_present, accept, untimed
from graders.engine.signals import Stopped, _stop_signals
from graders.engine.summary import Report, isolation_warnings
from graders.engine.time_limits import for_notebook
from graders.sandbox.zygote import Limits, SandboxUnavailable, Zygote


_WORKER = {}


def _init_worker(course, limits, close_fds):
    for fd in close_fds:
        try:
            os.close(fd)
        except OSError:
            pass
    _WORKER.update(course=course, limits=limits)


def _grade_task(request):
    student, socket_path, key = request
    course = _WORKER["course"]
    warm_references(course, student)
    try:
        result = grade_submission(course, student, socket_path, _WORKER["limits"], key)
    except SandboxUnavailable as exc:
        return "infra", str(exc)
    warm_references(course, student, after=result)
    return "ok", result


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def autograde(root, assignment: str, **options) -> Report:
    """Grade every submission of `assignment` in the course at `root`; see the module docstring.

    With `scheduler` (a Dask scheduler's address), each submission is graded as a task on
    that cluster's workers (`graders.engine.cluster`); the journal, the gradebook and the
    autograded folder are still written here, once per submission.

    SIGTERM or SIGINT stops the run: sandboxes and workers are killed, scratch folders
    removed, every submission already graded stays recorded, and SystemExit(128 + signal)
    is raised; the next run resumes where this one stopped.
    """
    import signal
    try:
        with _stop_signals():
            return _autograde(root, assignment, **options)
    except Stopped as stop:
        name = signal.Signals(stop.signum).name
        print(f"autograde {assignment}: stopped by {name}; what was graded is recorded, and the next "
              "run resumes from there", file=sys.stderr)
        raise SystemExit(128 + stop.signum) from None


def _autograde(root, assignment: str, workers: int | None = None, limits: Limits | None = None,
               force: bool = False, progress: bool = True, isolate: bool = True, zygote: Zygote | None = None,
               students: list | None = None, out="stdout", scheduler: str | None = None,
               allow_degraded: bool = False, grades_only: bool = False) -> Report:
    started = time.monotonic()
    root = Path(root).resolve()
    own_zygote = zygote is None and not scheduler
    if own_zygote:   # it preloads (seconds) while the course, journal and gradebook are read
        zygote = Zygote(isolate=isolate, secrets=[root], allow_degraded=allow_degraded).start()
    try:
        return _grade_course(root, assignment, started, zygote, workers, limits, force, progress, students,
                             out, scheduler, allow_degraded, grades_only, isolate)
    finally:
        if own_zygote:
            zygote.close()


def _grade_course(root, assignment, started, zygote, workers, limits, force, progress, students, out,
                  scheduler, allow_degraded, grades_only, isolate) -> Report:
    config = load_config(root)
    course = load_course(root, assignment, config)
    if grades_only:
        course = dataclasses.replace(course, grades_only=True)
    limits = limits or limits_from(config)
    workers = workers or default_workers()
    report = Report(assignment, workers=workers)
    report.time_limits = {name: (for_notebook(limits, seconds).notebook_seconds, seconds is not None
                                 and seconds < limits.notebook_seconds)
                          for name, seconds in course.time_limits.items()}
    report.set_aside = set_aside_lines(root, assignment)
    close_course(root, course.db_url)      # and warns, once, when other accounts can reach the course
    everyone = discover(course)
    if students is not None:
        everyone = [s for s in everyone if s in students]
    check_data_files(course, limits)
    base = fingerprint(course, limits)
    journal = Journal(course)
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import AssignLatePenalties
    late = AssignLatePenalties(config=config, log=_quiet)
    late.init_plugin()
    todo, keys = [], {}
    with Gradebook(course.db_url, course.course_id) as gb:
        for student in everyone:
            keys[student] = key = submission_key(course, student, base)
            entry = None if force else journal.get(student, key)
            if entry is None:
                todo.append(student)
                continue
            # graded before (perhaps by a run killed halfway): re-apply what is not yet recorded
            result = SubmissionResult.from_json(entry["result"])
            if entry["state"] != "recorded" or not _artifacts_present(gb, course, result):
                if not accept(gb, course, journal, late.plugin_inst, report, result, fresh=False):
                    continue          # that student's failure, reported; the class goes on
            else:
                report.results[student] = result
                why = untimed(course, student)
                if why:
                    report.untimed[student] = why
            report.reused += 1
    if todo and scheduler:
        from graders.engine.cluster import grade_on_cluster
        bar = _progress(len(everyone), report.reused, assignment, progress)
        try:
            grade_on_cluster(scheduler, course, limits, todo, keys, journal, late.plugin_inst, report, bar,
                             isolate=isolate, allow_degraded=allow_degraded)
        finally:
            bar.close()
    elif todo:
        from graders import problems
        for name in course.notebooks:   # import the assignment's problems while the zygote warms up:
            problems.known(name)        # the workers inherit them
        report.isolation = zygote.isolation
        report.warnings += isolation_warnings(zygote)
        for warning in report.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        bar = _progress(len(everyone), report.reused, assignment, progress)
        try:
            _run_pool(course, limits, zygote, todo, keys, workers, journal, late.plugin_inst, report, bar)
        finally:
            bar.close()
    close_course(root, course.db_url)      # autograded/ and the journal, made by this run
    report.seconds = time.monotonic() - started
    if out == "stdout":   # the stdout of the moment of printing (redirect_stdout, a test's capture)
        out = sys.stdout
    if out is not None:
        print(report.summary(), file=out)
    return report


def _progress(total, done, assignment, enabled):
    from tqdm import tqdm
    tqdm.monitor_interval = 0
    return tqdm(total=total, initial=done, unit="student", desc=f"autograde {assignment}",
                disable=not enabled, file=sys.stderr, dynamic_ncols=True, smoothing=0.1)


def _run_pool(course, limits, zygote, todo, keys, workers, journal, late, report, bar):
    """Grade `todo` in `workers` forked processes, each submission under its task time limit.

    A submission past its limit has its worker killed and is reported, never retried (it
    would only stall again); a worker that dies, or a sandbox that cannot be reached, is an
    infrastructure fault, retried twice. A dying zygote is restarted between rounds.
    """
    from nbgrader.api import Gradebook
    from graders.engine.local_pool import LocalPool
    attempts = {s: 0 for s in todo}
    queue = list(todo)
    seconds = task_seconds(course, limits)
    while queue:
        close = [zygote.process.stdin.fileno(), zygote.process.stdout.fileno()]
        retry = []
        pool = LocalPool(min(workers, len(queue)), _grade_task,
                         init=functools.partial(_init_worker, course, limits, close))
        with pool, Gradebook(course.db_url, course.course_id) as gb:
            socket_path = zygote.socket_path
            for student, kind, value, _took in pool.results(queue, seconds,
                                                           request=lambda s: (s, socket_path, keys[s])):
                if kind == "ok":
                    kind, value = value
                if kind == "ok":
                    accept(gb, course, journal, late, report, value)
                    bar.update(1)
                    continue
                if kind == "timeout":
                    report.failed[student] = value
                    bar.update(1)
                    continue
                attempts[student] += 1
                if attempts[student] < 3:
                    retry.append(student)
                else:
                    report.failed[student] = value
                    bar.update(1)
        if retry and not zygote.alive():
            zygote.close()
            zygote.start().wait_ready()
        queue = retry
