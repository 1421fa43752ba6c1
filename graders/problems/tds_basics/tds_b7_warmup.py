"""tds-b7-warmup: linear warmup, the rate it gives at a step, and the untuned length for Adam.

The term. A linear warmup raises the learning rate in a straight line from 0 to its peak over the
first W steps and then hands over to the rest of the schedule:

    eta_t = eta_peak * min(1, t / W)      (steps t = 0, 1, 2, ...; 0 at t = 0)

(the decay that follows is e02-schedules' business; here the rate is held at the peak after W).
Adam is why large runs warm up at all: in the first steps its second-moment estimate v is an
average of a handful of squared gradients, so the per-coordinate step eta * m / sqrt(v) is badly
scaled (Liu et al. 2020, "On the Variance of the Adaptive Learning Rate and Beyond", ICLR, the
RAdam paper). Ma and Yarats (2021, "On the Adequacy of Untuned Warmup for Adaptive
Optimization", AAAI) trace the need to the size of the update term instead and recommend, as a
default that needs no tuning, linear warmup over 2 / (1 - beta2) steps.

Answers, for the variant's `peak_lr`, `warmup_steps`, `beta2` and steps `at`: `rates` (eta at each
step), `untuned_warmup` (Ma and Yarats's 2 / (1 - beta2), a float number of steps) and
`warmup_multiple` (the run's warmup_steps divided by that untuned length).
"""
from __future__ import annotations

import math

from graders.numeric import Number, Numbers
from graders.problem import Mistake, Problem


def _read(q):
    lr, w, b1, b2 = float(q["peak_lr"]), int(q["warmup_steps"]), float(q["beta1"]), float(q["beta2"])
    at = [int(t) for t in q["at"]]
    if not (lr > 0 and w > 0 and 0 < b1 < 1 and 0 < b2 < 1) or not at or any(t < 0 for t in at):
        raise ValueError("peak_lr, warmup_steps must be positive, betas in (0, 1), steps >= 0")
    return lr, w, b1, b2, at


def _answers(q, *, offset=0, plateau=True, beta="beta2", numerator=2.0):
    lr, w, b1, b2, at = _read(q)
    rates = [lr * (min(1.0, (t + offset) / w) if plateau else (t + offset) / w) for t in at]
    untuned = numerator / (1 - (b2 if beta == "beta2" else b1))
    return {"rates": rates, "untuned_warmup": untuned, "warmup_multiple": w / untuned}


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    out = {}
    if any(not math.isclose(a, b, rel_tol=1e-9) for a, b in zip(wrong["rates"], right["rates"])):
        out["rates"] = wrong["rates"]
    for key in ("untuned_warmup", "warmup_multiple"):
        if not math.isclose(wrong[key], right[key], rel_tol=1e-9):
            out[key] = wrong[key]
    return out


class WarmupBasics(Problem):
    id = "tds-b7-warmup"
    title = "Warmup: the rate during a linear warmup, and the untuned length for Adam"
    strand = "basics"
    kind = "basics"
    assignment = "tds-basics"
    # Published warmups: A Llama 2 7B (Touvron et al. 2023, section 2.2 and Table 1: peak 3.0e-4,
    # 2000 warmup steps, AdamW beta2 = 0.95); B BERT pre-training (Devlin et al. 2019, appendix A.2:
    # 1e-4, warmup over the first 10,000 steps, beta2 = 0.999); C build-nanogpt's GPT-2 124M
    # (Karpathy: 6e-4, 715 steps, beta2 = 0.95); D OPT-175B (Zhang et al. 2022, section 2.2:
    # 1.2e-4 reached after 2000 steps, beta2 = 0.95). beta1 = 0.9 in all four.
    variants = {
        "A": {"peak_lr": 3e-4, "warmup_steps": 2000, "beta1": 0.9, "beta2": 0.95, "at": [1, 40, 500, 2000, 10000]},
        "B": {"peak_lr": 1e-4, "warmup_steps": 10000, "beta1": 0.9, "beta2": 0.999, "at": [1, 100, 2000, 7500, 20000]},
        "C": {"peak_lr": 6e-4, "warmup_steps": 715, "beta1": 0.9, "beta2": 0.95, "at": [1, 40, 100, 715, 5000]},
        "D": {"peak_lr": 1.2e-4, "warmup_steps": 2000, "beta1": 0.9, "beta2": 0.95, "at": [1, 10, 40, 1500, 3000]},
    }
    checks = {"rates": Numbers(rtol=1e-6), "untuned_warmup": Number(rtol=1e-6), "warmup_multiple": Number(rtol=1e-6)}
    cells = {"check_warmup": ("rates", "untuned_warmup", "warmup_multiple")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("time-constant-not-warmup",
                "the untuned length was taken as 1 / (1 - beta2), the averaging time of Adam's second moment "
                "(the time constant of Ma and Yarats's exponential warmup); their linear warmup lasts "
                "2 / (1 - beta2) steps.",
                lambda q: _changed(q, numerator=1.0),
                instant="the difference between the exponential and the linear untuned warmup."),
        Mistake("no-plateau",
                "the ramp was continued past W; the rate stops at eta_peak once t >= W (min(1, t / W)).",
                lambda q: _changed(q, plateau=False),
                instant="what the schedule does once the warmup has ended."),
        Mistake("ramp-from-step-one",
                "the rate was computed as eta_peak * (t + 1) / W, nanoGPT's code convention; this item's "
                "warmup is eta_peak * t / W, which is 0 at t = 0.",
                lambda q: _changed(q, offset=1),
                instant="the convention for the step counter at the start of the ramp."),
    )


PROBLEM = WarmupBasics()
