"""c2-number-line: what to picture. The fp16 and bf16 number lines, a gradient histogram
falling off fp16's floor, and a loss scale sliding it back.

The picture is a histogram of log2|g| laid over the bands of each format (rounds to 0,
subnormal, normal, overflows). The checks are what the picture shows: the share of the
histogram lost below fp16's floor (and below bf16's), the share that survives only as
subnormals, what a scale of 2**k changes (lost and overflowing shares, and the window of
binary exponents that survives), and the smallest power-of-two scale that saves a given share.

The cast is torch's and is shared by the precision items (`graders/problems/common/formats.py`: `cast`, `to_float32`, `limits`): a Python
float is rounded to float32, scaled by 2**k (exact), then rounded to nearest, ties to even,
into the 16-bit format with subnormals kept. A value "survives" when its cast is nonzero and
finite. Sources: IEEE 754-2008 binary16 (5 exponent bits, 10 fraction bits: largest finite
65504, smallest normal 2^-14, smallest subnormal 2^-24); bfloat16 (8 exponent bits, 7 fraction
bits: fp32's exponent range, smallest subnormal 2^-133); Micikevicius et al., "Mixed Precision
Training", ICLR 2018, sections 3.1 and 3.2 (values below 2^-24 are lost in fp16; Fig. 3's
activation-gradient histogram; a loss scale shifts the histogram right by log2 of the scale).
"""
from __future__ import annotations

import math

from graders.numeric import Count, Number, Numbers
from graders.problem import Mistake, Problem
from graders.problems.common.formats import (cast, format_limits, limits, max_log2_scale, to_float32)
from graders.problems.common.formats import flush_below_normal as _flush_below_normal
from graders.problems.common.formats import truncate_below_subnormal as _truncate_below_subnormal

MAX_K = 127      # 2**k must itself be a float32 for torch.tensor(grads) * 2.0**k to mean this
FP32_MAX = (2 - 2.0 ** -23) * 2.0 ** 127


def _inputs(params):
    grads = params["grads"]
    if not grads or any(isinstance(g, bool) or not isinstance(g, (int, float))
                        or not math.isfinite(g) or g == 0 for g in grads):
        raise ValueError("grads must be a non-empty list of finite nonzero numbers")
    k = params["log2_scale"]
    if isinstance(k, bool) or int(k) != k or k < 0:
        raise ValueError("log2_scale must be a non-negative integer")
    share = float(params["target_share"])
    if not 0 < share <= 1:
        raise ValueError("target_share must lie in (0, 1]")
    return [float(g) for g in grads], int(k), share


def scaled_casts(grads, dtype, k=0, caster=cast):
    """The values torch holds after torch.tensor(grads) * 2**k is cast to `dtype`.

    The product is taken in float32, where scaling by a power of two is exact unless it
    leaves float32's range (then it is inf, which every cast keeps).
    """
    out = []
    for g in grads:
        y = math.ldexp(to_float32(g), k)
        out.append(math.copysign(math.inf, y) if abs(y) > FP32_MAX else caster(y, dtype))
    return out


def share(values, test):
    return sum(1 for v in values if test(v)) / len(values)


def surviving_share(grads, dtype, k, caster=cast):
    return share(scaled_casts(grads, dtype, k, caster), lambda v: v != 0 and math.isfinite(v))


def min_log2_scale(grads, target, dtype="float16", caster=cast):
    """Smallest k >= 0 at which at least `target` of the values survive (nonzero and finite)."""
    for k in range(MAX_K + 1):
        # a share is a count over len(grads); compare counts to avoid rounding at the boundary
        if surviving_share(grads, dtype, k, caster) * len(grads) >= target * len(grads) - 1e-9:
            return k
    raise ValueError("no power-of-two scale saves that share of these gradients")


def exponent_window(k, dtype="float16"):
    """[lo, hi]: the integers E for which 2**E, scaled by 2**k and cast, is nonzero and finite."""
    largest, _, smallest = format_limits(dtype)
    return [round(math.log2(smallest)) - k, math.floor(math.log2(largest)) - k]


def _answers(params, caster=cast):
    grads, k, target = _inputs(params)
    tiny = limits(5, 10)[1]
    plain = scaled_casts(grads, "float16", 0, caster)
    scaled = scaled_casts(grads, "float16", k, caster)
    return {
        "lost_fp16": share(plain, lambda v: v == 0),
        "lost_bf16": share(scaled_casts(grads, "bfloat16", 0, caster), lambda v: v == 0),
        "subnormal_fp16": share(plain, lambda v: 0 < abs(v) < tiny),
        "lost_fp16_scaled": share(scaled, lambda v: v == 0),
        "overflow_fp16_scaled": share(scaled, lambda v: math.isinf(v)),
        "min_log2_scale": min_log2_scale(grads, target, "float16", caster),
        "exponent_window": exponent_window(k),
    }


# --- what the declared mistakes compute --------------------------------------------------

def _answers_or_none(params, caster):
    """The answers with a mistaken cast; without `min_log2_scale` if that cast saves too little."""
    grads, k, target = _inputs(params)
    try:
        return _answers(params, caster)
    except ValueError:
        answers = _answers(dict(params, target_share=min(target, 1e-9)), caster)
        del answers["min_log2_scale"]
        return answers


def _with_caster(caster, keys):
    def wrong(q):
        answers = _answers_or_none(q, caster)
        return {key: answers[key] for key in keys if key in answers}
    return wrong


_LOST_KEYS = ("lost_fp16", "subnormal_fp16", "lost_fp16_scaled", "min_log2_scale")


def _fp16_for_bf16(q):
    return {"lost_bf16": _answers(q)["lost_fp16"]}


def _window_moves_up(q):
    _, k, _ = _inputs(q)
    lo, hi = exponent_window(0)
    return {"exponent_window": [lo + k, hi + k]}


def _window_from_normal_floor(q):
    _, k, _ = _inputs(q)
    return {"exponent_window": [round(math.log2(limits(5, 10)[1])) - k, exponent_window(k)[1]]}


def _largest_not_smallest(q):
    grads, _, _ = _inputs(q)
    return {"min_log2_scale": max_log2_scale(grads, "float16")}


def _percent(q):
    return {key: 100 * value for key, value in _answers(q).items()
            if key in ("lost_fp16", "subnormal_fp16", "lost_fp16_scaled", "overflow_fp16_scaled")}


class NumberLineConcept(Problem):
    id = "c2-number-line"
    title = "The fp16 and bf16 number line: falling off the floor, and the scale that lifts"
    strand = "concept"
    kind = "concept"
    assignment = "concept"
    # grads: forty gradient values from one backward pass, log2|g| roughly normal (values at
    # three significant figures); log2_scale: the loss scale 2**k whose picture is asked for;
    # target_share: the share of the values a scale must save (nonzero and finite in fp16).
    # A: activation gradients of a detector, deep below fp16's floor (Fig. 3's situation);
    # B: weight gradients of a recurrent speech model, scaled by the paper's factor 8;
    # C: a wide spread with a few large values, where 2**14 overflows the top of the histogram;
    # D: a narrow histogram straddling fp16's floor.
    variants = {
        "A": {"log2_scale": 8, "target_share": 0.9, "grads": [
            3.24e-07, -5.66e-07, 8.46e-11, 4.15e-09, 7.43e-09, -5.91e-09, -3.79e-09, 2.98e-09,
            1.13e-08, -1.47e-05, 2.67e-07, -7.42e-09, -7.93e-09, -1.3e-07, -8.75e-11, -1.74e-08,
            -7.88e-09, -1.62e-07, 3.76e-08, -8.61e-11, -3.57e-06, -2.7e-09, 1.41e-09, -1.73e-11,
            -4.49e-08, 4.04e-11, 5.31e-07, 4.08e-11, 4.65e-08, -6.5e-09, 2.85e-08, 1.79e-07,
            2.69e-10, 5.22e-08, -1.2e-10, -2.36e-09, 6.77e-07, 1.6e-08, 7.07e-10, 1.38e-08]},
        "B": {"log2_scale": 3, "target_share": 1.0, "grads": [
            -0.000623, -1.52e-07, 9.66e-06, -1.95e-08, 4.85e-08, -9.19e-08, 7.72e-08, 3.07e-06,
            -2.59e-05, -3.22e-07, -1.8e-06, -1.1e-06, 1.34e-08, 5.22e-05, -1.01e-06, -1.75e-06,
            4.01e-11, -4.99e-07, 4.63e-05, 4.43e-08, -1.42e-06, 7.24e-09, 4.71e-06, 6.46e-07,
            -3.49e-08, 2.16e-06, -5.09e-09, 9.28e-07, 1.15e-05, 1.55e-07, -5.64e-07, -4.05e-08,
            5.67e-07, -1.95e-07, 7.23e-06, 2.7e-07, 3.35e-08, 8.72e-07, 4.66e-07, 5.5e-06]},
        "C": {"log2_scale": 14, "target_share": 0.9, "grads": [
            -4.52e-05, 0.00552, -1.04e-05, 1.03e-05, 2.55e-05, -0.000634, 0.000352, -5.32e-07,
            1.2e-07, 5.75e-08, 1.49e-05, 8.05e-06, 2.19e-05, -8.21e-05, 5.79e-06, 6.99e-09,
            -8.33e-08, 0.00298, -0.000119, -8.33e-06, 0.00236, -1.17e-05, -5.04e-07, 2.53e-05,
            1.28e-08, 3.23e-07, 0.0833, -1.36e-09, 0.0299, 7.92e-09, 1.6e-05, 1.87e-06,
            2.2e-05, 0.000133, -0.0173, -0.00157, 4.39e-06, -0.0288, 7.9, -3.7]},
        "D": {"log2_scale": 12, "target_share": 0.975, "grads": [
            -6.49e-08, -1.57e-07, 4.09e-07, 1.4e-07, 6.86e-08, -1.38e-08, -9.44e-08, 1.42e-07,
            3.58e-07, -2.16e-09, 2.04e-08, 9.01e-07, 1.14e-07, 3.25e-08, -1.62e-08, -5.68e-08,
            2.71e-06, -1.13e-08, 5.82e-07, 1.37e-08, 6.97e-09, -5.32e-08, 1.52e-07, -2.69e-07,
            -9.75e-07, 1.38e-07, 9.15e-09, -8.39e-08, 1.8e-08, -1.24e-07, -7.1e-09, 8.98e-07,
            -1.31e-07, -3.46e-08, -7.84e-08, -3.41e-09, -1.64e-07, 4.72e-07, 3.62e-06, 2.56e-09]},
    }
    checks = {
        "lost_fp16": Number(rtol=1e-3, atol=1e-9, points=1),
        "lost_bf16": Number(rtol=1e-3, atol=1e-9, points=0.5),
        "subnormal_fp16": Number(rtol=1e-3, atol=1e-9, points=1),
        "lost_fp16_scaled": Number(rtol=1e-3, atol=1e-9, points=1),
        "overflow_fp16_scaled": Number(rtol=1e-3, atol=1e-9, points=1),
        "exponent_window": Numbers(exact=True, points=1),
        "min_log2_scale": Count(points=1.5),
    }
    cells = {
        "check_floor": ("lost_fp16", "lost_bf16", "subnormal_fp16"),
        "check_scaled": ("lost_fp16_scaled", "overflow_fp16_scaled", "exponent_window"),
        "check_min_scale": ("min_log2_scale",),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake(
            "flush-subnormals",
            "values below fp16's smallest normal number were treated as lost; the format keeps "
            "subnormals, so the floor lies ten binades lower, at 2^-24.",
            _with_caster(_flush_below_normal, _LOST_KEYS),
            instant="the subnormal numbers fp16 keeps.",
        ),
        Mistake(
            "truncate-not-round",
            "every value below the smallest subnormal was treated as lost; the cast rounds to "
            "nearest, so a value more than half-way up to 2^-24 is kept.",
            _with_caster(_truncate_below_subnormal, _LOST_KEYS),
            instant="how the cast rounds a value near fp16's smallest subnormal.",
        ),
        Mistake(
            "fp16-floor-for-bf16",
            "fp16's floor was used for bfloat16; bf16 has eight exponent bits, fp32's range, and "
            "its floor lies more than a hundred binades lower.",
            _fp16_for_bf16,
            instant="the exponent width of bfloat16.",
        ),
        Mistake(
            "window-moves-up",
            "the window was moved the wrong way; multiplying the gradients by 2^k lifts them, so "
            "the window of *unscaled* exponents that survive moves down by k.",
            _window_moves_up,
            instant="how a loss scale relates scaled and unscaled exponents.",
        ),
        Mistake(
            "window-from-normal-floor",
            "the window starts at the smallest normal exponent; subnormals survive too, so the "
            "bottom of the window is set by the smallest subnormal.",
            _window_from_normal_floor,
            instant="which number sets the bottom edge of fp16's window.",
        ),
        Mistake(
            "largest-not-smallest",
            "this is the largest scale that keeps the biggest value finite; the question asks "
            "for the smallest scale that already saves the required share.",
            _largest_not_smallest,
            instant="the condition the question puts on the scale it asks for.",
        ),
        Mistake(
            "percent-not-fraction",
            "the share looks like a percentage; give a fraction between 0 and 1.",
            _percent,
            instant="the form in which the question asks for a share.",
        ),
    )


PROBLEM = NumberLineConcept()
