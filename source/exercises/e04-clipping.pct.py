# %% [markdown]
# # e04-clipping · Global-norm gradient clipping, implemented
#
# *Chapter II.8 Training at Scale · mathematics · exercise 4 of 10*
#
# Clipping is the chapter's smallest safety device: on a step whose gradient is
# unusually large, shrink the whole gradient so that its size stays under a threshold
# $M$; on every other step, do nothing. You will derive the coefficient, write the
# function yourself, and the grader will run it against `torch.nn.utils.clip_grad_norm_`
# on gradients you have never seen.
#
# Sources: Pascanu, Mikolov and Bengio, *On the difficulty of training recurrent neural
# networks* (ICML 2013), Algorithm 1, where the rule was proposed; the PyTorch
# documentation of `torch.nn.utils.clip_grad_norm_`, which is the convention graded here.

# %% [markdown]
# ## 1. What "global norm" means
#
# A model's gradient lives in many tensors $G_1, \dots, G_{n_\text{tensors}}$ (one per weight matrix,
# bias, embedding...). The **global norm** treats them as one long vector:
#
# $$\|G\| = \sqrt{\sum_{l=1}^{n_\text{tensors}} \|G_l\|_2^2}, \qquad \|G_l\|_2^2 = \sum_j G_{l,j}^2 .$$
#
# torch then multiplies **every** tensor by the same coefficient
#
# $$\text{clip\_coef} = \min\!\left(\frac{M}{\|G\| + 10^{-6}},\; 1\right).$$
#
# Three details matter, and each one is a place where home-made versions go wrong:
#
# - one coefficient for all tensors, so the update keeps its **direction** and only its
#   length changes (clipping each tensor on its own would bend the step);
# - the coefficient is capped at 1: clipping never lengthens a step;
# - the $10^{-6}$ keeps the division finite on a step where every gradient is zero, and
#   it is why a gradient sitting exactly at the threshold is still shrunk, very slightly.
#
# `clip_grad_norm_` edits the gradients in place and **returns the norm measured before
# clipping**, not after. Logging that return value is how training curves show gradient
# spikes at all; people who read it as "the clipped norm" are surprised it ever exceeds $M$.
#
# What the large runs printed: GPT-3 clips "the global norm of the gradient at 1.0"
# (Brown et al. 2020, Appendix B), and so does LLaMA (Touvron et al. 2023, §2.3). OPT-175B
# started at 1.0 and, early in training, lowered the threshold to 0.3 because that helped
# stability (Zhang et al. 2022, §2.5).

# %% [markdown]
# ## 2. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student
# id. On JupyterHub that is your hub user name; working on your own machine, start
# Jupyter with `JUPYTERHUB_USER=<your course id> jupyter lab` so that you see the same
# variant the grader uses. Editing this cell does not change what you are graded on.
#
# Your variant is one step's gradients of a small network (four tensors: a weight
# matrix, a bias, a second weight matrix and its bias, each flattened to a list), and a
# threshold `max_norm` taken from one of the runs above.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import sympy as sp

n_tensors, g, M = sp.symbols("n_tensors g M", positive=True)

VARIANTS = {
    "A": {
        "grads": [[0.3407, 0.8099, 0.3257, -1.2846, 0.8925, 0.44],
                  [-0.5293, 0.5728, 0.3594],
                  [0.2899, 0.028, 0.5389, -0.726, -0.1606, -0.4753],
                  [0.5903, 0.0392]],
        "max_norm": 1.0,
    },
    "B": {
        "grads": [[0.0474, -0.131, -0.1035, -0.6116, 0.4509, 0.2866, -0.0815, 0.1938],
                  [0.0704, -0.1387, 0.2449, -0.0778],
                  [-0.0824, -0.1984, 0.114, -0.0249],
                  [0.1366]],
        "max_norm": 0.3,
    },
    "C": {
        "grads": [[22.3051, -27.9307, 4.5694, -6.2051, -4.947, -2.3562],
                  [-0.6623, -0.076, -0.2837, 1.0895, 0.074, -0.1156],
                  [-0.0922, -0.219, -0.3459],
                  [-0.1281, 0.158, -0.0782]],
        "max_norm": 1.0,
    },
    "D": {
        "grads": [[-0.0284, -0.0076, 0.0724, 0.0287, -0.0714, -0.0002],
                  [-0.0271, 0.0065, -0.07],
                  [0.0105, 0.0102, 0.0686, 0.0138, 0.0222, -0.065],
                  [0.098, -0.0834]],
        "max_norm": 0.3,
    },
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"exercises:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: max_norm = {params['max_norm']}, "
      f"{len(params['grads'])} gradient tensors of sizes {[len(t) for t in params['grads']]}")

# %% [markdown]
# ### 2a. Derive
#
# Take $n_\text{tensors}$ gradient tensors that all have the **same** norm $g$, and a threshold
# $M$ that the global norm exceeds, so that clipping acts. Write `clip_coef_expr`, the
# coefficient applied to every tensor, as a sympy expression in `n_tensors`, `g` and `M` (the
# symbols defined above). Leave out torch's $10^{-6}$: it is there for safety, not for the algebra.
#
# (Compare your answer with what clipping each tensor by its own norm would give. How
# much harder does global clipping squeeze a model with $n_\text{tensors} = 400$ tensors?)

# %% nbgrader={"grade": false, "grade_id": "answer_expr", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
global_norm_equal = sp.sqrt(n_tensors * g**2)   # n_tensors equal squared norms, summed, then the root
clip_coef_expr = sp.simplify(M / global_norm_equal)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expr", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the mathematics is checked when your notebook is graded.
assert isinstance(clip_coef_expr, sp.Expr), "clip_coef_expr should be a sympy expression"
assert {x.name for x in clip_coef_expr.free_symbols} <= {x.name for x in (n_tensors, g, M)}, "use only the symbols n_tensors, g and M"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e04-clipping", "check_expr", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 2b. Implement
#
# Write `clip_grad_norm(grads, max_norm)` without calling torch's clipping functions:
#
# - `grads` is a list of 1-D gradient tensors given as plain Python lists of floats
#   (the hidden tests pass lists; converting them with `np.asarray` is fine);
# - return a pair `(clipped, total_norm)`: `clipped` is a list with one clipped tensor per
#   input tensor (lists or 1-D numpy arrays), in the same order, and `total_norm` is the
#   global norm **before** clipping, as a float;
# - follow torch's convention exactly, the $10^{-6}$ included, and leave the inputs
#   unchanged. Your function must cope with a step on which every gradient is zero.

# %% nbgrader={"grade": false, "grade_id": "answer_function", "locked": false, "schema_version": 3, "solution": true, "task": false}
import numpy as np


def clip_grad_norm(grads, max_norm):
    """Clip a list of gradient tensors by their global 2-norm, as torch.nn.utils.clip_grad_norm_ does."""
    ### BEGIN SOLUTION
    tensors = [np.asarray(t, dtype=np.float64) for t in grads]
    total_norm = float(np.sqrt(sum(float(np.sum(t * t)) for t in tensors)))
    coef = min(float(max_norm) / (total_norm + 1e-6), 1.0)
    return [t * coef for t in tensors], total_norm
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_function", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the hidden tests compare your function with torch on fresh gradients.
_out = clip_grad_norm([[0.5, -0.5], [1.0]], 1.0)
assert isinstance(_out, tuple) and len(_out) == 2, "return a pair (clipped, total_norm)"
assert len(_out[0]) == 2, "return one clipped tensor per input tensor"
assert [len(t) for t in _out[0]] == [2, 1], "each clipped tensor keeps its length"
assert np.isscalar(_out[1]), "total_norm should be a single number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e04-clipping", "check_function", globals())
### END HIDDEN TESTS

# %% [markdown]
# Before you rely on it, compare your function with torch on a few random gradients of
# your own. This cell is not graded; it only tells you whether you agree.

# %%
import torch

try:
    _rng = np.random.default_rng(0)
    for _trial in range(3):
        _grads = [list(_rng.standard_normal(n) * 0.7) for n in (5, 3, 4)]
        _params = [torch.nn.Parameter(torch.zeros(len(t), dtype=torch.float64)) for t in _grads]
        for _p, _t in zip(_params, _grads):
            _p.grad = torch.tensor(_t, dtype=torch.float64)
        _torch_norm = float(torch.nn.utils.clip_grad_norm_(_params, 1.0))
        _mine, _my_norm = clip_grad_norm(_grads, 1.0)
        _agree = all(np.allclose(np.asarray(m, dtype=float), p.grad.numpy()) for m, p in zip(_mine, _params))
        print(f"trial {_trial}: torch norm {_torch_norm:.6f}, yours {float(_my_norm):.6f}, "
              f"clipped gradients agree: {_agree}")
except NotImplementedError:
    print("Write clip_grad_norm above first.")

# %% [markdown]
# ### 2c. Compute
#
# For your variant's gradients and threshold, compute
# - `total_norm`: the global norm before clipping;
# - `clip_coef`: the coefficient torch applies, $\min(M/(\|G\| + 10^{-6}), 1)$.

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_, total_norm = clip_grad_norm(params["grads"], params["max_norm"])
total_norm = float(total_norm)
clip_coef = min(params["max_norm"] / (total_norm + 1e-6), 1.0)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
import numbers

for _name in ("total_norm", "clip_coef"):
    assert _name in globals(), f"assign {_name} = ... in the answer cell"
    assert isinstance(globals()[_name], numbers.Real), f"{_name} should be a number"
assert 0 < clip_coef <= 1, "a clipping coefficient lies in (0, 1]"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e04-clipping", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 2d. Look at it
#
# Left: each tensor's norm before and after your clipping. Global clipping shrinks all
# bars by the same factor, so their proportions (the step's direction) are unchanged.
# Right: the coefficient as a function of the global norm, with your step marked. It is
# flat at 1 up to the threshold: on most steps of a healthy run clipping does nothing.

# %%
import matplotlib.pyplot as plt

try:
    _clipped, _norm = clip_grad_norm(params["grads"], params["max_norm"])
    _before = [float(np.linalg.norm(np.asarray(t, dtype=float))) for t in params["grads"]]
    _after = [float(np.linalg.norm(np.asarray(t, dtype=float))) for t in _clipped]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
    _x = np.arange(len(_before))
    ax1.bar(_x - 0.2, _before, width=0.4, label="before")
    ax1.bar(_x + 0.2, _after, width=0.4, label="after")
    ax1.set_xticks(_x, ["W1", "b1", "W2", "b2"][: len(_x)])
    ax1.set_ylabel("tensor norm")
    ax1.legend()
    _c = params["max_norm"]
    _grid = np.logspace(np.log10(_c) - 2, np.log10(_c) + 2, 400)
    ax2.semilogx(_grid, np.minimum(_c / (_grid + 1e-6), 1.0))
    ax2.axvline(_c, color="grey", ls=":", label="threshold M")
    ax2.plot([float(_norm)], [min(_c / (float(_norm) + 1e-6), 1.0)], "o", color="C3", label="your step")
    ax2.set_xlabel("global norm before clipping")
    ax2.set_ylabel("clip coefficient")
    ax2.legend()
    fig.tight_layout()
    plt.show()
except NotImplementedError:
    print("Write clip_grad_norm above first.")

# %% [markdown]
# ### 2e. Read your numbers
#
# What fraction of the update survived on your step? If your variant is the spike (one
# tensor carrying nearly all the norm), notice that global clipping also shrinks the
# quiet tensors by the same factor, although they did nothing wrong. Would clipping each
# tensor on its own have been kinder to them, and what would it have done to the
# direction of the step? (Not graded: a sentence for yourself.)

# %% [markdown]
# *Your answer, for yourself (not graded): double-click this cell and write it here.*
