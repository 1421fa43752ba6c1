"""How long a sandbox zygote takes to be ready, by what it preloads (median of --runs starts).

    python bench/zygote_ready_bench.py --runs 5

Each row is one preload list: the full one (`PRELOAD`), the same without torch._dynamo (notebooks
that use torch but make no optimizer, checkpoint or loss scaler), and what `graders.engine.warm.preload_for`
gives for notebooks importing only numpy and sympy, or nothing. Ready = `Zygote.start()` to
`wait_ready()` returning (the zygote has imported, warmed up and is listening; with torch, all but
torch, which a second zygote imports: the time a one-cell torch notebook takes to be done is given
beside it).
"""
from __future__ import annotations

import argparse
import statistics
import time

from graders.sandbox.zygote import PRELOAD, Limits, Zygote

LISTS = {"full (PRELOAD)": PRELOAD,
         "torch, no optimizer": tuple(m for m in PRELOAD if m != "torch._dynamo"),
         "numpy+sympy": ("numpy", "sympy", "IPython"), "IPython only": ("IPython",)}


TORCH_JOB = {"cells": [{"index": 0, "source": "import torch\nx = float(torch.ones(2).sum())"}], "env": {}}


def ready_seconds(preload) -> tuple[float, float | None]:
    """(start to ready, start to the end of a one-cell torch notebook: None without torch).
    A zygote that preloads torch reports ready before torch is imported (a second zygote
    imports it), so the second time says when a torch notebook can run."""
    started = time.monotonic()
    zygote = Zygote(preload=preload).start()
    try:
        zygote.wait_ready()
        ready = time.monotonic() - started
        if "torch" not in preload:
            return ready, None
        zygote.run(TORCH_JOB, Limits(cell_seconds=60, notebook_seconds=60))
        return ready, time.monotonic() - started
    finally:
        zygote.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    for name, preload in LISTS.items():
        runs = [ready_seconds(preload) for _ in range(args.runs)]
        times = [ready for ready, _ in runs]
        line = (f"{name:<20} ready: median {statistics.median(times):.2f} s "
                f"(runs: {', '.join(f'{t:.2f}' for t in times)})")
        if runs[0][1] is not None:
            line += f"; a torch notebook done: median {statistics.median(t for _, t in runs):.2f} s"
        print(line, flush=True)


if __name__ == "__main__":
    main()
