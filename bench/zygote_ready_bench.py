"""How long a sandbox zygote takes to be ready, by what it preloads (median of --runs starts).

    python bench/zygote_ready_bench.py --runs 5

Each row is one preload list: the full one (`PRELOAD`), the same without torch._dynamo (notebooks
that use torch but make no optimizer, checkpoint or loss scaler), and what `graders.engine.warm.preload_for`
gives for notebooks importing only numpy and sympy, or nothing. Ready = `Zygote.start()` to
`wait_ready()` returning (the zygote has imported, warmed up and is listening).
"""
from __future__ import annotations

import argparse
import statistics
import time

from graders.sandbox.zygote import PRELOAD, Zygote

LISTS = {"full (PRELOAD)": PRELOAD,
         "torch, no optimizer": tuple(m for m in PRELOAD if m != "torch._dynamo"),
         "numpy+sympy": ("numpy", "sympy", "IPython"), "IPython only": ("IPython",)}


def ready_seconds(preload) -> float:
    started = time.monotonic()
    zygote = Zygote(preload=preload).start()
    try:
        zygote.wait_ready()
        return time.monotonic() - started
    finally:
        zygote.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    for name, preload in LISTS.items():
        times = [ready_seconds(preload) for _ in range(args.runs)]
        print(f"{name:<20} median {statistics.median(times):.2f} s  "
              f"(runs: {', '.join(f'{t:.2f}' for t in times)})", flush=True)


if __name__ == "__main__":
    main()
