"""t2-clip-versus-decay against torch and the sources it cites.

- Clipping: torch.nn.utils.clip_grad_norm_ (the convention of Pascanu et al. 2013, §3.2, with
  torch's 1e-6): a step counts as clipped exactly when torch changes its gradient.
- Decoupled decay: torch.optim.AdamW (Loshchilov and Hutter 2019, Algorithm 2, with the decay
  multiplied by lr): with a constant, noise-free gradient Adam's step is lr (up to eps), so the weight
  follows w_t = (1/wd)(1 - (1 - lr*wd)^t) exactly; with noisy gradients the mean weight settles near
  u/wd with u = mu/sqrt(mu^2 + sigma^2), and a pure-noise coordinate near the rms
  sqrt(lr/(wd(2 - lr*wd))), whose small-lr*wd limit sqrt(lr/(2 wd)) is Kosson et al. 2024's
  per-coordinate equilibrium. The noisy cases are approximations; the tolerances say how good.
"""
import math

import pytest
import sympy
import torch

from graders import problems
from graders.symbolic import symbols_for

P = problems.get("t2-clip-versus-decay")
S = symbols_for(("eta", "lambda", "mu", "sigma"))


def params(**kw):
    base = {"grad_norms": [0.5, 0.6, 3.0, 0.55], "thresholds": [1.0, 0.52, 10.0],
            "lr": 1e-2, "weight_decay": 1.0, "steps": 1000, "signal": 0.1, "noise": 1.0, "needed": 0.5}
    base.update(kw)
    return base


def adamw_run(lr, wd, steps, mu, sigma, coords=400, betas=(0.9, 0.95), seed=0):
    """Mean weight of `coords` signal coordinates and rms of as many pure-noise ones."""
    gen = torch.Generator().manual_seed(seed)
    w = torch.nn.Parameter(torch.zeros(2, coords, dtype=torch.float64))
    opt = torch.optim.AdamW([w], lr=lr, weight_decay=wd, betas=betas)
    for _ in range(steps):
        g = sigma * torch.randn(2, coords, dtype=torch.float64, generator=gen)
        g[0] -= mu
        w.grad = g
        opt.step()
    return w[0].mean().item(), w[1].pow(2).mean().sqrt().item()


# --- (a) against torch ----------------------------------------------------------------------------
@pytest.mark.parametrize("label", "ABCD")
def test_clip_counts_match_clip_grad_norm(label):
    q = P.variants[label]
    counts = []
    for m in q["thresholds"]:
        changed = 0
        for norm in q["grad_norms"]:
            p = torch.nn.Parameter(torch.zeros(4, dtype=torch.float64))
            p.grad = torch.full((4,), norm / 2, dtype=torch.float64)      # |grad| = norm
            before = p.grad.clone()
            torch.nn.utils.clip_grad_norm_([p], m)
            changed += int(not torch.equal(before, p.grad))
        counts.append(changed)
    r = P.solve(q)
    assert r["clipped_counts"] == counts
    assert r["idle_thresholds"] == [i for i, c in enumerate(counts) if c == 0]
    assert all(q["thresholds"][i] > max(q["grad_norms"]) for i in r["idle_thresholds"])


def test_noise_free_trajectory_is_exact_under_adamw():
    # sigma = 0: Adam's step is lr * mu/(mu + eps) every step, so u = 1 and the recursion is exact.
    q = params(noise=0.0, signal=1.0, lr=1e-2, weight_decay=0.5, steps=700)
    r = P.solve(q)
    for wd, key in ((0.5, "weight_with_decay"), (0.0, "weight_no_decay")):
        w = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))
        opt = torch.optim.AdamW([w], lr=q["lr"], weight_decay=wd)
        for _ in range(q["steps"]):
            w.grad = torch.full((1,), -1.0, dtype=torch.float64)
            opt.step()
        assert w.item() == pytest.approx(r[key], rel=1e-6)
    assert r["update_ratio"] == 1.0 and r["equilibrium_weight"] == pytest.approx(1 / 0.5)


@pytest.mark.parametrize("mu,sigma", [(0.1, 1.0), (0.3, 1.0)])
def test_noisy_equilibrium_against_adamw(mu, sigma):
    q = params(signal=mu, noise=sigma, lr=1e-2, weight_decay=1.0, steps=1000)
    r = P.solve(q)
    signal, noise = adamw_run(q["lr"], q["weight_decay"], q["steps"], mu, sigma)
    assert signal == pytest.approx(r["equilibrium_weight"], rel=0.06)        # model: m/sqrt(v) ~ u
    assert noise == pytest.approx(r["noise_rms"], rel=0.12)
    assert signal / noise == pytest.approx(r["weight_snr"], rel=0.15)


def test_learning_rate_cancels_in_the_cap_but_not_in_the_timescale():
    base = P.solve(params(lr=1e-3))
    other = P.solve(params(lr=1e-2))
    assert other["equilibrium_weight"] == base["equilibrium_weight"]
    assert other["timescale_steps"] == pytest.approx(base["timescale_steps"] / 10)
    assert other["weight_snr"] == pytest.approx(base["weight_snr"] / math.sqrt(10), rel=1e-2)


def test_noise_floor_limits():
    # Kosson et al.: sqrt(lr/(2 wd)) per coordinate for small lr*wd; exactly the stationary rms of
    # s_{t+1}^2 = (1 - lr wd)^2 s_t^2 + lr^2.
    r = P.solve(params(lr=1e-6, weight_decay=1.0))
    assert r["noise_rms"] == pytest.approx(math.sqrt(1e-6 / 2), rel=1e-6)
    q = params(lr=0.05, weight_decay=2.0)
    s2 = 0.0
    for _ in range(5000):
        s2 = (1 - 0.1) ** 2 * s2 + 0.05 ** 2
    assert P.solve(q)["noise_rms"] == pytest.approx(math.sqrt(s2), rel=1e-9)


def test_timescale_matches_zero_gradient_adamw():
    # After 1/(lr wd) steps of zero gradient, AdamW has shrunk a weight by (1 - lr wd)^(1/(lr wd)) ~ 1/e.
    q = params(lr=1e-2, weight_decay=0.5)
    tau = P.solve(q)["timescale_steps"]
    w = torch.nn.Parameter(torch.ones(1, dtype=torch.float64))
    opt = torch.optim.AdamW([w], lr=q["lr"], weight_decay=q["weight_decay"])
    for _ in range(round(tau)):
        w.grad = torch.zeros(1, dtype=torch.float64)
        opt.step()
    assert w.item() == pytest.approx(math.exp(-1), rel=3e-3)


@pytest.mark.parametrize("label", "ABCD")
def test_expression_matches_numbers_and_eta_cancels(label):
    q = P.variants[label]
    r = P.solve(q)
    expr = r["equilibrium_expr"]
    assert S["eta"] not in expr.free_symbols
    value = float(expr.subs({S["mu"]: q["signal"], S["sigma"]: q["noise"], S["lambda"]: q["weight_decay"]}))
    assert value == pytest.approx(r["equilibrium_weight"], rel=1e-12)


@pytest.mark.parametrize("change", [{"grad_norms": []}, {"thresholds": [0.0]}, {"lr": -1e-3},
                                    {"lr": 1.0, "weight_decay": 1.0}, {"steps": 2.5}, {"signal": 0.0},
                                    {"noise": float("nan")}, {"needed": "0.5"}])
def test_solve_refuses_invalid_inputs(change):
    with pytest.raises(ValueError):
        P.solve(params(**change))


# --- (b) grading ----------------------------------------------------------------------------------
def test_variants_are_distinct_and_cover_both_verdicts():
    solved = {k: P.solve(q) for k, q in P.variants.items()}
    for key in ("clipped_counts", "idle_thresholds", "equilibrium_weight", "timescale_steps", "weight_snr"):
        assert len({str(r[key]) for r in solved.values()}) == 4, key
    harm = {k: P.variants[k]["weight_decay"] > solved[k]["largest_safe_decay"] for k in "ABCD"}
    assert set(harm.values()) == {True, False}


@pytest.mark.parametrize("mistake", P.mistakes, ids=lambda m: m.name)
def test_every_mistake_loses_points_with_its_feedback(mistake):
    shown = False
    for q in P.variants.values():
        right = P.solve(q)
        result = P.grade(q, {**right, **mistake.wrong(q)})
        if result.score < result.max_score:
            shown = True
            assert any(mistake.feedback in line for line in result.feedback)
            assert not any(f"{right['equilibrium_weight']:.4g}" in line for line in result.feedback)
    assert shown


def test_equivalent_expressions_pass_and_wrong_ones_fail():
    q = P.variants["A"]
    eta, lam, mu, sigma = S["eta"], S["lambda"], S["mu"], S["sigma"]
    ok = (eta * mu / sympy.sqrt(mu ** 2 + sigma ** 2)) / (eta * lam)
    assert P.grade(q, {"equilibrium_expr": ok}, keys=["equilibrium_expr"]).full_marks
    result = P.grade(q, {"equilibrium_expr": 1 / lam}, keys=["equilibrium_expr"])
    assert result.score == 0 and "signal's share" in result.feedback[0]
    result = P.grade(q, {"equilibrium_expr": mu / lam}, keys=["equilibrium_expr"])
    assert result.score == 0 and "raw mean gradient" in result.feedback[0]
    result = P.grade(q, {"equilibrium_expr": mu / (eta * lam)}, keys=["equilibrium_expr"])
    assert result.score == 0
    x = sympy.Symbol("x", positive=True)
    result = P.grade(q, {"equilibrium_expr": x / lam}, keys=["equilibrium_expr"])
    assert result.score == 0 and "x" in result.feedback[0]


@pytest.mark.parametrize("bad", [None, "0.2", float("nan"), [1.0], {"x": 1}, True])
def test_bad_answers_score_zero(bad):
    q = P.variants["D"]
    keys = ["clipped_counts", "equilibrium_weight", "noise_rms", "equilibrium_expr"]
    result = P.grade(q, {**P.solve(q), **{k: bad for k in keys}}, keys=keys)
    assert result.score == 0 and len(result.feedback) == 4


def test_missing_answers_score_zero():
    q = P.variants["B"]
    assert P.grade(q, {}).score == 0
    right = P.solve(q)
    result = P.grade(q, {**right, "clipped_counts": right["clipped_counts"][:-1]}, keys=["clipped_counts"])
    assert result.score == 0
