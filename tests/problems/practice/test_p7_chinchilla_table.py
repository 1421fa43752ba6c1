"""p7-chinchilla-table against Hoffmann et al. 2022 (arXiv 2203.15556), and the grade against mistakes.

Printed figures used as data (with their places):
- Table 3 (Approach 1): parameters, FLOPs, FLOPs in Gopher units, tokens, as printed.
- §3.4 text beside it: "a 175 billion parameter model should be trained with a compute budget of
  4.41 × 10^24 FLOPs and on over 4.2 trillion tokens"; "§3.4: the third approach predicts even smaller
  models being optimal at larger compute budgets".
- Fig. 4 caption: the parametric fit projects 40B parameters at the Gopher budget.
- Appendix D.3, Table A3, Approach 3 column: parameters -> (FLOPs, tokens).
Constant sets as in e09 (eq. (10) as printed; TeX-source values and the refit of Besiroglu et al.
2024, arXiv 2404.10102).
"""
import itertools
import math

import numpy as np
import pytest

from graders import problems
from graders.notebook import gather
from graders.problems.common.scaling_laws import allocation
from graders.problems.practice.p7_chinchilla_table import PRINTED, REFIT, TEX, probe_calls

P = problems.get("p7-chinchilla-table")

# Table 3 as printed: parameters -> (FLOPs, FLOPs in Gopher units, tokens)
TABLE3 = {
    400e6: (1.92e19, 1 / 29968, 8.0e9), 1e9: (1.21e20, 1 / 4761, 20.2e9), 10e9: (1.23e22, 1 / 46, 205.1e9),
    67e9: (5.76e23, 1.0, 1.5e12), 175e9: (3.85e24, 6.7, 3.7e12), 280e9: (9.90e24, 17.2, 5.9e12),
    520e9: (3.43e25, 59.5, 11.0e12), 1e12: (1.27e26, 221.3, 21.2e12), 10e12: (1.30e28, 22515.9, 216.2e12),
}
GOPHER_BUDGET = 5.76e23
# Table A3, Approach 3 column, as printed (the 175B row's FLOPs carry a factor-10 typo; left out)
TABLE_A3_APPROACH3 = {400e6: (2.21e19, 9.2e9), 1e9: (1.62e20, 27.1e9), 10e9: (2.46e22, 410.1e9),
                      67e9: (1.71e24, 4.1e12), 280e9: (3.52e25, 20.1e12), 520e9: (1.36e26, 43.5e12),
                      1e12: (5.65e26, 94.1e12)}


def table_rows(*ns):
    return [[n, TABLE3[n][0], TABLE3[n][2]] for n in ns]


def solve(constants, rows, factor=2.0):
    return P.solve({**constants, "rows": rows, "factor": factor})


# --- (a) the printed table and text ---------------------------------------------------------
def test_variant_rows_are_table3_rows_as_printed():
    for q in P.variants.values():
        for n, c, d in q["rows"]:
            assert (c, d) == (TABLE3[n][0], TABLE3[n][2])
        assert {k: q[k] for k in PRINTED} in (PRINTED, TEX, REFIT)


def test_gopher_units_column_agrees_with_flops_column():
    # Within the rounding of the printed FLOPs (3 significant digits), except the 10B row, whose
    # "1/46" is 1/46.8 cut off rather than rounded.
    for n, (flops, units, _) in TABLE3.items():
        if n == 10e9:
            assert int(GOPHER_BUDGET / flops) == 46 and round(GOPHER_BUDGET / flops) == 47
        else:
            assert flops / GOPHER_BUDGET == pytest.approx(units, rel=0.006), n


def test_flops_check_finds_the_inconsistent_67B_row():
    r = solve(PRINTED, table_rows(*TABLE3))
    off = [n for n, v in zip(TABLE3, r["flops_check"]) if abs(v - 1) > 0.025]
    assert off == [67e9]
    assert r["flops_check"][3] == pytest.approx(5.76e23 / 6.03e23, rel=1e-3)   # 1.5T prints 1.43T rounded


def test_text_numbers_for_175B_obey_c_6nd_but_differ_from_table3():
    text = solve(PRINTED, [[175e9, 4.41e24, 4.2e12]])["flops_check"][0]
    assert text == pytest.approx(1.0, rel=0.002)
    assert TABLE3[175e9][0] != 4.41e24 and TABLE3[175e9][2] != 4.2e12


def test_fig4_caption_40B_at_gopher_budget_with_the_tex_constants():
    r = solve(TEX, table_rows(67e9))
    assert r["n_fit"][0] == pytest.approx(40e9, abs=0.5e9)
    assert solve(PRINTED, table_rows(67e9))["n_fit"][0] < 35e9


@pytest.mark.parametrize("constants", [PRINTED, TEX], ids=["printed", "tex"])
def test_section_3_4_approach_3_predicts_smaller_models_at_larger_budgets(constants):
    ratios = solve(constants, table_rows(*TABLE3))["n_ratio"]
    assert all(a > b for a, b in itertools.pairwise(ratios))      # the gap widens with the budget
    assert all(r < 1 for r in ratios)                          # always smaller than Table 3
    assert ratios[-1] < 0.4                                    # at 10T, by a factor of 2.5 or more


def test_table3_caption_similar_is_false_for_the_papers_own_constants():
    # "The estimates for Approach 2 & 3 are similar": at and above the Gopher budget the fit wants
    # models at most 60% the size of Table 3's, and 1.5x to 2.6x the tokens.
    r = solve(TEX, table_rows(67e9, 175e9, 280e9, 520e9, 1e12, 10e12), factor=1.5)
    assert max(r["n_ratio"]) < 0.61 and min(r["d_ratio"]) > 1.5
    assert r["disagree_rows"] == [0, 1, 2, 3, 4, 5]


def test_tex_constants_reproduce_table_a3_approach3():
    # The fit evaluated at Table A3's printed FLOPs gives back its model size (the appendix table
    # is the fit's own projection), while Table 3's rows are not.
    rows = [[n, c, d] for n, (c, d) in TABLE_A3_APPROACH3.items()]
    r = solve(TEX, rows)
    for ratio in r["n_ratio"]:
        assert ratio == pytest.approx(1.0, rel=0.12)


def test_refit_agrees_with_table3_within_25_percent():
    r = solve(REFIT, table_rows(*TABLE3))
    assert all(0.8 < v < 1.25 for v in r["n_ratio"] + r["d_ratio"])


def test_reference_is_e09_closed_form_and_a_true_minimum():
    for call, out in zip(probe_calls(P.variants["A"]), P.solve(P.variants["A"])["allocation_probe"]):
        c, e, a, b, alpha, beta = call
        n, d, _, _ = allocation(c, e, a, b, alpha, beta)
        assert out == [n, d]
        assert 6 * n * d == pytest.approx(c, rel=1e-12)
        def f(x, c=c, e=e, a=a, b=b, alpha=alpha, beta=beta):
            return e + a / math.exp(alpha * x) + b / (c / (6 * math.exp(x))) ** beta
        assert f(math.log(n)) <= min(f(math.log(n) + h) for h in (-1e-3, 1e-3))


# --- (b) grading ---------------------------------------------------------------------------------
def test_interface():
    assert (P.strand, P.kind, P.assignment) == ("practice", "practice", "practice")


def test_variants_are_distinct():
    answers = [tuple(P.solve(q)["disagree_rows"]) for q in P.variants.values()]
    assert len(set(answers)) == 4
    assert len({round(P.solve(q)["n_ratio"][0], 4) for q in P.variants.values()}) == 4


@pytest.mark.parametrize("mistake", P.mistakes, ids=lambda m: m.name)
def test_every_mistake_loses_points_with_its_feedback(mistake):
    shown = False
    for q in P.variants.values():
        right = P.solve(q)
        result = P.grade(q, {**right, **mistake.wrong(q)})
        if result.score < result.max_score:
            shown = True
            assert any(mistake.feedback in line for line in result.feedback)
            assert not any(f"{right['n_fit'][0]:.4g}" in line for line in result.feedback)
    assert shown


def _golden(C, E, A, B, alpha, beta):
    def f(x):
        return E + A / math.exp(alpha * x) + B / (C / (6 * math.exp(x))) ** beta
    lo, hi, r = 0.0, math.log(C / 6), (math.sqrt(5) - 1) / 2
    for _ in range(200):
        x1, x2 = hi - r * (hi - lo), lo + r * (hi - lo)
        lo, hi = (lo, x2) if f(x1) < f(x2) else (x1, hi)
    n = math.exp((lo + hi) / 2)
    return n, C / (6 * n)


def test_a_numerical_minimiser_passes_and_the_twenty_rule_does_not():
    q = P.variants["B"]
    keys = ["allocation_probe"]
    numeric = P.grade(q, gather(P, q, keys, {"compute_optimal": _golden}), keys=keys)
    assert numeric.full_marks, numeric.feedback

    def twenty(C, E, A, B, alpha, beta):
        n = math.sqrt(C / 120)
        return n, 20 * n
    rule = P.grade(q, gather(P, q, keys, {"compute_optimal": twenty}), keys=keys)
    assert rule.score == 0 and "20 tokens per parameter" in rule.feedback[0]


def test_numpy_results_are_accepted():
    q = P.variants["C"]
    right = P.solve(q)
    answers = {k: np.asarray(v) for k, v in right.items() if k != "allocation_probe"}
    answers["disagree_rows"] = np.asarray(right["disagree_rows"], dtype=np.int64)
    keys = [k for k in P.checks if k != "allocation_probe"]
    assert P.grade(q, answers, keys=keys).full_marks


@pytest.mark.parametrize("bad", [
    {},
    {"n_fit": "1e9", "d_fit": float("nan"), "n_ratio": None, "d_ratio": [1.0], "flops_check": {"x": 1},
     "disagree_rows": "0,1", "allocation_probe": [{"error": "raised ValueError"}] * 5},
    {"allocation_probe": [[float("nan"), 1.0]] * 5, "disagree_rows": [0.5]},
])
def test_bad_answers_score_zero_without_raising(bad):
    q = P.variants["A"]
    keys = [k for k in P.checks if k in bad] or list(P.checks)
    result = P.grade(q, bad, keys=keys)
    assert result.score == 0 and len(result.feedback) == len(keys)


def test_solve_refuses_invalid_parameters():
    good = P.variants["A"]
    for change in ({"alpha": 0.0}, {"E": float("nan")}, {"factor": 1.0}, {"rows": []},
                   {"rows": [[1e9, 1e20]]}, {"B": "410.7"}, {"rows": [[1e9, -1.0, 2e10]]}):
        with pytest.raises(ValueError):
            P.solve({**good, **change})
