"""p6-resume-bit-for-bit: save a checkpoint, resume from it, and get the same loss curve, bit for bit.

The run: a small classifier (8 -> h -> h -> 4 with GELU and dropout 0.1), AdamW (betas
0.9 and 0.95, weight decay 0.1), a LambdaLR schedule (linear warmup, cosine decay to 10%),
global clipping at 1.0, batches of 32 drawn with torch.randint from the global torch RNG,
which also draws the dropout masks. Everything that decides the next step must be in the
checkpoint: the model's weights, AdamW's two moments and its per-tensor step counters, the
scheduler's position, and the CPU RNG state (torch.get_rng_state: 5,056 bytes, the
Mersenne Twister's 624 words kept as 64-bit slots, plus bookkeeping). The student writes
`save_checkpoint(model, optimizer, scheduler)` and `load_checkpoint(checkpoint, model,
optimizer, scheduler)`. A locked harness (mirrored here, and checked against the notebook
in the tests) runs to `total_steps`, taking a checkpoint at `save_at` and carrying on, then
plays a restart: the same script with the same seed builds fresh objects (which replays
the initial RNG draws), loads the checkpoint and trains from `save_at` to the end.

Each forgotten piece fails visibly, at its own step (s = save_at): without the RNG state
the resumed run replays the first batches and dropout masks, so the loss differs at step
s itself; without the optimizer state the first resumed update differs (zero moments, and
the fresh scheduler's initial rate left in the optimizer), so step s + 1 differs; without
the scheduler state the optimizer's own param_groups still carry the right rate for one
update, and the fresh scheduler's first step() overwrites it, so step s + 2 differs. A
checkpoint that holds references instead of copies (nn.Module.state_dict and
Optimizer.state_dict return the live tensors; torch's own docstring says "The returned
object is a shallow copy. It contains references to the module's parameters and buffers")
is overwritten by the training that continues after the save.

The RNG, model, optimizer and scheduler pieces are what Megatron-LM's checkpointing.py
saves (with Python's, numpy's and the CUDA RNG states as well; flags --no-save-rng and
--no-load-rng turn that off).
"""
from __future__ import annotations

import copy
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
from graders.symbolic import Expr, symbols_for

FUNCTION = "resume_curves"
N_EXAMPLES, N_IN, N_CLASSES, BATCH = 256, 8, 4, 32
RNG_STATE_BYTES = 5056        # torch.get_rng_state().numel() on the CPU (uint8)
FP32_BYTES = 4
_S = symbols_for(("N", "n_tensors"))
N_SYM, N_TENSORS_SYM = _S["N"], _S["n_tensors"]


# --- the harness (the notebook's locked cell runs the same code) -----------------------------
def make_data(seed):
    g = torch.Generator().manual_seed(1000 + seed)
    x = torch.randn(N_EXAMPLES, N_IN, generator=g)
    w = torch.randn(N_IN, N_CLASSES, generator=g)
    y = (x @ w + 0.5 * torch.randn(N_EXAMPLES, N_CLASSES, generator=g)).argmax(dim=1)
    return x, y


def lr_factor(step, warmup_steps, total_steps):
    """Linear warmup to 1, then cosine decay to 0.1."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))


def make_run(seed, hidden, lr, warmup_steps, total_steps):
    """Seed, then build the model, AdamW and the LambdaLR schedule, as a training script does."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(N_IN, hidden), nn.GELU(), nn.Dropout(0.1), nn.Linear(hidden, hidden),
                          nn.GELU(), nn.Linear(hidden, N_CLASSES))
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: lr_factor(step, warmup_steps, total_steps))
    return model, optimizer, scheduler


def train_step(model, optimizer, scheduler, data):
    """One step on a batch drawn from the global torch RNG; returns the loss."""
    x, y = data
    idx = torch.randint(0, N_EXAMPLES, (BATCH,))
    model.train()
    loss = F.cross_entropy(model(x[idx]), y[idx])
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    scheduler.step()
    return loss.item()


def resume_curves(seed, hidden, total_steps, save_at, lr, warmup_steps, save, load):
    """[losses of the uninterrupted run, losses of the run restarted from the checkpoint at save_at]."""
    data = make_data(seed)
    model, optimizer, scheduler = make_run(seed, hidden, lr, warmup_steps, total_steps)
    straight, checkpoint = [], None
    for step in range(total_steps):
        if step == save_at:
            checkpoint = save(model, optimizer, scheduler)
        straight.append(train_step(model, optimizer, scheduler, data))
    # the restart: the same script, the same seed, fresh objects, then the checkpoint
    model, optimizer, scheduler = make_run(seed, hidden, lr, warmup_steps, total_steps)
    load(checkpoint, model, optimizer, scheduler)
    resumed = straight[:save_at] + [train_step(model, optimizer, scheduler, data)
                                    for _ in range(save_at, total_steps)]
    return [straight, resumed]
# --- end of the harness ------------------------------------------------------------------------


def reference_save(model, optimizer, scheduler, kind="right"):
    checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                  "scheduler": scheduler.state_dict(), "rng": torch.get_rng_state()}
    if kind == "no-rng":
        del checkpoint["rng"]
    if kind == "no-optimizer":
        del checkpoint["optimizer"]
    if kind == "no-scheduler":
        del checkpoint["scheduler"]
    return checkpoint if kind == "no-copy" else copy.deepcopy(checkpoint)


def reference_load(checkpoint, model, optimizer, scheduler):
    model.load_state_dict(checkpoint["model"])
    if "optimizer" in checkpoint:
        optimizer.load_state_dict(checkpoint["optimizer"])
    if "scheduler" in checkpoint:
        scheduler.load_state_dict(checkpoint["scheduler"])
    if "rng" in checkpoint:
        torch.set_rng_state(checkpoint["rng"])


def curves(q, kind="right"):
    save = functools.partial(reference_save, kind=kind)
    return resume_curves(q["seed"], q["hidden"], q["total_steps"], q["save_at"], q["lr"],
                         q["warmup_steps"], save, reference_load)


def tensor_bytes(obj) -> int:
    """Bytes of tensor data in a (nested) checkpoint."""
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, dict):
        return sum(tensor_bytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(tensor_bytes(v) for v in obj)
    return 0


def checkpoint_at(q, kind="right"):
    data = make_data(q["seed"])
    model, optimizer, scheduler = make_run(q["seed"], q["hidden"], q["lr"], q["warmup_steps"], q["total_steps"])
    for _ in range(q["save_at"]):
        train_step(model, optimizer, scheduler, data)
    return reference_save(model, optimizer, scheduler, kind)


def parameter_count(hidden) -> int:
    return (N_IN + 1) * hidden + (hidden + 1) * hidden + (hidden + 1) * N_CLASSES


def first_difference(a, b) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), -1)


def first_divergence(q, kind) -> int:
    """The first step at which a resume that forgets one piece differs (the harness's run, cut
    three steps after the checkpoint: every forgotten piece shows by then)."""
    stop = q["save_at"] + 3
    data = make_data(q["seed"])
    model, optimizer, scheduler = make_run(q["seed"], q["hidden"], q["lr"], q["warmup_steps"], q["total_steps"])
    straight, checkpoint = [], None
    for step in range(stop):
        if step == q["save_at"]:
            checkpoint = reference_save(model, optimizer, scheduler, kind)
        straight.append(train_step(model, optimizer, scheduler, data))
    model, optimizer, scheduler = make_run(q["seed"], q["hidden"], q["lr"], q["warmup_steps"], q["total_steps"])
    reference_load(checkpoint, model, optimizer, scheduler)
    resumed = straight[:q["save_at"]] + [train_step(model, optimizer, scheduler, data)
                                         for _ in range(q["save_at"], stop)]
    return first_difference(straight, resumed)


def probe_calls(params: dict) -> list:
    """Hidden calls [seed, hidden, total_steps, save_at, lr, warmup_steps]: one save inside warmup, one after."""
    rng = np.random.default_rng(seed_for(params, "p6-resume-bit-for-bit"))
    seeds = [int(s) for s in rng.integers(100, 10_000, size=2)]
    return [
        [seeds[0], int(rng.choice([16, 24])), 20, int(rng.integers(2, 5)), 3e-3, 6],
        [seeds[1], int(rng.choice([24, 32])), 22, int(rng.integers(12, 17)), 1e-2, 4],
    ]


def _check_params(q):
    for key in ("seed", "hidden", "total_steps", "save_at", "warmup_steps"):
        if isinstance(q[key], bool) or int(q[key]) != q[key]:
            raise ValueError(f"{key} must be a whole number")
    if not 0 < q["save_at"] < q["total_steps"] - 2:
        raise ValueError("save_at must leave at least three steps after the checkpoint")
    if q["hidden"] < 1 or q["warmup_steps"] < 1 or not float(q["lr"]) > 0:
        raise ValueError("hidden and warmup_steps must be positive, lr too")


@functools.lru_cache(maxsize=64)
def _solve(text: str, kind: str) -> dict:
    q = json.loads(text)
    _check_params(q)
    save = functools.partial(reference_save, kind=kind)
    with quiet_torch():
        probe = [resume_curves(*call, save, reference_load) for call in probe_calls(q)]
        straight, resumed = curves(q, kind)
        broken = {}
        if kind == "right":
            for piece in ("no-rng", "no-optimizer", "no-scheduler"):
                broken[piece] = first_divergence(q, piece)
        nbytes = tensor_bytes(checkpoint_at(q, kind))
    out = {
        "resume_probe": probe,
        "resumed_losses": resumed[q["save_at"]:],
        "max_gap": max(abs(a - b) for a, b in zip(straight, resumed)),
        "checkpoint_bytes": nbytes,
    }
    if kind == "right":
        out["first_diverging_steps"] = [broken["no-rng"], broken["no-optimizer"], broken["no-scheduler"]]
    return out


def bytes_expr(kind="right"):
    weights, moments = FP32_BYTES * N_SYM, 2 * FP32_BYTES * N_SYM
    steps, rng = FP32_BYTES * N_TENSORS_SYM, RNG_STATE_BYTES
    if kind == "no-rng":
        return weights + moments + steps
    if kind == "one-moment":
        return weights + FP32_BYTES * N_SYM + steps + rng
    return weights + moments + steps + rng


def solve_kind(q: dict, kind: str = "right") -> dict:
    out = dict(_solve(json.dumps(q, sort_keys=True), kind))
    out["checkpoint_bytes_expr"] = bytes_expr(kind)
    return out


def _wrong_kind(kind, keys):
    def wrong(q):
        out = solve_kind(q, kind)
        return {k: out[k] for k in keys}
    return wrong


RUN_KEYS = ("resume_probe", "resumed_losses", "max_gap")


class ResumeProblem(Problem):
    id = "p6-resume-bit-for-bit"
    title = "Break it: resume from a checkpoint, bit for bit"
    strand = "practice"
    kind = "practice"
    assignment = "practice"
    symbols = ("N", "n_tensors")
    variants = {
        "A": {"seed": 0, "hidden": 32, "total_steps": 30, "save_at": 12, "lr": 0.003, "warmup_steps": 5},
        "B": {"seed": 1, "hidden": 24, "total_steps": 30, "save_at": 4, "lr": 0.003, "warmup_steps": 8},
        "C": {"seed": 2, "hidden": 40, "total_steps": 24, "save_at": 17, "lr": 0.01, "warmup_steps": 4},
        "D": {"seed": 3, "hidden": 16, "total_steps": 28, "save_at": 9, "lr": 0.005, "warmup_steps": 6},
    }
    checks = {
        "resume_probe": Outputs(rtol=1e-6, atol=1e-9, points=3.0),
        "resumed_losses": Numbers(rtol=1e-6),
        "max_gap": Number(rtol=0.0, atol=0.0),
        "first_diverging_steps": Numbers(exact=True),
        "checkpoint_bytes": Count(),
        "checkpoint_bytes_expr": Expr(symbols=("N", "n_tensors")),
    }
    cells = {
        "check_resume": ("resume_probe",),
        "check_curve": ("resumed_losses", "max_gap"),
        "check_broken": ("first_diverging_steps",),
        "check_bytes": ("checkpoint_bytes", "checkpoint_bytes_expr"),
    }

    def probes(self, params):
        return {"resume_probe": Probe(function=FUNCTION, calls=probe_calls(params))}

    def solve(self, params):
        return solve_kind(params)

    mistakes = (
        Mistake(
            "no-rng",
            "the RNG state was not restored, so the restarted run drew its batches and dropout masks from "
            "a fresh seed and replayed the start of the data; save torch.get_rng_state() and restore it "
            "with torch.set_rng_state().",
            _wrong_kind("no-rng", RUN_KEYS + ("checkpoint_bytes", "checkpoint_bytes_expr")),
            instant="the state of the random-number generator.",
        ),
        Mistake(
            "no-optimizer",
            "the optimizer state was not restored: AdamW restarted with zero moments and a step count of "
            "0 (and the learning rate the fresh scheduler set). Save and load optimizer.state_dict().",
            _wrong_kind("no-optimizer", RUN_KEYS + ("checkpoint_bytes",)),
            instant="the optimizer's state.",
        ),
        Mistake(
            "no-scheduler",
            "the scheduler state was not restored, so the schedule started again from step 0 one update "
            "after the resume; save and load scheduler.state_dict().",
            _wrong_kind("no-scheduler", RUN_KEYS),
            instant="the scheduler's state.",
        ),
        Mistake(
            "no-copy",
            "the checkpoint held references to the live tensors (state_dict() does not copy), so the "
            "training that went on after the save overwrote it; copy it (copy.deepcopy, or torch.save).",
            _wrong_kind("no-copy", RUN_KEYS),
            instant="whether a state_dict copies the tensors it holds.",
        ),
        Mistake(
            "scheduler-at-once",
            "a forgotten scheduler does not show at the first resumed update: the optimizer's state_dict "
            "carries the current learning rate in its param_groups, and only the fresh scheduler's first "
            "step() replaces it.",
            lambda q: {"first_diverging_steps": [q["save_at"], q["save_at"] + 1, q["save_at"] + 1]},
            instant="where the learning rate of the first resumed update comes from.",
        ),
        Mistake(
            "one-moment",
            "AdamW keeps two moments per parameter (the mean of the gradient and the mean of its square), "
            "each in fp32.",
            lambda q: {"checkpoint_bytes_expr": bytes_expr("one-moment")},
            instant="the state AdamW keeps for each parameter.",
        ),
    )


PROBLEM = ResumeProblem()
