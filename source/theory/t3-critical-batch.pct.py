# %% [markdown]
# # t3-critical-batch · Why larger batches stop paying
#
# *Chapter II.8 Training at Scale · theory · 3 of 4*
#
# More devices means a bigger global batch, and a bigger batch means a better gradient. For a
# while that is as good as it sounds: twice the batch, half the steps, the same total work,
# the run finishes in half the time. Then, quite suddenly, it stops being true: twice the batch
# buys a few percent fewer steps and costs twice the compute. This notebook asks **why**, and
# **where** the bend is, with the model of McCandlish, Kaplan, Amodei et al., *An Empirical Model
# of Large-Batch Training* (2018, arXiv 1812.06162, §2 and §3).
#
# You measured a noise scale in e10-noise-scale; here it becomes a planning tool.
# Notation: $B$ batch size (examples; here sequences), $S$ optimisation steps and $E = BS$
# training examples needed to reach a fixed target loss, $G$ the true gradient, $\Sigma$ the
# per-example gradient covariance. Apparatus: variance and covariance (0.PR.03).

# %% [markdown]
# ## 1. One step: noise sets how much a step can achieve
#
# A mini-batch gradient is $G_B = G + \xi$ with noise of covariance $\Sigma/B$. McCandlish et al.
# (§2) take the best step along $G_B$ on a locally quadratic loss and find that it lowers the loss
# by
#
# $$\Delta L_{opt}(B) = \frac{\Delta L_{max}}{1 + B_{noise}/B},\qquad
#   B_{noise} = \frac{\operatorname{tr}(H\Sigma)}{G^\top H G},$$
#
# where $\Delta L_{max}$ is what a step along the *exact* gradient would achieve and $H$ is the
# Hessian. Read it as a signal-to-noise statement. While $B \ll B_{noise}$ the noise dominates,
# and each extra example improves the step almost in proportion; once $B \gg B_{noise}$ the step is
# already nearly as good as an exact-gradient step, and more examples cannot improve it further.
# The best learning rate follows the same curve, $\epsilon_{opt}(B) = \epsilon_{max}/(1 + B_{noise}/B)$:
# it grows roughly linearly with $B$ at first and then saturates. (That is why "scale the learning
# rate with the batch" works, and why it eventually stops working.) With $H$ replaced by the
# identity, $B_{noise}$ becomes the simple noise scale $B_{simple} = \operatorname{tr}\Sigma/|G|^2$
# that e10 taught you to measure; the paper uses it as the practical estimate, and so do we.
#
# ## 2. A whole run: steps against examples
#
# If every step achieves $1/(1 + B_{noise}/B)$ of its noise-free best, reaching a target loss takes
#
# $$S = S_{min}\Big(1 + \frac{B_{noise}}{B}\Big),\qquad E = B\,S = S_{min}\,(B + B_{noise})
#   = E_{min}\Big(1 + \frac{B}{B_{noise}}\Big),$$
#
# with $S_{min}$ the steps at an infinite batch and $E_{min} = S_{min}B_{noise}$ the examples at an
# infinitesimal one (§2). Eliminating $B$ gives the paper's trade-off curve,
# $(S/S_{min} - 1)(E/E_{min} - 1) = 1$: a hyperbola on which every run lies, whatever its batch.
# The **critical batch size** is the paper's name for the bend, $B_{crit} = E_{min}/S_{min}$, which
# in this model is exactly $B_{noise}$. At $B = B_{crit}$ a run pays twice the minimum of both: twice
# $S_{min}$ steps and twice $E_{min}$ examples.
#
# - **Perfect scaling**, $B \ll B_{crit}$: $S \approx S_{min}B_{noise}/B$ halves when $B$ doubles, and
#   $E \approx E_{min}$ does not move. More devices finish sooner at no extra cost.
# - **Diminishing returns**, $B \gg B_{crit}$: $S \approx S_{min}$ hardly moves, and
#   $E \approx E_{min}B/B_{noise}$ grows in proportion to $B$. More devices burn compute and finish
#   at about the same time.
#
# The ratio of steps before and after doubling, $S(B)/S(2B) = 2(B + B_{noise})/(2B + B_{noise})$,
# slides from 2 down to 1 across the bend; it is $4/3$ exactly at $B = B_{noise}$.
#
# ## 3. What the model leaves out
#
# - **The noise scale is not a constant.** McCandlish et al. (§3) find that it grows as the loss
#   falls, often by an order of magnitude or more over a run; Kaplan et al. 2020 (*Scaling Laws for
#   Neural Language Models*, §5.1) fit the critical batch of language models as a power law in the
#   loss alone, $B_{crit}(L) \approx B_*/L^{1/\alpha_B}$. A batch that is wasteful in the first
#   thousand steps can be efficient later, which is the case for ramping the batch up during a run
#   (GPT-3 did, Brown et al. 2020, Appendix B).
# - **The learning rate is assumed retuned for every batch.** Hold it fixed while the batch grows
#   and you are no longer on the hyperbola.
# - **$B_{simple}$ is not $B_{noise}$.** The two agree when the Hessian is a multiple of the identity;
#   the paper reports that $B_{simple}$ tracks $B_{crit}$ up to a roughly constant factor. Treat the
#   numbers below as the bend's location to within a factor of a few, not to three digits.

# %%
import matplotlib.pyplot as plt
import numpy as np

ratio = np.logspace(-2, 2, 400)                  # B / B_noise
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
left.plot(1 + ratio, 1 + 1 / ratio, color="#4c72b0")
for r, name in ((0.1, "B = 0.1 B_noise"), (1.0, "B = B_noise"), (10.0, "B = 10 B_noise")):
    left.plot(1 + r, 1 + 1 / r, "o", color="#c44e52")
    left.annotate(name, (1 + r, 1 + 1 / r), textcoords="offset points", xytext=(8, 4))
left.set(xscale="log", yscale="log", xlabel="examples  E / E_min", ylabel="steps  S / S_min",
         title="Every batch size lies on one hyperbola")
right.plot(ratio, 2 * (ratio + 1) / (2 * ratio + 1), color="#55a868")
right.axvline(1, color="gray", ls=":")
right.set(xscale="log", xlabel="B / B_noise", ylabel="S(B) / S(2B)", ylim=(0.95, 2.05),
          title="What doubling the batch buys")
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
# Your parameters: the data-parallel measurement of e10 (`b_small`, `b_big`, `g2_small`,
# `g2_big`); `batches`, the global batch sizes under discussion (sequences); `s_min`, the fewest
# steps that reach the target loss; `overhead`, the extra compute you are willing to pay (a fraction
# of $E_{min}$); `speedup`, the gain from doubling that you still call "near-linear"; `max_steps`,
# the step budget the deadline allows.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {
    "A": {"b_small": 16, "b_big": 1024, "g2_small": 0.2125, "g2_big": 0.01563,
          "batches": [32, 128, 512, 2048], "s_min": 20_000, "overhead": 0.1, "speedup": 1.8,
          "max_steps": 30_000},
    "B": {"b_small": 8, "b_big": 2048, "g2_small": 0.3646, "g2_big": 0.003516,
          "batches": [128, 512, 1024, 2048, 4096], "s_min": 60_000, "overhead": 0.2, "speedup": 1.9,
          "max_steps": 75_000},
    "C": {"b_small": 32, "b_big": 4096, "g2_small": 0.08165, "g2_big": 0.001035,
          "batches": [2048, 8192, 16384, 65536], "s_min": 8_000, "overhead": 0.25, "speedup": 1.5,
          "max_steps": 12_000},
    "D": {"b_small": 8, "b_big": 2048, "g2_small": 0.3015, "g2_big": 0.002672,
          "batches": [256, 512, 1024, 2048], "s_min": 100_000, "overhead": 0.3, "speedup": 1.75,
          "max_steps": 400_000},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"theory:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ### 4a. Where is the bend?
#
# Compute `b_noise`, the simple noise scale from your variant's measurement (the unbiased
# estimates of e10, then their ratio), as a float in sequences.

# %% nbgrader={"grade": false, "grade_id": "answer_noise", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
bs, bb, gs, gb = params["b_small"], params["b_big"], params["g2_small"], params["g2_big"]
g2_true = (bb * gb - bs * gs) / (bb - bs)
trace_sigma = (gs - gb) / (1 / bs - 1 / bb)
b_noise = trace_sigma / g2_true
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_noise", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the number is checked when your notebook is graded.
assert isinstance(b_noise, numbers.Real) and b_noise > 0, "b_noise should be a positive number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("t3-critical-batch", "check_noise", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4b. The candidates on the hyperbola
#
# For each batch in `params["batches"]`, in the same order, compute lists of floats:
# - `steps`: the steps $S$ to the target loss;
# - `examples`: the examples $E$ those steps consume;
# - `doubling_speedups`: $S(B)/S(2B)$, what doubling that batch would buy;
#
# and `diminishing`: the list of the (0-based) indices of the candidates that sit in the
# diminishing-returns regime, $B > B_{crit}$.

# %% nbgrader={"grade": false, "grade_id": "answer_tradeoff", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def steps_for(batch):
    return params["s_min"] * (1 + b_noise / batch)


steps = [steps_for(b) for b in params["batches"]]
examples = [b * s for b, s in zip(params["batches"], steps)]
doubling_speedups = [steps_for(b) / steps_for(2 * b) for b in params["batches"]]
diminishing = [i for i, b in enumerate(params["batches"]) if b > b_noise]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_tradeoff", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
for name in ("steps", "examples", "doubling_speedups", "diminishing"):
    assert isinstance(globals()[name], list), f"{name} should be a list"
assert len(steps) == len(examples) == len(doubling_speedups) == len(params["batches"]), \
    "one entry per candidate batch"
assert all(isinstance(i, numbers.Integral) for i in diminishing), "diminishing holds indices (ints)"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("t3-critical-batch", "check_tradeoff", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4c. Three ways to choose a batch
#
# Each of these is a different definition of "as big as is worth it". Treat the batch size
# as a continuous quantity, as the model does: each answer is the boundary the model gives,
# a float, not rounded to a whole number of sequences. Compute:
# - `near_linear_limit`: the largest batch at which doubling still divides the steps by at least
#   `params["speedup"]`;
# - `overhead_batch`: the largest batch whose examples stay within `params["overhead"]` of $E_{min}$
#   (an overhead of 0.1 means $E \le 1.1\,E_{min}$);
# - `deadline_batch`: the smallest batch that reaches the target loss within `params["max_steps"]`
#   steps;
# - `deadline_cost`: $E/E_{min}$ at `deadline_batch`, the price of the deadline in compute.

# %% nbgrader={"grade": false, "grade_id": "answer_limits", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
s = params["speedup"]
near_linear_limit = b_noise * (2 - s) / (2 * (s - 1))
overhead_batch = params["overhead"] * b_noise
deadline_batch = b_noise / (params["max_steps"] / params["s_min"] - 1)
deadline_cost = 1 + deadline_batch / b_noise
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_limits", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
for name in ("near_linear_limit", "overhead_batch", "deadline_batch", "deadline_cost"):
    assert isinstance(globals()[name], numbers.Real), f"{name} should be a plain number"
assert deadline_cost >= 1, "deadline_cost compares a cost with its minimum: it cannot be below 1"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("t3-critical-batch", "check_limits", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4d. Look at your numbers
#
# The curve of §2 with your candidates on it, and the three choices of 4c marked. (Not graded;
# it uses your answers, so run it after 4a to 4c.)

# %%
grid = np.logspace(np.log10(min(params["batches"]) / 8), np.log10(max(params["batches"]) * 8), 300)
fig, ax = plt.subplots(figsize=(7, 4.2))
ax.plot(grid * params["s_min"] * (1 + b_noise / grid), params["s_min"] * (1 + b_noise / grid),
        color="#4c72b0", label="S against E as B varies")
for b, s_, e_ in zip(params["batches"], steps, examples):
    ax.plot(e_, s_, "o", color="#c44e52")
    ax.annotate(f"B={b:g}", (e_, s_), textcoords="offset points", xytext=(6, 4))
for b, name, colour in ((b_noise, "B_crit", "k"), (near_linear_limit, "near-linear limit", "#55a868"),
                        (overhead_batch, "overhead limit", "#8172b2"), (deadline_batch, "deadline", "#dd8452")):
    e_ = params["s_min"] * (b + b_noise)
    ax.plot(e_, params["s_min"] * (1 + b_noise / b), "s", color=colour, label=f"{name}: B ≈ {b:,.0f}")
ax.set(xscale="log", yscale="log", xlabel="training examples E (sequences)", ylabel="optimisation steps S",
       title=f"Variant {VARIANT}: B_noise ≈ {b_noise:,.0f} sequences")
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# ### 4e. Explain it (graded by hand)

# %% [markdown] nbgrader={"grade": false, "grade_id": "task_more_devices", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": true} deletable=false editable=false
# Your lab offers to double the number of GPUs so that the run can use twice your **largest**
# candidate batch. In a short paragraph (5 to 10 sentences), using the model of §2 and at least two
# of your own numbers: would the run reach the target loss much sooner, and what would it cost in
# compute? Explain *why* a bigger batch stops helping in terms of the gradient's noise, and say how
# your advice would change later in training, when the loss is lower.
#
# === BEGIN MARK SCHEME ===
# 4 points, one for each of the following (half points allowed):
# 1. Places the largest candidate relative to $B_{crit} \approx B_{noise}$ (it is above it in every
#    variant) and concludes that doubling gives little: quotes its doubling speedup from
#    `doubling_speedups` (about 1.05 to 1.15 in variants A to C, 1.28 in D, whose largest batch is
#    nearest the bend) or equivalently says the steps fall by a few percent (about a fifth in D),
#    nowhere near half.
# 2. States the cost: above the bend $E = E_{min}(1 + B/B_{noise})$ grows almost in proportion to
#    $B$, so doubling the batch nearly doubles the compute (examples) for the same target (about 1.6
#    times in D); quotes a
#    number (e.g. from `examples`, or E/E_min = 1 + B/B_noise for the doubled batch).
# 3. Gives the mechanism: the mini-batch gradient's noise is $\operatorname{tr}\Sigma/B$; once $B$
#    exceeds $B_{noise}$ that noise is already smaller than the signal $|G|^2$, so averaging more
#    examples barely improves the step; the per-step improvement saturates at $\Delta L_{max}$ (and
#    the optimal learning rate at $\epsilon_{max}$). No credit for "large batches generalise worse"
#    alone: that is a different claim from the one this model makes.
# 4. Later in training: the noise scale grows as the loss falls (McCandlish et al. §3, Kaplan et al.
#    2020), so a batch that is wasteful now may be efficient later; recommends ramping the batch, or
#    re-measuring $B_{simple}$ before buying the GPUs. Half credit for mentioning a relevant caveat
#    instead (learning rate must be retuned per batch; $B_{simple}$ only locates $B_{crit}$ to a
#    factor of a few).
# === END MARK SCHEME ===

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer_more_devices", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# (A model answer, with variant A's numbers.) The noise scale is about 256 sequences and the
# largest candidate is 2,048, eight times above the bend, so the run is deep in the regime of
# diminishing returns. Doubling 2,048 to 4,096 divides the steps by only 1.06: about 22,500 steps
# become about 21,250, a saving of 6% of the wall-clock time. The examples, however, go from about
# 4.6e7 to 8.7e7 sequences, E/E_min from 9 to 17: nearly twice the compute for the same loss.
# The reason is the noise: the mini-batch gradient's error has variance tr(Σ)/B, and at B far above
# B_noise = tr(Σ)/|G|² it is already much smaller than the signal, so a better average hardly
# improves the step; each step is already close to what an exact gradient would achieve, and the
# number of steps cannot fall below S_min. Later in training the loss is lower and the noise scale
# larger (McCandlish et al. find it grows as the loss falls), so the same 4,096 batch may then be
# near the bend and worth paying for. I would keep the current batch now, re-measure B_simple as
# training proceeds, and ramp the batch (retuning the learning rate) when the measurement says so.
# ### END SOLUTION

# %% [markdown]
# ## 5. Where to read more
#
# - McCandlish et al. 2018, §2 (the optimal step and learning rate under noise, the
#   steps/examples trade-off and $B_{crit}$), §3 (the noise scale across tasks and during training),
#   Appendix A (the unbiased two-batch estimators you used in e10).
# - Kaplan et al. 2020, §5.1: the same trade-off restated for language models, with $B_{crit}$ as a
#   function of the loss.
# - Practice item p8-noise-scale measures $B_{simple}$ on a small model you train yourself.
