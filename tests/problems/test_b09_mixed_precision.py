"""b09-mixed-precision: survivors against torch's own casts, the autocast account, and the grader."""
import math
import random

import pytest
import torch

from graders import problems
from graders.gate import mistake_reasons
from graders.problems import b09_mixed_precision as b09

P = problems.get("b09-mixed-precision")

# --- (a) primary sources ------------------------------------------------------------------------
# IEEE 754-2008 binary16: largest finite (2 - 2^-10) * 2^15 = 65504, smallest normal 2^-14,
# smallest subnormal 2^-24; bfloat16 (torch.finfo): largest 3.38953e38, smallest normal 2^-126.


def test_format_limits_match_torch_finfo():
    fp16, bf16 = torch.finfo(torch.float16), torch.finfo(torch.bfloat16)
    assert b09.FP16["max"] == fp16.max == 65504.0
    assert b09.FP16["min_normal"] == fp16.smallest_normal == 2.0 ** -14
    assert b09.BF16["max"] == bf16.max
    assert b09.BF16["min_normal"] == bf16.smallest_normal == 2.0 ** -126
    assert torch.tensor([2.0 ** -24]).half().item() == 2.0 ** -24          # smallest subnormal
    assert torch.tensor([2.0 ** -133]).bfloat16().item() == 2.0 ** -133


def torch_survivors(values, dtype):
    cast = torch.tensor(values).to(dtype).tolist()
    return [i for i, y in enumerate(cast) if math.isfinite(y) and y != 0.0]


@pytest.mark.parametrize("label", "ABCD")
def test_survivors_match_torch(label):
    q = P.variants[label]
    ref = P.solve(q)
    assert ref["fp16_survivors"] == torch_survivors(q["values"], torch.float16)
    assert ref["bf16_survivors"] == torch_survivors(q["values"], torch.bfloat16)
    assert len(q["labels"]) == len(q["values"])


def test_casts_match_torch_bit_for_bit_near_every_boundary():
    rng = random.Random(7)
    edges = [65504.0, 65519.0, 65520.0, 65535.9, 2.0 ** -14, 2.0 ** -24, 2.0 ** -25,
             2.0 ** -126, 2.0 ** -133, 2.0 ** -134, 3.38e38, 1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -9]
    values = []
    for e in edges:
        values += [e * (1 + d) for d in (-1e-3, -1e-7, 0.0, 1e-7, 1e-3)]
    values += [math.copysign(10 ** rng.uniform(-44, 38), rng.random() - 0.5) for _ in range(3000)]
    values = [v for v in values if math.isfinite(b09.to_float32(v)) and b09.to_float32(v) != 0.0]
    tensor = torch.tensor(values)
    assert [b09.cast_fp16(v) for v in values] == tensor.to(torch.float16).tolist()
    assert [b09.cast_bf16(v) for v in values] == tensor.to(torch.bfloat16).tolist()


def test_autocast_saves_a_16_bit_copy_of_the_weight_and_16_bit_activations():
    # the account's premise, checked on torch itself: under autocast a Linear saves a 16-bit copy
    # of its weight (not the fp32 weight) and a 16-bit input; without autocast it saves the fp32
    # weight itself and the fp32 input
    linear = torch.nn.Linear(64, 32)
    x = torch.randn(8, 64, requires_grad=True)

    def saved(autocast):
        out = []

        def pack(t):
            out.append((t.dtype, t.untyped_storage().data_ptr() == linear.weight.untyped_storage().data_ptr(),
                        t.numel()))
            return t
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                linear(x)
        return out

    assert sorted(saved(True)) == sorted([(torch.bfloat16, False, 8 * 64), (torch.bfloat16, False, 64 * 32)])
    assert sorted(saved(False)) == sorted([(torch.float32, False, 8 * 64), (torch.float32, True, 64 * 32)])


KORTHIKANTI = {  # (s, b, h, a, L): activation bytes per layer sbh(34 + 5as/h), 16-bit, Table 2
    "A": (1024, 4, 1600, 25, 48),
    "B": (1024, 16, 768, 12, 12),
    "C": (4096, 1, 4096, 32, 32),
    "D": (512, 1, 4096, 32, 32),
}


@pytest.mark.parametrize("label", "ABCD")
def test_activation_counts_follow_korthikanti_and_weights_follow_the_architecture(label):
    s, b, h, a, L = KORTHIKANTI[label]
    q = P.variants[label]
    assert q["activation_elements"] == L * s * b * h * (34 + 5 * a * s / h) / 2
    ffn = 11008 if h == 4096 else 4 * h           # Llama 2 7B's SwiGLU width; GPT-2's 4h
    mats = 4 * h * h + (3 if h == 4096 else 2) * h * ffn
    assert q["N"] == L * mats
    assert P.solve(q)["bytes_saved"] == 2 * q["activation_elements"] - 2 * q["N"]


def test_bytes_saved_turns_negative_for_a_short_fine_tune():
    assert P.solve(P.variants["D"])["bytes_saved"] < 0 < P.solve(P.variants["C"])["bytes_saved"]


def test_bad_parameters_are_refused():
    for change in ({"values": []}, {"values": [0.0]}, {"values": [float("inf")]}, {"values": [1e-50]},
                   {"N": -1}, {"activation_elements": 1.5}):
        with pytest.raises(ValueError):
            P.solve(dict(P.variants["A"], **change))


# --- (b) the grader -----------------------------------------------------------------------------

def test_interface():
    assert P.strand == "basics" and P.kind == "basics" and P.assignment == "basics"


def test_variants_differ():
    answers = [P.solve(q) for q in P.variants.values()]
    assert len({tuple(a["fp16_survivors"]) for a in answers}) == 4
    assert len({a["bytes_saved"] for a in answers}) == 4


def test_every_mistake_loses_points_and_is_named_wherever_it_is_wrong():
    assert mistake_reasons(P) == []


@pytest.mark.parametrize("answers", [
    {}, None, {"fp16_survivors": "0,3"}, {"bf16_survivors": [float("nan")]},
    {"bytes_saved": "1e10"}, {"bytes_saved": float("inf")}, {"fp16_survivors": [[0]]},
])
def test_bad_answers_score_zero_without_raising(answers):
    result = P.grade(P.variants["A"], answers)
    assert result.score == 0 and len(result.feedback) == len(P.checks)


def test_feedback_never_contains_the_reference_value():
    q = P.variants["A"]
    ref = P.solve(q)
    text = "\n".join(P.grade(q, {"fp16_survivors": [0], "bf16_survivors": [0], "bytes_saved": 1.0}).feedback)
    assert str(ref["bytes_saved"]) not in text and f"{ref['bytes_saved']:g}" not in text
    assert str(ref["fp16_survivors"]) not in text
