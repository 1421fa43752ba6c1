# %% [markdown]
# # e10-noise-scale · How big a batch is worth it: the gradient noise scale
#
# *Chapter II.8 Training at Scale · mathematics · exercise 10 of 10*
#
# Doubling the batch halves the number of steps only while the gradient is noisy. Once the
# mini-batch gradient is already a good estimate of the true one, a bigger batch buys little
# and the extra examples are wasted. McCandlish, Kaplan, Amodei et al. (*An Empirical Model of
# Large-Batch Training*, 2018, arXiv 1812.06162) turned this into one measurable number, the
# **gradient noise scale**, and showed how to measure it for free during data-parallel training.
#
# Notation: $B$ batch size (examples), $G$ the true gradient (the mean of the per-example
# gradients), $\Sigma$ the covariance of one example's gradient, $G_B$ the mean gradient of a
# mini-batch of $B$ examples drawn independently. Apparatus: estimators, bias and variance
# (0.ST.01), variance and covariance (0.PR.03).

# %% [markdown]
# ## 1. Why a measured gradient norm is too big
#
# $G_B = G + \xi$ where the noise $\xi$ has mean zero and covariance $\Sigma/B$. Expanding the square,
# the cross term averages to zero and
#
# $$\mathbb{E}\,|G_B|^2 = |G|^2 + \frac{\operatorname{tr}\Sigma}{B}.$$
#
# So the squared norm you can read off a training step is a **biased** estimate of $|G|^2$: it
# carries the noise's total variance divided by the batch size. The smaller the batch, the worse.
# Late in training, when $|G|^2$ is small, the bias can be most of what you measure.
#
# ## 2. Two batch sizes, two unknowns
#
# Data-parallel training measures two batch sizes at once without extra work: each device's
# local gradient ($B_{small}$ examples) before the all-reduce, and the global gradient
# ($B_{big}$ examples) after it. That gives two equations of the form above (with measured
# $|G_{small}|^2$ and $|G_{big}|^2$ in place of the expectations) for the two unknowns $|G|^2$ and
# $\operatorname{tr}\Sigma$. Solving them gives estimates of both that are **unbiased**
# (McCandlish et al., Appendix A); you will do the algebra in sympy.
#
# The **simple noise scale** is their ratio,
#
# $$B_{simple} = \frac{\operatorname{tr}\Sigma}{|G|^2},$$
#
# a number of examples: the batch size at which the noise in $G_B$ is about as large as the signal.
# It is a simplification of the paper's $B_{noise} = \operatorname{tr}(H\Sigma)/(G^\top H G)$, which
# weights directions by the Hessian $H$; the two agree when $H$ is a multiple of the identity.
# A ratio of two unbiased estimates is not itself unbiased, which is why the paper averages
# $|G|^2$ and $\operatorname{tr}\Sigma$ separately over many steps before dividing. Here you take one
# averaged measurement as given.
#
# ## 3. What the noise scale predicts
#
# The paper's model of training (§2) says that reaching a given loss at batch size $B$ takes
#
# $$\frac{S}{S_{min}} = 1 + \frac{B_{noise}}{B} \ \text{optimisation steps},\qquad
#   \frac{E}{E_{min}} = 1 + \frac{B}{B_{noise}} \ \text{training examples},$$
#
# relative to the fewest steps ($S_{min}$, infinitely large batches) and the fewest examples
# ($E_{min}$, tiny batches). The two ratios satisfy $(S/S_{min} - 1)(E/E_{min} - 1) = 1$: at
# $B = B_{noise}$ a run pays twice the minimum of each; far below it, steps are wasted; far above
# it, examples are. The paper calls the balance point the critical batch size and finds it tracks
# the noise scale; you will use $B_{simple}$ in place of $B_{noise}$.

# %%
import matplotlib.pyplot as plt
import numpy as np

ratio = np.logspace(-2, 2, 200)   # B / B_noise
fig, ax = plt.subplots(figsize=(6, 3.6))
ax.plot(ratio, 1 + 1 / ratio, label="steps  S / S_min")
ax.plot(ratio, 1 + ratio, label="examples  E / E_min")
ax.axvline(1, color="gray", ls=":")
ax.set(xscale="log", yscale="log", xlabel="B / B_noise", ylabel="cost relative to its minimum",
       title="Steps against examples as the batch grows")
ax.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 4. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id. On
# JupyterHub that is your hub user name; working on your own machine, start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab` so that you see the same variant the grader
# uses. Editing this cell does not change what you are graded on.
#
# Your parameters: `b_small` (one device's batch), `b_big` (the global batch), `g2_small` and
# `g2_big` (the squared gradient norms measured at those batch sizes, already averaged over
# steps), and `batch`, a batch size you are considering for the rest of the run.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import sympy as sp

b_small, b_big, g2_small, g2_big = sp.symbols("b_small b_big g2_small g2_big", positive=True)

VARIANTS = {
    "A": {"b_small": 8, "b_big": 512, "g2_small": 0.3801, "g2_big": 0.02691, "batch": 256},
    "B": {"b_small": 16, "b_big": 2048, "g2_small": 0.07378, "g2_big": 0.002462, "batch": 256},
    "C": {"b_small": 32, "b_big": 8192, "g2_small": 0.009752, "g2_big": 0.0001018, "batch": 16384},
    "D": {"b_small": 4, "b_big": 64, "g2_small": 2.8, "g2_big": 0.5031, "batch": 16},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"exercises:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ### 4a. Derive
#
# Write the two equations of §2 with unknowns for $|G|^2$ and $\operatorname{tr}\Sigma$, solve them
# with sympy, and form `b_simple_expr`: the simple noise scale as an expression in the symbols
# `b_small`, `b_big`, `g2_small`, `g2_big` defined above (any equivalent form is accepted).

# %% nbgrader={"grade": false, "grade_id": "answer_expr", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
true_g2, trace = sp.symbols("G2 S", positive=True)
estimates = sp.solve([sp.Eq(g2_small, true_g2 + trace / b_small),
                      sp.Eq(g2_big, true_g2 + trace / b_big)], [true_g2, trace], dict=True)[0]
g2_expr, trace_expr = estimates[true_g2], estimates[trace]
b_simple_expr = sp.simplify(trace_expr / g2_expr)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expr", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the mathematics is checked when your notebook is graded.
assert isinstance(b_simple_expr, sp.Expr), "b_simple_expr should be a sympy expression"
assert {s.name for s in b_simple_expr.free_symbols} <= {"b_small", "b_big", "g2_small", "g2_big"}, \
    "use only the symbols b_small, b_big, g2_small and g2_big"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e10-noise-scale", "check_expr", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4b. Compute the estimates
#
# From your variant's measurements compute, as plain floats:
# - `g2`: the unbiased estimate of $|G|^2$;
# - `trace_sigma`: the unbiased estimate of $\operatorname{tr}\Sigma$;
# - `b_simple`: the simple noise scale, in examples.

# %% nbgrader={"grade": false, "grade_id": "answer_estimates", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
measured = {b_small: params["b_small"], b_big: params["b_big"],
            g2_small: params["g2_small"], g2_big: params["g2_big"]}
g2 = float(g2_expr.subs(measured))
trace_sigma = float(trace_expr.subs(measured))
b_simple = trace_sigma / g2
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_estimates", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the numbers are checked when your notebook is graded.
for name in ("g2", "trace_sigma", "b_simple"):
    assert isinstance(globals()[name], numbers.Real), f"{name} should be a plain number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e10-noise-scale", "check_estimates", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4c. Steps and examples at your batch size
#
# Using $B_{simple}$ as $B_{noise}$, compute at `params["batch"]`:
# - `steps_ratio`: $S/S_{min}$;
# - `examples_ratio`: $E/E_{min}$.

# %% nbgrader={"grade": false, "grade_id": "answer_tradeoff", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
steps_ratio = 1 + b_simple / params["batch"]
examples_ratio = 1 + params["batch"] / b_simple
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_tradeoff", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
for name in ("steps_ratio", "examples_ratio"):
    assert isinstance(globals()[name], numbers.Real), f"{name} should be a plain number"
    assert globals()[name] >= 1, f"{name} compares a cost with its minimum: it cannot be below 1"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e10-noise-scale", "check_tradeoff", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 5. Check your estimator where the truth is known
#
# A least-squares problem lets us compute the exact gradient and the exact per-example covariance
# at a fixed weight vector, then sample mini-batches as a data-parallel run would. The cell below
# feeds the simulated measurements to **your** `b_simple_expr` and compares it with the truth, and
# with the naive estimate that divides by the small-batch norm. (Not graded.)

# %%
rng = np.random.default_rng(0)
n_examples, dim = 4096, 32
x = rng.normal(size=(n_examples, dim))
y = x @ rng.normal(size=dim) + rng.normal(scale=2.0, size=n_examples)
w = rng.normal(size=dim) * 0.3
per_example = x * (x @ w - y)[:, None]          # gradient of (x.w - y)^2 / 2 for each example
true_G = per_example.mean(axis=0)
true_trace = per_example.var(axis=0).sum()      # tr(Sigma) over the whole data set
true_noise_scale = true_trace / (true_G @ true_G)

devices, local = 16, 8                          # b_small = 8 per device, b_big = 128 in all
steps = 400
small_sq, big_sq = [], []
for _ in range(steps):
    idx = rng.integers(0, n_examples, size=(devices, local))   # independent draws
    local_means = per_example[idx].mean(axis=1)                # one gradient per device
    small_sq.append((local_means**2).sum(axis=1).mean())       # mean of the per-device |G_small|^2
    big_sq.append((local_means.mean(axis=0)**2).sum())         # |G_big|^2 after the all-reduce
mean_small_sq, mean_big_sq = float(np.mean(small_sq)), float(np.mean(big_sq))
has_answer = "b_simple_expr" in globals() and isinstance(b_simple_expr, sp.Expr)


def your_estimate(g2s, g2b):
    """Your b_simple_expr at the simulated batch sizes, matching its symbols by name."""
    by_name = {s.name: s for s in b_simple_expr.free_symbols}
    args = [by_name.get(name, sp.Symbol(name)) for name in ("b_small", "b_big", "g2_small", "g2_big")]
    return sp.lambdify(args, b_simple_expr, "numpy")(local, devices * local, g2s, g2b)


print(f"true B_simple                         {true_noise_scale:8.1f}")
if has_answer:
    print(f"your estimator on {steps} simulated steps   {float(your_estimate(mean_small_sq, mean_big_sq)):8.1f}")
naive = (mean_small_sq - mean_big_sq) / (1 / local - 1 / (devices * local)) / mean_small_sq
print(f"naive: tr(Sigma) / |G_small|^2         {naive:8.1f}")

# the same, as the averaging window grows
window = np.arange(1, steps + 1)
mean_small, mean_big = np.cumsum(small_sq) / window, np.cumsum(big_sq) / window
fig, ax = plt.subplots(figsize=(6, 3.6))
ax.axhline(true_noise_scale, color="k", ls=":", label="true B_simple")
if has_answer:
    ax.plot(window, your_estimate(mean_small, mean_big) * np.ones_like(window), label="your estimator")
trace_running = (mean_small - mean_big) / (1 / local - 1 / (devices * local))
ax.plot(window, trace_running / mean_small, label="naive (divides by |G_small|^2)")
ax.set(xlabel="steps averaged", ylabel="estimated noise scale (examples)", ylim=(0, 2.5 * true_noise_scale),
       title="Estimating B_simple from simulated data-parallel steps")
ax.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# ### 5b. Read your numbers
#
# Is your `batch` below or above the noise scale? If you doubled it, by how much would the number
# of steps fall, and how many more examples would the run consume? The paper also finds that the
# noise scale grows as the loss falls: what does that suggest about keeping one batch size for a
# whole run? (Not graded: a few sentences for yourself.)

# %% [markdown]
# *Your answer, for yourself (not graded): double-click this cell and write it here.*
