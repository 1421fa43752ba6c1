# %% [markdown]
# # p5-loss-spike · Break it: a loss spike from too high a learning rate
#
# *Chapter II.8 Training at Scale · practice · break it · 5 of 9*
#
# On a long pretraining run the loss curve sometimes jumps upward, by a few times, within a few
# steps. The PaLM team saw it roughly twenty times in their largest run even though gradient
# clipping was on; their remedy was operational: restart from a checkpoint about 100 steps
# before the spike and skip the 200 to 500 batches around it (Chowdhery et al. 2022, §5.1).
# Spikes have several causes. This notebook produces the simplest one on purpose: a learning
# rate that is too high for the network as it is at the start. You will build a spike detector,
# break a small run, and try the two standard guards, **warmup** and **gradient clipping**, to
# see which of them does anything about it, and why.
#
# Sources: Goyal et al., *Accurate, Large Minibatch SGD* (2017), §2.2 (gradual warmup: a linear
# ramp to the target rate over the first epochs); Brown et al., *Language Models are Few-Shot
# Learners* (2020), Appendix B (GPT-3: a linear warmup over the first 375 million tokens, and
# clipping of the global gradient norm at 1.0); Kingma and Ba, *Adam* (ICLR 2015), §2.1 (the
# size of Adam's step is bounded by the learning rate and does not change when the gradient is
# rescaled); Chowdhery et al., *PaLM* (2022), §5.1.

# %% [markdown]
# ## 1. What a spike is, as a number
#
# A loss curve is noisy, so "the loss went up" is not a spike. We call step $t \ge 1$ a **spike**
# when its loss is more than `ratio` times the lowest loss seen before it:
# $$\ell_t > r \cdot \min_{s < t} \ell_s .$$
# The report of the first spike has three numbers:
#
# - its step $t$ (steps counted from 0, like the list of losses);
# - its **peak**: the largest loss from step $t$ up to (not including) the recovery, divided by
#   $b = \min_{s<t} \ell_s$, the best loss before the spike;
# - its **recovery**: the first step after $t$ whose loss is back below $b$, or $-1$ if that
#   never happens (then the peak runs to the end of the list).
#
# With no spike at all the report is `[-1, 0.0, -1]`.
#
# Why the best-so-far and not the previous step? A spike can build over several steps, none of
# which doubles the one before; and late in a run the loss is far below where it started, so the
# starting loss is no yardstick either.

# %% [markdown]
# ## 2. Why a high learning rate bites at the start
#
# Adam divides each coordinate of its momentum by the square root of its running mean square.
# At the first step both are built from one gradient $g$, and with bias correction the update
# is $\eta\, g / |g|$ in every coordinate: each weight moves by the full learning rate $\eta$,
# however small or large its gradient is. A network at initialisation is not ready for that:
# at a high $\eta$ every weight moves at once by a large, coherent amount, the outputs jump, and
# so does the loss. With ReLU units there is lasting damage: units pushed to negative
# pre-activations on every example output zero, receive zero gradient, and never come back.
#
# **Warmup** starts $\eta$ small and ramps it up, so the first, sign-like steps are small and the
# running statistics fill in before the rate is large. **Clipping** rescales the gradient when
# its norm exceeds a threshold. Think about what that does to $g/|g|$ before you run it.

# %% [markdown]
# ## 3. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id. On
# JupyterHub that is your hub user name; working on your own machine, start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab` so that you see the variant the grader uses.
# Editing this cell does not change what you are graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {
    "A": {"seed": 0, "steps": 60, "peak_lr": 0.1, "warmup_steps": 10, "max_norm": 1.0, "spike_ratio": 2.0},
    "B": {"seed": 2, "steps": 60, "peak_lr": 0.12, "warmup_steps": 12, "max_norm": 0.1, "spike_ratio": 2.0},
    "C": {"seed": 5, "steps": 60, "peak_lr": 0.1, "warmup_steps": 8, "max_norm": 0.5, "spike_ratio": 2.0},
    "D": {"seed": 11, "steps": 60, "peak_lr": 0.1, "warmup_steps": 15, "max_norm": 0.25, "spike_ratio": 2.0},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"practice:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: seed {params['seed']}, {params['steps']} steps, "
      f"peak lr {params['peak_lr']}, warmup {params['warmup_steps']} steps, clip at {params['max_norm']}, "
      f"spike ratio {params['spike_ratio']}")

# %% [markdown]
# ## 4. The harness
#
# Given and locked. A ReLU network (8 → 32 → 32 → 1, 1,409 parameters) is trained full-batch
# on 256 examples of a noisy regression task with AdamW ($\beta_1 = 0.9$, $\beta_2 = 0.95$, GPT-3's
# values; no weight decay) and a cosine decay of the learning rate to zero over the run.
# `train(seed, steps, peak_lr, warmup_steps=0, max_norm=None)` returns `(losses, final_loss,
# model)`: the loss at every step (before that step's update), the loss after the last update,
# and the trained model. With `warmup_steps` $= W > 0$ the rate ramps linearly,
# $\eta_t = \eta\,(t+1)/W$ for $t < W$, before the cosine; with `max_norm` the global gradient norm
# is clipped with `torch.nn.utils.clip_grad_norm_` before every update.

# %% nbgrader={"grade": false, "grade_id": "harness", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)   # tiny tensors: one thread is fastest, and the numbers never depend on it
N_EXAMPLES, N_IN, N_HIDDEN = 256, 8, 32


# chapter: include graders.problems.practice.p5_loss_spike.make_data


# chapter: include graders.problems.practice.p5_loss_spike.make_model


# chapter: include graders.problems.practice.p5_loss_spike.lr_factor


# chapter: include graders.problems.practice.p5_loss_spike.train


# %% [markdown]
# ## 5. Build the detector
#
# Write `spike_report(losses, ratio)`: `losses` is a list of floats, `ratio` a float above 1;
# return the list `[step, peak, recovery]` of section 1 (`[-1, 0.0, -1]` when nothing spikes).
# The grader calls it on hidden loss curves: mid-run spikes, slow blow-ups, spikes that never
# recover, and curves without a spike.

# %% nbgrader={"grade": false, "grade_id": "answer_detector", "locked": false, "schema_version": 3, "solution": true, "task": false}
def spike_report(losses, ratio):
    """[first spike step, peak / best loss before it, first step back below that best] or [-1, 0.0, -1]."""
    ### BEGIN SOLUTION
    best = losses[0]
    for t in range(1, len(losses)):
        if losses[t] > ratio * best:
            later = [u for u in range(t + 1, len(losses)) if losses[u] < best]
            recovery = later[0] if later else -1
            end = recovery if recovery > 0 else len(losses)
            return [t, max(losses[t:end]) / best, recovery]
        best = min(best, losses[t])
    return [-1, 0.0, -1]
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_detector", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the hidden test compares spike_report with a torch reference on hidden curves.
_r = spike_report([1.0, 0.8, 0.7, 2.0, 0.6], 2.0)
assert isinstance(_r, (list, tuple)) and len(_r) == 3, "return [step, peak, recovery]"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p5-loss-spike", "check_detector", globals())
### END HIDDEN TESTS

# %% [markdown]
# Try it on a curve you can check by hand (not graded): the best before step 3 is 0.5, the loss
# at step 3 is 1.2 > 2 × 0.5, it rises to 1.5 at step 4, and step 6 is the first one below 0.5.
# You should see `[3, 3.0, 6]`.

# %%
try:
    print(spike_report([1.0, 0.7, 0.5, 1.2, 1.5, 0.6, 0.45, 0.4], 2.0))
except NotImplementedError:
    print("Write spike_report above first.")

# %% [markdown]
# ## 6. Break it
#
# Run your variant three times with `train(seed, steps, peak_lr, ...)`: with no fix, with
# `warmup_steps` from your variant, and with `max_norm` from your variant (and no warmup). Then
# report:
#
# - `spike_nofix`, `spike_warmup`, `spike_clip`: `spike_report` of each run's losses at your
#   variant's `spike_ratio`;
# - `final_loss_nofix`, `final_loss_warmup`, `final_loss_clip`: each run's final loss;
# - `dead_units_nofix`, `dead_units_warmup`: the number of hidden ReLU units, in both hidden
#   layers together, whose output is zero on **every** one of the 256 training examples at the
#   end of the run without a fix, and with warmup. (`model[1](model[0](x))` is the first hidden
#   layer's output; `make_data(seed)` gives `x`.)

# %% nbgrader={"grade": false, "grade_id": "answer_spikes", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_q = params
runs = {
    "nofix": train(_q["seed"], _q["steps"], _q["peak_lr"]),
    "warmup": train(_q["seed"], _q["steps"], _q["peak_lr"], warmup_steps=_q["warmup_steps"]),
    "clip": train(_q["seed"], _q["steps"], _q["peak_lr"], max_norm=_q["max_norm"]),
}
spike_nofix = spike_report(runs["nofix"][0], _q["spike_ratio"])
spike_warmup = spike_report(runs["warmup"][0], _q["spike_ratio"])
spike_clip = spike_report(runs["clip"][0], _q["spike_ratio"])
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_spikes", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the reports are checked when your notebook is graded.
for _rep in (spike_nofix, spike_warmup, spike_clip):
    assert len(_rep) == 3, "each report is [step, peak, recovery]"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p5-loss-spike", "check_spikes", globals())
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "answer_damage", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def count_dead(model, x):
    with torch.no_grad():
        h1 = model[1](model[0](x))
        h2 = model[3](model[2](h1))
    return int((h1.amax(dim=0) == 0).sum() + (h2.amax(dim=0) == 0).sum())


_x, _ = make_data(params["seed"])
final_loss_nofix = runs["nofix"][1]
final_loss_warmup = runs["warmup"][1]
final_loss_clip = runs["clip"][1]
dead_units_nofix = count_dead(runs["nofix"][2], _x)
dead_units_warmup = count_dead(runs["warmup"][2], _x)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_damage", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
import numbers

assert all(isinstance(v, numbers.Real) for v in (final_loss_nofix, final_loss_warmup, final_loss_clip))
assert isinstance(dead_units_nofix, numbers.Integral) and isinstance(dead_units_warmup, numbers.Integral), \
    "dead units are counts (ints)"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p5-loss-spike", "check_damage", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 7. Look at it
#
# The three loss curves on a log scale, each spike marked, and the learning rate each run used.

# %%
import matplotlib.pyplot as plt

_q = params
_curves = {
    "no fix": train(_q["seed"], _q["steps"], _q["peak_lr"])[0],
    f"warmup {_q['warmup_steps']} steps": train(_q["seed"], _q["steps"], _q["peak_lr"],
                                                warmup_steps=_q["warmup_steps"])[0],
    f"clip at {_q['max_norm']}": train(_q["seed"], _q["steps"], _q["peak_lr"], max_norm=_q["max_norm"])[0],
}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.6), gridspec_kw={"width_ratios": [2, 1]})
for _name, _losses in _curves.items():
    (_line,) = ax1.plot(_losses, label=_name)
    try:
        _t = spike_report(_losses, _q["spike_ratio"])[0]
        if _t >= 0:
            ax1.plot([_t], [_losses[_t]], "o", color=_line.get_color(), ms=8)
    except NotImplementedError:
        pass
ax1.set_yscale("log")
ax1.set_xlabel("step")
ax1.set_ylabel("loss (circles: first spike)")
ax1.legend()
_steps = range(_q["steps"])
ax2.plot(_steps, [_q["peak_lr"] * lr_factor(s, 0, _q["steps"]) for s in _steps], label="no warmup")
ax2.plot(_steps, [_q["peak_lr"] * lr_factor(s, _q["warmup_steps"], _q["steps"]) for s in _steps],
         label="warmup")
ax2.set_xlabel("step")
ax2.set_ylabel("learning rate")
ax2.legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 8. Why clipping did not stop it
#
# Below, one fresh model takes its first AdamW step on the raw gradient and another on the
# gradient clipped to your variant's `max_norm`, as the clipped run did. If the gradient norm is
# already under `max_norm`, clipping does nothing at all: it is the learning rate that is too
# large, not the gradient. If the norm is over it, the weights still land almost where they did:
# Adam's first step is $\eta\, g/(|g| + \epsilon)$ per coordinate, the same for any rescaled $g$
# except in coordinates whose gradient is itself close to $\epsilon = 10^{-8}$.

# %%
def _first_step(max_norm):
    model = make_model(params["seed"])
    x, y = make_data(params["seed"])
    opt = torch.optim.AdamW(model.parameters(), lr=params["peak_lr"], betas=(0.9, 0.95), weight_decay=0.0)
    F.mse_loss(model(x), y).backward()
    norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm))
    opt.step()
    return norm, torch.cat([p.detach().flatten() for p in model.parameters()])


_before = torch.cat([p.detach().flatten() for p in make_model(params["seed"]).parameters()])
_norm, _raw = _first_step(float("inf"))
_, _clipped = _first_step(params["max_norm"])
print(f"gradient norm at step 0: {_norm:.3f}; clipping multiplies it by {min(1.0, params['max_norm'] / _norm):.3f}")
print(f"largest move of a weight in the first step: {float((_raw - _before).abs().max()):.6f} "
      f"(peak lr {params['peak_lr']})")
_gap = float((_raw - _clipped).norm() / (_raw - _before).norm())
print(f"size of the difference between the clipped and the unclipped first step, relative to the step: {_gap:.1e}")

# %% [markdown]
# ## 9. Read your numbers
#
# Not graded; a few sentences for yourself.
#
# - At which step did the run without a fix spike, how high, and how fast did it come back below
#   its starting loss? Did that quick recovery mean the spike was harmless? Compare the final
#   losses and the dead units.
# - Did warmup remove the spike in your variant, or only move it? (In one variant a spike still
#   comes, right after the ramp reaches the peak: warmup buys the network time to adapt, but it
#   does not make a rate that is too high safe.)
# - Clipping left the first spike where it was. Using section 8, say why; then say why it still
#   changed the final loss. Where does clipping earn its keep (Proposition 2, and SGD, whose step
#   is proportional to the gradient)?
# - PaLM's spikes came with clipping on, late in training, at irregular times. Which of your
#   three runs resembles that, and which of PaLM's remedies (restart earlier, skip the batches)
#   would have helped here?

# %% [markdown]
# *Your answer, for yourself (not graded): double-click this cell and write it here.*
