"""tds-e8-critical-batch-of-loss: Kaplan et al.'s critical-batch law, inverted and checked against the paper.

Printed numbers the tests hold the formula to (Kaplan et al. 2020, arXiv 2001.08361): eq. (5.3) of §5.1,
B_crit(L) ~ B*/L^(1/alpha_B) with B* ~ 2e8 tokens and alpha_B ~ 0.21; the table of fitted constants,
B* = 2.1e8 tokens and alpha_B = 0.21; Fig. 10, which draws the fit as 2.1e8 * L^-4.8 (the exponent is
1/0.21 = 4.76, printed rounded). These were checked against secondary transcriptions of the paper found
with the search tool, not against the PDF itself. GPT-3's batch sizes are Brown et al. 2020, Table 2.1
(0.5M tokens for the 125M model, 3.2M for 175B), from memory of the paper, not re-verified here.
"""
import math

import sympy

from graders import problems

P = problems.get("tds-e8-critical-batch-of-loss")
KAPLAN = {"b_star": 2.1e8, "alpha_b": 0.21}


def _kaplan(**over):
    q = {**KAPLAN, "losses": [1.0, 3.0], "batch_sequences": 512, "context": 1024,
         "start_loss": 4.0, "end_loss": 3.0}
    q.update(over)
    return q


def test_the_expression_is_kaplans_eq_5_3_and_fig_10():
    # eq. (5.3): B_crit(L) = B* / L^(1/alpha_B); Fig. 10: 2.1e8 * L^(-4.8) to the printed rounding.
    r = P.solve(_kaplan())
    loss = sympy.Symbol("loss", positive=True)
    for value in (2.0, 3.0, 4.5):
        at = float(r["b_crit_expr"].subs(loss, value))
        assert math.isclose(at, 2.1e8 / value ** (1 / 0.21), rel_tol=1e-9)
        assert math.isclose(at, 2.1e8 * value ** -4.8, rel_tol=0.1)    # printed exponent 4.8 (rounded)
    assert math.isclose(r["b_crit_at_losses"][0], 2.1e8, rel_tol=1e-12)   # at L = 1, B_crit = B*


def test_the_critical_loss_inverts_the_law_and_lands_on_kaplans_losses():
    # Kaplan's own batch (512 x 1024 tokens, §2.3) is critical at a loss inside the range his models
    # measured (Fig. 10's axis runs from about 3 to 10 nats), and GPT-3 175B's 3.2M tokens near the losses of large models.
    for q in P.variants.values():
        r = P.solve(q)
        loss = sympy.Symbol("loss", positive=True)
        tokens = q["batch_sequences"] * q["context"]
        assert math.isclose(float(r["b_crit_expr"].subs(loss, r["critical_loss"])), tokens, rel_tol=1e-9)
    assert 3.0 < P.solve(_kaplan())["critical_loss"] < 4.0
    gpt3 = P.solve(_kaplan(batch_sequences=1536, context=2048))["critical_loss"]
    assert 2.0 < gpt3 < 2.6


def test_the_critical_batch_grows_as_the_loss_falls_in_every_variant():
    # McCandlish et al. 2018, abstract: the noise scale increases as the loss decreases over a run.
    for name, q in P.variants.items():
        r = P.solve(q)
        ordered = sorted(zip(q["losses"], r["b_crit_at_losses"]), reverse=True)
        assert all(b1 < b2 for (_, b1), (_, b2) in zip(ordered, ordered[1:])), name
        assert r["growth_factor"] > 1, name
        assert math.isclose(r["growth_factor"], (q["start_loss"] / q["end_loss"]) ** (1 / q["alpha_b"]),
                            rel_tol=1e-12)


def test_the_variants_use_the_papers_constants_and_real_batches():
    for name, q in P.variants.items():
        assert q["alpha_b"] == 0.21 and q["b_star"] in (2.0e8, 2.1e8), name
        assert q["batch_sequences"] * q["context"] in (2 ** 19, 2 ** 20, 2 ** 21, 1536 * 2048), name


def test_each_mistake_changes_an_answer_in_every_variant():
    for q in P.variants.values():
        for mistake in P.mistakes:
            assert mistake.wrong(q), mistake.name
