"""p8-noise-scale against McCandlish et al. 2018 (arXiv 1812.06162), and the grade against mistakes.

What the paper states, and what is checked here on the notebook's own model:
- Appendix A.1: E|G_B|^2 = |G|^2 + tr(Sigma)/B, and the two-batch estimators built on it are unbiased.
  Checked against per-example gradients (torch.func) of the same examples, the direct route.
- Abstract: "the noise scale increases as the loss decreases over a training run". Checked on the
  variants' task, measured before and after training.
- The measurement protocol (loss = batch mean, consecutive small batches inside each big batch) is
  checked by re-running it literally with autograd, one batch at a time, as the notebook does.
"""
import ast
import inspect
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.func import functional_call, grad, vmap

from graders import problems
from graders.notebook import gather
from graders.problems.practice import p8_noise_scale as module
from graders.problems.common.noise_scale import unbiased_g2, unbiased_trace

from tests.problems.notebook_cells import cell_sources

P = problems.get("p8-noise-scale")
NOTEBOOK = Path(__file__).resolve().parents[3] / "source" / "practice" / "p8-noise-scale.pct.py"


def per_example_truth(params):
    """(|G|^2, tr(Sigma)) from every example's gradient on the measurement stream, both unbiased."""
    model, x, y = module.make_task(params)
    weights = {k: v.detach() for k, v in model.named_parameters()}

    def loss(w, xi, yi):
        return (functional_call(model, w, (xi.unsqueeze(0),)).squeeze() - yi) ** 2

    per = vmap(grad(loss), in_dims=(None, 0, 0))(weights, x, y)
    flat = torch.cat([g.reshape(len(x), -1) for g in per.values()], dim=1)
    mean = flat.mean(0)
    trace = float(((flat - mean) ** 2).sum() / (len(x) - 1))
    return float(mean @ mean) - trace / len(x), trace


def autograd_protocol(params):
    """The notebook's protocol, literally: one autograd call per batch."""
    model, x, y = module.make_task(params)
    bs, bb = params["b_small"], params["b_big"]

    def sq(xb, yb):
        loss = ((model(xb).squeeze(-1) - yb) ** 2).mean()
        return float(sum((g * g).sum() for g in torch.autograd.grad(loss, list(model.parameters()))))

    small, big = [], []
    for j in range(params["n_big"]):
        xj, yj = x[j * bb:(j + 1) * bb], y[j * bb:(j + 1) * bb]
        big.append(sq(xj, yj))
        small += [sq(xj[k:k + bs], yj[k:k + bs]) for k in range(0, bb, bs)]
    return sum(small) / len(small), sum(big) / len(big)


# --- the notebook and the module agree --------------------------------------------------------------
def test_notebook_setup_holds_make_task_verbatim():
    setup = cell_sources(NOTEBOOK)["setup"]
    assert inspect.getsource(module.make_task) in setup + "\n"
    assert "def make_task(params):" in setup
    variants = next(n.value for n in ast.walk(ast.parse(setup))
                    if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "VARIANTS")
    assert ast.literal_eval(variants) == P.variants


def test_batched_reference_equals_the_autograd_protocol():
    small_run = {**P.variants["D"], "n_big": 3}          # same model, fewer batches: quick
    fast = module.measure(small_run)
    slow = autograd_protocol(small_run)
    assert fast[0] == pytest.approx(slow[0], rel=1e-12) and fast[1] == pytest.approx(slow[1], rel=1e-12)


# --- (a) against the paper ------------------------------------------------------------------------
@pytest.mark.parametrize("label", "ABCD")
def test_two_batch_estimates_agree_with_per_example_gradients(label):
    q = P.variants[label]
    r = P.solve(q)
    g2, trace = per_example_truth(q)
    # Two estimators of the same quantities from the same 16,384 examples; |G|^2 is a small
    # difference of noisy numbers when B_noise is near 1000, so it is only good to ~20% (2 sd).
    assert r["trace_sigma"] == pytest.approx(trace, rel=0.05)
    assert r["g2"] == pytest.approx(g2, rel=0.2)
    assert r["b_simple"] == pytest.approx(trace / g2, rel=0.2)


def test_expected_squared_norm_has_the_noise_term():
    # E|G_B|^2 = |G|^2 + tr(Sigma)/B on this model: the measured means at both sizes, against the
    # per-example values, within a few standard errors of the batch-norm averages.
    q = P.variants["A"]
    g2, trace = per_example_truth(q)
    g2_small, g2_big = module.measure(q)
    assert g2_small == pytest.approx(g2 + trace / q["b_small"], rel=0.02)
    assert g2_big == pytest.approx(g2 + trace / q["b_big"], rel=0.05)


def test_noise_scale_grows_as_the_loss_falls():
    base = P.variants["A"]
    scales, losses = [], []
    for steps in (0, 100, 400):
        q = {**base, "train_steps": steps}
        scales.append(P.solve(q)["b_simple"])
        model, x, y = module.make_task(q)
        with torch.no_grad():
            losses.append(float(((model(x).squeeze(-1) - y) ** 2).mean()))
    assert losses[0] > losses[1] > losses[2]
    assert scales[0] < scales[1] < scales[2] and scales[2] > 3 * scales[0]


def test_probe_reference_is_e10s_estimator_on_positive_measurements():
    q = P.variants["C"]
    calls = module.probe_calls(q)
    outputs = P.solve(q)["estimator_probe"]
    assert len(calls) == 6 and calls == module.probe_calls(q)          # deterministic
    assert calls != module.probe_calls(P.variants["B"])               # and different per variant
    for (bs, bb, gs, gb), (g2, trace, b_simple) in zip(calls, outputs):
        assert bb > bs and gs > gb > 0
        assert g2 == unbiased_g2(bs, bb, gs, gb) and trace == unbiased_trace(bs, bb, gs, gb)
        assert b_simple == pytest.approx(trace / g2, rel=1e-15) and b_simple > 0


# --- (b) grading ------------------------------------------------------------------------------------
def test_interface():
    assert (P.strand, P.kind, P.assignment) == ("practice", "practice", "practice")


def test_variants_are_distinct():
    assert len({round(P.solve(q)["b_simple"]) for q in P.variants.values()}) == 4
    sides = {q["b_big"] > P.solve(q)["b_simple"] for q in P.variants.values()}
    assert sides == {True, False}     # some global batches above the noise scale, one below


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


def test_gathered_student_functions_are_graded():
    q = P.variants["B"]
    keys = ["estimator_probe"]

    def good(bs, bb, gs, gb):
        g2 = (bb * gb - bs * gs) / (bb - bs)
        tr = (gs - gb) / (1 / bs - 1 / bb)
        return np.float64(g2), tr, tr / g2

    def biased(bs, bb, gs, gb):
        tr = (gs - gb) / (1 / bs - 1 / bb)
        return gs, tr, tr / gs

    assert P.grade(q, gather(P, q, keys, {"noise_scale": good}), keys=keys).full_marks
    wrong = P.grade(q, gather(P, q, keys, {"noise_scale": biased}), keys=keys)
    assert wrong.score == 0 and "small-batch squared norm" in wrong.feedback[0]
    missing = P.grade(q, gather(P, q, keys, {}), keys=keys)
    assert missing.score == 0 and "missing" in missing.feedback[0]


def test_summed_loss_measurement_is_named():
    q = P.variants["C"]
    right = P.solve(q)
    answers = {"g2_small": right["g2_small"] * q["b_small"] ** 2, "g2_big": right["g2_big"] * q["b_big"] ** 2}
    result = P.grade(q, answers, keys=["g2_small", "g2_big"])
    assert result.score == 0 and all("summed loss" in line for line in result.feedback)


@pytest.mark.parametrize("bad", [
    {},
    {"g2_small": "0.75", "g2_big": float("nan"), "g2": None, "trace_sigma": [1.0], "b_simple": True,
     "estimator_probe": [{"error": "raised ZeroDivisionError"}] * 6},
    {"estimator_probe": [[float("nan"), 1.0, 1.0]] * 6, "b_simple": float("inf")},
])
def test_bad_answers_score_zero_without_raising(bad):
    q = P.variants["D"]
    keys = [k for k in P.checks if k in bad] or list(P.checks)
    result = P.grade(q, bad, keys=keys)
    assert result.score == 0 and len(result.feedback) == len(keys)


def test_solve_refuses_invalid_parameters():
    good = P.variants["A"]
    for change in ({"b_big": 8}, {"b_big": 1004}, {"b_small": 0}, {"noise": float("nan")},
                   {"seed": "21"}, {"train_steps": -1}, {"n_big": 10_000}):
        with pytest.raises(ValueError):
            P.solve({**good, **change})
    assert math.isfinite(P.solve({**good, "seed": 5, "n_big": 2})["b_simple"])
