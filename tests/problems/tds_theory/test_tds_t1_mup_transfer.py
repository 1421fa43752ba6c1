"""tds-t1-mup-transfer: the output change of one real Adam step grows like the width, not its square root."""
import math

import torch

from graders import problems
from graders.problems.tds_theory.tds_t1_mup_transfer import adam_output_change

P = problems.get("tds-t1-mup-transfer")


def test_adam_first_step_is_lr_times_sign():
    torch.manual_seed(0)
    layer = torch.nn.Linear(16, 16, bias=False).double()
    before = layer.weight.detach().clone()
    x = torch.randn(16, dtype=torch.float64)
    opt = torch.optim.Adam(layer.parameters(), lr=1e-3)
    layer(x).sum().backward()
    grad = layer.weight.grad.clone()
    opt.step()
    assert torch.allclose(before - layer.weight.detach(), 1e-3 * grad.sign(), rtol=1e-6, atol=0)


def test_output_change_grows_in_proportion_to_width():
    # Yang et al. 2022, §5: with correlated updates Delta W x is Theta(eta n), not Theta(eta sqrt(n)).
    small, big = adam_output_change(128, 1e-3), adam_output_change(2048, 1e-3)
    ratio = big / small
    assert abs(ratio / 16 - 1) < 0.15 and ratio > 2 * math.sqrt(16)
    assert math.isclose(P.solve({"base_width": 128, "widths": [128, 2048], "base_lr": 1e-3})["update_growth"][1], 16)


def test_sp_rate_restores_the_base_step():
    q = {"base_width": 128, "widths": [128, 1024], "base_lr": 1e-3}
    r = P.solve(q)
    base = adam_output_change(128, 1e-3)
    assert abs(adam_output_change(1024, r["sp_best_lrs"][1]) / base - 1) < 0.15
