"""p9-wsd-vs-cosine: the schedules against torch's own schedulers, the run against the papers' claims,
and the grade against mistakes.

Primary-source statements checked on the reference run:
- Loshchilov and Hutter 2017 (SGDR), eq. (5): the cosine phase; torch's CosineAnnealingLR implements it.
- Hu et al. 2024 (MiniCPM, arXiv 2404.06395), §4: during the stable phase the WSD loss sits above the
  cosine loss, and it falls sharply during the decay phase.
The WSD decay is e02's linear one; torch's LinearLR implements the same straight line.
"""
import ast
import inspect
import math
from pathlib import Path

import pytest
import torch

from graders import problems
from graders.notebook import gather
from graders.problems.practice import p9_wsd_vs_cosine as module
from graders.problems.common.schedules import cosine_lr, wsd_lr

from tests.problems.notebook_cells import cell_sources

P = problems.get("p9-wsd-vs-cosine")
NOTEBOOK = Path(__file__).resolve().parents[3] / "source" / "practice" / "p9-wsd-vs-cosine.pct.py"


def lr_of(q, kind):
    if kind == "cosine":
        return lambda t: float(cosine_lr(t, q["peak_lr"], q["min_lr"], q["warmup"], q["total"]))
    return lambda t: float(wsd_lr(t, q["peak_lr"], q["min_lr"], q["warmup"], q["total"], q["decay"]))


# --- the notebook and the module agree ------------------------------------------------------------
def test_notebook_setup_holds_make_task_verbatim():
    setup = cell_sources(NOTEBOOK)["setup"]
    assert inspect.getsource(module.make_task) in setup + "\n"
    variants = next(n.value for n in ast.walk(ast.parse(setup))
                    if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "VARIANTS")
    assert ast.literal_eval(variants) == P.variants


# --- the schedules against torch's schedulers ---------------------------------------------------
@pytest.mark.parametrize("label", "ABCD")
def test_cosine_phase_is_torchs_cosine_annealing(label):
    q = P.variants[label]
    W, T = q["warmup"], q["total"]
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=q["peak_lr"])
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=T - W, eta_min=q["min_lr"])
    ours = lr_of(q, "cosine")
    for t in range(W, T + 1):
        assert opt.param_groups[0]["lr"] == pytest.approx(ours(t), rel=1e-9, abs=1e-15)
        opt.step()
        sched.step()


@pytest.mark.parametrize("label", "ABCD")
def test_wsd_decay_is_torchs_linear_lr(label):
    q = P.variants[label]
    T, D, peak = q["total"], q["decay"], q["peak_lr"]
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=peak)
    sched = torch.optim.lr_scheduler.LinearLR(opt, start_factor=1.0, end_factor=q["min_lr"] / peak, total_iters=D)
    ours = lr_of(q, "wsd")
    for t in range(T - D, T + 1):
        assert opt.param_groups[0]["lr"] == pytest.approx(ours(t), rel=1e-9, abs=1e-15)
        opt.step()
        sched.step()
    assert ours(q["warmup"] // 2) == pytest.approx(peak * (q["warmup"] // 2) / q["warmup"])
    assert ours(T + 7) == q["min_lr"] == lr_of(q, "cosine")(T + 7)


# --- the run -------------------------------------------------------------------------------------
def lambda_lr_run(q, kind):
    """The protocol written the other common way: torch's LambdaLR drives the learning rate."""
    model, x, y, x_eval, y_eval = module.make_task(q)
    opt = torch.optim.AdamW(model.parameters(), lr=q["peak_lr"], betas=(0.9, 0.95),
                            weight_decay=q["weight_decay"])
    f = lr_of(q, kind)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: f(t) / q["peak_lr"])
    b = q["batch"]
    evals = []

    def record():
        with torch.no_grad():
            evals.append(float(torch.nn.functional.mse_loss(model(x_eval).squeeze(-1), y_eval)))

    record()
    for t in range(q["total"]):
        loss = torch.nn.functional.mse_loss(model(x[t * b:(t + 1) * b]).squeeze(-1), y[t * b:(t + 1) * b])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if (t + 1) % q["eval_every"] == 0:
            record()
    return evals


def test_reference_run_equals_a_lambda_lr_run():
    q = P.variants["D"]
    for kind in ("cosine", "wsd"):
        ref = module.run(q, kind)
        other = lambda_lr_run(q, kind)
        assert len(ref) == len(other) == q["total"] // q["eval_every"] + 1
        assert all(a == pytest.approx(b, rel=1e-9) for a, b in zip(ref, other))


def broadcast_bug_run(q, kind):
    """The broadcast-mse mistake as a student writes it: (n, 1) - (n,) everywhere, the held-out
    loss too (an (n, n) matrix of every prediction against every target)."""
    model, x, y, x_eval, y_eval = module.make_task(q)
    lr = lr_of(q, kind)
    opt = torch.optim.AdamW(model.parameters(), lr=lr(0), betas=(0.9, 0.95), weight_decay=q["weight_decay"])
    b = q["batch"]

    def held_out():
        with torch.no_grad():
            return float(((model(x_eval) - y_eval) ** 2).mean())

    evals = [held_out()]
    for t in range(q["total"]):
        for group in opt.param_groups:
            group["lr"] = lr(t)
        loss = ((model(x[t * b:(t + 1) * b]) - y[t * b:(t + 1) * b]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (t + 1) % q["eval_every"] == 0:
            evals.append(held_out())
    return evals


def test_broadcast_mistake_is_the_literal_n_by_n_mean():
    """The mistake's reference expands the (n, n) mean instead of forming it; it must give what
    the literal bug gives."""
    q = P.variants["B"]
    ours, literal = module.run(q, "wsd", broadcast=True), broadcast_bug_run(q, "wsd")
    assert len(ours) == len(literal) == q["total"] // q["eval_every"] + 1
    assert all(a == pytest.approx(b, rel=1e-12) for a, b in zip(ours, literal))
    assert ours != module.run(q, "wsd")          # and it is a different run from the right one


def test_same_seed_same_run_and_both_runs_start_together():
    q = P.variants["A"]
    module._run_cached.cache_clear()
    first = module.run(q, "cosine")
    module._run_cached.cache_clear()
    assert module.run(q, "cosine") == first
    assert module.run(q, "wsd")[0] == first[0]
    assert module.run(q, "wsd")[:2] == first[:2]        # identical schedules during the warmup


@pytest.mark.parametrize("label", "ABCD")
def test_minicpm_wsd_sits_above_cosine_then_drops_in_the_decay(label):
    q = P.variants[label]
    r = P.solve(q)
    k = (q["total"] - q["decay"]) // q["eval_every"]
    # during the stable phase, just before the decay: WSD (still at the peak) is behind cosine
    assert r["loss_wsd"][k] > r["loss_cosine"][k]
    # the decay phase brings the loss down
    assert r["decay_drop"] > 0


@pytest.mark.parametrize("label", "ACD")
def test_a_decay_of_20_percent_or_more_beats_the_whole_stable_phase(label):
    # With a decay of 20-30% of the run (Hägele et al.'s cooldown length), the decayed WSD model is
    # better than every checkpoint of the stable phase, and the decay moves the loss more than the
    # stable phase did over the window of the same length just before it. (Variant B's 10% decay,
    # MiniCPM's choice at their scale, is too short for this at ours.)
    q = P.variants[label]
    r = P.solve(q)
    k = (q["total"] - q["decay"]) // q["eval_every"]
    span = q["decay"] // q["eval_every"]
    assert r["loss_wsd"][-1] < min(r["loss_wsd"][: k + 1])
    assert r["decay_drop"] > r["loss_wsd"][k - span] - r["loss_wsd"][k]


# --- (b) grading -------------------------------------------------------------------------------------
def test_interface():
    assert (P.strand, P.kind, P.assignment) == ("practice", "practice", "practice")


def test_variants_are_distinct():
    assert len({round(P.solve(q)["decay_drop"], 5) for q in P.variants.values()}) == 4
    assert len({q["decay"] / q["total"] for q in P.variants.values()}) == 3   # 10%, 20%, 30%


@pytest.mark.parametrize("mistake", P.mistakes, ids=lambda m: m.name)
def test_every_mistake_loses_points_with_its_feedback(mistake):
    shown = False
    for q in P.variants.values():
        right = P.solve(q)
        result = P.grade(q, {**right, **mistake.wrong(q)})
        if result.score < result.max_score:
            shown = True
            assert any(mistake.feedback in line for line in result.feedback)
            assert not any(f"{right['decay_drop']:.4g}" in line for line in result.feedback)
    assert shown


def test_gathered_student_schedules_are_graded():
    q = P.variants["B"]
    keys = ["cosine_probe", "wsd_probe"]

    def cosine(t, peak, floor, W, T):
        if t < W:
            return peak * t / W
        return floor if t > T else floor + 0.5 * (peak - floor) * (1 + math.cos(math.pi * (t - W) / (T - W)))

    def wsd(t, peak, floor, W, T, D):
        if t < W:
            return peak * t / W
        if t <= T - D:
            return peak
        return floor if t > T else peak - (peak - floor) * (t - T + D) / D

    def wsd_nanogpt_warmup(t, peak, floor, W, T, D):    # warmup indexed from 1
        return peak * (t + 1) / W if t < W else wsd(t, peak, floor, W, T, D)

    good = P.grade(q, gather(P, q, keys, {"cosine_schedule": cosine, "wsd_schedule": wsd}), keys=keys)
    assert good.full_marks, good.feedback
    off = P.grade(q, gather(P, q, keys, {"cosine_schedule": cosine, "wsd_schedule": wsd_nanogpt_warmup}),
                  keys=keys)
    assert off.score == 1
    missing = P.grade(q, gather(P, q, keys, {}), keys=keys)
    assert missing.score == 0


@pytest.mark.parametrize("bad", [
    {},
    {"loss_cosine": "0.1", "loss_wsd": [float("nan")] * 16, "decay_drop": None,
     "cosine_probe": [{"error": "raised NotImplementedError"}] * 11, "wsd_probe": 0.1},
    {"loss_cosine": [0.1] * 3, "loss_wsd": {"x": 1}, "decay_drop": [0.01],
     "cosine_probe": [[0.1]] * 11, "wsd_probe": [float("inf")] * 11},
])
def test_bad_answers_score_zero_without_raising(bad):
    q = P.variants["A"]
    keys = [k for k in P.checks if k in bad] or list(P.checks)
    result = P.grade(q, bad, keys=keys)
    assert result.score == 0 and len(result.feedback) == len(keys)


def test_solve_refuses_invalid_parameters():
    good = P.variants["D"]
    for change in ({"warmup": 200}, {"decay": 195}, {"eval_every": 7}, {"min_lr": 0.5},
                   {"peak_lr": float("nan")}, {"seed": 1.5}, {"total": 10**6}, {"batch": "16"}):
        with pytest.raises(ValueError):
            P.solve({**good, **change})
