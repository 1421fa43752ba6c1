"""c1-clip-and-decay: the figure's numbers against torch itself, the settings against the papers,
and the grader against mistakes and bad input."""
import math
import random

import pytest
import sympy
import torch

from graders import problems
from graders.problems.concept.c1_clip_and_decay import TIE_MARGIN

PROBLEM = problems.get("c1-clip-and-decay")

# --- (a) primary sources ---------------------------------------------------------------------
# Hyper-parameters as the papers print them:
# GPT-3 (Brown et al. 2020): Table 2.1, GPT-3 Small (125M) learning rate 6.0e-4; Appendix B,
#   gradient clipping at global norm 1.0 and weight decay 0.1.
# LLaMA (Touvron et al. 2023): Table 2, 65.2B learning rate 1.5e-4; section 2.3, weight decay 0.1
#   and gradient clipping 1.0.
# OPT-175B (Zhang et al. 2022): Table 1, 175B learning rate 1.2e-4; section 2.2, weight decay 0.1;
#   section 2.5, gradient clipping lowered from 1.0 to 0.3.
# BERT (Devlin et al. 2019): appendix A.2, learning rate 1e-4, weight decay 0.01.
PRINTED = {
    "A": {"lr": 6.0e-4, "weight_decay": 0.1, "max_norm": 1.0},
    "B": {"lr": 1.5e-4, "weight_decay": 0.1, "max_norm": 1.0},
    "C": {"lr": 1.2e-4, "weight_decay": 0.1, "max_norm": 0.3},
    "D": {"lr": 1.0e-4, "weight_decay": 0.01},
}


@pytest.mark.parametrize("label", "ABCD")
def test_variants_use_printed_settings(label):
    params = PROBLEM.variants[label]
    for key, printed in PRINTED[label].items():
        assert params[key] == printed
    assert len(params["grad_norms"]) == 14          # Fig. 8: fourteen steps


def _torch_clip_step(norm, max_norm, rng):
    """clip_grad_norm_ on two tensors of global norm `norm`: (coefficient, norm after clipping)."""
    a = torch.randn(6, generator=rng, dtype=torch.float64)
    b = torch.randn(9, generator=rng, dtype=torch.float64)
    scale = norm / torch.sqrt((a * a).sum() + (b * b).sum())
    params = [torch.nn.Parameter(torch.zeros_like(a)), torch.nn.Parameter(torch.zeros_like(b))]
    params[0].grad, params[1].grad = a * scale, b * scale
    before = params[0].grad.clone()
    total = torch.nn.utils.clip_grad_norm_(params, max_norm)
    assert total.item() == pytest.approx(norm, rel=1e-12)
    after = math.sqrt(sum((p.grad * p.grad).sum().item() for p in params))
    return (params[0].grad / before).mean().item(), after


@pytest.mark.parametrize("label", "ABCD")
def test_top_panel_matches_clip_grad_norm(label):
    params = PROBLEM.variants[label]
    answers = PROBLEM.solve(params)
    rng = torch.Generator().manual_seed(1)
    measured = [_torch_clip_step(n, params["max_norm"], rng) for n in params["grad_norms"]]
    assert answers["clip_coefficients"] == pytest.approx([c for c, _ in measured], rel=1e-9)
    assert answers["clipped_norms"] == pytest.approx([a for _, a in measured], rel=1e-9)
    assert answers["clipped_steps"] == [i for i, (c, _) in enumerate(measured) if c < 1.0]


@pytest.mark.parametrize("label", "ABCD")
def test_clip_counts_match_clip_grad_norm(label):
    params = PROBLEM.variants[label]
    rng = torch.Generator().manual_seed(2)
    expected = [sum(_torch_clip_step(n, m, rng)[0] < 1.0 for n in params["grad_norms"])
                for m in params["thresholds"]]
    assert PROBLEM.solve(params)["clip_counts"] == expected


def test_a_norm_equal_to_the_threshold_is_clipped_by_torch():
    """solve follows torch on a tie: a norm equal to M is scaled by M / (M + 1e-6) < 1."""
    rng = torch.Generator().manual_seed(3)
    coefficient, _ = _torch_clip_step(0.41, 0.41, rng)
    assert coefficient < 1.0
    params = dict(PROBLEM.variants["A"], grad_norms=[0.41] * 14, thresholds=[0.41])
    assert PROBLEM.solve(params)["clip_counts"] == [14]


@pytest.mark.parametrize("label", "ABCD")
def test_no_variant_puts_a_threshold_on_a_norm(label):
    """Every threshold and max_norm keeps TIE_MARGIN (relative) from every norm, so that
    `norm > M` (the concept) and torch's `M / (norm + 1e-6) < 1` give the same counts."""
    params = PROBLEM.variants[label]
    for m in [params["max_norm"], *params["thresholds"]]:
        for n in params["grad_norms"]:
            assert abs(n - m) >= TIE_MARGIN * m, (label, n, m)
    strict = [sum(n > m for n in params["grad_norms"]) for m in params["thresholds"]]
    assert PROBLEM.solve(params)["clip_counts"] == strict
    assert PROBLEM.solve(params)["clipped_steps"] == [
        i for i, n in enumerate(params["grad_norms"]) if n > params["max_norm"]]


@pytest.mark.parametrize("label", "ABCD")
def test_bottom_panel_matches_adamw(label):
    # torch.optim.AdamW with zero gradients: only the decoupled decay moves the weight
    params = PROBLEM.variants[label]
    weight = torch.nn.Parameter(torch.ones(2, dtype=torch.float64))
    weight.grad = torch.zeros(2, dtype=torch.float64)
    optimizer = torch.optim.AdamW([weight], lr=params["lr"], weight_decay=params["weight_decay"])
    removed = []
    for _ in params["grad_norms"]:
        optimizer.step()
        removed.append(1.0 - weight[0].item())
    answers = PROBLEM.solve(params)
    assert answers["decay_shrinks"] == pytest.approx(removed, rel=1e-9)
    assert answers["decay_shrink"] == pytest.approx(removed[-1], rel=1e-9)


@pytest.mark.parametrize("gradient", [0.0, 1e-3, 0.4, 7.3, -25.0])
def test_decay_pulls_the_same_whatever_the_gradient(gradient):
    # the figure's claim about AdamW: one step from w with gradient g equals a plain Adam step
    # (no decay) from w * (1 - lr * wd) with the same g; the pull does not look at g
    params = PROBLEM.variants["A"]
    lr, wd = params["lr"], params["weight_decay"]

    def one_step(optimizer_class, start, **kwargs):
        w = torch.nn.Parameter(torch.tensor([start], dtype=torch.float64))
        w.grad = torch.tensor([gradient], dtype=torch.float64)
        optimizer_class([w], lr=lr, **kwargs).step()
        return w.item()

    with_decay = one_step(torch.optim.AdamW, 0.8, weight_decay=wd)
    decay_then_adam = one_step(torch.optim.Adam, 0.8 * (1 - lr * wd))
    assert with_decay == pytest.approx(decay_then_adam, rel=1e-14)
    assert 1 - PROBLEM.solve(params)["decay_shrinks"][0] == pytest.approx(1 - lr * wd, rel=1e-15)


@pytest.mark.parametrize("label", "ABCD")
def test_the_figure_has_fig8s_shape(label):
    # the threshold cuts only the spikes (at most three of fourteen) and at least one threshold
    # sits below the ordinary bars, where clipping acts on every step; decay acts on every step
    params = PROBLEM.variants[label]
    answers = PROBLEM.solve(params)
    norms = params["grad_norms"]
    ordinary = sorted(norms)[len(norms) // 2]
    assert 1 <= len(answers["clipped_steps"]) <= 3
    assert all(norms[i] > 2 * ordinary for i in answers["clipped_steps"])
    assert max(answers["clip_counts"]) == 14
    steps = answers["decay_shrinks"]
    assert all(b > a for a, b in zip([0.0] + steps, steps))


def test_solve_accepts_other_parameters():
    rng = random.Random(4)
    norms = [10 ** rng.uniform(-2, 1.5) for _ in range(30)]
    params = {"grad_norms": norms, "max_norm": 0.5, "lr": 1e-3, "weight_decay": 0.05,
              "thresholds": [0.01, 100.0]}
    answers = PROBLEM.solve(params)
    assert answers["clip_counts"] == [30, 0]
    assert len(answers["decay_shrinks"]) == 30
    assert answers["decay_shrink"] == pytest.approx(1 - (1 - 5e-5) ** 30, rel=1e-12)


def test_solve_rejects_bad_parameters():
    base = PROBLEM.variants["A"]
    for change in ({"lr": 0.0}, {"max_norm": 0}, {"grad_norms": []}, {"grad_norms": [float("nan")]},
                   {"thresholds": []}, {"thresholds": [-1.0]}):
        with pytest.raises(ValueError):
            PROBLEM.solve(dict(base, **change))


# --- (b) the grader -------------------------------------------------------------------------------

def test_problem_declares_the_interface():
    assert PROBLEM.strand == "concept" and PROBLEM.kind == "concept" and PROBLEM.assignment == "concept"


def test_variants_differ():
    answers = [PROBLEM.solve(q) for q in PROBLEM.variants.values()]
    for key in ("clipped_steps", "clip_counts", "decay_shrink"):
        assert len({repr(a[key]) for a in answers}) == 4, key


def test_feedback_never_shows_the_reference():
    params = PROBLEM.variants["B"]
    right = PROBLEM.solve(params)
    result = PROBLEM.grade(params, {"decay_shrink": right["decay_shrink"] * 2,
                                    "clip_counts": [0, 0, 0, 0]}, keys=["decay_shrink", "clip_counts"])
    text = " ".join(result.feedback)
    assert repr(right["decay_shrink"]) not in text and "14" not in text


@pytest.mark.parametrize("bad", [None, "0.5", float("nan"), {"x": 1}, sympy.Symbol("x"),
                                 [float("nan")] * 14, True])
def test_bad_answers_score_zero_without_raising(bad):
    params = PROBLEM.variants["C"]
    result = PROBLEM.grade(params, {key: bad for key in PROBLEM.checks})
    assert result.score == 0
    assert len(result.feedback) == len(PROBLEM.checks)


def test_missing_answers_score_zero():
    result = PROBLEM.grade(PROBLEM.variants["D"], {})
    assert result.score == 0 and all("missing" in line for line in result.feedback)
