# %% [markdown]
# # tds-p5-lazy-vs-feature · Do the hidden weights move? Width under NTK and under μP
#
# *Module TDS Training Dynamics & Scaling · practice · build it, break it, read the papers*
#
# A network "learns features" when its hidden layers change during training, so that the
# representation the last layer reads is different at the end from what it was at the start. The
# question of this notebook sounds like it should have one answer, and it has two: **as a network is
# made wider, do its hidden weights move more, less, or the same?** It depends on how the
# initialisation and the learning rates are scaled with the width, that is, on the
# *parametrisation*, and the two parametrisations you will compare give opposite limits.
#
# **The lazy limit.** Jacot, Gabriel and Hongler (NeurIPS 2018) studied networks in the *NTK
# parametrisation*: every weight drawn from a standard normal, every layer's output multiplied by
# one over the square root of its fan-in, one learning rate for all layers, independent of width.
# In that scaling, as the width grows, training moves every individual weight less and less, while
# the many small moves still add up to a change of the output of a fixed size. The network then
# behaves like its first-order Taylor expansion around the start: a linear model in fixed features,
# with a fixed kernel, the neural tangent kernel. Lee et al. (NeurIPS 2019) measured it: the relative
# change of the weights over training falls as the width grows, along a power law in the width, and
# the trained wide network matches its linearisation. Chizat, Oyallon and Bach (NeurIPS 2019) called
# this **lazy training** and showed it is a matter of scale, not of width itself: any model whose
# output is large compared with how much its parameters need to move to fit the data trains lazily.
# The route to the exponent is a counting argument that you can do on paper: the gradient of the
# output with respect to one hidden weight carries the output multiplier, so each hidden entry
# moves by an amount that shrinks with the width; the entries at the start do not shrink; divide,
# and the ratio of the norms follows.
#
# **Why lazy is not what we want.** A network in the kernel limit never changes its features, so it
# can do no better than a kernel method with the kernel it started with, and it cannot do the things
# that made deep learning useful, such as transfer learning from pretrained representations (Yang
# and Hu 2021 use word2vec-style embedding learning as their example). Yang and Hu (ICML 2021,
# *Feature Learning in Infinite-Width Neural Networks*) asked which scalings of the initialisation
# and per-layer learning rates keep every layer's features changing by a width-independent amount
# as the width grows, and found a unique one, the **maximal update parametrisation (μP)**. For SGD,
# Tensor Programs V (Yang et al. 2022) tabulates it in its Table 3: input weights initialised with
# variance one over the fan-in and trained at a rate multiplied by the fan-out; output weights
# initialised much smaller, with variance one over the *square* of the fan-in, and trained at a rate
# divided by the fan-in. The output starts near zero, the input layer is pushed hard, and in the
# limit the features move by an amount that does not vanish.
#
# **What you will measure.** One small two-layer tanh network, trained by full-batch gradient descent
# on a smooth regression target for the same number of steps at every width, in both
# parametrisations. At each width you compute the relative change of the hidden (input-layer)
# weight matrix, the Frobenius norm of the change over the Frobenius norm at the start. Then you fit
# a straight line to the points on log-log axes: its slope is the exponent of the power law the
# measurements follow. Under NTK you should find a clearly negative slope near the value the
# counting argument above predicts; under μP you should find a slope close to zero.
#
# The protocol, exactly (the grader runs the same code):
# - `make_task(params)` draws `params["n_examples"]` Gaussian inputs of dimension `params["dim"]` and
#   the variant's target (`params["task"]`), in float64;
# - `W0, WT = train_width(params, width, "ntk")` (or `"mup"`) trains the network of that width for
#   `params["steps"]` full-batch steps and returns the hidden weight matrix at the start and at the end;
# - the widths are `params["widths"]`, in that order.

# %% [markdown]
# ## Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id (on your own
# machine start Jupyter with `JUPYTERHUB_USER=<your course id> jupyter lab`), and defines
# `make_task` and `train_width`. Editing this cell does not change what you are graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import torch

torch.set_num_threads(1)   # small tensors: one thread is the fastest, and the runs repeat bit for bit

VARIANTS = {'A': {'seed': 0,
       'task': 'sin',
       'n_examples': 64,
       'dim': 8,
       'steps': 100,
       'widths': [64, 128, 256, 512, 1024, 2048, 4096],
       'lr_ntk': 1.0,
       'lr_mup': 0.05},
 'B': {'seed': 1,
       'task': 'abs',
       'n_examples': 64,
       'dim': 6,
       'steps': 100,
       'widths': [32, 64, 128, 256, 512, 1024, 2048],
       'lr_ntk': 1.0,
       'lr_mup': 0.05},
 'C': {'seed': 2,
       'task': 'product',
       'n_examples': 96,
       'dim': 4,
       'steps': 80,
       'widths': [100, 200, 400, 800, 1600, 3200],
       'lr_ntk': 0.5,
       'lr_mup': 0.05},
 'D': {'seed': 3,
       'task': 'sin',
       'n_examples': 48,
       'dim': 10,
       'steps': 120,
       'widths': [64, 256, 1024, 4096],
       'lr_ntk': 1.0,
       'lr_mup': 0.03}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-practice:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]


# chapter: include graders.problems.tds_practice.tds_p5_lazy_vs_feature.make_task


# chapter: include graders.problems.tds_practice.tds_p5_lazy_vs_feature.train_width


print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ## 1. Build it: the relative change and the log-log slope
#
# Write two functions; the hidden tests call both on nested lists.
# - `relative_change(final, initial)`: the Frobenius norm of `final - initial` divided by the
#   Frobenius norm of `initial`, as a float (both are matrices of the same shape).
# - `loglog_slope(widths, values)`: the least-squares slope of the natural logarithm of `values`
#   against the natural logarithm of `widths` (a straight-line fit, as `numpy.polyfit` of degree one
#   gives it), as a float, computed in float64: the hidden tests compare it to a relative 1e-6, and
#   a nearly flat slope in float32 misses that.

# %% nbgrader={"grade": false, "grade_id": "answer_measures", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
import numpy as np


def relative_change(final, initial):
    """|final - initial|_F / |initial|_F."""
    final = torch.as_tensor(final, dtype=torch.float64)
    initial = torch.as_tensor(initial, dtype=torch.float64)
    return float(torch.linalg.norm(final - initial) / torch.linalg.norm(initial))


def loglog_slope(widths, values):
    """Least-squares slope of log(values) against log(widths)."""
    return float(np.polyfit(np.log(np.asarray(widths, dtype=float)), np.log(np.asarray(values, dtype=float)), 1)[0])
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_measures", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
assert isinstance(relative_change([[1.0, 2.0]], [[1.0, 1.0]]), float), "relative_change returns a float"
assert isinstance(loglog_slope([1, 2, 4], [1.0, 0.5, 0.25]), float), "loglog_slope returns a float"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p5-lazy-vs-feature", "check_measures", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 2. Run the width sweep
#
# For each width in `params["widths"]`, in order, train it once under each parametrisation and
# record the relative change of the hidden weights:
# - `changes_ntk` and `changes_mup`: lists of floats, one per width;
# - `slope_ntk` and `slope_mup`: the log-log slope of each list against the widths.
#
# The whole sweep takes several seconds.

# %% nbgrader={"grade": false, "grade_id": "answer_sweep", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
changes_ntk, changes_mup = [], []
for width in params["widths"]:
    W0, WT = train_width(params, width, "ntk")
    changes_ntk.append(relative_change(WT, W0))
    W0, WT = train_width(params, width, "mup")
    changes_mup.append(relative_change(WT, W0))
slope_ntk = loglog_slope(params["widths"], changes_ntk)
slope_mup = loglog_slope(params["widths"], changes_mup)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_sweep", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
for _name in ("changes_ntk", "changes_mup"):
    assert isinstance(globals()[_name], list) and len(globals()[_name]) == len(params["widths"]), \
        f"{_name} should be a list with one relative change per width"
for _name in ("slope_ntk", "slope_mup"):
    assert isinstance(globals()[_name], numbers.Real), f"{_name} is a slope: a float"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p5-lazy-vs-feature", "check_sweep", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 3. Look at it (not graded)

# %%
import matplotlib.pyplot as plt

try:
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(params["widths"], changes_ntk, "o-", label=f"NTK parametrisation (slope {slope_ntk:.2f})")
    ax.plot(params["widths"], changes_mup, "s-", label=f"muP (slope {slope_mup:.2f})")
    ax.set(xscale="log", yscale="log", xlabel="width", ylabel="relative change of the hidden weights",
           title=f"Variant {VARIANT}: {params['task']} target, {params['steps']} steps")
    ax.legend()
    plt.show()
except NameError as exc:
    print(f"Run the sweep first ({exc}).")

# %% [markdown]
# ## 4. Read it
#
# **Two regimes from one network.** The architecture, the data, the loss and the number of steps are
# identical in the two sweeps; only the scaling of the initial weights and of the per-layer rates with
# the width differs. Under the NTK parametrisation the widest network barely moves its hidden weights,
# and yet its training loss falls about as far as the narrow one's: it fits the data through the many
# tiny moves of its many weights, along the directions of a kernel fixed at the start. Under μP each
# hidden weight matrix moves by about the same relative amount at every width, which is what it means
# for features to keep being learned in the limit. Your fitted slopes should bracket that contrast:
# clearly negative in one case, close to zero in the other, with some scatter because the narrowest
# widths are still far from any limit and the fit weights them equally.
#
# **What the measurement does not show.** A flat relative change is necessary for feature learning,
# not proof of useful features; and a clearly negative slope for the weights does not mean
# the network learns nothing at a finite width. At width 64 the NTK network moves its weights by
# several per cent, which is real feature learning; the claim is about the trend, and about what the
# infinitely wide limit would do. Also, the relative change here is of the whole matrix. The
# coordinate-wise view of the μP papers, where each entry of the features moves by a
# width-independent amount, and the spectral view of Yang, Simon and Bernstein (2023, *A Spectral
# Condition for Feature Learning*), where the update's spectral norm keeps pace with the weight's,
# are sharper statements of the same idea.
#
# **A widely repeated simplification.** It is often said that "wide networks are kernel machines".
# That is true of wide networks in the NTK parametrisation at a fixed learning rate, and it is the
# reason the NTK theory is a poor model of practice: networks trained as people train them learn
# features, and the standard parametrisation with a learning rate tuned per width sits between the
# two regimes. Which limit one gets is a choice of scaling, as the two curves above show. The same
# choice decides whether the best learning rate moves with the width (tds-t1-mup-transfer derives why
# it does under the standard parametrisation and not under μP, for Adam).
#
# **Where this meets the rest of the module.** tds-b5 defined the width multiplier that μP scales by,
# and tds-t1 derived the Adam column of the same table that this notebook uses for SGD. Grokking
# (tds-p2) has been explained as a slow change from lazy to feature-learning dynamics (Kumar et al.
# 2024), a large initialisation being one way to start lazy.

# %% [markdown]
# ## 5. Break it (not graded)
#
# - Multiply `params["lr_ntk"]` by ten (copy `params` first). Does the NTK slope change, or only the
#   level of the curve? (Counting-argument answer: only the level, as long as training stays stable.)
# - In μP, drop the `* width` on the input rate inside a copy of `train_width`, keeping everything
#   else. The features now freeze as the width grows: what slope do you get?
# - Use many more steps. The lazy picture is about training of a fixed length; at a fixed width, a
#   long enough run can leave the kernel regime, which is one reading of grokking's delay.
