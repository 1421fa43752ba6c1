# %% [markdown]
# # b08-gradient-clipping · Gradient clipping
#
# *Chapter II.8 Training at Scale · basics · term 8 of 11*
#
# **Gradient clipping** (by global norm) caps the length of a step's gradient. All the
# gradients of the model are treated as one long vector. Its length is the **global norm**
# $$\lVert g\rVert = \sqrt{\textstyle\sum_i \lVert g_i\rVert^2},$$
# the square root of the sum of the *squared* norms of the individual tensors $g_i$. When
# that length exceeds a threshold `max_norm`, every gradient is multiplied by the same
# factor, so the step keeps its direction and only gets shorter. `torch.nn.utils.clip_grad_norm_`
# uses the factor
# $$c = \min\!\Big(\frac{\texttt{max\_norm}}{\lVert g\rVert + 10^{-6}},\; 1\Big).$$
# On an ordinary step $c = 1$ exactly and clipping does nothing. Only a spike is cut down.
# The rule goes back to Pascanu, Mikolov and Bengio (ICML 2013, Algorithm 1). Large language
# models clip at 1.0 (GPT-3, LLaMA); OPT-175B lowered its threshold to 0.3 part-way through
# training.
#
# The threshold is compared with the norm of *all* tensors together. No single tensor is
# compared with it, and the norms are not simply added.

# %%
import torch

torch.manual_seed(0)
grads = [torch.randn(6, 4) * 0.3, torch.randn(4) * 0.1, torch.randn(3, 6) * 0.4]
weights = [torch.nn.Parameter(torch.zeros_like(g)) for g in grads]
for p, g in zip(weights, grads):
    p.grad = g.clone()
per_tensor = [g.norm().item() for g in grads]
by_hand = sum(n ** 2 for n in per_tensor) ** 0.5
total = torch.nn.utils.clip_grad_norm_(weights, max_norm=1.0)
print("per-tensor norms:", [round(n, 4) for n in per_tensor])
print(f"global norm by hand {by_hand:.6f}, torch {total.item():.6f}")
print(f"coefficient applied: {(weights[0].grad / grads[0]).mean().item():.6f}"
      f" = min(1 / ({by_hand:.6f} + 1e-6), 1) = {min(1 / (by_hand + 1e-6), 1):.6f}")

# %% [markdown]
# ## Your variant
#
# Six consecutive steps of a small transformer. Each step is given as the norms of its four
# gradient tensors: embedding, attention, MLP, output head.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {
    "A": {"max_norm": 1.0, "tensor_norms": [
        [0.21, 0.35, 0.42, 0.18], [0.55, 0.62, 0.71, 0.30], [0.12, 0.19, 0.25, 0.09],
        [0.40, 2.85, 1.10, 0.33], [0.30, 0.41, 0.52, 0.22], [0.25, 0.33, 0.38, 0.95]]},
    "B": {"max_norm": 0.3, "tensor_norms": [
        [0.05, 0.12, 0.16, 0.07], [0.09, 0.21, 0.19, 0.11], [0.31, 0.88, 0.47, 0.26],
        [0.04, 0.09, 0.11, 0.05], [0.06, 0.14, 0.17, 0.08], [0.07, 0.15, 0.13, 0.05]]},
    "C": {"max_norm": 1.0, "tensor_norms": [
        [0.48, 0.52, 0.61, 0.27], [0.36, 0.44, 0.58, 0.25], [1.90, 6.40, 3.30, 0.80],
        [0.51, 0.58, 0.66, 0.31], [0.29, 0.37, 0.45, 0.21], [0.33, 0.41, 0.47, 0.19]]},
    "D": {"max_norm": 0.3, "tensor_norms": [
        [0.02, 0.05, 0.06, 0.03], [0.11, 0.17, 0.20, 0.09], [0.13, 0.18, 0.21, 0.10],
        [0.90, 4.10, 2.20, 0.60], [0.05, 0.08, 0.09, 0.04], [0.21, 0.26, 0.34, 0.12]]},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"basics:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# Compute, for your variant (lists of six entries, in step order; the first step is 0):
# - `global_norms`: each step's global gradient norm;
# - `clip_coefficients`: the factor `clip_grad_norm_` multiplies that step's gradients by;
# - `clipped_steps`: the indices of the steps whose gradients clipping actually shrinks.

# %% nbgrader={"grade": false, "grade_id": "answer_clipping", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
import math

global_norms = [math.sqrt(sum(n * n for n in step)) for step in params["tensor_norms"]]
clip_coefficients = [min(params["max_norm"] / (g + 1e-6), 1.0) for g in global_norms]
clipped_steps = [i for i, c in enumerate(clip_coefficients) if c < 1.0]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_clipping", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the numbers are checked when your notebook is graded.
for name in ("global_norms", "clip_coefficients", "clipped_steps"):
    assert name in globals(), f"{name} is not defined yet"
for name in ("global_norms", "clip_coefficients"):
    assert isinstance(globals()[name], (list, tuple)), f"{name} should be a list"
    assert len(globals()[name]) == 6, f"{name} should have one entry per step"
assert all(isinstance(i, numbers.Integral) for i in clipped_steps), "clipped_steps should be a list of ints"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("b08-gradient-clipping", "check_clipping", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## Look at it
#
# Bars are the steps' global norms and the line is the threshold. Clipping acts only on the
# bars that cross the line; every other step passes through untouched (coefficient 1).

# %%
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(6, 3))
colours = ["tab:red" if i in clipped_steps else "tab:blue" for i in range(len(global_norms))]
ax.bar(range(len(global_norms)), global_norms, color=colours)
ax.axhline(params["max_norm"], color="black", linestyle="--", label="max_norm")
ax.set_yscale("log")
ax.set_xlabel("step")
ax.set_ylabel("global gradient norm")
ax.legend()
plt.show()
