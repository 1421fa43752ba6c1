"""w5-clip-decay: clipping against clip_grad_norm_, decay against AdamW, and the grader."""
import math
import random
import re

import pytest
import sympy
import torch

from graders import problems
from tests.problems.worked.mistakes import assert_loses_points_where_made

PROBLEM = problems.get("w5-clip-decay")

# --- (a) the primary sources: torch's own implementations --------------------------------------
# torch.nn.utils.clip_grad_norm_ documents grad * min(max_norm / (total_norm + 1e-6), 1); the
# AdamW documentation's algorithm multiplies the parameter by (1 - lr * weight_decay) before the
# Adam step. The published hyper-parameters of the variants are stored as printed:
# GPT-3 (Brown et al. 2020, Table 2.1: 1.3B model lr 2.0e-4; Appendix B: clip 1.0, decay 0.1),
# LLaMA (Touvron et al. 2023, §2.3 and Table 2: 7B lr 3.0e-4, clip 1.0, decay 0.1),
# OPT-175B (Zhang et al. 2022, §2.2 and Table 1: lr 1.2e-4, decay 0.1; §2.5: clip lowered to 0.3),
# BERT (Devlin et al. 2019, A.2: lr 1e-4, decay 0.01, 1,000,000 steps).
PRINTED_SETTINGS = {
    "A": {"max_norm": 1.0, "lr": 2.0e-4, "weight_decay": 0.1},
    "B": {"max_norm": 1.0, "lr": 3.0e-4, "weight_decay": 0.1},
    "C": {"max_norm": 0.3, "lr": 1.2e-4, "weight_decay": 0.1},
    "D": {"max_norm": 1.0, "lr": 1.0e-4, "weight_decay": 0.01, "steps": 1_000_000},
}


@pytest.mark.parametrize("label", "ABCD")
def test_variants_use_the_printed_settings(label):
    params = PROBLEM.variants[label]
    for key, printed in PRINTED_SETTINGS[label].items():
        assert params[key] == printed
    assert len(params["grad_norms"]) == 14


def _torch_clip(norms, max_norm, dtype=torch.float32):
    """Coefficients clip_grad_norm_ applies, on two tensors whose global norm is each value."""
    rng = torch.Generator().manual_seed(0)
    coefficients = []
    for norm in norms:
        a, b = torch.randn(5, generator=rng, dtype=dtype), torch.randn(7, generator=rng, dtype=dtype)
        scale = norm / torch.sqrt((a * a).sum() + (b * b).sum())
        params = [torch.nn.Parameter(torch.zeros_like(a)), torch.nn.Parameter(torch.zeros_like(b))]
        params[0].grad, params[1].grad = a * scale, b * scale
        before = params[0].grad.clone()
        total = torch.nn.utils.clip_grad_norm_(params, max_norm)
        assert total.item() == pytest.approx(norm, rel=1e-5)
        coefficients.append((params[0].grad / before).mean().item())
    return coefficients


@pytest.mark.parametrize("label", "ABCD")
def test_clipping_matches_clip_grad_norm(label):
    params = PROBLEM.variants[label]
    answers = PROBLEM.solve(params)
    torch_coefficients = _torch_clip(params["grad_norms"], params["max_norm"])
    assert answers["clip_coefficients"] == pytest.approx(torch_coefficients, rel=1e-5)
    assert answers["clipped_steps"] == [i for i, c in enumerate(torch_coefficients) if c < 1.0]
    # Fig. 8's shape: the threshold cuts only the spikes, two or three of fourteen steps
    assert 2 <= len(answers["clipped_steps"]) <= 3


def test_clipping_on_random_norms_in_float64():
    rng = random.Random(5)
    norms = [10 ** rng.uniform(-3, 2) for _ in range(40)]
    params = dict(PROBLEM.variants["A"], grad_norms=norms, max_norm=0.7)
    answers = PROBLEM.solve(params)
    assert answers["clip_coefficients"] == pytest.approx(_torch_clip(norms, 0.7, torch.float64),
                                                         rel=1e-12)


def _adamw_zero_gradient(lr, weight_decay, steps):
    weight = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    weight.grad = torch.zeros(3, dtype=torch.float64)
    optimizer = torch.optim.AdamW([weight], lr=lr, weight_decay=weight_decay)
    trajectory = []
    for _ in range(steps):
        optimizer.step()
        trajectory.append(weight[0].item())
    return trajectory


@pytest.mark.parametrize("label", "ABCD")
def test_decay_matches_adamw_with_zero_gradients(label):
    params = dict(PROBLEM.variants[label], steps=1500)   # the variant's lr and decay, fewer steps
    trajectory = _adamw_zero_gradient(params["lr"], params["weight_decay"], params["steps"])
    assert PROBLEM.solve(params)["decay_factor"] == pytest.approx(trajectory[-1], rel=1e-12)


def test_half_life_matches_adamw():
    # a strong pull, so that the crossing of 1/2 happens within a few hundred steps
    params = dict(PROBLEM.variants["A"], lr=1e-2, weight_decay=0.5, steps=400)
    half_life = PROBLEM.solve(params)["half_life_steps"]
    trajectory = _adamw_zero_gradient(params["lr"], params["weight_decay"], params["steps"])
    first_below = next(i + 1 for i, w in enumerate(trajectory) if w <= 0.5)
    assert math.floor(half_life) < first_below == math.ceil(half_life)


def test_expressions_agree_with_the_numbers():
    for params in PROBLEM.variants.values():
        answers = PROBLEM.solve(params)
        eta, lam, t = (sympy.Symbol(n, positive=True) for n in ("eta", "lambda", "t"))
        at = {eta: params["lr"], lam: params["weight_decay"], t: params["steps"]}
        assert float(answers["decay_expr"].subs(at)) == pytest.approx(answers["decay_factor"], rel=1e-9)
        assert float(answers["half_life_expr"].subs(at)) == pytest.approx(answers["half_life_steps"],
                                                                          rel=1e-9)


def test_solve_rejects_bad_parameters():
    base = PROBLEM.variants["A"]
    for change in ({"lr": 0.0}, {"weight_decay": 1e4}, {"max_norm": 0}, {"steps": 1.5},
                   {"grad_norms": []}, {"grad_norms": [float("nan")]}):
        with pytest.raises(ValueError):
            PROBLEM.solve(dict(base, **change))


# --- (b) the grader ----------------------------------------------------------------------------

def test_variants_differ():
    keys = ("decay_factor", "half_life_steps")
    answers = {label: PROBLEM.solve(q) for label, q in PROBLEM.variants.items()}
    assert len({tuple(a[k] for k in keys) for a in answers.values()}) == 4
    assert len({tuple(a["clipped_steps"]) for a in answers.values()}) == 4


def test_problem_declares_the_interface():
    assert PROBLEM.kind == "worked" and PROBLEM.assignment == "worked"
    for key in ("clipped_steps", "clip_coefficients", "decay_factor", "half_life_steps"):
        assert key in PROBLEM.checks
    assert any(key.endswith("_expr") for key in PROBLEM.checks)


@pytest.mark.parametrize("mistake", PROBLEM.mistakes, ids=lambda m: m.name)
def test_every_mistake_loses_points_with_its_feedback(mistake):
    lost = False
    for params in PROBLEM.variants.values():
        answers = dict(PROBLEM.solve(params))
        answers.update(mistake.wrong(params))
        result = PROBLEM.grade(params, answers)
        if result.score < result.max_score:
            lost = True
            assert any(mistake.feedback in line for line in result.feedback), result.feedback
    assert lost, f"{mistake.name} never loses points"


def test_equivalent_forms_of_the_half_life_are_accepted():
    # log(1/(1 - eta*lambda)) equals -log(1 - eta*lambda) only where 0 < eta*lambda < 1;
    # the check compares there, not on the generic sample points.
    params = PROBLEM.variants["C"]
    eta, lam, t = (sympy.Symbol(n, positive=True) for n in ("eta", "lambda", "t"))
    forms = {
        "half_life_expr": [sympy.log(2) / sympy.log(1 / (1 - eta * lam)),
                           sympy.log(sympy.Rational(1, 2)) / sympy.log(1 - lam * eta),
                           sympy.log(2, 1 / (1 - eta * lam))],
        "decay_expr": [sympy.exp(t * sympy.log(1 - eta * lam)), (1 - lam * eta) ** t],
    }
    for key, candidates in forms.items():
        for candidate in candidates:
            result = PROBLEM.grade(params, {key: candidate}, keys=[key])
            assert result.full_marks, (candidate, result.feedback)
    wrong = PROBLEM.grade(params, {"decay_expr": (1 - eta * lam) ** (t + 1)}, keys=["decay_expr"])
    assert wrong.score == 0


@pytest.mark.parametrize("bad", [None, "0.5", float("nan"), {"x": 1}, sympy.Symbol("x"),
                                 [float("nan")] * 14])
def test_bad_answers_score_zero_without_raising(bad):
    params = PROBLEM.variants["B"]
    result = PROBLEM.grade(params, {key: bad for key in PROBLEM.checks})
    assert result.score == 0
    assert len(result.feedback) == len(PROBLEM.checks)


def test_missing_answers_and_wrong_symbols_score_zero():
    params = PROBLEM.variants["D"]
    result = PROBLEM.grade(params, {})
    assert result.score == 0 and all("missing" in line for line in result.feedback)
    s = sympy.Symbol("S", positive=True)
    eta, lam = sympy.Symbol("eta", positive=True), sympy.Symbol("lambda", positive=True)
    result = PROBLEM.grade(params, {"decay_expr": (1 - eta * lam) ** s}, keys=["decay_expr"])
    assert result.score == 0 and "not in this problem's notation" in result.feedback[0]


# --- what the cards may say ----------------------------------------------------------------------
# Issue 27: w5's first card printed AdamW's per-step decay factor, (1 − lr·weight_decay), the base
# of decay_expr and the number half_life_steps is the logarithm of. A card teaches the order and
# the decoupling; it names no factor, in symbols or in words.
PER_STEP_FACTOR = re.compile(r"1\s*[−-]\s*(lr|η|eta|\\eta)|(lr|η|eta|learning rate)\s*[·*×]?\s*(weight_decay|λ|lambda|weight decay)"
                             r"|learning rate times|product of the learning rate", re.IGNORECASE)


def test_no_card_states_the_per_step_decay_factor():
    from graders.course.cards import item_cards
    for card in item_cards("w5-clip-decay"):
        assert not PER_STEP_FACTOR.search(f"{card.front} {card.back}"), card.back


@pytest.mark.parametrize("label", "ABCD")
@pytest.mark.parametrize("mistake", PROBLEM.mistakes, ids=lambda m: m.name)
def test_a_mistake_that_can_be_made_loses_points_in_every_variant(mistake, label):
    assert_loses_points_where_made(PROBLEM, mistake, label)
