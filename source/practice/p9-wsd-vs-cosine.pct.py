# %% [markdown]
# # p9-wsd-vs-cosine · Warmup-stable-decay against cosine, in a small run
#
# *Chapter II.8 Training at Scale · practice · read the papers · 9 of 9*
#
# A cosine schedule needs the length of the run before the run starts: the total step count $n_\text{steps}$ is
# inside its formula, and stopping early leaves the learning rate high, while going on means
# starting the curve again. Warmup-stable-decay (WSD) holds the peak for most of the run and decays
# only at the end, so the decision of when to end can be taken late, and a checkpoint of the stable
# phase can be decayed into a finished model at any point.
#
# Two papers to read next to this notebook:
# - Hu et al., *MiniCPM* (2024, arXiv 2404.06395), §4, which named the schedule. Their loss curves
#   sit above the cosine curves during the stable phase and then fall sharply during the decay, and a
#   decay of about 10% of the run was enough for them.
# - Hägele et al., *Scaling Laws and Compute-Optimal Training Beyond Fixed Training Durations* (2024,
#   arXiv 2405.18392): a constant rate with a short cooldown (they use about 20% of the run) matches a
#   well-tuned cosine, and a $(1-\sqrt{\cdot})$-shaped cooldown does a little better than a linear one.
#
# You will write both schedules, train the same tiny model twice on the same data (once with each),
# and see the drop for yourself. The whole run takes a second or two.

# %% [markdown]
# ## 1. The two schedules
#
# With peak $\eta_{max}$, floor $\eta_{min}$, $W$ warmup steps and $n_\text{steps}$ total steps (the definitions of
# e02-schedules):
#
# - **warmup**, both schedules: $\eta(t) = \eta_{max}\, t / W$ for $0 \le t < W$;
# - **cosine**: $\eta(t) = \eta_{min} + \tfrac12(\eta_{max} - \eta_{min})\bigl(1 + \cos(\pi\,\tfrac{t - W}{n_\text{steps} - W})\bigr)$
#   for $W \le t \le n_\text{steps}$ (Loshchilov and Hutter's SGDR, eq. 5, with one cycle; GPT-3 decays to 10% of the peak);
# - **WSD** with a decay of length $\text{decay}$: $\eta(t) = \eta_{max}$ for
#   $W \le t \le n_\text{steps} - \text{decay}$, then a straight line from $\eta_{max}$ at $n_\text{steps} - \text{decay}$ down to $\eta_{min}$ at $n_\text{steps}$;
# - after $n_\text{steps}$, both hold $\eta_{min}$.
#
# Step $t$ is the $t$-th optimizer update, counted from 0: the very first update uses $\eta(0) = 0$.

# %% [markdown]
# ## 2. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id. On
# JupyterHub that is your hub user name; working on your own machine, start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab` so that you see the same variant the grader uses.
# Editing this cell does not change what you are graded on.
#
# `make_task(params)` returns a **fresh** model (a two-layer tanh network, float64), the training
# stream `x`, `y` (`total * batch` examples of a noisy regression task) and a held-out set `x_eval`,
# `y_eval`. Calling it twice gives the same initial weights and the same data both times.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import torch

torch.set_num_threads(1)   # tiny tensors: one thread is the fastest

VARIANTS = {
    "A": {"seed": 11, "dim": 8, "hidden": 32, "batch": 16, "noise": 0.3, "peak_lr": 0.03,
          "min_lr": 0.003, "warmup": 20, "total": 300, "decay": 60, "weight_decay": 0.1,
          "eval_every": 20},
    "B": {"seed": 12, "dim": 6, "hidden": 24, "batch": 8, "noise": 0.4, "peak_lr": 0.03,
          "min_lr": 0.003, "warmup": 24, "total": 240, "decay": 24, "weight_decay": 0.1,
          "eval_every": 12},
    "C": {"seed": 13, "dim": 10, "hidden": 32, "batch": 32, "noise": 0.2, "peak_lr": 0.05,
          "min_lr": 0.0, "warmup": 30, "total": 300, "decay": 90, "weight_decay": 0.0,
          "eval_every": 30},
    "D": {"seed": 14, "dim": 8, "hidden": 16, "batch": 16, "noise": 0.4, "peak_lr": 0.04,
          "min_lr": 0.004, "warmup": 10, "total": 200, "decay": 40, "weight_decay": 0.05,
          "eval_every": 20},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"practice:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]


# chapter: include graders.problems.practice.p9_wsd_vs_cosine.make_task


print(f"Student {STUDENT}: variant {VARIANT}: peak {params['peak_lr']}, floor {params['min_lr']}, "
      f"warmup {params['warmup']}, total {params['total']}, decay {params['decay']} "
      f"({params['decay'] / params['total']:.0%} of the run)")

# %% [markdown]
# ## 3. Build it: the schedules
#
# Write `cosine_schedule(t, peak_lr, min_lr, warmup, total)` and
# `wsd_schedule(t, peak_lr, min_lr, warmup, total, decay)`, each returning the learning rate at step
# `t` as a float, by the definitions of section 1 (steps after `total` included). The hidden tests call
# them at steps in every phase of your variant's schedule and of an LLM-sized one you have not seen.

# %% nbgrader={"grade": false, "grade_id": "answer_schedules", "locked": false, "schema_version": 3, "solution": true, "task": false}
import math


def cosine_schedule(t, peak_lr, min_lr, warmup, total):
    """Linear warmup from 0, then a half cosine from peak_lr down to min_lr at step total."""
    ### BEGIN SOLUTION
    if t < warmup:
        return peak_lr * t / warmup
    if t > total:
        return min_lr
    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * (t - warmup) / (total - warmup)))
    ### END SOLUTION


def wsd_schedule(t, peak_lr, min_lr, warmup, total, decay):
    """Linear warmup from 0, the peak until total - decay, then linearly down to min_lr at step total."""
    ### BEGIN SOLUTION
    if t < warmup:
        return peak_lr * t / warmup
    if t <= total - decay:
        return peak_lr
    if t > total:
        return min_lr
    return peak_lr - (peak_lr - min_lr) * (t - (total - decay)) / decay
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_schedules", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the hidden tests call both schedules on steps you have not seen.
import numbers

for _f, _args in ((cosine_schedule, (10, 1.0, 0.1, 5, 100)), (wsd_schedule, (10, 1.0, 0.1, 5, 100, 20))):
    assert isinstance(_f(*_args), numbers.Real), f"{_f.__name__} should return a plain number"
assert cosine_schedule(0, 1.0, 0.1, 5, 100) == 0 and wsd_schedule(0, 1.0, 0.1, 5, 100, 20) == 0, \
    "both schedules start the warmup at 0"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p9-wsd-vs-cosine", "check_schedules", globals())
### END HIDDEN TESTS

# %% [markdown]
# The two schedules of your variant, side by side (not graded). The shaded area is the WSD decay phase.
# The area under each curve is the total learning rate the run spends; for the same peak and floor,
# WSD spends more of it.

# %%
import matplotlib.pyplot as plt

try:
    _steps = list(range(params["total"] + 1))
    _cos = [cosine_schedule(t, params["peak_lr"], params["min_lr"], params["warmup"], params["total"]) for t in _steps]
    _wsd = [wsd_schedule(t, params["peak_lr"], params["min_lr"], params["warmup"], params["total"], params["decay"])
            for t in _steps]
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.plot(_steps, _cos, label=f"cosine (area {sum(_cos[:-1]):.3g})")
    ax.plot(_steps, _wsd, label=f"WSD (area {sum(_wsd[:-1]):.3g})")
    ax.axvspan(params["total"] - params["decay"], params["total"], color="grey", alpha=0.15)
    ax.set(xlabel="step t", ylabel="learning rate")
    ax.legend()
    fig.tight_layout()
    plt.show()
except NotImplementedError:
    print("Write the two schedules above first.")

# %% [markdown]
# ## 4. Run it
#
# Train your variant's task twice, once per schedule, following this protocol exactly (the grader runs
# the same one, under the same seed, and compares the losses to a relative $10^{-4}$):
#
# 1. `model, x, y, x_eval, y_eval = make_task(params)`: a fresh model for each run;
# 2. `opt = torch.optim.AdamW(model.parameters(), lr=params["peak_lr"], betas=(0.9, 0.95), weight_decay=params["weight_decay"])`
#    (GPT-3's betas; the `lr` given here is overwritten before every step);
# 3. the eval loss is `((model(x_eval).squeeze(-1) - y_eval) ** 2).mean()`, computed under
#    `torch.no_grad()`; record it once before training;
# 4. for `t` in `range(params["total"])`: set `lr` of every entry of `opt.param_groups` to the schedule at
#    `t`; the batch is rows `t*b` to `(t+1)*b - 1` of `x`, `y` with `b = params["batch"]`; the training loss is
#    the same mean squared error on the batch; `opt.zero_grad()`, `loss.backward()`, `opt.step()`; then,
#    whenever `t + 1` is a multiple of `params["eval_every"]`, record the eval loss.
#
# Each list therefore holds `total // eval_every + 1` eval losses (after 0, `eval_every`, ..., `total`
# updates), as plain floats. Set `loss_cosine` and `loss_wsd`.

# %% nbgrader={"grade": false, "grade_id": "answer_losses", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def train(schedule, params):
    model, x, y, x_eval, y_eval = make_task(params)
    opt = torch.optim.AdamW(model.parameters(), lr=params["peak_lr"], betas=(0.9, 0.95),
                            weight_decay=params["weight_decay"])
    b = params["batch"]

    def eval_loss():
        with torch.no_grad():
            return float(((model(x_eval).squeeze(-1) - y_eval) ** 2).mean())

    losses = [eval_loss()]
    for t in range(params["total"]):
        for group in opt.param_groups:
            group["lr"] = schedule(t)
        loss = ((model(x[t * b:(t + 1) * b]).squeeze(-1) - y[t * b:(t + 1) * b]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (t + 1) % params["eval_every"] == 0:
            losses.append(eval_loss())
    return losses


_p = params
loss_cosine = train(lambda t: cosine_schedule(t, _p["peak_lr"], _p["min_lr"], _p["warmup"], _p["total"]), params)
loss_wsd = train(lambda t: wsd_schedule(t, _p["peak_lr"], _p["min_lr"], _p["warmup"], _p["total"], _p["decay"]),
                 params)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_losses", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the losses are checked when your notebook is graded.
_n = params["total"] // params["eval_every"] + 1
for _name in ("loss_cosine", "loss_wsd"):
    assert _name in globals(), f"assign {_name} = ... in the answer cell above"
    assert isinstance(globals()[_name], list), f"{_name} should be a list"
    assert len(globals()[_name]) == _n, f"{_name} should hold {_n} eval losses"
    assert all(isinstance(_v, numbers.Real) for _v in globals()[_name]), f"{_name} should hold plain floats"
assert loss_cosine[0] == loss_wsd[0], "both runs start from the same model, so their first eval losses agree"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p9-wsd-vs-cosine", "check_losses", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 5. The decay-phase drop
#
# Set `decay_drop`: how much the WSD run's eval loss falls during its decay phase, i.e. its eval loss
# after `total - decay` updates minus its eval loss after `total` updates.

# %% nbgrader={"grade": false, "grade_id": "answer_drop", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
decay_drop = loss_wsd[(params["total"] - params["decay"]) // params["eval_every"]] - loss_wsd[-1]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_drop", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the number is checked when your notebook is graded.
assert isinstance(decay_drop, numbers.Real), "decay_drop should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p9-wsd-vs-cosine", "check_drop", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 6. Look at it
#
# Both eval-loss curves, with the WSD decay phase shaded. For comparison, the loss that the label
# noise alone would leave a perfect model (its variance) is dotted.

# %%
try:
    _at = [k * params["eval_every"] for k in range(len(loss_cosine))]
    fig, ax = plt.subplots(figsize=(7, 3.4))
    ax.plot(_at, loss_cosine, "o-", label="cosine")
    ax.plot(_at, loss_wsd, "s-", label="WSD")
    ax.axvspan(params["total"] - params["decay"], params["total"], color="grey", alpha=0.15, label="WSD decay")
    ax.axhline(params["noise"] ** 2, color="k", ls=":", label="noise floor")
    ax.set(xlabel="updates", ylabel="held-out MSE", yscale="log")
    ax.legend()
    fig.tight_layout()
    plt.show()
except NameError:
    print("Compute loss_cosine and loss_wsd above first.")

# %% [markdown]
# ## 7. Read your numbers
#
# Where does the WSD curve sit during its stable phase, relative to cosine, and why would a higher
# learning rate leave the loss higher on a noisy task? Where does it end? If your variant decays over
# only 10% of the run, compare with a neighbour whose decay is 20% or 30%. Finally: you need a model
# trained for 60% of `total` steps. How would you get it from the WSD run, and what would you have to
# do with the cosine run? (Not graded: a few sentences for yourself.)

# %% [markdown]
# *Your answer, for yourself (not graded): double-click this cell and write it here.*
