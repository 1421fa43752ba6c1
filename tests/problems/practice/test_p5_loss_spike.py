"""p5-loss-spike: the detector against an independent reference, Adam's first step against what
Kingma and Ba print, the notebook's harness against the module's, and the grader."""
import ast
import itertools
import random
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from graders import problems
from graders.notebook import gather
from graders.problems.practice import p5_loss_spike as p5

from tests.problems.notebook_cells import cell_sources, run_cells

P = problems.get("p5-loss-spike")
ROOT = Path(__file__).resolve().parents[3]
SOURCE = ROOT / "source/practice/p5-loss-spike.pct.py"

# --- (a) what the primary sources print ---------------------------------------------------------
# Kingma and Ba, Adam (ICLR 2015), §2.1: with eps = 0 the effective step is bounded by
# alpha * (1 - beta1) / sqrt(1 - beta2) when (1 - beta1) > sqrt(1 - beta2), and by alpha otherwise;
# rescaling the gradient by c scales m-hat by c and v-hat by c^2, which cancel in the step.
# Brown et al. (2020), Appendix B: GPT-3 uses Adam with betas 0.9 and 0.95 and clips the global
# gradient norm at 1.0.
# Goyal et al. (2017), §2.2: gradual warmup increases the rate by a constant amount each iteration
# until it reaches the target.
GPT3_CLIP_NORM = 1.0
BETAS = (0.9, 0.95)


def notebook_namespace():
    return run_cells(SOURCE, ["harness", "answer_detector"])


def first_adam_step(q, max_norm=None):
    with p5.quiet_torch():
        model = p5.make_model(q["seed"])
        before = torch.cat([p.detach().flatten() for p in model.parameters()])
        x, y = p5.make_data(q["seed"])
        opt = torch.optim.AdamW(model.parameters(), lr=q["peak_lr"], betas=BETAS, weight_decay=0.0)
        F.mse_loss(model(x), y).backward()
        grads = torch.cat([p.grad.flatten() for p in model.parameters()])
        if max_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        opt.step()
        return torch.cat([p.detach().flatten() for p in model.parameters()]) - before, grads


def test_interface():
    assert (P.kind, P.strand, P.assignment) == ("practice", "practice", "practice")


@pytest.mark.parametrize("label", "ABCD")
def test_adam_first_step_is_bounded_by_the_rate_and_blind_to_rescaling(label):
    q = P.variants[label]
    assert (1 - BETAS[0]) <= (1 - BETAS[1]) ** 0.5      # so the printed bound is alpha itself
    step, grads = first_adam_step(q)
    lr = q["peak_lr"]
    assert float(step.abs().max()) <= lr * (1 + 1e-6)
    moved = grads.abs() > 1e-4                            # coordinates where eps does not matter
    assert torch.allclose(step[moved].abs(), torch.full_like(step[moved], lr), rtol=1e-3)
    rescaled, _ = first_adam_step(q, max_norm=float(grads.norm()) / 7.0)
    assert float((rescaled - step).norm() / step.norm()) < 1e-2


def test_variant_a_clips_at_gpt3s_norm_and_warmup_is_linear():
    assert P.variants["A"]["max_norm"] == GPT3_CLIP_NORM
    for q in P.variants.values():
        w, t = q["warmup_steps"], q["steps"]
        rates = [p5.lr_factor(s, w, t) for s in range(w)]
        steps_up = {round(b - a, 12) for a, b in itertools.pairwise(rates)}
        assert steps_up == {round(1 / w, 12)} and rates[-1] == 1.0
        assert p5.lr_factor(w, w, t) == 1.0 and p5.lr_factor(t, w, t) == pytest.approx(0.0, abs=1e-15)


def plain_report(losses, ratio):
    """An independent reading of the definition, written without torch."""
    for t in range(1, len(losses)):
        best = min(losses[:t])
        if losses[t] > ratio * best:
            recovery = next((u for u in range(t + 1, len(losses)) if losses[u] < best), -1)
            window = losses[t:recovery] if recovery > 0 else losses[t:]
            return [t, max(window) / best, recovery]
    return [-1, 0.0, -1]


def test_torch_reference_agrees_with_an_independent_reading():
    rng = random.Random(5)
    for _ in range(300):
        n = rng.randint(2, 40)
        curve = [round(rng.uniform(0.1, 3.0) * (0.97 ** i), 6) for i in range(n)]
        if rng.random() < 0.5:
            t = rng.randrange(1, n)
            curve[t] *= rng.uniform(1.5, 6.0)
        ratio = rng.choice([1.5, 2.0, 3.0])
        assert p5.torch_report(curve, ratio) == plain_report(curve, ratio)


def test_hidden_curves_tell_every_detector_mistake_apart():
    q = P.variants["A"]
    calls = P.probes(q)["detector_probe"].calls
    assert calls == P.probes(q)["detector_probe"].calls
    assert calls != P.probes(P.variants["B"])["detector_probe"].calls
    reference = [p5.torch_report(*c) for c in calls]
    assert [-1, 0.0, -1] in reference and any(r[2] == -1 and r[0] > 0 for r in reference)
    for kind in ("previous-step", "initial-loss", "recovery-at-threshold", "peak-at-detection", "one-based"):
        assert [p5.python_report(*c, kind) for c in calls] != reference, kind


def test_the_story_holds_in_every_variant():
    for q in P.variants.values():
        out = P.solve(q)
        t, peak, recovery = out["spike_nofix"]
        assert 1 <= t <= 2 and peak > 3 and recovery > t
        assert out["spike_clip"][0] == t                       # clipping leaves the spike where it was
        assert out["final_loss_nofix"] > 2 * out["final_loss_warmup"]
        assert out["dead_units_nofix"] > out["dead_units_warmup"]
        assert out["final_loss_warmup"] < out["final_loss_clip"] < out["final_loss_nofix"]
    assert [P.solve(q)["spike_warmup"][0] for q in P.variants.values()].count(-1) == 3


def test_notebook_detector_and_harness_score_full_marks():
    namespace = notebook_namespace()
    cells = cell_sources(SOURCE)
    for label in "BD":
        q = P.variants[label]
        namespace["params"] = q
        exec(cells["answer_spikes"], namespace)
        exec(cells["answer_damage"], namespace)
        answers = gather(P, q, list(P.checks), namespace)
        result = P.grade(q, answers)
        assert result.full_marks, result.feedback


def test_a_detector_against_the_previous_step_loses_the_probe():
    q = P.variants["C"]

    def previous_step(losses, ratio):
        return p5.python_report(losses, ratio, "previous-step")

    result = P.grade(q, gather(P, q, ("detector_probe",), {"spike_report": previous_step}), keys=("detector_probe",))
    assert result.score == 0
    assert "previous step" in result.feedback[0]


@pytest.mark.parametrize("bad", [
    {},
    {"detector_probe": None, "spike_nofix": "1, 7.8, 4", "spike_warmup": [float("nan")] * 3, "spike_clip": 3,
     "final_loss_nofix": [0.1], "final_loss_warmup": None, "final_loss_clip": {"str": "x"},
     "dead_units_nofix": 22.5, "dead_units_warmup": True},
    {"detector_probe": [{"error": "raised IndexError"}] * 6, "spike_nofix": [1, 2]},
])
def test_bad_answers_score_zero_without_raising(bad):
    q = P.variants["D"]
    result = P.grade(q, bad)
    assert result.score == 0
    assert len(result.feedback) == len(P.checks)


def test_solve_rejects_nonsense_parameters():
    base = dict(P.variants["A"])
    for change in ({"steps": 1}, {"warmup_steps": 0}, {"warmup_steps": 60}, {"peak_lr": -0.1},
                   {"max_norm": 0.0}, {"spike_ratio": 1.0}, {"seed": 1.5}):
        with pytest.raises(ValueError):
            P.solve(dict(base, **change))


def test_notebook_variants_are_the_problems():
    text = SOURCE.read_text()
    start = text.index("VARIANTS = {")
    node = ast.parse(text[start:text.index("\nSTUDENT", start)])
    assert ast.literal_eval(node.body[0].value) == P.variants
