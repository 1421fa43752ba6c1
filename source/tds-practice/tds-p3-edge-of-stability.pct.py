# %% [markdown]
# # tds-p3-edge-of-stability · Watch the sharpness climb to 2/η and stay there
#
# *Module TDS Training Dynamics & Scaling · practice · build it, break it, read the papers*
#
# tds-b1 defined the **sharpness**, the largest eigenvalue of the Hessian of the training loss;
# tds-c1 drew what gradient descent does on a single quadratic at four step sizes; tds-e1 worked out
# on paper why a quadratic is stable only while the step size times the curvature stays under a
# fixed number. This notebook measures the sharpness of a real network while it trains, and you
# will see the claim of Cohen, Kaur, Li, Kolter and Talwalkar (ICLR 2021) play out on your CPU: under
# full-batch gradient descent the sharpness rises until it reaches the stability threshold $2/\eta$,
# and then, instead of the run blowing up, it stays there, hovering at or just above the threshold,
# while the loss keeps falling, unevenly.
#
# **Why this is surprising.** Classical optimisation theory picks a step size small enough for the
# landscape: if the curvature is at most $S$ everywhere, a step size below $2/S$ makes every step
# descend, and theorists then assume the curvature is a fixed property of the problem. Cohen et al.
# observed that in neural networks the curvature is not fixed; the training itself changes it. As
# long as the sharpness is below $2/\eta$, it keeps rising (*progressive sharpening*, their §3.1).
# When it reaches $2/\eta$, the quadratic picture says the run should diverge along the top
# eigenvector. What happens instead (§3.2) is that the iterates start to oscillate along that
# direction, the loss ticks up on some steps, and the oscillation itself pushes the sharpness back
# down. The run sits at the *edge of stability*: the sharpness is regulated to the threshold set by
# the step size, not by the problem.
#
# **Why the sharpness comes back down.** Damian, Nichani and Lee (ICLR 2023, *Self-Stabilization*)
# give the mechanism. While the iterate oscillates along the top eigenvector, the gradient picks up
# a term from the third derivative of the loss: the change in the Hessian as one moves along that
# eigenvector. That term points in the direction that reduces the sharpness. So the oscillation
# grows while the sharpness is above the threshold, which strengthens the push that lowers the
# sharpness, which in turn damps the oscillation: a feedback loop with its set point at $2/\eta$.
#
# **How to measure a top eigenvalue without the Hessian.** A network with a few thousand weights
# has a Hessian of a few million entries; a real one is out of the question. But the product of
# the Hessian with a vector, $Hv$, costs about two gradient evaluations: take the gradient with
# the graph kept (`create_graph=True`), form its dot product with $v$, and differentiate that once
# more (Pearlmutter 1994). With Hessian-vector products alone, **power iteration** finds the
# eigenvalue of largest size: normalise $v$, multiply by $H$, repeat. After a few rounds the
# vector lines up with the top eigenvector, and the Rayleigh quotient $v^\top H v$ of the unit
# vector estimates its eigenvalue. Cohen et al. use the Lanczos method, which gets more out of each
# product, but the quantity is the same. Power iteration converges slowly when the top two
# eigenvalues are close, and it finds the eigenvalue of largest *absolute* value, which could be a
# negative one; in these runs the positive top eigenvalue dominates. Because the Hessian changes
# little between two measurements, the harness warm-starts each measurement from the vector the
# previous one ended on, so a handful of rounds each time is enough.
#
# The protocol, exactly (the grader runs the same code):
# - `make_task(params)` draws `n_examples` Gaussian inputs with three random ±1 targets each (a pure
#   memorisation task, which sharpens strongly) and a tanh network with two hidden layers, in
#   float64; the loss is half the squared error, summed over the three outputs and averaged over
#   the examples;
# - `eos_run(params, sharpness)` runs plain full-batch gradient descent at step size
#   `params["eta"]` for `params["steps"]` steps. Every `params["every"]` steps, before the update,
#   it calls **your** `sharpness(loss_fn, params_list, v, iters)` and records the value; it returns
#   the loss at every step and the measured steps and sharpness values.

# %% [markdown]
# ## Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id (on your own
# machine start Jupyter with `JUPYTERHUB_USER=<your course id> jupyter lab`), and defines
# `make_task`, `eos_run` and `quadratic_sharpness` (which the grader uses to call your function on
# hidden quadratics). Editing this cell does not change what you are graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import torch
from torch import nn

torch.set_num_threads(1)   # tiny tensors: one thread is the fastest, and the runs repeat bit for bit

VARIANTS = {'A': {'seed': 0,
       'n_examples': 100,
       'width': 32,
       'eta': 0.3,
       'steps': 500,
       'every': 10,
       'iters': 8},
 'B': {'seed': 1,
       'n_examples': 100,
       'width': 32,
       'eta': 0.2,
       'steps': 500,
       'every': 10,
       'iters': 8},
 'C': {'seed': 2,
       'n_examples': 80,
       'width': 32,
       'eta': 0.4,
       'steps': 500,
       'every': 10,
       'iters': 8},
 'D': {'seed': 3,
       'n_examples': 120,
       'width': 24,
       'eta': 0.25,
       'steps': 500,
       'every': 10,
       'iters': 8}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-practice:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]


# chapter: include graders.problems.tds_practice.tds_p3_edge_of_stability.make_task


# chapter: include graders.problems.tds_practice.tds_p3_edge_of_stability.eos_run


# chapter: include graders.problems.tds_practice.tds_p3_edge_of_stability.quadratic_sharpness


print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ## 1. Build it: the sharpness by power iteration on Hessian-vector products
#
# Write `sharpness(loss_fn, params, v, iters)`. `loss_fn()` returns the scalar loss, `params` is the
# list of weight tensors, `v` a list of tensors of the same shapes (the starting vector, not
# necessarily of unit length). Take the gradient of the loss once, with the graph kept; then
# repeat `iters` times:
# 1. normalise `v` to unit length (over all its tensors together);
# 2. compute the Hessian-vector product `Hv` by differentiating the gradient against `v`
#    (`torch.autograd.grad(grads, params, grad_outputs=v, retain_graph=True)`);
# 3. the estimate is the dot product of `v` and `Hv` (again over all tensors);
# 4. carry `Hv` (detached) as the next `v`.
#
# Return `(estimate, v)`: the last estimate as a float and the last carried vector. The grader calls
# it through `quadratic_sharpness` on quadratics $\tfrac12 x^\top A x$, whose Hessian is the hidden
# matrix $A$, so you can test it the same way: the estimate should approach the largest eigenvalue
# of $A$.

# %% nbgrader={"grade": false, "grade_id": "answer_sharpness", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def sharpness(loss_fn, params, v, iters):
    """Power iteration on Hessian-vector products; returns (top-eigenvalue estimate, last vector)."""
    grads = torch.autograd.grad(loss_fn(), params, create_graph=True)
    estimate = 0.0
    for _ in range(iters):
        norm = torch.sqrt(sum((u * u).sum() for u in v))
        v = [u / norm for u in v]
        hv = torch.autograd.grad(grads, params, grad_outputs=v, retain_graph=True)
        estimate = float(sum((h * u).sum() for h, u in zip(hv, v)))
        v = [h.detach() for h in hv]
    return estimate, v
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_sharpness", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
_value = quadratic_sharpness([[2.0, 0.0], [0.0, 1.0]], [1.0, 1.0], 30)
assert isinstance(_value, float), "sharpness returns (estimate, v) with the estimate a float"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p3-edge-of-stability", "check_sharpness", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 2. Run it and read the trace
#
# Run `result = eos_run(params, sharpness)` (several seconds) and record:
# - `sharpness_trace`: the list of measured sharpness values, `result["sharpness"]`;
# - `first_cross_step`: the first measured step whose sharpness is at least the stability threshold
#   of the variant's step size (-1 if none);
# - `late_ratio`: the mean, over the measurements at steps of at least half of `params["steps"]`, of
#   the sharpness divided by that threshold (1 means exactly at the edge);
# - `loss_rises`: the number of steps whose loss is larger than the loss of the step before it.

# %% nbgrader={"grade": false, "grade_id": "answer_trace", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
result = eos_run(params, sharpness)
threshold = 2 / params["eta"]
sharpness_trace = result["sharpness"]
first_cross_step = next((s for s, v in zip(result["measured_at"], sharpness_trace) if v >= threshold), -1)
late = [v / threshold for s, v in zip(result["measured_at"], sharpness_trace) if s >= params["steps"] / 2]
late_ratio = sum(late) / len(late)
losses = result["losses"]
loss_rises = sum(1 for t in range(1, len(losses)) if losses[t] > losses[t - 1])
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_trace", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
assert isinstance(sharpness_trace, list), "sharpness_trace is a list of floats"
assert isinstance(first_cross_step, numbers.Integral), "first_cross_step is a step: an int"
assert isinstance(late_ratio, numbers.Real), "late_ratio is a float"
assert isinstance(loss_rises, numbers.Integral), "loss_rises is a count: an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p3-edge-of-stability", "check_trace", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 3. Look at it (not graded)

# %%
import matplotlib.pyplot as plt

try:
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    ax1.plot(result["losses"])
    ax1.set(yscale="log", ylabel="training loss", title=f"Variant {VARIANT}: gradient descent at eta = {params['eta']}")
    ax2.plot(result["measured_at"], sharpness_trace, "o-", ms=3, label="sharpness")
    ax2.axhline(2 / params["eta"], color="grey", ls="--", label="2 / eta")
    ax2.set(xlabel="step", ylabel="top Hessian eigenvalue")
    ax2.legend()
    plt.show()
except NameError as exc:
    print(f"Run the cells above first ({exc}).")

# %% [markdown]
# ## 4. Read it
#
# **Three phases.** In the first tens of steps the sharpness is well under the threshold and the
# loss falls smoothly: the stable regime of the quadratic picture. Then it climbs, steadily, with
# nothing in the loss to announce it: progressive sharpening. On this memorisation task the climb is
# fast enough that the sharpness first overshoots the threshold by a wide margin, the loss jumps,
# and the run is thrown to a flatter region (the *catapult* of Lewkowycz et al. 2020). After that
# it settles, and for the second half of the run it stays within a few per cent of the threshold,
# slightly above it on average, while the loss keeps falling over hundreds of steps and rises on
# many individual steps. Your `late_ratio` should be close to one and `loss_rises` far from zero.
#
# **What it does to optimisation lore.** Two common beliefs do not survive this picture. The first
# is that a good step size is one below two over the sharpness of the landscape, to be found by
# measuring the curvature first: the curvature that training ends up in depends on the step size
# you chose, so the measurement would not stay valid. The second is that a loss that rises on some
# steps is a sign of a step size that is too large and about to diverge: at the edge of stability
# non-monotone loss is the normal state of a run that is converging. Cohen et al. stress that the
# regime they describe is for full-batch gradient descent; with small mini-batches the sharpness
# settles below the threshold rather than at it, and the story for Adam is the same with a
# preconditioned sharpness in place of the raw one (Cohen et al. 2022, *Adaptive Gradient Methods
# at the Edge of Stability*).
#
# **A claim often repeated and not quite right.** The edge of stability is sometimes summarised as
# "the sharpness equals two over the learning rate". It does not equal it at every moment: it
# overshoots, oscillates and hovers slightly above, and the early trace can sit far below it. The
# statement is about where the sharpness is held once training has reached the regime, and only
# the full-batch case holds it exactly there.
#
# **Where this meets II.8.** A learning rate too high for the current curvature is exactly what
# throws a loss spike (p5-loss-spike), and warmup (t4-warmup-and-wsd) keeps the rate below the
# threshold while progressive sharpening is still under way early in training. The one-dimensional
# version of the threshold is worked in tds-e1, and the four regimes of a single quadratic are
# drawn in tds-c1.

# %% [markdown]
# ## 5. Break it (not graded)
#
# - Halve `params["eta"]` (copy `params` first) and rerun: the plateau should move to the new
#   threshold, twice as high, and take longer to reach.
# - Set `iters` to 1 and rerun: with one round per measurement, the warm start carries the
#   estimate, but it lags when the top eigenvector turns quickly.
# - Replace the random targets with a smooth function of the inputs; the sharpening is much weaker,
#   and within this budget the sharpness may never reach the threshold. Cohen et al. (§3.1) report
#   that progressive sharpening is milder on easier tasks, with less data and in wider networks.
