"""b07-weight-decay: decoupled weight decay, as torch.optim.AdamW applies it.

The term. Weight decay shrinks every decayed parameter toward zero on every step. "Decoupled"
(Loshchilov and Hutter, "Decoupled Weight Decay Regularization", ICLR 2019, Algorithm 2)
means the shrink is applied to the weights directly instead of being added to the gradient
and passed through Adam's normalisation. torch.optim.AdamW does, on each step t,

    theta <- theta * (1 - lr_t * weight_decay)         then the Adam update,

where lr_t is the learning rate in force at that step (after any scheduler). So torch's decay
follows the schedule: in the paper the decay is multiplied by the schedule multiplier eta_t
but not by the base rate alpha; in torch it is multiplied by the whole lr, so torch's
weight_decay is the paper's lambda divided by alpha.

The computed check. An "idle" parameter is one whose gradient is exactly zero and whose Adam
moments are still zero (an embedding row of a token that has not yet appeared in any batch).
Its Adam update is 0 / (0 + eps) = 0, so only the decay acts, and after steps t = start ..
start + steps - 1 it has been multiplied by the product of (1 - lr_t * weight_decay). The
schedule is the chapter's linear warmup (e02): lr_t = peak * t / W for t < W, then the peak.

Variants (published AdamW settings and warmups):
- A: Llama 2 (Touvron et al. 2023, section 2.2 and Table 1): 7B peak lr 3.0e-4, weight decay
  0.1, warmup 2000 steps.
- B: karpathy/build-nanogpt train_gpt2.py (GPT-2 124M reproduction): max_lr 6e-4,
  warmup_steps 715, weight_decay 0.1.
- C: OPT-175B (Zhang et al. 2022, section 2.2 and Table 1): lr 1.2e-4, weight decay 0.1,
  warmup over the first 2000 steps.
- D: BERT-base (Devlin et al. 2019, appendix A.2): lr 1e-4, weight decay 0.01, warmup
  10,000 steps (1,000,000 steps in all).
The idle stretch (start, steps) is the problem's own: a rare token unseen for that long.
"""
from __future__ import annotations

import math

from graders.numeric import Count, Number
from graders.problem import Mistake, Problem


def _read(q):
    peak, wd = float(q["lr"]), float(q["weight_decay"])
    if not (math.isfinite(peak) and math.isfinite(wd) and peak > 0 and wd > 0):
        raise ValueError("lr and weight_decay must be positive numbers")
    if not peak * wd < 1:
        raise ValueError("lr * weight_decay must be below 1 (otherwise one step flips the sign)")
    ints = []
    for name in ("warmup", "start", "steps"):
        value = q[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) \
                or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, not {value!r}")
        ints.append(int(value))
    return peak, wd, *ints


def lr_at(t: int, peak: float, warmup: int) -> float:
    """The chapter's linear warmup: peak * t / W for t < W, then the peak."""
    return peak * t / warmup if t < warmup else peak


def scheduled_lrs(q):
    peak, _, warmup, start, steps = _read(q)
    return [lr_at(t, peak, warmup) for t in range(start, start + steps)]


def decay_factor(q) -> float:
    """Product of (1 - lr_t * wd) over the idle steps, summed in log space for accuracy."""
    _, wd, *_ = _read(q)
    return math.exp(math.fsum(math.log1p(-lr * wd) for lr in scheduled_lrs(q)))


def steps_to_halve(per_step: float) -> int:
    """Smallest n with per_step**n <= 1/2."""
    n = max(1, math.ceil(math.log(0.5) / math.log(per_step)))
    while n > 1 and per_step ** (n - 1) <= 0.5:
        n -= 1
    while per_step ** n > 0.5:
        n += 1
    return n


def _answers(q):
    peak, wd, *_ = _read(q)
    return {
        "per_step_factor": 1.0 - peak * wd,
        "decay_factor": decay_factor(q),
        "steps_to_halve": steps_to_halve(1.0 - peak * wd),
    }


# --- what the declared mistakes compute ------------------------------------------------

def _without_lr(q):
    _, wd, _, _, steps = _read(q)
    return {"per_step_factor": 1.0 - wd,
            "decay_factor": (1.0 - wd) ** steps,
            "steps_to_halve": steps_to_halve(1.0 - wd)}


def _peak_throughout(q):
    peak, wd, warmup, start, steps = _read(q)
    if start >= warmup:   # the idle stretch lies past the warmup: the peak is in force throughout
        return {}
    return {"decay_factor": (1.0 - peak * wd) ** steps}


def _not_compounded(q):
    peak, wd, *_ = _read(q)
    return {"decay_factor": 1.0 - wd * math.fsum(scheduled_lrs(q)),
            "steps_to_halve": math.ceil(0.5 / (peak * wd))}


def _e_folding(q):
    peak, wd, *_ = _read(q)
    return {"steps_to_halve": math.ceil(1.0 / (peak * wd))}


class WeightDecayProblem(Problem):
    id = "b07-weight-decay"
    title = "Weight decay"
    strand = "basics"
    kind = "basics"
    assignment = "basics"
    variants = {
        "A": {"lr": 3.0e-4, "weight_decay": 0.1, "warmup": 2000, "start": 0, "steps": 30_000},
        "B": {"lr": 6.0e-4, "weight_decay": 0.1, "warmup": 715, "start": 0, "steps": 5000},
        "C": {"lr": 1.2e-4, "weight_decay": 0.1, "warmup": 2000, "start": 500, "steps": 1000},
        "D": {"lr": 1.0e-4, "weight_decay": 0.01, "warmup": 10_000, "start": 20_000, "steps": 200_000},
    }
    checks = {
        "per_step_factor": Number(rtol=1e-9),
        "decay_factor": Number(rtol=1e-4, points=2),
        "steps_to_halve": Count(),
    }
    cells = {"check_decay": ("per_step_factor", "decay_factor", "steps_to_halve")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake(
            "decay-without-learning-rate",
            "the shrink was taken as (1 - weight_decay) per step; AdamW multiplies by "
            "(1 - lr * weight_decay), so the learning rate scales the pull.",
            _without_lr,
            instant="the learning rate's part in AdamW's decay.",
        ),
        Mistake(
            "schedule-ignored",
            "the peak learning rate was used on every idle step; AdamW decays with the learning "
            "rate in force at each step, which is smaller during warmup.",
            _peak_throughout,
            instant="the learning rate in force at each idle step.",
        ),
        Mistake(
            "added-not-multiplied",
            "the per-step pulls were added (1 - sum of lr_t * weight_decay); decay multiplies the "
            "weight by a factor each step, so the factors compound.",
            _not_compounded,
            instant="how the shrinks of successive steps combine.",
        ),
        Mistake(
            "e-folding-not-halving",
            "this is the e-folding time 1/(lr * weight_decay); the question asks when the "
            "weight has lost half, a factor of 2, not a factor of e.",
            _e_folding,
            instant="the level of decay the question names.",
        ),
    )


PROBLEM = WeightDecayProblem()
