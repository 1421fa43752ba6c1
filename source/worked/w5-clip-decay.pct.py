# %% [markdown]
# # w5-clip-decay · Clipping and weight decay guard different failures
#
# *Chapter II.8 Training at Scale · mathematics · worked problem 5 of 5*
#
# **Proposition 2.** Weight decay and gradient clipping guard different failures and do not
# substitute for each other. Clipping bounds the size of one step, and on almost every step
# it does nothing at all. Decay pulls every parameter toward zero on every step, whatever
# the gradient is doing. One is about the update, the other about where the parameters end up.
#
# This problem puts numbers on both halves and redraws the chapter's Fig. 8 from them.
# Sources: torch's `torch.nn.utils.clip_grad_norm_` and `torch.optim.AdamW` (the conventions
# graded here); Pascanu, Mikolov and Bengio, *On the difficulty of training recurrent neural
# networks*, ICML 2013, §3.2 (norm clipping); Loshchilov and Hutter, *Decoupled Weight Decay
# Regularization*, ICLR 2019, Algorithm 2.
#
# Notation: $\eta$ learning rate, $\lambda$ weight decay, $t$ a number of optimiser steps,
# $M$ the clip threshold (`max_norm`).

# %% [markdown]
# ## 1. Clipping: a coefficient that is almost always 1
#
# Global-norm clipping looks at the norm of *all* gradients together,
# $\|g\| = \sqrt{\sum_i \|g_i\|^2}$, and multiplies every gradient by one coefficient.
# torch computes it as
#
# $$ c = \min\!\left(\frac{M}{\|g\| + 10^{-6}},\; 1\right), $$
#
# and always multiplies (by exactly 1 on ordinary steps, which is how it avoids a branch).
# The $10^{-6}$ only guards against a zero norm. So clipping *acts* on a step exactly when
# $c < 1$, that is when $\|g\| + 10^{-6} > M$; after it the step's norm is about $M$.
# Pascanu et al. proposed the same rescaling (threshold over norm, applied when the norm is
# above the threshold) for the exploding gradients of recurrent networks.
#
# ## 2. Decoupled weight decay: a factor on every step
#
# torch's AdamW first multiplies each parameter by $(1 - \eta\lambda)$ and then takes the
# Adam step. With a zero gradient Adam's moments stay 0 and its step is exactly 0, which
# isolates the decay: after $t$ steps at constant $\eta$ a parameter is
#
# $$ \theta_t = (1 - \eta\lambda)^t\, \theta_0 . $$
#
# Its **half-life**, the $t$ at which the factor reaches $1/2$, solves
# $(1 - \eta\lambda)^t = 1/2$:
#
# $$ t_{1/2} = \frac{\ln 2}{-\ln(1 - \eta\lambda)} \approx \frac{\ln 2}{\eta\lambda}
#    \quad (\eta\lambda \ll 1). $$
#
# Two remarks on what the sources actually say:
# - In Loshchilov and Hutter's Algorithm 2 the decay term is multiplied by the *schedule
#   multiplier* $\eta_t$, not by Adam's step size $\alpha$. torch multiplies it by `lr`. So
#   a "weight decay of 0.1" in a torch config is a pull of $0.1\,\eta$ per step, and the same
#   number means something else in the paper's notation. The variants below read each
#   published run's weight decay in torch's sense ($\eta\lambda$ per step).
# - The formula is exact arithmetic. With fp32 weights the factor $1 - \eta\lambda$ is itself
#   rounded to fp32 before it multiplies; when $\eta\lambda = 10^{-6}$ the rounded factor pulls
#   about 1.3% harder than asked. (Yet another place where a format's limits show.)

# %% [markdown]
# ## 3. Worked example
#
# A ViT-style run (not your variant): threshold $M = 1$, $\eta = 10^{-3}$, $\lambda = 0.05$,
# and the decay followed over 5,000 steps. First the symbols, then the numbers.

# %%
import math

import sympy as sp
import torch

eta_, lam_, t_ = sp.symbols("eta lambda t", positive=True)
example_decay_expr = (1 - eta_ * lam_) ** t_
example_half_life_expr = sp.solve(sp.Eq(example_decay_expr, sp.Rational(1, 2)), t_)[0]
print("decay after t steps:", example_decay_expr)
print("half-life          :", example_half_life_expr)

# %%
example = {"grad_norms": [0.45, 0.52, 0.48, 0.50, 0.47, 0.55, 9.0, 0.49, 0.51, 0.46, 0.53,
                          0.50, 18.0, 0.48],
           "max_norm": 1.0, "lr": 1e-3, "weight_decay": 0.05, "steps": 5_000}

coefficients = [min(example["max_norm"] / (n + 1e-6), 1.0) for n in example["grad_norms"]]
clipped = [i for i, c in enumerate(coefficients) if c < 1.0]
decay = (1 - example["lr"] * example["weight_decay"]) ** example["steps"]
half_life = math.log(2) / -math.log(1 - example["lr"] * example["weight_decay"])
print("clipped steps:", clipped)
print("coefficients :", [round(c, 5) for c in coefficients])
print(f"decay factor after {example['steps']} steps: {decay:.6f}; half-life {half_life:.1f} steps")
print("the half-life from the sympy expression:",
      float(example_half_life_expr.subs({eta_: example["lr"], lam_: example["weight_decay"]})))

# %% [markdown]
# Clipping touched two of the fourteen steps, and cut them hard (to about 11% and 6% of
# their size). Decay touched all 5,000 steps, each time by a factor $1 - 5\times10^{-5}$,
# and together those pulls shrank every parameter by about 22%. Now check both numbers
# against torch itself: `clip_grad_norm_` on a gradient built to have each norm, and AdamW
# with a zero gradient (fp64 weights, so that the factor is not rounded).

# %%
torch_coefficients = []
for norm in example["grad_norms"]:
    weight = torch.nn.Parameter(torch.zeros(4, dtype=torch.float64))
    weight.grad = torch.full((4,), norm / 2, dtype=torch.float64)      # |grad| = norm
    before = weight.grad.clone()
    torch.nn.utils.clip_grad_norm_([weight], example["max_norm"])
    torch_coefficients.append((weight.grad[0] / before[0]).item())
print("clip_grad_norm_ agrees:", all(abs(a - b) < 1e-12 for a, b in zip(torch_coefficients, coefficients)))

weight = torch.nn.Parameter(torch.ones(1, dtype=torch.float64))
weight.grad = torch.zeros(1, dtype=torch.float64)
optimizer = torch.optim.AdamW([weight], lr=example["lr"], weight_decay=example["weight_decay"])
for _ in range(example["steps"]):
    optimizer.step()
print(f"AdamW after {example['steps']} steps with zero gradient: {weight.item():.6f}")

# %% [markdown]
# ## 4. The chapter's Fig. 8, from the numbers
#
# Top: the gradient norms with the clip threshold; the hatched part of a bar is what
# clipping removes. Bottom: the fraction of every parameter that decay removes on each
# step, the same on every step, spike or no spike.

# %%
import matplotlib.pyplot as plt


def fig8(norms, max_norm, lr, weight_decay, steps, title):
    """Redraw Fig. 8: gradient norms under a clip threshold, and the decay's pull per step."""
    steps_axis = range(len(norms))
    kept = [min(n, max_norm) for n in norms]
    cut = [max(n - max_norm, 0.0) for n in norms]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 5.2), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 1]})
    top.bar(steps_axis, kept, color="#4c72b0", label="gradient norm after clipping")
    top.bar(steps_axis, cut, bottom=kept, color="white", edgecolor="#c44e52", hatch="///",
            label="removed by clipping")
    top.axhline(max_norm, color="#c44e52", linestyle="--", label=f"clip threshold {max_norm:g}")
    top.set_ylabel("gradient norm per step")
    top.set_title(title)
    top.legend(frameon=False)
    pull = lr * weight_decay
    bottom.bar(steps_axis, [pull] * len(norms), color="#55a868")
    bottom.set_ylim(0, 2 * pull)
    bottom.set_ylabel(r"decay pull $\eta\lambda$")
    bottom.set_xlabel("step")
    bottom.set_xticks(list(steps_axis))
    bottom.text(0.5, 0.8, f"every step, every parameter: ×(1 − {pull:.2g});  "
                f"after {steps:,} steps: ×{(1 - pull) ** steps:.3f}",
                transform=bottom.transAxes, ha="center", va="center")
    fig.tight_layout()
    plt.show()


fig8(example["grad_norms"], example["max_norm"], example["lr"], example["weight_decay"],
     example["steps"], "Worked example: clipping acts twice, decay acts every step")

# %% [markdown]
# ## 5. Your variant
#
# The variants use the clip threshold and AdamW settings of published runs (GPT-3, LLaMA,
# OPT-175B, BERT); only the fourteen norms are made up. Run the next cell. It works out
# which variant you are graded on from your student id. On JupyterHub that is your hub
# user name; working on your own machine, start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab` so that you see the same variant the
# grader uses. Editing this cell does not change what you are graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import sympy as sp

eta, lam, t = sp.symbols("eta lambda t", positive=True)

VARIANTS = {
    "A": {"grad_norms": [0.31, 0.28, 0.34, 0.29, 6.8, 0.33, 0.27, 0.30, 0.35, 0.26, 0.32,
                         0.29, 14.2, 0.31],
          "max_norm": 1.0, "lr": 2.0e-4, "weight_decay": 0.1, "steps": 20_000},
    "B": {"grad_norms": [0.62, 0.58, 0.55, 0.71, 0.60, 0.57, 0.66, 21.5, 0.59, 0.63, 4.9,
                         0.56, 0.61, 0.54],
          "max_norm": 1.0, "lr": 3.0e-4, "weight_decay": 0.1, "steps": 50_000},
    "C": {"grad_norms": [0.18, 0.21, 2.6, 0.19, 0.17, 0.22, 0.20, 0.23, 0.18, 0.21, 0.19,
                         0.24, 9.4, 0.20],
          "max_norm": 0.3, "lr": 1.2e-4, "weight_decay": 0.1, "steps": 100_000},
    "D": {"grad_norms": [0.85, 0.79, 0.92, 0.88, 0.81, 0.95, 1.6, 0.83, 0.90, 0.87, 0.80,
                         31.0, 0.86, 0.84],
          "max_norm": 1.0, "lr": 1.0e-4, "weight_decay": 0.01, "steps": 1_000_000},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"worked:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ### 5a. Derive
#
# In the symbols `eta`, `lam` (the symbol $\lambda$) and `t` defined above, write
# - `decay_expr`: the factor by which decoupled AdamW shrinks a parameter in $t$ steps of
#   zero gradient at constant $\eta$;
# - `half_life_expr`: the exact number of steps for that factor to reach 1/2 (in `eta` and
#   `lam` only; not the small-$\eta\lambda$ approximation).

# %% nbgrader={"grade": false, "grade_id": "answer_expr", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
decay_expr = (1 - eta * lam) ** t
half_life_expr = sp.log(2) / -sp.log(1 - eta * lam)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expr", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the mathematics is checked when your notebook is graded.
assert isinstance(decay_expr, sp.Expr), "decay_expr should be a sympy expression"
assert {x.name for x in decay_expr.free_symbols} <= {x.name for x in (eta, lam, t)}, "decay_expr: use only eta, lam and t"
assert isinstance(half_life_expr, sp.Expr), "half_life_expr should be a sympy expression"
assert {x.name for x in half_life_expr.free_symbols} <= {x.name for x in (eta, lam)}, "half_life_expr: use only eta and lam"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("w5-clip-decay", "check_expr", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 5b. Clipping
#
# For your variant's `grad_norms` and `max_norm`, compute
# - `clipped_steps`: the 0-based indices of the steps on which clipping acts (a list of ints);
# - `clip_coefficients`: the coefficient of every step, in torch's convention (a list of
#   14 floats).

# %% nbgrader={"grade": false, "grade_id": "answer_clipping", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
clip_coefficients = [min(params["max_norm"] / (n + 1e-6), 1.0) for n in params["grad_norms"]]
clipped_steps = [i for i, c in enumerate(clip_coefficients) if c < 1.0]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_clipping", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
assert isinstance(clipped_steps, list) and all(isinstance(i, numbers.Integral) for i in clipped_steps), \
    "clipped_steps should be a list of ints"
assert isinstance(clip_coefficients, list) and len(clip_coefficients) == len(params["grad_norms"]), \
    "clip_coefficients should be a list with one number per step"
assert all(isinstance(c, numbers.Real) for c in clip_coefficients), \
    "clip_coefficients should hold Python numbers (use .item() on tensors)"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("w5-clip-decay", "check_clipping", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 5c. Decay
#
# For your variant's `lr`, `weight_decay` and `steps`, compute
# - `decay_factor`: the factor $\theta_t / \theta_0$ after `steps` steps;
# - `half_life_steps`: the half-life in steps (a real number; rounding it to a whole step
#   is fine).

# %% nbgrader={"grade": false, "grade_id": "answer_decay", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
values = {eta: params["lr"], lam: params["weight_decay"], t: params["steps"]}
decay_factor = float(decay_expr.subs(values))
half_life_steps = float(half_life_expr.subs(values))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_decay", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
for name in ("decay_factor", "half_life_steps"):
    assert isinstance(globals()[name], numbers.Real), f"{name} should be a Python number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("w5-clip-decay", "check_decay", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 5d. Your Fig. 8
#
# Your variant, drawn by the same function (ungraded; it uses only the parameters). Over
# your `steps`, how many times would clipping have to act, at this rate of spikes, to
# change the weights as much as decay does? Is that a fair comparison? (A sentence for
# yourself: clipping rescales the *update*, decay rescales the *weights*.)

# %%
fig8(params["grad_norms"], params["max_norm"], params["lr"], params["weight_decay"],
     params["steps"], f"Variant {VARIANT}: clipping and decay")
