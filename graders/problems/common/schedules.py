"""Learning-rate schedules (warmup then cosine; warmup, stable, decay) and the settings they take."""
import math

import numpy as np


def _number(q, name):
    value = q[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, not {value!r}")
    return float(value)


def _whole(q, name, minimum=0):
    value = q[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value != int(value) or value < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, not {value!r}")
    return int(value)


def read_schedule(q):
    peak, floor = _number(q, "peak_lr"), _number(q, "min_lr")
    W, T, decay = _whole(q, "warmup"), _whole(q, "total", 1), _whole(q, "decay", 1)
    if not 0 <= floor <= peak:
        raise ValueError(f"need 0 <= min_lr <= peak_lr, got {floor!r} and {peak!r}")
    if W >= T:
        raise ValueError(f"warmup ({W}) must be shorter than total ({T})")
    if decay > T - W:
        raise ValueError(f"decay ({decay}) must fit after the warmup: at most total - warmup = {T - W}")
    at = q["at"]
    if not isinstance(at, (list, tuple)):
        raise ValueError("at must be a list of steps")
    steps = [_whole({"at": s}, "at") for s in at]
    return peak, floor, W, T, decay, steps


def cosine_lr(t, peak, floor, W, T, *, from_zero=False, to_zero=False, warmup_offset=0):
    """Warmup then cosine (vectorised over t); the keyword flags produce declared mistakes."""
    t = np.asarray(t, dtype=float)
    low = 0.0 if to_zero else floor
    start = 0.0 if from_zero else W
    phase = np.clip((t - start) / (T - start), 0.0, 1.0)
    cos = low + 0.5 * (peak - low) * (1.0 + np.cos(np.pi * phase))
    warm = peak * (t + warmup_offset) / W if W > 0 else np.full_like(t, peak)
    out = np.where(t < W, warm, cos)
    return np.where(t > T, low, out)


def wsd_lr(t, peak, floor, W, T, decay, *, to_zero=False, no_warmup=False, warmup_offset=0):
    """Warmup, stable at the peak, then a linear decay to the floor at T (vectorised)."""
    t = np.asarray(t, dtype=float)
    low = 0.0 if to_zero else floor
    start = T - decay
    frac = np.clip((t - start) / decay, 0.0, 1.0)
    out = np.where(t <= start, peak, peak - (peak - low) * frac)
    if not no_warmup and W > 0:
        out = np.where(t < W, peak * (t + warmup_offset) / W, out)
    return np.where(t > T, low, out)
