"""The gradient noise scale from two batch sizes (McCandlish et al. 2018, Appendix A and §2)."""
import math

from graders.symbolic import symbols_for


SYMBOLS = ("b_small", "b_big", "g2_small", "g2_big")


def measurements(q):
    values = []
    for key in ("b_small", "b_big", "g2_small", "g2_big", "batch"):
        value = q[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{key} must be a number, not {type(value).__name__}")
        value = float(value)
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"{key} must be a positive finite number, not {value!r}")
        values.append(value)
    if values[1] <= values[0]:
        raise ValueError("b_big must be larger than b_small")
    return values


def unbiased_g2(b_small, b_big, g2_small, g2_big):
    return (b_big * g2_big - b_small * g2_small) / (b_big - b_small)


def unbiased_trace(b_small, b_big, g2_small, g2_big):
    return (g2_small - g2_big) / (1 / b_small - 1 / b_big)


def noise_scale_answers(q, g2=None, trace=None, b_simple=None, swap_ratios=False):
    """Reference answers; the optional functions replace one estimator (declared mistakes)."""
    b_small, b_big, g2_small, g2_big, batch = measurements(q)
    g2 = g2 or unbiased_g2
    trace = trace or unbiased_trace
    b_simple = b_simple or (lambda t, g: t / g)
    s = symbols_for(SYMBOLS)
    args = (s["b_small"], s["b_big"], s["g2_small"], s["g2_big"])
    g2_value = g2(b_small, b_big, g2_small, g2_big)
    trace_value = trace(b_small, b_big, g2_small, g2_big)
    if g2_value <= 0 or trace_value <= 0:
        raise ValueError("the unbiased estimates are not both positive: average more measurements first")
    noise = b_simple(trace_value, g2_value)
    steps, examples = 1 + noise / batch, 1 + batch / noise
    if swap_ratios:
        steps, examples = examples, steps
    return {
        "b_simple_expr": b_simple(trace(*args), g2(*args)),
        "g2": g2_value,
        "trace_sigma": trace_value,
        "b_simple": noise,
        "steps_ratio": steps,
        "examples_ratio": examples,
    }
