# %% [markdown]
# # p1-loss-scaler · Build a dynamic loss scaler that matches GradScaler
#
# *Chapter II.8 Training at Scale · practice · build it · 1 of 9*
#
# Exercise e05 treated dynamic loss scaling as a state machine on a given list of
# overflows. Here you build the real thing: a class that sits in a mixed-precision
# training loop, scales the loss, finds the overflow in the gradients itself, skips the
# update, and moves the scale. The grader puts your class and `torch.amp.GradScaler`
# into the same loop, with the same seeds, on runs you have not seen, and compares the
# two step by step.
#
# Sources: Micikevicius et al., *Mixed Precision Training* (ICLR 2018), §3.2 (loss
# scaling, and the dynamic scheme: skip the update and lower the scale on an overflow,
# raise it after a run of clean iterations); the PyTorch source of `torch.amp.GradScaler`
# (`torch/amp/grad_scaler.py`), whose behaviour is graded here.

# %% [markdown]
# ## 1. What GradScaler does, call by call
#
# The usual loop (the one in PyTorch's AMP examples) is
#
# ```python
# with torch.autocast(device, dtype=torch.float16):
#     loss = loss_fn(model(x), y)
# scaler.scale(loss).backward()      # gradients are S times larger while they are fp16
# scaler.unscale_(opt)               # divide S out, in fp32, and look for inf/NaN
# clip_grad_norm_(model.parameters(), max_norm)   # clipping must see true gradients
# scaler.step(opt)                   # the optimizer step, or nothing
# scaler.update()                    # move S for the next step
# ```
#
# | call | what GradScaler does |
# |---|---|
# | `scale(loss)` | returns `loss * S` |
# | `unscale_(opt)` | multiplies every gradient of every parameter in `opt.param_groups` by `1/S` (computed in float64, then rounded to float32) and records whether **any** element of **any** gradient is inf or NaN |
# | `step(opt)` | calls `unscale_(opt)` itself unless you already did this step; then calls `opt.step()` only if no inf/NaN was recorded |
# | `update()` | the e05 machine: on an overflow $S \leftarrow S\cdot$`backoff_factor` and the clean-step counter returns to 0; otherwise the counter counts up, and when it reaches `growth_interval`, $S \leftarrow S\cdot$`growth_factor` and the counter returns to 0 |
#
# Defaults: `init_scale` $=2^{16}$, `growth_factor` $=2$, `backoff_factor` $=0.5$,
# `growth_interval` $=2000$. Under the hood `unscale_` is one fused op,
# `torch._amp_foreach_non_finite_check_and_unscale_`, and `update` is
# `torch._amp_update_scale_`. You will write both in plain torch.
#
# Three facts that the grader's runs will test:
#
# - **the overflow is found in the gradients, not in the loss.** The loss is computed in
#   fp32 here, and stays finite while the fp16 backward pass overflows past 65504;
# - **NaN counts as overflow.** A corrupt example makes NaN gradients, and
#   `torch.isinf` does not see them;
# - **overflow is often in one layer only.** The layer with the largest gradients
#   overflows first, and the rest stay finite, so you have to check every tensor.

# %% [markdown]
# ## 2. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student
# id. On JupyterHub that is your hub user name; working on your own machine, start
# Jupyter with `JUPYTERHUB_USER=<your course id> jupyter lab` so that you see the same
# variant the grader uses. Editing this cell does not change what you are graded on.
#
# A variant is one training run: the scaler's settings, the seed, the number of steps,
# the outlier batches (`spikes`: at step `i` the targets are multiplied by `factor`),
# the corrupt batches (`nan_steps`), the learning rate and the clipping threshold. The
# initial scales are real defaults: $2^{16}$ (torch), $2^{32}$ (Megatron-LM's
# `--initial-loss-scale`) and $2^7$ (fairseq's `--fp16-init-scale`). The growth interval
# is shortened from 2000 so that forty steps show whole cycles.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {
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
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"practice:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}")
for _key, _value in params.items():
    print(f"  {_key} = {_value}")

# %% [markdown]
# ## 3. The training loop (given)
#
# `amp_run` is the loop above on a tiny regression MLP (8 → 32 → 1, tanh), trained with
# SGD. Its forward pass runs under fp16 autocast on the CPU, so the backward pass really
# is fp16 and really overflows. It returns the scale in force at each step, a 1 for each
# step whose update was skipped (the weights did not move), and the final weights.
# The grader calls `scaler_schedule` and `scaler_weights` on hidden runs. Do not edit
# this cell; it is replaced by this version when your notebook is graded.

# %% nbgrader={"grade": false, "grade_id": "harness", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import torch
import torch.nn.functional as F


# chapter: include graders.problems.practice.p1_loss_scaler.amp_run


def _your_scaler(init_scale, growth_factor, backoff_factor, growth_interval):
    return DynamicLossScaler(init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval)


def scaler_schedule(init_scale, growth_factor, backoff_factor, growth_interval,
                    seed, steps, spikes, nan_steps, lr, max_norm):
    """[scales, skipped] of one run with your DynamicLossScaler (called by the grader)."""
    scaler = _your_scaler(init_scale, growth_factor, backoff_factor, growth_interval)
    scales, skipped, _ = amp_run(scaler, seed, steps, spikes, nan_steps, lr, max_norm)
    return [scales, skipped]


def scaler_weights(init_scale, growth_factor, backoff_factor, growth_interval,
                   seed, steps, spikes, nan_steps, lr, max_norm):
    """The final weights of one run with your DynamicLossScaler (called by the grader)."""
    scaler = _your_scaler(init_scale, growth_factor, backoff_factor, growth_interval)
    return amp_run(scaler, seed, steps, spikes, nan_steps, lr, max_norm)[2]


# %% [markdown]
# ## 4. Build it
#
# Write `DynamicLossScaler` with GradScaler's interface and GradScaler's behaviour:
#
# - `__init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000)`;
# - `get_scale()` returns the current scale as a Python float;
# - `scale(loss)` returns the scaled loss;
# - `unscale_(optimizer)` unscales every gradient in `optimizer.param_groups` in place
#   and records whether any of them held an inf or a NaN;
# - `step(optimizer)` unscales if `unscale_` has not run since the last `update`, then
#   takes the optimizer step only if the gradients were finite;
# - `update()` moves the scale and the clean-step counter, and forgets this step's record.
#
# Keep the state in plain Python numbers. Gradients are modified under `torch.no_grad()`.
# The hidden runs use other factors than 2 and 0.5 too, so use the arguments.
# Multiplying by the reciprocal (as torch does) or dividing by the scale are both fine:
# the weights are compared to a relative 1e-5. The scales and the skipped steps must
# match exactly.

# %% nbgrader={"grade": false, "grade_id": "answer_scaler", "locked": false, "schema_version": 3, "solution": true, "task": false}
class DynamicLossScaler:
    """Dynamic loss scaling with torch.amp.GradScaler's rules, in plain torch."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        ### BEGIN SOLUTION
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._clean_steps = 0
        self._found_inf = None          # None: unscale_ has not run since the last update
        ### END SOLUTION

    def get_scale(self):
        ### BEGIN SOLUTION
        return self._scale
        ### END SOLUTION

    def scale(self, loss):
        ### BEGIN SOLUTION
        return loss * self._scale
        ### END SOLUTION

    def unscale_(self, optimizer):
        ### BEGIN SOLUTION
        inv_scale = float(torch.tensor(self._scale, dtype=torch.float64).reciprocal().float())
        found_inf = False
        with torch.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if not bool(torch.isfinite(p.grad).all()):
                        found_inf = True
                    p.grad.mul_(inv_scale)
        self._found_inf = found_inf
        ### END SOLUTION

    def step(self, optimizer):
        ### BEGIN SOLUTION
        if self._found_inf is None:
            self.unscale_(optimizer)
        if not self._found_inf:
            optimizer.step()
        ### END SOLUTION

    def update(self):
        ### BEGIN SOLUTION
        if self._found_inf:
            self._scale *= self._backoff_factor
            self._clean_steps = 0
        else:
            self._clean_steps += 1
            if self._clean_steps == self._growth_interval:
                self._scale *= self._growth_factor
                self._clean_steps = 0
        self._found_inf = None
        ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_scaler", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the hidden tests run your class and GradScaler on hidden runs and compare.
import numbers

_scales, _skipped, _weights = amp_run(DynamicLossScaler(init_scale=1024.0, growth_interval=3),
                                      seed=0, steps=6, spikes=[], nan_steps=[2], lr=0.05, max_norm=1.0)
assert len(_scales) == 6 and len(_skipped) == 6, "one scale and one skip flag per step"
assert all(isinstance(s, numbers.Real) for s in _scales), "get_scale() returns a number"
assert isinstance(DynamicLossScaler().get_scale(), float), "get_scale() returns a Python float"
assert len(_weights) == 8 * 32 + 32 + 32 + 1, "the run trains all the weights"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p1-loss-scaler", "check_scaler", globals())
### END HIDDEN TESTS

# %% [markdown]
# Check yourself against GradScaler on a run of your choosing. This cell is not graded.

# %%
try:
    _run = dict(seed=7, steps=30, spikes=[[12, 40.0]], nan_steps=[20], lr=0.05, max_norm=1.0)
    _settings = dict(init_scale=2.0 ** 20, growth_factor=2.0, backoff_factor=0.5, growth_interval=3)
    _mine = amp_run(DynamicLossScaler(**_settings), **_run)
    _torch = amp_run(torch.amp.GradScaler("cpu", **_settings), **_run)
    print("scales agree:", _mine[0] == _torch[0], "| skipped steps agree:", _mine[1] == _torch[1],
          "| largest weight difference:", max(abs(a - b) for a, b in zip(_mine[2], _torch[2])))
except NotImplementedError:
    print("Write DynamicLossScaler above first.")

# %% [markdown]
# ## 5. Your variant's run
#
# Run your variant through `amp_run` with your scaler and report:
# - `scale_trajectory`: the scale in force at each step (a list of floats);
# - `skipped_steps`: the indices (from 0) of the steps whose update was skipped;
# - `final_scale`: the scale after the last step's `update()`.

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_scaler = DynamicLossScaler(init_scale=params["init_scale"], growth_factor=params["growth_factor"],
                            backoff_factor=params["backoff_factor"], growth_interval=params["growth_interval"])
scale_trajectory, _flags, _ = amp_run(_scaler, params["seed"], params["steps"], params["spikes"],
                                      params["nan_steps"], params["lr"], params["max_norm"])
skipped_steps = [i for i, flag in enumerate(_flags) if flag]
final_scale = _scaler.get_scale()
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
import numbers

assert len(scale_trajectory) == params["steps"], "one scale per step"
assert isinstance(skipped_steps, list) and all(isinstance(i, numbers.Integral) for i in skipped_steps), \
    "skipped_steps is a list of step indices (ints)"
assert isinstance(final_scale, numbers.Real), "final_scale is a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p1-loss-scaler", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 6. Look at it
#
# The scale on a log axis, the skipped steps marked, and the outlier and corrupt batches
# shaded. Read off three things: how many steps the start costs (one per halving from
# `init_scale` down to the ceiling set by the gradients), the saw of growth and backoff
# once the scale has found the ceiling, and what a spike or a NaN does to it.

# %%
import math

import matplotlib.pyplot as plt

try:
    _scaler = DynamicLossScaler(init_scale=params["init_scale"], growth_factor=params["growth_factor"],
                                backoff_factor=params["backoff_factor"], growth_interval=params["growth_interval"])
    _traj, _flags, _ = amp_run(_scaler, params["seed"], params["steps"], params["spikes"],
                               params["nan_steps"], params["lr"], params["max_norm"])
    fig, ax = plt.subplots(figsize=(9, 3.4))
    ax.step(range(len(_traj)), [math.log2(s) for s in _traj], where="post", label="log2 of the scale in force")
    _skips = [i for i, f in enumerate(_flags) if f]
    ax.plot(_skips, [math.log2(_traj[i]) for i in _skips], "x", color="C3", ms=9, label="update skipped")
    for _i, (_step, _f) in enumerate(params["spikes"]):
        ax.axvspan(_step - 0.4, _step + 0.4, color="C1", alpha=0.25, label="outlier batch" if _i == 0 else None)
    for _i, _step in enumerate(params["nan_steps"]):
        ax.axvspan(_step - 0.4, _step + 0.4, color="C4", alpha=0.25, label="corrupt batch (NaN)" if _i == 0 else None)
    ax.set_xlabel("step")
    ax.set_ylabel("log2(scale)")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    plt.show()
except NotImplementedError:
    print("Write DynamicLossScaler above first.")

# %% [markdown]
# ## 7. What the sources say, and what to take away
#
# - Micikevicius et al. (2018), §3.2, give two ways to pick the scale: a constant found
#   by trial (or from gradient statistics, so that the largest gradient times the scale
#   stays under fp16's 65504), or the dynamic scheme you just built. The numbers
#   $2^{16}$ and 2000 in this notebook are PyTorch's defaults: quote them as PyTorch's,
#   not as the paper's.
# - Torch puts no floor under the scale. A run whose gradients are all NaN halves the
#   scale on every step, and the scale alone never tells you why; Megatron-LM and
#   DeepSpeed add a minimum scale for that reason.
# - Clipping has to come after `unscale_`, or the threshold is compared with gradients
#   that are still $S$ times too large. GradScaler lets you call `unscale_` early for
#   exactly this, and `step` then does not unscale a second time.
# - bf16 has fp32's exponent range, which is why bf16 training usually runs with no
#   scaler at all (Proposition 1: range before speed).
#
# Not graded: how many of your variant's skipped steps came from the start, and how
# many from spikes and corrupt data? With torch's interval of 2000, how long does a
# single spike keep the scale one notch lower?
