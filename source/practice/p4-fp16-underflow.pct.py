# %% [markdown]
# # p4-fp16-underflow · Break it: fp16 without loss scaling
#
# *Chapter II.8 Training at Scale · practice · break it · 4 of 9*
#
# Proposition 1 says that mixed precision is a question of range before it is a question of
# speed. fp16 keeps 11 significant bits, which is plenty for a gradient, but its exponent stops
# early: the smallest positive fp16 number is $2^{-24} \approx 6\times10^{-8}$, and anything
# below half of it rounds to zero. In this notebook you train a small model in real fp16 on the CPU,
# watch its gradients fall through that floor until training stalls, and then rescue it with a
# loss scale. You write the training step; the grader runs it on settings you have not seen.
#
# Sources: Micikevicius et al., *Mixed Precision Training* (ICLR 2018): §3.1 (an fp32 master
# copy of the weights; values below $2^{-24}$ become zero in fp16) and §3.2 (loss scaling, and
# skipping the update when a scaled gradient overflows). IEEE 754-2008 for the binary16 limits.
# w3-range derives the limits; c2-number-line draws them.

# %% [markdown]
# ## 1. The recipe
#
# The paper's recipe for one step, which is what `torch.autocast` plus `GradScaler` does on a GPU:
#
# 1. keep the weights in fp32 (the **master copy**) and round a copy of them to fp16;
# 2. run the forward pass in fp16, and compute the loss in fp32 from the fp16 output;
# 3. multiply the loss by a scale $S$ and run the backward pass: every gradient in the fp16
#    graph is now $S$ times larger, so fewer of them fall below $2^{-24}$;
# 4. convert the fp16 gradients to fp32 and only then divide by $S$;
# 5. if any gradient is `inf` or `NaN` (the scale was too large), skip the update; otherwise
#    update the fp32 master weights.
#
# Three limits of fp16 matter here: the largest finite value $65504$, the smallest normal
# number $2^{-14}$, and the smallest subnormal $2^{-24}$. Between $2^{-24}$ and $2^{-14}$
# numbers survive with fewer significant bits; below $2^{-25}$ they round to zero (at exactly
# $2^{-25}$ round-to-nearest-even picks zero; just above, it picks $2^{-24}$).
#
# What the paper prints, and what it does not: §3.1 states the $2^{-24}$ floor, and §3.2 shows
# a histogram of activation gradients of a Multibox SSD detector (collected in fp32 training)
# where much of fp16's range goes unused while many values sit below it; for that network a
# constant scale of 8 was enough. A figure of "31% of gradients underflow" that is often
# attributed to the paper is not in it (see w3-range).

# %% [markdown]
# ## 2. How a small model is made to underflow
#
# A tiny model's gradients are far too large to underflow: a large model's gradient entries are
# averages over millions of tokens and many of them are minute, ours are not. So we multiply the
# loss by a **loss weight** $2^{-k}$ and the learning rate by $2^{k}$. In fp32 this changes
# nothing at all, bit for bit: multiplying by a power of two only moves the exponent, so every
# gradient is exactly $2^{-k}$ times the old one and every update is exactly the old update.
# In fp16 it pushes the gradients down towards the floor, where a large model's gradients live.
#
# Everything below runs in **real fp16**: torch runs fp16 `Linear` and `tanh` on the CPU, so the
# forward and backward passes store every intermediate tensor, and every gradient, in fp16. Nothing
# is simulated by casting fp32 gradients after the fact.

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
    "A": {"seed": 0, "steps": 60, "weight_exp": 20, "scale_exp": 10, "lr": 0.1},
    "B": {"seed": 1, "steps": 60, "weight_exp": 22, "scale_exp": 12, "lr": 0.1},
    "C": {"seed": 2, "steps": 60, "weight_exp": 21, "scale_exp": 8, "lr": 0.1},
    "D": {"seed": 3, "steps": 60, "weight_exp": 23, "scale_exp": 16, "lr": 0.1},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"practice:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: seed {params['seed']}, {params['steps']} steps, "
      f"loss weight 2**-{params['weight_exp']}, loss scale 2**{params['scale_exp']}, lr {params['lr']}")

# %% [markdown]
# ## 4. The harness
#
# The next cell is given and locked. It builds the data (256 examples of a noisy 16-input
# regression task), the model (16 → 32 → 32 → 1 with tanh, 1,633 parameters) and the training
# loop. `run_fp16(seed, steps, weight_exp, scale_exp, lr)` keeps an fp32 master model and an
# fp16 copy, draws batches of 32 in a fixed order, and calls **your** `mixed_precision_step` once
# per step. It returns `[losses, zero_fractions, final_loss]`: the batch loss and the fraction of
# zero gradient entries at every step, and the mean squared error on all 256 examples after the
# last step. `run_fp32(seed, steps, lr)` trains the same model in plain fp32 and returns its
# final loss.

# %% nbgrader={"grade": false, "grade_id": "harness", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)   # tiny tensors: one thread is fastest, and the numbers never depend on it
N_EXAMPLES, N_IN, N_HIDDEN, BATCH = 256, 16, 32, 32


# chapter: include graders.problems.practice.p4_fp16_underflow.make_data


# chapter: include graders.problems.practice.p4_fp16_underflow.make_model


# chapter: include graders.problems.practice.p4_fp16_underflow.full_loss


def run_fp16(seed, steps, weight_exp, scale_exp, lr=0.1, step=None):
    """[loss per step, zero fraction per step, final loss on all examples]."""
    step = step or mixed_precision_step
    data = make_data(seed)
    x, y = data
    master = make_model(seed)
    half = copy.deepcopy(master).half()
    loss_weight, loss_scale = 2.0 ** -weight_exp, 2.0 ** scale_exp
    order = torch.Generator().manual_seed(seed + 1)
    losses, zeros = [], []
    for _ in range(steps):
        idx = torch.randint(0, N_EXAMPLES, (BATCH,), generator=order)
        loss, zero = step(master, half, x[idx], y[idx], loss_weight, loss_scale, lr / loss_weight)
        losses.append(float(loss))
        zeros.append(float(zero))
    return [losses, zeros, full_loss(master, data)]


# chapter: include graders.problems.practice.p4_fp16_underflow.run_fp32


# %% [markdown]
# ## 5. Build the step
#
# Write `mixed_precision_step(master, half, x, y, loss_weight, loss_scale, lr)`, which does
# steps 1 to 5 of the recipe for one batch and returns a pair `(loss, zero_fraction)`:
#
# - copy the master weights into the fp16 model `half` (`p16.copy_(p32)` rounds them), and
#   clear its old gradients;
# - forward `x.half()` through `half`; the loss is `F.mse_loss(out.float(), y)`, in fp32, as
#   autocast computes it;
# - backpropagate `loss * loss_weight * loss_scale`;
# - `zero_fraction`: the fraction of all gradient entries of `half` (every weight and bias,
#   counted together) that are exactly zero, **in fp16, before unscaling**;
# - convert each gradient to fp32, divide by `loss_scale`; if every one is finite, update the
#   master weights in place with plain SGD, `p32 -= lr * g32`; otherwise change nothing;
# - `loss` is the plain mean squared error of the batch (not weighted, not scaled), as a float.
#
# The grader runs your step inside `run_fp16` on hidden seeds, weights and scales, one of them
# so large that every step overflows.

# %% nbgrader={"grade": false, "grade_id": "answer_step", "locked": false, "schema_version": 3, "solution": true, "task": false}
def mixed_precision_step(master, half, x, y, loss_weight, loss_scale, lr):
    """One mixed-precision SGD step; returns (batch loss, fraction of zero fp16 gradient entries)."""
    ### BEGIN SOLUTION
    with torch.no_grad():
        for p16, p32 in zip(half.parameters(), master.parameters()):
            p16.copy_(p32)                       # round the master weights to fp16
    half.zero_grad(set_to_none=True)
    out = half(x.half())                         # forward in fp16
    loss = F.mse_loss(out.float(), y)            # loss in fp32
    (loss * loss_weight * loss_scale).backward()  # backward in fp16, on the scaled loss
    grads = [p.grad for p in half.parameters()]
    zeros = sum(int((g == 0).sum()) for g in grads)
    total = sum(g.numel() for g in grads)
    grads32 = [g.float() / loss_scale for g in grads]    # fp32 first, then unscale
    if all(bool(torch.isfinite(g).all()) for g in grads32):
        with torch.no_grad():
            for p32, g in zip(master.parameters(), grads32):
                p32 -= lr * g
    return loss.item(), zeros / total
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_step", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the hidden test runs your step inside run_fp16 on hidden settings.
_run = run_fp16(0, 2, 4, 2)
assert len(_run) == 3 and len(_run[0]) == 2 and len(_run[1]) == 2, "run_fp16 gives [losses, zero_fractions, final]"
assert all(0.0 <= z <= 1.0 for z in _run[1]), "a zero fraction lies between 0 and 1"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p4-fp16-underflow", "check_step", globals())
### END HIDDEN TESTS

# %% [markdown]
# A check you can run yourself (not graded). Without a loss weight, fp16 has nothing to lose,
# and a loss scale should change nothing but the range: the two runs below should agree to a few
# parts in ten thousand. The fp32 run is the yardstick.

# %%
try:
    _plain = run_fp16(7, 20, 0, 0)
    _scaled = run_fp16(7, 20, 0, 6)
    print(f"fp16 final loss without scale {_plain[2]:.5f}, with scale 2**6 {_scaled[2]:.5f}, "
          f"fp32 {run_fp32(7, 20):.5f}")
except NotImplementedError:
    print("Write mixed_precision_step above first.")

# %% [markdown]
# ## 6. Break it, then fix it
#
# For your variant (seed, `steps`, loss weight $2^{-k}$ with $k$ = `weight_exp`, scale $2^{e}$
# with $e$ = `scale_exp`, learning rate `lr`):
#
# - `zero_fraction_unscaled`: the fraction of zero gradient entries at step 0 with scale 1
#   ($e = 0$);
# - `zero_fraction_scaled`: the same with your variant's scale $2^{e}$;
# - `min_scale_exp`: the smallest whole $e \ge 0$ for which fewer than 1% of the step-0 gradient
#   entries are zero;
# - `loss_fp32`, `loss_unscaled`, `loss_scaled`: the final loss on all examples after `steps`
#   steps, in plain fp32, in fp16 with scale 1, and in fp16 with your variant's scale.

# %% nbgrader={"grade": false, "grade_id": "answer_zeros", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_k, _e = params["weight_exp"], params["scale_exp"]
zero_fraction_unscaled = run_fp16(params["seed"], 1, _k, 0, params["lr"])[1][0]
zero_fraction_scaled = run_fp16(params["seed"], 1, _k, _e, params["lr"])[1][0]
min_scale_exp = next(e for e in range(41) if run_fp16(params["seed"], 1, _k, e, params["lr"])[1][0] < 0.01)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_zeros", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
import numbers

assert isinstance(zero_fraction_unscaled, numbers.Real) and isinstance(zero_fraction_scaled, numbers.Real)
assert isinstance(min_scale_exp, numbers.Integral), "min_scale_exp is a whole number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p4-fp16-underflow", "check_zeros", globals())
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "answer_losses", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
run_unscaled = run_fp16(params["seed"], params["steps"], params["weight_exp"], 0, params["lr"])
run_scaled = run_fp16(params["seed"], params["steps"], params["weight_exp"], params["scale_exp"], params["lr"])
loss_fp32 = run_fp32(params["seed"], params["steps"], params["lr"])
loss_unscaled = run_unscaled[2]
loss_scaled = run_scaled[2]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_losses", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
import numbers

assert all(isinstance(v, numbers.Real) for v in (loss_fp32, loss_unscaled, loss_scaled)), "losses are numbers"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p4-fp16-underflow", "check_losses", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 7. Look at it
#
# Left: the batch loss of the two fp16 runs, step by step. Right: the fraction of gradient
# entries that are exactly zero. Below: where the step-0 gradients sit on fp16's number line,
# computed in fp32 (which does not underflow here) with your loss weight, before and after the
# scale.

# %%
import matplotlib.pyplot as plt
import numpy as np

try:
    _u = run_fp16(params["seed"], params["steps"], params["weight_exp"], 0, params["lr"])
    _s = run_fp16(params["seed"], params["steps"], params["weight_exp"], params["scale_exp"], params["lr"])
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.6))
    ax1.plot(_u[0], label="fp16, scale 1")
    ax1.plot(_s[0], label=f"fp16, scale 2**{params['scale_exp']}")
    ax1.axhline(run_fp32(params["seed"], params["steps"], params["lr"]), color="k", ls=":",
                label="fp32: final loss")
    ax1.set_xlabel("step")
    ax1.set_ylabel("batch loss")
    ax1.legend()
    ax2.plot(_u[1], label="scale 1")
    ax2.plot(_s[1], label=f"scale 2**{params['scale_exp']}")
    ax2.set_ylim(-0.02, 1.02)
    ax2.set_xlabel("step")
    ax2.set_ylabel("fraction of zero gradient entries")
    ax2.legend()
    fig.tight_layout()
    plt.show()
except NotImplementedError:
    print("Write mixed_precision_step above first.")

# %%
_model = make_model(params["seed"])
_x, _y = make_data(params["seed"])
_idx = torch.randint(0, N_EXAMPLES, (BATCH,), generator=torch.Generator().manual_seed(params["seed"] + 1))
(F.mse_loss(_model(_x[_idx]), _y[_idx]) * 2.0 ** -params["weight_exp"]).backward()
_g = torch.cat([p.grad.flatten() for p in _model.parameters()]).abs()
_g = _g[_g > 0]
fig, ax = plt.subplots(figsize=(11, 3.2))
_bins = np.arange(-45, 1)
ax.hist(np.log2(_g.numpy()), bins=_bins, alpha=0.6, label="gradients (fp32), scale 1")
ax.hist(np.log2(_g.numpy()) + params["scale_exp"], bins=_bins, alpha=0.6,
        label=f"the same, times 2**{params['scale_exp']}")
for _x0, _name, _height in ((-24, "2**-24\nsmallest subnormal", 0.9), (-14, "2**-14\nsmallest normal", 0.6)):
    ax.axvline(_x0, color="k", ls="--")
    ax.text(_x0 + 0.4, ax.get_ylim()[1] * _height, _name, fontsize=9, va="top")
ax.set_xlabel("log2 |gradient entry|")
ax.set_ylabel("entries")
ax.legend(loc="upper left")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 8. Read your numbers
#
# Not graded; a few sentences for yourself.
#
# - With scale 1, what fraction of the gradient is zero at step 0, and does it grow as the loss
#   falls? If a few percent survive, which entries do you expect them to be (look at the
#   histogram: the largest ones), and is that enough to train?
# - With your variant's scale, is the fp16 run as good as fp32? Is `min_scale_exp` the same as
#   your variant's `scale_exp`; what does the difference cost?
# - The hidden test includes a scale so large that every scaled gradient overflows. What happens
#   to every step, and why does the loss then never move? Dynamic loss scaling (e05-loss-scaling, p1-loss-scaler) exists to find
#   a scale between the two failures by itself.
# - bf16 has fp32's exponent range (its smallest normal is $2^{-126}$). Would these gradients
#   underflow in bf16? What does bf16 give up instead?

# %% [markdown]
# *Your answer, for yourself (not graded): double-click this cell and write it here.*
