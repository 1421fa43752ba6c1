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


def test_the_linear_score_mistake_is_described_as_what_it_computes():
    """The declared mistake scores 1 - L(1 - p): one minus the expected number of wrong tokens (the
    expected token edit distance, for substitutions, which Schaeffer et al. 2023 §2 use as their
    linear metric), and p^L to first order in 1 - p. It is not Schaeffer et al.'s metric, so neither
    its name nor its feedback calls it a partial-credit metric; its feedback says what it is."""
    mistake = next(m for m in P.mistakes if "1 - L (1 - p)" in m.feedback)
    assert "partial" not in mistake.name and "partial-credit metric" not in mistake.feedback, mistake
    assert "edit distance" in mistake.feedback and "first order" in mistake.feedback, mistake.feedback
    for q in P.variants.values():
        L = q["length"]
        wrong, right = mistake.wrong(q)["exact_match"], P.solve(q)["exact_match"]
        for p, score, exact in zip(P.solve(q)["token_accuracy"], wrong, right):
            edit_distance = sum(k * math.comb(L, k) * (1 - p) ** k * p ** (L - k) for k in range(L + 1))
            assert math.isclose(score, 1 - edit_distance, rel_tol=1e-9, abs_tol=1e-12)
            assert 0 <= exact - score <= math.comb(L, 2) * (1 - p) ** 2 + 1e-12     # second order
