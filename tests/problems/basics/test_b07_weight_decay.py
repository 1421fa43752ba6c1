"""b07-weight-decay: the decay factor against torch's AdamW under a warmup schedule, and the grader."""
import math

import pytest
import torch

from graders import problems
from graders.course.gate import mistake_reasons

P = problems.get("b07-weight-decay")

# --- (a) primary sources ------------------------------------------------------------------------
# The published settings of the variants, as printed: Llama 2 (Touvron et al. 2023, section 2.2
# and Table 1: 7B lr 3.0e-4, weight decay 0.1, warmup 2000 steps); build-nanogpt train_gpt2.py
# (max_lr 6e-4, warmup_steps 715, weight_decay 0.1); OPT-175B (Zhang et al. 2022, section 2.2 and
# Table 1: lr 1.2e-4, weight decay 0.1, warmup 2000 steps); BERT (Devlin et al. 2019, A.2: lr 1e-4,
# L2 weight decay 0.01, warmup 10,000 steps).
PRINTED = {
    "A": {"lr": 3.0e-4, "weight_decay": 0.1, "warmup": 2000},
    "B": {"lr": 6.0e-4, "weight_decay": 0.1, "warmup": 715},
    "C": {"lr": 1.2e-4, "weight_decay": 0.1, "warmup": 2000},
    "D": {"lr": 1.0e-4, "weight_decay": 0.01, "warmup": 10_000},
}


@pytest.mark.parametrize("label", "ABCD")
def test_variants_use_the_printed_settings(label):
    for key, value in PRINTED[label].items():
        assert P.variants[label][key] == value


def adamw_idle(lr, weight_decay, warmup, start, steps):
    """torch's AdamW on a parameter with zero gradient, under LambdaLR's linear warmup."""
    row = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    opt = torch.optim.AdamW([row], lr=lr, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (start + s) / warmup))
    for _ in range(steps):
        row.grad = torch.zeros_like(row)
        opt.step()
        sched.step()
    return row[0].item()


@pytest.mark.parametrize("label", ["C"])
def test_decay_factor_is_what_adamw_does_over_the_whole_stretch(label):
    q = P.variants[label]
    torch_value = adamw_idle(q["lr"], q["weight_decay"], q["warmup"], q["start"], q["steps"])
    assert P.solve(q)["decay_factor"] == pytest.approx(torch_value, rel=1e-10)


@pytest.mark.parametrize("label", ["A", "B", "D"])
def test_decay_factor_matches_adamw_on_a_shortened_stretch(label):
    # the same schedule and start, 2000 idle steps, so that the test stays fast
    q = dict(P.variants[label], steps=2000)
    torch_value = adamw_idle(q["lr"], q["weight_decay"], q["warmup"], q["start"], q["steps"])
    assert P.solve(q)["decay_factor"] == pytest.approx(torch_value, rel=1e-10)


def test_a_stretch_straddling_warmup_matches_adamw():
    q = {"lr": 1e-2, "weight_decay": 0.3, "warmup": 50, "start": 20, "steps": 200}
    assert P.solve(q)["decay_factor"] == pytest.approx(adamw_idle(**q), rel=1e-10)


def test_steps_to_halve_matches_adamw_at_constant_lr():
    q = {"lr": 2e-2, "weight_decay": 0.7, "warmup": 0, "start": 0, "steps": 1}
    n = P.solve(q)["steps_to_halve"]
    assert adamw_idle(0.02, 0.7, 1, 10, n) <= 0.5 < adamw_idle(0.02, 0.7, 1, 10, n - 1)


def test_per_step_factor_is_one_adamw_step():
    q = P.variants["A"]
    assert P.solve(q)["per_step_factor"] == pytest.approx(adamw_idle(q["lr"], q["weight_decay"], 1, 5, 1),
                                                          rel=1e-12)


def test_bad_parameters_are_refused():
    for change in ({"lr": 0}, {"weight_decay": -0.1}, {"steps": 1.5}, {"warmup": -1},
                   {"lr": 20.0}, {"start": True}):
        with pytest.raises(ValueError):
            P.solve(dict(P.variants["A"], **change))


# --- (b) the grader -----------------------------------------------------------------------------

def test_interface():
    assert P.strand == "basics" and P.kind == "basics" and P.assignment == "basics"


def test_variants_differ():
    assert len({tuple(P.solve(q).values()) for q in P.variants.values()}) == 4


def test_every_mistake_loses_points_and_is_named_wherever_it_is_wrong():
    assert mistake_reasons(P) == []


@pytest.mark.parametrize("answers", [
    {}, None, {"per_step_factor": "0.99997"}, {"decay_factor": float("nan")},
    {"steps_to_halve": 23104.5}, {"decay_factor": [0.4]}, {"per_step_factor": object()},
])
def test_bad_answers_score_zero_without_raising(answers):
    result = P.grade(P.variants["A"], answers)
    assert result.score == 0 and len(result.feedback) == len(P.checks)


def test_feedback_never_contains_the_reference_value():
    q = P.variants["B"]
    ref = P.solve(q)
    text = "\n".join(P.grade(q, {"per_step_factor": 0.5, "decay_factor": 0.5, "steps_to_halve": 3}).feedback)
    for value in ref.values():
        assert f"{value:g}" not in text and str(value) not in text
    assert math.isfinite(ref["decay_factor"])
