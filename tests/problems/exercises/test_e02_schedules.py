"""e02-schedules: the reference against printed settings and torch, the grade, mistakes, bad inputs."""
import math

import pytest
import sympy
import torch

from graders import problems

P = problems.get("e02-schedules")


def params(**kw):
    base = {"peak_lr": 1e-3, "min_lr": 1e-4, "warmup": 10, "total": 200, "decay": 40,
            "at": [0, 5, 10, 50, 105, 160, 180, 200, 250]}
    base.update(kw)
    return base


# --- (a) printed settings, published code, and independent implementations ---------------

def test_gpt3_appendix_b_floor_and_hold():
    # Brown et al. 2020, Appendix B: cosine decay "down to 10% of its value, over 260 billion
    # tokens (after 260 billion tokens, training continues at 10% of the original learning
    # rate)"; Table 2.1: 175B peak 0.6e-4; 260B tokens / 3.2M tokens per step = 81,250 steps.
    q = dict(P.variants["C"], at=[117, 81_250, 81_250 + 10_000])
    assert 260e9 / 3.2e6 == q["total"]
    lr = P.solve(q)["lr_cosine"]
    assert math.isclose(lr[0], 0.6e-4, rel_tol=1e-12)
    assert math.isclose(lr[1], 0.1 * 0.6e-4, rel_tol=1e-12)
    assert math.isclose(lr[2], 0.1 * 0.6e-4, rel_tol=1e-12)


def test_llama2_ends_at_ten_percent_of_peak():
    # Touvron et al. 2023 (Llama 2), section 2.2: "warmup of 2000 steps, and decay final
    # learning rate down to 10% of the peak learning rate"; Table 1: 7B peak 3.0e-4.
    q = dict(P.variants["B"], at=[2000, 500_000])
    lr = P.solve(q)["lr_cosine"]
    assert math.isclose(lr[0], 3.0e-4, rel_tol=1e-12)
    assert math.isclose(lr[1], 0.10 * 3.0e-4, rel_tol=1e-12)


def _build_nanogpt_get_lr(it, max_lr=6e-4, warmup_steps=715, max_steps=19073):
    # karpathy/build-nanogpt, train_gpt2.py, get_lr (note its warmup is (it+1)/warmup_steps)
    min_lr = max_lr * 0.1
    if it < warmup_steps:
        return max_lr * (it + 1) / warmup_steps
    if it > max_steps:
        return min_lr
    decay_ratio = (it - warmup_steps) / (max_steps - warmup_steps)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (max_lr - min_lr)


def test_cosine_phase_matches_build_nanogpt_and_warmup_differs_by_one_step():
    steps = [0, 1, 300, 714, 715, 716, 5000, 9894, 19072, 19073, 20000]
    q = dict(P.variants["A"], at=steps)
    ours = P.solve(q)["lr_cosine"]
    for s, lr in zip(steps, ours):
        theirs = _build_nanogpt_get_lr(s)
        if s >= 715:
            assert math.isclose(lr, theirs, rel_tol=1e-12), s
        else:
            assert math.isclose(theirs - lr, 6e-4 / 715, rel_tol=1e-9), s


def test_cosine_phase_matches_torch_cosine_annealing():
    # torch.optim.lr_scheduler.CosineAnnealingLR with T_max = T - W, eta_min = floor, stepped
    # once per training step after the warmup.
    q = params(warmup=10, total=400)
    peak, floor, W, T = q["peak_lr"], q["min_lr"], q["warmup"], q["total"]
    w = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([w], lr=peak)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=T - W, eta_min=floor)
    torch_lr = {W: opt.param_groups[0]["lr"]}
    for s in range(W + 1, T + 1):
        opt.step()
        sched.step()
        torch_lr[s] = opt.param_groups[0]["lr"]
    steps = list(range(W, T + 1, 7)) + [T]
    ours = P.solve(dict(q, at=steps))["lr_cosine"]
    for s, lr in zip(steps, ours):
        assert math.isclose(lr, torch_lr[s], rel_tol=1e-9, abs_tol=1e-15), s


@pytest.mark.parametrize("label", "ABCD")
def test_areas_match_closed_forms(label):
    # Independent closed forms. Warmup: sum_{t<W} peak t/W = peak (W-1)/2. Cosine phase, with
    # n = T - W and sum_{k=0}^{n-1} cos(pi k/n) = 1:
    #   (T - W)(peak + floor)/2 + (peak - floor)/2.
    # WSD: stable steps W..T-decay inclusive at the peak, then decay - 1 linear steps.
    q = P.variants[label]
    peak, floor, W, T, d = q["peak_lr"], q["min_lr"], q["warmup"], q["total"], q["decay"]
    warm = peak * (W - 1) / 2
    cosine = warm + (T - W) * (peak + floor) / 2 + (peak - floor) / 2
    wsd = warm + peak * (T - d - W + 1) + (d - 1) * peak - (peak - floor) * (d - 1) / 2
    r = P.solve(q)
    assert math.isclose(r["area_cosine"], cosine, rel_tol=1e-9)
    assert math.isclose(r["area_wsd"], wsd, rel_tol=1e-9)


def test_wsd_shape():
    q = params(at=[9, 10, 160, 161, 180, 200, 201])
    lr = P.solve(q)["lr_wsd"]
    assert math.isclose(lr[0], 1e-3 * 9 / 10)
    assert lr[1] == lr[2] == 1e-3                                  # stable through T - decay
    assert math.isclose(lr[3], 1e-3 - (1e-3 - 1e-4) / 40)           # first decay step
    assert math.isclose(lr[4], (1e-3 + 1e-4) / 2)                   # halfway down
    assert math.isclose(lr[5], 1e-4) and math.isclose(lr[6], 1e-4)  # floor at T and after


def test_cosine_expr_is_the_definition():
    e = P.solve(params())["cosine_expr"]
    s = {n: sympy.Symbol(n, positive=True) for n in ("eta_max", "eta_min", "W", "n_steps", "t")}
    assert sympy.simplify(e.subs(s["t"], s["W"]) - s["eta_max"]) == 0
    assert sympy.simplify(e.subs(s["t"], s["n_steps"]) - s["eta_min"]) == 0


@pytest.mark.parametrize("bad", [dict(warmup=200), dict(decay=191), dict(min_lr=2e-3),
                                 dict(at=[1.5]), dict(total=float("nan"))])
def test_invalid_parameters_raise(bad):
    with pytest.raises(ValueError):
        P.solve(params(**bad))


def test_no_warmup_is_allowed():
    r = P.solve(params(warmup=0, at=[0]))
    assert math.isclose(r["lr_cosine"][0], 1e-3) and math.isclose(r["lr_wsd"][0], 1e-3)


# --- (b) the grade ----------------------------------------------------------------------------

def test_variants_differ():
    answers = [P.solve(q) for q in P.variants.values()]
    assert len({round(a["area_cosine"], 6) for a in answers}) == 4
    assert len({round(a["area_wsd"], 6) for a in answers}) == 4


@pytest.mark.parametrize("mistake", P.mistakes, ids=lambda m: m.name)
def test_every_mistake_loses_points_with_its_feedback(mistake):
    lost = False
    for label in "AC":
        q = P.variants[label]
        answers = P.solve(q)
        answers.update(mistake.wrong(q))
        r = P.grade(q, answers)
        if r.score < r.max_score:
            lost = True
            assert any(mistake.feedback in line for line in r.feedback), r.feedback
    assert lost, f"{mistake.name} never loses points"


def test_a_plain_python_solution_passes():
    # a student's loop-based solution (no numpy) must land within the tolerance
    q = P.variants["B"]
    peak, floor, W, T, d = q["peak_lr"], q["min_lr"], q["warmup"], q["total"], q["decay"]

    def cos_lr(s):
        if s < W:
            return peak * s / W
        return floor + 0.5 * (peak - floor) * (1 + math.cos(math.pi * (s - W) / (T - W)))

    def wsd_lr(s):
        if s < W:
            return peak * s / W
        return peak if s <= T - d else peak - (peak - floor) * (s - (T - d)) / d

    answers = {"lr_cosine": [cos_lr(s) for s in q["at"]], "lr_wsd": [wsd_lr(s) for s in q["at"]],
               "area_cosine": sum(cos_lr(s) for s in range(T)),
               "area_wsd": sum(wsd_lr(s) for s in range(T))}
    r = P.grade(q, answers, keys=list(answers))
    assert r.full_marks, r.feedback


@pytest.mark.parametrize("bad", [None, "0.0006", float("nan"), [1.0], {"str": "x"}])
def test_bad_values_score_zero_without_raising(bad):
    q = P.variants["D"]
    answers = P.solve(q)
    answers["area_wsd"] = bad
    answers["lr_cosine"] = bad
    r = P.grade(q, answers, keys=["area_wsd", "lr_cosine", "lr_wsd"])
    assert r.score == 1


def test_short_list_and_wrong_symbol_score_zero():
    q = P.variants["B"]
    answers = P.solve(q)
    answers["lr_wsd"] = answers["lr_wsd"][:-1]
    answers["cosine_expr"] = answers["cosine_expr"].subs(sympy.Symbol("n_steps", positive=True),
                                                         sympy.Symbol("total"))
    del answers["area_cosine"]
    r = P.grade(q, answers)
    assert r.score == r.max_score - 3
    assert any("total" in line for line in r.feedback)
