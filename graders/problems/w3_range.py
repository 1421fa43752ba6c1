"""w3-range: Proposition 1, range before speed. Casting, underflow, and loss scaling.

Sources:
- IEEE 754-2008 binary16: 1 sign, 5 exponent, 10 fraction bits, bias 15; largest finite
  value (2 - 2^-10) * 2^15 = 65504, smallest normal 2^-14, smallest subnormal 2^-24.
- bfloat16 (Google's brain float; torch.bfloat16): 1 sign, 8 exponent, 7 fraction bits,
  bias 127, so the exponent range of fp32: smallest normal 2^-126.
- Micikevicius et al., "Mixed Precision Training", ICLR 2018: section 3.1 (values below
  2^-24 become zero in FP16; Fig. 2b, about 5% of the weight gradients of a speech model
  have exponents below -24) and section 3.2 (loss scaling; Fig. 3, the activation-gradient
  histogram of Multibox SSD collected in FP32 training: 67% of values are zero, and scaling
  by 8 sufficed for that network).

The cast is torch's: a Python float is first rounded to float32 (torch.tensor's default
dtype), then to the 16-bit format with round-to-nearest, ties-to-even, subnormals kept.
`solve` implements that rounding from the bit layout (no torch), and the tests check it
against torch itself.
"""
import math
import struct

import sympy

from ..numeric import Count, Number
from ..problem import Mistake, Problem
from ..symbolic import Expr

# (fraction bits, exponent bits) of each 16-bit format
FORMATS = {"float16": (10, 5), "bfloat16": (7, 8)}


def limits(exp_bits, frac_bits):
    """(largest finite, smallest normal, smallest subnormal) of an IEEE-style format."""
    bias = 2 ** (exp_bits - 1) - 1
    e_min = 1 - bias                      # exponent field 0 is reserved for zero and subnormals
    e_max = bias                          # the all-ones field is reserved for inf and NaN
    largest = (2 - 2.0 ** -frac_bits) * 2.0 ** e_max
    return largest, 2.0 ** e_min, 2.0 ** (e_min - frac_bits)


def _dtype(params):
    dtype = params["dtype"]
    if dtype not in FORMATS:
        raise ValueError(f"dtype must be 'float16' or 'bfloat16', not {dtype!r}")
    return dtype


def to_float32(x: float) -> float:
    """Round a Python float to float32 (round to nearest even), as torch.tensor(...) does."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def cast(x: float, dtype: str) -> float:
    """The value torch.tensor([x]).to(dtype) holds: via float32, then round-to-nearest-even."""
    frac_bits, exp_bits = FORMATS[dtype]
    largest, min_normal, _ = limits(exp_bits, frac_bits)
    x = to_float32(float(x))
    if x == 0.0 or not math.isfinite(x):
        return x
    exponent = max(math.frexp(abs(x))[1] - 1, round(math.log2(min_normal)))
    quantum = math.ldexp(1.0, exponent - frac_bits)
    rounded = round(x / quantum) * quantum          # round() on a float ties to even
    if abs(rounded) > largest:
        return math.copysign(math.inf, x)
    return rounded


def max_log2_scale(grads, dtype):
    """Largest integer k >= 0 with max|g| * 2**k <= the largest finite value of `dtype`."""
    frac_bits, exp_bits = FORMATS[dtype]
    largest = limits(exp_bits, frac_bits)[0]
    peak = max(abs(float(g)) for g in grads)
    if not peak > 0 or peak > largest:
        raise ValueError("max|g| must be positive and at most the largest finite value")
    k = max(0, math.floor(math.log2(largest) - math.log2(peak)))
    while math.ldexp(peak, k + 1) <= largest:
        k += 1
    while k > 0 and math.ldexp(peak, k) > largest:
        k -= 1
    return k


def underflow_fraction(grads, dtype, k=0, caster=cast):
    """Share of the values that become exactly 0 when scaled by 2**k and cast."""
    grads = [float(g) for g in grads]
    # torch.tensor(grads) * 2**k: round to float32 first, then scale (exact for a power of 2)
    zeros = sum(caster(math.ldexp(to_float32(g), k), dtype) == 0.0 for g in grads)
    return zeros / len(grads)


def _answers(grads, dtype, *, caster=cast, exp_shift=0, top_shift=0):
    """All answers; `caster`, `exp_shift` and `top_shift` let the mistakes reuse this."""
    if not grads or any(not isinstance(g, (int, float)) or not math.isfinite(g) or g == 0 for g in grads):
        raise ValueError("grads must be a non-empty list of finite nonzero numbers")
    e, m = sympy.symbols("e m", positive=True)
    k = max_log2_scale(grads, dtype)
    fp16 = limits(5, 10)
    bf16 = limits(8, 7)
    return {
        "underflow_fraction": underflow_fraction(grads, dtype, 0, caster),
        "max_log2_scale": k,
        "underflow_fraction_scaled": underflow_fraction(grads, dtype, k, caster),
        "fp16_max": fp16[0] * 2.0 ** top_shift,
        "fp16_min_normal": fp16[1] * 2.0 ** exp_shift,
        "fp16_min_subnormal": fp16[2] * 2.0 ** exp_shift,
        "bf16_min_normal": bf16[1] * 2.0 ** exp_shift,
        # smallest subnormal: 2^(e_min - m) with e_min = 1 - bias = 2 - 2^(e-1)
        "min_subnormal_expr": 2 ** (2 - 2 ** (e - 1) - m + exp_shift),
        # largest finite: (2 - 2^-m) * 2^bias, bias = 2^(e-1) - 1
        "max_finite_expr": (2 - 2 ** (-m)) * 2 ** (2 ** (e - 1) - 1 + top_shift),
    }


# --- what the declared mistakes compute ---------------------------------------------------

def _flush_below_normal(x, dtype):
    """A cast that forgets subnormals: everything below the smallest normal becomes 0."""
    frac_bits, exp_bits = FORMATS[dtype]
    return 0.0 if abs(to_float32(x)) < limits(exp_bits, frac_bits)[1] else cast(x, dtype)


def _truncate_below_subnormal(x, dtype):
    """A cast that zeroes everything below the smallest subnormal instead of rounding half-way up."""
    frac_bits, exp_bits = FORMATS[dtype]
    return 0.0 if abs(to_float32(x)) < limits(exp_bits, frac_bits)[2] else cast(x, dtype)


def _fp16_everywhere(x, dtype):
    """The fp16 cast, whatever the dtype."""
    return cast(x, "float16")


def _with_caster(caster, keys):
    def wrong(q):
        answers = _answers(q["grads"], _dtype(q), caster=caster)
        if caster is _fp16_everywhere:
            answers["max_log2_scale"] = max_log2_scale(q["grads"], "float16")
            answers["underflow_fraction_scaled"] = underflow_fraction(
                q["grads"], "float16", answers["max_log2_scale"])
        return {key: answers[key] for key in keys}
    return wrong


class RangeProblem(Problem):
    id = "w3-range"
    title = "Range before speed: underflow and loss scaling"
    strand = "mathematics"
    kind = "worked"
    assignment = "worked"
    symbols = ("e", "m")
    # Gradient magnitudes as they come out of backward passes: most tiny, a few large.
    # A: activation gradients of a detector (the SSD situation of Micikevicius Fig. 3);
    # B: weight gradients of a deep recurrent speech model (Fig. 2b's situation);
    # C: the same kind of spread kept in bfloat16; D: an fp16 run with one large outlier,
    # whose max pins the loss scale so that scaling cannot rescue the smallest values.
    variants = {
        "A": {"dtype": "float16", "grads": [
            3.1e-11, -8.4e-10, 2.6e-9, -1.9e-8, 4.3e-8, -3.7e-8, 7.9e-8, -1.2e-7,
            5.5e-7, -2.4e-6, 9.8e-6, -3.3e-5, 7.1e-5, -2.2e-4, 6.4e-4, -1.5e-3,
            4.8e-3, -9.6e-3, 2.1e-2, -4.4e-2]},
        "B": {"dtype": "float16", "grads": [
            -6.2e-12, 1.8e-10, -5.3e-9, 1.1e-8, -2.8e-8, 3.2e-8, -5.1e-8, 1.6e-7,
            -4.4e-7, 8.9e-7, -1.3e-6, 3.7e-6, -7.7e-6, 2.5e-5, -5.8e-5, 1.9e-4,
            -6.6e-4, 1.4e-3, -3.9e-3, 8.2e-3, -2.7e-2, 0.11]},
        "C": {"dtype": "bfloat16", "grads": [
            2.3e-30, -7.4e-25, 1.5e-19, -8.1e-15, 3.6e-12, -9.2e-11, 4.9e-9, -2.7e-8,
            5.4e-8, -1.9e-7, 8.3e-6, -4.1e-5, 2.9e-4, -1.7e-3, 6.6e-3, -0.052, 0.38, -1.7]},
        "D": {"dtype": "float16", "grads": [
            2.9e-12, -4.7e-11, 8.8e-10, -1.4e-9, 6.1e-9, -2.3e-8, 3.9e-8, -4.6e-8,
            9.7e-8, -6.8e-7, 2.2e-6, -1.1e-5, 4.5e-5, -3.4e-4, 1.2e-3, -8.7e-3,
            6.3e-2, -0.41, 2.8, 12.6]},
    }
    checks = {
        "min_subnormal_expr": Expr(symbols=("e", "m")),
        "max_finite_expr": Expr(symbols=("e", "m")),
        "fp16_max": Number(rtol=1e-6, points=0.5),
        "fp16_min_normal": Number(rtol=1e-6, points=0.5),
        "fp16_min_subnormal": Number(rtol=1e-6, points=0.5),
        "bf16_min_normal": Number(rtol=1e-6, points=0.5),
        "underflow_fraction": Number(rtol=1e-3, atol=1e-9, points=2),
        "max_log2_scale": Count(),
        "underflow_fraction_scaled": Number(rtol=1e-3, atol=1e-9, points=2),
    }
    cells = {
        "check_expr": ("min_subnormal_expr", "max_finite_expr"),
        "check_limits": ("fp16_max", "fp16_min_normal", "fp16_min_subnormal", "bf16_min_normal"),
        "check_numbers": ("underflow_fraction", "max_log2_scale", "underflow_fraction_scaled"),
    }

    def solve(self, params):
        return _answers(list(params["grads"]), _dtype(params))

    mistakes = (
        Mistake(
            "flush-subnormals",
            "values below the smallest normal number were counted as zero; IEEE half precision "
            "keeps subnormals, which reach further down before a value rounds to 0.",
            _with_caster(_flush_below_normal, ("underflow_fraction", "underflow_fraction_scaled")),
        ),
        Mistake(
            "truncate-not-round",
            "every value below the smallest subnormal was counted as zero; the cast rounds to "
            "nearest, so a value more than half-way to the smallest subnormal rounds up to it.",
            _with_caster(_truncate_below_subnormal, ("underflow_fraction", "underflow_fraction_scaled")),
        ),
        Mistake(
            "fp16-range-for-bf16",
            "fp16's range was used for a bfloat16 cast; bfloat16 has 8 exponent bits, the "
            "range of fp32, and so a far lower floor and a far higher ceiling.",
            _with_caster(_fp16_everywhere, ("underflow_fraction", "max_log2_scale",
                                            "underflow_fraction_scaled")),
        ),
        Mistake(
            "first-k-that-overflows",
            "this scale is one power of two too large: it is the first k whose scaled maximum "
            "overflows, not the last one that still fits below the largest finite value.",
            lambda q: {"max_log2_scale": max_log2_scale(q["grads"], _dtype(q)) + 1},
        ),
        Mistake(
            "percent-not-fraction",
            "the share looks like a percentage; give a fraction between 0 and 1.",
            lambda q: {key: 100 * value for key, value in _answers(q["grads"], _dtype(q)).items()
                       if key in ("underflow_fraction", "underflow_fraction_scaled")},
        ),
        Mistake(
            "minimum-exponent-is-minus-bias",
            "the smallest normal exponent was taken as -bias; the all-zeros exponent field is "
            "reserved for zero and subnormals, so the smallest normal exponent is 1 - bias.",
            lambda q: {key: value for key, value in _answers(q["grads"], _dtype(q), exp_shift=-1).items()
                       if key in ("fp16_min_normal", "fp16_min_subnormal", "bf16_min_normal",
                                  "min_subnormal_expr")},
        ),
        Mistake(
            "top-exponent-not-reserved",
            "the largest exponent was taken as the all-ones field; that field is reserved for "
            "infinity and NaN, so the largest finite value uses the exponent below it.",
            lambda q: {key: value for key, value in _answers(q["grads"], _dtype(q), top_shift=1).items()
                       if key in ("fp16_max", "max_finite_expr")},
        ),
    )


PROBLEM = RangeProblem()
