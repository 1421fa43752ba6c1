"""Benchmark: plain `nbgrader autograde` against `chapter autograde` on one synthetic class.

    .venv/bin/python bench/autograde_bench.py [--students 40] [--assignment worked] [--workers N] [--no-plain] [--roles]

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

Then, in this process, the class (or --sample notebooks of it) is graded once more, one
notebook at a time, through the engine's own steps (as one worker grades a submission),
and each notebook's time is broken down: its share of the student's references (computed
here once a variant, as a worker does), reading and preparing it (trusted), the fork and
control group, namespaces and root, uid + rlimits + seccomp, IPython start, the cells
themselves, moving the answers, tear-down, and the trusted comparison. Timestamps come
from the monitor (CLOCK_MONOTONIC is one clock for every process of the machine). The
last lines compare chapter autograde with the cells' own time (their mean on every core:
the ceiling) and split the difference: the zygote's start (from the run's summary), each
notebook's work beyond its cells, and the rest. Last, from the run itself (the breakdown
comes minutes later, and this machine's speed drifts): the machine's busy core-seconds
during chapter autograde (/proc/stat; the bench expects a quiet machine), split into its
sandboxes' own (their control groups, from the run's journal) and everything else, and the
share of the run's time that the sandboxes alone would take on every core. With --roles, one
more run under perf gives the CPU time of every process of the command by its role
(bench/roles.py): the command, its grading workers and their children, each zygote, the
monitors, the sandboxes, and the idle cores.

It is not part of the test suite: plain nbgrader takes minutes.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graders import problems  # noqa: E402
from graders.engine.scratch import make_course, nbgrader  # noqa: E402

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


def machine_busy() -> float:
    """Core-seconds this machine has been busy since boot (/proc/stat: every state but idle and
    iowait), so that work the command's own accounts miss (a process it did not wait for, the
    kernel's threads) is counted too; on a quiet machine, the difference over a run is the run's."""
    with open("/proc/stat") as fh:
        ticks = [int(x) for x in fh.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


class Timed(NamedTuple):
    wall: float       # seconds
    cpu: float        # CPU seconds of the command and every process it waited for
    output: str       # its stdout and stderr
    busy: float       # the machine's busy core-seconds meanwhile (machine_busy)


def timed(args: list[str], cwd: Path) -> Timed:
    """Run `args` in `cwd` and measure it (exit 0 or 1: a run with failures is still measured)."""
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy = machine_busy()
    started = time.monotonic()
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    busy = machine_busy() - busy
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if result.returncode not in (0, 1):
        print(result.stdout[-3000:], result.stderr[-3000:])
        raise SystemExit(f"{args[0]} failed with {result.returncode}")
    tail = [line for line in (result.stdout + result.stderr).splitlines() if "autograde" in line][-3:]
    for line in tail:
        print("   ", line[:200])
    return Timed(elapsed, cpu, result.stdout + result.stderr, busy)


STAGES = ("references (trusted)", "prepare (trusted)", "fork + control group", "namespaces and root", "uid, rlimits, seccomp",
          "IPython start", "cells", "moving the answers", "tear-down", "trusted comparison")


def breakdown(course: Path, assignment: str, sample: int) -> dict:
    """Median seconds per stage over `sample` notebooks graded one at a time in this process."""
    import statistics

    from graders.engine import course_dir
    from graders.engine import grading
    from graders.engine.warm import preload_for_assignment
    from graders.sandbox.zygote import Zygote
    config = course_dir.load_config(course)
    loaded = course_dir.load_course(course, assignment, config)
    limits = course_dir.limits_from(config)
    students = course_dir.discover(loaded)
    for name in loaded.notebooks:   # as autograde imports them before its workers fork
        problems.known(name)
    rows = []
    with Zygote(secrets=[course], preload=preload_for_assignment(course, assignment)) as zygote:   # as autograde's
        # a zygote with torch is ready before torch is (a second zygote imports it): wait for that one
        # too, so that no notebook's time below includes the start
        zygote.run({"cells": [{"index": 0, "source": "import torch"}], "env": {}}, limits)
        for student in students:
            if len(rows) >= sample:
                break
            # as a worker grades one submission (task.grade_one): the student's references first, in
            # this long-lived process (remembered for the next student of that variant), their time
            # shared by the submission's notebooks; after grading, the mistakes a failed check needs
            started = time.monotonic()
            grading.warm_references(loaded, student)
            warm, results = time.monotonic() - started, []
            with grading.SharedGrading(loaded, student) as shared:   # as grade_submission grades them
                got = breakdown_submission(loaded, student, zygote, limits, sample - len(rows), shared, results)
            for row in got:
                row["references (trusted)"] = warm / len(got)
                row["total"] += warm / len(got)
            rows += got
            grading.warm_references(loaded, student, after=grading.SubmissionResult(student, "", notebooks=results))
    if not rows:
        return {}
    return {key: statistics.median(r[key] for r in rows) for key in rows[0]} | {
        "notebooks": len(rows), "cells_mean": statistics.fmean(r["cells"] for r in rows),
        "beyond_mean": statistics.fmean(r["total"] - r["cells"] for r in rows),
        "beyond_median": statistics.median(r["total"] - r["cells"] for r in rows)}


def breakdown_submission(loaded, student: str, zygote, limits, sample: int, shared, results=None) -> list[dict]:
    """The stages of up to `sample` of one student's notebooks, graded one at a time (each one's
    NotebookResult appended to `results`)."""
    from graders.engine import grading
    from graders.engine import sanitize
    from graders.engine import snapshot
    from graders.sandbox.zygote import run_job, socket_for
    assignment, rows = loaded.assignment, []
    for name, instructor in loaded.notebooks.items():
        if len(rows) >= sample:
            break
        path = loaded.submission_dir(student) / f"{name}.ipynb"
        t0 = time.monotonic()
        try:
            nb = snapshot.read_submission(path)
            nb, _ = sanitize.sanitize(nb, instructor, assignment, student, loaded.begin_hidden, loaded.end_hidden)
            job, tests = grading.build_job(loaded, instructor, nb, student)
        except Exception:  # noqa: BLE001 - a broken submission: nothing to time
            continue
        t1 = time.monotonic()
        run = run_job(socket_for(zygote.socket_path, job), job, limits)   # as grade_notebook sends it
        t2 = time.monotonic()
        out = grading.NotebookResult(name)
        grading.grade_cells(loaded, instructor, nb, student, run, tests, out, shared=shared)
        t3 = time.monotonic()
        if results is not None:
            results.append(out)
        u, cells = run.usage, [c for c in run.cells.values() if isinstance(c.get("started_at"), float)]
        if not cells or "isolated_at" not in u:
            continue
        first = min(c["started_at"] for c in cells)
        last = max(c["started_at"] + c.get("seconds", 0) + c.get("answer_seconds", 0) for c in cells)
        answers = sum(c.get("answer_seconds", 0) for c in cells)
        rows.append({
            "prepare (trusted)": t1 - t0,
            "fork + control group": u["sandbox_at"] - u["fork_at"],
            "namespaces and root": u["root_at"] - u["sandbox_at"],
            "uid, rlimits, seccomp": u["isolated_at"] - u["root_at"],
            "IPython start": first - u["isolated_at"],
            "cells": sum(c.get("seconds", 0) for c in cells),
            "moving the answers": answers + max(0.0, t2 - u["end_at"]),
            "tear-down": u["end_at"] - last,
            "trusted comparison": t3 - t2,
            "total": t3 - t0,
            "memory_peak": u.get("memory_peak") or 0,
        })
    return rows


def print_ceiling(stages: dict, notebooks: int, t_plain: float | None, t_ours: float) -> None:
    """What the notebooks' own cells allow: their mean time on every core, with nothing else."""
    if not stages:
        return
    cores = os.cpu_count() or 1
    floor = notebooks * stages["cells_mean"] / cores
    against = ("" if t_plain is None else
               f", a ceiling of {t_plain / floor:.1f}x; chapter autograde reached {t_plain / t_ours:.1f}x")
    print(f"the cells alone (mean {stages['cells_mean'] * 1000:.1f} ms a notebook, on {cores} cores, nothing "
          f"else): {floor:.1f} s for the class{against}; {100 * floor / t_ours:.0f} % of chapter autograde's "
          "time the cells'")


def print_gap(stages: dict, notebooks: int, t_ours: float, output: str) -> None:
    """Where chapter autograde's time beyond the cells' own goes: the zygote's start as the run's
    summary gives it, each notebook's work beyond its cells (the breakdown's mean), and the rest."""
    found = re.search(r"sandbox ready after ([0-9.]+) s", output)
    if not stages or not found:
        return
    ready = float(found.group(1))
    cores = os.cpu_count() or 1
    floor = notebooks * stages["cells_mean"] / cores
    beyond = notebooks * stages["beyond_mean"] / cores
    rest = t_ours - floor - ready - beyond
    print(f"chapter autograde's {t_ours - floor:.1f} s beyond the cells' own: the zygote's start {ready:.1f} s "
          f"(in the run), each notebook's work beyond its cells {beyond:.1f} s "
          f"({stages['beyond_mean'] * 1000:.1f} ms mean x {notebooks} / {cores} cores), the rest {rest:.1f} s "
          "(process start and imports not hidden by the zygote's, recording, the last task's tail)")


def sandbox_cpu(course: Path, assignment: str) -> float:
    """The CPU seconds of every sandbox of chapter autograde's run on `course`, as each one's
    control group counted them (the cells, with IPython's start and the sandbox's exit), read
    from the run's journal."""
    from graders.engine.course_dir import load_course
    from graders.engine.journal import Journal
    total = 0.0
    for path in Journal(load_course(course, assignment)).dir.glob("*.json"):
        for nb in json.loads(path.read_text()).get("result", {}).get("notebooks", []):
            total += (nb.get("run") or {}).get("cpu_seconds") or 0.0
    return total


def print_cpu_bound(notebooks: int, t_ours: float, busy: float, sandboxes: float) -> None:
    """The run's work against its time, all measured in the run itself (the breakdown comes
    later, on a machine whose speed may have changed): the machine's busy core-seconds, the
    sandboxes' share of them, and how long each takes with no core ever idle."""
    cores = os.cpu_count() or 1
    packed, floor = busy / cores, sandboxes / cores
    print(f"in the run: the machine was busy {busy:.1f} core-s, its sandboxes {sandboxes:.1f} (their control "
          f"groups), everything else {busy - sandboxes:.1f} ({1000 * (busy - sandboxes) / notebooks:.0f} ms a "
          f"notebook, fixed costs included). On {cores} cores with none idle, the sandboxes alone take "
          f"{floor:.1f} s and all the work {packed:.1f} s; the run took {t_ours:.1f} s: "
          f"{100 * floor / t_ours:.0f} % of it the sandboxes' own time ({100 * floor / packed:.0f} % at best "
          f"with this work), idle cores {t_ours - packed:.1f} s")


def print_roles_run(scratch: Path, command: list[str], ours: Path, notebooks: int) -> None:
    """chapter autograde once more, on a fresh copy of the class, under perf: its CPU time by process."""
    import roles
    reason = roles.why_not()
    if reason:
        print(f"no CPU time by process: {reason}")
        return
    again = scratch / "roles"
    shutil.copytree(scratch / "base", again)
    command = [str(again) if part == str(ours) else part for part in command]
    roles.print_roles(roles.record_roles(command, again), notebooks)


def print_breakdown(stages: dict) -> None:
    if not stages:
        print("breakdown: no notebook could be timed")
        return
    print(f"per-notebook breakdown (median of {stages['notebooks']} notebooks, graded one at a time):")
    for key in STAGES:
        print(f"   {key:<24} {stages[key] * 1000:8.1f} ms  {100 * stages[key] / stages['total']:5.1f} %")
    print(f"   {'total':<24} {stages['total'] * 1000:8.1f} ms   (peak memory of a sandbox's control group: "
          f"{stages['memory_peak'] / (1 << 20):.0f} MiB)")
    print(f"   {'beyond the cells':<24} {stages['beyond_median'] * 1000:8.1f} ms median, "
          f"{stages['beyond_mean'] * 1000:.1f} ms mean")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--assignment", default="worked")
    parser.add_argument("--notebooks", type=int, default=5)
    parser.add_argument("--workers", type=int, help="for chapter autograde (default: every core)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch courses")
    parser.add_argument("--no-plain", action="store_true",
                        help="skip plain nbgrader (minutes): no speed-up and no score comparison, the rest as usual")
    parser.add_argument("--roles", action="store_true",
                        help="one more run of chapter autograde under perf: its CPU time by process (bench/roles.py)")
    parser.add_argument("--sample", type=int, help="notebooks in the time breakdown (default: the whole class, "
                        "so that the first student's costs weigh as they do in the run)")
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
        if not args.no_plain:
            shutil.copytree(base, plain)
        shutil.copytree(base, ours)
        notebooks = args.students * len(names)

        if not args.no_plain:
            print("plain nbgrader autograde ...")
            print(f"   load average before: {os.getloadavg()[0]:.2f}")
            t_plain, cpu_plain, _, busy_plain = timed([str(bin_dir / "nbgrader"), "autograde", args.assignment,
                                                       "--force"], plain)
        print("chapter autograde ...")
        command = [str(bin_dir / "chapter"), "autograde", args.assignment, "--course", str(ours), "--no-progress"]
        if args.workers:
            command += ["--workers", str(args.workers)]
        print(f"   load average before: {os.getloadavg()[0]:.2f}")
        t_ours, cpu_ours, output, busy_ours = timed(command, ours)

        got_ours = scores(ours, args.assignment)
        got_plain = got_ours if args.no_plain else scores(plain, args.assignment)
        honest = [s for s, kind in kinds.items() if kind != "broken"]
        mismatches = [(s, n, got_plain.get((s, n)), got_ours.get((s, n))) for s in honest for n in names
                      if got_plain.get((s, n)) != got_ours.get((s, n))]
        compared = len(honest) * len(names)
        print()
        print(f"class: {args.students} students x {len(names)} notebooks = {notebooks} notebooks "
              f"({', '.join(f'{k}: {list(kinds.values()).count(k)}' for k in dict.fromkeys(KINDS))})")
        if not args.no_plain:
            print(f"plain nbgrader autograde: {t_plain:7.1f} s  {notebooks / t_plain:6.2f} notebooks/s  "
                  f"{args.students / t_plain:6.3f} students/s   CPU {cpu_plain:7.1f} s, machine busy "
                  f"{busy_plain:7.1f} core-s")
        print(f"chapter autograde:        {t_ours:7.1f} s  {notebooks / t_ours:6.2f} notebooks/s  "
              f"{args.students / t_ours:6.3f} students/s   CPU {cpu_ours:7.1f} s, machine busy {busy_ours:7.1f} core-s")
        if not args.no_plain:
            # the CPU column misses what a command did not wait for (chapter's second zygote, before
            # the first one reaped it): the machine's busy time compares the two
            print(f"speed-up: {t_plain / t_ours:.1f}x wall clock ({busy_plain / busy_ours:.1f}x less machine busy "
                  f"time) on {os.cpu_count()} cores")
        stages = breakdown(scratch / "base", args.assignment, args.sample or notebooks)
        print_breakdown(stages)
        print_ceiling(stages, notebooks, None if args.no_plain else t_plain, t_ours)
        print_gap(stages, notebooks, t_ours, output)
        print_cpu_bound(notebooks, t_ours, busy_ours, sandbox_cpu(ours, args.assignment))
        if args.roles:
            print_roles_run(scratch, command, ours, notebooks)
        digest = hashlib.sha256(repr(sorted(got_ours.items())).encode()).hexdigest()[:12]
        if args.no_plain:
            print(f"no comparison with plain nbgrader (--no-plain); scores digest {digest}")
            return 0
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
