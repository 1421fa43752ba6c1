"""tds-e2-metric-artefacts: Schaeffer et al.'s model, solved back, and its abruptness measured."""
import math

import numpy as np
import sympy

from graders import problems

P = problems.get("tds-e2-metric-artefacts")


def test_emergence_size_gives_the_target_exact_match():
    for q in P.variants.values():
        r = P.solve(q)
        N = sympy.Symbol("N", positive=True)
        at = float(r["exact_match_expr"].subs(N, r["emergence_size"]))
        assert math.isclose(at, q["target"], rel_tol=1e-9)
        p = math.exp(-(r["emergence_size"] / q["c"]) ** q["alpha"])
        assert math.isclose(p, r["accuracy_at_emergence"], rel_tol=1e-9)


def test_exact_match_rises_over_fewer_decades_than_token_accuracy_is_smooth():
    # Schaeffer et al. 2023, Fig. 2: p^L switches on within about a decade of N while p moves steadily.
    q = P.variants["B"]
    sizes = np.logspace(6, 16, 2001)
    p = np.exp(-(sizes / q["c"]) ** q["alpha"])
    em = p ** q["length"]
    rise = lambda y: np.log10(sizes[np.argmax(y > 0.9)] / sizes[np.argmax(y > 0.1)])  # noqa: E731
    assert rise(em) < rise(p)


def test_kaplan_form_of_the_loss():
    # Kaplan et al. 2020, eq. (1.1): L(N) = (N_c / N)^alpha_N with N_c = 8.8e13, alpha_N = 0.076; the same
    # law written as (N/c)^alpha with alpha = -alpha_N.
    r = P.solve({"c": 8.8e13, "alpha": -0.076, "length": 1, "sizes": [1.5e9], "target": 0.5})
    assert math.isclose(-math.log(r["token_accuracy"][0]), (8.8e13 / 1.5e9) ** 0.076, rel_tol=1e-12)
