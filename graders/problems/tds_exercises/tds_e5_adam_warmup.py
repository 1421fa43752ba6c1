"""tds-e5-adam-warmup: how long Adam's second-moment estimate stays unreliable, in steps.

Sources:
- Liu, Jiang, He, Chen, Liu, Gao and Han, "On the Variance of the Adaptive Learning Rate and
  Beyond" (ICLR 2020; RAdam), §3-§4 and Algorithm 2: the exponential moving average of the squared
  gradients is treated as a simple moving average (SMA) of length
      rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t),   rho_inf = 2 / (1 - beta2) - 1,
  and when rho_t > 4 ("the variance is tractable") the adaptive step is multiplied by
      r_t = sqrt( (rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t) ),
  otherwise the step is un-adapted momentum. The official code and torch.optim.RAdam switch at
  rho_t > 5 instead.
- Ma and Yarats, "On the Adequacy of Untuned Warmup for Adaptive Optimization" (AAAI 2021):
  an untuned linear warmup over 2 (1 - beta2)^-1 iterations performs about as well as RAdam.

Answers, for the variant's beta2, steps and target: `rho_inf`, `rho_t` (at each step),
`first_rectified_step` (the first t with rho_t > 4), `steps_to_target` (the first t at which r_t
reaches the target), `warmup_steps` (Ma and Yarats' linear warmup length) and `rho_t_expr`
(rho_t in t and beta2).
"""
from __future__ import annotations

import math

import sympy

from graders.numeric import Count, Number, Numbers
from graders.problem import Mistake, Problem
from graders.symbolic import Expr, symbols_for

SYMBOLS = ("t", "beta2")
MAX_STEPS = 10**6


def _read(q):
    beta2, target = float(q["beta2"]), float(q["target"])
    steps = [int(t) for t in q["steps"]]
    if not 0.5 < beta2 < 1 or not 0 < target < 1 or not steps or min(steps) < 1:
        raise ValueError("need 0.5 < beta2 < 1, 0 < target < 1 and steps >= 1")
    return beta2, steps, target


def _answers(q, *, offset=-1, corrected=True, threshold=4, warmup_factor=2):
    beta2, steps, target = _read(q)
    rho_inf = 2 / (1 - beta2) + offset

    def rho(t):
        return rho_inf - 2 * t * beta2**t / ((1 - beta2**t) if corrected else 1)

    def rect(t):
        r = rho(t)
        if r <= threshold:
            return 0.0
        return math.sqrt((r - 4) * (r - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * r))

    first = next(t for t in range(1, MAX_STEPS) if rho(t) > threshold)
    reach = next(t for t in range(first, MAX_STEPS) if rect(t) >= target)
    s = symbols_for(SYMBOLS)
    t, b = s["t"], s["beta2"]
    return {
        "rho_inf": rho_inf,
        "rho_t": [rho(t_) for t_ in steps],
        "first_rectified_step": first,
        "steps_to_target": reach,
        "warmup_steps": warmup_factor / (1 - beta2),
        "rho_t_expr": 2 / (1 - b) + offset - 2 * t * b**t / ((1 - b**t) if corrected else 1),
    }


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    out = {}
    for key, value in wrong.items():
        same = (sympy.srepr(value) == sympy.srepr(right[key])) if key == "rho_t_expr" else value == right[key]
        if not same:
            out[key] = value
    return out


class AdamWarmupExercise(Problem):
    id = "tds-e5-adam-warmup"
    title = "Why Adam needs warmup: the length of its second-moment average, step by step"
    strand = "mathematics"
    kind = "exercise"
    assignment = "tds-exercises"
    symbols = SYMBOLS
    # beta2 of real runs: 0.999 Adam's default (Kingma and Ba 2015; BERT, Devlin et al. 2019);
    # 0.98 the Transformer of Vaswani et al. 2017 (§5.3) and RoBERTa (Liu et al. 2019, §3.1);
    # 0.95 GPT-3 (Brown et al. 2020, App. B) and Llama 2; 0.99 nanoGPT's shakespeare-char config.
    variants = {
        "A": {"beta2": 0.999, "steps": [1, 5, 10, 100, 1000], "target": 0.9},
        "B": {"beta2": 0.98, "steps": [2, 6, 20, 50, 200], "target": 0.9},
        "C": {"beta2": 0.95, "steps": [3, 5, 8, 40, 100], "target": 0.95},
        "D": {"beta2": 0.99, "steps": [4, 7, 25, 150, 500], "target": 0.8},
    }
    checks = {
        "rho_t_expr": Expr(symbols=SYMBOLS, ranges=(("t", (1, 40)), ("beta2", (0.6, 0.999)))),
        "rho_inf": Number(rtol=1e-6),
        "rho_t": Numbers(rtol=1e-6, atol=1e-9),
        "first_rectified_step": Count(),
        "steps_to_target": Count(),
        "warmup_steps": Number(rtol=1e-6),
    }
    cells = {"check_expression": ("rho_t_expr",),
             "check_numbers": ("rho_inf", "rho_t", "first_rectified_step", "steps_to_target", "warmup_steps")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("sma-length-without-the-one",
                "ρ_∞ was taken as 2/(1 - β2); matching the centre of mass of the exponential average, "
                "(f + 1)/2 = 1/(1 - β2), gives f = 2/(1 - β2) - 1.",
                lambda q: _changed(q, offset=0),
                instant="matching the centre of mass of the exponential average to that of a simple one."),
        Mistake("no-bias-correction",
                "the term 2tβ2^t was not divided by 1 - β2^t; over the first t steps the weights of the "
                "exponential average sum to 1 - β2^t, not 1, and the SMA length of the bias-corrected "
                "average keeps that normaliser.",
                lambda q: _changed(q, corrected=False),
                instant="the normalisation of an exponential average during its first steps."),
        Mistake("implementation-threshold",
                "the switch was taken at ρ_t > 5, the threshold of the official code and of "
                "torch.optim.RAdam; Algorithm 2 of Liu et al. rectifies as soon as ρ_t > 4, where the "
                "variance of the adaptive rate first becomes finite.",
                lambda q: _changed(q, threshold=5),
                instant="where the variance of the adaptive rate first becomes finite."),
        Mistake("warmup-time-constant",
                "(1 - β2)^-1 is the time constant of Ma and Yarats' exponential warmup; their linear rule "
                "runs over 2(1 - β2)^-1 steps.",
                lambda q: _changed(q, warmup_factor=1),
                instant="which of Ma and Yarats' untuned schedules is the linear one."),
    )


PROBLEM = AdamWarmupExercise()
