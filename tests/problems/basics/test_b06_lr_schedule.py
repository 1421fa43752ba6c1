"""b06-lr-schedule: the schedule against the code of real runs and torch, and the grade."""
import math

import numpy as np
import pytest
import torch

from graders import problems
from graders.notebook import gather
from graders.problems.basics import b06_lr_schedule as b06
from graders.problems.common.schedules import cosine_lr

P = problems.get("b06-lr-schedule")


def schedule(label):
    q = P.variants[label]
    return q["peak_lr"], q["min_lr"], q["warmup"], q["total"], q["at"]


# --- the schedule against the code that printed it --------------------------------------------

def tinyllama_get_lr(it, learning_rate=4e-4, min_lr=4e-5, warmup_steps=2000,
                     max_step=715256 * 2, gradient_accumulation_steps=8):
    # jzhang38/TinyLlama pretrain/tinyllama.py, get_lr(it), with it counted in micro-steps
    warmup_iters = warmup_steps * gradient_accumulation_steps
    lr_decay_iters = max_step * gradient_accumulation_steps
    if it < warmup_iters:
        return learning_rate * it / warmup_iters
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (learning_rate - min_lr)


def test_tinyllama_code_gives_the_same_rates_at_the_same_steps():
    _, _, _, _, at = schedule("A")
    got = P.solve(P.variants["A"])["lr_at_steps"]
    expected = [tinyllama_get_lr(8 * t) for t in at]
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-18)


def nanogpt_get_lr(it, learning_rate=6e-4, min_lr=6e-5, warmup_iters=2000, lr_decay_iters=600000):
    # karpathy/nanoGPT train.py, get_lr(it)
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (learning_rate - min_lr)


def test_nanogpt_agrees_after_warmup_and_differs_during_it():
    peak, floor, W, T, at = schedule("D")
    got = dict(zip(at, P.solve(P.variants["D"])["lr_at_steps"]))
    for t in at:
        if t >= W:
            assert got[t] == pytest.approx(nanogpt_get_lr(t), rel=1e-12)
    assert got[0] == 0 and nanogpt_get_lr(0) > 0


def neox_annealing_lr(t, start_lr, min_lr, warmup_iter, end_iter):
    # EleutherAI/gpt-neox megatron/learning_rates.py, AnnealingLR.get_lr, decay_style "cosine",
    # before pull request 1008 (2023), which says of it: "this is what is used for training
    # pythia and all other models"; read at commit 0535bfbb788540e157351b7d73d4ed5c1df3a120.
    num_iters_ = min(t, end_iter - warmup_iter)
    if warmup_iter > 0 and t <= warmup_iter:
        return float(start_lr) * num_iters_ / warmup_iter
    num_iters_ = num_iters_ - warmup_iter
    lr = start_lr / 2.0 * (math.cos(math.pi * num_iters_ / end_iter) + 1)
    return max(lr, min_lr)


@pytest.mark.parametrize("label", ["B", "C"])
def test_gpt_neox_code_agrees_through_the_peak_and_floors_early(label):
    peak, floor, W, T, at = schedule(label)
    ours = lambda t: b06.lr_at(t, peak, floor, W, T)          # noqa: E731
    theirs = lambda t: neox_annealing_lr(t, peak, floor, W, T)  # noqa: E731
    for t in (0, W // 2, W - 1, W):
        assert ours(t) == pytest.approx(theirs(t), rel=1e-12, abs=1e-18)
    # NeoX aims its cosine at zero over the whole run and clips at the floor: it reaches
    # the 10% floor near 80% of the run, where the chapter's schedule is still above it
    t_floor = next(t for t in range(W, T, 100) if theirs(t) == floor)
    assert 0.75 * T < t_floor < 0.85 * T
    assert ours(t_floor) > 1.5 * floor
    assert ours(T) == pytest.approx(theirs(T))


def test_torch_cosine_annealing_matches_the_decay_and_rises_past_t_max():
    # torch.optim.lr_scheduler.CosineAnnealingLR: η_min + ½(η_max − η_min)(1 + cos(π t / T_max))
    # within T_max; past T_max it keeps following the cosine back up.
    peak, floor, T = 1e-3, 1e-4, 40
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=peak)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=T, eta_min=floor)
    for t in range(1, 2 * T):
        opt.step()
        sched.step()
        lr = opt.param_groups[0]["lr"]
        if t <= T:
            assert lr == pytest.approx(b06.lr_at(t, peak, floor, 0, T), rel=1e-9)
        else:
            assert lr == pytest.approx(b06.lr_at(t, peak, floor, 0, T, periodic=True), rel=1e-9)
            assert lr > b06.lr_at(t, peak, floor, 0, T)


@pytest.mark.parametrize("label", "ABCD")
def test_same_definition_as_e02(label):
    peak, floor, W, T, at = schedule(label)
    np.testing.assert_allclose(P.solve(P.variants[label])["lr_at_steps"],
                               cosine_lr(at, peak, floor, W, T), rtol=1e-12, atol=1e-18)


def test_shape_of_the_schedule():
    for label in "ABCD":
        peak, floor, W, T, _ = schedule(label)
        assert b06.lr_at(0, peak, floor, W, T) == 0
        assert b06.lr_at(W - 1, peak, floor, W, T) < b06.lr_at(W, peak, floor, W, T)
        assert b06.lr_at(W, peak, floor, W, T) == pytest.approx(peak, rel=1e-15)
        assert max(b06.lr_at(t, peak, floor, W, T) for t in range(0, 3 * W)) == \
            b06.lr_at(W, peak, floor, W, T)
        assert b06.lr_at((W + T) / 2, peak, floor, W, T) == pytest.approx((peak + floor) / 2)
        assert b06.lr_at(T, peak, floor, W, T) == pytest.approx(floor)
        assert P.solve(P.variants[label])["peak_step"] == W


def test_variant_hyperparameters_are_the_configs():
    # TinyLlama: learning_rate 4e-4, min_lr 4e-5, warmup_steps 2000, max_step 715256 * 2.
    assert schedule("A")[:4] == (4e-4, 4e-5, 2000, 715256 * 2)
    # GPT-NeoX configs/20B.yml: lr 0.97e-4, min_lr 0.97e-5, warmup 0.01, train-iters 150000.
    assert schedule("B")[:4] == (0.97e-4, 0.97e-5, round(0.01 * 150000), 150000)
    # Pythia models/12B/pythia-12b.yml: lr 0.00012, min_lr 0.000012, warmup 0.01, 143000.
    assert schedule("C")[:4] == (0.00012, 0.000012, round(0.01 * 143000), 143000)


# --- the probe -------------------------------------------------------------------------------

def test_probe_calls_are_deterministic_per_variant_and_cover_the_edges():
    calls = P.probes(P.variants["A"])["lr_probe"].calls
    assert calls == P.probes(P.variants["A"])["lr_probe"].calls
    assert calls != P.probes(P.variants["B"])["lr_probe"].calls
    for t, peak, floor, W, T in calls:
        assert 0 <= floor <= peak and 0 < W < T
    steps = {(t, W, T) for t, _, _, W, T in calls}
    for _, _, _, W, T in calls:
        assert {(0, W, T), (W - 1, W, T), (W, W, T), (T, W, T), (T + 7, W, T)} <= steps


def student_lr_at(t, peak_lr, min_lr, warmup, total):
    """The notebook's solution, written independently of the module."""
    if t < warmup:
        return peak_lr * t / warmup
    if t > total:
        return min_lr
    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + np.cos(np.pi * (t - warmup) / (total - warmup)))


def build_nanogpt_lr_at(t, peak_lr, min_lr, warmup, total):
    """karpathy/build-nanogpt's get_lr: warmup indexed from 1."""
    if t < warmup:
        return peak_lr * (t + 1) / warmup
    if t > total:
        return min_lr
    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * (t - warmup) / (total - warmup)))


@pytest.mark.parametrize("label", "ABCD")
def test_an_independent_solution_passes_the_probe(label):
    q = P.variants[label]
    answers = gather(P, q, ["lr_probe"], {"lr_at": student_lr_at})
    assert P.grade(q, answers, keys=["lr_probe"]).full_marks


def test_build_nanogpt_convention_fails_the_probe_and_is_named():
    q = P.variants["C"]
    r = P.grade(q, gather(P, q, ["lr_probe"], {"lr_at": build_nanogpt_lr_at}), keys=["lr_probe"])
    assert r.score == 0
    assert "indexed from 1" in " ".join(r.feedback)


def test_a_function_that_raises_or_is_missing_scores_zero():
    q = P.variants["B"]

    def broken(*args):
        raise ZeroDivisionError

    for namespace in ({"lr_at": broken}, {}, {"lr_at": 3.0}):
        r = P.grade(q, gather(P, q, ["lr_probe"], namespace), keys=["lr_probe"])
        assert r.score == 0


# --- the grade ---------------------------------------------------------------------------

def test_interface():
    assert (P.strand, P.kind, P.assignment) == ("basics", "basics", "basics")


def test_variants_differ():
    answers = [P.solve(q) for q in P.variants.values()]
    assert len({tuple(a["lr_at_steps"]) for a in answers}) == 4
    assert len({a["peak_step"] for a in answers}) == 3


@pytest.mark.parametrize("bad", [None, "0.0004", float("nan"), [1e-4] * 3, {"str": "x"}, 4e-4])
def test_bad_lists_score_zero_without_raising(bad):
    q = P.variants["A"]
    r = P.grade(q, {**P.solve(q), "lr_at_steps": bad})
    assert not r.outcomes["lr_at_steps"].passed
    assert r.score == r.max_score - 1


def test_missing_key_and_non_dict_score_zero():
    q = P.variants["D"]
    answers = P.solve(q)
    del answers["peak_step"]
    r = P.grade(q, answers)
    assert r.score == r.max_score - 1 and "missing" in " ".join(r.feedback)
    assert P.grade(q, None).score == 0
