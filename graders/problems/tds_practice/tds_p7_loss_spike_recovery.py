"""tds-p7-loss-spike-recovery: a loss spike provoked in a small run, and three responses compared.

Sources:
- Chowdhery et al., "PaLM: Scaling Language Modeling with Pathways" (2022, arXiv 2204.02311), §5.1
  (Training instability): spikes "roughly 20 times" in the 540B run despite gradient clipping; the
  remedy was to restart "from a checkpoint roughly 100 steps before the spike started" and to skip
  "roughly 200-500 data batches, which cover the batches that were seen before and during the spike".
- Molybog et al., "A Theory on Adam Instability in Large-Scale Machine Learning" (2023, arXiv
  2304.09871): Adam's update g / sqrt(v) is at the mercy of a second-moment estimate v that lags
  the gradients; a burst of large gradients inflates v, and after a quiet stretch a stale v lets a
  burst through at full size.
- Wortsman et al., "Small-scale proxies for large-scale Transformer training instabilities" (2023,
  arXiv 2309.14322): instabilities of large runs reproduced in small models.
- Chapter II.8 p5-loss-spike teaches what a spike is and why warmup and clipping act on a
  cold-start spike; this item compares the operational responses to a mid-run spike.

The run, exactly (the notebook's locked cell holds `make_data`, `make_model`, `batch_of` and `train`
verbatim; a test checks that they agree): a ReLU MLP (d_in -> hidden -> hidden -> 1) trained with
AdamW (betas 0.9 and 0.95, no weight decay) at a constant rate on a stream of mini-batches of a
noisy regression task; batches `poison_start` .. `poison_start + poison_len - 1` of the stream are
corrupted (their targets multiplied by `poison_scale`, as a shard of mis-scaled data would be). Every
response runs exactly `steps` executed updates (equal compute) and logs the clean held-out loss
after each one. Responses: "none"; "clip" (global gradient norm clipped at `max_norm`); "rollback"
(the student's score of each batch's training loss against the window before it, computed before
its update, is compared with `spike_ratio`; on a spike the
student's plan names a checkpoint and how many batches of the stream to skip from it: the harness
restores the model and the optimizer state of that checkpoint, taken every `ckpt_every` steps, and
resumes that many batches past the checkpoint's place in the stream; at most `max_rollbacks` times).

Answers: `detector_probe` and `plan_probe` (the student's `spike_score(losses, window)` and
`rollback_plan(spike_step, ckpt_every, margin, skip)` on hidden inputs), and for the three
responses in the order none, clip, rollback: `spike_heights`, `recovery_steps`, `final_losses`;
and `wasted_updates`, the updates the rollback discarded.
"""
from __future__ import annotations

import copy
import json
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from graders.numeric import Count, Numbers, Outputs
from graders.problem import Mistake, Probe, Problem, seed_for
from graders.problems.common.changed import differing
from graders.problems.common.torch_runs import quiet_torch

DETECTOR = "spike_score"
PLANNER = "rollback_plan"
RESPONSES = ("none", "clip", "rollback")


# --- the harness: copied verbatim into the notebook's locked cell ------------------------------
def make_data(params):
    """The training stream (as many batches as the run could ever read) and a clean held-out set."""
    g = torch.Generator().manual_seed(params["seed"])
    d = params["d_in"]
    teacher = torch.randn(d, generator=g) / d ** 0.5
    n_batches = 2 * params["steps"] + params["poison_start"] + params["poison_len"]

    def draw(n):
        x = torch.randn(n, d, generator=g)
        return x, torch.sin(2.0 * x @ teacher) + 0.1 * torch.randn(n, generator=g)

    x, y = draw(n_batches * params["batch"])
    x_eval, y_eval = draw(256)
    return x, y, x_eval, y_eval


def make_model(params):
    torch.manual_seed(params["seed"])
    h = params["hidden"]
    return nn.Sequential(nn.Linear(params["d_in"], h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, 1))


def batch_of(params, data, index):
    """Batch `index` of the stream; the poisoned stretch has its targets multiplied by poison_scale."""
    x, y = data[0], data[1]
    b = params["batch"]
    xb, yb = x[index * b:(index + 1) * b], y[index * b:(index + 1) * b]
    if params["poison_start"] <= index < params["poison_start"] + params["poison_len"]:
        yb = yb * params["poison_scale"]
    return xb, yb


def train(params, response, spike_score=None, rollback_plan=None):
    """`steps` executed updates under a response ("none", "clip" or "rollback").
    Returns (eval_losses, train_losses, rollbacks): the held-out loss before any update and after
    each executed update, the loss of each executed batch, and [spike_step, restore_step,
    batches_skipped] of every rollback taken."""
    data = make_data(params)
    x_eval, y_eval = data[2], data[3]
    model = make_model(params)
    opt = torch.optim.AdamW(model.parameters(), lr=params["lr"], betas=(0.9, 0.95), weight_decay=0.0)

    def evaluate():
        with torch.no_grad():
            return float(F.mse_loss(model(x_eval).squeeze(-1), y_eval))

    eval_losses, train_losses, rollbacks, checkpoints = [evaluate()], [], [], {}
    step, batch_index, history = 0, 0, []      # history: the training losses of the current timeline
    while len(train_losses) < params["steps"]:
        if step % params["ckpt_every"] == 0:
            checkpoints[step] = (copy.deepcopy(model.state_dict()), copy.deepcopy(opt.state_dict()),
                                 batch_index, len(history))
        xb, yb = batch_of(params, data, batch_index)
        loss = F.mse_loss(model(xb).squeeze(-1), yb)
        history.append(loss.item())
        if response == "rollback" and len(rollbacks) < params["max_rollbacks"] \
                and spike_score(history, params["window"]) > params["spike_ratio"]:
            restore, skipped = rollback_plan(step, params["ckpt_every"], params["margin"], params["skip"])
            weights, moments, restored_batch, kept = checkpoints[restore]
            model.load_state_dict(weights)
            opt.load_state_dict(moments)
            rollbacks.append([step, restore, skipped])
            step, batch_index, history = restore, restored_batch + skipped, history[:kept]
            continue
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if response == "clip":
            torch.nn.utils.clip_grad_norm_(model.parameters(), params["max_norm"])
        opt.step()
        train_losses.append(history[-1])
        eval_losses.append(evaluate())
        step, batch_index = step + 1, batch_index + 1
    return eval_losses, train_losses, rollbacks
# --- end of the harness ------------------------------------------------------------------------


# --- the student's functions, right and wrong ----------------------------------------------------
def reference_score(losses, window, kind="right"):
    """The newest loss over the mean of the `window` losses before it (0.0 without enough history)."""
    L = [float(v) for v in losses]
    if len(L) <= window:
        return 0.0
    if kind == "previous-only":
        return L[-1] / L[-2]
    before = L[-window - 1:] if kind == "window-includes-current" else L[-window - 1:-1]
    return L[-1] / (sum(before) / len(before))


def reference_plan(spike_step, ckpt_every, margin, skip, kind="right"):
    """[checkpoint step to restore, batches of the stream to skip from that checkpoint on]."""
    if kind == "no-margin":
        restore = (spike_step // ckpt_every) * ckpt_every
    else:
        restore = (max(0, spike_step - margin) // ckpt_every) * ckpt_every
    if kind == "replay":
        return [restore, 0]
    return [restore, spike_step - restore + skip]


def detector_calls(params):
    rng = np.random.default_rng(seed_for(params, "tds-p7-detector"))
    calls = []
    for n, ratio, window, jump in ((30, 3.0, 8, 5.0), (25, 2.0, 5, 1.5), (6, 2.0, 8, 50.0), (40, 3.0, 10, 2.5),
                                   (20, 1.5, 4, 1.8), (15, 3.0, 6, 3.4)):
        base = 1.0 + 0.3 * np.exp(-np.arange(n) / 10.0)
        curve = base * (1 + 0.05 * rng.standard_normal(n))
        curve[-1] *= jump
        calls.append([[round(float(v), 6) for v in curve], window])
    # a slow climb in which each step beats the previous one by a little but the window by a lot
    climb = [round(1.0 * 1.35 ** k, 6) for k in range(12)]
    calls.append([climb, 6])
    return calls


def plan_calls(params):
    rng = np.random.default_rng(seed_for(params, "tds-p7-plan"))
    calls = []
    for _ in range(5):
        every = int(rng.choice([10, 25, 50, 100]))
        margin = int(rng.integers(1, 4)) * every // 2 + int(rng.integers(0, every))
        calls.append([int(rng.integers(3 * every, 40 * every)), every, margin, int(rng.integers(20, 500))])
    calls.append([7, 10, 20, 5])          # a spike before the first checkpoint past the start
    calls.append([20_000, 100, 100, 300])  # PaLM's scale
    return calls


# --- the runs and the measurements -----------------------------------------------------------------
def spike_measures(eval_losses, onset, kind="right"):
    """[height, recovery] of the held-out curve around the spike that starts at update `onset`:
    the peak from the onset on over the loss at the onset, and the updates from the onset until the
    first update after the peak whose loss is back at or below the onset's (-1 if never)."""
    base = eval_losses[onset] if kind != "initial-base" else eval_losses[0]
    tail = eval_losses[onset:]
    peak = onset + tail.index(max(tail))
    back = [i for i in range(peak + 1, len(eval_losses)) if eval_losses[i] <= base]
    return max(tail) / base, (back[0] - onset if back else -1)


def _read(q):
    p = {}
    for name, low in (("seed", 0), ("d_in", 1), ("hidden", 1), ("batch", 1), ("steps", 10), ("poison_start", 1),
                      ("poison_len", 1), ("ckpt_every", 1), ("margin", 0), ("skip", 1), ("window", 1),
                      ("max_rollbacks", 1)):
        v = q[name]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v < low:
            raise ValueError(f"{name} must be a whole number >= {low}, not {v!r}")
        p[name] = int(v)
    for name in ("lr", "poison_scale", "max_norm", "spike_ratio"):
        p[name] = float(q[name])
    if p["poison_start"] + p["poison_len"] >= p["steps"] or p["steps"] > 1000 or p["batch"] * p["steps"] > 100_000 \
            or p["hidden"] > 256 or not p["spike_ratio"] > 1 or not p["lr"] > 0:
        raise ValueError("keep the run small, with the poisoned stretch inside it")
    return p


@lru_cache(maxsize=32)
def _run(key, response, detector_kind="right", plan_kind="right"):
    p = json.loads(key)
    with quiet_torch():
        return train(p, response,
                     lambda L, w: reference_score(L, w, detector_kind),
                     lambda s, e, m, k: reference_plan(s, e, m, k, plan_kind))


def _answers(params, detector_kind="right", plan_kind="right", measure_kind="right", final_kind="right"):
    p = _read(params)
    key = json.dumps(p, sort_keys=True)
    heights, recoveries, finals = [], [], []
    wasted = 0
    for response in RESPONSES:
        kinds = (detector_kind, plan_kind) if response == "rollback" else ("right", "right")
        eval_losses, _, rollbacks = _run(key, response, *kinds)
        h, r = spike_measures(eval_losses, p["poison_start"], measure_kind)
        heights.append(h)
        recoveries.append(r)
        finals.append(min(eval_losses) if final_kind == "best" else eval_losses[-1])
        if response == "rollback":
            wasted = sum(s - c for s, c, _ in rollbacks)
    return {
        "detector_probe": [reference_score(*c, kind=detector_kind) for c in detector_calls(p)],
        "plan_probe": [reference_plan(*c, kind=plan_kind) for c in plan_calls(p)],
        "spike_heights": heights,
        "recovery_steps": recoveries,
        "final_losses": finals,
        "wasted_updates": wasted,
    }


def _changed(q, **kw):
    return differing(_answers(q), _answers(q, **kw), rtol=1e-4, atol=1e-12)


class LossSpikeRecovery(Problem):
    id = "tds-p7-loss-spike-recovery"
    title = "A loss spike, and three ways to respond to it"
    strand = "practice"
    kind = "practice"
    assignment = "tds-practice"
    # GPT-style AdamW (betas 0.9, 0.95) at a constant rate; checkpoints every 10-25 steps and a
    # rollback margin and skip that are PaLM's "roughly 100 steps before" and "200-500 batches"
    # scaled down to a run of a few hundred steps; gradient clipping at GPT-3's 1.0 (A, C) or tighter.
    variants = {
        "A": {"seed": 0, "d_in": 8, "hidden": 32, "batch": 32, "steps": 200, "lr": 0.01,
              "poison_start": 100, "poison_len": 12, "poison_scale": 4.0, "max_norm": 1.0,
              "ckpt_every": 20, "margin": 10, "skip": 15, "spike_ratio": 8.0, "window": 10, "max_rollbacks": 3},
        "B": {"seed": 1, "d_in": 6, "hidden": 32, "batch": 32, "steps": 200, "lr": 0.008,
              "poison_start": 110, "poison_len": 8, "poison_scale": 6.0, "max_norm": 0.5,
              "ckpt_every": 25, "margin": 20, "skip": 12, "spike_ratio": 8.0, "window": 16, "max_rollbacks": 3},
        "C": {"seed": 2, "d_in": 10, "hidden": 32, "batch": 24, "steps": 180, "lr": 0.01,
              "poison_start": 95, "poison_len": 10, "poison_scale": 5.0, "max_norm": 1.0,
              "ckpt_every": 10, "margin": 15, "skip": 14, "spike_ratio": 10.0, "window": 12, "max_rollbacks": 3},
        "D": {"seed": 3, "d_in": 8, "hidden": 24, "batch": 32, "steps": 200, "lr": 0.012,
              "poison_start": 105, "poison_len": 15, "poison_scale": 3.5, "max_norm": 0.3,
              "ckpt_every": 20, "margin": 25, "skip": 20, "spike_ratio": 6.0, "window": 20, "max_rollbacks": 3},
    }
    checks = {
        "detector_probe": Outputs(rtol=1e-9, points=2.0, reference="the reference's"),
        "plan_probe": Outputs(points=2.0, reference="the reference's"),
        "spike_heights": Numbers(rtol=1e-4),
        "recovery_steps": Numbers(exact=True),
        "final_losses": Numbers(rtol=1e-4),
        "wasted_updates": Count(),
    }
    cells = {
        "check_detector": ("detector_probe",),
        "check_plan": ("plan_probe",),
        "check_responses": ("spike_heights", "recovery_steps", "final_losses", "wasted_updates"),
    }

    def probes(self, params):
        p = _read(params)
        return {"detector_probe": Probe(function=DETECTOR, calls=detector_calls(p)),
                "plan_probe": Probe(function=PLANNER, calls=plan_calls(p))}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("previous-step-baseline",
                "the detector compared the loss with the previous step's alone; mini-batch losses are noisy, "
                "so the baseline is the mean of the window of losses before the step, which also catches a "
                "climb spread over several steps.",
                lambda q: _changed(q, detector_kind="previous-only"),
                instant="the baseline a new loss is compared with."),
        Mistake("window-includes-current",
                "the window's mean included the loss being tested, which drags the baseline towards the spike; "
                "take the mean of the window losses that come before it.",
                lambda q: _changed(q, detector_kind="window-includes-current"),
                instant="which losses form the detector's window."),
        Mistake("no-margin",
                "the rollback restored the latest checkpoint at or before the detection; the damage starts "
                "some steps before a detector fires, so PaLM went back a margin (roughly 100 steps) before the "
                "spike and restored the latest checkpoint at or before that point.",
                lambda q: _changed(q, plan_kind="no-margin"),
                instant="how far back the restored checkpoint must lie."),
        Mistake("replay-the-batches",
                "no batches were skipped, so the resumed run replayed the stretch that caused the spike; PaLM "
                "skipped the batches seen between the checkpoint and the spike, and some past it.",
                lambda q: _changed(q, plan_kind="replay"),
                instant="which batches of the stream the resumed run reads."),
        Mistake("initial-loss-baseline",
                "the spike's height and recovery were measured against the held-out loss at the start of the "
                "run; measure them against the loss just before the spike, where the run was when it broke.",
                lambda q: _changed(q, measure_kind="initial-base"),
                instant="the loss a spike's height and recovery are measured against."),
        Mistake("best-not-last",
                "the final loss was the lowest held-out loss of the run; report the loss after the last "
                "update, where the run ends up.",
                lambda q: _changed(q, final_kind="best"),
                instant="which loss counts as the final loss."),
    )


PROBLEM = LossSpikeRecovery()
