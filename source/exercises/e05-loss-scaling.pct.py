# %% [markdown]
# # e05-loss-scaling · Dynamic loss scaling as a state machine
#
# *Chapter II.8 Training at Scale · mathematics · exercise 5 of 10*
#
# In fp16 many gradients are too small to be represented and round to zero
# (Proposition 1: range before speed). Loss scaling multiplies the loss by a large
# factor $S$ before the backward pass, so that every gradient is $S$ times larger while
# it lives in fp16, and divides the factor out again in fp32 before the optimizer
# step. If $S$ is too large, some gradient overflows to `inf`; if it is too small,
# gradients underflow. **Dynamic** loss scaling looks for the largest safe $S$ while
# training runs. You will write it as the small state machine it is, and the grader
# will run your code against torch's own update rule on overflow patterns you have not seen.
#
# Sources: Micikevicius et al., *Mixed Precision Training* (ICLR 2018), §3.2, which
# describes the scheme (skip the step and shrink the scale on overflow, grow it after a
# run of clean steps); the PyTorch documentation of `torch.amp.GradScaler`, whose rules
# and defaults are graded here.

# %% [markdown]
# ## 1. The machine
#
# The state is two numbers: the current scale $S$ and a counter $k$ of consecutive
# clean steps. Each training step runs with the $S$ in force at its start, then the
# scaler updates:
#
# | what the step found | the optimizer step | new $S$ | new $k$ |
# |---|---|---|---|
# | an `inf` or `NaN` in the gradients | **skipped** | $S \cdot$ `backoff_factor` | 0 |
# | clean, and $k + 1 <$ `growth_interval` | taken | $S$ | $k + 1$ |
# | clean, and $k + 1 =$ `growth_interval` | taken | $S \cdot$ `growth_factor` | 0 |
#
# Start: $S =$ `init_scale`, $k = 0$. GradScaler's defaults are `init_scale` $= 2^{16} = 65536$,
# `growth_factor` $= 2$, `backoff_factor` $= 0.5$, `growth_interval` $= 2000$. (torch also
# refuses a growth that would make $S$ infinite; you will not reach that here.)
#
# Two things people get wrong about it:
#
# - the scaler checks for overflow on **every** step; the 2000 is how many consecutive
#   clean steps it waits before trying a larger scale, not how often it looks;
# - torch puts **no floor** under the scale. If every step overflows, $S$ halves forever.
#   Megatron-LM and DeepSpeed add a minimum (1 by default). The OPT-175B team saw their
#   loss divergences come together with the dynamic loss scalar collapsing towards 0, and
#   chose restart points where it was still at least 1 (Zhang et al. 2022, §2.5).
#
# Other frameworks start elsewhere: Megatron-LM's `--initial-loss-scale` defaults to $2^{32}$,
# fairseq's `--fp16-init-scale` to $2^7$. A start that is too high costs a few skipped
# steps at the beginning, one per halving, and nothing else.

# %% [markdown]
# ## 2. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student
# id. On JupyterHub that is your hub user name; working on your own machine, start
# Jupyter with `JUPYTERHUB_USER=<your course id> jupyter lab` so that you see the same
# variant the grader uses. Editing this cell does not change what you are graded on.
#
# Your variant is forty steps of a run: the scaler's settings, and for each step
# whether its scaled gradients overflowed. The growth interval is shortened from
# torch's 2000 to a handful of steps, so that forty steps show whole cycles; the rules
# are unchanged.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import sympy as sp

n_growth = sp.Symbol("n_growth", positive=True)   # the growth interval

VARIANTS = {
    "A": {
        "init_scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 8,
        "overflow": [
            True, True, True, False, False, False, False, False, False, False,
            False, True, False, False, False, False, False, False, False, False,
            True, True, False, False, False, False, False, False, False, False,
            False, False, False, False, False, False, False, False, True, False,
        ],
    },
    "B": {
        "init_scale": 4294967296.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 10,
        "overflow": [
            True, True, True, True, True, True, False, False, False, False,
            False, False, False, False, False, False, True, False, False, False,
            False, False, False, False, False, False, False, True, False, False,
            False, False, False, False, False, False, False, False, True, False,
        ],
    },
    "C": {
        "init_scale": 128.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 6,
        "overflow": [
            False, False, False, False, False, False, False, False, False, True,
            False, False, False, False, False, False, False, False, False, False,
            False, False, False, False, False, False, False, False, False, False,
            False, False, False, False, True, False, False, False, False, False,
        ],
    },
    "D": {
        "init_scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 5,
        "overflow": [
            True, True, False, False, False, False, False, True, False, False,
            False, False, False, True, False, False, False, False, False, False,
            False, False, False, False, False, False, False, False, False, False,
            True, False, False, False, False, False, False, False, False, False,
        ],
    },
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"exercises:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: init_scale = {params['init_scale']:g}, "
      f"growth_factor = {params['growth_factor']}, backoff_factor = {params['backoff_factor']}, "
      f"growth_interval = {params['growth_interval']}")
print("overflow:", "".join("X" if o else "." for o in params["overflow"]), "(X = overflowed)")

# %% [markdown]
# ### 2a. Implement
#
# Write the transition `update_scale`, then `run_scaler`, which plays a whole pattern:
#
# - `run_scaler(overflow, init_scale, growth_factor, backoff_factor, growth_interval)` gets
#   a list of bools (one per step) and the four settings as plain numbers;
# - it returns a pair `(trajectory, final_scale)`: `trajectory[i]` is the scale **in force
#   during step i** (before that step's update), and `final_scale` is the scale after the
#   last step's update.
#
# Only `run_scaler` is graded; it is called on hidden patterns, some with other factors
# than torch's defaults, so use the arguments rather than the numbers 2 and 0.5.

# %% nbgrader={"grade": false, "grade_id": "answer_function", "locked": false, "schema_version": 3, "solution": true, "task": false}
def update_scale(scale, tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    """One update of GradScaler's state; returns the new (scale, tracker)."""
    ### BEGIN SOLUTION
    if found_inf:
        return scale * backoff_factor, 0
    tracker += 1
    if tracker == growth_interval:
        return scale * growth_factor, 0
    return scale, tracker
    ### END SOLUTION


def run_scaler(overflow, init_scale, growth_factor, backoff_factor, growth_interval):
    """Play an overflow pattern; return (scale in force at each step, scale after the last step)."""
    ### BEGIN SOLUTION
    scale, tracker, trajectory = float(init_scale), 0, []
    for found_inf in overflow:
        trajectory.append(scale)
        scale, tracker = update_scale(scale, tracker, found_inf, growth_factor,
                                      backoff_factor, growth_interval)
    return trajectory, scale
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_function", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the hidden tests compare run_scaler with torch's update op on hidden patterns.
import numbers

_out = run_scaler([False, True, False], 1024.0, 2.0, 0.5, 2)
assert isinstance(_out, tuple) and len(_out) == 2, "return a pair (trajectory, final_scale)"
assert len(_out[0]) == 3, "the trajectory has one scale per step"
assert all(isinstance(x, numbers.Real) for x in _out[0]) and isinstance(_out[1], numbers.Real), \
    "scales are plain numbers"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e05-loss-scaling", "check_function", globals())
### END HIDDEN TESTS

# %% [markdown]
# Check yourself against torch's own update op (the one `GradScaler.update` calls) on a
# random pattern. This cell is not graded.

# %%
import numpy as np
import torch

try:
    _pattern = [bool(x) for x in np.random.default_rng(1).random(25) < 0.2]
    _scale = torch.full((), 512.0)
    _tracker = torch.zeros((), dtype=torch.int32)
    _torch_traj = []
    for _o in _pattern:
        _torch_traj.append(float(_scale))
        torch._amp_update_scale_(_scale, _tracker, torch.full((), float(_o)), 2.0, 0.5, 3)
    _mine, _final = run_scaler(_pattern, 512.0, 2.0, 0.5, 3)
    print("trajectories agree:", list(map(float, _mine)) == _torch_traj,
          "| final scales agree:", float(_final) == float(_scale))
except NotImplementedError:
    print("Write update_scale and run_scaler above first.")

# %% [markdown]
# ### 2b. Compute
#
# For your variant:
# - `scale_trajectory`: the scale in force at each of the forty steps (a list of floats);
# - `final_scale`: the scale after the last step;
# - `skipped_steps`: the indices (counted from 0) of the steps whose optimizer step was skipped.

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
scale_trajectory, final_scale = run_scaler(params["overflow"], params["init_scale"], params["growth_factor"],
                                           params["backoff_factor"], params["growth_interval"])
skipped_steps = [i for i, o in enumerate(params["overflow"]) if o]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
import numbers

assert len(scale_trajectory) == len(params["overflow"]), "one scale per step"
assert isinstance(final_scale, numbers.Real), "final_scale should be a number"
assert isinstance(skipped_steps, list) and all(isinstance(i, numbers.Integral) for i in skipped_steps), \
    "skipped_steps is a list of step indices (ints)"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e05-loss-scaling", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 2c. Look at it
#
# The scale on a log axis, with the skipped steps marked. After the start, the pattern
# is a saw: the scale climbs one notch after every run of clean steps, overflows, and
# drops back.

# %%
import matplotlib.pyplot as plt

try:
    _traj, _ = run_scaler(params["overflow"], params["init_scale"], params["growth_factor"],
                          params["backoff_factor"], params["growth_interval"])
    _steps = np.arange(len(_traj))
    fig, ax = plt.subplots(figsize=(9, 3.4))
    ax.step(_steps, np.log2(np.asarray(_traj, dtype=float)), where="post", label="log2 of the scale in force")
    _skips = [i for i, o in enumerate(params["overflow"]) if o]
    ax.plot(_skips, np.log2([float(_traj[i]) for i in _skips]), "x", color="C3", ms=9,
            label="overflow: step skipped")
    ax.set_xlabel("step")
    ax.set_ylabel("log2(scale)")
    ax.legend(loc="best")
    fig.tight_layout()
    plt.show()
except NotImplementedError:
    print("Write run_scaler above first.")

# %% [markdown]
# ### 2d. Derive: what the search costs
#
# Suppose the gradients are steady, so that a step overflows exactly when the scale
# exceeds some fixed ceiling $S^\ast$, and take torch's factors, for which
# `growth_factor` $\times$ `backoff_factor` $= 1$. Once the scale has settled just under
# $S^\ast$, the machine repeats one cycle forever: it waits out the clean steps, grows,
# overflows once, and falls back to where it was.
#
# Write `skip_fraction_expr`, the long-run fraction of optimizer steps that are skipped,
# as a sympy expression in `n_growth` (the growth interval $n_\text{growth}$; the symbol is
# defined in the setup cell). Then put in torch's $n_\text{growth} = 2000$ for yourself: this is the whole price of dynamic
# scaling in a healthy run.

# %% nbgrader={"grade": false, "grade_id": "answer_expr", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
clean_steps_per_cycle = n_growth   # n_growth consecutive clean steps, the last of which grows the scale
skipped_per_cycle = 1              # the next step overflows and is skipped, and the scale falls back
skip_fraction_expr = skipped_per_cycle / (clean_steps_per_cycle + skipped_per_cycle)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expr", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the mathematics is checked when your notebook is graded.
assert isinstance(skip_fraction_expr, sp.Expr), "skip_fraction_expr should be a sympy expression"
assert {x.name for x in skip_fraction_expr.free_symbols} <= {x.name for x in (n_growth,)}, "use only the symbol n_growth"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e05-loss-scaling", "check_expr", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 2e. Read your numbers
#
# How many of your variant's skipped steps came from the start (the scale coming down
# from `init_scale`) and how many from the saw? With torch's $n_\text{growth} = 2000$, how many clean
# steps does it take to win back one halving after a single spike? (Not graded: a
# sentence for yourself.)

# %% [markdown]
# *Your answer, for yourself (not graded): double-click this cell and write it here.*
