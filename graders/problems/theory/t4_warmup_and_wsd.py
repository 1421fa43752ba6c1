"""t4-warmup-and-wsd: why warmup, and why warmup-stable-decay lets you commit late (theory).

Sources:
- Cohen, Kaur, Li, Kolter and Talwalkar, "Gradient Descent on Neural Networks Typically Occurs at
  the Edge of Stability" (ICLR 2021): gradient descent on a quadratic of curvature a is stable iff
  eta * a < 2; in full-batch training the sharpness (top Hessian eigenvalue) rises until it reaches
  2/eta and then hovers there while the loss keeps falling non-monotonically.
- Cohen, Ghorbani, Krishnan et al., "Adaptive Gradient Methods at the Edge of Stability" (2022,
  arXiv 2207.14484): for Adam the quantity that equilibrates is the preconditioned sharpness
  lambda_max(P^-1 H), at the stability threshold of EMA-momentum gradient descent,
  (2 + 2 beta1) / ((1 - beta1) eta), "38/eta" for beta1 = 0.9. (Derivation: x <- x - eta m,
  m <- beta1 m + (1 - beta1) a x has characteristic polynomial z^2 - (1 + beta1 - eta (1 - beta1) a) z
  + beta1, whose root reaches -1 when eta (1 - beta1) a = 2 + 2 beta1.)
- Warmup keeps eta_t * sharpness below the threshold while the sharpness is high early in training
  (Gilmer et al. 2022, "A Loss Curvature Perspective on Training Instabilities of Deep Learning
  Models"; Kalra and Barkeshli 2024, "Why Warmup the Learning Rate?").
- Warmup-stable-decay: Hu et al. 2024 (MiniCPM, §4) and Hägele et al. 2024 ("Scaling Laws and
  Compute-Optimal Training Beyond Fixed Training Durations"): the learning rate of a WSD run does
  not depend on the total length until its decay starts, so one stable-phase run can be decayed
  from any checkpoint; a cosine schedule depends on the total length from the first step after
  warmup.

The learning-rate schedules are e02-schedules' (imported: `wsd_lr`, `cosine_lr`, the curriculum's
definitions). The sharpness trajectories of the variants are invented for the exercise (a probe of
lambda_max(P^-1 H) early in training); the schedules and Adam's beta1 are those of published runs,
as in e02: build-nanogpt GPT-2 124M, Llama 2 7B, GPT-3 175B, DeepSeek-V3.
"""
import math

import numpy as np
import sympy

from graders.numeric import Count, Number, Numbers
from graders.problem import Mistake, Problem
from graders.problems.common.schedules import cosine_lr, wsd_lr
from graders.problems.common.schedules import read_schedule as _read_schedule
from graders.symbolic import Expr, symbols_for

EXPR_SYMBOLS = ("eta", "beta1")


def _number(q, name, low=None, high=None):
    value = q[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, not {value!r}")
    value = float(value)
    if (low is not None and value <= low) or (high is not None and value >= high):
        raise ValueError(f"{name} must lie in ({low}, {high}), not {value!r}")
    return value


def _whole_list(q, name, minimum=0):
    values = q[name]
    if not isinstance(values, (list, tuple)) or not values:
        raise ValueError(f"{name} must be a non-empty list")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v != int(v) \
                or v < minimum:
            raise ValueError(f"{name} must hold whole numbers >= {minimum}, not {v!r}")
        out.append(int(v))
    return out


def _read(q):
    schedule = {k: q[k] for k in ("peak_lr", "min_lr", "warmup", "total", "decay")}
    peak, floor, W, T, decay, _ = _read_schedule({**schedule, "at": []})
    beta1 = _number(q, "beta1", None, 1.0)
    if beta1 < 0:
        raise ValueError(f"beta1 must lie in [0, 1), not {beta1!r}")
    at = _whole_list(q, "at")
    sharp = q["sharpness"]
    if not isinstance(sharp, (list, tuple)) or len(sharp) != len(at):
        raise ValueError("sharpness must be a list with one value per step in `at`")
    sharp = [_number({"sharpness": s}, "sharpness", 0.0) for s in sharp]
    if max(at) > T - decay:
        raise ValueError("the sharpness must be measured before the decay phase starts")
    budgets = _whole_list(q, "budgets", 1)
    fraction = _number(q, "decay_fraction", 0.0, 1.0)
    decays = [round(fraction * b) for b in budgets]
    if any(d < 1 or b - d <= W for b, d in zip(budgets, decays)):
        raise ValueError("every budget needs a decay of at least one step that starts after the warmup")
    return peak, floor, W, T, decay, beta1, at, sharp, budgets, decays


def adam_limit(beta1):
    """eta * sharpness at the edge of stability of EMA-momentum GD (Cohen et al. 2022)."""
    return (2 + 2 * beta1) / (1 - beta1)


def _unstable(lrs, sharp, limit):
    return [i for i, (lr, s) in enumerate(zip(lrs, sharp)) if lr * s > limit]


def _min_warmup(peak, floor, T, decay, at, sharp, limit):
    """The shortest linear warmup (steps) that keeps every measured step below the limit."""
    need = 0
    for t, s in zip(at, sharp):
        if peak * s > limit:       # unstable at the peak: must still be warming up at t, slowly enough
            need = max(need, t + 1, math.ceil(peak * t * s / limit))
    # guard the ceiling against rounding, with e02's own schedule
    def ok(w):
        return not _unstable(wsd_lr(at, peak, floor, w, T, decay).tolist(), sharp, limit)
    while need > 0 and ok(need - 1):
        need -= 1
    while not ok(need):
        need += 1
    return need


def _first_difference(a, b):
    diff = np.flatnonzero(np.asarray(a) != np.asarray(b))
    return int(diff[0]) if diff.size else len(a)


def _answers(q, *, gd_threshold=False, no_lr=False, warmup_ignored=False, no_branching=False,
             trunk_to_end=False, index_not_count=False):
    peak, floor, W, T, decay, beta1, at, sharp, budgets, decays = _read(q)
    limit = 2.0 if gd_threshold else adam_limit(beta1)
    eta, b1 = (symbols_for(EXPR_SYMBOLS)[k] for k in EXPR_SYMBOLS)
    expr = 2 / eta if gd_threshold else (2 + 2 * b1) / ((1 - b1) * eta)
    if no_lr:
        expr = expr * eta
    stable_lr = wsd_lr(at, peak, floor, W, T, decay).tolist()
    short, long_ = min(budgets), max(budgets)
    d_short, d_long = decays[budgets.index(short)], decays[budgets.index(long_)]
    steps = np.arange(short + 1)
    shared_cos = _first_difference(cosine_lr(steps, peak, floor, W, short), cosine_lr(steps, peak, floor, W, long_))
    shared_wsd = _first_difference(wsd_lr(steps, peak, floor, W, short, d_short),
                                   wsd_lr(steps, peak, floor, W, long_, d_long))
    if index_not_count:
        shared_cos, shared_wsd = shared_cos - 1, shared_wsd - 1
    steps_cosine = sum(budgets)
    if no_branching:
        steps_wsd = sum(budgets)
    elif trunk_to_end:
        steps_wsd = long_ + sum(decays)
    else:
        steps_wsd = max(b - d for b, d in zip(budgets, decays)) + sum(decays)
    return {
        "threshold_gd": 2.0 / peak,
        "threshold_adam": limit if no_lr else limit / peak,
        "threshold_expr": expr,
        "unstable_no_warmup": _unstable([peak] * len(at), sharp, limit),
        "unstable_with_warmup": _unstable([peak] * len(at) if warmup_ignored else stable_lr, sharp, limit),
        "min_warmup": _min_warmup(peak, floor, T, decay, at, sharp, limit),
        "steps_cosine": steps_cosine,
        "steps_wsd": steps_wsd,
        "saving": 1.0 - steps_wsd / steps_cosine,
        "shared_cosine": shared_cos,
        "shared_wsd": shared_wsd,
    }


def _changed(q, keys, **kwargs):
    right, wrong = _answers(q), _answers(q, **kwargs)
    out = {}
    for k in keys:
        v = wrong[k]
        if isinstance(v, sympy.Basic):
            if sympy.simplify(v - right[k]) != 0:
                out[k] = v
        elif v != right[k]:
            out[k] = v
    return out


class WarmupAndWsdProblem(Problem):
    id = "t4-warmup-and-wsd"
    title = "Why warmup, and why warmup-stable-decay lets you commit late"
    strand = "theory"
    kind = "theory"
    assignment = "theory"
    symbols = EXPR_SYMBOLS
    variants = {
        # build-nanogpt GPT-2 124M (as in e02 A), 20% decays
        "A": {"peak_lr": 6e-4, "min_lr": 6e-5, "warmup": 715, "total": 19073, "decay": 3815, "beta1": 0.9,
              "at": [0, 25, 100, 250, 400, 600, 1000, 3000],
              "sharpness": [2.4e5, 1.9e5, 1.3e5, 8.8e4, 7.1e4, 6.0e4, 5.4e4, 5.9e4],
              "budgets": [5000, 10000, 20000], "decay_fraction": 0.2},
        # Llama 2 7B (as in e02 B), 10% decays
        "B": {"peak_lr": 3e-4, "min_lr": 3e-5, "warmup": 2000, "total": 500_000, "decay": 50_000, "beta1": 0.9,
              "at": [0, 100, 500, 1000, 1500, 2500, 4000, 10000],
              "sharpness": [6.1e5, 4.4e5, 2.9e5, 2.2e5, 1.7e5, 1.34e5, 1.3e5, 1.22e5],
              "budgets": [100_000, 250_000, 500_000], "decay_fraction": 0.1},
        # GPT-3 175B (as in e02 C), 20% decays
        "C": {"peak_lr": 6e-5, "min_lr": 6e-6, "warmup": 117, "total": 81_250, "decay": 16_250, "beta1": 0.9,
              "at": [0, 20, 60, 100, 150, 300, 600, 2000],
              "sharpness": [2.6e6, 2.1e6, 1.5e6, 1.05e6, 8.1e5, 6.2e5, 6.0e5, 5.6e5],
              "budgets": [20_000, 40_000, 60_000, 80_000], "decay_fraction": 0.2},
        # DeepSeek-V3's peak, floor and warmup (as in e02 D), 30% decays
        "D": {"peak_lr": 2.2e-4, "min_lr": 2.2e-5, "warmup": 2000, "total": 227_000, "decay": 68_000,
              "beta1": 0.9,
              "at": [0, 200, 800, 1500, 2500, 3500, 6000, 12000],
              "sharpness": [9.5e5, 6.2e5, 3.9e5, 2.6e5, 1.95e5, 1.8e5, 1.6e5, 1.5e5],
              "budgets": [50_000, 150_000, 225_000], "decay_fraction": 0.3},
    }
    checks = {
        "threshold_expr": Expr(symbols=EXPR_SYMBOLS),
        "threshold_gd": Number(rtol=1e-4),
        "threshold_adam": Number(rtol=1e-4),
        "unstable_no_warmup": Numbers(exact=True),
        "unstable_with_warmup": Numbers(exact=True),
        "min_warmup": Count(),
        "steps_cosine": Count(),
        "steps_wsd": Count(),
        "saving": Number(rtol=1e-4),
        "shared_cosine": Count(),
        "shared_wsd": Count(),
    }
    cells = {
        "check_threshold": ("threshold_expr", "threshold_gd", "threshold_adam"),
        "check_warmup": ("unstable_no_warmup", "unstable_with_warmup", "min_warmup"),
        "check_branching": ("steps_cosine", "steps_wsd", "saving", "shared_cosine", "shared_wsd"),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake(
            "gd-threshold-for-adam",
            "this is gradient descent's threshold 2/eta; with EMA momentum (Adam's beta1) the edge of "
            "stability for the preconditioned sharpness is (2 + 2 beta1)/((1 - beta1) eta).",
            lambda q: _changed(q, ("threshold_adam", "threshold_expr", "unstable_no_warmup",
                                   "unstable_with_warmup", "min_warmup"), gd_threshold=True),
            instant="the momentum of Adam's first moment in the stability threshold.",
        ),
        Mistake(
            "threshold-without-learning-rate",
            "this is the limit on eta times the sharpness; the threshold on the sharpness itself is that "
            "limit divided by the learning rate.",
            lambda q: _changed(q, ("threshold_adam", "threshold_expr"), no_lr=True),
            instant="the learning rate in the stability threshold on the sharpness.",
        ),
        Mistake(
            "warmup-ignored",
            "these are the steps that are unstable at the peak learning rate; during the warmup the "
            "learning rate is only peak * t / W, so use the schedule's value at each measured step.",
            lambda q: _changed(q, ("unstable_with_warmup",), warmup_ignored=True),
            instant="the learning rate the warmup gives at each measured step.",
        ),
        Mistake(
            "no-branching",
            "every WSD run was counted from scratch; WSD runs share their stable phase, so one run is "
            "continued to the last branch point and each budget adds only its own decay.",
            lambda q: _changed(q, ("steps_wsd", "saving"), no_branching=True),
            instant="the stable phase that WSD runs share.",
        ),
        Mistake(
            "trunk-to-the-end",
            "the stable run was taken to the longest budget's end and every decay added on top; the "
            "longest budget's decay branches off its own stable phase, like the others.",
            lambda q: _changed(q, ("steps_wsd", "saving"), trunk_to_end=True),
            instant="where the longest budget's decay branches off.",
        ),
        Mistake(
            "index-not-count",
            "this is the index of the last shared step; the count of shared steps is one more "
            "(steps are numbered from 0).",
            lambda q: _changed(q, ("shared_cosine", "shared_wsd"), index_not_count=True),
            instant="the difference between a step's index and a count of steps.",
        ),
    )


PROBLEM = WarmupAndWsdProblem()
