"""Floating-point formats of the precision items (w3, t1, c2, b09): their limits and torch's casts.

One table and one cast, shared: each precision problem imports them from here.

Formats (fraction bits, exponent bits, whether the format has infinities):
- float16: IEEE 754-2008 binary16, bias 15: largest finite (2 - 2^-10) * 2^15 = 65504,
  smallest normal 2^-14, smallest subnormal 2^-24.
- bfloat16: 8 exponent bits (fp32's range), 7 fraction bits: smallest normal 2^-126.
- float8_e5m2: Micikevicius et al. 2022, "FP8 Formats for Deep Learning" (arXiv 2209.05433),
  Table 1: IEEE-style, bias 15, with infinities and NaNs; largest finite 1.75 * 2^15 = 57344,
  smallest normal 2^-14, smallest subnormal 2^-16.
- float8_e4m3fn ("fn": finite, no infinities): the same paper's E4M3, bias 7. Only one bit
  pattern per sign is NaN (S.1111.111), so the all-ones exponent holds normal numbers and the
  largest finite value is 1.75 * 2^8 = 448; smallest normal 2^-6, smallest subnormal 2^-9.

The cast is torch's: a Python float is first rounded to float32 (torch.tensor's default
dtype), then to the format with round-to-nearest, ties-to-even, subnormals kept. Past the
largest finite value, a format with infinities rounds to inf from the half-way point up (fp16:
65520 and above; below that, values round down to 65504). torch 2.13's cast into
float8_e4m3fn saturates instead: every value beyond 448, inf included, becomes +-448. That is
torch's choice, not the format's (E4M3 has no infinity): other stacks may give NaN, S.1111.111.
The tests check this module against torch's own casts and torch.finfo.
"""
from __future__ import annotations

import math
import struct

# dtype -> (fraction bits, exponent bits, has infinities)
FORMATS = {
    "float16": (10, 5, True),
    "bfloat16": (7, 8, True),
    "float8_e4m3fn": (3, 4, False),
    "float8_e5m2": (2, 5, True),
}
SIXTEEN_BIT = ("float16", "bfloat16")
EIGHT_BIT = ("float8_e4m3fn", "float8_e5m2")


def limits(exp_bits, frac_bits):
    """(largest finite, smallest normal, smallest subnormal) of an IEEE-style format."""
    bias = 2 ** (exp_bits - 1) - 1
    e_min = 1 - bias                      # exponent field 0 is reserved for zero and subnormals
    e_max = bias                          # the all-ones field is reserved for inf and NaN
    largest = (2 - 2.0 ** -frac_bits) * 2.0 ** e_max
    return largest, 2.0 ** e_min, 2.0 ** (e_min - frac_bits)


def format_limits(dtype):
    """(largest finite, smallest normal, smallest subnormal) of one of FORMATS."""
    frac_bits, exp_bits, has_inf = FORMATS[dtype]
    largest, min_normal, min_subnormal = limits(exp_bits, frac_bits)
    if not has_inf:
        # the all-ones exponent holds numbers; only its all-ones fraction is NaN
        largest = (2 - 2.0 ** (1 - frac_bits)) * 2.0 ** (2 ** (exp_bits - 1))
    return largest, min_normal, min_subnormal


def to_float32(x: float) -> float:
    """Round a Python float to float32 (round to nearest even), as torch.tensor(...) does: a value
    that rounds past float32's largest finite one is an infinity (struct refuses to pack it)."""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def cast(x: float, dtype: str) -> float:
    """The value torch.tensor([x]).to(dtype) holds: via float32, then round-to-nearest-even."""
    frac_bits, _, has_inf = FORMATS[dtype]
    largest, min_normal, _ = format_limits(dtype)
    x = to_float32(float(x))
    if x == 0.0 or math.isnan(x):
        return x
    if math.isinf(x):
        return x if has_inf else math.copysign(largest, x)
    exponent = max(math.frexp(abs(x))[1] - 1, round(math.log2(min_normal)))
    quantum = math.ldexp(1.0, exponent - frac_bits)
    # round() on a float ties to even; a value that rounds to zero keeps its sign, as torch's does
    rounded = math.copysign(round(x / quantum) * quantum, x)
    if abs(rounded) > largest:
        return math.copysign(math.inf if has_inf else largest, x)
    return rounded


def max_log2_scale(grads, dtype):
    """Largest integer k >= 0 with max|g| * 2**k <= the largest finite value of `dtype`."""
    largest = format_limits(dtype)[0]
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


# --- casts that declared mistakes use ------------------------------------------------------

def flush_below_normal(x, dtype):
    """A cast that forgets subnormals: everything below the smallest normal becomes 0."""
    return 0.0 if abs(to_float32(x)) < format_limits(dtype)[1] else cast(x, dtype)


def truncate_below_subnormal(x, dtype):
    """A cast that zeroes everything below the smallest subnormal instead of rounding half-way up."""
    return 0.0 if abs(to_float32(x)) < format_limits(dtype)[2] else cast(x, dtype)
