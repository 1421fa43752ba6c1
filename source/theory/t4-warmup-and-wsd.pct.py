# %% [markdown]
# # t4-warmup-and-wsd · Why warm up, and why decide the length late
#
# *Chapter II.8 Training at Scale · theory · 4 of 4*
#
# Nearly every large run starts its learning rate at zero and ramps it up over a few hundred or
# thousand steps, and a growing number hold it flat and decay it only at the end
# (warmup-stable-decay, WSD) instead of following a cosine from start to finish. Both choices are
# usually explained by folklore. This notebook gives each one an argument you can compute:
#
# 1. **Warmup** keeps the learning rate under a **stability threshold** set by the curvature of the
#    loss, during the stretch of training where the curvature is highest. Cross the threshold and the
#    loss spikes. The threshold comes from the edge-of-stability papers of Cohen et al.
# 2. **WSD** makes the learning rate at step $t$ independent of the run's total length until the decay
#    begins, so a stable-phase checkpoint can be finished at any length you like. A cosine schedule
#    fixes the length at the first step after warmup.
#
# The schedules are e02-schedules' (same definitions). Notation: $\eta$ learning rate, $\eta_t$ its
# value at step $t$, $W$ warmup steps, $n_\text{steps}$ total steps, $\beta_1$ Adam's momentum coefficient, $a$ a
# curvature (an eigenvalue of the Hessian $H$).

# %% [markdown]
# ## 1. The threshold: gradient descent on a quadratic
#
# Along an eigenvector of $H$ with eigenvalue $a$ the loss is locally $\tfrac12 a x^2$, and one
# gradient-descent step maps $x \mapsto (1 - \eta a)x$. The iteration shrinks $x$ exactly when
# $|1 - \eta a| < 1$, that is when
#
# $$\eta\, a < 2 .$$
#
# Past that, $x$ grows by $|1 - \eta a| > 1$ on every step: a few dozen steps turn a tiny component
# into a **loss spike**. The largest eigenvalue, the **sharpness**, decides: gradient descent is
# stable only while the sharpness is below $2/\eta$.
#
# Cohen, Kaur, Li, Kolter and Talwalkar (*Gradient Descent on Neural Networks Typically Occurs at the
# Edge of Stability*, ICLR 2021) found that in full-batch training of real networks the sharpness does
# not stay put: it **rises** ("progressive sharpening") until it reaches $2/\eta$, and then hovers
# there, while the loss keeps falling over long stretches but not monotonically. The network trains
# *at* the threshold, and whatever pushes $\eta\cdot$sharpness past it produces the oscillations
# and spikes that practitioners see.
#
# ## 2. With momentum, and with Adam
#
# Adam's update uses an exponential moving average $m \leftarrow \beta_1 m + (1 - \beta_1)g$ and divides
# by a preconditioner $P = \operatorname{diag}(\sqrt{\hat v} + \epsilon)$. Cohen, Ghorbani, Krishnan et
# al. (*Adaptive Gradient Methods at the Edge of Stability*, 2022) show that the quantity that hovers
# at a threshold is then the **preconditioned sharpness** $\lambda_{max}(P^{-1}H)$, and that the
# threshold is the one of momentum gradient descent with that moving average. You can derive it: on
# $\tfrac12 a x^2$ the pair $(x, m)$ evolves linearly,
#
# $$m_{t+1} = \beta_1 m_t + (1 - \beta_1) a x_t, \qquad x_{t+1} = x_t - \eta\, m_{t+1},$$
#
# and is stable while both roots $z$ of its characteristic polynomial lie inside the unit circle. As
# $\eta a$ grows, a root leaves through $z = -1$. Setting $z = -1$ gives the threshold; for
# $\beta_1 = 0.9$ the paper prints it as $38/\eta$. You will do this in sympy in 4a.
#
# The next cell checks the claim against torch: `torch.optim.SGD` with `momentum=β1` and
# `dampening=β1` keeps exactly this moving average. On a one-dimensional quadratic just below and just
# above $38/\eta$, the first run settles and the second blows up.

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import torch


def final_distance(curvature, lr=1e-3, beta1=0.9, steps=200):
    x = torch.nn.Parameter(torch.ones(1, dtype=torch.float64))
    opt = torch.optim.SGD([x], lr=lr, momentum=beta1, dampening=beta1)
    for _ in range(steps):
        opt.zero_grad()
        (0.5 * curvature * x**2).sum().backward()
        opt.step()
    return abs(x.item())


edge = 38 / 1e-3
for factor in (0.98, 1.02):
    print(f"curvature {factor:.2f} x 38/eta: |x| after 200 steps (from 1) = {final_distance(factor * edge):.3g}")

# %% [markdown]
# ## 3. Why warm up
#
# The threshold caps the *product* $\eta_t \cdot$ sharpness. Early in training the sharpness (and, for
# Adam, the preconditioned sharpness, while $\hat v$ is still being estimated) can be far above the
# value it settles at. Gilmer et al. (*A Loss Curvature Perspective on Training Instabilities of Deep
# Learning Models*, ICLR 2022) tracked it through training and found that warmup lets the network
# reach flatter regions before the learning rate is large; Kalra and Barkeshli (*Why Warmup the
# Learning Rate?*, NeurIPS 2024) conclude that warmup's main benefit is to let the run tolerate a
# larger target learning rate by steering it into better-conditioned regions first.
#
# In the simplest reading, a warmup must keep $\eta_t s_t$ below the limit at every step. With a
# linear warmup $\eta_t = \eta_{max} t/W$ and a sharpness $s_t$ measured (say, by a probe run) at a few
# steps, each measured step $t$ whose $s_t$ is above the limit at the peak forces two conditions on
# $W$: the warmup must not yet be over at $t$ ($W > t$), and it must be slow enough there
# ($\eta_{max} t s_t / W \le$ limit). The shortest safe warmup is the largest of these bounds. This
# reading ignores that the sharpness itself responds to the learning rate (that response is exactly
# the edge-of-stability mechanism), so treat it as a first-order estimate of how long a warmup needs
# to be, not as a guarantee.
#
# ## 4. Why warmup-stable-decay lets you commit late
#
# Look at what each schedule needs to know at step $t$ (e02's definitions):
#
# - **cosine**: $\eta_t = \eta_{min} + \tfrac12(\eta_{max} - \eta_{min})(1 + \cos(\pi(t - W)/(n_\text{steps} - W)))$
#   depends on $n_\text{steps}$ from the first step after warmup. Two cosine runs planned for different $n_\text{steps}$ share
#   only their warmup and the step at the peak; after that they are different runs.
# - **WSD**: $\eta_t = \eta_{max}$ from $W$ until the decay starts, whatever $n_\text{steps}$ is. Two WSD runs share
#   everything up to the start of the shorter run's decay.
#
# So a WSD run can be trained once through its stable phase, checkpointed, and **branched**: from the
# checkpoint at $n_{\text{steps},i} - d_i$ a decay of $d_i$ steps finishes a model of length $n_{\text{steps},i}$, for as many
# $n_{\text{steps},i}$
# as you like, and the stable run can continue if more compute arrives. Hu et al. (MiniCPM, 2024, §4)
# named and used the schedule this way; Hägele et al. (*Scaling Laws and Compute-Optimal Training
# Beyond Fixed Training Durations*, NeurIPS 2024) found that a constant learning rate with a cooldown
# of about 20% of the run matches cosine, and that branching cooldowns off one constant-rate run per
# model size cuts the compute of scaling-law experiments substantially. A family of budgets
# $n_{\text{steps},1} < \dots < n_{\text{steps},k}$ with decays $d_i$ costs $\sum_i n_{\text{steps},i}$
# steps with cosine and $\max_i(n_{\text{steps},i} - d_i) + \sum_i d_i$ with WSD.
#
# The price: the stable phase runs at the peak learning rate, so its loss is higher than a cosine
# run's at the same step until the decay collects the drop; only decayed checkpoints are comparable
# models.

# %% [markdown]
# ## 5. Your variant
#
# The schedule (`peak_lr`, `min_lr`, `warmup`, `total`, `decay`) and `beta1` are those of a published
# run, as in e02; the sharpness probe (`sharpness`, the preconditioned sharpness measured at the steps
# `at`) is invented for the exercise. `budgets` are the run lengths your lab may want and
# `decay_fraction` the share of each one spent decaying (WSD decay length $d_i$ =
# `round(decay_fraction * budget)`). Run the next cell. It works out which variant you are graded on
# from your student id. On JupyterHub that is your hub user name; working on your own machine, start
# Jupyter with `JUPYTERHUB_USER=<your course id> jupyter lab` so that you see the same variant the
# grader uses. Editing this cell does not change what you are graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import sympy as sp

eta, beta1 = sp.symbols("eta beta1", positive=True)

VARIANTS = {
    "A": {"peak_lr": 6e-4, "min_lr": 6e-5, "warmup": 715, "total": 19073, "decay": 3815, "beta1": 0.9,
          "at": [0, 25, 100, 250, 400, 600, 1000, 3000],
          "sharpness": [2.4e5, 1.9e5, 1.3e5, 8.8e4, 7.1e4, 6.0e4, 5.4e4, 5.9e4],
          "budgets": [5000, 10000, 20000], "decay_fraction": 0.2},
    "B": {"peak_lr": 3e-4, "min_lr": 3e-5, "warmup": 2000, "total": 500_000, "decay": 50_000, "beta1": 0.9,
          "at": [0, 100, 500, 1000, 1500, 2500, 4000, 10000],
          "sharpness": [6.1e5, 4.4e5, 2.9e5, 2.2e5, 1.7e5, 1.34e5, 1.3e5, 1.22e5],
          "budgets": [100_000, 250_000, 500_000], "decay_fraction": 0.1},
    "C": {"peak_lr": 6e-5, "min_lr": 6e-6, "warmup": 117, "total": 81_250, "decay": 16_250, "beta1": 0.9,
          "at": [0, 20, 60, 100, 150, 300, 600, 2000],
          "sharpness": [2.6e6, 2.1e6, 1.5e6, 1.05e6, 8.1e5, 6.2e5, 6.0e5, 5.6e5],
          "budgets": [20_000, 40_000, 60_000, 80_000], "decay_fraction": 0.2},
    "D": {"peak_lr": 2.2e-4, "min_lr": 2.2e-5, "warmup": 2000, "total": 227_000, "decay": 68_000,
          "beta1": 0.9,
          "at": [0, 200, 800, 1500, 2500, 3500, 6000, 12000],
          "sharpness": [9.5e5, 6.2e5, 3.9e5, 2.6e5, 1.95e5, 1.8e5, 1.6e5, 1.5e5],
          "budgets": [50_000, 150_000, 225_000], "decay_fraction": 0.3},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"theory:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ### 5a. The threshold
#
# - `threshold_expr`: the largest stable curvature of §2 as a sympy expression in the symbols `eta`
#   and `beta1` defined above (derive it; any equivalent form is accepted);
# - `threshold_gd`: gradient descent's threshold $2/\eta$ at your `peak_lr`;
# - `threshold_adam`: the edge of stability for the preconditioned sharpness at your `peak_lr` and
#   `beta1`.

# %% nbgrader={"grade": false, "grade_id": "answer_threshold", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
a_sym, z = sp.symbols("a z")
# x_{t+1} = x_t - eta*(beta1*m_t + (1-beta1)*a*x_t), m_{t+1} = beta1*m_t + (1-beta1)*a*x_t
step_matrix = sp.Matrix([[1 - eta * (1 - beta1) * a_sym, -eta * beta1],
                         [(1 - beta1) * a_sym, beta1]])
characteristic = step_matrix.charpoly(z).as_expr()
threshold_expr = sp.solve(sp.Eq(characteristic.subs(z, -1), 0), a_sym)[0]
threshold_gd = 2 / params["peak_lr"]
threshold_adam = float(threshold_expr.subs({eta: params["peak_lr"], beta1: params["beta1"]}))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_threshold", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the mathematics is checked when your notebook is graded.
assert isinstance(threshold_expr, sp.Expr), "threshold_expr should be a sympy expression"
assert {s.name for s in threshold_expr.free_symbols} <= {"eta", "beta1"}, "use only the symbols eta and beta1"
for name in ("threshold_gd", "threshold_adam"):
    assert isinstance(globals()[name], numbers.Real), f"{name} should be a plain number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("t4-warmup-and-wsd", "check_threshold", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 5b. Where the warmup matters
#
# Compare the measured `sharpness` with `threshold_adam`, using the learning rate actually in force
# at each measured step. Give lists of (0-based) indices into `at`:
# - `unstable_no_warmup`: the measured steps that would be beyond the edge if the run started at
#   `peak_lr` with no warmup;
# - `unstable_with_warmup`: those beyond it under your variant's schedule (linear warmup over
#   `warmup` steps, then the stable phase; all measured steps come before the decay);
#
# and the int `min_warmup`: the shortest linear warmup (in steps) that keeps every measured step at or
# below the edge (§3).

# %% nbgrader={"grade": false, "grade_id": "answer_warmup", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
limit = threshold_adam * params["peak_lr"]          # the bound on eta_t * sharpness


def lr_at(t, warmup):
    return params["peak_lr"] * t / warmup if t < warmup else params["peak_lr"]


pairs = list(zip(params["at"], params["sharpness"]))
unstable_no_warmup = [i for i, (t, s) in enumerate(pairs) if params["peak_lr"] * s > limit]
unstable_with_warmup = [i for i, (t, s) in enumerate(pairs) if lr_at(t, params["warmup"]) * s > limit]
min_warmup = 0
for t, s in pairs:
    if params["peak_lr"] * s > limit:
        min_warmup = max(min_warmup, t + 1, math.ceil(params["peak_lr"] * t * s / limit))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_warmup", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the answers are checked when your notebook is graded.
for name in ("unstable_no_warmup", "unstable_with_warmup"):
    assert isinstance(globals()[name], list) and all(isinstance(i, numbers.Integral) for i in globals()[name]), \
        f"{name} should be a list of indices (ints)"
assert isinstance(min_warmup, numbers.Integral), "min_warmup is a number of steps (an int)"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("t4-warmup-and-wsd", "check_warmup", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 5c. Committing late
#
# For your `budgets` and `decay_fraction`, give ints `steps_cosine` (steps to train one cosine run per
# budget, each from scratch) and `steps_wsd` (steps to train all budgets with WSD, branching decays
# off one stable run), and the float `saving` = 1 − `steps_wsd` / `steps_cosine`. Then compare the
# shortest and the longest budget, each scheduled with your `peak_lr`, `min_lr` and `warmup`: give
# the ints `shared_cosine` and `shared_wsd`, the number of initial steps $0, 1, \dots$ at which the two
# runs have the same learning rate, with cosine and with WSD. (Use e02's definitions: the first step
# of a decay, at $n_\text{steps} - \text{decay}$, is still at the peak; a branch is the checkpoint after $n_{\text{steps},i} - d_i$ steps plus
# $d_i$ further steps.)

# %% nbgrader={"grade": false, "grade_id": "answer_branching", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
budgets = params["budgets"]
decays = [round(params["decay_fraction"] * b) for b in budgets]
steps_cosine = sum(budgets)
steps_wsd = max(b - d for b, d in zip(budgets, decays)) + sum(decays)
saving = 1 - steps_wsd / steps_cosine
short, long_ = min(budgets), max(budgets)
d_short, d_long = decays[budgets.index(short)], decays[budgets.index(long_)]


def cosine(t, total):
    W, hi, lo = params["warmup"], params["peak_lr"], params["min_lr"]
    if t < W:
        return hi * t / W
    return lo + 0.5 * (hi - lo) * (1 + math.cos(math.pi * (t - W) / (total - W)))


def wsd(t, total, decay):
    W, hi, lo = params["warmup"], params["peak_lr"], params["min_lr"]
    if t < W:
        return hi * t / W
    if t <= total - decay:
        return hi
    return hi - (hi - lo) * (t - (total - decay)) / decay


def shared(f, g):
    t = 0
    while t <= short and f(t) == g(t):
        t += 1
    return t


shared_cosine = shared(lambda t: cosine(t, short), lambda t: cosine(t, long_))
shared_wsd = shared(lambda t: wsd(t, short, d_short), lambda t: wsd(t, long_, d_long))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_branching", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the answers are checked when your notebook is graded.
for name in ("steps_cosine", "steps_wsd", "shared_cosine", "shared_wsd"):
    assert isinstance(globals()[name], numbers.Integral), f"{name} is a number of steps (an int)"
assert isinstance(saving, numbers.Real) and 0 <= saving < 1, "saving is a fraction of the cosine family's steps"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("t4-warmup-and-wsd", "check_branching", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 5d. Your variant, drawn
#
# Left: $\eta_t s_t$ against the edge, with no warmup, with your warmup and with `min_warmup`. Right:
# the shortest and longest budgets under both schedules; the WSD pair coincides up to the short run's
# branch point. (Not graded; it uses your answers.)

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
ts = np.array(params["at"], dtype=float)
ss = np.array(params["sharpness"])
for w, name in ((0, "no warmup"), (params["warmup"], f"warmup {params['warmup']}"),
                (min_warmup, f"min_warmup {min_warmup}")):
    lrs = np.array([lr_at(t, w) if w else params["peak_lr"] for t in params["at"]])
    left.plot(ts + 1, lrs * ss / limit, "o-", label=name)
left.axhline(1, color="k", ls="--", label="edge of stability")
left.set(xscale="log", xlabel="step + 1", ylabel="η_t · sharpness / limit", title=f"Variant {VARIANT}: warmup")
left.legend(fontsize=8)
grid = np.linspace(0, long_, 600)
right.plot(grid, [cosine(t, long_) for t in grid], color="#4c72b0", label=f"cosine, {long_:,} steps")
right.plot(grid[grid <= short], [cosine(t, short) for t in grid[grid <= short]], color="#4c72b0", ls=":",
           label=f"cosine, {short:,} steps")
right.plot(grid, [wsd(t, long_, d_long) for t in grid], color="#dd8452", label=f"WSD, {long_:,} steps")
right.plot(grid[grid <= short], [wsd(t, short, d_short) for t in grid[grid <= short]], color="#dd8452",
           ls=":", label=f"WSD, {short:,} steps")
right.set(xlabel="step", ylabel="learning rate", title="What each schedule commits to")
right.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 6. Explain it (graded by hand)

# %% [markdown] nbgrader={"grade": false, "grade_id": "task_why_warmup", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": true} deletable=false editable=false
# Explain to a colleague who wants to drop the warmup "because Adam normalises the step anyway" what
# would happen in the first steps of your variant's run without warmup, and why the warmup prevents it.
# Use the edge-of-stability threshold and at least two of your numbers. Then name one reason the
# estimate `min_warmup` could be too short or too long in a real run.
#
# === BEGIN MARK SCHEME ===
# 3 points (half points allowed):
# 1. Mechanism: beyond the threshold (η·sharpness above (2+2β1)/(1−β1), i.e. 38 for β1 = 0.9, or
#    sharpness above 38/η) the component of the weights along the top (preconditioned) curvature
#    direction grows geometrically every step, which shows up as a loss spike or divergence;
#    Adam's normalisation does not remove this: the threshold is on the preconditioned sharpness,
#    which Adam's own preconditioner defines (Cohen et al. 2022).
# 2. Numbers: correctly says which measured steps are past the edge without warmup (quotes
#    `unstable_no_warmup`, or η_max·s_t against the limit at a named step) and what the given
#    warmup does (`unstable_with_warmup`: none in A; some remain in B, C, D, so the given warmup is
#    too short for this probe and `min_warmup` is larger than `warmup`).
# 3. A valid limitation of the estimate: sharpness responds to the learning rate (progressive
#    sharpening up to the edge, or self-stabilisation/catapult back below it), so the probe trajectory
#    would not be the run's; the probe measures only a few steps (an unmeasured step could be worse);
#    early v̂ in Adam is noisy so the preconditioned sharpness early is uncertain; stochastic
#    mini-batch noise moves the effective threshold. Any one, explained.
# === END MARK SCHEME ===

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer_why_warmup", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# (A model answer, with variant C's numbers.) With β1 = 0.9 the edge of stability for Adam's
# preconditioned sharpness is 38/η, about 633,000 at the peak learning rate 6e-5. The probe measures
# 2.6 million at initialisation and still 810,000 at step 150: starting at the peak, the first five
# measured steps (indices 0 to 4) would be past the edge, where the component of the weights along the
# sharpest direction is multiplied by more than one in size on every step. That is a loss spike, and
# if nothing lowers the curvature fast enough, divergence. Adam's normalisation does not save us,
# because the edge is defined for the preconditioned Hessian: the division by √v̂ is already inside
# the quantity that must stay below 38/η. A warmup makes η_t small while the sharpness is large; the
# given 117 steps are too short for this probe (indices 2, 3 and 4 are still past the edge), and the
# shortest linear warmup that keeps every measured step safe is 192 steps. The estimate treats the
# sharpness as fixed, but it is not: at the edge, the network tends to move to where the sharpness is
# about 38/η, so a real run may need less (it self-stabilises) or more (the early steps also shape
# where it goes).
# ### END SOLUTION

# %% [markdown] nbgrader={"grade": false, "grade_id": "task_commit_late", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": true} deletable=false editable=false
# Your lab does not yet know which of your `budgets` it will be able to afford, and wants a finished
# model at each one it reaches. Explain why warmup-stable-decay lets it decide late while a cosine
# schedule forces the decision at the start, using `shared_cosine`, `shared_wsd` and `saving`. What
# does the WSD plan cost or risk?
#
# === BEGIN MARK SCHEME ===
# 3 points (half points allowed):
# 1. Cosine's η_t depends on n_steps from step W+1 on (`shared_cosine` = W + 1), so choosing n_steps is choosing
#    the schedule from the first post-warmup step; switching later means a different schedule from
#    that point (re-warming, or a run whose schedule was never planned). WSD's η_t does not depend on
#    n_steps until the decay starts (`shared_wsd` = shortest budget minus its decay, plus one), so any
#    stable-phase checkpoint can be branched into a decay.
# 2. Uses `saving` (or steps_cosine vs steps_wsd) correctly: one stable run plus one decay per budget
#    instead of a full run per budget; the fraction quoted.
# 3. A cost or risk: stable-phase checkpoints are not finished models (higher loss until decayed, so
#    only decayed branches are comparable); each decay still has to be run (and its length chosen,
#    ~20% per Hägele et al.); the decay length and shape matter; continuing the stable phase at a
#    high learning rate for longer than planned can be unstable or inefficient. Any one, explained.
# === END MARK SCHEME ===

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer_commit_late", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# (A model answer, with variant A's numbers.) A cosine run's learning rate at every step after the
# warmup depends on the total length $n_\text{steps}$, so the 5,000-step and 20,000-step cosine runs agree only on
# their first 716 steps (the warmup and the peak); choosing a budget means choosing the schedule from
# step 716 on, before we know which budget we can afford. With WSD both runs sit at the peak until the
# shorter one starts its decay at step 4,000, so they share 4,001 steps, and in general one stable run
# can be checkpointed and any checkpoint turned into a finished model by a decay. Training all three
# budgets costs 35,000 steps as separate cosine runs but 23,000 steps as one stable run to step 16,000
# plus decays of 1,000, 2,000 and 4,000 steps: a saving of about 34%. The risk is that the stable-phase
# checkpoints are not finished models: their loss is higher until decayed, so we must still pay for a
# decay at every budget we want to use, and choose its length (Hägele et al. found about 20% of the
# run matches cosine).
# ### END SOLUTION

# %% [markdown]
# ## 7. Sources
#
# - Cohen, Kaur, Li, Kolter and Talwalkar, *Gradient Descent on Neural Networks Typically Occurs at
#   the Edge of Stability*, ICLR 2021 (the 2/η threshold and progressive sharpening).
# - Cohen, Ghorbani, Krishnan, Agarwal, Medapati et al., *Adaptive Gradient Methods at the Edge of
#   Stability*, 2022, arXiv 2207.14484 (preconditioned sharpness; 38/η for β1 = 0.9).
# - Gilmer, Ghorbani, Garg et al., *A Loss Curvature Perspective on Training Instabilities of Deep
#   Learning Models*, ICLR 2022; Kalra and Barkeshli, *Why Warmup the Learning Rate? Underlying
#   Mechanisms and Improvements*, NeurIPS 2024.
# - Hu et al., *MiniCPM: Unveiling the Potential of Small Language Models with Scalable Training
#   Strategies*, 2024 (§4, the WSD scheduler); Hägele, Bakouch, Kosson et al., *Scaling Laws and
#   Compute-Optimal Training Beyond Fixed Training Durations*, NeurIPS 2024.
# - Practice item p9-wsd-vs-cosine runs both schedules on a small model; p5-loss-spike provokes a
#   spike with too high a learning rate.
