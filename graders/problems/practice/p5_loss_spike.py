"""p5-loss-spike: a loss spike from too high a learning rate, and what warmup and clipping do to it.

A small ReLU MLP (8 -> 32 -> 32 -> 1, 1,409 parameters) is trained full-batch with AdamW
(betas 0.9 and 0.95, no weight decay) on a fixed noisy regression task, with a cosine
decay to zero over the run. At the variant's peak learning rate, started cold, the loss
jumps several-fold within the first two steps (Adam's first update moves every weight by
about the learning rate, whatever the gradient's size) and leaves lasting damage: many
ReLU units never fire again, and the run ends far above a warmed-up one. A linear warmup
(the fix of Goyal et al. 2017, "Accurate, Large Minibatch SGD", section 2.2, which ramps
the rate linearly to its target over the first five epochs) removes the spike; in variant D
it only moves it to the end of the ramp (warmup lets the network adapt, it does not make a
rate that is too high safe). Clipping the global gradient
norm does not remove it: at the thresholds used (GPT-3's 1.0 down to 0.1) the gradient norm at
step 0 is 0.19 to 0.45, often under the threshold, because it is the rate that is too large,
not the gradient; and where clipping does act, Adam's first update is eta * g / (|g| + eps)
per coordinate, the same for any rescaled g (Kingma and Ba 2015, section 2.1: the step is
invariant to rescaling the gradient and bounded by the learning rate). Clipping only softens
what follows.

The student writes `spike_report(losses, ratio)`: the first step whose loss exceeds
`ratio` times the lowest loss before it, the peak of the spike relative to that lowest
loss, and the first later step whose loss is back below it. It is probed on hidden loss
curves and compared with a float64 torch reference (torch.cummin). The student then runs
the locked harness (mirrored here and checked against the notebook in the tests) without a
fix, with warmup and with clipping, and reports the spike reports, the final losses and
the dead units. The runs are deterministic (one thread, fixed seeds), and the same code runs
in the notebook and here.
"""
from __future__ import annotations

import functools
import json
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from graders.numeric import Count, Number, Numbers, Outputs
from graders.problem import Mistake, Probe, Problem, seed_for
from graders.problems.common.torch_runs import quiet_torch

FUNCTION = "spike_report"
N_EXAMPLES, N_IN, N_HIDDEN = 256, 8, 32
NO_SPIKE = [-1, 0.0, -1]


# --- the harness (the notebook's locked cell runs the same code) -----------------------------
def make_data(seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(N_EXAMPLES, N_IN, generator=g)
    w = torch.randn(N_IN, 1, generator=g) / math.sqrt(N_IN)
    y = torch.sin(2 * (x @ w)) + 0.3 * torch.randn(N_EXAMPLES, 1, generator=g)
    return x, y


def make_model(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(N_IN, N_HIDDEN), nn.ReLU(), nn.Linear(N_HIDDEN, N_HIDDEN), nn.ReLU(),
                         nn.Linear(N_HIDDEN, 1))


def lr_factor(step, warmup_steps, total_steps):
    """Linear warmup from peak/warmup_steps to the peak, then cosine decay to zero."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    return 0.5 * (1 + math.cos(math.pi * (step - warmup_steps) / max(1, total_steps - warmup_steps)))


def train(seed, steps, peak_lr, warmup_steps=0, max_norm=None):
    """Full-batch AdamW; returns (loss at each step, final loss, the trained model)."""
    x, y = make_data(seed)
    model = make_model(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=peak_lr, betas=(0.9, 0.95), weight_decay=0.0)
    losses = []
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = peak_lr * lr_factor(step, warmup_steps, steps)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if max_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        opt.step()
        losses.append(loss.item())
    with torch.no_grad():
        final = F.mse_loss(model(x), y).item()
    return losses, final, model
# --- end of the harness ------------------------------------------------------------------------


def dead_units(model, x, kind="right"):
    """Hidden ReLU units (both layers) whose output is zero on every example."""
    with torch.no_grad():
        h1 = model[1](model[0](x))
        h2 = model[3](model[2](h1))
    if kind == "dead-any":
        return int((h1.amin(0) == 0).sum() + (h2.amin(0) == 0).sum())
    return int((h1.amax(0) == 0).sum() + (h2.amax(0) == 0).sum())


def torch_report(losses, ratio):
    """[spike step, peak / best before it, recovery step] in float64 torch; [-1, 0.0, -1] if none."""
    L = torch.tensor([float(v) for v in losses], dtype=torch.float64)
    if L.numel() < 2:
        return list(NO_SPIKE)
    best_before = torch.cummin(L, 0).values[:-1]          # best_before[t-1] = min(L[:t])
    hits = torch.nonzero(L[1:] > float(ratio) * best_before).flatten()
    if hits.numel() == 0:
        return list(NO_SPIKE)
    t = int(hits[0]) + 1
    base = best_before[t - 1]
    back = torch.nonzero(L[t + 1:] < base).flatten()
    recovery = int(back[0]) + t + 1 if back.numel() else -1
    end = recovery if recovery > 0 else L.numel()
    return [t, float(L[t:end].max() / base), recovery]


def python_report(losses, ratio, kind):
    """The report with one declared mistake built in (for feedback)."""
    L = [float(v) for v in losses]
    for t in range(1, len(L)):
        if kind == "previous-step":
            base = L[t - 1]
        elif kind == "initial-loss":
            base = L[0]
        else:
            base = min(L[:t])
        if L[t] > ratio * base:
            if kind == "recovery-at-threshold":
                back = [u for u in range(t + 1, len(L)) if L[u] <= ratio * base]
            else:
                back = [u for u in range(t + 1, len(L)) if L[u] < base]
            recovery = back[0] if back else -1
            end = recovery if recovery > 0 else len(L)
            peak = (L[t] if kind == "peak-at-detection" else max(L[t:end])) / base
            if kind == "one-based":
                return [t + 1, peak, recovery + 1 if recovery > 0 else -1]
            return [t, peak, recovery]
    return list(NO_SPIKE)


def _curve(rng, n, start, floor, tau, noise):
    t = np.arange(n)
    return floor + (start - floor) * np.exp(-t / tau) * (1 + noise * rng.standard_normal(n))


def probe_calls(params: dict) -> list:
    """Hidden calls [losses, ratio]: curves built to tell the declared mistakes apart."""
    rng = np.random.default_rng(seed_for(params, "p5-loss-spike"))
    calls = []
    # 1. a mid-run spike on a noisy descent; the peak comes two steps after the detection
    c = _curve(rng, 40, 1.5, 0.2, 8.0, 0.02)
    t0 = int(rng.integers(14, 22))
    c[t0:t0 + 6] *= np.array([2.6, 3.4, 4.1, 2.5, 1.3, 1.05])
    calls.append([c, 2.0])
    # 2. a slow blow-up: no single step doubles, but the loss leaves twice its best behind
    c = _curve(rng, 36, 1.2, 0.3, 6.0, 0.01)
    t0 = int(rng.integers(12, 18))
    c[t0:] = c[t0 - 1] * 1.18 ** np.arange(1, 36 - t0 + 1)
    calls.append([c, 2.0])
    # 3. no spike at all
    calls.append([_curve(rng, 30, 0.9, 0.1, 10.0, 0.01), 2.0])
    # 4. a spike at step 1 that never comes back below the start
    c = _curve(rng, 25, 0.8, 0.5, 12.0, 0.0)
    c[1:] = 0.8 * (7.0 - 4.0 * (1 - np.exp(-np.arange(1, 25) / 5.0)))
    calls.append([c, 2.0])
    # 5. a spike after a long descent that stays below the initial loss, at a stricter ratio
    c = _curve(rng, 45, 3.0, 0.05, 5.0, 0.03)
    t0 = int(rng.integers(25, 32))
    c[t0:t0 + 4] = c[t0 - 1] * np.array([1.6, 2.2, 1.4, 0.95])
    calls.append([c, 1.5])
    # 6. a spike that drops under three times the best quickly but under the best only later
    c = _curve(rng, 40, 2.0, 0.4, 6.0, 0.005)
    t0 = int(rng.integers(15, 20))
    c[t0:t0 + 8] = c[t0 - 1] * np.array([5.0, 4.0, 2.5, 1.6, 1.3, 1.1, 1.02, 0.97])
    calls.append([c, 3.0])
    return [[[round(float(v), 6) for v in curve], ratio] for curve, ratio in calls]


def _check_params(q):
    for key in ("seed", "steps", "warmup_steps"):
        if isinstance(q[key], bool) or int(q[key]) != q[key]:
            raise ValueError(f"{key} must be a whole number")
    if q["steps"] < 2 or not 0 < q["warmup_steps"] < q["steps"]:
        raise ValueError("need at least 2 steps and 0 < warmup_steps < steps")
    if not float(q["peak_lr"]) > 0 or not float(q["max_norm"]) > 0 or not float(q["spike_ratio"]) > 1:
        raise ValueError("peak_lr and max_norm must be positive, spike_ratio above 1")


@functools.lru_cache(maxsize=64)
def _runs(text: str):
    q = json.loads(text)
    _check_params(q)
    seed, steps, lr = q["seed"], q["steps"], float(q["peak_lr"])
    x, _ = make_data(seed)
    out = {}
    with quiet_torch():
        for name, warmup, max_norm in (("nofix", 0, None), ("warmup", q["warmup_steps"], None),
                                       ("clip", 0, float(q["max_norm"]))):
            losses, final, model = train(seed, steps, lr, warmup, max_norm)
            out[name] = (losses, final, dead_units(model, x), dead_units(model, x, "dead-any"))
    return out


def solve_kind(q: dict, kind: str = "right") -> dict:
    runs = _runs(json.dumps(q, sort_keys=True))
    ratio = float(q["spike_ratio"])
    report = (lambda L, r: torch_report(L, r)) if kind == "right" else \
        (lambda L, r: python_report(L, r, kind))
    out = {"detector_probe": [report(*call) for call in probe_calls(q)]}
    for name in ("nofix", "warmup", "clip"):
        losses, final, dead, dead_any = runs[name]
        out[f"spike_{name}"] = report(losses, ratio)
        out[f"final_loss_{name}"] = min(losses) if kind == "best-not-last" else final
        if name != "clip":
            out[f"dead_units_{name}"] = dead_any if kind == "dead-any" else dead
    return out


def _wrong_kind(kind, keys):
    def wrong(q):
        out = solve_kind(q, kind)
        return {k: out[k] for k in keys}
    return wrong


DETECTOR_KEYS = ("detector_probe", "spike_nofix", "spike_warmup", "spike_clip")


class LossSpikeProblem(Problem):
    id = "p5-loss-spike"
    title = "Break it: a loss spike from too high a learning rate"
    strand = "practice"
    kind = "practice"
    assignment = "practice"
    symbols = ()
    variants = {
        "A": {"seed": 0, "steps": 60, "peak_lr": 0.1, "warmup_steps": 10, "max_norm": 1.0, "spike_ratio": 2.0},
        "B": {"seed": 2, "steps": 60, "peak_lr": 0.12, "warmup_steps": 12, "max_norm": 0.1, "spike_ratio": 2.0},
        "C": {"seed": 5, "steps": 60, "peak_lr": 0.1, "warmup_steps": 8, "max_norm": 0.5, "spike_ratio": 2.0},
        "D": {"seed": 11, "steps": 60, "peak_lr": 0.1, "warmup_steps": 15, "max_norm": 0.25, "spike_ratio": 2.0},
    }
    checks = {
        "detector_probe": Outputs(rtol=1e-6, atol=0.0, points=3.0),
        "spike_nofix": Numbers(rtol=1e-6),
        "spike_warmup": Numbers(rtol=1e-6),
        "spike_clip": Numbers(rtol=1e-6),
        "final_loss_nofix": Number(rtol=1e-4),
        "final_loss_warmup": Number(rtol=1e-4),
        "final_loss_clip": Number(rtol=1e-4),
        "dead_units_nofix": Count(),
        "dead_units_warmup": Count(),
    }
    cells = {
        "check_detector": ("detector_probe",),
        "check_spikes": ("spike_nofix", "spike_warmup", "spike_clip"),
        "check_damage": ("final_loss_nofix", "final_loss_warmup", "final_loss_clip",
                         "dead_units_nofix", "dead_units_warmup"),
    }

    def probes(self, params):
        return {"detector_probe": Probe(function=FUNCTION, calls=probe_calls(params))}

    def solve(self, params):
        return solve_kind(params)

    mistakes = (
        Mistake(
            "previous-step",
            "a spike was measured against the previous step's loss; measure it against the lowest loss "
            "so far, or a slow climb never counts and a noisy dip makes an ordinary step look like a spike.",
            _wrong_kind("previous-step", DETECTOR_KEYS),
            instant="the baseline a spike is measured against.",
        ),
        Mistake(
            "initial-loss",
            "a spike was measured against the loss at step 0; late in a run the loss is far below where it "
            "started, so a real spike never reaches that bar. Use the lowest loss seen before the step.",
            _wrong_kind("initial-loss", DETECTOR_KEYS),
            instant="the baseline a spike is measured against.",
        ),
        Mistake(
            "recovery-at-threshold",
            "recovery was counted when the loss fell back under the spike threshold; count it when the loss "
            "is back below the best loss before the spike, where the run was before it broke.",
            _wrong_kind("recovery-at-threshold", DETECTOR_KEYS),
            instant="the loss a run must regain to count as recovered.",
        ),
        Mistake(
            "peak-at-detection",
            "the peak was taken at the step that set off the detector; a spike can keep rising for a few "
            "steps, so take the largest loss between the detection and the recovery.",
            _wrong_kind("peak-at-detection", DETECTOR_KEYS),
            instant="the span of steps in which a spike's peak is sought.",
        ),
        Mistake(
            "one-based",
            "steps were numbered from 1; the loss list is indexed from 0, and so are the steps.",
            _wrong_kind("one-based", DETECTOR_KEYS),
            instant="how the steps are numbered.",
        ),
        Mistake(
            "best-not-last",
            "a final loss was the lowest loss of the run; report the loss after the last step, which is "
            "where the run ends up.",
            _wrong_kind("best-not-last", ("final_loss_nofix", "final_loss_warmup", "final_loss_clip")),
            instant="which loss counts as the final loss.",
        ),
        Mistake(
            "dead-any",
            "a unit was counted as dead when it was zero on some example; a ReLU is zero on about half of "
            "them in a healthy net. A dead unit is zero on every example, so it gets no gradient at all.",
            _wrong_kind("dead-any", ("dead_units_nofix", "dead_units_warmup")),
            instant="what makes a ReLU unit dead.",
        ),
    )


PROBLEM = LossSpikeProblem()
