"""tds-e1-edge-of-stability: gradient descent on a quadratic, direction by direction, past 2/η.

Source: Cohen, Kaur, Li, Kolter and Talwalkar, "Gradient Descent on Neural Networks Typically
Occurs at the Edge of Stability" (ICLR 2021), §2: on a quadratic of curvature a, gradient descent
x <- x - η a x multiplies x by (1 - η a) per step, so it converges iff η a < 2, i.e. iff the
sharpness is below 2/η, and beyond that it diverges along the top eigenvector, oscillating in
sign; they call 2/η the stability threshold and observe full-batch training's sharpness rising
to it (progressive sharpening) and then hovering there.

The quadratic here is diagonal, L(x) = ½ Σ a_i x_i², with the variant's curvatures a_i, rate η and
a growth factor g. Answers: `threshold_lr` (the largest rate at which GD converges, 2/max a),
`multipliers` (1 - η a_i per direction), `unstable` (0-based indices of the directions that grow),
`steps_to_grow` (the fewest steps after which the fastest-growing direction has grown by at least
g: ceil(ln g / ln |1 - η a_max|)), `multiplier_expr` (the per-step multiplier in η and the
sharpness S) and `threshold_expr` (the threshold rate in S).
"""
from __future__ import annotations

import math

from graders.numeric import Count, Number, Numbers
from graders.problem import Mistake, Problem
from graders.symbolic import Expr, symbols_for

SYMBOLS = ("eta", "S")


def _read(q):
    curv = [float(a) for a in q["curvatures"]]
    lr, growth = float(q["lr"]), float(q["growth"])
    if not curv or any(not (a > 0 and math.isfinite(a)) for a in curv) or not lr > 0 or not growth > 1:
        raise ValueError("curvatures must be positive, lr positive and growth above 1")
    if lr * max(curv) <= 2:
        raise ValueError("the variant must have a direction past the threshold")
    return curv, lr, growth


def _answers(q, *, limit=2, sign=-1, unstable_if=None):
    curv, lr, growth = _read(q)
    s = symbols_for(SYMBOLS)
    ms = [1 + sign * lr * a for a in curv]
    unstable_if = unstable_if or (lambda m: abs(m) > 1)
    worst = max(abs(m) for m in ms)
    return {
        "threshold_lr": limit / max(curv),
        "multipliers": ms,
        "unstable": [i for i, m in enumerate(ms) if unstable_if(m)],
        "steps_to_grow": math.ceil(math.log(growth) / math.log(worst)),
        "multiplier_expr": 1 + sign * s["eta"] * s["S"],
        "threshold_expr": limit / s["S"],
    }


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    return {k: v for k, v in wrong.items() if v != right[k]}


class EdgeOfStabilityExercise(Problem):
    id = "tds-e1-edge-of-stability"
    title = "Gradient descent past the stability threshold: which directions blow up, and how fast"
    strand = "mathematics"
    kind = "exercise"
    assignment = "tds-exercises"
    symbols = SYMBOLS
    # Rates of Cohen et al.'s full-batch runs (2/η of 20 to 400), with one or two curvatures past it.
    variants = {
        "A": {"curvatures": [250.0, 120.0, 30.0, 5.0], "lr": 0.01, "growth": 1000.0},
        "B": {"curvatures": [45.0, 41.0, 12.0, 0.5], "lr": 0.05, "growth": 100.0},
        "C": {"curvatures": [640.0, 420.0, 380.0, 90.0], "lr": 0.005, "growth": 1.0e6},
        "D": {"curvatures": [22.0, 15.0, 9.0, 2.0], "lr": 0.1, "growth": 10.0},
    }
    checks = {
        "multiplier_expr": Expr(symbols=SYMBOLS),
        "threshold_expr": Expr(symbols=SYMBOLS),
        "threshold_lr": Number(rtol=1e-9),
        "multipliers": Numbers(rtol=1e-9, atol=1e-12),
        "unstable": Numbers(exact=True),
        "steps_to_grow": Count(),
    }
    cells = {"check_expressions": ("multiplier_expr", "threshold_expr"),
             "check_numbers": ("threshold_lr", "multipliers", "unstable", "steps_to_grow")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("threshold-at-one-over-sharpness",
                "1/S is where the top direction starts to oscillate; it still shrinks until η S = 2, so "
                "the threshold is 2/S.",
                lambda q: _changed(q, limit=1),
                instant="the step size at which the top direction stops shrinking."),
        Mistake("ascent-sign",
                "the step was taken uphill: gradient descent subtracts η a x, so the multiplier is 1 - η a.",
                lambda q: _changed(q, sign=1),
                instant="the gradient descent step along one eigendirection."),
        Mistake("oscillation-as-divergence",
                "a negative multiplier between -1 and 0 makes a direction oscillate while it shrinks; only "
                "|1 - η a| > 1 grows.",
                lambda q: _changed(q, unstable_if=lambda m: m < 0),
                instant="what a negative multiplier does to the size of a direction."),
    )


PROBLEM = EdgeOfStabilityExercise()
