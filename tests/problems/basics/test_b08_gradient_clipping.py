"""b08-gradient-clipping: global norms and coefficients against torch's clip_grad_norm_, and the grader."""
import random

import pytest
import torch

from graders import problems
from graders.course.gate import mistake_reasons

P = problems.get("b08-gradient-clipping")

# --- (a) primary sources ------------------------------------------------------------------------
# torch.nn.utils.clip_grad_norm_ itself is the reference: tensors are built with exactly the
# per-tensor norms of each step, clipped, and the factor torch applied is read back. Thresholds as
# printed: GPT-3 (Brown et al. 2020, Appendix B) and LLaMA (Touvron et al. 2023, section 2.3) clip
# at 1.0; OPT-175B (Zhang et al. 2022, section 2.5) lowered its threshold to 0.3.
PRINTED_THRESHOLDS = {"A": 1.0, "B": 0.3, "C": 1.0, "D": 0.3}


def torch_step(norms, max_norm, seed=0, dtype=torch.float64):
    """(total norm, applied factor) of clip_grad_norm_ on tensors with the given norms."""
    gen = torch.Generator().manual_seed(seed)
    params = []
    for i, norm in enumerate(norms):
        g = torch.randn(3 + i, generator=gen, dtype=dtype)
        g = g * (norm / g.norm())
        p = torch.nn.Parameter(torch.zeros_like(g))
        p.grad = g
        params.append(p)
    before = [p.grad.clone() for p in params]
    total = torch.nn.utils.clip_grad_norm_(params, max_norm).item()
    factor = (params[0].grad / before[0]).mean().item()
    return total, factor, [p.grad for p in params], before


@pytest.mark.parametrize("label", "ABCD")
def test_matches_clip_grad_norm(label):
    q = P.variants[label]
    assert q["max_norm"] == PRINTED_THRESHOLDS[label]
    ref = P.solve(q)
    for i, norms in enumerate(q["tensor_norms"]):
        total, factor, after, before = torch_step(norms, q["max_norm"])
        assert ref["global_norms"][i] == pytest.approx(total, rel=1e-12)
        assert ref["clip_coefficients"][i] == pytest.approx(factor, rel=1e-12)
        changed = any(not torch.equal(a, b) for a, b in zip(after, before))
        assert changed == (i in ref["clipped_steps"])


@pytest.mark.parametrize("label", "ABCD")
def test_variants_separate_the_wrong_definitions(label):
    # each variant has a step clipped with every tensor under the threshold, or a step whose
    # summed norms pass the threshold while its global norm does not
    q = P.variants[label]
    ref = P.solve(q)
    c = q["max_norm"]
    under_but_clipped = [i for i in ref["clipped_steps"] if max(q["tensor_norms"][i]) <= c]
    summed_over = [i for i, n in enumerate(q["tensor_norms"]) if sum(n) > c and i not in ref["clipped_steps"]]
    assert under_but_clipped or summed_over


def test_random_steps_in_float32():
    rng = random.Random(3)
    for seed in range(20):
        norms = [10 ** rng.uniform(-2, 0.7) for _ in range(rng.randint(1, 6))]
        q = {"tensor_norms": [norms], "max_norm": 0.8}
        total, factor, _, _ = torch_step(norms, 0.8, seed=seed, dtype=torch.float32)
        ref = P.solve(q)
        assert ref["global_norms"][0] == pytest.approx(total, rel=1e-5)
        assert ref["clip_coefficients"][0] == pytest.approx(factor, rel=1e-5)


def test_bad_parameters_are_refused():
    for change in ({"max_norm": 0}, {"tensor_norms": []}, {"tensor_norms": [[]]},
                   {"tensor_norms": [[float("nan")]]}, {"tensor_norms": [[-1.0]]}):
        with pytest.raises(ValueError):
            P.solve(dict(P.variants["A"], **change))


# --- (b) the grader -----------------------------------------------------------------------------

def test_interface():
    assert P.strand == "basics" and P.kind == "basics" and P.assignment == "basics"


def test_variants_differ():
    assert len({tuple(P.solve(q)["clipped_steps"]) for q in P.variants.values()}) == 4


def test_every_mistake_loses_points_and_is_named_wherever_it_is_wrong():
    assert mistake_reasons(P) == []


@pytest.mark.parametrize("answers", [
    {}, None, {"global_norms": "1, 2"}, {"clip_coefficients": [float("nan")] * 6},
    {"clipped_steps": 3}, {"global_norms": [1.0] * 5}, {"clipped_steps": ["1"]},
])
def test_bad_answers_score_zero_without_raising(answers):
    result = P.grade(P.variants["A"], answers)
    assert result.score == 0 and len(result.feedback) == len(P.checks)


def test_feedback_never_contains_the_reference_value():
    q = P.variants["C"]
    ref = P.solve(q)
    text = "\n".join(P.grade(q, {"global_norms": [1.0] * 6, "clip_coefficients": [0.5] * 6,
                                 "clipped_steps": [0]}).feedback)
    for value in ref["global_norms"] + ref["clip_coefficients"]:
        if value != 1.0:
            assert f"{value:.4g}" not in text
