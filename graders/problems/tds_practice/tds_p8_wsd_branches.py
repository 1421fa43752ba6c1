"""tds-p8-wsd-branches: one warmup-stable-decay trunk, branched into short decays at several
lengths, against a separate cosine run for each length.

Sources:
- Hu et al., "MiniCPM: Unveiling the Potential of Small Language Models with Scalable Training
  Strategies" (2024, arXiv 2404.06395), §4: the WSD schedule; a decay phase of about 10% of the
  run is enough, the loss falls sharply during it, and the stable phase can be continued and
  decayed again from any of its checkpoints, so runs of several lengths share one stable trunk.
- Hägele et al., "Scaling Laws and Compute-Optimal Training Beyond Fixed Training Durations" (2024,
  arXiv 2405.18392): a constant rate with a linear cooldown of about 20% of the run matches cosine,
  and reusing one constant-rate run for several cooldowns cuts the compute of scaling-law sweeps.
- The cosine baseline: Loshchilov and Hutter, SGDR (ICLR 2017), eq. (5), after a linear warmup,
  to a floor of 10% of the peak as in GPT-3 (Brown et al. 2020, Appendix B).
Chapter II.8 p9-wsd-vs-cosine compares one WSD run with one cosine run at one length; this item
grades the branching and its compute.

The run, exactly (the notebook's locked cell holds `make_task`, `cosine_lr`, `train_steps`,
`evaluate`, `run_cosine` and `run_branches` verbatim; a test checks that they agree): a tanh MLP
regression in float64, AdamW (betas 0.9 and 0.95), batch t of the stream at step t in every run.
Each target length L_k is branched at step L_k - D_k with D_k = round(decay_fraction * L_k); the
trunk runs once to the last branch point, each branch continues from a copy of the trunk (model
and optimiser state) at its branch point through a linear decay to the floor, ending at step L_k.

Answers: `plan_probe`, `lr_probe`, `cost_probe` (the student's `branch_plan(lengths, fraction)`,
`wsd_branch_lr(t, peak, floor, warmup, start, decay)` and `sweep_cost(plan, lengths)` on hidden
inputs); `wsd_losses` and `cosine_losses` (held-out loss at the end of each length),
`decay_drops` (held-out loss at each branch point minus at the branch's end) and
`compute_steps` ([updates of the trunk and all branches, updates of all cosine runs]).
"""
from __future__ import annotations

import copy
import json
import math
from functools import lru_cache

import numpy as np
import torch

from graders.numeric import Numbers, Outputs
from graders.problem import Mistake, Probe, Problem, seed_for
from graders.problems.common.changed import differing
from graders.problems.common.torch_runs import quiet_torch

PLAN = "branch_plan"
LR = "wsd_branch_lr"
COST = "sweep_cost"
BETAS = (0.9, 0.95)


# --- the harness: copied verbatim into the notebook's locked cell ------------------------------
def make_task(params):
    """A fresh model, the training stream (batch t at step t) and a held-out set."""
    g = torch.Generator().manual_seed(params["seed"])
    n_in, width = params["dim"], params["hidden"]
    # the data: a small random tanh network with four units, plus Gaussian noise on its output
    w_teacher = torch.randn(n_in, 4, generator=g, dtype=torch.float64) * (2.0 / n_in) ** 0.5
    a_teacher = torch.randn(4, generator=g, dtype=torch.float64)
    n_stream = max(params["lengths"]) * params["batch"]
    inputs = torch.randn(n_stream + 1024, n_in, generator=g, dtype=torch.float64)
    targets = torch.tanh(inputs @ w_teacher) @ a_teacher
    targets = targets + params["noise"] * torch.randn(len(targets), generator=g, dtype=torch.float64)
    torch.manual_seed(params["seed"])
    model = torch.nn.Sequential(torch.nn.Linear(n_in, width), torch.nn.Tanh(), torch.nn.Linear(width, 1)).double()
    return model, (inputs[:n_stream], targets[:n_stream], inputs[n_stream:], targets[n_stream:])


def cosine_lr(t, peak, floor, warmup, length):
    """Linear warmup from 0, then a cosine from the peak to the floor at step `length`."""
    if t < warmup:
        return peak * t / warmup
    phase = min(1.0, (t - warmup) / (length - warmup))
    return floor + 0.5 * (peak - floor) * (1.0 + math.cos(math.pi * phase))


def train_steps(params, model, opt, data, lr_of, start, stop):
    """Updates start .. stop - 1, update t at rate lr_of(t) on batch t."""
    x, y, b = data[0], data[1], params["batch"]
    for t in range(start, stop):
        for group in opt.param_groups:
            group["lr"] = lr_of(t)
        loss = ((model(x[t * b:(t + 1) * b]).squeeze(-1) - y[t * b:(t + 1) * b]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def evaluate(model, data):
    with torch.no_grad():
        return float(((model(data[2]).squeeze(-1) - data[3]) ** 2).mean())


def run_cosine(params, length):
    """One cosine run of `length` updates; its final held-out loss."""
    model, data = make_task(params)
    opt = torch.optim.AdamW(model.parameters(), lr=0.0, betas=(0.9, 0.95), weight_decay=params["weight_decay"])
    p = params
    train_steps(p, model, opt, data, lambda t: cosine_lr(t, p["peak_lr"], p["min_lr"], p["warmup"], length), 0, length)
    return evaluate(model, data)


def run_branches(params, plan, lr_fn):
    """One trunk, branched at each [start, decay] of `plan` (in order of start). Returns
    (results, updates): results[k] = [held-out loss at branch k's start, at its end], and the
    number of updates executed in all."""
    model, data = make_task(params)
    opt = torch.optim.AdamW(model.parameters(), lr=0.0, betas=(0.9, 0.95), weight_decay=params["weight_decay"])
    p, done, updates, results = params, 0, 0, []
    for start, decay in plan:
        def lr_of(t, start=start, decay=decay):
            return lr_fn(t, p["peak_lr"], p["min_lr"], p["warmup"], start, decay)
        train_steps(p, model, opt, data, lr_of, done, start)          # the trunk, up to this branch point
        updates, done = updates + start - done, start
        at_start = evaluate(model, data)
        branch = copy.deepcopy(model)
        branch_opt = torch.optim.AdamW(branch.parameters(), lr=0.0, betas=(0.9, 0.95),
                                       weight_decay=p["weight_decay"])
        branch_opt.load_state_dict(copy.deepcopy(opt.state_dict()))   # Adam's moments go with the branch
        train_steps(p, branch, branch_opt, data, lr_of, start, start + decay)
        updates += decay
        results.append([at_start, evaluate(branch, data)])
    return results, updates
# --- end of the harness ------------------------------------------------------------------------


# --- the student's functions, right and wrong ----------------------------------------------------
def reference_plan(lengths, fraction, kind="right"):
    """[[start, decay], ...] per length, in the order of the lengths."""
    longest = max(lengths)
    out = []
    for L in lengths:
        decay = int(round(fraction * (longest if kind == "fixed-decay" else L)))
        out.append([int(L) - decay, decay])
    return out


def reference_lr(t, peak, floor, warmup, start, decay, kind="right"):
    low = 0.0 if kind == "to-zero" else floor
    if t < warmup:
        return peak * t / warmup
    if t <= start:
        return peak
    return peak - (peak - low) * min(1.0, (t - start) / decay)


def reference_cost(plan, lengths, kind="right"):
    """[updates of one trunk plus its branches, updates of a cosine run per length]."""
    if kind == "trunk-per-branch":
        wsd = sum(s + d for s, d in plan)
    elif kind == "trunk-to-longest":
        wsd = max(lengths) + sum(d for _, d in plan)
    else:
        wsd = max(s for s, _ in plan) + sum(d for _, d in plan)
    return [int(wsd), int(sum(lengths))]


def plan_calls(params):
    rng = np.random.default_rng(seed_for(params, "tds-p8-plan"))
    calls = [[list(params["lengths"]), params["decay_fraction"]]]
    for _ in range(4):
        base = int(rng.choice([40, 80, 200, 1000]))
        k = int(rng.integers(2, 6))
        lengths = sorted({base * int(m) for m in rng.choice([1, 2, 3, 4, 6, 8, 10], size=k, replace=False)})
        calls.append([lengths, float(rng.choice([0.1, 0.2, 0.25]))])
    return calls


def lr_calls(params):
    rng = np.random.default_rng(seed_for(params, "tds-p8-lr"))
    p = params
    calls = []
    for start, decay in reference_plan(p["lengths"], p["decay_fraction"]):
        for t in (0, p["warmup"] // 2, p["warmup"], start, start + decay // 2, start + decay, start + decay + 5):
            calls.append([t, p["peak_lr"], p["min_lr"], p["warmup"], start, decay])
    peak = float(round(10 ** rng.uniform(-4, -3), 7))
    W, S, D = int(rng.integers(200, 2000)), int(rng.integers(20_000, 80_000)), int(rng.integers(2_000, 10_000))
    for t in (W // 3, W + 7, S - 1, S + D // 3, S + D):
        calls.append([t, peak, peak / 10, W, S, D])
    return calls


def cost_calls(params):
    calls = []
    for lengths, fraction in plan_calls(params):
        calls.append([reference_plan(lengths, fraction), lengths])
    return calls


# --- the runs --------------------------------------------------------------------------------------
def _read(q):
    p = {}
    for name, low in (("seed", 0), ("dim", 1), ("hidden", 1), ("batch", 1), ("warmup", 1)):
        v = q[name]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v < low:
            raise ValueError(f"{name} must be a whole number >= {low}, not {v!r}")
        p[name] = int(v)
    for name in ("noise", "peak_lr", "min_lr", "weight_decay", "decay_fraction"):
        p[name] = float(q[name])
    p["lengths"] = [int(v) for v in q["lengths"]]
    if p["lengths"] != sorted(set(p["lengths"])) or len(p["lengths"]) < 2 or not 0 < p["decay_fraction"] < 1 \
            or max(p["lengths"]) * p["batch"] > 100_000 or not 0 <= p["min_lr"] <= p["peak_lr"]:
        raise ValueError("lengths increasing, a decay fraction in (0, 1), a small run")
    for start, decay in reference_plan(p["lengths"], p["decay_fraction"]):
        if start <= p["warmup"] or decay < 1:
            raise ValueError("every branch point must come after the warmup")
    return p


@lru_cache(maxsize=32)
def _cosine(key):
    p = json.loads(key)
    with quiet_torch():
        return [run_cosine(p, L) for L in p["lengths"]]


@lru_cache(maxsize=32)
def _branches(key, plan_kind, lr_kind):
    p = json.loads(key)
    plan = reference_plan(p["lengths"], p["decay_fraction"], plan_kind)
    with quiet_torch():
        results, updates = run_branches(p, sorted(plan), lambda *a: reference_lr(*a, kind=lr_kind))
    order = sorted(range(len(plan)), key=lambda k: plan[k])
    back = [None] * len(plan)
    for rank, k in enumerate(order):
        back[k] = results[rank]
    return back, updates


def _answers(params, plan_kind="right", lr_kind="right", cost_kind="right"):
    p = _read(params)
    key = json.dumps(p, sort_keys=True)
    results, _ = _branches(key, plan_kind, lr_kind)
    plan = reference_plan(p["lengths"], p["decay_fraction"], plan_kind)
    return {
        "plan_probe": [reference_plan(*c, kind=plan_kind) for c in plan_calls(p)],
        "lr_probe": [reference_lr(*c, kind=lr_kind) for c in lr_calls(p)],
        "cost_probe": [reference_cost(*c, kind=cost_kind) for c in cost_calls(p)],
        "wsd_losses": [end for _, end in results],
        "cosine_losses": list(_cosine(key)),
        "decay_drops": [start - end for start, end in results],
        "compute_steps": reference_cost(plan, p["lengths"], cost_kind),
    }


def _changed(q, **kw):
    return differing(_answers(q), _answers(q, **kw), rtol=1e-6, atol=1e-12)


class WsdBranches(Problem):
    id = "tds-p8-wsd-branches"
    title = "One warmup-stable-decay trunk, several lengths: the branches and their compute"
    strand = "practice"
    kind = "practice"
    assignment = "tds-practice"
    # Small runs (AdamW, betas 0.9/0.95, batch 16 at a high peak rate so that the stable phase is
    # noisy, floor 10% of the peak as in GPT-3) at three or four lengths, as a scaling-law sweep
    # over data would be; decays of 20% (Hägele et al.'s cooldown), 10% (MiniCPM's), 25% and 15%.
    variants = {
        "A": {"seed": 22, "dim": 8, "hidden": 32, "batch": 16, "noise": 0.3, "peak_lr": 0.05, "min_lr": 0.005,
              "warmup": 20, "weight_decay": 0.1, "lengths": [100, 200, 400], "decay_fraction": 0.2},
        "B": {"seed": 25, "dim": 6, "hidden": 24, "batch": 16, "noise": 0.4, "peak_lr": 0.05, "min_lr": 0.005,
              "warmup": 20, "weight_decay": 0.1, "lengths": [80, 160, 240, 320], "decay_fraction": 0.1},
        "C": {"seed": 23, "dim": 8, "hidden": 32, "batch": 16, "noise": 0.3, "peak_lr": 0.05, "min_lr": 0.005,
              "warmup": 16, "weight_decay": 0.05, "lengths": [80, 160, 320], "decay_fraction": 0.25},
        "D": {"seed": 24, "dim": 10, "hidden": 16, "batch": 16, "noise": 0.3, "peak_lr": 0.05, "min_lr": 0.005,
              "warmup": 12, "weight_decay": 0.1, "lengths": [60, 120, 180, 240], "decay_fraction": 0.15},
    }
    checks = {
        "plan_probe": Outputs(reference="the reference's"),
        "lr_probe": Outputs(rtol=1e-9, atol=1e-15, reference="the reference's"),
        "cost_probe": Outputs(reference="the reference's"),
        "wsd_losses": Numbers(rtol=1e-4, points=2.0),
        "cosine_losses": Numbers(rtol=1e-4),
        "decay_drops": Numbers(rtol=1e-3),
        "compute_steps": Numbers(exact=True),
    }
    cells = {
        "check_plan": ("plan_probe", "lr_probe"),
        "check_cost": ("cost_probe",),
        "check_runs": ("wsd_losses", "cosine_losses", "decay_drops", "compute_steps"),
    }

    def probes(self, params):
        p = _read(params)
        return {"plan_probe": Probe(function=PLAN, calls=plan_calls(p)),
                "lr_probe": Probe(function=LR, calls=lr_calls(p)),
                "cost_probe": Probe(function=COST, calls=cost_calls(p))}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("one-decay-for-all",
                "every branch used the decay length of the longest run; each length gets its own decay, the "
                "same fraction of that length (Hägele et al.'s cooldown is a fraction of each run).",
                lambda q: _changed(q, plan_kind="fixed-decay"),
                instant="what each branch's decay length is a fraction of."),
        Mistake("decay-to-zero",
                "the branch's decay went to zero; it ends at the floor min_lr, like the cosine it is compared with.",
                lambda q: _changed(q, lr_kind="to-zero"),
                instant="where a branch's decay ends."),
        Mistake("trunk-per-branch",
                "each branch was charged its own stable phase from step 0; the trunk is run once and shared, so "
                "it is counted once, up to the last branch point.",
                lambda q: _changed(q, cost_kind="trunk-per-branch"),
                instant="how often the shared stable phase is paid for."),
        Mistake("trunk-to-longest",
                "the trunk was counted to the longest length; it only runs to the last branch point, and that "
                "branch's decay covers the rest.",
                lambda q: _changed(q, cost_kind="trunk-to-longest"),
                instant="where the shared stable phase ends."),
    )


PROBLEM = WsdBranches()
