"""tds-w5-ridge-double-descent: the exact risk of minimum-norm least squares with p isotropic features,
and the optimally tuned ridge that removes its peak.

The model (well specified, every feature used): x ~ N(0, I_p), y = x·β + σ ε with ε ~ N(0, 1) and
|β|² = r² whatever p is; n examples; β̂ = X⁺y. The risk is the excess risk on a fresh example,
E[(x·β̂ - x·β)²] = E|β̂ - β|² (Hastie, Montanari, Rosset and Tibshirani, "Surprises in
high-dimensional ridgeless least squares interpolation", Ann. Statist. 50(2), 2022, §2, who define
the risk this way, without the noise of the fresh label). Exactly, for finite n and p:
    p <= n - 2:   σ² p / (n - p - 1)              (the mean of an inverse Wishart matrix)
    n-1 <= p <= n+1:   infinite
    p >= n + 2:   r² (1 - n/p) + σ² n / (p - n - 1)
(the second is Belkin, Hsu and Xu, "Two models of double descent for weak features", SIAM J. Math.
Data Sci. 2(4), 2020, Theorem 1, with every feature used and the fresh label's σ² taken out). As
n, p -> ∞ with p/n -> γ these become HMRT's Theorem 1 for isotropic features: σ²γ/(1 - γ) and
r²(1 - 1/γ) + σ²/(γ - 1).

Ridge, β̂_λ = argmin |y - Xb|² + λ|b|² (the unnormalised objective of Nakkiran, Venkat, Kakade and
Ma, "Optimal regularization can mitigate double descent", ICLR 2021, Fig. 1): with a Gaussian prior
β ~ N(0, (r²/p) I) the posterior mean is ridge with λ* = p σ²/r², optimal for every n; for a fixed β
of norm r it is optimal as n, p grow (rotational invariance). Its proportional-limit risk is
σ² γ m(-λ*/n) with m the Stieltjes transform of the Marchenko-Pastur law of ratio γ; at γ = 1 this is
σ² (√(1 + 4 r²/σ²) - 1)/2, finite: tuned ridge has no peak.

Answers: `risk_under_expr`, `risk_over_expr` (in p and n, the variant's σ² and r² as numbers),
`risks` (at each of `feature_counts`, none in [n-1, n+1]), `best_over_features` (the whole p >= n+2
with the least risk), `ridge_lambda` (λ* at p = n) and `ridge_risk_threshold` (the tuned ridge's
proportional-limit risk at p = n). The test checks the formulas against a Monte Carlo simulation.
"""
from __future__ import annotations

import math

import sympy

from graders.numeric import Count, Number, Numbers
from graders.problem import Mistake, Problem
from graders.problems.common.changed import differing
from graders.symbolic import Expr, symbols_for

SYMBOLS = ("p", "n")


def _read(q):
    n = q["n_samples"]
    if isinstance(n, bool) or not isinstance(n, (int, float)) or n != int(n) or n < 4:
        raise ValueError(f"n_samples must be a whole number >= 4, not {n!r}")
    n = int(n)
    noise, signal = float(q["noise_var"]), float(q["signal"])
    if not (noise > 0 and signal > 0 and math.isfinite(noise) and math.isfinite(signal)):
        raise ValueError("noise_var and signal must be positive")
    ps = [int(p) for p in q["feature_counts"]]
    if any(p < 1 or n - 1 <= p <= n + 1 for p in ps):
        raise ValueError("feature counts must be >= 1 and outside [n-1, n+1] (the risk is infinite there)")
    if signal <= noise:
        raise ValueError("need signal > noise_var: otherwise the risk past the threshold has no least p")
    return n, noise, signal, ps


def risk_formulas(noise, signal, *, over_ratio="n", bias="complement", floor=False):
    """(under, over) as functions of (p, n); the keywords reproduce declared mistakes."""
    extra = noise if floor else 0

    def under(p, n):
        return noise * p / (n - p - 1) + extra

    def over(p, n):
        b = signal * (1 - n / p) if bias == "complement" else signal * n / p
        return b + noise * (n if over_ratio == "n" else p) / (p - n - 1) + extra
    return under, over


def tuned_ridge_risk(gamma, noise, signal):
    """Proportional-limit risk of ridge at λ* = pσ²/r² (normalised: σ²γ/r²), isotropic features."""
    lam = noise * gamma / signal
    b = 1 - gamma + lam
    m = (-b + math.sqrt(b * b + 4 * gamma * lam)) / (2 * gamma * lam)
    return noise * gamma * m


def _answers(q, *, normalised_lambda=False, **kw):
    n, noise, signal, ps = _read(q)
    under, over = risk_formulas(noise, signal, **kw)
    risk = lambda p: under(p, n) if p <= n - 2 else over(p, n)   # noqa: E731
    s = symbols_for(SYMBOLS)
    u_s, o_s = risk_formulas(sympy.nsimplify(noise), sympy.nsimplify(signal), **kw)
    # the over-parametrised risk falls then rises; its real minimiser is r(n+1)/(r - σ)
    r, sd = math.sqrt(signal), math.sqrt(noise)
    guess = r * (n + 1) / (r - sd)
    candidates = {max(n + 2, math.floor(guess) + d) for d in (-1, 0, 1, 2)} | {n + 2}
    best = min(sorted(candidates), key=lambda p: over(p, n))
    floor = noise if kw.get("floor") else 0
    return {
        "risk_under_expr": sympy.simplify(u_s(s["p"], s["n"])),
        "risk_over_expr": sympy.simplify(o_s(s["p"], s["n"])),
        "risks": [risk(p) for p in ps],
        "best_over_features": best,
        "ridge_lambda": (noise / signal) if normalised_lambda else n * noise / signal,
        "ridge_risk_threshold": tuned_ridge_risk(1.0, noise, signal) + floor,
    }


def _changed(q, **kw):
    return differing(_answers(q), _answers(q, **kw), rtol=1e-6)


class RidgeDoubleDescentWorked(Problem):
    id = "tds-w5-ridge-double-descent"
    title = "The exact risk of ridgeless least squares with isotropic features, and the tuned ridge without a peak"
    strand = "mathematics"
    kind = "worked"
    assignment = "tds-worked"
    symbols = SYMBOLS
    # A: Nakkiran et al. 2021's Fig. 1 noise and signal (σ = 0.5, |β| = 1) with n = 100 examples;
    # B-D: illustrative sizes and signal-to-noise ratios r²/σ² from 4 to 20 (not copied from a table),
    # each with r > σ so that the over-parametrised branch has a least point.
    variants = {
        "A": {"n_samples": 100, "noise_var": 0.25, "signal": 1.0,
              "feature_counts": [20, 50, 90, 110, 200, 400]},
        "B": {"n_samples": 50, "noise_var": 0.5, "signal": 4.0,
              "feature_counts": [10, 30, 45, 55, 80, 150]},
        "C": {"n_samples": 200, "noise_var": 0.1, "signal": 2.0,
              "feature_counts": [50, 150, 190, 210, 300, 800]},
        "D": {"n_samples": 40, "noise_var": 0.5, "signal": 3.0,
              "feature_counts": [5, 20, 35, 45, 60, 120]},
    }
    checks = {
        "risk_under_expr": Expr(symbols=SYMBOLS, ranges=(("p", (1, 5)), ("n", (10, 20)))),
        "risk_over_expr": Expr(symbols=SYMBOLS, ranges=(("p", (30, 60)), ("n", (5, 20)))),
        "risks": Numbers(rtol=1e-6),
        "best_over_features": Count(),
        "ridge_lambda": Number(rtol=1e-6),
        "ridge_risk_threshold": Number(rtol=1e-4),
    }
    cells = {
        "check_expressions": ("risk_under_expr", "risk_over_expr"),
        "check_numbers": ("risks", "best_over_features"),
        "check_ridge": ("ridge_lambda", "ridge_risk_threshold"),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("variance-ratio-p",
                "past the threshold the noise enters through E tr (X Xᵀ)⁻¹ = n/(p - n - 1) for an n x p "
                "Gaussian X: the variance is σ² n/(p - n - 1), not σ² p/(p - n - 1).",
                lambda q: _changed(q, over_ratio="p"),
                instant="which dimension sets the variance term past the threshold."),
        Mistake("bias-complement",
                "the minimum-norm fit keeps the part of β inside the n-dimensional row space and loses the "
                "rest; the lost part, the bias, is r² (1 - n/p), not r² n/p.",
                lambda q: _changed(q, bias="n_over_p"),
                instant="which part of the true coefficients the interpolating fit recovers."),
        Mistake("fresh-label-noise-added",
                "the risk here is HMRT's excess risk, E(x·β̂ - x·β)², without the noise σ² of the fresh "
                "label; adding σ² gives the prediction error of tds-w1 instead.",
                lambda q: _changed(q, floor=True),
                instant="the definition of risk that this problem uses."),
        Mistake("normalised-lambda",
                "λ* = σ²γ/r² belongs to the objective averaged over examples, (1/n)|y - Xb|² + λ|b|²; for "
                "the summed objective |y - Xb|² + λ|b|² the same ridge is λ* = p σ²/r².",
                lambda q: _changed(q, normalised_lambda=True),
                instant="how the penalty's scale depends on how the loss is normalised."),
    )


PROBLEM = RidgeDoubleDescentWorked()
