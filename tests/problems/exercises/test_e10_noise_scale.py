"""e10-noise-scale against McCandlish et al. 2018, "An Empirical Model of Large-Batch Training" (arXiv 1812.06162).

What the paper states, and what is checked here:
- Appendix A: E|G_B|^2 = |G|^2 + tr(Sigma)/B for a mini-batch of B independent examples, and the two
  estimators built from measurements at B_small and B_big are unbiased. Checked on synthetic problems
  whose true gradient and covariance are known exactly, with gradients sampled in numpy and in torch.
- §2: S/S_min = 1 + B_noise/B and E/E_min = 1 + B/B_noise, so (S/S_min - 1)(E/E_min - 1) = 1, and at
  B = B_noise a run takes twice the minimum steps and twice the minimum examples.
"""
import math

import numpy as np
import pytest
import sympy
import torch

from graders import problems
from graders.problems.common.noise_scale import unbiased_g2, unbiased_trace
from graders.symbolic import symbols_for

P = problems.get("e10-noise-scale")
S = symbols_for(("b_small", "b_big", "g2_small", "g2_big"))


def params(b_small, b_big, g2_small, g2_big, batch=100):
    return {"b_small": b_small, "b_big": b_big, "g2_small": g2_small, "g2_big": g2_big, "batch": batch}


# --- (a) the estimators recover a known gradient and covariance ------------------------------
def least_squares_problem(seed=0, n=2048, dim=24):
    """Per-example gradients of (x.w - y)^2/2 at a fixed w; the data set is the population."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, dim))
    y = x @ rng.normal(size=dim) + rng.normal(scale=1.5, size=n)
    w = 0.3 * rng.normal(size=dim)
    grads = x * (x @ w - y)[:, None]
    return rng, grads, grads.mean(axis=0), grads.var(axis=0).sum()


def test_expected_squared_norm_has_the_noise_term_numpy():
    rng, grads, g, trace = least_squares_problem()
    for b in (1, 4, 32):
        draws = rng.integers(0, len(grads), size=(20000, b))
        sq = (grads[draws].mean(axis=1) ** 2).sum(axis=1)
        se = sq.std(ddof=1) / math.sqrt(len(sq))
        assert abs(sq.mean() - (g @ g + trace / b)) < 4 * se


def test_numpy_data_parallel_estimates_are_unbiased_and_the_naive_one_is_not():
    rng, grads, g, trace = least_squares_problem(seed=1)
    devices, local, steps = 8, 4, 3000
    idx = rng.integers(0, len(grads), size=(steps, devices, local))
    local_means = grads[idx].mean(axis=2)                        # (steps, devices, dim)
    small = (local_means ** 2).sum(axis=2).mean(axis=1)          # per step: mean over devices of |G_small|^2
    big = (local_means.mean(axis=1) ** 2).sum(axis=1)            # per step: |G_big|^2 after the all-reduce
    # Each step's pair of estimates is unbiased (a single step's may even be negative).
    g2_steps = unbiased_g2(local, devices * local, small, big)
    tr_steps = unbiased_trace(local, devices * local, small, big)
    for values, truth in ((g2_steps, g @ g), (tr_steps, trace)):
        se = values.std(ddof=1) / math.sqrt(steps)
        assert abs(values.mean() - truth) < 4 * se
    averaged = P.solve(params(local, devices * local, small.mean(), big.mean()))
    assert averaged["g2"] == pytest.approx(g @ g, rel=0.05)
    assert averaged["trace_sigma"] == pytest.approx(trace, rel=0.05)
    assert averaged["b_simple"] == pytest.approx(trace / (g @ g), rel=0.08)
    # The mistake the exercise warns about: dividing by the small-batch norm is off by far more.
    naive = averaged["trace_sigma"] / small.mean()
    assert naive < 0.5 * trace / (g @ g)


def test_torch_autograd_minibatch_gradients_recover_the_noise_scale():
    torch.manual_seed(0)
    n, dim = 1024, 16
    x = torch.randn(n, dim, dtype=torch.float64)
    y = x @ torch.randn(dim, dtype=torch.float64) + 2.0 * torch.randn(n, dtype=torch.float64)
    w = (0.2 * torch.randn(dim, dtype=torch.float64)).requires_grad_()
    with torch.no_grad():
        per_example = x * (x @ w - y)[:, None]
        g_true = per_example.mean(0)
        trace_true = per_example.var(0, unbiased=False).sum()

    def batch_grad_sq(b):
        idx = torch.randint(0, n, (b,))
        loss = 0.5 * ((x[idx] @ w - y[idx]) ** 2).mean()
        (grad,) = torch.autograd.grad(loss, w)
        return float(grad @ grad)

    b_small, b_big, trials = 4, 64, 3000
    small = np.mean([batch_grad_sq(b_small) for _ in range(trials)])
    big = np.mean([batch_grad_sq(b_big) for _ in range(trials)])
    r = P.solve(params(b_small, b_big, small, big, batch=256))
    assert r["g2"] == pytest.approx(float(g_true @ g_true), rel=0.1)
    assert r["trace_sigma"] == pytest.approx(float(trace_true), rel=0.05)
    assert r["b_simple"] == pytest.approx(float(trace_true / (g_true @ g_true)), rel=0.12)


def test_exact_expectations_give_exact_estimates():
    # Noise-free measurements |G_B|^2 = |G|^2 + tr/B must be inverted exactly.
    for g2, trace, bs, bb in ((0.02, 3.0, 8, 512), (1e-5, 0.4, 64, 65536), (2.0, 1.0, 1, 2)):
        r = P.solve(params(bs, bb, g2 + trace / bs, g2 + trace / bb, batch=7))
        assert r["g2"] == pytest.approx(g2, rel=1e-9)
        assert r["trace_sigma"] == pytest.approx(trace, rel=1e-9)
        assert r["b_simple"] == pytest.approx(trace / g2, rel=1e-9)


def test_expression_is_the_solution_of_the_two_equations():
    g2, tr = sympy.symbols("g2 tr")
    sol = sympy.solve([g2 + tr / S["b_small"] - S["g2_small"], g2 + tr / S["b_big"] - S["g2_big"]],
                      [g2, tr], dict=True)[0]
    ref = P.solve(P.variants["A"])["b_simple_expr"]
    assert sympy.simplify(ref - sol[tr] / sol[g2]) == 0


# --- (a) the step/example trade-off of §2 ------------------------------------------------------
@pytest.mark.parametrize("label", "ABCD")
def test_tradeoff_hyperbola(label):
    r = P.solve(P.variants[label])
    assert (r["steps_ratio"] - 1) * (r["examples_ratio"] - 1) == pytest.approx(1, rel=1e-12)
    assert r["steps_ratio"] * P.variants[label]["batch"] == pytest.approx(
        P.variants[label]["batch"] + r["b_simple"], rel=1e-12)


def test_at_the_noise_scale_both_costs_double():
    base = params(8, 512, 0.3801, 0.02691)
    noise = P.solve(base)["b_simple"]
    r = P.solve({**base, "batch": noise})
    assert r["steps_ratio"] == pytest.approx(2) and r["examples_ratio"] == pytest.approx(2)


def test_solve_refuses_invalid_inputs():
    good = params(8, 512, 0.38, 0.027)
    for change in ({"b_big": 8}, {"b_small": 0}, {"g2_big": float("nan")}, {"batch": "256"},
                   {"g2_small": 0.01, "g2_big": 0.02},   # small-batch norm below the big one: tr < 0
                   {"g2_small": 0.9, "g2_big": 0.001}):  # B_big|G_big|^2 < B_small|G_small|^2: |G|^2 < 0
        with pytest.raises(ValueError):
            P.solve({**good, **change})


# --- (b) grading --------------------------------------------------------------------------------
def test_variants_are_distinct():
    assert len({round(P.solve(q)["b_simple"]) for q in P.variants.values()}) == 4
    sides = {P.variants[k]["batch"] > P.solve(P.variants[k])["b_simple"] for k in "ABCD"}
    assert sides == {True, False}   # some variants sit below the noise scale, some above


@pytest.mark.parametrize("mistake", P.mistakes, ids=lambda m: m.name)
def test_every_mistake_loses_points_with_its_feedback(mistake):
    shown = False
    for q in P.variants.values():
        right = P.solve(q)
        result = P.grade(q, {**right, **mistake.wrong(q)})
        if result.score < result.max_score:
            shown = True
            assert any(mistake.feedback in line for line in result.feedback)
            assert not any(f"{right['b_simple']:.4g}" in line for line in result.feedback)
    assert shown


def test_biased_small_batch_norm_is_named_on_g2():
    q = P.variants["C"]
    answers = {**P.solve(q), "g2": q["g2_small"]}
    result = P.grade(q, answers, keys=["g2"])
    assert result.score == 0 and "small-batch squared norm" in result.feedback[0]


@pytest.mark.parametrize("bad", [None, "134.7", float("nan"), [1.0], {"x": 1}])
def test_bad_numbers_score_zero(bad):
    q = P.variants["D"]
    result = P.grade(q, {**P.solve(q), "b_simple": bad, "steps_ratio": bad}, keys=["b_simple", "steps_ratio"])
    assert result.score == 0 and len(result.feedback) == 2


def test_missing_and_wrong_symbols_score_zero():
    q = P.variants["B"]
    assert P.grade(q, {}).score == 0
    B = sympy.Symbol("B", positive=True)
    result = P.grade(q, {"b_simple_expr": S["b_small"] * B}, keys=["b_simple_expr"])
    assert result.score == 0 and "B" in result.feedback[0]
    result = P.grade(q, {"b_simple_expr": "b_small*b_big"}, keys=["b_simple_expr"])
    assert result.score == 0
    biased = (S["g2_small"] - S["g2_big"]) / (1 / S["b_small"] - 1 / S["b_big"]) / S["g2_small"]
    result = P.grade(q, {"b_simple_expr": biased}, keys=["b_simple_expr"])
    assert result.score == 0 and "small-batch squared norm" in result.feedback[0]
