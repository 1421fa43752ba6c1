# %% [markdown]
# # e03-weight-decay · What AdamW's weight decay does, step by step, and what an L2 penalty does instead
#
# *Chapter II.8 Training at Scale · mathematics · exercise 3 of 10*
#
# Nearly every large language model is trained with `torch.optim.AdamW(weight_decay=0.1)` or
# its equivalent. This exercise works out what that setting does to a weight over a run, in
# closed form. It then checks the result against torch itself, and shows why putting an L2
# penalty into the loss of an Adam run (which is what `torch.optim.Adam(weight_decay=...)`
# does) is a different regulariser.
#
# Notation: $\eta$ learning rate, $\lambda$ weight decay (the number passed as
# `weight_decay`), $t$ a number of optimiser steps.

# %% [markdown]
# ## 1. Decoupled decay, as torch implements it
#
# Each AdamW step in torch does two things to a weight $\theta$, in this order:
# $$\theta \leftarrow \theta\,(1 - \eta\lambda), \qquad
#   \theta \leftarrow \theta - \eta\,\frac{\hat m}{\sqrt{\hat v} + \epsilon}.$$
# The first is the **decay**. It is *decoupled* from the gradient: it never passes through
# Adam's moment estimates. The second is the ordinary Adam step. (The `torch.optim.AdamW`
# documentation writes the first line as $\theta_t \leftarrow \theta_{t-1} - \gamma\lambda\theta_{t-1}$
# with $\gamma$ the learning rate.)
#
# Take a weight whose gradient is zero on every step: an embedding row for a token that
# never occurs, or a unit the loss ignores. Then $m = v = 0$, the Adam step is exactly zero,
# and only the decay acts. Over $t$ steps at a constant learning rate the weight is
# multiplied by a **shrink factor**, which you derive in 3a. Because $\eta\lambda$ is tiny
# ($10^{-4}$ to $10^{-6}$ in the runs below), that factor is very close to an exponential
# decay in $t$, and so the decay has a **timescale**: the number of steps that shrinks an
# untouched weight by a factor $e$ (to first order in $\eta\lambda$). Wang & Aitchison (2024)
# read the same number as the memory of an exponential moving average. The weights AdamW
# ends with mostly reflect the updates of the last timescale's worth of steps. So a run much
# shorter than its timescale barely feels the decay, and a run much longer forgets its early
# updates.
#
# With a schedule $\eta_t$ in place of a constant, each step decays by its own rate, and what
# governs the total shrink is the sum of the rates over the run: the area under the
# schedule from exercise e02.
#
# ## 2. An L2 penalty inside Adam is something else
#
# Adding $\tfrac{\lambda}{2}\lVert\theta\rVert^2$ to the loss adds $\lambda\theta$ to the
# gradient. With plain SGD that gives the same multiplicative shrink as decoupled decay.
# With Adam it does not, because the penalty's gradient is then normalised like any other.
# The step is $\eta\,\widehat{m}(g + \lambda\theta) / \sqrt{\widehat{v}(g + \lambda\theta)}$. For
# a weight whose loss gradient $g$ is large, the penalty is divided by a large
# $\sqrt{\hat v}$ and barely acts. For a weight with $g = 0$, the penalty *is* the
# gradient and is normalised to a step of about $\eta$, whatever $\lambda$ is. Loshchilov &
# Hutter (*Decoupled Weight Decay Regularization*, ICLR 2019) make this argument: under L2,
# weights whose gradients have been large are regularised less than decoupled decay would
# regularise them. Their Algorithm 2 shows the two methods side by side, and AdamW is the
# name they gave the decoupled one.
#
# **What the paper prints, and what torch does.** In the paper's Algorithm 2 the decay
# term is $\eta_t\lambda\theta$, where $\eta_t$ is the *schedule multiplier* and the base
# learning rate $\alpha$ multiplies only the Adam step. `torch.optim.AdamW` multiplies the
# decay by the learning rate itself. So a $\lambda$ quoted from the paper and torch's
# `weight_decay` are not interchangeable numbers. With torch, `weight_decay=0.1` at
# `lr=6e-4` shrinks weights by $6\times10^{-5}$ per step, not by $0.1$.
#
# ## 3. Your variant
#
# Run the next cell (on your own machine start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab` to see the variant the grader uses).

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import sympy as sp

eta, lam, t = sp.symbols("eta lambda t", positive=True)

VARIANTS = {
    "A": {"lr": 1e-3, "weight_decay": 0.1, "steps": 5000},
    "B": {"lr": 6e-4, "weight_decay": 0.1, "steps": 19073},
    "C": {"lr": 6e-5, "weight_decay": 0.1, "steps": 81_250},
    "D": {"lr": 3e-4, "weight_decay": 0.1, "steps": 500_000},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"exercises:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# The variants are real runs, all with `weight_decay` 0.1: **A** nanoGPT's character-level
# Shakespeare model (1e-3, 5000 iterations); **B** build-nanogpt's GPT-2 124M (6e-4, 19,073
# steps); **C** GPT-3 175B (0.6e-4; 260B tokens of cosine at 3.2M tokens per step); **D**
# Llama 2 7B (3e-4; 2T tokens at 4M tokens per step). The real runs follow cosine
# schedules. Here the rate is held at its peak, which gives the most shrinkage the setting
# allows.
#
# ### 3a. Derive
#
# Write `shrink_expr`, the factor by which AdamW multiplies a weight with zero gradient over
# $t$ steps at constant learning rate, as a sympy expression in `eta`, `lam` (the symbol
# λ) and `t`.

# %% nbgrader={"grade": false, "grade_id": "answer_expr", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
shrink_expr = (1 - eta * lam) ** t
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expr", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the mathematics is checked when your notebook is graded.
assert isinstance(shrink_expr, sp.Expr), "shrink_expr should be a sympy expression"
assert {x.name for x in shrink_expr.free_symbols} <= {x.name for x in (eta, lam, t)}, "use only the symbols eta, lam (λ) and t"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e03-weight-decay", "check_expr", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 3b. Compute
#
# For your variant's `lr`, `weight_decay` and `steps`:
# - `shrink_factor`: the factor after `steps` steps (a float; it can be very small);
# - `timescale_steps`: the decay timescale of section 1, in steps.

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
shrink_factor = (1 - params["lr"] * params["weight_decay"]) ** params["steps"]
timescale_steps = 1 / (params["lr"] * params["weight_decay"])
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the numbers are checked when your notebook is graded.
for name in ("shrink_factor", "timescale_steps"):
    assert name in globals(), f"{name} is not defined yet"
    assert isinstance(globals()[name], numbers.Real), f"{name} should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e03-weight-decay", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 3c. Check against torch
#
# Now let torch do it. Use a single float64 parameter (`torch.ones(1, dtype=torch.float64)`)
# whose gradient is set to zero before every step.
# - `adamw_factor`: the parameter's value after `n = min(steps, 10_000)` steps of
#   `torch.optim.AdamW(lr=..., weight_decay=...)` starting from 1. (10,000 steps keep the
#   cell to a second or two; compare the value with your formula at $t = n$.)
# - `l2_first_step`: how far **one** step of `torch.optim.Adam(lr=..., weight_decay=...)`
#   (an L2 penalty, with torch's default betas and eps) moves the parameter from 1, as a
#   positive number. Compare it with AdamW's first step, $\eta\lambda$.

# %% nbgrader={"grade": false, "grade_id": "answer_torch", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
import torch

n = min(params["steps"], 10_000)
w = torch.nn.Parameter(torch.ones(1, dtype=torch.float64))
opt = torch.optim.AdamW([w], lr=params["lr"], weight_decay=params["weight_decay"])
for _ in range(n):
    w.grad = torch.zeros_like(w)
    opt.step()
adamw_factor = w.item()

v = torch.nn.Parameter(torch.ones(1, dtype=torch.float64))
opt = torch.optim.Adam([v], lr=params["lr"], weight_decay=params["weight_decay"])
v.grad = torch.zeros_like(v)
opt.step()
l2_first_step = 1.0 - v.item()
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_torch", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
for name in ("adamw_factor", "l2_first_step"):
    assert name in globals(), f"{name} is not defined yet"
    assert isinstance(globals()[name], numbers.Real), f"{name} should be a float (use .item())"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e03-weight-decay", "check_torch", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 3d. Look at the difference (not graded)
#
# The figure follows a weight with zero loss gradient under three optimisers, at your
# variant's learning rate: AdamW with your $\lambda$, and Adam with an L2 penalty at your
# $\lambda$ and at $\lambda/10$. Decoupled decay is a slow exponential with timescale
# $1/(\eta\lambda)$. The L2 weight starts by falling about $\eta$ per step, and the two
# L2 curves lie almost on top of each other although their $\lambda$ differ tenfold.
# Adam's normalisation has cancelled $\lambda$. For this idle weight the L2 penalty acts
# far harder than decoupled decay. On weights with large gradients it barely acts.
# Either way, the amount of regularisation depends on each weight's gradient history, not
# on $\lambda$ alone.

# %%
import math

import matplotlib.pyplot as plt
import torch


# chapter: include graders.problems.exercises.e03_weight_decay.idle_weight_path


# the same numbers as torch.optim.Adam(weight_decay=...) gives, checked on its first 100 steps
# (10,000 steps of torch's optimizer on one weight take seconds; the floats, milliseconds)
idle = torch.nn.Parameter(torch.ones(1, dtype=torch.float64))
opt = torch.optim.Adam([idle], lr=params["lr"], weight_decay=params["weight_decay"])
by_torch = [1.0]
for _ in range(100):
    idle.grad = torch.zeros_like(idle)
    opt.step()
    by_torch.append(idle.item())
assert all(math.isclose(a, b, rel_tol=1e-9) for a, b in
           zip(by_torch, idle_weight_path(params["lr"], params["weight_decay"], 100)))

horizon = min(params["steps"], 10_000)
lr_, wd_ = params["lr"], params["weight_decay"]
fig, ax = plt.subplots(figsize=(8, 3.6))
ax.plot([(1 - lr_ * wd_) ** k for k in range(horizon + 1)], label=f"AdamW, λ = {wd_:g}", color="C0")
ax.plot(idle_weight_path(lr_, wd_, horizon), label=f"Adam + L2, λ = {wd_:g}",
        color="C3")
ax.plot(idle_weight_path(lr_, wd_ / 10, horizon), ls="--",
        label=f"Adam + L2, λ = {wd_ / 10:g}", color="C1")
ax.set_xlabel("step")
ax.set_ylabel("weight (started at 1, zero loss gradient)")
ax.set_title(f"variant {VARIANT}: lr = {lr_:g}", fontsize=10)
ax.set_ylim(-0.05, 1.05)
ax.legend(frameon=False)
plt.tight_layout()
plt.show()
