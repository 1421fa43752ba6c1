"""p4-fp16-underflow: fp16 training without loss scaling stalls; with a scale it trains.

A tiny tanh MLP (16 -> 32 -> 32 -> 1, 1,633 parameters) is trained with SGD on a
fixed regression task in the mixed-precision recipe of Micikevicius et al.,
"Mixed Precision Training" (ICLR 2018), section 3: an fp32 master copy of the
weights, a real fp16 copy for the forward and backward pass (torch runs fp16
Linear and tanh on the CPU), the loss multiplied by a scale S before the
backward pass, the fp16 gradients divided by S in fp32, the update applied to
the fp32 master weights, and the update skipped when a gradient is inf or NaN
(section 3.2). Nothing is simulated by casting fp32 gradients.

A tiny model's gradients are far too large to underflow, so the loss is
multiplied by a loss weight 2^-k and the learning rate by 2^k. In fp32 that
changes nothing, bit for bit (multiplying by a power of two is exact and
commutes with rounding, far from fp32's own floor); in fp16 it pushes the
gradients below 2^-24, the smallest subnormal, where large models' gradients
live. The student writes `mixed_precision_step`; a locked harness in the
notebook (mirrored here, and checked against the notebook in the tests) runs it.
The hidden test calls `run_fp16` on hidden seeds, loss weights and scales (one
of them so large that every step overflows and must be skipped) and compares
the loss curve, the fraction of zero gradient entries per step and the final
loss with this module's reference run.

Variants move the loss weight from 2^-20 to 2^-23 and the scale from 2^8 to
2^16 (2^16 = 65,536 is torch GradScaler's initial scale).
"""
from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from graders.feedback import FAIL, INVALID, PASS, Outcome
from graders.numeric import WRONG_OUTPUT_COUNT, Count, Number, as_real
from graders.problem import Mistake, Probe, Problem, seed_for
from graders.problems.common.torch_runs import quiet_torch

FUNCTION = "run_fp16"
N_EXAMPLES, N_IN, N_HIDDEN, BATCH = 256, 16, 32, 32
ZERO_TARGET = 0.01          # "fewer than 1% of the gradient entries are zero"
MAX_SCALE_EXP = 40
FP16_MIN_SUBNORMAL = 2.0 ** -24
FP16_MAX = 65504.0


# --- the harness (the notebook's locked cell runs the same code) -----------------------------
def make_data(seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(N_EXAMPLES, N_IN, generator=g)
    w = torch.randn(N_IN, 1, generator=g) / N_IN ** 0.5
    y = torch.tanh(x @ w) + 0.1 * torch.randn(N_EXAMPLES, 1, generator=g)
    return x, y


def make_model(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(N_IN, N_HIDDEN), nn.Tanh(), nn.Linear(N_HIDDEN, N_HIDDEN), nn.Tanh(),
                         nn.Linear(N_HIDDEN, 1))


def full_loss(model, data):
    x, y = data
    with torch.no_grad():
        return F.mse_loss(model(x), y).item()


def reference_step(master, half, x, y, loss_weight, loss_scale, lr, kind="right"):
    """One mixed-precision SGD step; `kind` builds in one declared mistake."""
    with torch.no_grad():
        for p16, p32 in zip(half.parameters(), master.parameters()):
            p16.copy_(p32)
    half.zero_grad(set_to_none=True)
    out = half(x.half())
    mse = F.mse_loss(out.float(), y)
    if kind == "scaled-gradients":
        (mse * loss_weight).backward()
        grads = [p.grad * loss_scale for p in half.parameters()]
    else:
        (mse * loss_weight * loss_scale).backward()
        grads = [p.grad for p in half.parameters()]
    zero = sum(int((g == 0).sum()) for g in grads) / sum(g.numel() for g in grads)
    if kind == "unscale-in-fp16":
        grads32 = [(g / loss_scale).float() for g in grads]
    else:
        grads32 = [g.float() / loss_scale for g in grads]
    if all(bool(torch.isfinite(g).all()) for g in grads32):
        with torch.no_grad():
            for p16, p32, g in zip(half.parameters(), master.parameters(), grads32):
                if kind == "fp16-master":      # the update done in fp16 arithmetic, then copied back
                    p16 -= (lr * g).half()
                    p32.copy_(p16.float())
                else:
                    p32 -= lr * g
    if kind == "scaled-loss-returned":
        return (mse * loss_weight * loss_scale).item(), zero
    return mse.item(), zero


def run_fp16(seed, steps, weight_exp, scale_exp, lr=0.1, step=reference_step):
    """[loss per step, zero fraction per step, final loss on all examples]."""
    data = make_data(seed)
    x, y = data
    master = make_model(seed)
    half = copy.deepcopy(master).half()
    loss_weight, loss_scale = 2.0 ** -weight_exp, 2.0 ** scale_exp
    order = torch.Generator().manual_seed(seed + 1)
    losses, zeros = [], []
    for _ in range(steps):
        idx = torch.randint(0, N_EXAMPLES, (BATCH,), generator=order)
        loss, zero = step(master, half, x[idx], y[idx], loss_weight, loss_scale, lr / loss_weight)
        losses.append(float(loss))
        zeros.append(float(zero))
    return [losses, zeros, full_loss(master, data)]


def run_fp32(seed, steps, lr=0.1):
    """The same run in plain fp32, without loss weight or scale: its final loss."""
    data = make_data(seed)
    x, y = data
    model = make_model(seed)
    order = torch.Generator().manual_seed(seed + 1)
    for _ in range(steps):
        idx = torch.randint(0, N_EXAMPLES, (BATCH,), generator=order)
        loss = F.mse_loss(model(x[idx]), y[idx])
        model.zero_grad(set_to_none=True)
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
    return full_loss(model, data)
# --- end of the harness ------------------------------------------------------------------------


def _check_params(q):
    for key in ("seed", "steps", "weight_exp", "scale_exp"):
        value = q[key]
        if isinstance(value, bool) or int(value) != value:
            raise ValueError(f"{key} must be a whole number")
    if q["steps"] < 1:
        raise ValueError("steps must be at least 1")
    if not 0 <= q["weight_exp"] <= 60 or not 0 <= q["scale_exp"] <= 60:
        raise ValueError("weight_exp and scale_exp must lie in [0, 60]")
    if not float(q["lr"]) > 0:
        raise ValueError("lr must be positive")


def min_scale_exp(seed, weight_exp, step=reference_step):
    """The smallest e >= 0 for which fewer than 1% of the step-0 gradient entries are zero (-1: none)."""
    for e in range(MAX_SCALE_EXP + 1):
        if run_fp16(seed, 1, weight_exp, e, step=step)[1][0] < ZERO_TARGET:
            return e
    return -1


def probe_calls(params: dict) -> list:
    """Hidden calls [seed, steps, weight_exp, scale_exp, lr]."""
    rng = np.random.default_rng(seed_for(params, "p4-fp16-underflow"))
    seeds = [int(s) for s in rng.integers(100, 10_000, size=4)]
    k = int(rng.integers(19, 24))
    return [
        [seeds[0], 20, k, 0, 0.1],                                   # unscaled: gradients underflow
        [seeds[1], 20, k + 1, int(rng.integers(9, 15)), 0.1],        # scaled back into range
        [seeds[2], 6, 2, 30, 0.1],                                   # scale far too large: every step skipped
        [seeds[3], 15, 0, 0, 0.05],                                  # plain fp16, nothing to rescue
    ]


@functools.lru_cache(maxsize=64)
def _solve(text: str, kind: str) -> dict:
    q = json.loads(text)
    _check_params(q)
    step = functools.partial(reference_step, kind=kind)
    seed, steps, k, e, lr = q["seed"], q["steps"], q["weight_exp"], q["scale_exp"], float(q["lr"])
    with quiet_torch():
        unscaled = run_fp16(seed, steps, k, 0, lr, step)
        scaled = run_fp16(seed, steps, k, e, lr, step)
        return {
            "run_probe": [run_fp16(*call, step=step) for call in probe_calls(q)],
            "zero_fraction_unscaled": unscaled[1][0],
            "zero_fraction_scaled": scaled[1][0],
            "loss_fp32": run_fp32(seed, steps, lr),
            "loss_unscaled": unscaled[2],
            "loss_scaled": scaled[2],
            "min_scale_exp": min_scale_exp(seed, k, step),
        }


def solve_kind(params: dict, kind: str) -> dict:
    return dict(_solve(json.dumps(params, sort_keys=True), kind))


@dataclass(frozen=True)
class RunOutputs:
    """Hidden calls of run_fp16: [losses, zero fractions, final loss] each, compared row by row.

    Losses and the final loss within `loss_rtol`; zero fractions within `zero_atol`
    (a couple of gradient entries); a call that raised or gave NaN is invalid.
    """
    loss_rtol: float = 1e-4
    zero_atol: float = 2e-3
    points: float = 1.0

    def judge(self, ref, ans) -> Outcome:
        if isinstance(ans, dict) or not isinstance(ans, (list, tuple)):
            return Outcome(INVALID, "was not gathered: define mixed_precision_step and run the harness cell.")
        if len(ans) != len(ref):
            return Outcome(INVALID, WRONG_OUTPUT_COUNT)
        wrong = []
        for i, (r, a) in enumerate(zip(ref, ans)):
            if isinstance(a, dict):
                reason = a.get("error") or "is not a list"
                return Outcome(INVALID, f"hidden call {i}: your step {reason}.")
            if not isinstance(a, (list, tuple)) or len(a) != 3 or not all(
                    isinstance(row, (list, tuple)) for row in a[:2]) or len(a[0]) != len(r[0]) \
                    or len(a[1]) != len(r[1]):
                wrong.append(i)
                continue
            rows = [(r[0], a[0], "loss"), (r[1], a[1], "zero"), ([r[2]], [a[2]], "loss")]
            ok = True
            for ref_row, ans_row, what in rows:
                for rv, av in zip(ref_row, ans_row):
                    number = as_real(av)
                    if isinstance(number, str):
                        return Outcome(INVALID, f"hidden call {i}: an output {number}.")
                    limit = self.loss_rtol * abs(rv) if what == "loss" else self.zero_atol
                    if abs(number - float(rv)) > limit:
                        ok = False
            if not ok:
                wrong.append(i)
        if wrong:
            shown = ", ".join(map(str, wrong))
            return Outcome(FAIL, f"{len(wrong)} of {len(ref)} hidden runs (numbers {shown}) differ from the "
                                 f"reference mixed-precision run (losses, zero fractions or final loss).")
        return Outcome(PASS)


def _wrong_kind(kind, keys):
    def wrong(q):
        out = solve_kind(q, kind)
        return {k: out[k] for k in keys}
    return wrong


class Fp16UnderflowProblem(Problem):
    id = "p4-fp16-underflow"
    title = "Break it: fp16 without loss scaling"
    strand = "practice"
    kind = "practice"
    assignment = "practice"
    symbols = ()
    variants = {
        "A": {"seed": 0, "steps": 60, "weight_exp": 20, "scale_exp": 10, "lr": 0.1},
        "B": {"seed": 1, "steps": 60, "weight_exp": 22, "scale_exp": 12, "lr": 0.1},
        "C": {"seed": 2, "steps": 60, "weight_exp": 21, "scale_exp": 8, "lr": 0.1},
        "D": {"seed": 3, "steps": 60, "weight_exp": 23, "scale_exp": 16, "lr": 0.1},
    }
    checks = {
        "run_probe": RunOutputs(points=3.0),
        "zero_fraction_unscaled": Number(rtol=1e-4, atol=1e-6),
        "zero_fraction_scaled": Number(rtol=1e-4, atol=1e-6),
        "loss_fp32": Number(rtol=1e-4),
        "loss_unscaled": Number(rtol=1e-4),
        "loss_scaled": Number(rtol=1e-4),
        "min_scale_exp": Count(),
    }
    cells = {
        "check_step": ("run_probe",),
        "check_zeros": ("zero_fraction_unscaled", "zero_fraction_scaled", "min_scale_exp"),
        "check_losses": ("loss_fp32", "loss_unscaled", "loss_scaled"),
    }

    def probes(self, params):
        return {"run_probe": Probe(function=FUNCTION, calls=probe_calls(params))}

    def solve(self, params):
        return solve_kind(params, "right")

    mistakes = (
        Mistake(
            "scaled-gradients",
            "the gradients were multiplied by the scale after the backward pass; by then the small ones "
            "are already zero in fp16, and 0 times S is 0. Scale the loss before calling backward().",
            _wrong_kind("scaled-gradients", ("run_probe", "zero_fraction_scaled", "loss_scaled", "min_scale_exp")),
            instant="the point in the step where the scale is applied.",
        ),
        Mistake(
            "unscale-in-fp16",
            "the scale was divided out while the gradients were still fp16, which pushes them back under "
            "fp16's floor; convert to fp32 first, then divide by the scale.",
            _wrong_kind("unscale-in-fp16", ("run_probe", "loss_scaled")),
            instant="the dtype in which the scale is taken out.",
        ),
        Mistake(
            "scaled-loss-returned",
            "the step returned the loss as it was backpropagated (times the loss weight and the scale); "
            "return the plain mean squared error, the number you would log.",
            _wrong_kind("scaled-loss-returned", ("run_probe",)),
            instant="which loss the step reports.",
        ),
        Mistake(
            "fp16-master",
            "the update was made in fp16 and copied back, so each step was rounded to fp16's 11 "
            "significant bits (and an update under half a unit in the last place of its weight is lost); "
            "keep the update in fp32, on the master copy.",
            _wrong_kind("fp16-master", ("run_probe", "loss_scaled")),
            instant="the fp32 master copy of the weights.",
        ),
        Mistake(
            "percent",
            "a zero fraction was given as a percentage; give the fraction of entries, between 0 and 1.",
            lambda q: {k: 100 * solve_kind(q, "right")[k] for k in ("zero_fraction_unscaled", "zero_fraction_scaled")},
            instant="what a zero fraction is defined as in the notebook.",
        ),
    )


PROBLEM = Fp16UnderflowProblem()
