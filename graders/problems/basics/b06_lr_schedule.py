"""b06-lr-schedule: linear warmup then cosine decay, step by step.

The chapter's definition (the same as e02-schedules). With peak η_max, floor
η_min, W warmup steps and T total steps, the learning rate used by step t
(counted from 0) is

    η(t) = η_max · t / W                                          for 0 <= t < W,
    η(t) = η_min + ½(η_max − η_min)(1 + cos(π (t − W) / (T − W)))  for W <= t <= T,
    η(t) = η_min                                                  for t > T.

So step 0 has η = 0, the peak is reached first at step W, and the floor at T.

The student writes `lr_at(t, peak_lr, min_lr, warmup, total)`; it is probed on
fresh schedules and steps (edges included) and compared with this closed form.

Sources for the variants (peak, floor, warmup, length):
- A, TinyLlama (jzhang38/TinyLlama pretrain/tinyllama.py): learning_rate 4e-4,
  min_lr 4e-5, warmup_steps 2000, max_step 715256 * 2 = 1,430,512.
- B, GPT-NeoX-20B (EleutherAI/gpt-neox configs/20B.yml): lr 0.97e-4, min_lr
  0.97e-5, "warmup": 0.01 of train-iters 150000 = 1500, cosine.
- C, Pythia-12B (EleutherAI/pythia models/12B/pythia-12b.yml): lr 0.00012,
  min_lr 0.000012, "warmup": 0.01 of train-iters 143000 = 1430, cosine.
- D, nanoGPT's GPT-2 124M defaults (karpathy/nanoGPT train.py): learning_rate
  6e-4, min_lr 6e-5, warmup_iters 2000, lr_decay_iters 600000.
The variants take these runs' numbers under the chapter's definition. Their code
differs in places: nanoGPT warms up as η_max·(t+1)/(W+1), and GPT-NeoX's
AnnealingLR as used for B and C computed ½η_max(1 + cos(π(t − W)/T)) clipped at
η_min, which reaches the floor near 80% of the run (EleutherAI/gpt-neox pull
request 1008, 2023: "this is what is used for training pythia and all other
models", fixed there to the chapter's form).
"""
import math

import numpy as np

from graders.numeric import Count, Numbers, Outputs
from graders.problem import Mistake, Probe, Problem, seed_for

FUNCTION = "lr_at"
LR_RTOL, LR_ATOL = 1e-6, 1e-15


def lr_at(t, peak, floor, W, T, *, warmup_offset=0, to_zero=False, from_zero=False, periodic=False):
    """The schedule's learning rate at step t; the keyword flags give the declared mistakes."""
    low = 0.0 if to_zero else floor
    if t < W:
        return peak * (t + warmup_offset) / W
    if t > T and not periodic:
        return low
    start = 0 if from_zero else W
    return low + 0.5 * (peak - low) * (1.0 + math.cos(math.pi * (t - start) / (T - start)))


def _number(q, name):
    value = q[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, not {value!r}")
    return float(value)


def _step(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value != int(value) or value < 0:
        raise ValueError(f"{name} must be a whole number >= 0, not {value!r}")
    return int(value)


def _read(q):
    peak, floor = _number(q, "peak_lr"), _number(q, "min_lr")
    W, T = _step(q["warmup"], "warmup"), _step(q["total"], "total")
    if not 0 <= floor <= peak:
        raise ValueError(f"need 0 <= min_lr <= peak_lr, got {floor!r} and {peak!r}")
    if not W < T:
        raise ValueError(f"warmup ({W}) must be shorter than total ({T})")
    if not isinstance(q["at"], (list, tuple)):
        raise ValueError("at must be a list of steps")
    return peak, floor, W, T, [_step(t, "each step in at") for t in q["at"]]


def probe_calls(params):
    """Hidden calls [t, peak_lr, min_lr, warmup, total]: fresh schedules, edges included."""
    rng = np.random.default_rng(seed_for(params, "b06-lr-schedule"))
    calls = []
    for i in range(3):
        peak = float(round(10 ** rng.uniform(-5, -3), 8))
        floor = 0.0 if i == 1 else round(peak * float(rng.uniform(0.02, 0.2)), 10)
        W = int(rng.integers(5, 200))
        T = W + int(rng.integers(50, 5000))
        for t in (0, 1, W // 2, W - 1, W, W + 1, (W + T) // 2, int(rng.integers(W, T)), T - 1, T,
                  T + 7):
            calls.append([t, peak, floor, W, T])
    return calls


def _answers(q, **kw):
    peak, floor, W, T, at = _read(q)
    peak_step = W - 1 if kw.get("warmup_offset") and W > 0 else W
    return {
        "lr_at_steps": [lr_at(t, peak, floor, W, T, **kw) for t in at],
        "peak_step": peak_step,
        "lr_probe": [lr_at(*call, **kw) for call in probe_calls(q)],
    }


def _only(keys, answers):
    return {k: v for k, v in answers.items() if k in keys}


class LRScheduleProblem(Problem):
    id = "b06-lr-schedule"
    title = "Learning-rate schedule: linear warmup, then cosine"
    strand = "basics"
    kind = "basics"
    assignment = "basics"
    symbols = ()
    variants = {
        "A": {"peak_lr": 4e-4, "min_lr": 4e-5, "warmup": 2000, "total": 1_430_512,
              "at": [0, 1000, 1999, 2000, 500_000, 1_000_000, 1_430_512, 1_500_000]},   # TinyLlama
        "B": {"peak_lr": 0.97e-4, "min_lr": 0.97e-5, "warmup": 1500, "total": 150_000,
              "at": [0, 750, 1499, 1500, 50_000, 100_000, 150_000, 160_000]},             # GPT-NeoX-20B
        "C": {"peak_lr": 1.2e-4, "min_lr": 1.2e-5, "warmup": 1430, "total": 143_000,
              "at": [0, 715, 1429, 1430, 40_000, 90_000, 143_000, 150_000]},              # Pythia-12B
        "D": {"peak_lr": 6e-4, "min_lr": 6e-5, "warmup": 2000, "total": 600_000,
              "at": [0, 100, 1999, 2000, 150_000, 301_000, 600_000, 650_000]},            # nanoGPT
    }
    checks = {
        "lr_probe": Outputs(rtol=1e-7, atol=LR_ATOL, points=2.0),
        "lr_at_steps": Numbers(rtol=LR_RTOL, atol=LR_ATOL),
        "peak_step": Count(),
    }
    cells = {
        "check_function": ("lr_probe",),
        "check_numbers": ("lr_at_steps", "peak_step"),
    }

    def probes(self, params):
        return {"lr_probe": Probe(function=FUNCTION, calls=probe_calls(params))}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake(
            "warmup-from-one",
            "the warmup was indexed from 1, η_max·(t + 1)/W; in this chapter step 0 has learning "
            "rate 0 and the peak is first reached at step W.",
            lambda q: _answers(q, warmup_offset=1),
            instant="how the warmup counts its steps.",
        ),
        Mistake(
            "cosine-to-zero",
            "the cosine was taken down to zero; it ends at the floor η_min, so the swing is "
            "(η_max − η_min), not η_max.",
            lambda q: _only(("lr_at_steps", "lr_probe"), _answers(q, to_zero=True)),
            instant="the floor the cosine decays to.",
        ),
        Mistake(
            "cosine-from-step-zero",
            "the cosine's phase was counted from step 0; it starts where the warmup ends, "
            "(t − W)/(n_steps − W).",
            lambda q: _only(("lr_at_steps", "lr_probe"), _answers(q, from_zero=True)),
            instant="where the cosine's phase starts.",
        ),
        Mistake(
            "cosine-past-the-end",
            "the cosine was continued past step n_steps, where it rises again (as CosineAnnealingLR "
            "does past T_max); after n_steps the schedule stays at the floor η_min.",
            lambda q: _only(("lr_at_steps", "lr_probe"), _answers(q, periodic=True)),
            instant="the learning rate once the decay has ended.",
        ),
    )


PROBLEM = LRScheduleProblem()
