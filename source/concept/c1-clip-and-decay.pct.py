# %% [markdown]
# # c1-clip-and-decay · Fig. 8 from numbers: the threshold cuts the spikes, decay pulls on every step
#
# *Chapter II.8 Training at Scale · concept · what to picture (1 of 2)*
#
# The chapter's Fig. 8 is a picture of Proposition 2: **weight decay and gradient clipping
# guard different failures and do not substitute for each other.** Fourteen bars of gradient
# norm, mostly short, one or two enormous; a horizontal threshold that touches only the
# enormous ones; and underneath, decay acting on every step whatever the bars do.
#
# In this notebook the figure is not drawn by hand. You compute the numbers it is made of,
# and the figure is drawn from them. If your numbers are right, your figure is Fig. 8.
#
# The rules are torch's (`torch.nn.utils.clip_grad_norm_` and `torch.optim.AdamW`); the
# derivations are in the worked problem w5-clip-decay. Here the point is the picture.

# %% [markdown]
# ## 1. The two rules, side by side
#
# **Clipping** looks at one number per step, the global gradient norm $\|g_t\|$, and
# multiplies every gradient of that step by
#
# $$ c_t = \min\!\left(\frac{M}{\|g_t\| + 10^{-6}},\ 1\right) , $$
#
# where $M$ is the threshold (`max_norm`). On an ordinary step $c_t = 1$ and nothing
# happens. Clipping *acts* on step $t$ exactly when $c_t < 1$; note that a norm exactly
# equal to $M$ already gives $c_t = M/(M + 10^{-6}) < 1$. That $10^{-6}$ is torch's guard
# against dividing by zero, not part of the idea: no threshold of the graded variants lies
# within half a percent of a norm, so there "the norm is above $M$" and "$c_t < 1$" pick the
# same steps. (The worked example below is the exception: two of its norms are exactly 0.50, its
# threshold of 0.5 clips them by a hair, and they count as clipped.)
# After clipping the bar is
# $c_t\|g_t\|$ tall: unchanged on ordinary steps, (almost exactly) $M$ on clipped ones.
#
# **Decoupled weight decay** does not look at the gradient at all. Before every AdamW step
# each parameter is multiplied by $1 - \eta\lambda$. After $t$ steps the parameter keeps
# $(1 - \eta\lambda)^t$ of its value (ignoring the gradient's own contribution), so the
# fraction that decay has removed is
#
# $$ s_t = 1 - (1 - \eta\lambda)^t , $$
#
# which grows on every step, spike or no spike.
#
# Two properties to hold in mind while you look at the figure:
# - *Clipping is a property of the threshold relative to the typical norm.* Set $M$ above
#   the ordinary bars and it is a rare intervention; set it below them and it acts on every
#   step, and is no longer a guard against spikes but a rescaling of every update.
# - *Decay is a property of $\eta\lambda$ and of time.* Per step it is tiny; it matters
#   because it never stops.

# %% [markdown]
# ## 2. An example (not your variant)
#
# Fourteen norms with two spikes, threshold $M = 1$, $\eta = 3\times10^{-4}$,
# $\lambda = 0.1$.

# %%
import matplotlib.pyplot as plt

example = {"grad_norms": [0.52, 0.48, 0.55, 0.50, 0.47, 0.53, 0.49, 9.5, 0.51, 0.54, 0.46,
                          3.2, 0.50, 0.48],
           "max_norm": 1.0, "lr": 3e-4, "weight_decay": 0.1,
           "thresholds": [0.3, 0.5, 2.0, 12.0]}


def coefficient(norm, max_norm):
    """torch's clip coefficient for one step."""
    return min(max_norm / (norm + 1e-6), 1.0)


def fig8_numbers(norms, max_norm, lr, weight_decay):
    """The numbers Fig. 8 is drawn from."""
    coefficients = [coefficient(n, max_norm) for n in norms]
    factor, shrinks = 1.0, []
    for _ in norms:                       # decay acts on every step
        factor *= 1.0 - lr * weight_decay
        shrinks.append(1.0 - factor)
    return {"coefficients": coefficients,
            "clipped": [i for i, c in enumerate(coefficients) if c < 1.0],
            "after": [n * c for n, c in zip(norms, coefficients)],
            "shrinks": shrinks}


numbers = fig8_numbers(example["grad_norms"], example["max_norm"], example["lr"],
                       example["weight_decay"])
print("clipped steps      :", numbers["clipped"])
print("their coefficients :", [round(numbers["coefficients"][i], 4) for i in numbers["clipped"]])
print("steps clipped at the other thresholds:",
      {m: sum(coefficient(n, m) < 1 for n in example["grad_norms"]) for m in example["thresholds"]})
print(f"decay: {100 * numbers['shrinks'][0]:.4f}% removed after one step, "
      f"{100 * numbers['shrinks'][-1]:.4f}% after fourteen")

# %% [markdown]
# Clipping acted on 2 of the 14 steps, and there it was drastic (the step-7 gradient was
# cut to about a tenth). Decay acted on all 14, each time removing 0.003% of every parameter;
# over the fourteen steps that adds up to 0.042%, and over a run of 100,000 steps to about
# 95%. Now the picture.

# %%
def draw_fig8(norms, after, max_norm, shrinks, thresholds=(), title="Fig. 8"):
    """Top: norms, the threshold and what clipping removes. Bottom: the running shrink from decay."""
    steps = list(range(len(norms)))
    clipped = [i for i, (n, a) in enumerate(zip(norms, after)) if a < n]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9.5, 5.6), sharex=True,
                                      gridspec_kw={"height_ratios": [2.2, 1]})
    top.bar(steps, norms, color="#f2c4c4", edgecolor="#c44e52", hatch="//",
            label="norm before clipping")
    top.bar(steps, after, color="#4c72b0", label="norm after clipping")
    top.axhline(max_norm, color="#c44e52", linestyle="--", linewidth=1.5,
                label=f"clip threshold M = {max_norm:g}")
    for m in thresholds:
        top.axhline(m, color="grey", linestyle=":", linewidth=0.8)
    for i in clipped:
        top.annotate(f"×{after[i] / norms[i]:.2f}", (i, norms[i]), ha="center", va="bottom",
                     fontsize=9, color="#c44e52")
    top.set_ylabel("global gradient norm")
    top.set_title(title)
    top.legend(frameon=False, loc="upper left")
    bottom.plot(steps, [100 * s for s in shrinks], marker="o", color="#55a868")
    bottom.set_ylim(0, 100 * shrinks[-1] * 1.15)
    bottom.set_ylabel("removed by\ndecay (%)")
    bottom.set_xlabel("step")
    bottom.set_xticks(steps)
    bottom.text(0.02, 0.8, "decay: a marker on every step, whatever the gradient does",
                transform=bottom.transAxes, fontsize=9)
    fig.tight_layout()
    plt.show()


draw_fig8(example["grad_norms"], numbers["after"], example["max_norm"], numbers["shrinks"],
          example["thresholds"], "Example: clipping acts twice, decay fourteen times")

# %% [markdown]
# Read the figure twice. Along the top, the threshold (dashed) intersects two bars and
# misses twelve; the dotted lines are the other thresholds, and the lowest of them runs
# *below* the ordinary bars: at that setting clipping would act on every step. Along the
# bottom, the decay curve rises by the same small amount at every marker; the spikes above
# leave no trace in it.
#
# What the sources print, and what this figure is not:
# - The chapter's Fig. 8 is a schematic; its bars are not measurements. The norms in the
#   variants below are made up in the same spirit; the thresholds and AdamW settings are
#   those of published runs: GPT-3 (Brown et al. 2020, Table 2.1 and Appendix B), LLaMA
#   (Touvron et al. 2023, Table 2 and §2.3), OPT-175B (Zhang et al. 2022, Table 1, §2.2 and
#   §2.5) and BERT (Devlin et al. 2019, appendix A.2).
# - OPT-175B is a real case of a threshold being *moved*: §2.5 of the OPT paper reports
#   lowering the clip threshold from 1.0 to 0.3 during training, to deal with instabilities.
# - A threshold below every norm does not simply "clip harder". With SGD it acts like a
#   smaller learning rate on every step. With Adam, whose update hardly changes when all
#   gradients are multiplied by one constant, it rescales every step to norm $M$ and so
#   erases the differences in size between steps before they enter Adam's running averages.

# %% [markdown]
# ## 3. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id.
# On JupyterHub that is your hub user name; working on your own machine, start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab` so that you see the same variant the grader
# uses. Editing this cell does not change what you are graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {
    "A": {"grad_norms": [0.42, 0.39, 0.45, 0.41, 0.38, 7.3, 0.44, 0.40, 0.43, 0.37, 0.46,
                         0.41, 2.9, 0.39],
          "max_norm": 1.0, "lr": 6.0e-4, "weight_decay": 0.1,
          "thresholds": [0.35, 0.425, 3.0, 10.0]},
    "B": {"grad_norms": [0.27, 0.25, 0.29, 12.6, 0.26, 0.28, 0.24, 0.30, 0.27, 0.25, 0.31,
                         0.26, 0.28, 0.29],
          "max_norm": 1.0, "lr": 1.5e-4, "weight_decay": 0.1,
          "thresholds": [0.2, 0.285, 0.5, 20.0]},
    "C": {"grad_norms": [0.16, 0.19, 0.17, 0.15, 1.1, 0.18, 0.20, 0.16, 4.8, 0.17, 0.19,
                         0.15, 0.18, 0.6],
          "max_norm": 0.3, "lr": 1.2e-4, "weight_decay": 0.1,
          "thresholds": [0.1, 0.175, 1.0, 1.5]},
    "D": {"grad_norms": [0.71, 0.66, 0.74, 0.69, 0.72, 0.65, 0.70, 0.68, 0.73, 0.67, 25.0,
                         0.71, 0.69, 0.75],
          "max_norm": 1.0, "lr": 1.0e-4, "weight_decay": 0.01,
          "thresholds": [0.5, 0.705, 0.8, 5.0]},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"concept:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ### 3a. The top panel: what the threshold cuts
#
# For your variant's `grad_norms` and `max_norm`, compute
# - `clipped_steps`: the 0-based indices of the steps where clipping acts (a list of ints);
# - `clip_coefficients`: the coefficient $c_t$ of each of the 14 steps (a list of floats);
# - `clipped_norms`: the height of each bar after clipping, $c_t\|g_t\|$ (14 floats).

# %% nbgrader={"grade": false, "grade_id": "answer_clipping", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
clip_coefficients = [min(params["max_norm"] / (n + 1e-6), 1.0) for n in params["grad_norms"]]
clipped_steps = [i for i, c in enumerate(clip_coefficients) if c < 1.0]
clipped_norms = [n * c for n, c in zip(params["grad_norms"], clip_coefficients)]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_clipping", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
assert isinstance(clipped_steps, list) and all(isinstance(i, numbers.Integral) for i in clipped_steps), \
    "clipped_steps should be a list of ints"
for name in ("clip_coefficients", "clipped_norms"):
    value = globals()[name]
    assert isinstance(value, list) and len(value) == len(params["grad_norms"]), \
        f"{name} should be a list with one number per step"
    assert all(isinstance(x, numbers.Real) for x in value), f"{name} should hold Python numbers"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("c1-clip-and-decay", "check_clipping", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 3b. Move the threshold
#
# The same fourteen steps under each of your variant's `thresholds`:
# - `clip_counts`: for each threshold in `params["thresholds"]`, in order, the number of
#   steps on which clipping would act (a list of ints).
#
# Which of your thresholds keeps clipping a rare intervention, and which turns it into an
# every-step rescaling?

# %% nbgrader={"grade": false, "grade_id": "answer_thresholds", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
clip_counts = [sum(min(m / (n + 1e-6), 1.0) < 1.0 for n in params["grad_norms"])
               for m in params["thresholds"]]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_thresholds", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the counts are checked when your notebook is graded.
assert isinstance(clip_counts, list) and len(clip_counts) == len(params["thresholds"]), \
    "clip_counts should be a list with one count per threshold"
assert all(isinstance(k, numbers.Integral) for k in clip_counts), "clip_counts should hold ints"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("c1-clip-and-decay", "check_thresholds", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 3c. The bottom panel: decay on every step
#
# For your variant's `lr` ($\eta$) and `weight_decay` ($\lambda$), over the same fourteen
# steps, compute
# - `decay_shrinks`: the fraction $s_t$ of a parameter that decay has removed after each of
#   the 14 steps ($t = 1, \dots, 14$; a list of 14 floats, fractions, not percentages);
# - `decay_shrink`: the fraction removed after all fourteen.

# %% nbgrader={"grade": false, "grade_id": "answer_decay", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
pull = params["lr"] * params["weight_decay"]
decay_shrinks = [1.0 - (1.0 - pull) ** t for t in range(1, len(params["grad_norms"]) + 1)]
decay_shrink = decay_shrinks[-1]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_decay", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
assert isinstance(decay_shrinks, list) and len(decay_shrinks) == len(params["grad_norms"]), \
    "decay_shrinks should be a list with one number per step"
assert all(isinstance(x, numbers.Real) for x in decay_shrinks), "decay_shrinks should hold Python numbers"
assert isinstance(decay_shrink, numbers.Real), "decay_shrink should be a Python number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("c1-clip-and-decay", "check_decay", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 3d. Your Fig. 8
#
# Drawn from *your* answers above (ungraded). If a bar or the decay curve looks wrong,
# the numbers behind it are.

# %%
try:
    draw_fig8(params["grad_norms"], clipped_norms, params["max_norm"], decay_shrinks,
              params["thresholds"], f"Variant {VARIANT}: your Fig. 8")
except (NameError, TypeError, ValueError, ZeroDivisionError) as exc:
    print(f"Answer 3a and 3c first ({type(exc).__name__}: {exc}).")

# %% [markdown]
# To take away: the top panel changes with $M$ and the bottom panel does not. Clipping is a
# statement about a step; decay is a statement about every step. Neither can do the other's
# job: no threshold makes the decay curve rise, and no weight decay shortens a spike.
