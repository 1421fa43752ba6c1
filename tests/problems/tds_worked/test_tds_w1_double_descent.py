"""tds-w1-double-descent: Belkin, Hsu and Xu's risk formulas against a simulation of the fit itself."""
import numpy as np
import pytest
import sympy

from graders import problems

P = problems.get("tds-w1-double-descent")


def simulated_risk(p, n, D, S, noise, trials, seed=0):
    rng = np.random.default_rng(seed)
    beta = np.full(D, np.sqrt(S / D))
    total = 0.0
    for _ in range(trials):
        X = rng.normal(size=(n, D))
        y = X @ beta + np.sqrt(noise) * rng.normal(size=n)
        w = np.linalg.pinv(X[:, :p]) @ y
        # the exact risk of this fit on a fresh example: |beta_p - w|^2 + |beta_rest|^2 + noise
        total += np.sum((beta[:p] - w) ** 2) + np.sum(beta[p:] ** 2) + noise
    return total / trials


@pytest.mark.parametrize("p", [2, 5, 20, 40])
def test_formula_matches_simulation(p):
    q = {"n_samples": 10, "total_features": 40, "signal": 1.0, "noise_var": 0.2, "feature_counts": [p]}
    formula = P.solve(q)["risks"][0]
    assert abs(simulated_risk(p, 10, 40, 1.0, 0.2, trials=3000) - formula) < 0.06 * formula


def test_the_peak_is_at_the_threshold_and_the_formulas_blow_up_there():
    q = P.variants["A"]
    r = P.solve(q)
    p = sympy.Symbol("p", positive=True)
    n = sympy.Symbol("n", positive=True)
    assert sympy.limit(r["risk_under_expr"].subs(n, 40), p, 39, dir="-") == sympy.oo
    assert sympy.limit(r["risk_over_expr"].subs(n, 40), p, 41, dir="+") == sympy.oo
    with pytest.raises(ValueError):
        P.solve({**q, "feature_counts": [40]})


def test_crossover_beats_every_underparametrised_model():
    for q in P.variants.values():
        r = P.solve(q)
        k = r["crossover_features"]
        under = [P.solve({**q, "feature_counts": [p]})["risks"][0] for p in range(1, q["n_samples"] - 1)]
        assert P.solve({**q, "feature_counts": [k]})["risks"][0] < min(under)
        if k - 1 >= q["n_samples"] + 2:
            assert P.solve({**q, "feature_counts": [k - 1]})["risks"][0] >= min(under)
