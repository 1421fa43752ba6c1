"""tds-t1-mup-transfer: the output change of one real Adam step grows like the width, not its square root."""
import math

import torch

from graders import problems
from graders.problems.tds_theory.tds_t1_mup_transfer import adam_output_change

P = problems.get("tds-t1-mup-transfer")


def test_adam_first_step_is_close_to_lr_times_sign():
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


def test_adams_first_step_adds_eps_so_it_is_only_close_to_lr_times_sign():
    """torch's Adam divides by sqrt(v_hat) + eps: the first step is lr * g / (|g| + eps), which is
    lr * sign(g) only where |g| >> eps. An entry of size eps moves by half of lr."""
    layer = torch.nn.Linear(4, 1, bias=False).double()
    x = torch.tensor([1.0, 1e-3, 1e-8, -1e-8], dtype=torch.float64)
    before = layer.weight.detach().clone()
    opt = torch.optim.Adam(layer.parameters(), lr=1e-3, eps=1e-8)
    layer(x).sum().backward()
    grad = layer.weight.grad.clone()
    opt.step()
    step = before - layer.weight.detach()
    assert torch.allclose(step, 1e-3 * grad / (grad.abs() + 1e-8), rtol=1e-12, atol=0)
    assert torch.allclose(step[0, 2:], torch.tensor([5e-4, -5e-4], dtype=torch.float64), rtol=1e-6)


def _sentences(path):
    import re
    prose = " ".join(re.sub(r"^\s*#\s?", "", line) for line in path.read_text().splitlines())
    return re.split(r"(?<=[.;])\s+", prose)


def test_the_course_says_neither_that_adams_first_step_is_exactly_sign_nor_that_eta_n0_over_n_is_the_best_rate():
    """η·n0/n is the rate that keeps a hidden layer's update at the base model's size, not the best
    SP rate of the network; Adam's first step is η·g/(|g| + eps), close to η·sign(g), not exactly it."""
    import re

    from tests.conftest import REPO
    places = [REPO / "source" / "tds-theory" / "tds-t1-mup-transfer.pct.py",
              REPO / "graders" / "problems" / "tds_theory" / "tds_t1_mup_transfer.py",
              REPO / "graders" / "problems" / "tds_theory" / "tds_t1_mup_transfer.cards.toml"]
    wrong = []
    for path in places:
        for sentence in _sentences(path):
            if re.search(r"exactly[^.;]{0,40}sign", sentence):
                wrong.append(sentence)
            if re.search(r"n_0/n|n_base / n|n0/n", sentence) and "best" in sentence and not re.search(r"\bnot\b", sentence):
                wrong.append(sentence)
    assert not wrong, wrong
