# %% [markdown]
# # t2-clip-versus-decay · When clipping does nothing, and when decay does harm
#
# *Chapter II.8 Training at Scale · theory · 2 of 4*
#
# **Proposition 2.** Weight decay and gradient clipping guard different failures and do not
# substitute for each other. Clipping bounds the size of one step; decay pulls every parameter
# toward zero on every step. One is about the update, the other about where the parameters end up.
#
# w5-clip-decay computed both mechanisms, and c1 drew them. This notebook looks at the edges of the
# proposition, where each guard stops guarding: a clip threshold that never fires and lets a slow
# drift through, and a decay strong enough to shrink weights the model needs. The argument behind
# the second is an **equilibrium**: the weight stops moving where decay's pull and the optimiser's
# push cancel. It lets you read a run's hyper-parameters as a statement about how large a weight
# can be, and over how many steps the weights remember their updates.
#
# Notation: $\eta$ learning rate, $\lambda$ weight decay (torch's `weight_decay`), $M$ the clip
# threshold (torch's `max_norm`; as in w5 and c1), $t$ steps. A suffix on a number (124M) means
# millions, never the threshold. For one coordinate of the gradient, $\mu$ is its mean over steps and
# $\sigma$ its standard deviation.

# %% [markdown]
# ## 1. When clipping does nothing
#
# torch's `clip_grad_norm_` multiplies all gradients by $c = \min(M/(\|g\| + 10^{-6}), 1)$, so it
# acts only on steps whose global norm is above the threshold (Pascanu, Mikolov and Bengio, ICML
# 2013, §3.2). Two consequences are easy to overlook.
#
# - **A threshold above every norm the run produces is the same as no clipping**, step for step.
#   That is not a failure in itself (the threshold is insurance against a spike that has not
#   happened yet) but it means clipping contributes nothing to the run you observe.
# - **Clipping sees steps, not trends.** Suppose one coordinate receives a small gradient of the same
#   sign on every step. Adam turns it into a step of about $\eta u$ each time, where $u$ is Adam's
#   mean step in units of $\eta$ (§2). No single step is unusual, so no threshold ever fires, and
#   without decay the weight walks off linearly, $|w_t| = \eta u t$, with no bound at all. A guard
#   that acts on the size of one step cannot stop a drift made of ordinary steps.
#
# ## 2. When decay does harm: the equilibrium
#
# torch's AdamW (Loshchilov and Hutter, ICLR 2019, Algorithm 2) updates each coordinate as
# $w \leftarrow (1 - \eta\lambda)w - \eta\,\hat m/(\sqrt{\hat v} + \epsilon)$. Take a coordinate whose
# gradient has mean $-\mu$ (it pushes $w$ upward) and standard deviation $\sigma$. Once the moments
# have settled, $\hat m$ averages to $-\mu$ and $\hat v$ to $\mu^2 + \sigma^2$, so Adam's **mean step**
# is $\eta u$ with
#
# $$u = \frac{\mu}{\sqrt{\mu^2 + \sigma^2}} \in (0, 1],$$
#
# the share of the gradient that is signal rather than noise. Decay pulls by $\eta\lambda|w|$. The
# weight stops growing where the two cancel:
#
# $$\eta\lambda\,w^* = \eta u \quad\Longrightarrow\quad w^* = \frac{u}{\lambda}.$$
#
# **The learning rate cancels.** Under AdamW the largest magnitude a weight can hold is set by the
# weight decay and the gradient's signal-to-noise ratio alone: a coordinate with $u = 0.02$ and
# $\lambda = 0.1$ cannot exceed 0.2, however long the run and whatever the schedule. If the model needs
# that weight to be 0.5, decay is doing harm: it holds the weight at 40% of what the loss asks for.
# The largest decay that still allows a needed magnitude $|w_{need}|$ is $\lambda = u/|w_{need}|$.
# (In a real loss the push weakens as the weight approaches its optimum, so the weight settles below
# both the optimum and $u/\lambda$: the cap is an upper bound.)
#
# ## 3. How fast, and how noisy: the timescale
#
# With a constant mean step the recursion $w_{t+1} = (1 - \eta\lambda)w_t + \eta u$ solves to
#
# $$w_t = \frac{u}{\lambda}\big(1 - (1 - \eta\lambda)^t\big),$$
#
# which approaches the cap over a **timescale** of $1/(\eta\lambda)$ steps. Wang and Aitchison (2024,
# *How to set AdamW's weight decay as you scale model and dataset size*) read AdamW's weights as an
# exponential moving average of the updates over exactly this many steps. Two regimes follow:
#
# - **Run shorter than the timescale**: the weights never reach equilibrium, and decay is a mild
#   correction (GPT-3's settings are an example: check variant B's numbers if you have them).
# - **Run many timescales long**: the weights forget anything the gradient stops supporting within a
#   few timescales, and the equilibrium decides where they sit.
#
# A coordinate that only receives noise ($\mu = 0$) random-walks: each step adds about $\eta^2$ of
# variance (momentum correlates neighbouring steps, but summed over many steps Adam's steps add up
# like the normalised gradients themselves), and decay shrinks the variance by $(1 - \eta\lambda)^2$.
# The balance $s^2 = (1 - \eta\lambda)^2 s^2 + \eta^2$ gives the noise floor
#
# $$ w_{rms} = \sqrt{\frac{\eta}{\lambda(2 - \eta\lambda)}} \approx \sqrt{\frac{\eta}{2\lambda}},$$
#
# the per-coordinate form of the equilibrium norm Kosson et al. (*Rotational Equilibrium*, ICML 2024)
# derive for AdamW. The ratio of the signal's cap to this floor, $u\sqrt{2/(\eta\lambda)}$ for small
# $\eta\lambda$, falls as $\eta\lambda$ grows: the moving average spans fewer steps, so noise averages
# out less. That is the second way **too large an $\eta\lambda$** does harm, even when the cap is high
# enough: useful weights stand out less clearly from the noise.
#
# The model above is an approximation (it replaces $\hat m/\sqrt{\hat v}$ by the ratio of the
# averages). The next cell checks it against `torch.optim.AdamW` on a thousand independent
# coordinates with a short timescale, so that it runs in a second.

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import torch

torch.manual_seed(0)
demo_lr, demo_wd, demo_steps, coords = 1e-2, 1.0, 1200, 1000      # timescale 100 steps
signal_mu, noise_sigma = 0.1, 1.0
weights = torch.nn.Parameter(torch.zeros(2, coords, dtype=torch.float64))
optimizer = torch.optim.AdamW([weights], lr=demo_lr, weight_decay=demo_wd, betas=(0.9, 0.95))
trace = []
for _ in range(demo_steps):
    noise = noise_sigma * torch.randn(2, coords, dtype=torch.float64)
    noise[0] -= signal_mu                 # row 0: gradient mean -mu (a useful push); row 1: pure noise
    weights.grad = noise
    optimizer.step()
    trace.append((weights[0].mean().item(), weights[1].pow(2).mean().sqrt().item()))
demo_u = signal_mu / math.hypot(signal_mu, noise_sigma)
print(f"signal row: mean weight {trace[-1][0]:.4f}   model u/lambda = {demo_u / demo_wd:.4f}")
print(f"noise row : rms weight  {trace[-1][1]:.4f}   model sqrt(eta/(lambda(2-eta*lambda))) = "
      f"{math.sqrt(demo_lr / (demo_wd * (2 - demo_lr * demo_wd))):.4f}")

fig, ax = plt.subplots(figsize=(7, 3.6))
steps_axis = np.arange(1, demo_steps + 1)
ax.plot(steps_axis, [a for a, _ in trace], label="AdamW: mean of the signal coordinates")
ax.plot(steps_axis, demo_u / demo_wd * (1 - (1 - demo_lr * demo_wd) ** steps_axis), "--",
        label="model: (u/λ)(1 − (1 − ηλ)^t)")
ax.plot(steps_axis, [b for _, b in trace], label="AdamW: rms of the noise coordinates")
ax.axhline(math.sqrt(demo_lr / (2 * demo_wd)), color="gray", ls=":", label="model noise floor")
ax.set(xlabel="step", ylabel="weight", title="Decay's equilibrium, measured with torch.optim.AdamW")
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# The simulation lands within a few percent of the model: close enough to plan with, not to three
# digits. Your answers below are graded against the model's formulas.
#
# ## 4. Your variant
#
# The learning rate, weight decay and run length are those of a published run (LLaMA-7B, GPT-3
# 175B, BERT-base or DeiT-B); the gradient norms, thresholds, gradient statistics and needed
# magnitude are made up. Run the next cell. It works out which variant you are graded on from your
# student id. On JupyterHub that is your hub user name; working on your own machine, start Jupyter
# with `JUPYTERHUB_USER=<your course id> jupyter lab` so that you see the same variant the grader
# uses. Editing this cell does not change what you are graded on.
#
# Your parameters: `grad_norms` (global gradient norms of a stretch of training), `thresholds`
# (candidate values of $M$), `lr`, `weight_decay`, `steps` (the run's length), `signal` ($\mu$) and
# `noise` ($\sigma$) for one coordinate, and `needed` (the magnitude that coordinate's weight should
# reach).

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import sympy as sp

eta, lam, mu, sigma = sp.symbols("eta lambda mu sigma", positive=True)

VARIANTS = {
    "A": {"grad_norms": [0.42, 0.38, 0.45, 1.9, 0.41, 0.36, 0.47, 0.37, 7.3, 0.39, 0.44, 0.43],
          "thresholds": [0.4, 1.0, 2.0, 10.0],
          "lr": 3.0e-4, "weight_decay": 0.1, "steps": 250_000,
          "signal": 0.02, "noise": 1.0, "needed": 0.5},
    "B": {"grad_norms": [0.55, 0.61, 0.58, 0.52, 0.66, 12.4, 0.57, 0.60, 0.63, 0.54, 3.1, 0.59],
          "thresholds": [0.3, 1.0, 25.0, 50.0],
          "lr": 6.0e-5, "weight_decay": 0.1, "steps": 93_750,
          "signal": 0.05, "noise": 1.0, "needed": 0.3},
    "C": {"grad_norms": [0.21, 0.19, 0.24, 0.22, 0.20, 0.26, 0.23, 0.18, 2.7, 0.21, 0.245, 0.20],
          "thresholds": [5.0, 0.5, 1.0, 0.25],
          "lr": 1.0e-4, "weight_decay": 0.01, "steps": 1_000_000,
          "signal": 0.004, "noise": 0.1, "needed": 2.0},
    "D": {"grad_norms": [0.90, 0.85, 1.2, 0.95, 31.0, 0.88, 0.92, 0.87, 0.93, 2.2, 0.89, 0.91],
          "thresholds": [1.0, 0.1, 100.0, 3.0],
          "lr": 1.0e-3, "weight_decay": 0.05, "steps": 375_000,
          "signal": 0.015, "noise": 0.5, "needed": 0.8},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"theory:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ### 4a. Clipping
#
# - `clipped_counts`: for each threshold in `params["thresholds"]`, in order, the number of steps
#   of `grad_norms` on which torch's `clip_grad_norm_` would change the gradient (a list of ints);
# - `idle_thresholds`: the (0-based) indices of the thresholds that never act on these steps;
# - `weight_no_decay`: how far the coordinate of §1 drifts in the whole run with no weight decay,
#   $\eta u \cdot$ `steps` (use your variant's $u$ from `signal` and `noise`; no threshold stops it).

# %% nbgrader={"grade": false, "grade_id": "answer_clipping", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def acts(norm, threshold):
    return threshold / (norm + 1e-6) < 1.0


clipped_counts = [sum(acts(n, m) for n in params["grad_norms"]) for m in params["thresholds"]]
idle_thresholds = [i for i, c in enumerate(clipped_counts) if c == 0]
u = params["signal"] / math.hypot(params["signal"], params["noise"])
weight_no_decay = params["lr"] * u * params["steps"]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_clipping", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the numbers are checked when your notebook is graded.
assert isinstance(clipped_counts, list) and len(clipped_counts) == len(params["thresholds"]), \
    "clipped_counts needs one count per threshold"
assert all(isinstance(c, numbers.Integral) for c in clipped_counts), "counts are ints"
assert isinstance(idle_thresholds, list) and all(isinstance(i, numbers.Integral) for i in idle_thresholds), \
    "idle_thresholds is a list of indices (ints)"
assert isinstance(weight_no_decay, numbers.Real), "weight_no_decay should be a plain number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("t2-clip-versus-decay", "check_clipping", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4b. The equilibrium
#
# - `update_ratio`: $u$ for your coordinate;
# - `equilibrium_weight`: the magnitude at which decay's pull balances Adam's mean step;
# - `equilibrium_expr`: the same as a sympy expression in the symbols `mu`, `sigma`, `lam` (and
#   `eta`, if it survives; the setup cell defines all four);
# - `largest_safe_decay`: the largest weight decay that still lets the weight reach `needed`.

# %% nbgrader={"grade": false, "grade_id": "answer_equilibrium", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
w_sym = sp.Symbol("w", positive=True)
step = eta * mu / sp.sqrt(mu**2 + sigma**2)                     # Adam's mean step
equilibrium_expr = sp.solve(sp.Eq(eta * lam * w_sym, step), w_sym)[0]
update_ratio = u
equilibrium_weight = update_ratio / params["weight_decay"]
largest_safe_decay = update_ratio / params["needed"]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_equilibrium", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the mathematics is checked when your notebook is graded.
for name in ("update_ratio", "equilibrium_weight", "largest_safe_decay"):
    assert isinstance(globals()[name], numbers.Real), f"{name} should be a plain number"
assert isinstance(equilibrium_expr, sp.Expr), "equilibrium_expr should be a sympy expression"
assert {s.name for s in equilibrium_expr.free_symbols} <= {"eta", "lambda", "mu", "sigma"}, \
    "use only the symbols eta, lam (lambda), mu and sigma"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("t2-clip-versus-decay", "check_equilibrium", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4c. The timescale and the noise floor
#
# - `weight_with_decay`: the coordinate's weight after the whole run, starting from 0, with decay
#   (the recursion of §3, exactly, at constant $\eta$);
# - `timescale_steps`: $1/(\eta\lambda)$;
# - `noise_rms`: the equilibrium rms of a pure-noise coordinate (the exact form of §3);
# - `weight_snr`: `equilibrium_weight / noise_rms`.

# %% nbgrader={"grade": false, "grade_id": "answer_timescale", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
pull = params["lr"] * params["weight_decay"]
weight_with_decay = equilibrium_weight * (1 - (1 - pull) ** params["steps"])
timescale_steps = 1 / pull
noise_rms = math.sqrt(params["lr"] / (params["weight_decay"] * (2 - pull)))
weight_snr = equilibrium_weight / noise_rms
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_timescale", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
for name in ("weight_with_decay", "timescale_steps", "noise_rms", "weight_snr"):
    assert isinstance(globals()[name], numbers.Real), f"{name} should be a plain number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("t2-clip-versus-decay", "check_timescale", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4d. Your run, drawn
#
# The coordinate's weight over your run with and without decay, the cap and the needed magnitude,
# and the norms against your thresholds. (Not graded; it uses your answers.)

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
t_axis = np.linspace(0, params["steps"], 400)
left.plot(t_axis, params["lr"] * update_ratio * t_axis, label="no decay: η u t")
left.plot(t_axis, equilibrium_weight * (1 - (1 - pull) ** t_axis), label="AdamW decay")
left.axhline(equilibrium_weight, color="gray", ls=":", label=f"cap u/λ = {equilibrium_weight:.3g}")
left.axhline(params["needed"], color="#c44e52", ls="--", label=f"needed {params['needed']:g}")
left.axhspan(0, noise_rms, color="#dddddd", label=f"noise floor {noise_rms:.3g}")
left.set(xlabel="step", ylabel="|w| of the coordinate", ylim=(0, 1.3 * max(params["needed"], equilibrium_weight)),
         title=f"Variant {VARIANT}: timescale 1/(ηλ) = {timescale_steps:,.0f} steps")
left.legend(fontsize=8)
right.bar(range(len(params["grad_norms"])), params["grad_norms"], color="#4c72b0")
for m, count in zip(params["thresholds"], clipped_counts):
    right.axhline(m, ls="--", color="#c44e52" if count else "#55a868")
    right.annotate(f"M={m:g}: {count} clipped", (len(params["grad_norms"]) - 0.5, m), fontsize=8,
                   ha="right", va="bottom")
right.set(yscale="log", xlabel="step", ylabel="global gradient norm", title="Which thresholds ever act")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 5. Explain it (graded by hand)

# %% [markdown] nbgrader={"grade": false, "grade_id": "task_no_substitute", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": true} deletable=false editable=false
# Two colleagues review your run's configuration. One says: "We clip at the smallest of your
# thresholds, so weight decay is redundant." The other says: "We use weight decay, so clipping is
# redundant." Answer both in a short paragraph, using your variant's numbers (at least one from 4a
# and one from 4b or 4c).
#
# === BEGIN MARK SCHEME ===
# 3 points (half points allowed):
# 1. Against dropping decay: clipping acts only on steps whose norm exceeds the threshold (reads
#    `clipped_counts` correctly, e.g. how many of the steps the chosen threshold touches and that a
#    threshold above every norm touches none); a drift made of ordinary steps is never touched, and without
#    decay the coordinate of §1 grows without bound (quotes `weight_no_decay`, or says it grows
#    linearly in the number of steps). Clipping bounds a step, not where the weights end up.
# 2. Against dropping clipping: decay's pull on a step is ηλ|w|, the same on a spike step as on any
#    other and tiny compared with a spike's gradient; it does nothing to bound one abnormally large
#    update (or, with Adam, the spike's lingering effect on the moments). Decay bounds the
#    equilibrium (u/λ, quoted), not the size of one step.
# 3. Concludes that the two guard different failures (one step too big vs. weights too large or
#    noisy over many steps) and that each one's "doing nothing" on ordinary steps is by design. Full
#    credit needs a number used correctly; a paragraph without any variant number caps at 2.
# === END MARK SCHEME ===

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer_no_substitute", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# (A model answer, with variant A's numbers.) Dropping decay because we clip: the smallest
# threshold, 0.4, acts on 8 of the 12 steps, but the others act on 2, 1 and 0, and whichever we
# choose, clipping only ever rescales a step whose norm is too large. It never sees a trend: a
# coordinate pushed the same way on every step moves by about ηu per step, no step is unusual, and
# without decay it drifts 1.5 in this run and keeps growing linearly. Decay is what caps it, at
# u/λ ≈ 0.2. Dropping clipping because we decay: decay shrinks each weight by ηλ = 3e-5 of itself per
# step whatever the gradient is; on the step with norm 7.3 it does exactly what it does on a step with
# norm 0.4, so it cannot stop that step (or, with Adam, the spike's effect on the moments for the
# steps that follow). Clipping bounds the size of one update; decay bounds where the weights settle
# over many updates. Each does nothing on most of what the other handles, which is why a run keeps
# both.
# ### END SOLUTION

# %% [markdown] nbgrader={"grade": false, "grade_id": "task_decay_harm", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": true} deletable=false editable=false
# Does weight decay do harm in your variant? Compare `equilibrium_weight` (and `weight_with_decay`)
# with `needed`. Then say what happens to the cap, to the timescale and to `weight_snr` if
# (i) the weight decay is multiplied by 10, (ii) the learning rate is multiplied by 10 instead.
# End with one concrete change you would make to the configuration, and why.
#
# === BEGIN MARK SCHEME ===
# 3 points (half points allowed):
# 1. Correct verdict from the numbers: harm when u/λ < needed (variants A and D, where
#    `largest_safe_decay` < λ) or when the run is too short to reach `needed` (variant B:
#    weight_with_decay ≈ 0.21 < 0.3, though decay costs only part of that; without decay it would
#    reach ≈ 0.28); no harm in C (cap ≈ 4 > 2, reached to ≈ 2.5 by the end). The verdict must
#    follow from the student's own numbers.
# 2. (i) λ × 10: cap u/λ falls 10×, timescale falls 10×, snr u·sqrt(2/(ηλ)) falls by √10.
#    (ii) η × 10: cap unchanged (η cancels), timescale falls 10×, snr falls by √10 (noise floor
#    √(η/2λ) rises). Both parts needed for the point; half for one.
# 3. A sensible change with a reason tied to the equilibrium or timescale: lower λ toward
#    `largest_safe_decay`; exempt parameters that must be large (gains, biases; nanoGPT and many
#    codebases decay only 2-D weight matrices); or keep ηλ so that the timescale is a set fraction of
#    the run (Wang and Aitchison 2024) when changing η or the run length.
# === END MARK SCHEME ===

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer_decay_harm", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# (A model answer, with variant A's numbers.) Yes: the coordinate's signal share is u ≈ 0.02, so
# AdamW with λ = 0.1 caps it at u/λ ≈ 0.20, and after 250,000 steps (7.5 timescales of 33,333 steps)
# it sits at that cap, 40% of the 0.5 the model needs. The largest decay that would let it reach 0.5
# is about 0.04. (i) With λ = 1.0 the cap would fall to 0.02, the timescale to 3,333 steps and
# weight_snr from about 5.2 to about 1.6: the weight would hardly stand out from its own noise.
# (ii) With η = 3e-3 instead, the cap would stay 0.20, because the learning rate cancels in the
# balance, but the timescale would again fall to 3,333 steps and the noise floor would rise by √10,
# so weight_snr would also drop to about 1.6. I would lower the decay to about 0.04 for this kind of
# parameter (or exempt it, as is common for gains and biases), and when changing η or the run length
# later, keep ηλ such that the timescale stays the same fraction of the run.
# ### END SOLUTION

# %% [markdown]
# ## 6. Sources
#
# - Pascanu, Mikolov and Bengio, *On the difficulty of training recurrent neural networks*, ICML
#   2013, §3.2 (norm clipping); torch's `clip_grad_norm_` for the convention graded here.
# - Loshchilov and Hutter, *Decoupled Weight Decay Regularization*, ICLR 2019, Algorithm 2, and
#   `torch.optim.AdamW` (which multiplies the decay by the learning rate).
# - Kosson, Messmer and Jaggi, *Rotational Equilibrium: How Weight Decay Balances Learning Across
#   Neural Networks*, ICML 2024 (the equilibrium norm of AdamW under noise).
# - Wang and Aitchison, *How to set AdamW's weight decay as you scale model and dataset size*, 2024
#   (the weights as an exponential moving average with timescale $1/(\eta\lambda)$).
