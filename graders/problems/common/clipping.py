"""Gradient clipping as torch does it: the clip coefficient and the settings a clipping problem takes."""
import math


EPS = 1e-6   # torch's clip_grad_norm_ adds this to the total norm


def clip_coefficient(norm, max_norm):
    """torch's convention: min(max_norm / (norm + 1e-6), 1)."""
    return min(max_norm / (norm + EPS), 1.0)


def clip_settings(params):
    norms = [float(n) for n in params["grad_norms"]]
    if not norms or any(not math.isfinite(n) or n < 0 for n in norms):
        raise ValueError("grad_norms must be a non-empty list of finite non-negative numbers")
    max_norm, lr, wd = float(params["max_norm"]), float(params["lr"]), float(params["weight_decay"])
    if not max_norm > 0:
        raise ValueError("max_norm must be positive")
    if not 0 < lr * wd < 1:
        raise ValueError("lr * weight_decay must lie between 0 and 1")
    steps = params["steps"]
    if isinstance(steps, bool) or int(steps) != steps or steps < 0:
        raise ValueError("steps must be a non-negative integer")
    return norms, max_norm, lr, wd, int(steps)
