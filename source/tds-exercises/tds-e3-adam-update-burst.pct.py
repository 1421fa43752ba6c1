# %% [markdown]
# # tds-e3-adam-update-burst · A gradient burst after a quiet stretch: how large Adam's step gets
#
# *Module TDS Training Dynamics & Scaling · mathematics · exercise 3*
#
# Almost every long pretraining run has loss spikes: the smooth curve lurches upward, sometimes
# recovers by itself, sometimes diverges. II.8's p5-loss-spike covers the operational side
# (detecting a spike, rewinding to a checkpoint, skipping batches). This exercise isolates one
# mechanism that several large-scale reports point at, and makes it exact: **Adam's
# second-moment estimate lags behind a sudden change in the size of a gradient**, so for a while
# the optimizer takes steps much larger than the learning rate it was given.
#
# **Why Adam's step is normally about η.** Adam (Kingma and Ba, ICLR 2015, Algorithm 1) keeps two
# exponential moving averages per coordinate: $m$ of the gradient, with decay $\beta_1$, and $v$ of
# the squared gradient, with decay $\beta_2$. It moves the coordinate by $\eta\, m/(\sqrt{v} + \epsilon)$
# (after bias correction, which matters only in the first few thousand steps and which we ignore
# here, as we ignore $\epsilon$ beside gradients much larger than it). If a coordinate's gradient has
# had the same size for a long time, $m$ and $\sqrt{v}$ both settle at that size, and the ratio is
# one: the step is $\eta$, whatever the gradient's scale. That scale-freeness is the point of Adam.
# It is also its weakness: the denominator is a *memory* of past gradient sizes, and a memory
# takes time to update.
#
# **The burst.** Now let the gradient of that coordinate jump from $g$ to $k g$ and stay there. On
# the first step the numerator moves part of the way toward $kg$ (how far is set by $\beta_1$), and the
# denominator moves part of the way toward $kg$ (set by $\beta_2$, through the *squared* gradient). The
# two averages forget at different rates, and the step, in units of $\eta$, is their ratio. If the
# denominator forgets much more slowly than the numerator, the ratio overshoots one, possibly by a
# lot, before both averages have caught up and the step returns to $\eta$.
#
# **Where this happens in a real model.** Molybog et al. (*A Theory on Adam Instability in
# Large-Scale Machine Learning*, arXiv 2304.09871, 2023; runs of 7B, 30B, 65B and 546B parameters)
# argue that the parameters of shallow layers, the embeddings above all, see gradients that become
# very small over long quiet stretches, so that their second-moment estimates decay; when a batch
# then gives them a large gradient, the Adam update becomes large and poorly aligned with the
# descent direction, and the loss spikes. PaLM (Chowdhery et al. 2022, §5) gives the practical
# version of the same worry: its authors let $\beta_2$ grow with the step number as
# $1 - k^{-0.8}$ and report this as more stable than the standard $0.99$, "because rare embedding
# tokens can have poorly estimated second moments over shorter windows". A token that is absent
# for thousands of steps has an embedding row whose gradient is zero, then suddenly not. PaLM's
# §5.1 describes the spikes themselves and the fix that worked: restart about 100 steps before the
# spike and skip roughly 200 to 500 batches. Wortsman et al. (*Small-scale proxies for large-scale
# Transformer training instabilities*, 2023) show that instabilities of large Transformers can be
# reproduced and studied in small ones, with Adam's settings among the causes they examine, which is
# why a mechanism like this one can be studied without a cluster.
#
# One caution about the story as it is often retold: a burst does **not** always give a large
# first step. Whether it does depends on the two decays together, and for the $\beta_2 = 0.95$ that
# many large runs use the first step can even be *smaller* than $\eta$. The danger is then in the
# steps that follow, while the burst persists. Working out which case you are in is the exercise.
#
# Questions to settle on paper before you write any code:
# - Starting from the settled state ($m = g$, $v = g^2$), what are $m$ and $v$ after one step of
#   gradient $kg$? After $j$ steps of it? (Each average is a geometric blend of old and new.)
# - What is the step, in units of $\eta$, after the first step of the burst? What does it tend to when
#   the burst is enormous, and which of the two decays decides whether that limit is above one?
# - While the burst persists, the numerator catches up quickly and the denominator slowly. Why does
#   the step rise, peak and then fall back toward one?
# - How many steps until $v$ is within a fraction `tol` of its new settled value $k^2 g^2$?

# %% [markdown]
# ## Worked example: watch one coordinate (not your variant)
#
# A scalar parameter driven by Adam with a prescribed gradient: size 1 for a long quiet stretch,
# then 4 from step 3001 on, with $\beta_1 = 0.8$ and $\beta_2 = 0.9$ (decays no real run uses, chosen
# so that the numbers are easy to follow). The code only runs PyTorch's own Adam and prints the
# size of each step divided by the learning rate; it is for checking your derivation against, not
# a formula.

# %%
import math

import sympy
import torch

ex_w = torch.zeros(1, requires_grad=True)
ex_opt = torch.optim.Adam([ex_w], lr=1e-3, betas=(0.8, 0.9), eps=0.0)
ex_steps = []
for step in range(3012):
    ex_w.grad = torch.full((1,), 1.0 if step < 3000 else 4.0)
    before = ex_w.detach().clone()
    ex_opt.step()
    ex_steps.append(float((before - ex_w.detach()).abs()) / 1e-3)
print("last quiet steps:", [round(u, 3) for u in ex_steps[2997:3000]])
print("burst steps     :", [round(u, 3) for u in ex_steps[3000:]])

# %% [markdown]
# Before the burst the step is exactly one learning rate. On the first step of the burst it
# jumps, keeps growing for a few steps while the numerator catches up faster than the denominator,
# and then settles back. With these decays the overshoot is modest; your derivation should say how
# it scales when $\beta_2$ is close to one, as it is in practice. (Adam's bias correction is still in
# the code, but with this example's $\beta_2 = 0.9$, after 3,000 steps it is one to many digits,
# which is why the model above can ignore it. With a $\beta_2$ close to one it fades far more
# slowly: a simulation of your variant must run long enough, or leave it out, as the task does.)
#
# A useful way to read the result: $1/(1 - \beta)$ is roughly the number of steps an exponential
# average remembers. For $\beta_2 = 0.999$ that is a thousand steps; for PaLM's schedule at step
# 10,000 it is about 1,600. A gradient whose typical size changes faster than that is, as far as the
# denominator is concerned, a surprise.

# %% [markdown]
# ## Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id. On
# JupyterHub that is your hub user name; on your own machine start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab`. Editing this cell does not change what you are
# graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {'A': {'beta1': 0.9, 'beta2': 0.95, 'burst': 10.0, 'tol': 0.01},
 'B': {'beta1': 0.9, 'beta2': 0.999, 'burst': 10.0, 'tol': 0.01},
 'C': {'beta1': 0.9, 'beta2': 0.99937, 'burst': 30.0, 'tol': 0.05},
 'D': {'beta1': 0.9, 'beta2': 0.98, 'burst': 100.0, 'tol': 0.001}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-exercises:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# Your parameters: `beta1` ($\beta_1$), `beta2` ($\beta_2$), `burst` ($k$, the factor by which the
# gradient jumps) and `tol`. The pairs of decays are real ones: LLaMA's and GPT-3's, Adam's
# defaults (also BERT's), PaLM's schedule evaluated at step 10,000, and RoBERTa's.
#
# ### Derive it
#
# With `beta1, beta2, k = sympy.symbols("beta1 beta2 k", positive=True)`, give
# - `first_update_expr`: the size of the first step after the burst begins, in units of $\eta$, in
#   `beta1`, `beta2` and `k` (starting from the settled state, $\epsilon$ and bias correction ignored);
# - `burst_limit_expr`: what that tends to as $k$ grows without bound, in `beta1` and `beta2`.

# %% nbgrader={"grade": false, "grade_id": "answer_expressions", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
beta1, beta2, k = sympy.symbols("beta1 beta2 k", positive=True)
first_update_expr = (beta1 + (1 - beta1) * k) / sympy.sqrt(beta2 + (1 - beta2) * k**2)
burst_limit_expr = (1 - beta1) / sympy.sqrt(1 - beta2)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expressions", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
for _name in ("first_update_expr", "burst_limit_expr"):
    assert isinstance(globals()[_name], sympy.Basic), f"{_name} should be a sympy expression"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-e3-adam-update-burst", "check_expressions", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Compute it
#
# For your variant, with the burst sustained from its first step on:
# - `first_update_ratio`: the first step of the burst, in units of $\eta$ (a float);
# - `peak_update_ratio`: the largest step of the burst, in units of $\eta$ (a float), and `peak_step`:
#   on which step of the burst it comes, counting the first as 1 (an int);
# - `catch_up_steps`: the fewest steps of the burst after which $v$ is at least $(1 - \text{tol})\,k^2 g^2$ (an int).

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
b1, b2, kb, tol = params["beta1"], params["beta2"], params["burst"], params["tol"]
catch_up_steps = math.ceil(math.log(tol * kb**2 / (kb**2 - 1)) / math.log(b2))
path = [(kb - (kb - 1) * b1**j) / math.sqrt(kb**2 - (kb**2 - 1) * b2**j) for j in range(1, catch_up_steps + 2)]
first_update_ratio = path[0]
peak_update_ratio = max(path)
peak_step = path.index(peak_update_ratio) + 1
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
for _name in ("first_update_ratio", "peak_update_ratio"):
    assert isinstance(globals()[_name], numbers.Real), f"{_name} should be a number"
for _name in ("peak_step", "catch_up_steps"):
    assert isinstance(globals()[_name], numbers.Integral), f"{_name} is a count of steps: an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-e3-adam-update-burst", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## What the numbers say, and where the model stops
#
# Compare your `first_update_ratio` with your `peak_update_ratio`. With a slow second moment the
# danger is not one large step but a run of them: the peak comes after a dozen or so steps, when
# the numerator has nearly caught up and the denominator has barely moved, and large steps go on
# until well past it. Over those steps the parameter travels several times as far as the learning
# rate intended, along whatever direction the burst pointed; if that direction has high curvature,
# the effective step is past the stability threshold of tds-e1, and the loss jumps.
#
# Three ways practitioners act on this, each visible in your derivation. A **smaller $\beta_2$**
# shortens the memory, which is why so many large runs moved from Adam's default to $0.95$; the
# price is a noisier denominator in ordinary times. **Update clipping** (Adafactor, Shazeer and Stern
# 2018, clips the root-mean-square of the update itself) caps the overshoot directly, whatever its
# cause. **Skipping the batches** that triggered the burst, as PaLM did, removes the cause but not the
# fragility.
#
# The model here is deliberately crude. A real coordinate's gradient is noisy, so $v$ tracks the
# mean square, not the square of the mean, and a burst must stand out against that noise to matter.
# Molybog et al. put weight on $\epsilon$ too: when a layer's gradients fall toward $\epsilon$, the
# denominator stops shrinking with them, and the regime changes. And the bias correction, ignored
# here, is large early in training, which is one of the reasons warmup (II.8's t4-warmup-and-wsd) helps.
# The lag itself, though, is exact arithmetic of two moving averages, and it is the part of the story
# that holds for every run.
