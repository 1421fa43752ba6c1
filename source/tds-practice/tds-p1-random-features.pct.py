# %% [markdown]
# # tds-p1-random-features · Double descent on your CPU
#
# *Module TDS Training Dynamics & Scaling · practice · build it, break it, read the papers*
#
# tds-w1 derived double descent for a model simple enough to solve on paper. Here you see it in the
# setting of Belkin et al. (PNAS 2019): **random features** (a fixed random first layer, ReLU, then
# a linear read-out) fitted by **minimum-norm least squares**, the solution gradient descent from
# zero converges to. Sweep the number of features $p$ past the number of training examples $n$ and
# the test error rises to a peak near $p = n$, the interpolation threshold (tds-b2), then falls
# again, while the training error reaches zero and stays there. Nakkiran et al. (2019, *Deep Double
# Descent*) report the same shape in the width of deep networks.
#
# The protocol, exactly (the grader runs the same one on the same data):
# - `train_features, train_y, test_features, test_y = make_task(params)` (in the locked cell below):
#   ReLU random features of all `max(feature_counts)` widths, float64;
# - the model with $p$ features uses the first $p$ columns: `train_features[:, :p]`;
# - fit it with your `min_norm_fit(train_features[:, :p], train_y)`;
# - its test error is the mean squared error on the test set, its training error the same on the training set.

# %% [markdown]
# ## Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id (on your own
# machine start Jupyter with `JUPYTERHUB_USER=<your course id> jupyter lab`), and defines `make_task`.
# Editing this cell does not change what you are graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import torch

torch.set_num_threads(1)   # tiny tensors: one thread is the fastest

VARIANTS = {'A': {'seed': 35,
       'dim': 10,
       'n_train': 40,
       'noise': 0.2,
       'feature_counts': [5, 10, 20, 30, 36, 40, 44, 60, 100, 200, 400]},
 'B': {'seed': 32,
       'dim': 8,
       'n_train': 60,
       'noise': 0.1,
       'feature_counts': [10, 30, 50, 56, 60, 64, 80, 150, 300, 600]},
 'C': {'seed': 33,
       'dim': 12,
       'n_train': 30,
       'noise': 0.3,
       'feature_counts': [3, 10, 20, 26, 30, 34, 50, 100, 300]},
 'D': {'seed': 34,
       'dim': 6,
       'n_train': 50,
       'noise': 0.15,
       'feature_counts': [5, 25, 45, 50, 55, 75, 125, 250, 500]}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-practice:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]


# chapter: include graders.problems.tds_practice.tds_p1_random_features.make_task


print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ## 1. Build it: the minimum-norm fit
#
# Write `min_norm_fit(features, targets)`: the weights $w$ of smallest norm among those that
# minimise $|Aw - y|^2$, for $A$ = `features` ($n \times p$) and $y$ = `targets`, returned as a list of
# $p$ floats. It must work on both sides of the threshold and on square systems; the hidden tests
# call it on nested lists. (Hint: the Moore-Penrose pseudo-inverse, `torch.linalg.pinv`.) Work in
# float64, as the rest of this notebook does: the outputs are compared to a relative 1e-6, which a
# float32 tensor (what `torch.tensor` makes of a list of floats) does not reach.

# %% nbgrader={"grade": false, "grade_id": "answer_fit", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def min_norm_fit(features, targets):
    """Minimum-norm least-squares weights for features (n x p) and targets (n), as a list."""
    A = torch.as_tensor(features, dtype=torch.float64)
    y = torch.as_tensor(targets, dtype=torch.float64)
    return (torch.linalg.pinv(A) @ y).tolist()
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_fit", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
_w = min_norm_fit([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]], [1.0, 2.0, 3.0])
assert isinstance(_w, list) and len(_w) == 2, "min_norm_fit returns one weight per feature, as a list"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p1-random-features", "check_fit", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 2. Run the sweep
#
# For each `p` in `params["feature_counts"]`, in order: fit, then record
# - `test_errors` and `train_errors` (lists of floats, mean squared errors);
#
# and `peak_features`: the feature count with the largest test error (an int).

# %% nbgrader={"grade": false, "grade_id": "answer_sweep", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
train_features, train_y, test_features, test_y = make_task(params)
test_errors, train_errors = [], []
for p in params["feature_counts"]:
    w = torch.tensor(min_norm_fit(train_features[:, :p], train_y), dtype=torch.float64)
    test_errors.append(float(((test_features[:, :p] @ w - test_y) ** 2).mean()))
    train_errors.append(float(((train_features[:, :p] @ w - train_y) ** 2).mean()))
peak_features = params["feature_counts"][test_errors.index(max(test_errors))]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_sweep", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
for _name in ("test_errors", "train_errors"):
    assert isinstance(globals()[_name], list) and len(globals()[_name]) == len(params["feature_counts"]), \
        f"{_name} should be a list with one error per feature count"
assert isinstance(peak_features, numbers.Integral), "peak_features is a feature count: an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p1-random-features", "check_sweep", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 3. Look at it (not graded)

# %%
import matplotlib.pyplot as plt

try:
    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.plot(params["feature_counts"], test_errors, "o-", label="test")
    ax.plot(params["feature_counts"], [max(e, 1e-12) for e in train_errors], "s--", label="train")
    ax.axvline(params["n_train"], color="grey", ls=":", label="p = n (interpolation threshold)")
    ax.set(xscale="log", yscale="log", xlabel="random features p", ylabel="mean squared error",
           title=f"Variant {VARIANT}: double descent")
    ax.legend()
    plt.show()
except NameError as exc:
    print(f"Run the sweep first ({exc}).")

# %% [markdown]
# ## 4. Break it (not graded)
#
# Add a small ridge penalty to your fit, $w = (A^\top A + \lambda I)^{-1}A^\top y$ with $\lambda = 0.1$,
# and rerun the sweep. What happens to the peak? Belkin et al. and Nakkiran et al. both note that
# suitable regularisation removes it; the peak is a property of *un*regularised interpolation.
