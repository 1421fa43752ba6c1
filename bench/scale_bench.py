"""Benchmark: does `chapter autograde` stay flat as the class grows (50, 200, 1,000 students)?

    .venv/bin/python bench/scale_bench.py [--sizes 50,200,1000] [--assignment basics]
        [--notebook NAME] [--workers N] [--figure bench/out/scale.png] [--no-plain]

One scratch course with ONE cheap notebook (default: the first notebook of `basics` with a
registered problem) and a synthetic class, made by bench/autograde_bench.py's `build` (the
same mix: correct, partly wrong, blank, mixed, broken). For each size N, a copy of the course
holding the first N students is graded by `chapter autograde` in a subprocess, and three
things are measured:

  time per notebook  the command's wall time over its notebooks (process start and the
                     zygote's start included), and the steady rate: the time between the
                     first and the last submission recorded, over the notebooks in between
  trusted peak RSS   the `chapter autograde` process's own peak resident memory
                     (getrusage(RUSAGE_SELF).ru_maxrss, read by that process as it ends:
                     its forked pool workers, the zygote and the sandboxes are other
                     processes and are not counted)
  gradebook writes   the time of every `record_io.record` call (one per submission: the
                     gradebook transaction), in total and per submission

and, to tell a fixed cost from one that grows with the class, the seconds from the process's
start to its first record (imports, the zygote, reading the course and journal) and from its
last record to its end.

The subprocess is this script in its `--trusted` mode: it wraps `record_io.record` with a
timer, runs `graders.cli.main(["autograde", ...])` in the same process (the very code of the
`chapter` command) and writes what it measured to a JSON file; nothing in the engine is
changed or instrumented. At the smallest size only, the same class is also graded by plain
`nbgrader autograde` (it is slow), and the scores of the honest submissions are compared.

It prints a table and writes a figure (PNG) of the three quantities against N.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def trusted_run(stats_path: str, argv: list[str]) -> int:
    """Run `chapter ARGV` in this process, timing each record(); write the figures to stats_path."""
    import resource

    from graders import cli
    from graders.engine import record_io, run
    records, me, begun = [], os.getpid(), time.monotonic()
    original = record_io.record

    def timed_record(*args, **kwargs):
        started = time.monotonic()
        try:
            return original(*args, **kwargs)
        finally:
            records.append((started, time.monotonic() - started))

    record_io.record = run.record = timed_record       # run.GradingRun.accept calls run.record
    code = 1
    try:
        code = cli.main(argv)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    finally:
        if os.getpid() == me:                           # never in a forked worker
            Path(stats_path).write_text(json.dumps({
                "records": records, "begun": begun, "ended": time.monotonic(),
                "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
    return code


def class_of(base: Path, into: Path, students: list[str]) -> Path:
    """A copy of the course `base` whose submitted/ holds only `students`."""
    keep = set(students)
    submitted = base / "submitted"

    def ignore(folder, names):
        return [n for n in names if n not in keep] if Path(folder) == submitted else []

    shutil.copytree(base, into, ignore=ignore)
    return into


@contextlib.contextmanager
def scratch_folder(keep: bool):
    """A scratch folder for the courses, removed at the end unless `keep`."""
    folder = Path(tempfile.mkdtemp(prefix="scale-bench-"))
    try:
        yield folder
    finally:
        if keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


def grade(course: Path, assignment: str, students: int, notebooks: int, workers: int | None) -> dict:
    """`chapter autograde` on `course` in a subprocess (this script's --trusted mode); its figures."""
    stats = course / "scale-stats.json"
    command = [sys.executable, str(Path(__file__).resolve()), "--trusted", str(stats), "--",
               "autograde", assignment, "--course", str(course), "--no-progress"]
    if workers:
        command += ["--workers", str(workers)]
    started = time.monotonic()
    result = subprocess.run(command, cwd=course, capture_output=True, text=True)
    wall = time.monotonic() - started
    if result.returncode not in (0, 1) or not stats.exists():
        print(result.stdout[-3000:], result.stderr[-3000:])
        raise SystemExit(f"chapter autograde failed with {result.returncode}")
    data = json.loads(stats.read_text())
    records = data["records"]
    if not records:
        raise SystemExit("no record() call was timed: has the engine stopped calling run.record?")
    starts = sorted(start for start, _ in records)
    writes = sorted(seconds for _, seconds in records)
    steady = (starts[-1] - starts[0]) / ((len(starts) - 1) * notebooks) if len(starts) > 1 else float("nan")
    return {"students": students, "notebooks": students * notebooks, "wall": wall,
            "per_notebook": wall / (students * notebooks), "steady": steady,
            "before": starts[0] - data["begun"], "after": data["ended"] - max(s + d for s, d in records),
            "rss_mib": data["maxrss_kib"] / 1024, "recorded": len(records), "write_total": sum(writes),
            "write_median": statistics.median(writes), "write_p90": writes[int(0.9 * (len(writes) - 1))]}


def plain_nbgrader(course: Path, assignment: str, students: int, notebooks: int) -> dict:
    from autograde_bench import timed
    measured = timed([str(Path(sys.executable).parent / "nbgrader"), "autograde", assignment, "--force"], course)
    wall, cpu = measured.wall, measured.cpu
    return {"students": students, "wall": wall, "per_notebook": wall / (students * notebooks), "cpu": cpu}


def print_table(rows: list[dict], plain: dict | None) -> None:
    print()
    print(f"{'students':>8} {'notebooks':>9} {'wall s':>8} {'ms/notebook':>12} {'steady ms/nb':>13} "
          f"{'peak RSS MiB':>13} {'gradebook s':>12} {'ms/submission':>14} {'p90 ms':>7} {'before s':>9} {'after s':>8}")
    for r in rows:
        print(f"{r['students']:>8} {r['notebooks']:>9} {r['wall']:>8.1f} {1000 * r['per_notebook']:>12.1f} "
              f"{1000 * r['steady']:>13.1f} {r['rss_mib']:>13.1f} {r['write_total']:>12.2f} "
              f"{1000 * r['write_median']:>14.1f} {1000 * r['write_p90']:>7.1f} {r['before']:>9.1f} {r['after']:>8.1f}")
    if plain:
        print(f"plain nbgrader autograde at {plain['students']} students: {plain['wall']:.1f} s, "
              f"{1000 * plain['per_notebook']:.1f} ms a notebook ({plain['wall'] / rows[0]['wall']:.1f}x "
              f"chapter autograde's {rows[0]['wall']:.1f} s)")
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        print(f"from {first['students']} to {last['students']} students: time per notebook (steady) "
              f"x{last['steady'] / first['steady']:.2f}, trusted peak RSS x{last['rss_mib'] / first['rss_mib']:.2f}, "
              f"gradebook write per submission (median) x{last['write_median'] / first['write_median']:.2f}")


def plot(rows: list[dict], plain: dict | None, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.ticker
    import matplotlib.pyplot as plt
    sizes = [r["students"] for r in rows]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4), constrained_layout=True)
    ax = axes[0]
    ax.plot(sizes, [1000 * r["per_notebook"] for r in rows], "o-", label="chapter autograde, whole run")
    ax.plot(sizes, [1000 * r["steady"] for r in rows], "s--", label="chapter autograde, steady")
    if plain:
        ax.plot([plain["students"]], [1000 * plain["per_notebook"]], "k^", label="plain nbgrader")
        ax.set_yscale("log")
    ax.set_title("wall time per notebook")
    ax.set_ylabel("ms")
    ax.legend(fontsize=8)
    axes[1].plot(sizes, [r["rss_mib"] for r in rows], "o-")
    axes[1].set_title("trusted process peak RSS")
    axes[1].set_ylabel("MiB")
    axes[1].set_ylim(0, 1.2 * max(r["rss_mib"] for r in rows))
    axes[2].plot(sizes, [1000 * r["write_median"] for r in rows], "o-", label="median")
    axes[2].plot(sizes, [1000 * r["write_p90"] for r in rows], "s--", label="90th percentile")
    axes[2].set_title("gradebook write per submission")
    axes[2].set_ylabel("ms")
    axes[2].set_ylim(0, 1.2 * max(1000 * r["write_p90"] for r in rows))
    axes[2].legend(fontsize=8)
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xticks(sizes, [str(s) for s in sizes])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("students")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--trusted"]:
        return trusted_run(argv[1], argv[3:])
    from autograde_bench import build, pick_notebooks
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="50,200,1000", help="class sizes, comma-separated")
    parser.add_argument("--assignment", default="basics")
    parser.add_argument("--notebook", help="default: the first of the assignment with a registered problem")
    parser.add_argument("--workers", type=int, help="for chapter autograde (default: every core)")
    parser.add_argument("--figure", default=str(ROOT / "bench" / "out" / "scale.png"))
    parser.add_argument("--no-plain", action="store_true", help="skip plain nbgrader at the smallest size")
    parser.add_argument("--keep", action="store_true", help="keep the scratch courses")
    args = parser.parse_args(argv)
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    if not sizes or sizes[0] < 1:
        raise SystemExit("--sizes: positive class sizes, e.g. 50,200,1000")
    names = [args.notebook] if args.notebook else pick_notebooks(args.assignment, 1)
    if not names:
        raise SystemExit(f"no notebooks with registered problems in source/{args.assignment}")
    with scratch_folder(args.keep) as scratch:
        started = time.monotonic()
        print(f"building {sizes[-1]} students x 1 notebook ({names[0]}) in {scratch}", flush=True)
        base, kinds = build(scratch, args.assignment, names, sizes[-1])
        print(f"   built in {time.monotonic() - started:.0f} s", flush=True)
        everyone = sorted(kinds)
        rows, plain = [], None
        for n in sizes:
            course = class_of(base, scratch / f"class-{n}", everyone[:n])
            print(f"chapter autograde, {n} students (load average {os.getloadavg()[0]:.2f}) ...", flush=True)
            rows.append(grade(course, args.assignment, n, len(names), args.workers))
            print(f"   {rows[-1]['wall']:.1f} s, {rows[-1]['recorded']} submissions recorded", flush=True)
            if n == sizes[0] and not args.no_plain:
                from autograde_bench import scores
                other = class_of(base, scratch / f"plain-{n}", everyone[:n])
                print(f"plain nbgrader autograde, {n} students ...", flush=True)
                plain = plain_nbgrader(other, args.assignment, n, len(names))
                honest = [s for s in everyone[:n] if kinds[s] != "broken"]
                ours, theirs = scores(course, args.assignment), scores(other, args.assignment)
                differ = [s for s in honest for nb in names if ours.get((s, nb)) != theirs.get((s, nb))]
                plain["differ"] = differ
                print(f"   scores {'identical' if not differ else 'DIFFER'} on {len(honest)} honest submissions"
                      + (f": {', '.join(differ[:10])}" if differ else ""), flush=True)
            if not args.keep:
                shutil.rmtree(course, ignore_errors=True)
        print_table(rows, plain)
        plot(rows, plain, Path(args.figure))
        print(f"figure: {args.figure}   (whole benchmark {time.monotonic() - started:.0f} s)")
        return 1 if plain and plain["differ"] else 0


if __name__ == "__main__":
    sys.exit(main())
