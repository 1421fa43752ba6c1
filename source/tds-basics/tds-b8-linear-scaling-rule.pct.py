# %% [markdown]
# # tds-b8-linear-scaling-rule · The batch doubled: what happens to the learning rate?
#
# *Module TDS Training Dynamics & Scaling · basics · term 8 of 11*
#
# **The learning-rate / batch-size coupling.** A learning rate is tuned at one batch size $B_0$.
# When the batch changes to $B$ (more devices, more gradient accumulation), the tuned rate
# $\eta_0$ is carried across by a *scaling rule* in the ratio $k = B/B_0$. Two rules are in use:
#
# - the **linear scaling rule**: multiply the rate by $k$;
# - the **square-root scaling rule**: multiply the rate by $\sqrt{k}$.
#
# Neither is a law of nature. Each is an approximation that holds in a range of batch sizes and
# for a family of optimisers, and both fail beyond the critical batch size.

# %% [markdown]
# ## Where the linear rule comes from, and what Goyal et al. measured
#
# Goyal et al. (2017, *Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour*) state the
# linear rule in §2.1: "When the minibatch size is multiplied by $k$, multiply the learning rate
# by $k$." Their argument compares $k$ small steps of SGD, each on a batch of $n$ examples at rate
# $\eta$, with one big step on the union of those batches. If the gradient hardly changes over
# the $k$ small steps, the big step equals their sum exactly when its rate is $k\eta$: averaging
# over a $k$ times larger batch divides each example's contribution by $k$, and the rate must put
# it back. The assumption fails in two places they name themselves: early in training, when the
# network changes quickly (hence their gradual warmup, tds-b7), and at batches so large that one
# step replaces many steps along a curved path.
#
# Their ResNet-50 recipe writes the rule out as a reference rate of 0.1 for every 256 images
# (§5.1), and at a batch of 8k images (8192; the paper uses 1k for 1024) it gives 3.2 (Table 1).
# With gradual warmup that run matches the small-batch error within about 0.14 points. Their
# Table 2a also tries the alternatives at 8k: keeping the rate at 0.1, or scaling it by the
# square root of 32. Both were clearly worse for momentum SGD. Beyond 8k the linear rule stops
# holding: validation error rises at 16k and 32k, and beyond 64k training diverges (§5.3, Fig. 1).
# That elbow is a critical batch size, II.8's t3-critical-batch; past it a larger batch no
# longer buys fewer steps, and no rate rule can make it.

# %% [markdown]
# ## Where the square-root rule comes from
#
# The square-root rule is older. Krizhevsky (2014, *One weird trick for parallelizing
# convolutional neural networks*) notes that theory suggests multiplying the rate by $\sqrt{k}$
# when the batch grows by $k$, to keep the variance of the gradient estimate's contribution to a
# step constant: averaging $k$ times more examples shrinks the noise's standard deviation by
# $\sqrt{k}$, and scaling the rate by $\sqrt{k}$ restores the same noise per step. In his own
# experiments he then used the linear heuristic, which Goyal et al. cite as an early use of it.
#
# For adaptive optimisers the square-root rule came back with a derivation. Malladi, Lyu,
# Panigrahi and Arora (2022, *On the SDEs and Scaling Rules for Adaptive Gradient Algorithms*,
# NeurIPS) write stochastic differential equations that Adam and RMSprop follow at small rates
# and read off the rule that keeps the SDE the same when the batch changes: the rate scales with
# the square root of $k$, and the averaging coefficients and epsilon move too (this item grades
# only the rate). The reason it differs from SGD is Adam's normalisation: the step is divided by
# the gradient's own running scale, so a larger batch does not shrink the step the way it does
# for SGD, only its noise. They validate it on vision and language models across a range of
# batch sizes, and it too breaks down once the batch is large enough that the noise no longer
# dominates.
#
# A claim you will find repeated in blog posts and code comments is that "Goyal et al. proposed
# the square-root rule". They did not: they tested it and rejected it for SGD. Another is that
# one of the two rules is right and the other wrong. For plain and momentum SGD in its working
# range the linear rule is the better approximation; for Adam the square-root rule has the
# better theory; in practice large language-model recipes tune the rate at the batch they use
# and treat both rules as a starting point for the sweep.

# %% [markdown]
# ## Worked example (not your variant)
#
# A made-up run tuned at $2 \times 10^{-3}$ for 128 sequences, moved to 512 sequences.

# %%
ex_lr, ex_b0, ex_b = 2e-3, 128, 512
ex_k = ex_b / ex_b0
print(f"k = {ex_k:g}: linear rule {ex_lr * ex_k:.2e}, square-root rule {ex_lr * ex_k ** 0.5:.2e}")

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

VARIANTS = {'A': {'base_lr': 0.1, 'base_batch': 256, 'new_batches': [1024, 8192, 16384]},
 'B': {'base_lr': 0.0006, 'base_batch': 524288, 'new_batches': [1048576, 2097152, 4194304]},
 'C': {'base_lr': 0.0003, 'base_batch': 4194304, 'new_batches': [1048576, 2097152, 8388608]},
 'D': {'base_lr': 0.0001, 'base_batch': 256, 'new_batches': [512, 2048, 8192]}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-basics:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# Your variant is a published run's rate `base_lr` at its batch `base_batch` (images, sequences or
# tokens: the rules need only the ratio), and a list `new_batches`. Compute, one entry per new
# batch, in order (lists of floats):
# - `linear_lrs`: the rate the linear scaling rule gives;
# - `sqrt_lrs`: the rate the square-root scaling rule gives.

# %% nbgrader={"grade": false, "grade_id": "answer_scaling", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
ratios = [b / params["base_batch"] for b in params["new_batches"]]
linear_lrs = [params["base_lr"] * k for k in ratios]
sqrt_lrs = [params["base_lr"] * k ** 0.5 for k in ratios]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_scaling", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
for _name in ("linear_lrs", "sqrt_lrs"):
    assert isinstance(globals()[_name], list) and len(globals()[_name]) == len(params["new_batches"]), \
        f"{_name} should be a list with one number per new batch"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-b8-linear-scaling-rule", "check_scaling", globals())
### END HIDDEN TESTS
