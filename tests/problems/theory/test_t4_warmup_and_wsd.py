"""t4-warmup-and-wsd against the edge-of-stability papers, torch, and e02's schedules.

- Cohen et al. 2021 (ICLR): gradient descent on a quadratic is stable iff eta * a < 2 (threshold 2/eta).
- Cohen et al. 2022 (arXiv 2207.14484), abstract: "For Adam with step size eta and beta1 = 0.9, this
  stability threshold is 38/eta"; the threshold is that of EMA-momentum gradient descent,
  (2 + 2 beta1)/((1 - beta1) eta). Checked here by the characteristic polynomial and by running
  torch.optim.SGD(momentum=beta1, dampening=beta1), which keeps exactly that moving average, on a
  quadratic just below and just above the threshold.
- Warmup and WSD: the learning rates come from e02-schedules (imported); the WSD runs of the
  different budgets are checked to coincide with the longest one up to each branch point, and the
  branching ledger is recounted step by step.
"""
import numpy as np
import pytest
import sympy
import torch

from graders import problems
from graders.problems.common.schedules import cosine_lr, wsd_lr
from graders.symbolic import symbols_for

P = problems.get("t4-warmup-and-wsd")
S = symbols_for(("eta", "beta1"))


def params(**kw):
    base = {"peak_lr": 1e-3, "min_lr": 1e-4, "warmup": 50, "total": 2000, "decay": 400, "beta1": 0.9,
            "at": [0, 10, 40, 80, 200], "sharpness": [9e4, 7e4, 5e4, 4.2e4, 3e4],
            "budgets": [500, 1000, 2000], "decay_fraction": 0.2}
    base.update(kw)
    return base


# --- (a) the threshold ------------------------------------------------------------------------------
def test_printed_thresholds():
    r = P.solve(params(peak_lr=1e-3, beta1=0.9))
    assert r["threshold_adam"] * 1e-3 == pytest.approx(38, rel=1e-12)          # Cohen et al. 2022
    assert r["threshold_gd"] * 1e-3 == pytest.approx(2, rel=1e-12)             # Cohen et al. 2021
    expr = r["threshold_expr"]
    assert sympy.simplify(expr.subs(S["beta1"], 0) - 2 / S["eta"]) == 0       # no momentum: plain GD
    assert sympy.simplify(expr.subs(S["beta1"], sympy.Rational(9, 10)) - 38 / S["eta"]) == 0


@pytest.mark.parametrize("beta1", [0.0, 0.5, 0.9, 0.95])
def test_characteristic_root_reaches_minus_one_at_the_threshold(beta1):
    eta = 2e-4
    a = P.solve(params(peak_lr=eta, beta1=beta1))["threshold_adam"]
    roots = np.roots([1, -(1 + beta1 - eta * (1 - beta1) * a), beta1])
    assert min(abs(roots + 1)) < 1e-9
    for factor, stable in ((0.99, True), (1.01, False)):
        roots = np.roots([1, -(1 + beta1 - eta * (1 - beta1) * factor * a), beta1])
        assert (max(abs(roots)) < 1) == stable


@pytest.mark.parametrize("beta1", [0.0, 0.9])
def test_torch_momentum_sgd_is_stable_just_below_and_unstable_just_above(beta1):
    lr = 1e-3
    a = P.solve(params(peak_lr=lr, beta1=beta1))["threshold_adam"]

    def distance(curvature, steps=300):
        x = torch.nn.Parameter(torch.ones(1, dtype=torch.float64))
        opt = torch.optim.SGD([x], lr=lr, momentum=beta1, dampening=beta1)
        for _ in range(steps):
            opt.zero_grad()
            (0.5 * curvature * x ** 2).sum().backward()
            opt.step()
        return abs(x.item())

    assert distance(0.97 * a) < 1e-3
    assert distance(1.03 * a) > 1e3


# --- (a) warmup ---------------------------------------------------------------------------------------
def lr_manual(t, q, warmup):
    return q["peak_lr"] * t / warmup if t < warmup else q["peak_lr"]


@pytest.mark.parametrize("label", "ABCD")
def test_unstable_steps_and_minimum_warmup_by_brute_force(label):
    q = P.variants[label]
    r = P.solve(q)
    limit = (2 + 2 * q["beta1"]) / (1 - q["beta1"])
    pairs = list(zip(q["at"], q["sharpness"]))
    assert r["unstable_no_warmup"] == [i for i, (t, s) in enumerate(pairs) if q["peak_lr"] * s > limit]
    assert r["unstable_with_warmup"] == [i for i, (t, s) in enumerate(pairs)
                                         if lr_manual(t, q, q["warmup"]) * s > limit]

    def safe(w):
        return all((q["peak_lr"] if w == 0 else lr_manual(t, q, w)) * s <= limit for t, s in pairs)

    brute = next(w for w in range(10 * max(q["at"]) + 2) if safe(w))
    assert r["min_warmup"] == brute
    assert safe(r["min_warmup"]) and not safe(r["min_warmup"] - 1)


def test_warmup_outcomes_differ_across_variants():
    solved = {k: P.solve(q) for k, q in P.variants.items()}
    assert solved["A"]["unstable_with_warmup"] == []                       # nanoGPT's warmup suffices
    assert all(solved[k]["min_warmup"] > P.variants[k]["warmup"] for k in "BCD")
    assert len({tuple(r["unstable_no_warmup"]) for r in solved.values()}) >= 3


# --- (a) WSD branching --------------------------------------------------------------------------------
@pytest.mark.parametrize("label", "ABCD")
def test_wsd_branches_are_prefixes_of_the_longest_run(label):
    q = P.variants[label]
    r = P.solve(q)
    peak, floor, W = q["peak_lr"], q["min_lr"], q["warmup"]
    decays = [round(q["decay_fraction"] * b) for b in q["budgets"]]
    longest = max(q["budgets"])
    d_long = decays[q["budgets"].index(longest)]
    trunk = wsd_lr(np.arange(longest), peak, floor, W, longest, d_long)
    ledger = set()
    for b, d in zip(q["budgets"], decays):
        run = wsd_lr(np.arange(b), peak, floor, W, b, d)
        branch = b - d                                   # checkpoint after this many steps
        assert np.array_equal(run[:branch], trunk[:branch])
        ledger |= {("trunk", t) for t in range(branch)}
        ledger |= {(b, t) for t in range(branch, b)}
    assert r["steps_wsd"] == len(ledger)
    assert r["steps_cosine"] == sum(q["budgets"])
    assert r["saving"] == pytest.approx(1 - len(ledger) / sum(q["budgets"]), rel=1e-12)


@pytest.mark.parametrize("label", "ABCD")
def test_shared_prefixes(label):
    q = P.variants[label]
    r = P.solve(q)
    W = q["warmup"]
    short, long_ = min(q["budgets"]), max(q["budgets"])
    d_short = round(q["decay_fraction"] * short)
    assert r["shared_cosine"] == W + 1              # warmup steps 0..W-1 and the peak at step W
    assert r["shared_wsd"] == short - d_short + 1    # e02's decay starts from the peak at T - decay
    steps = np.arange(W + 2)
    a = cosine_lr(steps, q["peak_lr"], q["min_lr"], W, short)
    b = cosine_lr(steps, q["peak_lr"], q["min_lr"], W, long_)
    assert np.array_equal(a[:W + 1], b[:W + 1]) and a[W + 1] < b[W + 1]


@pytest.mark.parametrize("change", [{"beta1": 1.0}, {"beta1": -0.1}, {"at": [0, 1]}, {"sharpness": [1, 2, 3, 4, -5]},
                                    {"budgets": [40]}, {"decay_fraction": 0.0}, {"at": [0, 10, 40, 80, 1900]},
                                    {"warmup": 5000}, {"budgets": [500.5]}])
def test_solve_refuses_invalid_inputs(change):
    with pytest.raises(ValueError):
        P.solve(params(**change))


# --- (b) grading ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mistake", P.mistakes, ids=lambda m: m.name)
def test_every_mistake_loses_points_with_its_feedback(mistake):
    shown = False
    for q in P.variants.values():
        right = P.solve(q)
        result = P.grade(q, {**right, **mistake.wrong(q)})
        if result.score < result.max_score:
            shown = True
            assert any(mistake.feedback in line for line in result.feedback)
            assert not any(f"{right['threshold_adam']:.4g}" in line for line in result.feedback)
    assert shown


def test_expressions():
    q = P.variants["B"]
    eta, b1 = S["eta"], S["beta1"]
    ok = 2 * (1 + b1) / (eta - eta * b1)
    assert P.grade(q, {"threshold_expr": ok}, keys=["threshold_expr"]).full_marks
    result = P.grade(q, {"threshold_expr": 2 / eta}, keys=["threshold_expr"])
    assert result.score == 0 and "2/eta" in result.feedback[0]
    result = P.grade(q, {"threshold_expr": (2 + 2 * b1) / (1 - b1)}, keys=["threshold_expr"])
    assert result.score == 0 and "divided by the learning rate" in result.feedback[0]
    beta2 = sympy.Symbol("beta2", positive=True)
    result = P.grade(q, {"threshold_expr": (2 + 2 * beta2) / ((1 - beta2) * eta)}, keys=["threshold_expr"])
    assert result.score == 0 and "beta2" in result.feedback[0]


@pytest.mark.parametrize("bad", [None, "38", float("nan"), [1.0], {"x": 1}, True, 2.5])
def test_bad_answers_score_zero(bad):
    q = P.variants["C"]
    keys = ["min_warmup", "steps_wsd", "shared_cosine", "unstable_with_warmup"]
    result = P.grade(q, {**P.solve(q), **{k: bad for k in keys}}, keys=keys)
    assert result.score == 0 and len(result.feedback) == 4


def test_missing_answers_score_zero():
    q = P.variants["D"]
    assert P.grade(q, {}).score == 0
    right = P.solve(q)
    result = P.grade(q, {**right, "unstable_no_warmup": right["unstable_no_warmup"][1:]},
                     keys=["unstable_no_warmup"])
    assert result.score == 0
