"""Benchmark: each practice item's experiment, per variant, against II.8's heaviest (issue 28).

    .venv/bin/python bench/practice_bench.py [--only tds-p2-grokking ...]

Every practice item's reference runs the same experiment its notebook runs (the harness is
written once, in the problem module, and included in the notebook). This times the reference
of each variant in a fresh interpreter (imports and torch's first call counted apart), and prints
each item's slowest variant beside the slowest of II.8's practice items, the budget issue 28 sets
for the module's experiments. It is not part of the test suite.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from graders import problems
P = problems.get(sys.argv[1])
imported = time.perf_counter() - t0
times = {}
for label, params in P.variants.items():
    start = time.perf_counter()
    P.solve(params)
    times[label] = time.perf_counter() - start
print(json.dumps({"imports": imported, "variants": times}))
"""


def practice_items():
    sys.path.insert(0, str(ROOT))
    from graders import problems
    return [pid for pid in problems.ids() if problems.get(pid).strand == "practice"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    items = args.only or practice_items()
    rows = {}
    for pid in items:
        done = subprocess.run([sys.executable, "-c", CHILD, pid], capture_output=True, text=True, cwd=ROOT,
                              env={"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
        if done.returncode != 0:
            print(f"{pid}: failed\n{done.stderr[-1500:]}")
            continue
        rows[pid] = json.loads(done.stdout.strip().splitlines()[-1])
        v = rows[pid]["variants"]
        print(f"{pid:34s} imports {rows[pid]['imports']:5.1f} s  " +
              "  ".join(f"{k} {t:5.1f} s" for k, t in v.items()), flush=True)
    ii8 = {p: max(r["variants"].values()) for p, r in rows.items() if not p.startswith("tds-")}
    tds = {p: max(r["variants"].values()) for p, r in rows.items() if p.startswith("tds-")}
    if ii8 and tds:
        heaviest = max(ii8, key=ii8.get)
        print(f"\nII.8's heaviest: {heaviest}, {ii8[heaviest]:.1f} s in its slowest variant")
        over = {p: t for p, t in tds.items() if t > ii8[heaviest]}
        print(f"TDS slowest: {max(tds, key=tds.get)}, {max(tds.values()):.1f} s; over the budget: {over or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
