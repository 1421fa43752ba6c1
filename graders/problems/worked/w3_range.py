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

- Micikevicius et al. 2022, "FP8 Formats for Deep Learning" (arXiv 2209.05433), Table 1:
  E4M3 (bias 7, no infinities: largest 448, smallest normal 2^-6, smallest subnormal 2^-9)
  and E5M2 (bias 15, IEEE-style: 57344, 2^-14, 2^-16); `dtype` may be either, as torch names
  them (float8_e4m3fn, float8_e5m2), and `max_log2_scale` is taken against that format's
  largest finite value.

The cast is torch's: a Python float is first rounded to float32 (torch.tensor's default
dtype), then to the format with round-to-nearest, ties-to-even, subnormals kept. The
formats and the cast live in `formats.py`, shared by the precision items; `solve` implements
the rounding from the bit layout (no torch), and the tests check it against torch itself.
"""
import math

import sympy

from graders.numeric import Count, Number
from graders.problem import Mistake, Problem
from graders.symbolic import Expr

from graders.problems.common.formats import (EIGHT_BIT, FORMATS, cast, flush_below_normal, limits, max_log2_scale,
                                             truncate_below_subnormal, underflow_fraction)

def _dtype(params):
    dtype = params["dtype"]
    if dtype not in FORMATS:
        raise ValueError(f"dtype must be one of {', '.join(map(repr, FORMATS))}, not {dtype!r}")
    return dtype


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

_flush_below_normal = flush_below_normal
_truncate_below_subnormal = truncate_below_subnormal


def _fp16_everywhere(x, dtype):
    """The fp16 cast, whatever the dtype."""
    return cast(x, "float16")


def _with_caster(caster, keys):
    def wrong(q):
        if caster is _fp16_everywhere and _dtype(q) == "float16":
            return {}   # fp16's own range is the right one for an fp16 cast: no other format to confuse
        answers = _answers(q["grads"], _dtype(q), caster=caster)
        if caster is _fp16_everywhere:
            answers["max_log2_scale"] = max_log2_scale(q["grads"], "float16")
            answers["underflow_fraction_scaled"] = underflow_fraction(
                q["grads"], "float16", answers["max_log2_scale"])
        return {key: answers[key] for key in keys}
    return wrong


def _other_fp8(q):
    dtype = _dtype(q)
    if dtype not in EIGHT_BIT:
        return {}
    other = EIGHT_BIT[1 - EIGHT_BIT.index(dtype)]
    answers = _answers(q["grads"], other)
    return {key: answers[key] for key in ("underflow_fraction", "max_log2_scale", "underflow_fraction_scaled")}


class RangeProblem(Problem):
    id = "w3-range"
    title = "Range before speed: underflow and loss scaling"
    strand = "mathematics"
    kind = "worked"
    assignment = "worked"
    symbols = ("e", "m")
    # Gradient magnitudes as they come out of backward passes: most tiny, a few large.
    # A: activation gradients of a detector (the SSD situation of Micikevicius Fig. 3), fp16;
    # B: weight gradients of a deep recurrent speech model (Fig. 2b's situation) cast to
    #    float8_e5m2, the gradient format of Micikevicius et al. 2022;
    # C: the same kind of spread kept in bfloat16, reaching down into fp32's subnormal range as
    #    vanishing gradients of a deep net trained in fp32 can (the reason torch offers
    #    torch.set_flush_denormal): bf16's floor (smallest subnormal 2^-133) is far lower than
    #    fp16's, but it is a floor: 3.1e-41 rounds to 0, 6.8e-41 rounds up to 2^-133, and
    #    5.2e-39 survives as a subnormal;
    # D: gradients with one large outlier cast to float8_e4m3fn, the forward-pass format:
    #    its max pins the scale, and e4m3's 18 binades cannot hold the rest (why the FP8
    #    recipes keep e5m2 for gradients).
    variants = {
        "A": {"dtype": "float16", "grads": [
            3.1e-11, -8.4e-10, 2.6e-9, -1.9e-8, 4.3e-8, -3.7e-8, 7.9e-8, -1.2e-7,
            5.5e-7, -2.4e-6, 9.8e-6, -3.3e-5, 7.1e-5, -2.2e-4, 6.4e-4, -1.5e-3,
            4.8e-3, -9.6e-3, 2.1e-2, -4.4e-2]},
        "B": {"dtype": "float8_e5m2", "grads": [
            -6.2e-12, 1.8e-10, -5.3e-9, 1.1e-8, -2.8e-8, 3.2e-8, -5.1e-8, 1.6e-7,
            -4.4e-7, 8.9e-7, -1.3e-6, 3.7e-6, -7.7e-6, 2.5e-5, -5.8e-5, 1.9e-4,
            -6.6e-4, 1.4e-3, -3.9e-3, 8.2e-3, -2.7e-2, 0.11]},
        "C": {"dtype": "bfloat16", "grads": [
            3.1e-41, -6.8e-41, 5.2e-39, 2.3e-30, -7.4e-25, 1.5e-19, -8.1e-15, 3.6e-12, -9.2e-11, 4.9e-9, -2.7e-8,
            5.4e-8, -1.9e-7, 8.3e-6, -4.1e-5, 2.9e-4, -1.7e-3, 6.6e-3, -0.052, 0.38, -1.7]},
        "D": {"dtype": "float8_e4m3fn", "grads": [
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
            instant="the format's subnormal numbers.",
        ),
        Mistake(
            "truncate-not-round",
            "every value below the smallest subnormal was counted as zero; the cast rounds to "
            "nearest, so a value more than half-way to the smallest subnormal rounds up to it.",
            _with_caster(_truncate_below_subnormal, ("underflow_fraction", "underflow_fraction_scaled")),
            instant="the rounding the cast applies.",
        ),
        Mistake(
            "first-k-that-overflows",
            "this scale is one power of two too large: it is the first k whose scaled maximum "
            "overflows, not the last one that still fits below the largest finite value.",
            lambda q: {"max_log2_scale": max_log2_scale(q["grads"], _dtype(q)) + 1},
            instant="which scales keep the largest gradient finite in this format.",
        ),
        Mistake(
            "fp16-range-for-bf16",
            "fp16's range was used for another format's cast; each format has its own floor and "
            "ceiling (bfloat16 has 8 exponent bits, fp32's range; the 8-bit formats have far less).",
            _with_caster(_fp16_everywhere, ("underflow_fraction", "max_log2_scale",
                                            "underflow_fraction_scaled")),
            instant="the exponent range of this variant's format.",
        ),
        Mistake(
            "other-fp8-format",
            "these are the other 8-bit format's numbers; e4m3fn has 4 exponent bits and 3 fraction "
            "bits (less range, more precision), e5m2 has 5 and 2 (fp16's exponent range).",
            _other_fp8,
            instant="which FP8 layout this variant's dtype names.",
        ),
        Mistake(
            "percent-not-fraction",
            "the share looks like a percentage; give a fraction between 0 and 1.",
            lambda q: {key: 100 * value for key, value in _answers(q["grads"], _dtype(q)).items()
                       if key in ("underflow_fraction", "underflow_fraction_scaled")},
            instant="how a share is written in this item.",
        ),
        Mistake(
            "minimum-exponent-is-minus-bias",
            "the smallest normal exponent was taken as -bias; the all-zeros exponent field is "
            "reserved for zero and subnormals, so the smallest normal exponent is 1 - bias.",
            lambda q: {key: value for key, value in _answers(q["grads"], _dtype(q), exp_shift=-1).items()
                       if key in ("fp16_min_normal", "fp16_min_subnormal", "bf16_min_normal",
                                  "min_subnormal_expr")},
            instant="what the all-zeros exponent field is reserved for.",
        ),
        Mistake(
            "top-exponent-not-reserved",
            "the largest exponent was taken as the all-ones field; that field is reserved for "
            "infinity and NaN, so the largest finite value uses the exponent below it.",
            lambda q: {key: value for key, value in _answers(q["grads"], _dtype(q), top_shift=1).items()
                       if key in ("fp16_max", "max_finite_expr")},
            instant="what the all-ones exponent field is reserved for.",
        ),
    )


PROBLEM = RangeProblem()
