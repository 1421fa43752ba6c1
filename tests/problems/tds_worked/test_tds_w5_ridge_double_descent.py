"""tds-w5-ridge-double-descent: the exact risks against a seeded Monte Carlo simulation of the fits, and the
tuned ridge at Nakkiran et al.'s printed configuration."""
import math

import numpy as np
import pytest
import sympy

from graders import problems
from graders.problems.tds_worked.tds_w5_ridge_double_descent import risk_formulas

P = problems.get("tds-w5-ridge-double-descent")


def simulated_excess_risk(n, p, noise, signal, lam=0.0, trials=2000, seed=0):
    rng = np.random.default_rng(seed)
    total = 0.0
    for _ in range(trials):
        beta = rng.normal(size=p)
        beta *= math.sqrt(signal) / np.linalg.norm(beta)
        X = rng.normal(size=(n, p))
        y = X @ beta + math.sqrt(noise) * rng.normal(size=n)
        fit = np.linalg.solve(X.T @ X + lam * np.eye(p), X.T @ y) if lam > 0 else np.linalg.pinv(X) @ y
        total += np.sum((fit - beta) ** 2)
    return total / trials


@pytest.mark.parametrize("p", [4, 12, 28, 60])
def test_exact_risk_matches_simulation(p):
    q = {"n_samples": 20, "noise_var": 0.3, "signal": 1.5, "feature_counts": [p]}
    formula = P.solve(q)["risks"][0]
    assert abs(simulated_excess_risk(20, p, 0.3, 1.5) - formula) < 0.05 * formula


def test_branches_blow_up_at_the_threshold_and_match_hmrt_limits():
    """HMRT 2022, Theorem 1 (isotropic features): σ²γ/(1-γ) below, r²(1-1/γ) + σ²/(γ-1) above, as n, p -> ∞."""
    q = P.variants["A"]
    r = P.solve(q)
    p, n, g = sympy.Symbol("p", positive=True), sympy.Symbol("n", positive=True), sympy.Symbol("g", positive=True)
    assert sympy.limit(r["risk_under_expr"].subs(n, 100), p, 99, dir="-") == sympy.oo
    assert sympy.limit(r["risk_over_expr"].subs(n, 100), p, 101, dir="+") == sympy.oo
    s2, r2 = sympy.nsimplify(q["noise_var"]), sympy.nsimplify(q["signal"])
    assert sympy.simplify(sympy.limit(r["risk_under_expr"].subs(p, g * n), n, sympy.oo) - s2 * g / (1 - g)) == 0
    assert sympy.simplify(sympy.limit(r["risk_over_expr"].subs(p, g * n), n, sympy.oo)
                          - (r2 * (1 - 1 / g) + s2 / (g - 1))) == 0
    with pytest.raises(ValueError):
        P.solve({**q, "feature_counts": [100]})


def test_best_over_features_is_the_discrete_minimum():
    for q in P.variants.values():
        n, best = q["n_samples"], P.solve(q)["best_over_features"]
        _, over = risk_formulas(q["noise_var"], q["signal"])
        assert all(over(best, n) <= over(k, n) for k in range(n + 2, 20 * n))


def test_tuned_ridge_at_nakkiran_fig1_configuration():
    """Nakkiran, Venkat, Kakade and Ma (ICLR 2021), Fig. 1 caption, prints the setting: x ~ N(0, I_d), d = 500,
    σ = 0.5, |β*| = 1, ridge argmin |Xβ - y|² + λ|β|². At n = d the unregularised fit has no finite risk,
    while ridge at λ* = dσ²/|β*|² = 125 is close to the proportional-limit value. The value of λ_opt in their
    Lemma 2 could not be read here; λ* = dσ²/|β|² is derived (posterior mean under an isotropic prior)."""
    q = {"n_samples": 500, "noise_var": 0.25, "signal": 1.0, "feature_counts": [10]}
    r = P.solve(q)
    assert r["ridge_lambda"] == pytest.approx(125.0)
    sim = simulated_excess_risk(500, 500, 0.25, 1.0, lam=r["ridge_lambda"], trials=8)
    assert abs(sim - r["ridge_risk_threshold"]) < 0.06 * r["ridge_risk_threshold"]
    assert r["ridge_risk_threshold"] < 1.0          # below the risk of predicting zero, |β*|² = 1
    # the tuned ridge beats every minimum-norm model near the threshold
    near = P.solve({**q, "feature_counts": [490, 510]})["risks"]
    assert min(near) > 10 * r["ridge_risk_threshold"]
