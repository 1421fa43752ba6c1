"""e05-loss-scaling: dynamic loss scaling as a state machine, with torch GradScaler's rules.

The state is (scale, growth tracker). On a step whose scaled gradients overflow,
the optimizer step is skipped, the scale is multiplied by `backoff_factor` and
the tracker returns to 0. On a clean step the tracker counts up; when it
reaches `growth_interval` the scale is multiplied by `growth_factor` (only if
the result is finite) and the tracker returns to 0. GradScaler's defaults are
init_scale 2**16, growth_factor 2.0, backoff_factor 0.5, growth_interval 2000
(torch.amp.GradScaler). The reference runs torch's own update op,
`torch._amp_update_scale_`, step by step, on a float32 scale as GradScaler does.
The scheme is the one Micikevicius et al., "Mixed Precision Training" (ICLR
2018), section 3.2, describe: skip and shrink on overflow, grow after a run of
clean steps.

Initial scales in the variants are real defaults: 2**16 (torch GradScaler),
2**32 (Megatron-LM's --initial-loss-scale) and 2**7 (fairseq's
--fp16-init-scale). The growth intervals are shortened (torch's 2000 would need
thousands of steps) so that forty steps show whole cycles.

The student also writes `run_scaler(overflow, init_scale, growth_factor,
backoff_factor, growth_interval) -> (trajectory, final_scale)`, which is called
on hidden overflow patterns (a `Probe`) and compared with torch.
"""
from __future__ import annotations

import numpy as np
import torch

from graders.numeric import Number, Numbers, Outputs
from graders.problem import Mistake, Probe, Problem, seed_for
from graders.problems.common.loss_scaling import python_run, torch_run
from graders.symbolic import Expr, symbols_for

FUNCTION = "run_scaler"


def _ceiling_pattern(rng, init, growth, backoff, interval, steps, ceiling, spike_p):
    """Overflow whenever the scale in force exceeds `ceiling`, plus rare random spikes."""
    scale = torch.full((), float(init), dtype=torch.float32)
    tracker = torch.zeros((), dtype=torch.int32)
    pattern = []
    for _ in range(steps):
        overflowed = bool(float(scale) > ceiling or rng.random() < spike_p)
        pattern.append(overflowed)
        torch._amp_update_scale_(scale, tracker, torch.full((), float(overflowed)),
                                 float(growth), float(backoff), int(interval))
    return pattern


def probe_calls(params: dict) -> list:
    """Hidden calls [overflow, init_scale, growth_factor, backoff_factor, growth_interval]."""
    rng = np.random.default_rng(seed_for(params, "e05-loss-scaling"))
    init = float(params["init_scale"])
    g, b, w = float(params["growth_factor"]), float(params["backoff_factor"]), int(params["growth_interval"])
    ceiling = init / 2.0 ** int(rng.integers(2, 5))
    calls = [
        [_ceiling_pattern(rng, init, g, b, w, 30, ceiling, 0.05), init, g, b, w],
        [[bool(x) for x in rng.random(30) < 0.2], init, g, b, 3],
        [[bool(x) for x in rng.random(28) < 0.15], 2.0 ** 10, 3.0, 0.25, 4],   # other factors
        [[True] * 20 + [False] * 4, 8.0, g, b, 2],   # a collapse: torch sets no floor under 1
    ]
    return calls


def _answers(q, run):
    trajectory, final = run(q["overflow"], q["init_scale"], q["growth_factor"],
                            q["backoff_factor"], q["growth_interval"])
    return trajectory, final


def _mistake(kind, extra=None):
    def wrong(q):
        trajectory, final = _answers(q, lambda *a: python_run(*a, kind))
        out = {
            "scale_trajectory": trajectory,
            "final_scale": final,
            "scaler_probe": [list(python_run(*call, kind)) for call in probe_calls(q)],
        }
        out.update(extra or {})
        return out
    return wrong


# the growth interval, as a symbol (the chapter keeps W for warmup steps)
_N_GROWTH = symbols_for(("n_growth",))["n_growth"]


class LossScalingProblem(Problem):
    id = "e05-loss-scaling"
    title = "Dynamic loss scaling as a state machine"
    strand = "mathematics"
    kind = "exercise"
    assignment = "exercises"
    symbols = ("n_growth",)
    variants = {
        "A": {  # torch GradScaler's init, growth and backoff; a gradient ceiling near 2**13
            "init_scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 8,
            "overflow": [
                True, True, True, False, False, False, False, False, False, False,
                False, True, False, False, False, False, False, False, False, False,
                True, True, False, False, False, False, False, False, False, False,
                False, False, False, False, False, False, False, False, True, False,
            ],
        },
        "B": {  # Megatron-LM's initial loss scale 2**32: six halvings before the first update
            "init_scale": 4294967296.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 10,
            "overflow": [
                True, True, True, True, True, True, False, False, False, False,
                False, False, False, False, False, False, True, False, False, False,
                False, False, False, False, False, False, False, True, False, False,
                False, False, False, False, False, False, False, False, True, False,
            ],
        },
        "C": {  # fairseq's initial scale 2**7: the scale climbs, with one early spike
            "init_scale": 128.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 6,
            "overflow": [
                False, False, False, False, False, False, False, False, False, True,
                False, False, False, False, False, False, False, False, False, False,
                False, False, False, False, False, False, False, False, False, False,
                False, False, False, False, True, False, False, False, False, False,
            ],
        },
        "D": {  # torch's init 2**16; gradients shrink mid-run, so the ceiling rises
            "init_scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 5,
            "overflow": [
                True, True, False, False, False, False, False, True, False, False,
                False, False, False, True, False, False, False, False, False, False,
                False, False, False, False, False, False, False, False, False, False,
                True, False, False, False, False, False, False, False, False, False,
            ],
        },
    }
    checks = {
        "scaler_probe": Outputs(rtol=1e-6, atol=0.0, points=2.0),
        "scale_trajectory": Numbers(rtol=1e-9),
        "final_scale": Number(rtol=1e-9),
        "skipped_steps": Numbers(exact=True),
        "skip_fraction_expr": Expr(symbols=("n_growth",)),
    }
    cells = {
        "check_function": ("scaler_probe",),
        "check_numbers": ("scale_trajectory", "final_scale", "skipped_steps"),
        "check_expr": ("skip_fraction_expr",),
    }

    def probes(self, params):
        return {"scaler_probe": Probe(function=FUNCTION, calls=probe_calls(params))}

    def solve(self, params):
        trajectory, final = _answers(params, torch_run)
        return {
            "scaler_probe": [list(torch_run(*call)) for call in probe_calls(params)],
            "scale_trajectory": trajectory,
            "final_scale": final,
            "skipped_steps": [i for i, o in enumerate(params["overflow"]) if o],
            "skip_fraction_expr": 1 / (_N_GROWTH + 1),
        }

    mistakes = (
        Mistake(
            "after-update",
            "the trajectory holds the scale after each step's update; the step runs with the scale "
            "in force before it, and the update only affects the next step.",
            _mistake("after-update"),
            instant="which scale a step runs with.",
        ),
        Mistake(
            "tracker-not-reset",
            "the growth counter kept counting across an overflow; GradScaler grows only after "
            "growth_interval consecutive clean steps, so an overflow sets the counter back to 0.",
            _mistake("tracker-not-reset"),
            instant="what an overflow does to the growth counter.",
        ),
        Mistake(
            "late-growth",
            "the scale grew one step late; it grows on the update that ends the growth_interval-th "
            "consecutive clean step, so the next step already runs at the larger scale.",
            _mistake("late-growth", {"skip_fraction_expr": 1 / (_N_GROWTH + 2)}),
            instant="the step on which the scale grows.",
        ),
        Mistake(
            "no-reset-after-growth",
            "after a growth the counter was not set back to 0, so the scale kept growing on every "
            "clean step; each growth needs a fresh run of growth_interval clean steps.",
            _mistake("no-reset-after-growth"),
            instant="what the growth counter does once the scale grows.",
        ),
        Mistake(
            "one-based",
            "the skipped steps were numbered from 1; steps are counted from 0, like the entries "
            "of the overflow list.",
            lambda q: {"skipped_steps": [i + 1 for i, o in enumerate(q["overflow"]) if o]},
            instant="how the steps are numbered.",
        ),
        Mistake(
            "cycle-without-skip",
            "the skipped step itself was left out when counting the length of one cycle.",
            lambda q: {"skip_fraction_expr": 1 / _N_GROWTH},
            instant="the skipped step's place in a cycle.",
        ),
    )


PROBLEM = LossScalingProblem()
