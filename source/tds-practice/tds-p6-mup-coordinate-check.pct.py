# %% [markdown]
# # tds-p6-mup-coordinate-check · The muP coordinate check on your CPU
#
# *Module TDS Training Dynamics & Scaling · practice · build it, run it, read the papers*
#
# tds-b5 named the width multiplier and tds-t1 argued, for one hidden layer and one Adam step, why
# the best learning rate of the standard parametrisation (SP) drifts as a network widens and why
# muP does not. This notebook runs the test that the muP authors give anyone who implements it,
# the **coordinate check**, and then the experiment that the whole idea is for: a learning-rate
# sweep at a narrow and a wide width, once under each parametrisation.
#
# A *coordinate* is one entry of an activation vector, and its *size* is how big a typical entry
# is. Initialisation is designed so that coordinates are of order one at every width: that is what
# the familiar $1/\sqrt{\text{fan-in}}$ scale of the initial weights buys, through the central limit
# theorem, because at initialisation the weights and the inputs they meet are independent.
# Training breaks that independence. A gradient step builds the change of a weight matrix out of
# the very inputs the matrix then multiplies, so the change of each output coordinate is a sum of
# many terms of the *same* sign, and it grows in proportion to the width rather than to its square
# root. Under SP nothing compensates, and a network that is well scaled at step zero has hidden
# and output coordinates that blow up with width after a handful of updates. muP is the choice of
# per-layer learning rates and multipliers under which every layer's coordinates change by an
# amount that does not depend on the width: the largest change that stays bounded, hence the name,
# the *maximal update* parametrisation.
#
# Yang et al. (2022, *Tensor Programs V*, arXiv 2203.03466) make this precise; the `mup` package
# that accompanies the paper ships the coordinate check as a debugging tool (`mup/coord_check.py`):
# train the model at several widths for a few steps on one fixed batch and plot, for every layer,
# the mean absolute value of its output against width. Flat lines mean the parametrisation is
# right; a line that climbs with width points at the layer whose scaling is wrong. It costs a few
# seconds, and it catches mistakes that a single training run at one width never shows.
#
# ## 1. The rules, and where they come from
#
# The paper gives muP in two equivalent tables. Table 3 writes it through initialisation
# variances and learning rates as functions of each weight's fan-in; Table 8 moves part of that
# into constant multipliers, which is easier to implement and is what the package's `MuAdam` and
# `MuReadout` do. In the Table 8 form, for Adam, the parameters fall into three kinds:
#
# - **input weights and all biases** (a fan-in that does not grow with width, or none): their Adam
#   rate does not change with width;
# - **hidden weights** (width by width): their Adam rate scales inversely with the fan-in;
# - **output weights** (the readout, from the width down to a fixed number of logits): their Adam
#   rate does not change, but the logits are multiplied by a constant that scales inversely with
#   the fan-in.
#
# A practitioner does not use absolute fan-ins. She tunes a narrow *base* model of width $n_0$ and
# writes every rule relative to it through the width multiplier $m = n/n_0$ (tds-b5), so that at
# $n = n_0$ muP and SP are the same network with the same rates. Turning the three bullets into
# settings relative to the base model is the first thing you will write. Why these three? An
# input layer's fan-in is fixed, so Adam's entrywise step (of size about $\eta$, whatever the
# gradient) changes each of its outputs by an amount fixed by that fan-in. A hidden layer sums
# $n$ correlated changes (tds-t1), so its rate must shrink with $n$ to keep the sum fixed. The
# readout also sums $n$ correlated terms; muP tames it with the multiplier rather than the rate,
# which in addition scales down the gradient it sends back into the body of the network.
#
# One detail of this notebook's harness: the readout starts at zero in both parametrisations, an
# option the package offers (`readout_zero_init`) and that the authors recommend. Then the logits
# after a few steps are the training updates alone, and the check sees only what it is meant to
# see: how the updates scale with width. Without it, SP's initial logits would be of order one and
# muP's would shrink with the multiplier at step zero, which hides the comparison for small rates.

# %% [markdown]
# ## 2. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id (on your own
# machine start Jupyter with `JUPYTERHUB_USER=<your course id> jupyter lab`), and defines the
# harness: `make_batch`, `make_mlp` and `train_mlp`. Editing this cell does not change what you are
# graded on.
#
# `train_mlp(params, width, settings, steps, measure)` trains a fresh MLP of the given hidden width
# for `steps` full-batch Adam updates on the fixed batch (cross-entropy, float32, one thread), with
# `settings = [input-and-bias lr, hidden lr, output lr, output multiplier]`. It returns
# `(coords, final_loss)`: `coords[t]` holds `measure` of the three layers' outputs (first layer,
# hidden layer, logits) after update `t + 1`, and `final_loss` is the loss after the last update.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import math
import os

import torch
from torch import nn

torch.set_num_threads(1)   # tiny tensors: one thread is the fastest, and the numbers never depend on it

VARIANTS = {'A': {'seed': 1,
       'batch': 64,
       'd_in': 16,
       'd_out': 10,
       'base_width': 32,
       'coord_widths': [32, 64, 128, 256, 512, 1024],
       'coord_lr': 0.0009765625,
       'coord_steps': 4,
       'sweep_widths': [32, 256],
       'lr_grid': [0.001953125, 0.00390625, 0.0078125, 0.015625, 0.03125, 0.0625, 0.125, 0.25],
       'sweep_steps': 10},
 'B': {'seed': 2,
       'batch': 64,
       'd_in': 12,
       'd_out': 8,
       'base_width': 64,
       'coord_widths': [64, 128, 256, 512, 1024],
       'coord_lr': 0.00048828125,
       'coord_steps': 5,
       'sweep_widths': [64, 512],
       'lr_grid': [0.001953125, 0.00390625, 0.0078125, 0.015625, 0.03125, 0.0625, 0.125, 0.25],
       'sweep_steps': 10},
 'C': {'seed': 3,
       'batch': 48,
       'd_in': 20,
       'd_out': 10,
       'base_width': 32,
       'coord_widths': [32, 64, 128, 256, 512],
       'coord_lr': 0.001953125,
       'coord_steps': 3,
       'sweep_widths': [32, 256],
       'lr_grid': [0.001953125, 0.00390625, 0.0078125, 0.015625, 0.03125, 0.0625, 0.125, 0.25],
       'sweep_steps': 12},
 'D': {'seed': 4,
       'batch': 64,
       'd_in': 16,
       'd_out': 6,
       'base_width': 16,
       'coord_widths': [16, 64, 256, 1024],
       'coord_lr': 0.0009765625,
       'coord_steps': 4,
       'sweep_widths': [16, 128],
       'lr_grid': [0.001953125, 0.00390625, 0.0078125, 0.015625, 0.03125, 0.0625, 0.125, 0.25],
       'sweep_steps': 10}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-practice:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]


# chapter: include graders.problems.tds_practice.tds_p6_mup_coordinate_check.make_batch


# chapter: include graders.problems.tds_practice.tds_p6_mup_coordinate_check.make_mlp


# chapter: include graders.problems.tds_practice.tds_p6_mup_coordinate_check.train_mlp


print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ## 3. Build it: the muP settings
#
# Write `mup_settings(width, base_width, base_lr)`: the list
# `[input-and-bias lr, hidden lr, output lr, output multiplier]` that the rules of section 1 give a
# model of hidden width `width`, relative to a base model of width `base_width` tuned at rate
# `base_lr`, as four floats. At `width == base_width` it must give SP's settings,
# `[base_lr, base_lr, base_lr, 1.0]`. The hidden tests call it at widths narrower and wider than
# the base, and at widths that are not powers of two.

# %% nbgrader={"grade": false, "grade_id": "answer_settings", "locked": false, "schema_version": 3, "solution": true, "task": false}
def mup_settings(width, base_width, base_lr):
    """[input-and-bias lr, hidden lr, output lr, output multiplier] under muP, relative to the base model."""
    ### BEGIN SOLUTION
    m = float(width) / float(base_width)
    return [float(base_lr), float(base_lr) / m, float(base_lr), 1.0 / m]
    ### END SOLUTION


def sp_settings(base_lr):
    """The standard parametrisation: one rate for everything, no multiplier."""
    return [float(base_lr)] * 3 + [1.0]


# %% nbgrader={"grade": true, "grade_id": "check_settings", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
_s = mup_settings(128, 32, 1e-3)
assert isinstance(_s, list) and len(_s) == 4, "mup_settings returns four numbers, as a list"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p6-mup-coordinate-check", "check_settings", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 4. Build it: the coordinate size
#
# Write `coordinate_size(values)`: the size of a typical coordinate of an activation, as the `mup`
# package's coordinate check defines it by default (its `l1` statistic): the mean, over every entry
# of the array (all examples of the batch and all units), of the entry's absolute value, as a
# float. The harness calls it on torch tensors; the hidden tests call it on nested lists.

# %% nbgrader={"grade": false, "grade_id": "answer_measure", "locked": false, "schema_version": 3, "solution": true, "task": false}
def coordinate_size(values):
    """Mean absolute value of every entry of `values` (a tensor or a nested list)."""
    ### BEGIN SOLUTION
    return float(torch.as_tensor(values, dtype=torch.float64).abs().mean())
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_measure", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
assert isinstance(coordinate_size([[1.0, -1.0]]), float), "coordinate_size returns a float"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p6-mup-coordinate-check", "check_measure", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 5. Run the coordinate check
#
# For each width in `params["coord_widths"]`, in order, train with `train_mlp` for
# `params["coord_steps"]` updates at the rate `params["coord_lr"]`, measuring with your
# `coordinate_size`: once with `sp_settings(params["coord_lr"])` and once with
# `mup_settings(width, params["base_width"], params["coord_lr"])`. From the coordinates after the
# **last** update, record four lists with one float per width:
#
# - `hidden_coords_sp`, `hidden_coords_mup`: the size of the hidden layer's output (the second entry);
# - `output_coords_sp`, `output_coords_mup`: the size of the logits (the third entry).

# %% nbgrader={"grade": false, "grade_id": "answer_coords", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
hidden_coords_sp, output_coords_sp, hidden_coords_mup, output_coords_mup = [], [], [], []
for _w in params["coord_widths"]:
    _c, _ = train_mlp(params, _w, sp_settings(params["coord_lr"]), params["coord_steps"], coordinate_size)
    hidden_coords_sp.append(_c[-1][1])
    output_coords_sp.append(_c[-1][2])
    _c, _ = train_mlp(params, _w, mup_settings(_w, params["base_width"], params["coord_lr"]),
                      params["coord_steps"], coordinate_size)
    hidden_coords_mup.append(_c[-1][1])
    output_coords_mup.append(_c[-1][2])
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_coords", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
for _name in ("hidden_coords_sp", "output_coords_sp", "hidden_coords_mup", "output_coords_mup"):
    assert isinstance(globals()[_name], list) and len(globals()[_name]) == len(params["coord_widths"]), \
        f"{_name} should be a list with one coordinate size per width"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p6-mup-coordinate-check", "check_coords", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 6. The sweep: where is the best rate?
#
# For each width in `params["sweep_widths"]` and each base rate in `params["lr_grid"]`, train for
# `params["sweep_steps"]` updates (the `measure` does not matter here: pass `lambda a: 0.0`) and keep
# the final loss; a loss that is not finite counts as the worst. Record
#
# - `best_lrs_sp`: for each sweep width, the grid rate with the lowest final loss under SP;
# - `best_lrs_mup`: the same under muP, with `mup_settings(width, params["base_width"], rate)`.

# %% nbgrader={"grade": false, "grade_id": "answer_sweep", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def _best_rate(width, settings_of):
    losses = []
    for _lr in params["lr_grid"]:
        _, _final = train_mlp(params, width, settings_of(_lr), params["sweep_steps"], lambda a: 0.0)
        losses.append(_final if math.isfinite(_final) else math.inf)
    return params["lr_grid"][losses.index(min(losses))]


best_lrs_sp = [_best_rate(_w, sp_settings) for _w in params["sweep_widths"]]
best_lrs_mup = [_best_rate(_w, lambda lr, _w=_w: mup_settings(_w, params["base_width"], lr))
                for _w in params["sweep_widths"]]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_sweep", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
for _name in ("best_lrs_sp", "best_lrs_mup"):
    assert isinstance(globals()[_name], list) and len(globals()[_name]) == len(params["sweep_widths"]), \
        f"{_name} should be a list with one rate per sweep width"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p6-mup-coordinate-check", "check_sweep", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 7. Look at it (not graded)

# %%
import matplotlib.pyplot as plt

try:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, name, hidden, output in ((axes[0], "SP", hidden_coords_sp, output_coords_sp),
                                     (axes[1], "muP", hidden_coords_mup, output_coords_mup)):
        ax.plot(params["coord_widths"], hidden, "o-", label="hidden layer")
        ax.plot(params["coord_widths"], output, "s-", label="logits")
        ax.set(xscale="log", yscale="log", xlabel="width", title=f"Variant {VARIANT}: {name}")
    axes[0].set_ylabel("mean |coordinate| after the last update")
    axes[0].legend()
    plt.show()
    print("best base rate per sweep width, SP: ", best_lrs_sp)
    print("best base rate per sweep width, muP:", best_lrs_mup)
except NameError as exc:
    print(f"Run the check and the sweep first ({exc}).")

# %% [markdown]
# ## 8. Read it
#
# **The check.** On a log-log plot the SP logits climb with width, roughly in proportion to it
# once the width is well past the base, and the hidden layer's coordinates follow; under muP both
# lines are flat, up to the noise of one random initialisation per width. The first layer's
# coordinates (not recorded above, but in `coords`) are flat under both: its fan-in is the input
# dimension, which never changes. That is the signature the package's documentation teaches
# users to look for, and the check is worth running on any new architecture before trusting a
# transfer: a forgotten multiplier on one readout, an attention scale left at the SP value, or a
# layer put into the wrong group of the optimiser shows up as one climbing line.
#
# **The sweep.** Under SP the best rate of the wide model sits several grid points below the
# narrow model's; under muP the two widths agree. This is the empirical content of muTransfer:
# tune the base rate on the proxy, then use it at the target width. Yang et al. report it for MLPs
# and transformers (their Figure 1 and section 5); tds-t1 gives the one-step argument.
#
# **What this does not show.** The rates transfer across *width* only. Depth, batch size, training
# length and the data are outside the argument (the paper lists which hyperparameters transfer in
# its Table 1, and some, like regularisation strength, do not). A flat check says the scalings are
# right at the start of training; it cannot say that the proxy is big enough for its optimum to
# have settled, and in practice the proxy must not be too narrow. Widely repeated summaries say
# that muP "makes the best learning rate independent of model size": the paper claims it for width
# and, with care, for a few other dimensions, not for every way a model grows.
#
# ## 9. Break it (not graded)
#
# Put the readout's learning rate, rather than its logits, on the width multiplier and keep the
# multiplier at one, then rerun the check. Which line climbs? Then replace your `coordinate_size`
# by the root mean square: the check's verdict does not change, but the numbers do, which is why a
# protocol has to name its statistic.
