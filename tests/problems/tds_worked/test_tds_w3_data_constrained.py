"""tds-w3-data-constrained: Muennighoff et al.'s effective-data law against the authors' own numbers.

Sources: Muennighoff et al. 2023, "Scaling Data-Constrained Language Models", arXiv 2305.16264,
§3.1, eqs. (5)-(6), which print R*_D = 15.4 and R*_N = 5.3; and the authors' repository
huggingface/datablations, README "Parametric Fit", which prints the unrounded fit
(log A = 6.255414, log B = 7.3049974, log E = 0.6254804, alpha = beta = 0.3526596,
R*_D = 15.387756, R*_N = 5.309743) and the losses of the two models of the paper's Fig. 1 (right):
6.34B parameters on 242B tokens and 8.67B parameters on 178B tokens, both with 25B unique tokens,
2.2256440889984477 and 2.2269634075087867. Both were read with the search tool (the README of
huggingface/datablations); the paper's own PDF was not, so 15.4 and 5.3 are checked as the
roundings of the repository's values.
"""
import math

import pytest
import sympy

from graders import problems
from graders.problems.tds_worked.tds_w3_data_constrained import effective

P = problems.get("tds-w3-data-constrained")

LOG_A, LOG_B, LOG_E = 6.255414, 7.3049974, 0.6254804
ALPHA = BETA = 0.3526596
R_STAR_D, R_STAR_N = 15.387756, 5.309743


def readme_loss(n, d, u):
    """The README's loss, with the effective data and effective parameters from `effective`."""
    a, b, e = math.exp(LOG_A), math.exp(LOG_B), math.exp(LOG_E)
    g = (ALPHA * a / (BETA * b)) ** (1 / (ALPHA + BETA))
    useful_n = min(n, (u * g) ** (BETA / ALPHA) * g)      # the parameters U_D unique tokens can use
    d_eff = effective(u, max(d / u - 1, 0), R_STAR_D)
    n_eff = effective(useful_n, max(n / useful_n - 1, 0), R_STAR_N)
    return e + a / n_eff ** ALPHA + b / d_eff ** BETA


@pytest.mark.parametrize("n, d, printed", [(6.34e9, 242e9, 2.2256440889984477),
                                           (8.67e9, 178e9, 2.2269634075087867)])
def test_effective_data_reproduces_the_authors_figure_1_losses(n, d, printed):
    assert readme_loss(n, d, 25e9) == pytest.approx(printed, rel=1e-9)


def test_printed_constants_are_the_roundings_of_the_fit():
    assert round(R_STAR_D, 1) == 15.4 and round(R_STAR_N, 1) == 5.3
    q = P.variants["B"]
    assert q["r_star_data"] == 15.4 and q["r_star_params"] == 5.3


def test_solve_uses_the_law_and_its_limits():
    q = {**P.variants["B"], "epochs": [1, 1.0001, 1000]}
    r = P.solve(q)
    u = q["unique_tokens"]
    assert r["effective_tokens"][0] == pytest.approx(u)                      # one pass: all fresh
    assert r["effective_tokens"][1] == pytest.approx(1.0001 * u, rel=1e-7)   # a sliver of a repeat: fresh
    assert r["effective_tokens"][2] == pytest.approx(u * (1 + 15.4), rel=1e-9)   # the ceiling
    D = sympy.Symbol("D", positive=True)
    for e, value in zip(q["epochs"], r["effective_tokens"]):
        assert float(r["effective_data_expr"].subs(D, e * u)) == pytest.approx(value, rel=1e-9)


def test_half_value_pass_and_target_invert_the_law():
    for q in P.variants.values():
        r = P.solve(q)
        u, rs = q["unique_tokens"], q["r_star_data"]
        h = r["half_value_epochs"] - 1
        # the marginal pass, d D'/d R, is half of a fresh pass there
        step = 1e-6
        marginal = (effective(u, h + step, rs) - effective(u, h - step, rs)) / (2 * step)
        assert marginal == pytest.approx(u / 2, rel=1e-6)
        assert effective(u, r["epochs_for_target"] - 1, rs) == pytest.approx(q["target_effective"], rel=1e-9)


def test_four_epochs_lose_little_and_the_variants_differ():
    r = P.solve({**P.variants["A"], "epochs": [4]})
    assert 0.05 < r["value_lost"][0] < 0.08
    assert len({str(sorted(q.items())) for q in P.variants.values()}) == 4
