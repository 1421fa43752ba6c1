# %% [markdown]
# # tds-b2-interpolation-threshold · When can a model fit every training example?
#
# *Module TDS Training Dynamics & Scaling · basics · term 2 of 5*
#
# **Interpolation threshold.** Fit $n$ training targets by least squares on $p$ features: the
# feature matrix $X$ is $n \times p$. Features in general position (random features are, with
# probability one) give $X$ rank $\min(n, p)$. So
# - with $p < n$ features, the fits $Xw$ fill only a $p$-dimensional subspace of the
#   $n$-dimensional target space: $n - p$ directions of the targets stay unfit;
# - with $p \ge n$, every target vector is fitted exactly (the model *interpolates*), and the
#   exact fits form a family of dimension $p - n$. Minimum-norm least squares, $w = X^{+}y$, picks
#   the one of smallest norm.
#
# The **interpolation threshold** is the boundary, $p = n$. With $K$ outputs fitted at once (one
# column per class) the model has $pK$ parameters, so in parameters the threshold is $nK$.
# Belkin et al. (PNAS 2019) put the peak of the double-descent curve exactly there: random
# Fourier features on $n = 10^4$ MNIST images peak at $10^4$ features (their Fig. 2).
# This module's worked problem (tds-w1) derives why the test error peaks at the threshold.

# %% [markdown]
# ## Worked example (not your variant)

# %%
import numpy as np

rng = np.random.default_rng(0)
n = 6
y = rng.normal(size=n)
for p in (3, 6, 9):
    X = rng.normal(size=(n, p))
    w = np.linalg.pinv(X) @ y                      # minimum-norm least squares
    print(f"p = {p}: rank {np.linalg.matrix_rank(X)}, training residual {np.linalg.norm(X @ w - y):.2e}")

# %% [markdown]
# At $p = 3$ three directions of the targets are left over; from $p = 6 = n$ on, the residual is zero to rounding.

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

VARIANTS = {'A': {'n_samples': 10000, 'outputs': 10, 'feature_counts': [2000, 9999, 10000, 40000]},
 'B': {'n_samples': 4000, 'outputs': 10, 'feature_counts': [4000, 4001, 1000, 3999]},
 'C': {'n_samples': 40, 'outputs': 1, 'feature_counts': [10, 39, 40, 41, 120]},
 'D': {'n_samples': 64, 'outputs': 2, 'feature_counts': [16, 64, 63, 256]}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-basics:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# For your variant's `n_samples`, `outputs` ($K$) and `feature_counts`, compute
# - `interpolating`: the 0-based indices of the feature counts at which every target can be fitted exactly;
# - `threshold_parameters`: the number of parameters at the interpolation threshold (an int);
# - `unfit_dims`: for each feature count, how many directions of the targets stay unfit (ints);
# - `exact_fit_dims`: for each feature count, the dimension of the family of exact fits (0 where there is none).
#
# Count the last two for one output: each of the $K$ outputs is its own least-squares problem with
# the same $n$ equations, so its directions and its family are the same for every output.

# %% nbgrader={"grade": false, "grade_id": "answer_threshold", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
n, K, ps = params["n_samples"], params["outputs"], params["feature_counts"]
interpolating = [i for i, p in enumerate(ps) if p >= n]
threshold_parameters = n * K
unfit_dims = [max(n - p, 0) for p in ps]
exact_fit_dims = [max(p - n, 0) for p in ps]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_threshold", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
for _name in ("interpolating", "unfit_dims", "exact_fit_dims"):
    assert isinstance(globals()[_name], list), f"{_name} should be a list of ints"
    assert all(isinstance(i, numbers.Integral) for i in globals()[_name]), f"{_name} should hold ints"
assert isinstance(threshold_parameters, numbers.Integral), "threshold_parameters is a count: make it an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-b2-interpolation-threshold", "check_threshold", globals())
### END HIDDEN TESTS
