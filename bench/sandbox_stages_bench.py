"""The sandbox's own time per notebook, stage by stage: one trivial cell, many runs, medians.

Run as root from the repository (PYTHONPATH=$PWD):
    nice python bench/sandbox_stages_bench.py --runs 60 --gap 0.2
Each run is one notebook of one cell (`x = 1`) through the zygote, graded one at a time with
`--gap` seconds between them (as notebooks of real cells are spaced). The stages are the
monitor's and the sandbox's own timestamps (as bench/autograde_bench.py `breakdown` reads them);
any other stamps the sandbox reports (names ending in `_at`) are shown as steps after `sandbox_at`.
"""
import argparse
import statistics
import time

from graders.sandbox.zygote import Limits, Zygote

STAGES = {
    "connect, monitor's fork": ("asked_at", "fork_at"),
    "fork + control group": ("fork_at", "sandbox_at"),
    "namespaces and root": ("sandbox_at", "root_at"),
    "uid, rlimits, seccomp": ("root_at", "isolated_at"),
    "IPython start": ("isolated_at", "first_cell_at"),
    "tear-down": ("last_cell_end", "end_at"),
    "end to answer": ("end_at", "answered_at"),
    "whole run (grader's view)": ("asked_at", "answered_at"),
}


def one(zygote, limits):
    asked = time.monotonic()
    run = zygote.run({"cells": [{"index": 0, "source": "x = 1"}], "env": {}, "files": {}}, limits)
    answered = time.monotonic()
    u = dict(run.usage)
    cell = run.cells.get(0) or {}
    if run.status != "ok" or "started_at" not in cell:
        raise SystemExit(f"the run failed: {run.status} {run.detail}")
    u.update(asked_at=asked, answered_at=answered, first_cell_at=cell["started_at"],
             last_cell_end=cell["started_at"] + cell.get("seconds", 0))
    return u


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--gap", type=float, default=0.2, help="seconds between notebooks")
    args = parser.parse_args(argv)
    limits = Limits(cell_seconds=20, notebook_seconds=60)
    rows = []
    with Zygote() as zygote:
        one(zygote, limits)                          # the first one warms the page cache
        for _ in range(args.runs):
            time.sleep(args.gap)
            rows.append(one(zygote, limits))
    stages = dict(STAGES)
    extra = sorted({k for r in rows for k in r if k.endswith("_at") and k not in
                    {a for pair in STAGES.values() for a in pair} and isinstance(r[k], float)},
                   key=lambda k: statistics.median(r[k] - r["sandbox_at"] for r in rows if k in r))
    previous = "sandbox_at"
    for key in extra:
        stages[f"  .. to {key}"] = (previous, key)
        previous = key
    print(f"median of {len(rows)} runs, {args.gap} s apart (ms):")
    for name, (a, b) in stages.items():
        values = [r[b] - r[a] for r in rows if a in r and b in r]
        if values:
            print(f"   {name:<28} {1000 * statistics.median(values):7.2f}   "
                  f"(p10 {1000 * statistics.quantiles(values, n=10)[0]:.2f}, "
                  f"p90 {1000 * statistics.quantiles(values, n=10)[-1]:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
