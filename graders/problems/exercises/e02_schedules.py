"""e02-schedules: linear warmup then cosine, and warmup-stable-decay (WSD).

Definitions (the curriculum's, used exactly). With peak η_max, floor η_min, W
warmup steps and T total steps:
- warmup, both schedules: η(t) = η_max · t / W for 0 <= t < W;
- cosine: η(t) = η_min + ½(η_max − η_min)(1 + cos(π (t − W)/(T − W))) for W <= t <= T;
- WSD: η(t) = η_max for W <= t <= T − decay, then a straight line from η_max at
  T − decay down to η_min at T;
- after T both hold η_min (GPT-3 continues at its floor; so do nanoGPT and Megatron).
The "area" is Σ_{t=0}^{T−1} η(t): the total learning rate spent, which fixes, for
example, how far decoupled weight decay shrinks the weights (e03).

Sources for the variants:
- A: karpathy/build-nanogpt train_gpt2.py: max_lr 6e-4, min_lr = 0.1 · max_lr,
  warmup_steps 715 (GPT-3's 375M warmup tokens at 2**19 tokens per step),
  max_steps 19073.
- B: Touvron et al. 2023, Llama 2, §2.2 and Table 1: 7B peak 3.0e-4, 2000 warmup
  steps, cosine to 10% of the peak, 2.0T tokens at 4M tokens per step (~500k steps).
- C: Brown et al. 2020, GPT-3, Table 2.1 and Appendix B: 175B peak 0.6e-4, cosine
  to 10% over 260B tokens after a linear warmup over 375M tokens, batch 3.2M tokens
  (81,250 and ~117 steps at the full batch).
- D: DeepSeek-AI 2024, DeepSeek-V3 §4.2: 2000 warmup steps to 2.2e-4, constant, then
  a decay to 2.2e-5 (theirs is a cosine-shaped decay over 4.3T tokens; here linear);
  step counts at the final 15360 × 4096-token batch.
Each variant also gets a WSD decay length (10–30% of T; Hägele et al. 2024 find
~20% cooldowns match cosine).
"""
import math

import numpy as np
import sympy

from graders.numeric import Number, Numbers
from graders.problem import Mistake, Problem
from graders.problems.common.schedules import cosine_lr, wsd_lr
from graders.problems.common.schedules import read_schedule as _read
from graders.symbolic import Expr, symbols_for

# n_steps is the run's total step count (the chapter keeps T for the sequence length)
EXPR_SYMBOLS = ("eta_max", "eta_min", "W", "n_steps", "t")
LR_RTOL = 1e-6
LR_ATOL = 1e-15


def cosine_expr(to_zero=False, from_zero=False):
    s = symbols_for(EXPR_SYMBOLS)
    low = 0 if to_zero else s["eta_min"]
    start = 0 if from_zero else s["W"]
    return low + sympy.Rational(1, 2) * (s["eta_max"] - low) * (
        1 + sympy.cos(sympy.pi * (s["t"] - start) / (s["n_steps"] - start)))


def _answers(q, cos_kw=None, wsd_kw=None, expr_kw=None):
    peak, floor, W, T, decay, at = _read(q)
    cos_kw, wsd_kw = cos_kw or {}, wsd_kw or {}
    every = np.arange(T)
    return {
        "lr_cosine": [float(v) for v in cosine_lr(at, peak, floor, W, T, **cos_kw)],
        "lr_wsd": [float(v) for v in wsd_lr(at, peak, floor, W, T, decay, **wsd_kw)],
        "area_cosine": math.fsum(cosine_lr(every, peak, floor, W, T, **cos_kw).tolist()),
        "area_wsd": math.fsum(wsd_lr(every, peak, floor, W, T, decay, **wsd_kw).tolist()),
        "cosine_expr": cosine_expr(**(expr_kw or {})),
    }


def _only(keys, answers):
    return {k: v for k, v in answers.items() if k in keys}


class SchedulesProblem(Problem):
    id = "e02-schedules"
    title = "Learning-rate schedules: warmup-cosine and warmup-stable-decay"
    strand = "mathematics"
    kind = "exercise"
    assignment = "exercises"
    symbols = EXPR_SYMBOLS
    variants = {
        # build-nanogpt GPT-2 124M on FineWeb-Edu 10B; 20% WSD cooldown
        "A": {"peak_lr": 6e-4, "min_lr": 6e-5, "warmup": 715, "total": 19073, "decay": 3815,
              "at": [0, 300, 715, 5000, 9894, 15258, 17000, 19073]},
        # Llama 2 7B; 10% WSD decay
        "B": {"peak_lr": 3e-4, "min_lr": 3e-5, "warmup": 2000, "total": 500_000, "decay": 50_000,
              "at": [0, 1000, 2000, 100_000, 251_000, 450_000, 475_000, 500_000]},
        # GPT-3 175B; 20% WSD decay
        "C": {"peak_lr": 6e-5, "min_lr": 6e-6, "warmup": 117, "total": 81_250, "decay": 16_250,
              "at": [0, 50, 117, 20_000, 40_684, 65_000, 73_125, 81_250]},
        # DeepSeek-V3's peak, floor and warmup; its decay is ~30% of the run
        "D": {"peak_lr": 2.2e-4, "min_lr": 2.2e-5, "warmup": 2000, "total": 227_000,
              "decay": 68_000, "at": [0, 500, 2000, 60_000, 114_500, 159_000, 193_000, 227_000]},
    }
    checks = {
        "lr_cosine": Numbers(rtol=LR_RTOL, atol=LR_ATOL),
        "lr_wsd": Numbers(rtol=LR_RTOL, atol=LR_ATOL),
        "area_cosine": Number(rtol=LR_RTOL),
        "area_wsd": Number(rtol=LR_RTOL),
        "cosine_expr": Expr(symbols=EXPR_SYMBOLS),
    }
    cells = {
        "check_expr": ("cosine_expr",),
        "check_values": ("lr_cosine", "lr_wsd"),
        "check_areas": ("area_cosine", "area_wsd"),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake(
            "cosine-to-zero",
            "the cosine was taken down to zero; it ends at the floor η_min, so the swing is "
            "(η_max − η_min), not η_max.",
            lambda q: _only(("lr_cosine", "area_cosine", "cosine_expr"),
                            _answers(q, cos_kw={"to_zero": True}, expr_kw={"to_zero": True})),
            instant="where the cosine ends.",
        ),
        Mistake(
            "cosine-from-step-zero",
            "the cosine's phase was counted from step 0; it starts where the warmup ends, "
            "(t − W)/(n_steps − W).",
            lambda q: _only(("lr_cosine", "area_cosine", "cosine_expr"),
                            _answers(q, cos_kw={"from_zero": True}, expr_kw={"from_zero": True})),
            instant="the step at which the cosine's phase begins.",
        ),
        Mistake(
            "warmup-from-one",
            "the warmup was indexed from 1, η_max·(t + 1)/W (the nanoGPT convention); this "
            "exercise defines it as η_max·t/W, which is 0 at step 0.",
            lambda q: _only(("lr_cosine", "lr_wsd", "area_cosine", "area_wsd"),
                            _answers(q, cos_kw={"warmup_offset": 1}, wsd_kw={"warmup_offset": 1})),
            instant="how this exercise indexes the warmup steps.",
        ),
        Mistake(
            "wsd-to-zero",
            "the WSD decay was taken down to zero; it ends at the floor η_min at step n_steps.",
            lambda q: _only(("lr_wsd", "area_wsd"), _answers(q, wsd_kw={"to_zero": True})),
            instant="where the WSD decay ends.",
        ),
        Mistake(
            "wsd-without-warmup",
            "the WSD schedule was held at the peak from step 0; it has the same linear warmup "
            "as the cosine schedule.",
            lambda q: _only(("lr_wsd", "area_wsd"), _answers(q, wsd_kw={"no_warmup": True})),
            instant="how the WSD schedule begins.",
        ),
    )


PROBLEM = SchedulesProblem()
