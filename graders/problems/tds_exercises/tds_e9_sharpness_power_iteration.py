"""tds-e9-sharpness-power-iteration: measuring the sharpness by power iteration on Hessian-vector products.

Power iteration (the Hessian is never formed: each step is one Hessian-vector product, Pearlmutter,
"Fast exact multiplication by the Hessian", Neural Computation 6(1), 1994) repeats
v <- Hv/|Hv| and reads the Rayleigh quotient R = vᵀHv. Write the start vector in the eigenbasis,
v0 = Σ c_i u_i; after k products v_k ∝ Σ c_i λ_i^k u_i, so
    R_k = Σ c_i² λ_i^(2k+1) / Σ c_i² λ_i^(2k).
It converges to the eigenvalue of LARGEST MAGNITUDE, λ1, at the rate ρ = |λ2|/|λ1| per product
for the vector and ρ² for the quotient. With two directions of equal weight and λ2 = ρ λ1 > 0 the
relative error is exactly
    (λ1 - R_k)/λ1 = (1 - ρ) ρ^(2k) / (1 + ρ^(2k)),
and the leading-order count of products for a relative error tol is ln(tol) / (2 ln ρ).

PyHessian (Yao, Gholami, Keutzer and Mahoney, "PyHessian: Neural Networks Through the Lens of the
Hessian", IEEE Big Data 2020; `hessian.eigenvalues(maxIter=100, tol=1e-3)` in its code) stops when
two successive quotients differ by less than tol relative to the earlier one. Cohen et al. 2021
(edge of stability) use Lanczos instead (scipy's `eigsh` on Hessian-vector products, in their
released code `src/utilities.py`), not power iteration.

The variant lists the Hessian's eigenvalues along the directions the start vector touches, with
equal weight on each (an illustrative but realistic spectrum: top eigenvalues near 2/η at the
edge of stability, a near-tie, a negative eigenvalue near initialisation). Answers:
`rayleigh_error_expr` (in rho, k), `iterations_expr` (in rho, tol), `found_eigenvalue`,
`convergence_ratio`, `iterations_estimate` (ceil of the leading-order count), `iterations_needed`
(the fewest k with relative error <= tol, exactly), `stop_iteration` and `error_at_stop` (where
PyHessian's rule stops, capped at max_iter - 1, and the true relative error of R_k there; PyHessian's
code itself returns R_(k-1) on stopping, the estimate before the last, which the notebook says).
"""
from __future__ import annotations

import math

import sympy

from graders.numeric import Count, Number
from graders.problem import Mistake, Problem
from graders.problems.common.changed import differing
from graders.symbolic import Expr, symbols_for

SYMBOLS = ("rho", "k", "tol")


def _read(q):
    lams = [float(x) for x in q["eigenvalues"]]
    tol, max_iter = float(q["tol"]), q["max_iter"]
    if len(lams) < 2 or any(not math.isfinite(x) or x == 0 for x in lams):
        raise ValueError("need at least two finite non-zero eigenvalues")
    mags = sorted((abs(x) for x in lams), reverse=True)
    if mags[0] == mags[1]:
        raise ValueError("the two largest magnitudes tie: power iteration does not converge")
    if not 0 < tol < 1 or isinstance(max_iter, bool) or int(max_iter) != max_iter or max_iter < 2:
        raise ValueError("need 0 < tol < 1 and a whole max_iter >= 2")
    return lams, tol, int(max_iter)


def rayleigh(lams, k):
    """R_k for a start vector of equal weight on each eigendirection (scaled to avoid overflow)."""
    top = max(abs(x) for x in lams)
    num = sum((x / top) ** (2 * k) * x for x in lams)
    den = sum((x / top) ** (2 * k) for x in lams)
    return num / den


def _answers(q, *, doubled=True, by_magnitude=True, change_as_error=False):
    lams, tol, max_iter = _read(q)
    s = symbols_for(SYMBOLS)
    rho, k = s["rho"], s["k"]
    power = 2 * k if doubled else k
    dominant = max(lams, key=abs) if by_magnitude else max(lams)
    order = sorted(lams, key=abs, reverse=True) if by_magnitude else sorted(lams, reverse=True)
    ratio = abs(order[1]) / abs(order[0])
    lam1 = max(lams, key=abs)       # what the iteration really converges to
    err = lambda t: abs(rayleigh(lams, t) - lam1) / abs(lam1)   # noqa: E731
    needed = next(t for t in range(0, 100_000) if err(t) <= tol)
    stop, change = max_iter - 1, None
    for t in range(1, max_iter):
        prev, cur = rayleigh(lams, t - 1), rayleigh(lams, t)
        if abs(prev - cur) / abs(prev) < tol:
            stop, change = t, abs(prev - cur) / abs(prev)
            break
    return {
        "rayleigh_error_expr": (1 - rho) * rho ** power / (1 + rho ** power),
        "iterations_expr": sympy.log(s["tol"]) / ((2 if doubled else 1) * sympy.log(rho)),
        "found_eigenvalue": dominant,
        "convergence_ratio": ratio,
        "iterations_estimate": math.ceil(math.log(tol) / ((2 if doubled else 1) * math.log(ratio))),
        "iterations_needed": needed,
        "stop_iteration": stop,
        "error_at_stop": change if change_as_error and change is not None else err(stop),
    }


def _changed(q, **kw):
    return differing(_answers(q), _answers(q, **kw), rtol=1e-3)


def _by_algebraic_order(q):
    """Ranking the spectrum by value, not by size: only a mistake where a negative eigenvalue matters."""
    return _changed(q, by_magnitude=False)


class SharpnessPowerIterationExercise(Problem):
    id = "tds-e9-sharpness-power-iteration"
    title = "Measuring sharpness by power iteration: how fast it converges, and what it finds"
    strand = "mathematics"
    kind = "exercise"
    assignment = "tds-exercises"
    symbols = SYMBOLS
    # Illustrative but realistic spectra (no paper prints these exact lists): A a network at the
    # edge of stability with η = 0.01 (sharpness near 2/η = 200, Cohen et al. 2021) and a few
    # outliers below it, as Sagun et al. 2017 and Papyan 2019 describe; B a near-tie at the top;
    # C a negative eigenvalue larger in size than the top positive one, possible away from a minimum
    # (Ghorbani, Krishnan and Xiao, ICML 2019, estimate such spectra with their negative part);
    # D a sharp model with a negative eigenvalue second in size. Tolerances and caps:
    # PyHessian's defaults (1e-3, 100), and a stricter run in D.
    variants = {
        "A": {"eigenvalues": [220.0, 160.0, 95.0, 40.0, -25.0], "tol": 1e-3, "max_iter": 100},
        "B": {"eigenvalues": [104.0, 101.0, 60.0, -8.0], "tol": 1e-3, "max_iter": 100},
        "C": {"eigenvalues": [40.0, 25.0, 12.0, -65.0], "tol": 1e-3, "max_iter": 100},
        "D": {"eigenvalues": [2000.0, 1400.0, -1700.0, 300.0], "tol": 1e-4, "max_iter": 200},
    }
    checks = {
        "rayleigh_error_expr": Expr(symbols=SYMBOLS, ranges=(("rho", (0.1, 0.95)), ("k", (1, 20)), ("tol", (1e-6, 0.1)))),
        "iterations_expr": Expr(symbols=SYMBOLS, ranges=(("rho", (0.1, 0.95)), ("k", (1, 20)), ("tol", (1e-6, 0.1)))),
        "found_eigenvalue": Number(rtol=1e-9),
        "convergence_ratio": Number(rtol=1e-6),
        "iterations_estimate": Count(),
        "iterations_needed": Count(),
        "stop_iteration": Count(),
        "error_at_stop": Number(rtol=1e-3),
    }
    cells = {
        "check_expressions": ("rayleigh_error_expr", "iterations_expr"),
        "check_numbers": ("found_eigenvalue", "convergence_ratio", "iterations_estimate", "iterations_needed"),
        "check_stopping": ("stop_iteration", "error_at_stop"),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("vector-rate-for-eigenvalue",
                "the vector's error falls as ρ^k, but the Rayleigh quotient's error is quadratic in the "
                "vector's: ρ^(2k). The count of products for a tolerance is ln(tol)/(2 ln ρ).",
                lambda q: _changed(q, doubled=False),
                instant="how the eigenvalue estimate's error relates to the error in the vector."),
        Mistake("largest-algebraic",
                "power iteration converges to the eigenvalue of largest magnitude, and a negative one "
                "counts by its size; the ratio that sets the speed is |λ2|/|λ1| in that order.",
                _by_algebraic_order,
                instant="which eigenvalue repeated multiplication by the Hessian singles out."),
        Mistake("change-taken-for-error",
                "the stopping rule looks at the change between successive estimates; when ρ is near one "
                "the change is much smaller than the distance still to go, so the true error at the "
                "stop is about the change divided by 1 - ρ².",
                lambda q: _changed(q, change_as_error=True),
                instant="the difference between a stopping rule's signal and the error that remains."),
    )


PROBLEM = SharpnessPowerIterationExercise()
