"""tds-w4-mup-widths: Table 3's rules against Table 8's, as torch trains them, and the initial
logits against microsoft/mup's statement that they shrink at a 1/sqrt(width) rate.

Sources: Yang et al. 2022, "Tensor Programs V", arXiv 2203.03466, Table 3 (muP for Adam through
init variances and rates: readout variance 1/fan_in^2 and Adam rate 1/fan_in) and Table 8 (the
equivalent form with an output multiplier 1/fan_in, readout init and Adam rate unscaled). The
paper's tables themselves were not readable with the search tool; Table 8's readout entries were
checked against a maintainer's answer in microsoft/mup issue #7 ("initialize the output weight
with std 1 and divide the output by fanin": yes, up to tuned constants), MuAdam's code
(mup/optim.py: only parameters with two width dimensions have their rate divided by the width
multiplier) and the README ("the network output ... can shrink to 0 at initialization in μP
(at a 1/sqrt(width) rate)"). Table 3's readout entries are then checked here as what makes the
two forms the same training run.
"""
import math

import pytest
import torch

from graders import problems

P = problems.get("tds-w4-mup-widths")


def readout_runs(width, base, lr, std, steps=3, seed=0):
    """The logits of a readout trained by Adam in Table 3's form and in Table 8's form."""
    m = width / base
    torch.manual_seed(seed)
    x = torch.randn(32, width)
    y = torch.randint(0, 7, (32,))
    draw = torch.randn(7, width)
    r = P.solve({"base_width": base, "widths": [width], "base_lr": lr,
                 "base_hidden_std": std, "base_output_std": std})
    w3 = torch.nn.Parameter(draw * r["output_init_stds_mup"][0])        # Table 3, from solve
    w8 = torch.nn.Parameter(draw * std)                                  # Table 8: base init
    o3 = torch.optim.Adam([w3], lr=r["output_adam_lrs_mup"][0], eps=1e-14)
    o8 = torch.optim.Adam([w8], lr=lr, eps=1e-14)                        # Table 8: base rate
    for _ in range(steps):
        for w, o, mult in ((w3, o3, 1.0), (w8, o8, 1 / m)):
            o.zero_grad()
            torch.nn.functional.cross_entropy(x @ w.T * mult, y).backward()
            o.step()
    return (x @ w3.T).detach(), (x @ w8.T / m).detach()


@pytest.mark.parametrize("label", "ABCD")
def test_table_3_is_table_8_in_every_variant(label):
    q = P.variants[label]
    for width in q["widths"]:
        a, b = readout_runs(int(width), q["base_width"], q["base_lr"], q["base_output_std"])
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-6 * float(b.abs().max()))


def test_mixing_tables_is_not_the_same_run():
    q = P.variants["A"]
    width, base, std = 4096, q["base_width"], q["base_output_std"]
    m = width / base
    torch.manual_seed(0)
    x = torch.randn(32, width)
    w_mixed = torch.randn(3, width) * std           # Table 8's init, without its multiplier
    w_table3 = w_mixed / m
    assert (x @ w_mixed.T).std() > 10 * (x @ w_table3.T).std()


def test_initial_logits_shrink_at_one_over_sqrt_width():
    base, std = 256, 0.02
    torch.manual_seed(1)
    widths = [256, 1024, 4096, 16384]
    r = P.solve({"base_width": base, "widths": widths, "base_lr": 1e-3,
                 "base_hidden_std": std, "base_output_std": std})
    measured = []
    for w, s in zip(widths, r["output_init_stds_mup"]):
        x = torch.randn(4000, w)
        measured.append((x @ (torch.randn(w) * s)).std().item())
    for w, got, predicted in zip(widths, measured, r["init_logit_scales_mup"]):
        assert got / measured[0] == pytest.approx(predicted, rel=0.08)
        assert predicted == pytest.approx(1 / math.sqrt(w / base))


def test_hidden_init_is_sp_and_the_variants_are_distinct():
    for q in P.variants.values():
        r = P.solve(q)
        assert r["hidden_init_stds"] == pytest.approx(
            [q["base_hidden_std"] * math.sqrt(q["base_width"] / w) for w in q["widths"]])
    exprs = {str(P.solve(q)["output_init_var_expr"]) for q in P.variants.values()}
    assert len(exprs) == 4
