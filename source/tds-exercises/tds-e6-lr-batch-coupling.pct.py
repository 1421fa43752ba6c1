# %% [markdown]
# # tds-e6-lr-batch-coupling · The best SGD learning rate as the batch grows
#
# *Module TDS Training Dynamics & Scaling · mathematics · exercise*
#
# When a run moves to more devices, its batch grows, and the learning rate has to move with it.
# Two rules of thumb are repeated everywhere: scale the rate *linearly* with the batch (Goyal et
# al. 2017, *Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour*), or by its *square root*
# (Krizhevsky 2014, *One weird trick for parallelizing convolutional neural networks*). Neither
# can hold at every batch size: the rate cannot grow without bound, because a gradient with no
# noise at all still has a best step. McCandlish, Kaplan, Amodei et al. (*An Empirical Model of
# Large-Batch Training*, 2018, §2) derived the curve that joins the two regimes, and this
# exercise has you derive it, fit it to a tuned run, and find where the linear rule goes wrong.
#
# Read II.8's e10-noise-scale and t3-critical-batch first. They measure the gradient noise scale
# $B_\mathrm{noise}$ from two batch sizes and use it for the trade-off between optimisation steps
# and training examples, *at the best rate for each batch*. Here the subject is that best rate
# itself; the noise scale is given.
#
# ## The model: one step on a noisy quadratic
#
# Near the current parameters, treat the loss as quadratic, with true gradient $G$ and Hessian $H$.
# A mini-batch of $B$ examples does not give $G$; it gives $G$ plus noise whose covariance is the
# per-example covariance $\Sigma$ divided by $B$, because averaging $B$ independent draws divides
# their variance by $B$. Plain SGD steps by $\epsilon$ times that estimate. The route, to follow on
# paper before any code:
# - Expand the loss after the step to second order in $\epsilon$. The first-order term is the
#   gain from moving downhill; the second-order term is the cost of curvature.
# - Take the expectation over the batch. The gain involves only the true gradient. The cost has
#   two parts: one from the true gradient's own curvature, and one from the noise, which involves
#   $\operatorname{tr}(H\Sigma)$ and the batch size.
# - Maximise the expected improvement over $\epsilon$: a downward parabola, so set its derivative to
#   zero.
# - Rewrite the result with two names: $\epsilon_\mathrm{max}$, the best step when the gradient is
#   exact, and $B_\mathrm{noise}$, the ratio of the noise's curvature cost to the true gradient's.
#   The second is McCandlish et al.'s noise scale (the "simple" version that e10 measures assumes
#   in addition that $H$ is a multiple of the identity).
#
# Then ask what your expression does in its two limits, batches far below the noise scale and far
# above it. One limit is Goyal et al.'s rule, the other a ceiling. This course writes the rate
# $\eta$, so the graded expression is in $\eta_\mathrm{max}$, $B_\mathrm{noise}$ and $B$.
#
# ## Reading a tuned run through the model
#
# In practice nobody knows $\epsilon_\mathrm{max}$. What a run knows is that some rate
# $\eta_0$ was tuned, and worked best, at some batch $b_0$. If the model holds, that single
# point fixes the whole curve, given the noise scale: the tuned rate is already the ceiling
# reduced by the noise at $b_0$. So a small, well-tuned run and a measured noise scale predict
# the best rate at every other batch, and how far the linear rule drifts from it.
#
# The linear rule carries $\eta_0$ to batch $B$ by the ratio of batches. Its ratio to the best
# rate is one at $b_0$ and grows with the batch. Find that ratio as a function of $B$ and solve for
# the batch at which it reaches a given factor: that is where the linear rule overshoots by that
# much. The answer is simple enough to say in words: the overshoot starts to bite when the batch is
# comparable to the noise scale, not when it is comparable to $b_0$.
#
# ## What the sources say, and what is misquoted
#
# Goyal et al. trained ResNet-50 on ImageNet with a rate of 0.1 for 256 images per batch and scaled
# it linearly, with a gradual warmup, up to 8192 images, matching the small-batch accuracy; past
# that, accuracy degraded. The model above gives one reason: at ImageNet's noise scale late in
# training (tens of thousands of images), the linear rule overshoots the best rate by a growing
# factor once the batch is in the thousands. It is not the whole reason; very large rates also run
# into the stability limit of tds-e1 early in training, which is what their warmup addresses.
#
# The linear rule is often quoted as a law of SGD. It is a limit: McCandlish et al.'s expression
# reduces to it only while the batch is small compared with the noise scale. The square-root rule
# of Krizhevsky is sometimes quoted as its competitor, justified by keeping the variance of the
# step constant; the model says neither is right in general, and which looks better in an
# experiment depends on where the batches sit against the noise scale.
#
# The derivation is for plain SGD, whose step is linear in the averaged gradient. Adam's is not:
# its per-coordinate denominator makes early updates close to the gradient's sign. For such
# sign-like updates the best rate need not even be monotone in the batch: Li et al. (2024,
# *Surge Phenomenon in Optimal Learning Rate and Batch Size Scaling*) find, in theory and in
# experiments, that it first rises and then falls as the batch grows. Nothing in this exercise
# should be carried to Adam without that caveat.
#
# ## When the model fails
#
# The noise scale is not a constant of the dataset: McCandlish et al. find it grows as the loss
# falls, often by an order of magnitude over a run, so the best rate at a fixed batch drifts too.
# The quadratic model is local, and $\epsilon_\mathrm{max}$ is the best step along the current
# gradient, which can be far larger than any rate a real run survives; your variant's ceiling may
# look absurdly high for exactly that reason. Treat the ceiling as a statement about where the
# curve flattens, not as a rate to use.

# %% [markdown]
# ## Worked example: the best step on a noisy one-dimensional quadratic (not your variant)
#
# A loss $\tfrac12 h\theta^2$ at $\theta = 1$, with per-example gradients spread around the true
# one. We sample many batches at two batch sizes, average the loss after one SGD step for each
# rate on a grid, and print the best rate found. No closed form is used: compare what you derive
# with what this prints.

# %%
import numpy as np
import sympy

ex_rng = np.random.default_rng(1)
ex_h, ex_theta, ex_spread = 2.0, 1.0, 6.0       # curvature, position, per-example gradient spread
ex_grid = np.linspace(0.01, 0.6, 60)
for ex_batch in (4, 64):
    ex_grads = ex_h * ex_theta + ex_spread * ex_rng.standard_normal((40000, ex_batch)).mean(axis=1)
    ex_after = [np.mean(0.5 * ex_h * (ex_theta - lr * ex_grads) ** 2) for lr in ex_grid]
    print(f"batch {ex_batch:>2}: best rate on the grid {ex_grid[int(np.argmin(ex_after))]:.2f}")

# %% [markdown]
# The larger batch allows a much larger step, but not sixteen times larger: the best rate is
# already close to the step that would be best with an exact gradient.

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

VARIANTS = {'A': {'b0': 256, 'eta0': 0.1, 'b_noise': 20000, 'batches': [256, 1024, 8192, 32768, 65536], 'factor': 1.5},
 'B': {'b0': 128, 'eta0': 0.1, 'b_noise': 1000, 'batches': [128, 256, 512, 2048, 8192], 'factor': 2.0},
 'C': {'b0': 64, 'eta0': 0.01, 'b_noise': 900, 'batches': [64, 128, 512, 1024, 4096], 'factor': 1.25},
 'D': {'b0': 1024, 'eta0': 0.4, 'b_noise': 50000, 'batches': [1024, 4096, 16384, 65536], 'factor': 1.2}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-exercises:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ### Derive it
#
# With `eta_max, B_noise, B = sympy.symbols("eta_max B_noise B", positive=True)`, give
# - `eta_opt_expr`: the best SGD rate at batch `B`, in `eta_max`, `B_noise` and `B`.

# %% nbgrader={"grade": false, "grade_id": "answer_expression", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
eta_max_, B_noise_, B_ = sympy.symbols("eta_max B_noise B", positive=True)
eta_opt_expr = eta_max_ / (1 + B_noise_ / B_)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expression", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the value is checked when your notebook is graded.
assert isinstance(eta_opt_expr, sympy.Basic), "eta_opt_expr should be a sympy expression"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-e6-lr-batch-coupling", "check_expression", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Compute it
#
# Your variant's run found `eta0` best at batch `b0`, and its noise scale is `b_noise`. Assuming
# McCandlish et al.'s model:
# - `eta_max`: the ceiling rate the tuned point implies (a float);
# - `optimal_rates`: the best rate at each batch in `batches`, in that order (a list of floats);
# - `overshoot_batch`: the batch at which the linear rule, started from (`b0`, `eta0`), gives `factor` times the best rate (a float).

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
eta_max = params["eta0"] * (1 + params["b_noise"] / params["b0"])
optimal_rates = [eta_max / (1 + params["b_noise"] / b) for b in params["batches"]]
overshoot_batch = params["factor"] * (params["b0"] + params["b_noise"]) - params["b_noise"]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
assert isinstance(eta_max, numbers.Real), "eta_max should be a number"
assert isinstance(optimal_rates, list) and len(optimal_rates) == len(params["batches"]), "one rate per batch"
assert isinstance(overshoot_batch, numbers.Real), "overshoot_batch should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-e6-lr-batch-coupling", "check_numbers", globals())
### END HIDDEN TESTS
