"""tds-e10-test-set-resolution: the chance of a false zero, solved back, on tds-e2's model.

What the tests hold the item to: the smallest nonzero score of n questions is 1/n (Schaeffer, Miranda
and Koyejo 2023, §2, the resolution argument; a definition, not a printed number); the exact match is
tds-e2's, which its own test ties to Kaplan et al. 2020, eq. (1.1) (N_c = 8.8e13, alpha_N = 0.076), and
the same law is checked here; the 'rule of three' (about -ln(0.05) = 3.0 expected successes for a 95%
chance of seeing one) is standard binomial arithmetic. §3's "better statistics" experiment is described
in the notebook from the paper's text as remembered and summarised by secondary sources; its figures'
numbers are not used.
"""
import math

import sympy

from graders import problems

P = problems.get("tds-e10-test-set-resolution")
E2 = problems.get("tds-e2-metric-artefacts")
N, n = sympy.Symbol("N", positive=True), sympy.Symbol("n", positive=True)


def _zero_probability(q, size, count):
    em = math.exp(-q["length"] * (size / q["c"]) ** q["alpha"])
    return (1 - em) ** count


def test_one_question_recovers_tds_e2s_exact_match():
    # Same model as tds-e2: with one question, the chance of a nonzero score is e2's exact match.
    for q in P.variants.values():
        r = P.solve(q)
        e2 = E2.solve({"c": q["c"], "alpha": q["alpha"], "length": q["length"],
                       "sizes": [1e8, 1e9, 1e10], "target": 0.5})
        for size, exact in zip([1e8, 1e9, 1e10], e2["exact_match"]):
            at = float(r["zero_probability_expr"].subs({N: size, n: 1}))
            assert math.isclose(1 - at, exact, rel_tol=1e-9, abs_tol=1e-12)   # 1 - (1 - em) loses tiny em


def test_resolvable_size_puts_the_false_zero_chance_at_delta():
    for q in P.variants.values():
        r = P.solve(q)
        assert math.isclose(_zero_probability(q, r["resolvable_size"], q["n_test"]), q["delta"], rel_tol=1e-6)
        assert r["smallest_score"] == 1 / q["n_test"]


def test_test_size_needed_is_the_smallest_that_works():
    for q in P.variants.values():
        r = P.solve(q)
        k = r["test_size_needed"]
        assert _zero_probability(q, q["target_size"], k) <= q["delta"]
        assert _zero_probability(q, q["target_size"], k - 1) > q["delta"]
        assert k > q["n_test"]      # every variant's target model reads as zero on its own test set


def test_rule_of_three_and_the_expected_count_slip():
    # For large n the criterion asks for about ln(1/delta) expected successes (3.0 at 5%), not one;
    # one expected success still reads 0 with chance (1 - 1/n)^n, near exp(-1) = 0.37.
    for q in P.variants.values():
        r = P.solve(q)
        em = math.exp(-q["length"] * (r["resolvable_size"] / q["c"]) ** q["alpha"])
        assert math.isclose(q["n_test"] * em, -math.log(q["delta"]), rel_tol=0.01)
        assert math.isclose((1 - 1 / q["n_test"]) ** q["n_test"], math.exp(-1), rel_tol=0.01)


def test_kaplan_law_in_the_same_model():
    # Kaplan et al. 2020, eq. (1.1): L(N) = (8.8e13/N)^0.076, i.e. c = 8.8e13, alpha = -0.076.
    q = {"c": 8.8e13, "alpha": -0.076, "length": 1, "n_test": 1, "delta": 0.5, "target_size": 1.5e9}
    r = P.solve(q)
    loss = (8.8e13 / 1.5e9) ** 0.076
    assert math.isclose(float(r["zero_probability_expr"].subs({N: 1.5e9, n: 1})), 1 - math.exp(-loss),
                        rel_tol=1e-12)


def test_each_mistake_changes_an_answer_in_every_variant():
    for q in P.variants.values():
        right = P.solve(q)
        for mistake in P.mistakes:
            wrong = mistake.wrong(q)
            assert wrong, mistake.name
            assert any(not P.checks[k].judge(right[k], v).passed for k, v in wrong.items()), mistake.name
