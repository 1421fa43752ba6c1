# %% [markdown]
# # p8-noise-scale · Measuring the gradient noise scale of a small model
#
# *Chapter II.8 Training at Scale · practice · read the papers · 8 of 9*
#
# How large a batch is still worth its cost? McCandlish, Kaplan, Amodei et al. (*An Empirical Model of
# Large-Batch Training*, 2018, arXiv 1812.06162) answer with one statistic of the gradients, the
# **noise scale**. Below it, doubling the batch nearly halves the number of steps; well above it, a
# bigger batch only buys a better estimate of a direction you already knew. In e10-noise-scale you
# took the estimator from the paper and applied it to printed numbers. Here you build it, measure
# the two squared norms it needs on a real (tiny) torch model, and watch what it says.

# %% [markdown]
# ## 1. The estimator, in one paragraph
#
# Write $G$ for the true gradient (the mean over the data distribution) and $\Sigma$ for the covariance
# of one example's gradient. A mini-batch of $B$ independent examples gives a gradient $G_B$ with
#
# $$\mathbb{E}\,|G_B|^2 = |G|^2 + \frac{\operatorname{tr}\Sigma}{B}.$$
#
# The **simple noise scale** is $B_{simple} = \operatorname{tr}\Sigma / |G|^2$ (§2.2): the batch at which the
# noise in $G_B$ is as large as the signal. Measure $|G_B|^2$ at two sizes, $B_{small} < B_{big}$, and
# the two equations above can be solved for the two unknowns (Appendix A.1):
#
# $$|G|^2 \approx \frac{B_{big}|G_{big}|^2 - B_{small}|G_{small}|^2}{B_{big} - B_{small}}, \qquad
# \operatorname{tr}\Sigma \approx \frac{|G_{small}|^2 - |G_{big}|^2}{1/B_{small} - 1/B_{big}} .$$
#
# Both are unbiased; their ratio is not quite, so the paper averages the two estimates over many
# steps **before** dividing. In data-parallel training the measurement is free: each device already
# holds a small-batch gradient before the all-reduce, and the big-batch gradient after it.
#
# The paper's abstract reports that the noise scale "increases as the loss decreases over a training
# run". You will see that on your model too.

# %% [markdown]
# ## 2. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id. On
# JupyterHub that is your hub user name; working on your own machine, start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab` so that you see the same variant the grader uses.
# Editing this cell does not change what you are graded on.
#
# `make_task(params)` builds the model at the point of measurement (a two-layer tanh network, trained
# for `train_steps` SGD steps on a noisy regression task) and a stream of `n_big * b_big` fresh
# examples `x`, `y`, all in float64 and all fixed by the seed.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import torch

torch.set_num_threads(1)   # tiny tensors: one thread is the fastest

VARIANTS = {
    "A": {"seed": 21, "dim": 8, "hidden": 16, "noise": 0.3, "lr": 0.1, "train_steps": 0,
          "b_small": 8, "b_big": 1024, "n_big": 16},
    "B": {"seed": 22, "dim": 8, "hidden": 16, "noise": 0.3, "lr": 0.1, "train_steps": 100,
          "b_small": 8, "b_big": 512, "n_big": 32},
    "C": {"seed": 23, "dim": 12, "hidden": 24, "noise": 0.2, "lr": 0.05, "train_steps": 300,
          "b_small": 16, "b_big": 2048, "n_big": 8},
    "D": {"seed": 24, "dim": 6, "hidden": 12, "noise": 0.5, "lr": 0.1, "train_steps": 200,
          "b_small": 4, "b_big": 512, "n_big": 32},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"practice:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]


# chapter: include graders.problems.practice.p8_noise_scale.make_task


print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ## 3. Build it: the estimator
#
# Write `noise_scale(b_small, b_big, g2_small, g2_big)` returning the triple
# `(g2, trace_sigma, b_simple)`: the estimates of $|G|^2$ and $\operatorname{tr}\Sigma$ above, and their ratio
# $B_{simple}$. Plain floats. The hidden tests feed it squared norms measured in runs you have not
# seen, at batch sizes from 1 to several thousand.

# %% nbgrader={"grade": false, "grade_id": "answer_estimator", "locked": false, "schema_version": 3, "solution": true, "task": false}
def noise_scale(b_small, b_big, g2_small, g2_big):
    """(|G|^2, tr(Sigma), B_simple) from squared gradient norms measured at two batch sizes."""
    ### BEGIN SOLUTION
    g2 = (b_big * g2_big - b_small * g2_small) / (b_big - b_small)
    trace_sigma = (g2_small - g2_big) / (1 / b_small - 1 / b_big)
    return g2, trace_sigma, trace_sigma / g2
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_estimator", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the hidden tests call noise_scale on measurements you have not seen.
import numbers

_out = noise_scale(4, 64, 0.5, 0.1)
assert isinstance(_out, (tuple, list)) and len(_out) == 3, "return a triple (g2, trace_sigma, b_simple)"
assert all(isinstance(_v, numbers.Real) for _v in _out), "three plain numbers"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p8-noise-scale", "check_estimator", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 4. Measure it
#
# Now the two squared norms, on your variant's model. Follow this protocol exactly (the grader runs
# the same one on the same data):
#
# - the loss of a batch is the **mean** squared error, `((model(x_b).squeeze(-1) - y_b) ** 2).mean()`,
#   and its gradient comes from autograd;
# - $|\cdot|^2$ is the squared 2-norm of all parameter gradients laid end to end;
# - big batch $j$ ($j = 0, \dots$, `n_big - 1`) is rows `j*b_big` to `(j+1)*b_big - 1` of `x`, `y`; it is cut
#   into `b_big // b_small` consecutive small batches (one per "device");
# - `g2_small` is the mean of $|G_{small}|^2$ over **every** small batch, and `g2_big` the mean of
#   $|G_{big}|^2$ over the big batches.
#
# Do not change the model: measure, do not train (no optimizer step). Write it as a function
# `measure(model, x, y, b_small, b_big) -> (g2_small, g2_big)`, since section 6 reuses it, then set
# `g2_small` and `g2_big` for your variant. A few thousand backward passes of a tiny model take about
# a second.

# %% nbgrader={"grade": false, "grade_id": "answer_measure", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def grad_sq_norm(model, x, y):
    loss = ((model(x).squeeze(-1) - y) ** 2).mean()
    grads = torch.autograd.grad(loss, list(model.parameters()))
    return float(sum((g * g).sum() for g in grads))


def measure(model, x, y, b_small, b_big):
    small, big = [], []
    for j in range(len(x) // b_big):
        xj, yj = x[j * b_big:(j + 1) * b_big], y[j * b_big:(j + 1) * b_big]
        big.append(grad_sq_norm(model, xj, yj))
        for k in range(0, b_big, b_small):
            small.append(grad_sq_norm(model, xj[k:k + b_small], yj[k:k + b_small]))
    return sum(small) / len(small), sum(big) / len(big)


model, x, y = make_task(params)
g2_small, g2_big = measure(model, x, y, params["b_small"], params["b_big"])
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_measurement", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the measurements are checked when your notebook is graded.
for _name in ("g2_small", "g2_big"):
    assert _name in globals(), f"assign {_name} = ... in the answer cell above"
    assert isinstance(globals()[_name], numbers.Real), f"{_name} should be a plain number"
assert g2_small > g2_big > 0, "a smaller batch gives a noisier gradient, so a larger squared norm on average"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p8-noise-scale", "check_measurement", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 5. Estimate it
#
# Feed your measurements to your estimator: set `g2`, `trace_sigma` and `b_simple` for your variant.

# %% nbgrader={"grade": false, "grade_id": "answer_estimates", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
g2, trace_sigma, b_simple = noise_scale(params["b_small"], params["b_big"], g2_small, g2_big)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_noise_scale", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the estimates are checked when your notebook is graded.
for _name in ("g2", "trace_sigma", "b_simple"):
    assert _name in globals(), f"assign {_name} = ... in the answer cell above"
    assert isinstance(globals()[_name], numbers.Real), f"{_name} should be a plain number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p8-noise-scale", "check_noise_scale", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 6. Is it right? Per-example gradients
#
# Your estimate used only two kinds of batch norms. On a model this small you can afford the direct
# route too: the gradient of every single example (with `torch.func.vmap`), whose sample mean and
# sample covariance give $|G|^2$ and $\operatorname{tr}\Sigma$ from the same 16,384 examples. (The squared norm of
# a sample mean is biased upward by $\operatorname{tr}\Sigma/n$; the cell subtracts that.) Not graded.

# %%
from torch.func import functional_call, grad, vmap

try:
    _model, _x, _y = make_task(params)
    _weights = {k: v.detach() for k, v in _model.named_parameters()}

    def _example_loss(weights, xi, yi):
        return ((functional_call(_model, weights, (xi.unsqueeze(0),)).squeeze() - yi) ** 2)

    _per = vmap(grad(_example_loss), in_dims=(None, 0, 0))(_weights, _x, _y)
    _flat = torch.cat([g.reshape(len(_x), -1) for g in _per.values()], dim=1)
    _mean = _flat.mean(0)
    _trace = float(((_flat - _mean) ** 2).sum(1).sum() / (len(_x) - 1))
    _g2 = float(_mean @ _mean) - _trace / len(_x)
    _mine = noise_scale(params["b_small"], params["b_big"], g2_small, g2_big)
    print(f"two-batch estimator: |G|^2 = {_mine[0]:.4g}, tr(Sigma) = {_mine[1]:.4g}, B_simple = {_mine[2]:.1f}")
    print(f"per-example:         |G|^2 = {_g2:.4g}, tr(Sigma) = {_trace:.4g}, B_simple = {_trace / _g2:.1f}")
except (NotImplementedError, NameError):
    print("Write noise_scale and measure (and run them) above first.")

# %% [markdown]
# ## 7. Look at it: the noise scale over training
#
# The same task measured at several points of its training run (each point retrains from the same
# seed and measures on 4 big batches instead of `n_big`, so the points are noisier than yours). Left: the loss on the measurement stream. Right: $B_{simple}$.
# The second panel is the paper's claim in miniature, and the reason large runs raise their batch
# size as they go.

# %%
import matplotlib.pyplot as plt

try:
    _steps = [0, 25, 50, 100, 200, 400]
    _losses, _scales = [], []
    for _s in _steps:
        _q = {**params, "train_steps": _s, "n_big": 4}   # fewer big batches: a quicker, noisier look
        _m, _xs, _ys = make_task(_q)
        with torch.no_grad():
            _losses.append(float(((_m(_xs).squeeze(-1) - _ys) ** 2).mean()))
        _scales.append(noise_scale(_q["b_small"], _q["b_big"], *measure(_m, _xs, _ys, _q["b_small"], _q["b_big"]))[2])
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
    ax1.plot(_steps, _losses, "o-")
    ax1.set(xlabel="SGD steps before measuring", ylabel="mean squared error")
    ax2.plot(_steps, _scales, "o-", color="C1")
    ax2.axvline(params["train_steps"], color="grey", ls=":", label="your variant")
    ax2.set(xlabel="SGD steps before measuring", ylabel="B_simple (examples)", yscale="log")
    ax2.legend()
    fig.tight_layout()
    plt.show()
except (NotImplementedError, NameError):
    print("Write noise_scale and measure (and run them) above first.")

# %% [markdown]
# ## 8. Read your numbers
#
# Is your variant's `b_big` above or below the noise scale you measured? If it is below, the big
# batch is itself noisy and your $|G|^2$ estimate rests on a small difference of two noisy numbers:
# how would you make it more reliable without a larger batch? And by McCandlish et al.'s
# $S/S_{min} = 1 + B_{noise}/B$, how many times the minimum number of steps would a run at
# `b_small` per step need, if $B_{simple}$ stood in for $B_{noise}$? (Not graded: a few lines for yourself.)

# %% [markdown]
# *Your answer, for yourself (not graded): double-click this cell and write it here.*
