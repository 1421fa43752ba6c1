# %% [markdown]
# # b06-lr-schedule · The learning rate, step by step
#
# *Chapter II.8 Training at Scale · basics · term 6 of 11*
#
# **Learning-rate schedule.** The learning rate is not one number but a function of the
# step, $\eta(t)$, fixed before the run starts. The common one for language models rises
# linearly from 0 during $W$ **warmup** steps, then follows half a cosine from the peak
# $\eta_{\max}$ down to a floor $\eta_{\min}$ at step $n_\text{steps}$, and stays there. With steps
# counted from 0 (the chapter's convention, also e02's):
#
# $$\eta(t) = \begin{cases}
# \eta_{\max}\, t / W & 0 \le t < W \\
# \eta_{\min} + \tfrac12(\eta_{\max} - \eta_{\min})\big(1 + \cos(\pi\,\tfrac{t - W}{n_\text{steps} - W})\big) & W \le t \le n_\text{steps}\\
# \eta_{\min} & t > n_\text{steps}
# \end{cases}$$
#
# Step 0 therefore trains with $\eta = 0$, the peak is reached first at step $W$, and half
# way through the decay, at $t = (W + n_\text{steps})/2$, the rate is the midpoint $(\eta_{\max} +
# \eta_{\min})/2$.

# %% [markdown]
# ## Worked example: GPT-3 125M as build-nanogpt trains it
#
# Karpathy's build-nanogpt warms up for 715 steps to $6\times10^{-4}$ and decays to
# $6\times10^{-5}$ at step 19,073 (GPT-3's 375M warmup tokens and 10B tokens at $2^{19}$
# tokens per step).

# %%
import math


def example_lr(t, peak=6e-4, floor=6e-5, W=715, total=19_073):
    if t < W:
        return peak * t / W
    if t > total:
        return floor
    return floor + 0.5 * (peak - floor) * (1 + math.cos(math.pi * (t - W) / (total - W)))


for t in (0, 1, 714, 715, (715 + 19_073) // 2, 19_073, 20_000):
    print(f"step {t:6d}: lr = {example_lr(t):.4e}")

# %% [markdown]
# **What the sources print.** Code that claims this schedule disagrees in the details.
# build-nanogpt uses $\eta_{\max}(t+1)/W$, so its step 0 already trains and its peak is at
# step $W - 1$; nanoGPT's `train.py` uses $\eta_{\max}(t+1)/(W+1)$; TinyLlama's `get_lr` uses
# $\eta_{\max}\,t/W$, as here, but counts $t$ in micro-steps (`warmup_iters = warmup_steps *
# gradient_accumulation_steps`). GPT-NeoX's `AnnealingLR`, as it stood when GPT-NeoX-20B
# and Pythia were trained, computed $\tfrac12\eta_{\max}(1 + \cos(\pi (t - W)/n_\text{steps}))$ and
# clipped it at $\eta_{\min}$: a cosine aimed at zero over the whole run, which meets a 10%
# floor near 80% of the run and stays there (its maintainers describe and fix this in
# EleutherAI/gpt-neox pull request 1008, 2023). PyTorch's `CosineAnnealingLR` is periodic:
# past `T_max` it climbs again. The variants below take real runs' peak, floor, warmup and
# length, under the chapter's definition.
#
# ## Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id. On
# JupyterHub that is your hub user name; on your own machine, start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab` to see the variant the grader uses.
# Editing this cell does not change what you are graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {
    "A": {"peak_lr": 4e-4, "min_lr": 4e-5, "warmup": 2000, "total": 1_430_512,
          "at": [0, 1000, 1999, 2000, 500_000, 1_000_000, 1_430_512, 1_500_000]},
    "B": {"peak_lr": 0.97e-4, "min_lr": 0.97e-5, "warmup": 1500, "total": 150_000,
          "at": [0, 750, 1499, 1500, 50_000, 100_000, 150_000, 160_000]},
    "C": {"peak_lr": 1.2e-4, "min_lr": 1.2e-5, "warmup": 1430, "total": 143_000,
          "at": [0, 715, 1429, 1430, 40_000, 90_000, 143_000, 150_000]},
    "D": {"peak_lr": 6e-4, "min_lr": 6e-5, "warmup": 2000, "total": 600_000,
          "at": [0, 100, 1999, 2000, 150_000, 301_000, 600_000, 650_000]},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"basics:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# The variants are real schedules: **A** TinyLlama (`pretrain/tinyllama.py`, counted in
# optimiser steps); **B** GPT-NeoX-20B (`configs/20B.yml`, warmup 1% of 150,000 steps);
# **C** Pythia-12B (`models/12B/pythia-12b.yml`, warmup 1% of 143,000); **D** nanoGPT's
# GPT-2 defaults in `train.py`.
#
# ### a. The schedule as a function
#
# Write `lr_at(t, peak_lr, min_lr, warmup, total)`, returning the learning rate of step
# `t` as a float, exactly as defined above. The hidden tests call it on schedules and steps
# you have not seen, the edges (0, $W - 1$, $W$, $n_\text{steps}$, beyond $n_\text{steps}$) included.

# %% nbgrader={"grade": false, "grade_id": "answer_function", "locked": false, "schema_version": 3, "solution": true, "task": false}
def lr_at(t, peak_lr, min_lr, warmup, total):
    """Linear warmup from 0, then a half cosine from peak_lr to min_lr at step `total`."""
    ### BEGIN SOLUTION
    if t < warmup:
        return peak_lr * t / warmup
    if t > total:
        return min_lr
    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * (t - warmup) / (total - warmup)))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_function", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the hidden tests call lr_at on schedules you have not seen.
import numbers

_value = lr_at(5, 1e-3, 1e-4, 10, 100)
assert isinstance(_value, numbers.Real), "lr_at should return a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("b06-lr-schedule", "check_function", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### b. Your schedule's numbers
#
# - `lr_at_steps`: the learning rate at each step in `params["at"]`, in order (a list of floats);
# - `peak_step`: the first step at which the schedule reaches `params["peak_lr"]`, its
#   largest learning rate (an int; if you search for it numerically, allow for rounding).

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_schedule = (params["peak_lr"], params["min_lr"], params["warmup"], params["total"])
lr_at_steps = [lr_at(t, *_schedule) for t in params["at"]]
peak_step = params["warmup"]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
assert isinstance(lr_at_steps, (list, tuple)), "lr_at_steps should be a list of numbers"
assert len(lr_at_steps) == len(params["at"]), "give one learning rate per step in params['at']"
assert isinstance(peak_step, numbers.Integral), "peak_step is a step number: make it an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("b06-lr-schedule", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### c. Look at it (not graded)
#
# Your schedule over the whole run, with the warmup enlarged on the right; the dots are
# your `lr_at_steps`.

# %%
import matplotlib.pyplot as plt

try:
    _peak, _floor, _W, _T = params["peak_lr"], params["min_lr"], params["warmup"], params["total"]
    _grid = [round(i * 1.1 * _T / 600) for i in range(601)]
    _near = list(range(0, 2 * _W + 1, max(1, _W // 200)))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.4))
    ax1.plot(_grid, [lr_at(t, _peak, _floor, _W, _T) for t in _grid])
    ax1.plot(params["at"], [lr_at(t, _peak, _floor, _W, _T) for t in params["at"]], "o", color="C3")
    ax1.axvline(_T, color="grey", ls=":")
    ax1.set_xlabel("step")
    ax1.set_ylabel("learning rate")
    ax2.plot(_near, [lr_at(t, _peak, _floor, _W, _T) for t in _near])
    ax2.axvline(_W, color="grey", ls=":", label="step W")
    ax2.set_xlabel("step (first 2W)")
    ax2.legend()
    fig.tight_layout()
    plt.show()
except NotImplementedError:
    print("Write lr_at above first.")
