# %% [markdown]
# # tds-b1-sharpness · How sharp is the loss, and which learning rates survive it?
#
# *Module TDS Training Dynamics & Scaling · basics · term 1 of 5*
#
# **Sharpness.** The sharpness of a loss at a point is the largest eigenvalue of its Hessian
# there, the curvature along the steepest direction of the bowl (Cohen et al., *Gradient Descent
# on Neural Networks Typically Occurs at the Edge of Stability*, ICLR 2021).
#
# Why it matters: on a quadratic $L(x) = \tfrac12 x^\top H x$, one step of gradient descent is
# $x \leftarrow x - \eta H x$. Write $x$ in the eigenvectors of $H$; the component along an
# eigenvector of eigenvalue $a$ is multiplied by $1 - \eta a$ at every step. It shrinks only if
# $|1 - \eta a| < 1$, that is $0 < \eta a < 2$. The largest eigenvalue is the first to break the
# rule, so gradient descent converges from every start exactly when
#
# $$\eta \cdot \text{sharpness} < 2 .$$
#
# Above $2/\text{sharpness}$ the top direction flips sign and grows at every step: the run
# diverges. Between $1/\text{sharpness}$ and $2/\text{sharpness}$ it still converges, but that
# direction oscillates. II.8's t4-warmup-and-wsd uses this threshold to explain warmup; this module
# comes back to it in tds-c1 and tds-e1.

# %% [markdown]
# ## Worked example (not your variant)
#
# The sharpness is an eigenvalue, not a diagonal entry: coupling between coordinates makes the
# bowl steeper along a diagonal direction than along any axis.

# %%
import numpy as np

ex_H = np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 1.0]])
ex_sharpness = np.linalg.eigvalsh(ex_H)[-1]          # eigvalsh sorts ascending
print("largest diagonal entry:", ex_H.diagonal().max())
print("sharpness             :", ex_sharpness)
print("stable while lr <     :", 2 / ex_sharpness)
for lr in (0.3, 0.6, 0.7):
    x = np.ones(3)
    for _ in range(50):
        x = x - lr * ex_H @ x
    print(f"lr {lr}: |x| after 50 steps = {np.linalg.norm(x):.3g}")

# %% [markdown]
# At $\eta = 0.6 < 2/3$ the run converges (slowly, oscillating along the top direction); at
# $\eta = 0.7 > 2/3$ it blows up, although every diagonal entry is at most 2 and $0.7 \cdot 2 < 2$.
#
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

VARIANTS = {'A': {'hessian': [[4.0, 1.5, 0.0], [1.5, 3.0, 1.0], [0.0, 1.0, 1.0]], 'lrs': [0.1, 0.3, 0.4, 0.5]},
 'B': {'hessian': [[10.0, 4.0, 2.0], [4.0, 8.0, 0.0], [2.0, 0.0, 3.0]],
       'lrs': [0.05, 0.12, 0.15, 0.2]},
 'C': {'hessian': [[1.0, 0.6, 0.3], [0.6, 2.0, 0.8], [0.3, 0.8, 0.5]], 'lrs': [0.5, 0.8, 0.9, 1.2]},
 'D': {'hessian': [[50.0, 20.0, 5.0], [20.0, 30.0, 10.0], [5.0, 10.0, 20.0]],
       'lrs': [0.01, 0.025, 0.03, 0.05]}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-basics:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# For your variant's `hessian` (a symmetric 3 × 3 matrix, as nested lists) and `lrs`, compute
# - `sharpness`: the largest eigenvalue of the Hessian (a float);
# - `stable_lr_limit`: the learning rate above which gradient descent on this quadratic diverges;
# - `stable_lrs`: the 0-based indices of the rates in `lrs` at which it converges (a list of ints).

# %% nbgrader={"grade": false, "grade_id": "answer_sharpness", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
import numpy as np

H = np.array(params["hessian"])
sharpness = float(np.linalg.eigvalsh(H)[-1])
stable_lr_limit = 2.0 / sharpness
stable_lrs = [i for i, lr in enumerate(params["lrs"]) if lr * sharpness < 2.0]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_sharpness", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
assert isinstance(sharpness, numbers.Real), "sharpness should be a number"
assert isinstance(stable_lr_limit, numbers.Real), "stable_lr_limit should be a number"
assert isinstance(stable_lrs, list) and all(isinstance(i, numbers.Integral) for i in stable_lrs), \
    "stable_lrs should be a list of ints"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-b1-sharpness", "check_sharpness", globals())
### END HIDDEN TESTS

# %% [markdown]
# Check yourself (not graded): run 100 steps of gradient descent from `np.ones(3)` at each of
# your rates. Do the ones you called stable shrink, and the others grow?
