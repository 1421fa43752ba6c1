# %% [markdown]
# # e02-schedules · Warmup-cosine and warmup-stable-decay, step by step
#
# *Chapter II.8 Training at Scale · mathematics · exercise 2 of 10*
#
# A large run does not use one learning rate. It uses a **schedule** $\eta(t)$: a function of
# the step $t$ that is fixed before the run starts (cosine) or partly left open until late in
# the run (warmup-stable-decay). This exercise writes both down exactly and computes them for
# a real run's settings. It also computes each schedule's **area**, the sum of the learning
# rate over the run. That sum is what decoupled weight decay integrates (exercise e03), and
# it is a first measure of how far the optimiser was allowed to travel.
#
# Notation: $\eta_{\max}$ peak learning rate, $\eta_{\min}$ floor, $W$ warmup steps, and, in
# $n_\text{steps}$ the **total number of steps** (not T, which in this chapter is a sequence
# length). The step is $t = 0, 1, 2, \dots$

# %% [markdown]
# ## 1. The two schedules
#
# **Warmup (both schedules).** For $0 \le t < W$ the rate climbs in a straight line from 0:
# $$\eta(t) = \eta_{\max}\,\frac{t}{W}.$$
# Early steps are taken with Adam's second-moment estimate still built from a handful of
# gradients, and from weights at their most fragile. A small rate there avoids the early
# loss spikes that a full-size step can cause (theory item t4 says more).
#
# **Cosine.** For $W \le t \le n_\text{steps}$ the rate follows half a cosine period from the peak down
# to the floor:
# $$\eta(t) = \eta_{\min} + \tfrac12(\eta_{\max} - \eta_{\min})\Bigl(1 + \cos\bigl(\pi\,\tfrac{t - W}{n_\text{steps} - W}\bigr)\Bigr).$$
# At $t = W$ the cosine is 1 and $\eta = \eta_{\max}$. At $t = n_\text{steps}$ it is $-1$ and
# $\eta = \eta_{\min}$. Halfway, $\eta$ is the mean of the two. The catch is that $n_\text{steps}$ must be
# chosen at the start. To train longer you would have to change the whole curve after the
# fact.
#
# **Warmup-stable-decay (WSD).** After the same warmup, the rate **holds** at $\eta_{\max}$
# until step $n_\text{steps} - \text{decay}$, then falls in a straight line to $\eta_{\min}$ at step $n_\text{steps}$:
# $$\eta(t) = \eta_{\max} - (\eta_{\max} - \eta_{\min})\,\frac{t - (n_\text{steps} - \text{decay})}{\text{decay}}
# \qquad (n_\text{steps} - \text{decay} < t \le n_\text{steps}).$$
# Only the decay needs to know $n_\text{steps}$. A run can stay in the stable phase and branch off a decay
# whenever it decides how long to train.
#
# After $n_\text{steps}$, both schedules stay at $\eta_{\min}$. The area we ask for is
# $$A = \sum_{t=0}^{n_\text{steps}-1} \eta(t).$$
# It is a sum over steps, not an integral.

# %% [markdown]
# ## 2. What the sources print
#
# - **GPT-3** (Brown et al. 2020, Appendix B): cosine decay "down to 10% of its value, over
#   260 billion tokens", after which training *continues at 10%*. The run saw 300B tokens,
#   so the cosine's $n_\text{steps}$ is not the end of training. The linear warmup covers the first 375M
#   tokens. Table 2.1 gives the peaks, 6.0e-4 for the 125M model and 0.6e-4 for 175B.
#   (GPT-3 also ramped its batch size up during the first 4–12B tokens, so "steps" here
#   means steps at the full batch.)
# - **Llama 2** (Touvron et al. 2023, §2.2): cosine schedule, 2000 warmup steps, final rate
#   10% of the peak, peak 3.0e-4 for 7B and 13B (Table 1).
# - **nanoGPT / build-nanogpt** (Karpathy): the code warms up as
#   `max_lr * (it+1) / warmup_steps`, so its step 0 already has a nonzero rate. This
#   exercise uses $\eta_{\max} t / W$, which is 0 at $t = 0$. The two conventions differ by
#   one step. When you compare numbers with a codebase, check which one it uses.
# - **WSD's decay shape.** The MiniCPM report (Hu et al. 2024) that named WSD defines the
#   decay with a general decreasing function and uses an *exponential* one in its
#   experiments. A *linear* cooldown, used here, is the form Hägele et al. (2024, "Scaling
#   Laws and Compute-Optimal Training Beyond Fixed Training Durations") found to match
#   cosine with a ~20% cooldown. DeepSeek-V3 (2024, §4.2) holds 2.2e-4 after a 2000-step
#   warmup and then decays to 2.2e-5 along a cosine-shaped curve. "WSD" names the
#   three phases, not one formula.
#
# ## 3. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id (on
# your own machine start Jupyter with `JUPYTERHUB_USER=<your course id> jupyter lab`).
# Editing this cell does not change what you are graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import sympy as sp

eta_max, eta_min, W, n_steps, t = sp.symbols("eta_max eta_min W n_steps t", positive=True)

VARIANTS = {
    "A": {"peak_lr": 6e-4, "min_lr": 6e-5, "warmup": 715, "total": 19073, "decay": 3815,
          "at": [0, 300, 715, 5000, 9894, 15258, 17000, 19073]},
    "B": {"peak_lr": 3e-4, "min_lr": 3e-5, "warmup": 2000, "total": 500_000, "decay": 50_000,
          "at": [0, 1000, 2000, 100_000, 251_000, 450_000, 475_000, 500_000]},
    "C": {"peak_lr": 6e-5, "min_lr": 6e-6, "warmup": 117, "total": 81_250, "decay": 16_250,
          "at": [0, 50, 117, 20_000, 40_684, 65_000, 73_125, 81_250]},
    "D": {"peak_lr": 2.2e-4, "min_lr": 2.2e-5, "warmup": 2000, "total": 227_000,
          "decay": 68_000, "at": [0, 500, 2000, 60_000, 114_500, 159_000, 193_000, 227_000]},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"exercises:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# The variants: **A** build-nanogpt's GPT-2 124M run (6e-4 → 6e-5, 715 warmup steps, 19,073
# steps); **B** Llama 2 7B (3e-4, 2000 warmup steps, 2.0T tokens at 4M tokens per step, about
# 500,000 steps); **C** GPT-3 175B (0.6e-4, 375M warmup tokens and a 260B-token cosine at
# 3.2M tokens per step); **D** DeepSeek-V3's peak, floor and warmup, with its ~4.3T-token
# decay as 68,000 steps of 15360 × 4096 tokens. Each also has a WSD decay length `decay`.
#
# ### 3a. Derive
#
# Write `cosine_expr`, the learning rate in the cosine phase ($W \le t \le n_\text{steps}$), as a sympy
# expression in `eta_max`, `eta_min`, `W`, `n_steps` and `t` (the symbols defined above).

# %% nbgrader={"grade": false, "grade_id": "answer_expr", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
cosine_expr = eta_min + (eta_max - eta_min) / 2 * (1 + sp.cos(sp.pi * (t - W) / (n_steps - W)))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expr", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the mathematics is checked when your notebook is graded.
assert isinstance(cosine_expr, sp.Expr), "cosine_expr should be a sympy expression"
assert {x.name for x in cosine_expr.free_symbols} <= {x.name for x in (eta_max, eta_min, W, n_steps, t)}, \
    "use only the symbols eta_max, eta_min, W, n_steps and t"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e02-schedules", "check_expr", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 3b. Compute the schedules
#
# Write two functions of an integer step, `cosine_lr(step)` and `wsd_lr(step)`, that return
# the learning rate (a float) of each schedule for your variant. Keep the sympy names `W`,
# `n_steps`, `t` for the symbols: give the numbers other names (`peak`, `warm`, `total`, ...).
# Then evaluate them at the steps in `params["at"]`:
# - `lr_cosine`: the list of cosine-schedule rates at those steps;
# - `lr_wsd`: the list of WSD rates at those steps.

# %% nbgrader={"grade": false, "grade_id": "answer_values", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
import math

peak, floor = params["peak_lr"], params["min_lr"]
warm, total, decay = params["warmup"], params["total"], params["decay"]


def cosine_lr(step):
    if step < warm:
        return peak * step / warm
    if step > total:
        return floor
    return floor + 0.5 * (peak - floor) * (1 + math.cos(math.pi * (step - warm) / (total - warm)))


def wsd_lr(step):
    if step < warm:
        return peak * step / warm
    if step > total:
        return floor
    if step <= total - decay:
        return peak
    return peak - (peak - floor) * (step - (total - decay)) / decay


lr_cosine = [cosine_lr(s) for s in params["at"]]
lr_wsd = [wsd_lr(s) for s in params["at"]]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_values", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
for name in ("lr_cosine", "lr_wsd"):
    assert name in globals(), f"{name} is not defined yet"
    values = globals()[name]
    assert len(values) == len(params["at"]), f"{name} needs one rate per step in params['at']"
    assert all(isinstance(v, numbers.Real) for v in values), f"{name} should hold plain numbers"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e02-schedules", "check_values", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 3c. Compute the areas
#
# - `area_cosine`: $\sum_{t=0}^{n_\text{steps}-1}\eta(t)$ for the cosine schedule;
# - `area_wsd`: the same sum for the WSD schedule.
#
# Both are floats, in units of "learning rate × steps". (A Python loop over a few hundred
# thousand steps takes well under a second.)

# %% nbgrader={"grade": false, "grade_id": "answer_areas", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
area_cosine = math.fsum(cosine_lr(s) for s in range(total))
area_wsd = math.fsum(wsd_lr(s) for s in range(total))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_areas", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the areas are checked when your notebook is graded.
for name in ("area_cosine", "area_wsd"):
    assert name in globals(), f"{name} is not defined yet"
    assert isinstance(globals()[name], numbers.Real), f"{name} should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e02-schedules", "check_areas", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 3d. Look at your two schedules (not graded)
#
# The figure draws both of your functions over the whole run, marks the graded steps, and
# prints the ratio of the two areas. WSD spends more learning rate than cosine does. Which
# phase of WSD accounts for the difference? Does the ratio depend on the peak?

# %%
import matplotlib.pyplot as plt

if "cosine_lr" in globals() and "wsd_lr" in globals():
    grid = sorted(set(range(0, params["total"] + 1, max(1, params["total"] // 2000)))
                  | set(params["at"]) | {params["warmup"], params["total"] - params["decay"]})
    fig, ax = plt.subplots(figsize=(9, 3.6))
    ax.plot(grid, [cosine_lr(s) for s in grid], label="warmup + cosine", color="C0")
    ax.plot(grid, [wsd_lr(s) for s in grid], label="warmup-stable-decay", color="C1")
    ax.plot(params["at"], [cosine_lr(s) for s in params["at"]], "o", color="C0", ms=4)
    ax.plot(params["at"], [wsd_lr(s) for s in params["at"]], "s", color="C1", ms=4)
    ax.axhline(params["min_lr"], color="grey", lw=0.8, ls=":", label="floor η_min")
    ax.set_xlabel("step t")
    ax.set_ylabel("learning rate η(t)")
    ax.set_title(f"variant {VARIANT}: peak {params['peak_lr']:g}, W = {params['warmup']}, "
                 f"n_steps = {params['total']:,}, decay = {params['decay']:,}", fontsize=10)
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    plt.tight_layout()
    plt.show()
    if "area_cosine" in globals() and "area_wsd" in globals():
        print(f"area under WSD / area under cosine = {area_wsd / area_cosine:.3f}")
