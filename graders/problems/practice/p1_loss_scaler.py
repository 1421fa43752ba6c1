"""p1-loss-scaler: a dynamic loss scaler, built by the student, that matches torch.amp.GradScaler.

The student writes `DynamicLossScaler` with GradScaler's interface (`scale`,
`unscale_`, `step`, `update`, `get_scale`). The notebook gives a locked
harness, `amp_run`, the usual mixed-precision recipe on a tiny regression MLP:
forward under `torch.autocast("cpu", dtype=torch.float16)`, backward of the
scaled loss, `unscale_`, global-norm clipping, `step`, `update`. Overflow is
real: the fp16 backward pass overflows past 65504 when the scale is too large
for the step's gradients, and a corrupt batch (a NaN in the inputs) makes NaN
gradients. The hidden tests run the same harness, with the same seeds, once
with the student's class and once with `torch.amp.GradScaler("cpu", ...)`, and
compare (a) the scale in force and the skipped updates at every step and (b)
the final weights.

GradScaler's rules (torch/amp/grad_scaler.py): `unscale_` multiplies every
gradient by float32(1 / float64(scale)) and records whether any gradient of
any parameter is inf or NaN (`torch._amp_foreach_non_finite_check_and_unscale_`);
`step` unscales first unless `unscale_` was already called this step, and
skips `optimizer.step()` when an inf or NaN was found; `update` runs
`torch._amp_update_scale_`, the state machine of exercise e05 (backoff and
reset on overflow, growth after `growth_interval` consecutive clean steps).
The state machine of the declared mistakes is e05's own `python_run`, imported
rather than rewritten. Scheme: Micikevicius et al., "Mixed Precision Training"
(ICLR 2018), section 3.2.
"""
from __future__ import annotations

import copy
import json
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F

from graders.numeric import Number, Numbers, Outputs
from graders.problem import Mistake, Probe, Problem, one_torch_thread, seed_for
from graders.problems.common.loss_scaling import python_run, torch_run
from graders.problems.common.loss_scaling import scaler_settings as _check_settings

SETTINGS = ("init_scale", "growth_factor", "backoff_factor", "growth_interval")
RUN = ("seed", "steps", "spikes", "nan_steps", "lr", "max_norm")
ARGS = SETTINGS + RUN        # the order of a hidden call's arguments


# --- the harness: identical to the locked cell of the notebook (a test checks it) ------

def amp_run(scaler, seed, steps, spikes, nan_steps, lr, max_norm):
    """Train a tiny MLP with fp16 autocast and `scaler`; return (scales, skipped, weights).

    scales[i] is the scale in force during step i, skipped[i] is 1 when step i's
    update was skipped, and weights are the final parameters, flattened.
    `spikes` is a list of [step, factor] pairs: at that step the targets are
    multiplied by factor (an outlier batch). At the steps in `nan_steps` one
    input is NaN (a corrupt example).
    """
    gen = torch.Generator().manual_seed(int(seed))
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=gen))
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    teacher = torch.randn(8, 1, generator=gen)
    factor = {int(step): float(f) for step, f in spikes}
    scales, skipped = [], []
    for step in range(int(steps)):
        x = torch.randn(64, 8, generator=gen)
        y = torch.tanh(x @ teacher) * factor.get(step, 1.0)
        if step in nan_steps:
            x[0, 0] = float("nan")
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.float16):
            out = model(x)
        loss = F.mse_loss(out.float(), y)
        scales.append(float(scaler.get_scale()))
        before = [p.detach().clone() for p in model.parameters()]
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        scaler.step(opt)
        scaler.update()
        skipped.append(int(all(torch.equal(b, p) for b, p in zip(before, model.parameters()))))
    weights = torch.cat([p.detach().flatten() for p in model.parameters()]).tolist()
    return scales, skipped, weights


# --- the reference: torch's own GradScaler ---------------------------------------------

def _validate(q: dict) -> None:
    _check_settings([], q["init_scale"], q["growth_factor"], q["backoff_factor"], q["growth_interval"])
    if int(q["steps"]) != q["steps"] or not 1 <= q["steps"] <= 1000:
        raise ValueError("steps must be a whole number from 1 to 1000")
    if not q["lr"] > 0 or not q["max_norm"] > 0:
        raise ValueError("lr and max_norm must be positive")
    if any(len(pair) != 2 or not pair[1] > 0 for pair in q["spikes"]):
        raise ValueError("spikes are [step, positive factor] pairs")


def run_with(make_scaler, q: dict):
    """(scales, skipped, weights, final scale) of the harness for settings `q`, with the scaler
    that `make_scaler` builds."""
    _validate(q)
    scaler = make_scaler(init_scale=float(q["init_scale"]), growth_factor=float(q["growth_factor"]),
                         backoff_factor=float(q["backoff_factor"]), growth_interval=int(q["growth_interval"]))
    with one_torch_thread():
        scales, skipped, weights = amp_run(scaler, q["seed"], q["steps"], q["spikes"], q["nan_steps"],
                                           q["lr"], q["max_norm"])
    return scales, skipped, weights, float(scaler.get_scale())


def torch_scaler(**settings):
    return torch.amp.GradScaler("cpu", **settings)


def probe_calls(params: dict) -> list:
    """Hidden calls, each [init_scale, growth_factor, backoff_factor, growth_interval, seed, steps,
    spikes, nan_steps, lr, max_norm]: fresh seeds, spikes and corrupt batches."""
    rng = np.random.default_rng(seed_for(params, "p1-loss-scaler"))
    g, b, w = float(params["growth_factor"]), float(params["backoff_factor"]), int(params["growth_interval"])

    def events(steps, n_spikes):
        spike_steps = sorted(int(s) for s in rng.choice(np.arange(4, steps - 2), n_spikes, replace=False))
        spikes = [[s, float(rng.choice([8.0, 20.0, 40.0]))] for s in spike_steps]
        free = [s for s in range(3, steps - 1) if s not in spike_steps]
        return spikes, [int(rng.choice(free))]

    # A clipping threshold of 0.5 or 1 is below this MLP's true gradient norm (about 1 to 10)
    # at nearly every step, and a clipped update is the same whether the gradients were
    # unscaled or not. The last run clips at 5, a threshold the true gradients fall beneath as
    # the loss comes down while the still-scaled ones never do: there, clipping shows whether
    # it saw the true gradients.
    calls = []
    for init, grow, back, interval, n_spikes, clip in (
            (float(params["init_scale"]), g, b, w, 1, None),
            (2.0 ** 16, 2.0, 0.5, int(rng.integers(2, 5)), 2, None),
            (2.0 ** 10, 3.0, 0.25, 3, 1, None),                # other factors than torch's
            (2.0 ** 24, 2.0, 0.5, 2, 1, 5.0)):                 # a start far too high
        steps = 30
        spikes, nan_steps = events(steps, n_spikes)
        seed, lr, max_norm = (int(rng.integers(0, 10_000)), float(rng.choice([0.02, 0.05, 0.1])),
                              float(rng.choice([0.5, 1.0])))
        calls.append([init, grow, back, interval, seed, steps, spikes, nan_steps, lr, clip or max_norm])
    return calls


def _as_q(call) -> dict:
    return dict(zip(ARGS, call))


# --- the declared mistakes, as scalers with one thing wrong ------------------------------

class ScratchScaler:
    """GradScaler's semantics in plain Python, with an optional mistake `kind` built in.

    The scale update replays the overflow history through e05's references: torch's
    own update op (`torch_run`) when the rule is right, and e05's `python_run` for
    the update-rule mistakes.
    """

    def __init__(self, kind=None, init_scale=65536.0, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000):
        self.kind = kind
        self.settings = (float(init_scale), float(growth_factor), float(backoff_factor), int(growth_interval))
        self.history = []
        self.scale_value = float(init_scale)
        self.found_inf = None
        self.loss_finite = True

    def get_scale(self):
        return self.scale_value

    def scale(self, loss):
        scaled = loss * self.scale_value
        self.loss_finite = bool(torch.isfinite(scaled).all())
        return scaled

    def _bad(self, grads):
        if self.kind == "checks-scaled-loss":
            return not self.loss_finite
        if self.kind == "first-tensor-only":
            grads = grads[:1]
        if self.kind == "inf-only":
            return any(bool(torch.isinf(g).any()) for g in grads)
        return any(not bool(torch.isfinite(g).all()) for g in grads)

    def unscale_(self, optimizer):
        grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        self.found_inf = self._bad(grads)
        if self.kind != "no-unscale":
            inv = float(torch.tensor(self.scale_value, dtype=torch.float64).reciprocal().float())
            with torch.no_grad():
                for g in grads:
                    g.mul_(inv)

    def step(self, optimizer):
        if self.found_inf is None or self.kind == "unscale-twice":
            self.unscale_(optimizer)
        if not self.found_inf:
            optimizer.step()

    def update(self):
        self.history.append(bool(self.found_inf))
        if self.kind in ("tracker-not-reset", "late-growth", "no-reset-after-growth"):
            self.scale_value = python_run(self.history, *self.settings, self.kind)[1]
        else:
            self.scale_value = torch_run(self.history, *self.settings)[1]
        self.found_inf = None


@lru_cache(maxsize=256)
def _cached_run(kind, text):
    q = json.loads(text)
    make = torch_scaler if kind == "torch" else (lambda **s: ScratchScaler(kind, **s))
    return run_with(make, q)


def cached_run(kind, q):
    """The harness run with torch's GradScaler (kind "torch") or a ScratchScaler of `kind`,
    memoised: the runs are deterministic, and grading asks for the same ones repeatedly."""
    return copy.deepcopy(_cached_run(kind, json.dumps(q, sort_keys=True)))


def _run_mistake(kind, q):
    return cached_run(kind, q)


def _mistake(kind, schedule=True, weights=False):
    """The answers a scaler with mistake `kind` gives (only the keys it changes meaningfully)."""
    def wrong(q):
        out = {}
        scales, skipped, _, final = _run_mistake(kind, q)
        if schedule:
            out["scale_trajectory"] = scales
            out["final_scale"] = final
            out["skipped_steps"] = [i for i, s in enumerate(skipped) if s]
        runs = [_run_mistake(kind, _as_q(call)) for call in probe_calls(q)]
        if schedule:
            out["scaler_schedule"] = [[r[0], r[1]] for r in runs]
        if weights:
            out["scaler_weights"] = [r[2] for r in runs]
        return out
    return wrong


class LossScalerProblem(Problem):
    id = "p1-loss-scaler"
    title = "A dynamic loss scaler that matches GradScaler"
    strand = "practice"
    kind = "practice"
    assignment = "practice"
    symbols = ()
    # Initial scales are real defaults: 2**16 (torch GradScaler), 2**32 (Megatron-LM's
    # --initial-loss-scale), 2**7 (fairseq's --fp16-init-scale). Growth intervals are
    # shortened from torch's 2000 so that forty steps show whole cycles.
    variants = {
        "A": {"init_scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 4,
              "seed": 11, "steps": 40, "spikes": [[17, 30.0]], "nan_steps": [26], "lr": 0.05, "max_norm": 1.0},
        "B": {"init_scale": 4294967296.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 6,
              "seed": 23, "steps": 40, "spikes": [], "nan_steps": [30], "lr": 0.05, "max_norm": 1.0},
        "C": {"init_scale": 128.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 5,
              "seed": 5, "steps": 40, "spikes": [[15, 30.0]], "nan_steps": [25], "lr": 0.03, "max_norm": 0.5},
        "D": {"init_scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3,
              "seed": 42, "steps": 40, "spikes": [[10, 50.0], [28, 20.0]], "nan_steps": [20], "lr": 0.1,
              "max_norm": 1.0},
    }
    checks = {
        "scaler_schedule": Outputs(rtol=0.0, atol=0.0, points=2.0),
        "scaler_weights": Outputs(rtol=1e-5, atol=1e-6, points=2.0),
        "scale_trajectory": Numbers(exact=True),
        "skipped_steps": Numbers(exact=True),
        "final_scale": Number(rtol=1e-12),
    }
    cells = {
        "check_scaler": ("scaler_schedule", "scaler_weights"),
        "check_numbers": ("scale_trajectory", "skipped_steps", "final_scale"),
    }

    def probes(self, params):
        calls = probe_calls(params)
        return {"scaler_schedule": Probe(function="scaler_schedule", calls=calls),
                "scaler_weights": Probe(function="scaler_weights", calls=calls)}

    def solve(self, params):
        scales, skipped, _, final = cached_run("torch", params)
        runs = [cached_run("torch", _as_q(call)) for call in probe_calls(params)]
        return {
            "scaler_schedule": [[r[0], r[1]] for r in runs],
            "scaler_weights": [r[2] for r in runs],
            "scale_trajectory": scales,
            "skipped_steps": [i for i, s in enumerate(skipped) if s],
            "final_scale": final,
        }

    mistakes = (
        Mistake(
            "tracker-not-reset",
            "an overflow did not set the count of clean steps back to 0; GradScaler grows the scale "
            "only after growth_interval consecutive clean steps.",
            _mistake("tracker-not-reset"),
            instant="what an overflow does to the count of clean steps.",
        ),
        Mistake(
            "late-growth",
            "the scale grew one step late; it grows in the update that ends the growth_interval-th "
            "consecutive clean step, so the very next step already runs at the larger scale.",
            _mistake("late-growth"),
            instant="the update in which the scale grows.",
        ),
        Mistake(
            "inf-only",
            "the overflow check looked for inf only; a corrupt batch gives NaN gradients, which "
            "torch.isinf misses. GradScaler skips on any non-finite value (torch.isfinite).",
            _mistake("inf-only"),
            instant="what a corrupt batch puts in the gradients.",
        ),
        Mistake(
            "first-tensor-only",
            "only some of the gradients were checked; in fp16 the overflow often appears in one "
            "layer first, so every gradient of every parameter must be checked.",
            _mistake("first-tensor-only"),
            instant="which gradients the overflow check must inspect.",
        ),
        Mistake(
            "checks-scaled-loss",
            "the overflow was judged from the scaled loss; the loss is finite long after the fp16 "
            "backward pass has overflowed, so the gradients themselves must be checked.",
            _mistake("checks-scaled-loss"),
            instant="where an overflow of the fp16 backward pass shows.",
        ),
        Mistake(
            "no-unscale",
            "the gradients were never divided by the scale, so the optimizer (and the clipping) saw "
            "gradients that were still scaled.",
            _mistake("no-unscale", schedule=False, weights=True),
            instant="the gradients that the clipping and the optimizer must see.",
        ),
        Mistake(
            "unscale-twice",
            "the gradients were unscaled twice: once in unscale_ and again in step. GradScaler "
            "remembers that unscale_ already ran for this optimizer in this step.",
            _mistake("unscale-twice", schedule=False, weights=True),
            instant="what step() knows of an unscale_ call in the same iteration.",
        ),
    )


PROBLEM = LossScalerProblem()
