# %% [markdown]
# # p6-resume-bit-for-bit · Break it: resume from a checkpoint, bit for bit
#
# *Chapter II.8 Training at Scale · practice · break it · 6 of 9*
#
# A long run stops many times: a node dies, a job hits its time limit, the loss diverges and you
# go back a hundred steps (the PaLM team did that about twenty times, p5-loss-spike). Each time
# the run resumes from a checkpoint. A good resume is invisible: the loss curve after the restart
# is the curve the run would have drawn without it, **bit for bit**. Then a restart costs only the
# steps since the last save, and an experiment that starts from a checkpoint (an ablation, a
# replay of the batches around a spike) starts from exactly the state the run was in.
#
# In this notebook you write the save and the load, prove the resumed curve identical, and then
# break it on purpose, one missing piece at a time, to see when and how each one shows.
#
# Sources: the PyTorch documentation of `nn.Module.state_dict` and `Optimizer.state_dict`
# (what they contain, and that they return references, not copies), of `torch.get_rng_state`,
# and of `torch.optim.lr_scheduler`; Megatron-LM's `checkpointing.py`, which saves the model,
# the optimizer, the scheduler and the Python, numpy, torch and CUDA RNG states (and has flags
# `--no-save-rng`/`--no-load-rng` to turn the last off); Loshchilov and Hutter, *Decoupled
# Weight Decay Regularization* (ICLR 2019), Algorithm 2, for AdamW's state.

# %% [markdown]
# ## 1. What decides the next step
#
# Write the next training step as a function of everything it reads. Here that is:
#
# - the **weights**;
# - the **optimizer state**: AdamW keeps, for every parameter tensor, the running mean of the
#   gradient $m$, the running mean of its square $v$ (both the shape of the tensor, in fp32), and
#   a step counter used for bias correction; its `param_groups` also carry the current learning
#   rate;
# - the **scheduler's position**: `LambdaLR` remembers how many times `step()` was called;
# - the **random number generator**: this run draws every batch with `torch.randint` from the
#   global torch RNG, and the dropout masks from the same generator. Its state,
#   `torch.get_rng_state()`, is a tensor of 5,056 bytes: the Mersenne Twister's 624 words, each
#   stored in a 64-bit slot, and a little bookkeeping.
#
# Two traps. `state_dict()` returns **references** to the live tensors, not copies (the PyTorch
# docstring says so); if training continues after the save, a checkpoint kept in memory changes
# with it. And a restarted script seeds itself and builds its model again, which replays the
# first draws of the RNG: unless the RNG state is restored, the resumed run sees the batches of
# the first steps again.
#
# A real run has more pieces (Python's and numpy's RNGs, one CUDA RNG per device, the data
# loader's position, a dynamic loss scaler's scale, p1 and e05); this one is built so that the
# four above are all there is.
#
# **What a checkpoint holds (the chapter's definition).** A training checkpoint holds
# everything the next step reads and cannot recompute: the fp32 weights (in mixed precision,
# the fp32 master copy), the optimiser's state, the learning-rate scheduler's state, the
# random number generators' states and the position in the data, and, with fp16, the
# GradScaler's state. For Adam that is 4 + 4 + 4 = 12 bytes per parameter. The 16-bit copy
# of the weights is not part of it: it is a cast of the fp32 master weights, and the same
# cast on loading gives the same bits. It is saved only when the checkpoint must also serve
# as a model that loads without its optimiser (for evaluation, export or serving); DeepSpeed
# and Megatron-LM, for instance, write the 16-bit module weights beside the fp32 optimiser
# state, and then the checkpoint is 2 + 12 = 14 bytes per parameter.
#
# This run trains in fp32, so there is no 16-bit copy at all: its fp32 weights and AdamW's two
# moments are the 12 bytes per parameter, plus the step counters and the RNG state.

# %% [markdown]
# ## 2. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id. On
# JupyterHub that is your hub user name; working on your own machine, start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab` so that you see the variant the grader uses.
# Editing this cell does not change what you are graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import sympy as sp

N, n_tensors = sp.symbols("N n_tensors", positive=True)   # parameter count; number of parameter tensors

VARIANTS = {
    "A": {"seed": 0, "hidden": 32, "total_steps": 30, "save_at": 12, "lr": 0.003, "warmup_steps": 5},
    "B": {"seed": 1, "hidden": 24, "total_steps": 30, "save_at": 4, "lr": 0.003, "warmup_steps": 8},
    "C": {"seed": 2, "hidden": 40, "total_steps": 24, "save_at": 17, "lr": 0.01, "warmup_steps": 4},
    "D": {"seed": 3, "hidden": 16, "total_steps": 28, "save_at": 9, "lr": 0.005, "warmup_steps": 6},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"practice:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: seed {params['seed']}, hidden width {params['hidden']}, "
      f"{params['total_steps']} steps, checkpoint at step {params['save_at']}, lr {params['lr']}, "
      f"warmup {params['warmup_steps']} steps")

# %% [markdown]
# ## 3. The harness
#
# Given and locked. `make_run(seed, hidden, lr, warmup_steps, total_steps)` does what the top
# of a training script does: seed the RNG, build the model (8 → hidden → hidden → 4, GELU,
# dropout 0.1), AdamW ($\beta = (0.9, 0.95)$, weight decay 0.1) and a `LambdaLR` schedule (linear
# warmup, cosine decay to 10%). `train_step` draws a batch of 32 from the global RNG, clips the
# gradient norm at 1.0, steps the optimizer and the scheduler, and returns the loss.
#
# `resume_curves(seed, hidden, total_steps, save_at, lr, warmup_steps)` trains for `total_steps`,
# calling **your** `save_checkpoint` before step `save_at` and carrying on to the end. Then it
# plays a restart: `make_run` again (same seed, fresh objects), **your** `load_checkpoint`, and
# training from step `save_at` to the end. It returns `[straight, resumed]`: the loss at every
# step of the uninterrupted run, and of the restarted run (whose first `save_at` entries are the
# ones logged before the checkpoint). You can pass other `save=` and `load=` functions.

# %% nbgrader={"grade": false, "grade_id": "harness", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)   # tiny tensors: one thread is fastest, and the numbers never depend on it
N_EXAMPLES, N_IN, N_CLASSES, BATCH = 256, 8, 4, 32


# chapter: include graders.problems.practice.p6_resume_bit_for_bit.make_data


# chapter: include graders.problems.practice.p6_resume_bit_for_bit.lr_factor


# chapter: include graders.problems.practice.p6_resume_bit_for_bit.make_run


# chapter: include graders.problems.practice.p6_resume_bit_for_bit.train_step


def resume_curves(seed, hidden, total_steps, save_at, lr, warmup_steps, save=None, load=None):
    """[losses of the uninterrupted run, losses of the run restarted from the checkpoint at save_at]."""
    save = save or save_checkpoint
    load = load or load_checkpoint
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


# %% [markdown]
# ## 4. Build the save and the load
#
# Write `save_checkpoint(model, optimizer, scheduler)`, which returns a checkpoint (a dict is
# fine) holding **copies** of the four pieces of section 1, and `load_checkpoint(checkpoint,
# model, optimizer, scheduler)`, which puts them back into freshly built objects. The grader runs
# `resume_curves` with your two functions on hidden runs, one saved during warmup and one after,
# and compares both curves with torch's.

# %% nbgrader={"grade": false, "grade_id": "answer_checkpoint", "locked": false, "schema_version": 3, "solution": true, "task": false}
def save_checkpoint(model, optimizer, scheduler):
    """Everything the next step depends on, copied."""
    ### BEGIN SOLUTION
    return copy.deepcopy({
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "rng": torch.get_rng_state(),
    })
    ### END SOLUTION


def load_checkpoint(checkpoint, model, optimizer, scheduler):
    """Put a checkpoint back into freshly built objects."""
    ### BEGIN SOLUTION
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    torch.set_rng_state(checkpoint["rng"])
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_resume", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the hidden test runs resume_curves with your functions on hidden runs.
_c = resume_curves(5, 8, 6, 2, 1e-3, 2)
assert len(_c) == 2 and len(_c[0]) == 6 and len(_c[1]) == 6, "resume_curves gives two curves of total_steps losses"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p6-resume-bit-for-bit", "check_resume", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 5. Prove it on your variant
#
# - `resumed_losses`: the losses of the restarted run from step `save_at` to the end (a list);
# - `max_gap`: the largest absolute difference between the two curves over the whole run. Bit
#   for bit means exactly `0.0`, not "small".

# %% nbgrader={"grade": false, "grade_id": "answer_curve", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_q = params
straight, resumed = resume_curves(_q["seed"], _q["hidden"], _q["total_steps"], _q["save_at"], _q["lr"],
                                  _q["warmup_steps"])
resumed_losses = resumed[_q["save_at"]:]
max_gap = max(abs(a - b) for a, b in zip(straight, resumed))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_curve", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
import numbers

assert len(resumed_losses) == params["total_steps"] - params["save_at"], "one loss per resumed step"
assert isinstance(max_gap, numbers.Real), "max_gap is a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p6-resume-bit-for-bit", "check_curve", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 6. Break it, one piece at a time
#
# Write three broken loaders, each of which forgets one piece: the RNG state, the optimizer
# state, the scheduler state (keep the other three). Run your variant with each through
# `resume_curves(..., load=...)`, and find the first step whose loss differs from the
# uninterrupted run. Report `first_diverging_steps` as the list `[without RNG, without optimizer,
# without scheduler]`.
#
# Before you run it, predict the three steps. The answer is not the same for all three, and the
# reason for each is in section 1.

# %% nbgrader={"grade": false, "grade_id": "answer_broken", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def load_forgetting(piece):
    def load(checkpoint, model, optimizer, scheduler):
        model.load_state_dict(checkpoint["model"])
        if piece != "optimizer":
            optimizer.load_state_dict(checkpoint["optimizer"])
        if piece != "scheduler":
            scheduler.load_state_dict(checkpoint["scheduler"])
        if piece != "rng":
            torch.set_rng_state(checkpoint["rng"])
    return load


def first_diverging(piece):
    a, b = resume_curves(_q["seed"], _q["hidden"], _q["total_steps"], _q["save_at"], _q["lr"],
                         _q["warmup_steps"], load=load_forgetting(piece))
    return next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)


first_diverging_steps = [first_diverging(piece) for piece in ("rng", "optimizer", "scheduler")]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_broken", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the steps are checked when your notebook is graded.
assert len(first_diverging_steps) == 3, "three steps: without RNG, without optimizer, without scheduler"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p6-resume-bit-for-bit", "check_broken", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 7. What a checkpoint weighs
#
# A checkpoint is part of the chapter's accounting: its size sets how long a save takes and how
# often you can afford one. For a model of $N$ parameters in $n_\text{tensors}$ parameter tensors trained with
# AdamW in fp32, with the CPU RNG state:
#
# - `checkpoint_bytes_expr`: the bytes of tensor data in a checkpoint of the four pieces, as a
#   sympy expression in `N` and `n_tensors` (defined in the setup cell); the scheduler holds no tensors;
# - `checkpoint_bytes`: the bytes of tensor data (the sum of `numel() * element_size()` over
#   every tensor) in the checkpoint your `save_checkpoint` takes at step `save_at` of your
#   variant's run (if your checkpoint is serialized bytes, count the tensors of the dict you
#   serialized). Check it against your expression.

# %% nbgrader={"grade": false, "grade_id": "answer_bytes", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def tensor_bytes(obj):
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, dict):
        return sum(tensor_bytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(tensor_bytes(v) for v in obj)
    return 0


_model, _opt, _sched = make_run(_q["seed"], _q["hidden"], _q["lr"], _q["warmup_steps"], _q["total_steps"])
_data = make_data(_q["seed"])
for _ in range(_q["save_at"]):
    train_step(_model, _opt, _sched, _data)
checkpoint_bytes = tensor_bytes(save_checkpoint(_model, _opt, _sched))
weights, moments, step_counters = 4 * N, 2 * 4 * N, 4 * n_tensors
rng_bytes = torch.get_rng_state().numel()
checkpoint_bytes_expr = weights + moments + step_counters + rng_bytes
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_bytes", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the count and the mathematics are checked when your notebook is graded.
import numbers

assert isinstance(checkpoint_bytes, numbers.Integral), "checkpoint_bytes is a count (int)"
assert isinstance(checkpoint_bytes_expr, sp.Expr), "checkpoint_bytes_expr should be a sympy expression"
assert {x.name for x in checkpoint_bytes_expr.free_symbols} <= {x.name for x in (N, n_tensors)}, "use only the symbols N and n_tensors"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p6-resume-bit-for-bit", "check_bytes", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 8. Look at it
#
# The gap between each resumed curve and the uninterrupted one, step by step (zero is drawn at
# the bottom of the log axis). The correct resume never leaves the floor.

# %%
import matplotlib.pyplot as plt


def _reference_load(checkpoint, model, optimizer, scheduler, forget=None):
    model.load_state_dict(checkpoint["model"])
    if forget != "optimizer":
        optimizer.load_state_dict(checkpoint["optimizer"])
    if forget != "scheduler":
        scheduler.load_state_dict(checkpoint["scheduler"])
    if forget != "rng":
        torch.set_rng_state(checkpoint["rng"])


def _safe_save(model, optimizer, scheduler):
    return copy.deepcopy({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                          "scheduler": scheduler.state_dict(), "rng": torch.get_rng_state()})


_q = params
_args = (_q["seed"], _q["hidden"], _q["total_steps"], _q["save_at"], _q["lr"], _q["warmup_steps"])
fig, ax = plt.subplots(figsize=(10, 3.6))
for _forget, _label in ((None, "everything restored"), ("rng", "RNG state forgotten"),
                        ("optimizer", "optimizer state forgotten"), ("scheduler", "scheduler state forgotten")):
    _a, _b = resume_curves(*_args, save=_safe_save,
                           load=lambda c, m, o, s, f=_forget: _reference_load(c, m, o, s, f))
    ax.plot([max(abs(x - y), 1e-9) for x, y in zip(_a, _b)], marker=".", label=_label)
ax.axvline(_q["save_at"], color="k", ls=":", label="checkpoint")
ax.set_yscale("log")
ax.set_xlabel("step")
ax.set_ylabel("|resumed loss - uninterrupted loss|")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 9. Read your numbers
#
# Not graded; a few sentences for yourself.
#
# - Why does a forgotten RNG state show at the very first resumed step, before any update has
#   happened? What does the restarted run train on instead?
# - A forgotten optimizer state shows one step later, and a forgotten scheduler one step later
#   still. Which number carries the right learning rate across the restart for exactly one update?
# - Keep a checkpoint in memory without copying it and let the run go on: what does the
#   checkpoint hold when you come back to it? Why does `torch.save` to a file not have this
#   problem?
# - Put GPT-3's 175 billion parameters into your expression ($n_\text{tensors}$ is negligible). How many bytes
#   is one checkpoint of the weights and AdamW's state in fp32, and what share of it is the RNG?

# %% [markdown]
# *Your answer, for yourself (not graded): double-click this cell and write it here.*
