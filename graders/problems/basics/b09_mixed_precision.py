"""b09-mixed-precision: which values survive a 16-bit cast, and what autocast saves.

The term. Mixed precision runs most of the arithmetic of a training step in a 16-bit format
(fp16 or bf16) while the weights and optimizer state stay in fp32 (Micikevicius et al.,
"Mixed Precision Training", ICLR 2018, section 3.1: an FP32 master copy of the weights).
torch.autocast does this per operation: the parameters remain fp32 tensors, and each
matmul-like op casts its inputs, weights included, to the 16-bit dtype.

Formats (IEEE 754-2008 binary16; bfloat16 as torch.bfloat16):
- fp16: 5 exponent bits, 10 fraction bits. Largest finite 65504; values from 65520 up round
  to inf; smallest normal 2^-14; smallest subnormal 2^-24, and values up to 2^-25 (the tie
  goes to even, 0) round to 0.
- bf16: 8 exponent bits, 7 fraction bits, the exponent range of fp32: largest finite about
  3.39e38, smallest normal 2^-126, smallest subnormal 2^-133.
A Python float becomes a float32 tensor first (torch's default dtype), and .to(dtype) then
rounds to nearest, ties to even, keeping subnormals. A value "survives" the cast when the
result is finite and nonzero.

The byte count (an accounting under stated assumptions): without autocast the weights
(N values of the linear layers) are fp32 and every value saved for backward (A of them) is
fp32. Under autocast the weights stay fp32, each is cast once to a 16-bit copy that the
backward pass keeps, and the saved activations are 16-bit (assumed all of them; in reality
autocast keeps softmax and layer norm in fp32). So

    bytes_saved = (4N + 4A) - (4N + 2N + 2A) = 2A - 2N,

which is negative when the activations are small beside the weights (a short-sequence,
batch-one fine-tune of a large model).

A counts the floating-point values saved for backward. Dropout masks are saved too, but as
1-byte booleans in either run, so they cancel from the saving and are not in A.
- GPT-2-style variants (A, B: LayerNorm, GeLU MLP of width 4h, dropout, attention scores
  materialised as implementations of the time did): Korthikanti et al. 2022, "Reducing
  Activation Recomputation in Large Transformer Models", section 4.1, eq. 1, count
  34sbh + 5as^2b bytes per layer with 16-bit values and 1-byte masks. Term by term, in
  values: attention 5sbh (QKV input sbh, Q and K 2sbh, V sbh, output-projection input sbh)
  + 2as^2b (softmax output, and its dropout's output) + masks as^2b + sbh; MLP 9sbh (input
  sbh, GeLU input 4sbh, GeLU output 4sbh) + mask sbh; two LayerNorm inputs 2sbh. So
  A = L (16sbh + 2as^2b) values, and 2A + L(2sbh + as^2b) mask bytes = L(34sbh + 5as^2b).
- Llama-2-7B variants (C, D): the architecture of Touvron et al. 2023, "Llama 2", section 2.2
  and Table 1 (Llama 1's architecture: pre-norm RMSNorm, SwiGLU, rotary embeddings; 7B: 32
  layers, width 4096, 32 heads, 4k context), with the SwiGLU width 11008 of the released
  model (Touvron et al. 2023a, section 2.2, gives 2/3 * 4h; the released code rounds it up to a
  multiple of 256, its `multiple_of`). It has
  no dropout, and with flash attention no s x s scores are stored: backward keeps Q, K, V and
  the output O (which is also the output projection's input). Per layer, in values: two
  RMSNorm inputs and two outputs 4sbh, Q, K, V 3sbh, O sbh, and the SwiGLU's gate
  pre-activation, up projection, SiLU output and product 4fsb: A = L sb (8h + 4f). Per-row
  statistics (RMSNorm's 1/rms, flash attention's logsumexp, fp32 in both runs) are left out.
"""
from __future__ import annotations

import math

from graders.numeric import Number, Numbers
from graders.problem import Mistake, Problem
from graders.problems.common.formats import cast, format_limits, to_float32
from graders.units import byte_unit_slips

FP16 = dict(zip(("max", "min_normal", "min_subnormal"), format_limits("float16")))
BF16 = dict(zip(("max", "min_normal", "min_subnormal"), format_limits("bfloat16")))


def cast_fp16(x: float) -> float:
    """torch.tensor([x]).to(torch.float16): float32, then round to nearest even."""
    return cast(x, "float16")


def cast_bf16(x: float) -> float:
    """torch.tensor([x]).to(torch.bfloat16): float32, then round to nearest even."""
    return cast(x, "bfloat16")


def survivors(values, caster) -> list[int]:
    out = []
    for i, v in enumerate(values):
        y = caster(v)
        if math.isfinite(y) and y != 0.0:
            out.append(i)
    return out


def _read(q):
    values = q["values"]
    if not isinstance(values, (list, tuple)) or not values:
        raise ValueError("values must be a non-empty list of numbers")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v == 0:
            raise ValueError("values must be finite nonzero numbers")
        if abs(to_float32(v)) == math.inf or to_float32(v) == 0.0:
            raise ValueError("every value must be representable as a nonzero finite float32")
    n, a = q["N"], q["activation_elements"]
    for name, x in (("N", n), ("activation_elements", a)):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or x < 0 or x != int(x):
            raise ValueError(f"{name} must be a non-negative whole number")
    return [float(v) for v in values], int(n), int(a)


def _answers(q):
    values, n, a = _read(q)
    return {
        "fp16_survivors": survivors(values, cast_fp16),
        "bf16_survivors": survivors(values, cast_bf16),
        "bytes_saved": 2 * a - 2 * n,
    }


# --- what the declared mistakes compute ------------------------------------------------

def _flush_subnormals(q):
    values, _, _ = _read(q)
    fp16 = [i for i in survivors(values, cast_fp16) if abs(to_float32(values[i])) >= FP16["min_normal"]]
    bf16 = [i for i in survivors(values, cast_bf16) if abs(to_float32(values[i])) >= BF16["min_normal"]]
    return {"fp16_survivors": fp16, "bf16_survivors": bf16}


def _truncate(q):
    values, _, _ = _read(q)
    fp16 = [i for i in survivors(values, cast_fp16) if abs(to_float32(values[i])) >= FP16["min_subnormal"]]
    bf16 = [i for i in survivors(values, cast_bf16) if abs(to_float32(values[i])) >= BF16["min_subnormal"]]
    return {"fp16_survivors": fp16, "bf16_survivors": bf16}


def _overflow_above_max(q):
    values, _, _ = _read(q)
    # no value lies between fp16's largest finite number and the point where the cast rounds to
    # inf (65520): the variant has nothing the rounding at the top of the range could decide
    if not any(FP16["max"] < abs(to_float32(v)) < 65520.0 for v in values):
        return {}
    return {"fp16_survivors": [i for i in survivors(values, cast_fp16)
                               if abs(to_float32(values[i])) <= FP16["max"]]}


class MixedPrecisionProblem(Problem):
    id = "b09-mixed-precision"
    title = "Mixed precision"
    strand = "basics"
    kind = "basics"
    assignment = "basics"
    # values met in a training step (labels say what each is), the weights N of the linear
    # layers and the values A saved for backward by one training step
    variants = {
        "A": {  # a GPT-2 XL-sized model, batch 4 x 1024 tokens
            "labels": ["weight", "embedding-row gradient", "Adam second moment",
                       "attention logit", "MLP activation outlier", "loss x 2**16",
                       "small gradient", "LayerNorm-gain gradient", "large activation",
                       "learning rate"],
            "values": [0.0213, 3.7e-9, 1.4e-13, 412.5, 7.3e4, 151388.16, 4.5e-8, 2.2e-6,
                       65515.0, 3.0e-4],
            "N": 1_474_560_000, "activation_elements": 15_099_494_400},
        "B": {  # a GPT-2 124M-sized model, batch 16 x 1024 tokens
            "labels": ["gradient", "gradient", "gradient", "activation", "weight",
                       "Adam first moment", "Adam second moment", "logit", "activation",
                       "update lr*m/sqrt(v)", "attention score"],
            "values": [1.2e-5, 2.5e-8, 3.1e-8, 6.6e4, -0.047, -8.3e-7, 6.9e-13, -23.75,
                       65519.0, 2.9e-4, 1.0e5],
            "N": 84_934_656, "activation_elements": 7_247_757_312},
        "C": {  # a Llama-2-7B-sized model, one 4096-token sequence
            "labels": ["weight", "gradient", "Adam second moment of a dead unit",
                       "Adam second moment of a dead unit", "activation", "loss",
                       "gradient", "attention logit", "loss x 2**24", "gradient"],
            "values": [0.0187, 6.2e-9, 2.0e-41, 6.5e-41, 3.1e5, 2.05, 1.6e-39, 1250.0,
                       3.4e7, 7.7e-6],
            "N": 6_476_005_376, "activation_elements": 10_066_329_600},
        "D": {  # the same 7B model fine-tuned on one 512-token sequence
            "labels": ["gradient", "gradient", "Adam second moment", "activation",
                       "activation", "weight", "Adam second moment of a dead unit",
                       "gradient", "logit", "lr x weight decay"],
            "values": [4.0e-8, 1.9e-8, 3.3e-15, 65520.0, 65510.0, 0.0091, 3.0e-41, 5.1e-40,
                       -48.5, 1.0e-6],
            "N": 6_476_005_376, "activation_elements": 1_258_291_200},
    }
    checks = {
        "fp16_survivors": Numbers(exact=True, points=2),
        "bf16_survivors": Numbers(exact=True),
        "bytes_saved": Number(rtol=1e-3),
    }
    cells = {
        "check_survivors": ("fp16_survivors", "bf16_survivors"),
        "check_bytes": ("bytes_saved",),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake(
            "flush-subnormals",
            "values below the smallest normal number were counted as lost; the cast keeps "
            "subnormals, which reach several powers of two further down.",
            _flush_subnormals,
            instant="the subnormal numbers of each format.",
        ),
        Mistake(
            "truncate-not-round",
            "every value below the smallest subnormal was counted as lost; the cast rounds to "
            "nearest, so a value more than half-way up to it becomes the smallest subnormal.",
            _truncate,
            instant="how the cast rounds values at the edge of the subnormal range.",
        ),
        Mistake(
            "overflow-above-max",
            "every value above 65504 was counted as overflowing; the cast rounds first, and "
            "only values from 65520 up round to infinity.",
            _overflow_above_max,
            instant="how the cast rounds values at the edge of fp16's finite range.",
        ),
        Mistake(
            "fp16-range-for-bf16",
            "fp16's range was used for bf16; bf16 has 8 exponent bits, the range of fp32, so it "
            "keeps far smaller and far larger values.",
            lambda q: {"bf16_survivors": _answers(q)["fp16_survivors"]},
            instant="the exponent range of bf16.",
        ),
        Mistake(
            "weights-halved",
            "the weights were counted as if they became 16-bit; autocast keeps them in fp32 and "
            "adds a 16-bit copy of each, so the weights cost memory rather than save it.",
            lambda q: {"bytes_saved": 2 * _read(q)[2] + 2 * _read(q)[1]},
            instant="what autocast does to the fp32 parameters.",
        ),
        Mistake(
            "weight-copies-forgotten",
            "the 16-bit copies of the weights that autocast makes, and backward keeps, were "
            "left out of the account.",
            lambda q: {"bytes_saved": 2 * _read(q)[2]},
            instant="the copies of the weights that autocast casts for the matmuls.",
        ),
        Mistake(
            "bits-not-bytes",
            "this looks like a count of bits; the unit is bytes (a 16-bit value is 2 bytes).",
            lambda q: {"bytes_saved": 8 * (2 * _read(q)[2] - 2 * _read(q)[1])},
            instant="the unit a memory count is stated in.",
        ),
        *byte_unit_slips(lambda q: {"bytes_saved": _answers(q)["bytes_saved"]}),
    )


PROBLEM = MixedPrecisionProblem()
