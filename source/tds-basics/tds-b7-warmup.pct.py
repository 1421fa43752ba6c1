# %% [markdown]
# # tds-b7-warmup · Why the first few hundred steps are taken at a fraction of the rate
#
# *Module TDS Training Dynamics & Scaling · basics · term 7 of 11*
#
# **Warmup.** A *learning-rate warmup* starts a run at a small rate and raises it to the peak
# rate $\eta_{\text{peak}}$ over the first $W$ steps. The usual shape is a straight line from zero,
#
# $$\eta_t = \eta_{\text{peak}} \cdot \min\!\left(1, \frac{t}{W}\right), \qquad t = 0, 1, 2, \dots$$
#
# so the rate is zero at step 0, half the peak at step $W/2$, and the peak from step $W$ on. What
# comes after the warmup (a cosine, a stable phase and a decay) is the subject of II.8's
# e02-schedules, which computes whole schedules; this item holds the rate at the peak after $W$
# and asks only about the ramp and its length.

# %% [markdown]
# ## Why Adam in particular needs it
#
# Adam divides each coordinate's step by the square root of $v$, a running average of that
# coordinate's squared gradients with coefficient $\beta_2$. At the very start the average has
# seen only a handful of gradients. Bias correction fixes its *scale*, but not its *noise*: an
# estimate built from three or four samples can be far too small for some coordinates, and those
# coordinates then take steps many times larger than the rate suggests. Liu et al. (2020, *On the
# Variance of the Adaptive Learning Rate and Beyond*, ICLR) made this the explanation of warmup:
# the variance of the adaptive rate is large, even unbounded, in the first steps, and warmup
# keeps those steps small until the estimate has settled. Their fix, RAdam, switches the adaptive
# scaling on only when the variance can be bounded.
#
# Ma and Yarats (2021, *On the Adequacy of Untuned Warmup for Adaptive Optimization*, AAAI)
# disagreed with the mechanism but not with the need. They argue that what matters for stability
# is the size of the update term itself, which is large early for the same reason, and they show
# that a warmup whose length is read off $\beta_2$ alone performs about as well as RAdam on image
# classification, language modelling and translation. Their default: a linear warmup lasting
# twice the averaging time of the second moment. The averaging time of an exponential moving
# average with coefficient $\beta_2$ is about one over $(1 - \beta_2)$ steps, the time constant of
# their exponential warmup; the linear ramp that matches it runs twice as long. It is a rule that
# needs no tuning, and it is a floor rather than a recommendation for a large run.
#
# For plain SGD the story is different and older. Goyal et al. (2017, *Accurate, Large Minibatch
# SGD*, §2.2) needed a gradual warmup because their linearly scaled rate (tds-b8) was too large
# for a network still changing quickly, not because of any second-moment estimate. Warmup has
# more than one job; tds-b1's sharpness threshold and II.8's t4-warmup-and-wsd give the curvature
# view, in which a small early rate lets the sharpness fall before the rate rises past the edge.

# %% [markdown]
# ## What real runs use
#
# Published warmups are much longer than the untuned rule. Llama 2 (Touvron et al. 2023, §2.2)
# warms up over 2000 steps with AdamW and $\beta_2 = 0.95$; OPT-175B (Zhang et al. 2022, §2.2)
# also over 2000 steps with $\beta_2 = 0.95$, and its smaller models over the first 375M tokens;
# GPT-3 (Brown et al. 2020, Appendix B) over the first 375M tokens, while its batch size was itself
# still ramping up, so its warmup in *steps* depends on that second ramp; BERT (Devlin et al. 2019,
# Appendix A.2) over 10,000 steps with $\beta_2 = 0.999$. A warmup written in tokens must be
# divided by the tokens per step to become steps, and when the batch changes during the warmup
# there is no single answer.
#
# So the multiple of the untuned length is a useful sanity check on a config: a warmup much
# *shorter* than the untuned rule leaves Adam taking its first steps on a noisy second moment; a
# warmup far longer is buying something else, usually tolerance of a higher peak rate (Kalra and
# Barkeshli, *Why Warmup the Learning Rate?*, NeurIPS 2024, make that case). Large language-model runs sit far above the floor because the
# early loss landscape is sharp and a spike in the first thousand steps costs the whole run.
#
# Two details trip people up when reading code. nanoGPT and build-nanogpt compute the warmup as
# $\eta_{\text{peak}}(t + 1)/W$, so step 0 already has a small nonzero rate; this item, like
# II.8's e02-schedules, uses $\eta_{\text{peak}}\, t / W$, which is zero at step 0. And once
# $t \ge W$ the ramp stops: a schedule that keeps climbing past its peak is a bug, not a longer
# warmup. Check which convention a codebase uses before comparing numbers with it.

# %% [markdown]
# ## Worked example (not your variant)
#
# A made-up AdamW run with peak rate $5 \times 10^{-4}$, a 400-step warmup and $\beta_2 = 0.99$.

# %%
ex_peak, ex_warmup, ex_beta2 = 5e-4, 400, 0.99
for t in (0, 100, 400, 1000):
    print(f"step {t:>5}: rate {ex_peak * min(1.0, t / ex_warmup):.2e}")
ex_untuned = 2 / (1 - ex_beta2)
print(f"untuned linear warmup: {ex_untuned:.0f} steps; this run's warmup is {ex_warmup / ex_untuned:.1f} times that")

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

VARIANTS = {'A': {'peak_lr': 0.0003,
       'warmup_steps': 2000,
       'beta1': 0.9,
       'beta2': 0.95,
       'at': [1, 40, 500, 2000, 10000]},
 'B': {'peak_lr': 0.0001,
       'warmup_steps': 10000,
       'beta1': 0.9,
       'beta2': 0.999,
       'at': [1, 100, 2000, 7500, 20000]},
 'C': {'peak_lr': 0.0006,
       'warmup_steps': 715,
       'beta1': 0.9,
       'beta2': 0.95,
       'at': [1, 40, 100, 715, 5000]},
 'D': {'peak_lr': 0.00012,
       'warmup_steps': 2000,
       'beta1': 0.9,
       'beta2': 0.95,
       'at': [1, 10, 40, 1500, 3000]}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-basics:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# Your variant is a published run: its `peak_lr`, its `warmup_steps` $W$, Adam's `beta1` and
# `beta2`, and a list of steps `at`. Compute
# - `rates`: the learning rate at each step of `at`, in order, under the linear warmup above
#   (held at the peak after $W$) (a list of floats);
# - `untuned_warmup`: the length in steps of Ma and Yarats's untuned linear warmup for this
#   run's Adam (a float);
# - `warmup_multiple`: how many times that untuned length the run's own warmup is (a float).

# %% nbgrader={"grade": false, "grade_id": "answer_warmup", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
rates = [params["peak_lr"] * min(1.0, t / params["warmup_steps"]) for t in params["at"]]
untuned_warmup = 2 / (1 - params["beta2"])
warmup_multiple = params["warmup_steps"] / untuned_warmup
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_warmup", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
assert isinstance(rates, list) and len(rates) == len(params["at"]), "rates should be a list with one number per step in at"
assert isinstance(untuned_warmup, numbers.Real) and isinstance(warmup_multiple, numbers.Real), \
    "untuned_warmup and warmup_multiple should be numbers"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-b7-warmup", "check_warmup", globals())
### END HIDDEN TESTS
