"""Benchmark: autograding throughput on a Dask cluster of 1, 2 and 4 workers, beside plain nbgrader.

    .venv/bin/python bench/cluster_bench.py [--students 24] [--assignment worked] [--workers 1 2 4]

One synthetic class (built as in autograde_bench.py: correct, partly wrong, blank,
mixed and broken submissions, each student in their own variant) is copied once
per run, with the same gradebook, and graded:
  plain            `nbgrader autograde ASSIGNMENT --force`
  local            `chapter autograde ASSIGNMENT` (this machine's cores, no cluster)
  cluster N        `chapter autograde ASSIGNMENT --scheduler ADDRESS` against a
                   scheduler and N single-threaded `dask worker` processes on loopback
Each figure is the whole command's wall time, process start included. Each
cluster size is run twice: the first run includes starting a sandbox zygote on
every worker (once per worker's life), the second finds them warm, as a
deployment's long-running workers would be. Starting the workers themselves is
not timed. The script
prints throughput, the ratio to plain nbgrader and to one cluster worker, and
checks that every run gives the same scores (plain nbgrader on the honest
submissions only: it refuses a damaged notebook's whole submission).

Workers beyond the machine's cores cannot add throughput; the 4-worker run on a
2-core machine shows what oversubscription costs. It is not part of the test suite.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from autograde_bench import build, pick_notebooks, scores, timed  # noqa: E402

from graders.engine.cluster import LoopbackCluster  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=24)
    parser.add_argument("--assignment", default="worked")
    parser.add_argument("--notebooks", type=int, default=5)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--skip-plain", action="store_true", help="leave out plain nbgrader (minutes)")
    args = parser.parse_args(argv)
    bin_dir = Path(sys.executable).parent
    names = pick_notebooks(args.assignment, args.notebooks)
    scratch = Path(tempfile.mkdtemp(prefix="cluster-bench-"))
    notebooks = args.students * len(names)
    rows, got = [], {}
    try:
        print(f"building {args.students} students x {len(names)} notebooks in {scratch}")
        base, kinds = build(scratch, args.assignment, names, args.students)
        chapter = [str(bin_dir / "chapter"), "autograde", args.assignment, "--no-progress", "--force"]

        def run(label, command, cwd, cpu_known=True):
            print(f"{label} ...  (load average before: {os.getloadavg()[0]:.2f})")
            measured = timed(command, cwd)
            wall, cpu = measured.wall, measured.cpu
            rows.append((label, wall, cpu if cpu_known else None))
            got[label] = scores(cwd, args.assignment)

        if not args.skip_plain:
            plain = scratch / "plain"
            shutil.copytree(base, plain)
            run("plain nbgrader", [str(bin_dir / "nbgrader"), "autograde", args.assignment, "--force"], plain)
        local = scratch / "local"
        shutil.copytree(base, local)
        run(f"local ({os.cpu_count()} cores)", chapter + ["--course", str(local)], local)
        for n in args.workers:
            course = scratch / f"cluster-{n}"
            shutil.copytree(base, course)
            with LoopbackCluster(scratch / f"dask-{n}", workers=n) as cluster:
                command = chapter + ["--course", str(course), "--scheduler", cluster.address]
                run(f"cluster {n}, first run", command, course, cpu_known=False)
                run(f"cluster {n}, warm", command, course, cpu_known=False)

        print()
        print(f"class: {args.students} students x {len(names)} notebooks = {notebooks} notebooks, "
              f"on {os.cpu_count()} cores")
        plain_wall = next((wall for label, wall, _ in rows if label == "plain nbgrader"), None)
        one = {kind: next((wall for label, wall, _ in rows if label == f"cluster 1, {kind}"), None)
               for kind in ("first run", "warm")}
        print(f"{'run':<22} {'wall s':>8} {'CPU s':>8} {'notebooks/s':>12} {'vs plain':>9} {'vs 1 worker':>12}")
        for label, wall, cpu in rows:
            base_one = one.get(label.split(", ")[-1]) if label.startswith("cluster") else None
            print(f"{label:<22} {wall:8.1f} {(f'{cpu:.1f}' if cpu is not None else '-'):>8} "
                  f"{notebooks / wall:12.2f} "
                  f"{(f'{plain_wall / wall:.1f}x' if plain_wall else '-'):>9} "
                  f"{(f'{base_one / wall:.2f}x' if base_one else '-'):>12}")
        print("(CPU s: the command and its children; a cluster's workers are not its children)")
        honest = {s for s, kind in kinds.items() if kind != "broken"}
        reference = got[rows[-1][0]]
        differ = []
        for label, table in got.items():
            keys = [k for k in reference if label != "plain nbgrader" or k[0] in honest]
            if any(table.get(k) != reference[k] for k in keys):
                differ.append(label)
        if differ:
            print(f"MISMATCH: {', '.join(differ)} scored differently from {rows[-1][0]}")
            return 1
        print("identical scores in every run")
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
