"""tds-w1-double-descent: the test risk of minimum-norm least squares on p of D features.

The model (Belkin, Hsu and Xu, "Two models of double descent for weak features", SIAM Journal on
Mathematics of Data Science 2(4), 2020, §2, Theorem 1): x ~ N(0, I_D), y = x·β + σ ε with
ε ~ N(0, 1); the learner sees n examples but only the first p of the D features, and fits them
by minimum-norm least squares, β̂ = X_p⁺ y. Write τ² = |β_rest|² + σ² for what the learner cannot
see (the unused features act as extra noise, independent of the used ones). Then the expected
squared error on a fresh example is
    p <= n - 2:   τ² (1 + p / (n - p - 1)),
    n-1 <= p <= n+1:   infinite,
    p >= n + 2:   |β_p|² (1 - n/p) + τ² (1 + n / (p - n - 1)).
Derivation (repeated in the notebook): below the threshold β̂ - β_p = (XᵀX)⁻¹Xᵀη and
E tr (XᵀX)⁻¹ = p/(n - p - 1) for an n x p Gaussian X (the mean of an inverse Wishart matrix);
above it β̂ = Π β_p + X⁺η with Π the projection onto X's n-dimensional row space, so the bias is
|β_p|² (1 - n/p) by rotational invariance and the variance τ² E tr (XXᵀ)⁻¹ = τ² n/(p - n - 1).
The tests check these forms against a Monte Carlo simulation of the fit itself.

Here β is spread evenly over the D features, |β|² = `signal`, so |β_p|² = signal p/D and
|β_rest|² = signal (D - p)/D. Answers: `risks` (at each of `feature_counts`, none of which lies in
[n-1, n+1]), `crossover_features` (the fewest features past the threshold whose risk beats the
best risk of any p <= n - 2: where the second descent overtakes the classical optimum),
`risk_all_features` (p = D),
`risk_under_expr` and `risk_over_expr` (the two branches as expressions in p and n, with the
variant's D, signal and σ² as numbers).
"""
from __future__ import annotations

import math

import sympy

from graders.numeric import Count, Number, Numbers
from graders.problem import Mistake, Problem
from graders.symbolic import Expr, symbols_for

SYMBOLS = ("p", "n")


def _read(q):
    n, D = q["n_samples"], q["total_features"]
    for name, v in (("n_samples", n), ("total_features", D)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v < 3:
            raise ValueError(f"{name} must be a whole number >= 3, not {v!r}")
    n, D = int(n), int(D)
    signal, noise = float(q["signal"]), float(q["noise_var"])
    if not (signal > 0 and noise >= 0 and math.isfinite(signal) and math.isfinite(noise)):
        raise ValueError("signal must be positive and noise_var non-negative")
    ps = [int(p) for p in q["feature_counts"]]
    if D < n + 2 or any(not 1 <= p <= D or n - 1 <= p <= n + 1 for p in ps):
        raise ValueError("need D >= n + 2 and feature counts in 1..D outside [n-1, n+1] (the risk is infinite there)")
    return n, D, signal, noise, ps


def risk_formulas(n, D, signal, noise, *, misspecification=True, bias=True, floor=True, over_ratio="n"):
    """(under, over): the two branches as functions of p; the keywords reproduce declared mistakes."""
    def tau2(p):
        return (signal * (D - p) / D if misspecification else 0) + noise

    def under(p):
        return tau2(p) * ((1 if floor else 0) + p / (n - p - 1))

    def over(p):
        ratio = (n if over_ratio == "n" else p) / (p - n - 1)
        return (signal * p / D * (1 - n / p) if bias else 0) + tau2(p) * ((1 if floor else 0) + ratio)
    return under, over


def _answers(q, **kw):
    n, D, signal, noise, ps = _read(q)
    under, over = risk_formulas(n, D, signal, noise, **kw)
    risk = lambda p: under(p) if p <= n - 2 else over(p)   # noqa: E731
    s = symbols_for(SYMBOLS)
    sym_signal, sym_noise, sym_D = sympy.nsimplify(signal), sympy.nsimplify(noise), sympy.Integer(D)
    under_s, over_s = risk_formulas(s["n"], sym_D, sym_signal, sym_noise, **kw)
    return {
        "risks": [risk(p) for p in ps],
        "crossover_features": next((p for p in range(n + 2, D + 1)
                                    if over(p) < min(under(k) for k in range(1, n - 1))), None),
        "risk_all_features": over(D),
        "risk_under_expr": sympy.simplify(under_s(s["p"])),
        "risk_over_expr": sympy.simplify(over_s(s["p"])),
    }


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    out = {}
    for key, value in wrong.items():
        same = sympy.simplify(value - right[key]) == 0 if isinstance(value, sympy.Basic) else value == right[key]
        if not same and value is not None:   # a mistake that never crosses over gives no answer
            out[key] = value
    return out


class DoubleDescentWorked(Problem):
    id = "tds-w1-double-descent"
    title = "Double descent: the test risk of minimum-norm least squares on p of D features"
    strand = "mathematics"
    kind = "worked"
    assignment = "tds-worked"
    symbols = SYMBOLS
    # Sizes like Belkin, Hsu and Xu's Fig. 1 (tens of examples, a hundred or so features),
    # with and without label noise.
    variants = {
        "A": {"n_samples": 40, "total_features": 100, "signal": 1.0, "noise_var": 0.0,
              "feature_counts": [10, 20, 30, 60, 100]},
        "B": {"n_samples": 20, "total_features": 60, "signal": 1.0, "noise_var": 0.25,
              "feature_counts": [5, 10, 15, 25, 40, 60]},
        "C": {"n_samples": 50, "total_features": 200, "signal": 2.0, "noise_var": 0.1,
              "feature_counts": [10, 25, 45, 55, 100, 200]},
        "D": {"n_samples": 30, "total_features": 150, "signal": 1.0, "noise_var": 0.2,
              "feature_counts": [4, 12, 24, 35, 60, 150]},
    }
    checks = {
        "risk_under_expr": Expr(symbols=SYMBOLS, ranges=(("p", (1, 5)), ("n", (10, 20)))),
        "risk_over_expr": Expr(symbols=SYMBOLS, ranges=(("p", (30, 60)), ("n", (5, 20)))),
        "risks": Numbers(rtol=1e-6),
        "crossover_features": Count(),
        "risk_all_features": Number(rtol=1e-6),
    }
    cells = {
        "check_expressions": ("risk_under_expr", "risk_over_expr"),
        "check_numbers": ("risks", "crossover_features", "risk_all_features"),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("unused-features-ignored",
                "the features the learner does not see were left out of the noise; their part of the "
                "signal, |β_rest|² = signal (D - p)/D, acts as extra noise τ² = |β_rest|² + σ².",
                lambda q: _changed(q, misspecification=False),
                instant="the part of the signal that the learner's features cannot see."),
        Mistake("bias-forgotten",
                "above the threshold the minimum-norm fit only recovers the projection of β_p onto the "
                "n-dimensional row space; the bias term |β_p|² (1 - n/p) is missing.",
                lambda q: _changed(q, bias=False),
                instant="what the minimum-norm fit cannot recover past the threshold."),
        Mistake("noise-floor-forgotten",
                "the risk of a fresh example includes the unavoidable τ² itself (the '1 +'); only the "
                "estimation error was counted.",
                lambda q: _changed(q, floor=False),
                instant="the error a fresh example carries even for a perfect estimate."),
        Mistake("variance-ratio-p",
                "above the threshold E tr (X Xᵀ)⁻¹ for an n x p Gaussian X is n/(p - n - 1), not p/(p - n - 1).",
                lambda q: _changed(q, over_ratio="p"),
                instant="which dimension sets the variance term past the threshold."),
    )


PROBLEM = DoubleDescentWorked()
