"""t1-range-before-speed: Proposition 1, and when loss scaling itself fails.

Proposition 1: mixed precision is a question of range before it is a question of speed.
fp16 holds about 40 binades (2^-24 up to 65504); a loss scale 2**k slides the gradients
inside that window but cannot widen it, so loss scaling fails in two ways:
- from below and above at once: when a step's gradients span more binades than the window,
  the smallest k that rescues the smallest gradient exceeds the largest k that keeps the
  largest one finite, and no static scale is safe (`safe_scale_count` is 0);
- in time: a dynamic scaler finds its ceiling by overflowing. Every overflow skips an
  optimizer step, and so does every step of a spike until the scale has backed off.
bf16 has fp32's exponent range (2^-133 up to about 3.4e38), so for range it needs no scale;
its price is precision (7 fraction bits: relative rounding error at most 2^-8 for normals).

Reference computations:
- casts: torch's rounding, from the precision items' shared `formats` (`cast`, `to_float32`, `max_log2_scale`,
  `underflow_fraction`): float32 first, then round-to-nearest-even into the 16-bit format.
- the dynamic scaler: torch.amp.GradScaler's update rule, run with torch's own op
  `torch._amp_update_scale_` on a float32 scale (as e05-loss-scaling does): on an overflow
  the step is skipped, the scale is multiplied by backoff_factor and the growth tracker is
  reset; after growth_interval consecutive clean steps the scale is multiplied by
  growth_factor. A step overflows when its largest gradient times the scale in force, cast to
  fp16, is inf (products of 65520 and more; 65504 is the largest finite value).
Initial scales in the variants are printed defaults: 2**16 (torch GradScaler), 2**32
(Megatron-LM's --initial-loss-scale), 2**7 (fairseq's --fp16-init-scale). Growth intervals
are shortened from GradScaler's 2000 so that a few dozen steps show whole cycles.
Micikevicius et al., "Mixed Precision Training" (ICLR 2018), section 3.2, describe the
scheme: skip the update and lower the scale on overflow, raise it after a run of clean steps.
"""
from __future__ import annotations

import math

import torch

from graders.numeric import Count, Number, Numbers
from graders.problem import Mistake, Problem
from graders.problems.common.formats import (cast, limits, max_log2_scale, to_float32, underflow_fraction)
from graders.problems.common.formats import flush_below_normal as _flush_below_normal
from graders.problems.common.formats import truncate_below_subnormal as _truncate_below_subnormal

FP16_MAX = limits(5, 10)[0]
MAX_K = 127


def _inputs(params):
    grads = params["grads"]
    if not grads or any(isinstance(g, bool) or not isinstance(g, (int, float))
                        or not math.isfinite(g) or g == 0 for g in grads):
        raise ValueError("grads must be a non-empty list of finite nonzero numbers")
    if max(abs(g) for g in grads) > FP16_MAX:
        raise ValueError("max|g| must not exceed fp16's largest finite value")
    grad_max = [float(m) for m in params["grad_max"]]
    if not grad_max or any(not math.isfinite(m) or m <= 0 for m in grad_max):
        raise ValueError("grad_max must be a non-empty list of positive finite numbers")
    init, growth, backoff = (float(params[k]) for k in ("init_scale", "growth_factor", "backoff_factor"))
    interval = params["growth_interval"]
    if not init > 0 or not growth >= 1 or not 0 < backoff <= 1:
        raise ValueError("need init_scale > 0, growth_factor >= 1, 0 < backoff_factor <= 1")
    if isinstance(interval, bool) or int(interval) != interval or interval < 1:
        raise ValueError("growth_interval must be a positive whole number")
    return [float(g) for g in grads], grad_max, init, growth, backoff, int(interval)


# --- range: the static window -------------------------------------------------------------

def lost_count(grads, dtype, k=0, caster=cast):
    return round(underflow_fraction(grads, dtype, k, caster) * len(grads))


def min_rescue_log2_scale(grads, caster=cast):
    """Smallest k >= 0 at which no value becomes 0 in fp16 (k may be past the safe ceiling)."""
    for k in range(MAX_K + 1):
        if lost_count(grads, "float16", k, caster) == 0:
            return k
    raise ValueError("no scale up to 2**127 rescues every value")


def max_rel_error(grads, dtype, caster=cast):
    """Largest |cast(g) - g| / |g| over the values (a lost value has error 1)."""
    return max(abs(caster(g, dtype) - g) / abs(g) for g in grads)


# --- time: the dynamic scaler ----------------------------------------------------------------

def overflows(grad_max, scale, ceiling=None):
    """Whether the step's largest gradient times the scale becomes inf in fp16."""
    product = to_float32(to_float32(grad_max) * scale)
    if ceiling is not None:                       # a declared mistake: a different ceiling test
        return product > ceiling
    return math.isinf(cast(product, "float16"))


def torch_scaler(grad_max, init, growth, backoff, interval):
    """(skipped step indices, final scale) with torch's own scale-update op."""
    scale = torch.full((), init, dtype=torch.float32)
    tracker = torch.zeros((), dtype=torch.int32)
    skipped = []
    for step, peak in enumerate(grad_max):
        found_inf = overflows(peak, float(scale))
        if found_inf:
            skipped.append(step)
        torch._amp_update_scale_(scale, tracker, torch.full((), float(found_inf)),
                                 growth, backoff, interval)
    return skipped, float(scale)


def python_scaler(grad_max, init, growth, backoff, interval, kind):
    """The same machine with one declared mistake `kind` built in (for feedback)."""
    scale, tracker, skipped = init, 0, []
    for step, peak in enumerate(grad_max):
        if kind == "ignore-scale":
            found_inf = math.isinf(cast(peak, "float16"))
        elif kind == "ceiling-2-16":
            found_inf = overflows(peak, scale, ceiling=2.0 ** 16)
        elif kind == "ceiling-65504":
            found_inf = overflows(peak, scale, ceiling=FP16_MAX)
        else:
            found_inf = overflows(peak, scale)
        if found_inf:
            skipped.append(step)
            scale *= backoff
            if kind != "tracker-not-reset":
                tracker = 0
        else:
            tracker += 1
            if tracker == interval + (1 if kind == "late-growth" else 0):
                scale, tracker = scale * growth, 0
    return skipped, scale


def _answers(params, caster=cast, scaler=None):
    grads, grad_max, init, growth, backoff, interval = _inputs(params)
    top = max_log2_scale(grads, "float16")
    rescue = min_rescue_log2_scale(grads, caster)
    skipped, final = (scaler or torch_scaler)(grad_max, init, growth, backoff, interval)
    return {
        "fp16_lost_count": lost_count(grads, "float16", 0, caster),
        "bf16_lost_count": lost_count(grads, "bfloat16", 0, caster),
        "bf16_max_rel_error": max_rel_error(grads, "bfloat16", caster),
        "max_log2_scale": top,
        "min_rescue_log2_scale": rescue,
        "safe_scale_count": max(0, top - rescue + 1),
        "skipped_steps": skipped,
        "final_scale": final,
    }


# --- what the declared mistakes compute --------------------------------------------------------

def _with_caster(caster, keys):
    def wrong(q):
        answers = _answers(q, caster=caster)
        return {key: answers[key] for key in keys}
    return wrong


def _with_scaler(kind):
    def wrong(q):
        grads, grad_max, init, growth, backoff, interval = _inputs(q)
        skipped, final = python_scaler(grad_max, init, growth, backoff, interval, kind)
        return {"skipped_steps": skipped, "final_scale": final}
    return wrong


def _fp16_for_bf16(q):
    grads = _inputs(q)[0]
    return {"bf16_lost_count": lost_count(grads, "float16"),
            "bf16_max_rel_error": max_rel_error(grads, "float16")}


def _first_overflowing_k(q):
    answers = _answers(q)
    top = answers["max_log2_scale"] + 1
    return {"max_log2_scale": top,
            "safe_scale_count": max(0, top - answers["min_rescue_log2_scale"] + 1)}


def _window(q):
    """(k_max, k_rescue) of the variant's gradients: where its window of safe scales lies."""
    grads = _inputs(q)[0]
    return max_log2_scale(grads, "float16"), min_rescue_log2_scale(grads)


def _fencepost(q):
    top, rescue = _window(q)
    if top < rescue:      # no safe scale at all: an empty window has no ends to miscount
        return {}
    return {"safe_scale_count": top - rescue}


def _negative_count(q):
    top, rescue = _window(q)
    if top >= rescue:     # the window is not empty: the difference cannot come out negative
        return {}
    return {"safe_scale_count": top - rescue + 1}


def _truncate_not_round(q):
    # every gradient at or above fp16's smallest subnormal 2^-24 survives unscaled under either
    # rule, so the rounding band just below it is empty and the slip cannot show
    if min(abs(g) for g in _inputs(q)[0]) >= 2.0 ** -24:
        return {}
    return _with_caster(_truncate_below_subnormal, ("fp16_lost_count", "min_rescue_log2_scale",
                                                    "safe_scale_count"))(q)


class RangeBeforeSpeed(Problem):
    id = "t1-range-before-speed"
    title = "Range before speed: when a loss scale works, and when it fails"
    strand = "theory"
    kind = "theory"
    assignment = "theory"
    # grads: one step's gradients (sixteen values, three significant figures);
    # grad_max: the largest |gradient| on each of two to three dozen steps, for the dynamic scaler.
    # Every variant's scaler trace reaches each situation a declared scaler mistake is about:
    # a product just above 65504 that rounds down and is kept (a test `> 65504` skips it), a
    # product in [65520, 65536] that is already inf (a test `> 2**16` keeps it), an overflow
    # after some clean steps (the growth tracker must restart), and a growth whose timing
    # shows in the skips or the final scale.
    # A: a window that fits, and a spike at step 12 (GradScaler's init); at step 3 the product
    #    1.9993 * 2**15 = 65513 is kept; at step 5 the scaler grows back into exactly
    #    1.0 * 2**16 = 65536, which is inf;
    # B: a histogram wider than fp16's window, and Megatron-LM's init 2**32: fifteen start-up
    #    skips, then 0.5 * 2**17 = 65536 at step 16 (inf), 0.4998 * 2**17 = 65510 at step 23
    #    (kept), and the scaler growing into the ceiling at step 29;
    # C: nothing below the floor, gradients shrinking as training settles, a product of
    #    exactly 4 * 2**14 = 65536 at step 2 (past 65504, so inf), and a two-step bump at
    #    steps 13-14 (0.9996 * 2**16 = 65510 kept, then 1.2 * 2**16 overflows);
    # D: one large gradient pinning the ceiling; a three-step loss spike (850 * 2**9 overflows,
    #    256 * 2**8 = 65536 is inf, 511.8 * 2**7 = 65510 is kept); fairseq's init 2**7.
    variants = {
        "A": {"grads": [4.43e-06, -0.0303, 1.25e-05, 2.95e-08, 0.000123, -5.42e-09, 5.08e-09,
                        -0.000403, 0.0896, 0.000192, -1.77e-08, -1.84e-05, -3.27e-08, -1.64e-09,
                        3.55e-06, 1.54e-05],
              "grad_max": [1.6, 1.4, 1.5, 1.9993, 1.5, 1.0, 1.6, 1.4, 1.5, 1.6, 1.4, 1.5, 62.0, 1.5,
                           1.4, 1.6, 1.5, 1.3, 1.5, 1.4, 1.6, 1.5, 1.4, 1.5],
              "init_scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5,
              "growth_interval": 4},
        "B": {"grads": [1.32e-08, -6.01e-06, -5.02e-15, 2.22e-11, 1.3e-05, 1.91e-07, -3.65e-13,
                        6.27e-13, 2.32e-14, 3.83e-14, -1.65e-10, -0.00164, 2.47e-14, -3.96e-08,
                        0.166, -1.28e-13],
              "grad_max": [0.31, 0.29, 0.33, 0.30, 0.28, 0.32, 0.30, 0.29, 0.31, 0.27, 0.30, 0.32,
                           0.29, 0.30, 0.28, 0.31, 0.5, 0.29, 0.31, 0.30, 0.28, 0.32, 0.30, 0.4998,
                           0.31, 0.30, 0.28, 0.31, 0.29, 0.30],
              "init_scale": 4294967296.0, "growth_factor": 2.0, "backoff_factor": 0.5,
              "growth_interval": 6},
        "C": {"grads": [4.22e-06, 0.00047, -1.87e-06, -1.22e-06, -0.000818, -8.64e-05, -6.26e-06,
                        0.00258, -2.8e-07, 1.21e-06, 0.00189, 0.00228, 0.00891, 4.11e-06,
                        5.27e-05, -0.000124],
              "grad_max": [4.0, 3.6, 4.0, 2.5, 2.0, 1.6, 1.2, 0.9, 0.7, 0.52, 0.40, 0.31, 0.24,
                           0.9996, 1.2, 0.12, 0.09, 0.07, 0.055, 0.045, 0.036, 0.03, 0.025, 0.02,
                           0.016],
              "init_scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5,
              "growth_interval": 3},
        "D": {"grads": [1.67e-09, 0.00136, -1.01e-07, 0.0105, 2.24e-07, 2.32e-06, -2.23e-09,
                        -0.684, 7.73e-08, -0.000815, 0.00011, 7.14e-09, -2.51e-09, -9.28e-10,
                        -4.62, -6.3],
              "grad_max": [2.1, 1.9, 2.0, 2.2, 1.8, 2.0, 1.9, 2.1, 2.0, 850.0, 256.0, 511.8, 2.0,
                           1.9, 2.1, 2.0, 1.8, 2.2, 1.9, 2.0, 2.1, 1.9],
              "init_scale": 128.0, "growth_factor": 2.0, "backoff_factor": 0.5,
              "growth_interval": 4},
    }
    checks = {
        "fp16_lost_count": Count(points=1),
        "bf16_lost_count": Count(points=0.5),
        "bf16_max_rel_error": Number(rtol=1e-3, points=1),
        "max_log2_scale": Count(points=1),
        "min_rescue_log2_scale": Count(points=1),
        "safe_scale_count": Count(points=1),
        "skipped_steps": Numbers(exact=True, points=1.5),
        "final_scale": Number(rtol=1e-9, points=1),
    }
    cells = {
        "check_casts": ("fp16_lost_count", "bf16_lost_count", "bf16_max_rel_error"),
        "check_window": ("max_log2_scale", "min_rescue_log2_scale", "safe_scale_count"),
        "check_scaler": ("skipped_steps", "final_scale"),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake(
            "first-k-that-overflows",
            "this scale is one power of two too large: the first k at which the largest "
            "gradient overflows, not the last one at which it still fits.",
            _first_overflowing_k,
            instant="the definition of the largest safe exponent: the biggest gradient stays finite there.",
        ),
        Mistake(
            "fencepost",
            "the count of safe scales is one short; both ends of the window of safe k are safe.",
            _fencepost,
            instant="how the exponents of a window of safe scales are counted.",
        ),
        Mistake(
            "negative-count",
            "the count is negative; when the smallest rescuing scale lies above the largest safe "
            "one, no scale is safe, and the count is 0. This is loss scaling failing.",
            _negative_count,
            instant="what values a count of safe scales can take.",
        ),
        Mistake(
            "flush-subnormals",
            "values below fp16's smallest normal number were treated as lost; subnormals "
            "survive, down to 2^-24 (and values just above 2^-25 round up to it).",
            _with_caster(_flush_below_normal, ("fp16_lost_count", "min_rescue_log2_scale",
                                               "safe_scale_count")),
            instant="the subnormal numbers fp16 keeps.",
        ),
        Mistake(
            "truncate-not-round",
            "every value below 2^-24 was treated as lost; the cast rounds to nearest, so values "
            "between 2^-25 and 2^-24 round up and survive.",
            _truncate_not_round,
            instant="how the cast rounds a value near fp16's smallest subnormal.",
        ),
        Mistake(
            "fp16-for-bf16",
            "fp16's range was used for bfloat16; bf16 has eight exponent bits, fp32's range, so "
            "its floor lies more than a hundred binades below fp16's.",
            _fp16_for_bf16,
            instant="the exponent width of bfloat16.",
        ),
        Mistake(
            "bound-not-measured",
            "this is the bound 2^-8 on bf16's relative rounding error; the question asks for "
            "the largest error actually made on your gradients.",
            lambda q: {"bf16_max_rel_error": 2.0 ** -8},
            instant="the error the cast actually makes on your own gradients.",
        ),
        Mistake(
            "overflow-ignores-scale",
            "overflow was tested on the gradients before scaling; the scaler overflows when the "
            "largest gradient *times the scale in force* is too large for fp16.",
            _with_scaler("ignore-scale"),
            instant="the loss scale in force at each step.",
        ),
        Mistake(
            "ceiling-2-16",
            "the ceiling was taken as 2^16; fp16's largest finite value is 65504, and products "
            "from 65520 up round to inf.",
            _with_scaler("ceiling-2-16"),
            instant="fp16's largest finite value, and where a product becomes inf.",
        ),
        Mistake(
            "ceiling-65504",
            "a product above 65504 was counted as an overflow; the cast rounds to nearest, so "
            "products below 65520 round down to 65504 and stay finite; only 65520 and up become inf.",
            _with_scaler("ceiling-65504"),
            instant="round-to-nearest at the top of fp16's range.",
        ),
        Mistake(
            "tracker-not-reset",
            "the count of clean steps carried on across an overflow; GradScaler grows the scale "
            "only after growth_interval consecutive clean steps.",
            _with_scaler("tracker-not-reset"),
            instant="what an overflow does to GradScaler's count of clean steps.",
        ),
        Mistake(
            "late-growth",
            "the scale grew one step late; it grows in the update that ends the "
            "growth_interval-th consecutive clean step, so the next step already uses it.",
            _with_scaler("late-growth"),
            instant="the update in which GradScaler's growth of the scale takes effect.",
        ),
    )


PROBLEM = RangeBeforeSpeed()
