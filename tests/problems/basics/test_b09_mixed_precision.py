"""b09-mixed-precision: survivors against torch's own casts, the autocast account, and the grader."""
import math
import random

import pytest
import torch

from graders import problems
from graders.course.gate import mistake_reasons
from graders.problems.basics import b09_mixed_precision as b09

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


# Korthikanti et al. 2022, section 4.1, eq. 1: activation memory per layer sbh(34 + 5as/h) bytes,
# 16-bit values and 1-byte dropout masks. The masks, term by term: attention softmax dropout
# as^2b, attention output dropout sbh, MLP output dropout sbh.
GPT2 = {"A": (1024, 4, 1600, 25, 48),       # (s, b, h, a, L): GPT-2 XL
        "B": (1024, 16, 768, 12, 12)}       # GPT-2 124M
# Touvron et al. 2023 (Llama 2), Table 1 and section 2.2, with LLaMA 1's Table 2 for 7B:
# 32 layers, width 4096, 32 heads; SwiGLU width 11008 (2/3 * 4h rounded up to 256).
LLAMA2_7B = {"C": (4096, 1), "D": (512, 1)}  # (s, b)
LLAMA_H, LLAMA_F, LLAMA_L = 4096, 11008, 32


@pytest.mark.parametrize("label", sorted(GPT2))
def test_gpt2_activation_values_are_korthikantis_bytes_less_the_masks(label):
    """A counts values, not bytes/2: 2A plus the 1-byte masks is Korthikanti's 34sbh + 5as^2b."""
    s, b, h, a, L = GPT2[label]
    q = P.variants[label]
    masks = L * (a * s * s * b + 2 * s * b * h)
    assert 2 * q["activation_elements"] + masks == L * s * b * h * (34 + 5 * a * s / h)
    assert q["activation_elements"] == L * (16 * s * b * h + 2 * a * s * s * b)
    assert q["activation_elements"] != L * s * b * h * (34 + 5 * a * s / h) / 2
    assert q["N"] == L * (4 * h * h + 2 * h * 4 * h)
    assert P.solve(q)["bytes_saved"] == 2 * q["activation_elements"] - 2 * q["N"]


@pytest.mark.parametrize("label", sorted(LLAMA2_7B))
def test_llama2_activation_values_have_no_masks_and_no_attention_scores(label):
    """Llama 2 7B with flash attention and no dropout: L sb (8h + 4f) values, no s^2 term."""
    s, b = LLAMA2_7B[label]
    q = P.variants[label]
    assert q["activation_elements"] == LLAMA_L * s * b * (8 * LLAMA_H + 4 * LLAMA_F)
    assert q["N"] == LLAMA_L * (4 * LLAMA_H ** 2 + 3 * LLAMA_H * LLAMA_F)
    assert LLAMA_F == 256 * -(-(2 * 4 * LLAMA_H // 3) // 256)


def _saved_values(block, x):
    """(floating-point values, bool values) that autograd saves for backward in one forward pass."""
    counts = {"float": 0, "bool": 0}
    seen = set()
    weights = {p.untyped_storage().data_ptr() for p in block.parameters()}

    def pack(t):
        key = (t.data_ptr(), tuple(t.shape), t.dtype)
        if key not in seen and t.untyped_storage().data_ptr() not in weights and t.numel() > 1:
            seen.add(key)
            counts["bool" if t.dtype == torch.bool else "float"] += t.numel()
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        block(x).sum().backward()
    return counts


def test_korthikantis_terms_are_what_torch_saves_in_a_gpt2_block():
    """A tiny GPT-2 block in torch saves 16sbh + 2as^2b float values and 2sbh + as^2b mask values
    (up to the per-row LayerNorm statistics and softmax's own bookkeeping, which we allow for)."""
    torch.manual_seed(0)
    s, b, h, a = 16, 2, 32, 4

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = torch.nn.LayerNorm(h), torch.nn.LayerNorm(h)
            self.qkv, self.proj = torch.nn.Linear(h, 3 * h), torch.nn.Linear(h, h)
            self.fc1, self.fc2 = torch.nn.Linear(h, 4 * h), torch.nn.Linear(4 * h, h)

        @staticmethod
        def drop(t):
            # torch's native dropout, which keeps a bool mask as the GPU kernel does (nn.Dropout
            # on the CPU multiplies by a float mask instead)
            return torch.native_dropout(t, 0.1, True)[0]

        def forward(self, x):
            q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, a, h // a).permute(2, 0, 3, 1, 4)
            scores = torch.softmax(q @ k.transpose(-1, -2) / (h // a) ** 0.5, dim=-1)
            attn = (self.drop(scores) @ v).transpose(1, 2).reshape(b, s, h)
            x = x + self.drop(self.proj(attn))
            return x + self.drop(self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x)))))
    block = Block().train()
    counts = _saved_values(block, torch.randn(b, s, h, requires_grad=True))
    assert counts["bool"] == 2 * s * b * h + a * s * s * b
    stats = 2 * 2 * s * b            # each LayerNorm's mean and 1/std per row
    # the residual input x of the block is saved by ln1 and counted with it
    assert counts["float"] == 16 * s * b * h + 2 * a * s * s * b + stats


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


class _FusedRMSNorm(torch.autograd.Function):
    """RMSNorm that saves what fused kernels save (its input and 1/rms), not eager's extra copy."""
    @staticmethod
    def forward(ctx, x):
        rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        ctx.save_for_backward(x, rstd)
        return x * rstd

    @staticmethod
    def backward(ctx, grad):
        x, rstd = ctx.saved_tensors
        y = x * rstd
        return rstd * (grad - y * (grad * y).mean(-1, keepdim=True))


def test_the_llama_count_is_what_torch_saves_with_flash_attention_and_no_dropout():
    """A tiny Llama-style block (RMSNorm as fused kernels save it, SwiGLU, torch's flash attention,
    no dropout) saves sb(8h + 4f) float values and no s x s scores, up to per-row statistics and
    one layout copy. Rotary embeddings are left out: fused kernels apply them saving nothing."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    torch.manual_seed(0)
    s, b, h, a, f = 16, 2, 32, 4, 96

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv, self.o = torch.nn.Linear(h, 3 * h, bias=False), torch.nn.Linear(h, h, bias=False)
            self.gate, self.up = torch.nn.Linear(h, f, bias=False), torch.nn.Linear(h, f, bias=False)
            self.down = torch.nn.Linear(f, h, bias=False)

        def forward(self, x):
            q, k, v = self.qkv(_FusedRMSNorm.apply(x)).view(b, s, 3, a, h // a).permute(2, 0, 3, 1, 4)
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                attn = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.o(attn.transpose(1, 2).reshape(b, s, h))
            y = _FusedRMSNorm.apply(x)
            return x + self.down(torch.nn.functional.silu(self.gate(y)) * self.up(y))
    block = Block().train()
    counts = _saved_values(block, torch.randn(b, s, h, requires_grad=True))
    assert counts["bool"] == 0                               # no dropout, no masks
    stats = 2 * s * b + a * s * b       # two norms' 1/rms per row; flash attention's logsumexp
    # torch's SDPA returns O as (b, a, s, d): the output projection saves a (b, s, h) copy of it;
    # flash-attn's own (b, s, a, d) layout makes that a view of O, counted once, as A counts it
    layout_copy = s * b * h
    assert counts["float"] == s * b * (8 * h + 4 * f) + stats + layout_copy
