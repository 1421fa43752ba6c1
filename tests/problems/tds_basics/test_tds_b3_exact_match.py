"""tds-b3-exact-match: p^L is what independent tokens give, and the needed accuracy inverts it."""
import numpy as np

from graders import problems

P = problems.get("tds-b3-exact-match")


def test_exact_match_of_independent_tokens_by_simulation():
    rng = np.random.default_rng(0)
    for q in P.variants.values():
        r = P.solve(q)
        for p, em, errors in zip(q["per_token"], r["exact_match"], r["expected_token_errors"]):
            right = rng.random((200_000, q["length"])) < p
            assert abs(right.all(axis=1).mean() - em) < 4e-3
            assert abs((~right).sum(axis=1).mean() - errors) < 0.02


def test_needed_accuracy_gives_the_target():
    for q in P.variants.values():
        assert np.isclose(P.solve(q)["per_token_needed"] ** q["length"], q["target"], rtol=1e-12)


def test_schaeffer_contrast_exact_match_moves_far_more_than_errors():
    # Schaeffer et al. 2023, §2: the same p rises give a near-step in p^L and a straight line in L(1-p).
    r = P.solve({"per_token": [0.5, 0.9], "length": 10, "target": 0.5})
    assert r["exact_match"][0] < 1e-3 < 0.3 < r["exact_match"][1]
    assert np.isclose(r["expected_token_errors"][0] - r["expected_token_errors"][1], 4.0)
