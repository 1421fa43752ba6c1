# %% [markdown]
# # tds-p2-grokking · Grokking modular addition on your CPU
#
# *Module TDS Training Dynamics & Scaling · practice · build it, break it, read the papers*
#
# tds-b4 taught the word: a network that fits its training set early and generalises much later
# has *grokked*, and the number to read off a log is the delay between those two moments. Here
# you make it happen and then look for the cause. The task is the one Power et al. (2022) made
# famous: addition modulo a prime $p$. Every pair of residues $(a, b)$ is an example, the label is
# $(a + b) \bmod p$, a random fraction of the $p^2$ pairs is shown to the network and the rest are
# held out. There is nothing to learn from the held-out pairs that is not already implied by the
# training pairs, since addition is one rule, yet a network can fit the training pairs perfectly
# by memorising them, one arbitrary answer per pair, and a memorising network is at chance on the
# rest. Whether, and when, it moves from the table it memorised to the rule is the whole story.
#
# **What the papers say causes the delay.** Three results frame the experiment.
# - Power et al. (2022, arXiv 2201.02177) tried many interventions on small transformers and found
#   weight decay the one that most shortened the time to generalise (their Fig. 2); without any
#   regularisation some of their tables did not generalise within their budget at all.
# - Nanda et al. (2023, *Progress Measures for Grokking via Mechanistic Interpretability*)
#   reverse-engineered a one-layer transformer trained full-batch with AdamW on addition mod 113:
#   the generalising solution computes sines and cosines of a few frequencies and combines them
#   with trigonometric identities. They split training into memorisation, circuit formation and
#   cleanup, and watched the total sum of squared weights fall through the last two phases: weight
#   decay slowly removes the memorising weights, which cost norm, once the cheaper general circuit
#   can carry the training loss.
# - Liu, Michaud and Tegmark (2023, *Omnigrok*) give the picture this notebook reproduces most
#   directly. Among all the weight settings that fit the training set, those of large norm are
#   overwhelmingly memorising ones and the generalising ones sit at a smaller norm. Start a network
#   at a large norm and it fits the training set where it starts, by memorising; weight decay then
#   shrinks the norm, step by step, until the weights reach the region where fitting the training
#   set requires the rule, and the test accuracy jumps. The length of the delay is, roughly, the
#   time weight decay needs to shrink the norm that far.
#
# So the prediction you will test has three parts: the training accuracy saturates long before
# the test accuracy; between the two, the weight norm falls; and with the weight decay switched
# off, the norm has no reason to fall and the jump does not come within the budget.
#
# **The network.** To make a run take seconds rather than hours, this notebook uses neither a
# transformer nor $p = 97$. It uses the two-layer network Gromov (2023, *Grokking modular
# arithmetic*) showed can solve modular addition exactly: the two one-hot vectors of $a$ and $b$
# are concatenated, multiplied by an input matrix, squared entry by entry, and multiplied by an
# output matrix that gives one logit per residue. There are no biases and no embeddings; the
# square is what lets the hidden units form the products of sines and cosines the general solution
# needs. Both matrices start Gaussian, scaled up by the variant's `init_scale`, which puts the
# start at a norm well above the one where the rule lives, as in Omnigrok's large-initialisation
# runs. Training is full-batch AdamW (the decoupled weight decay of Loshchilov and Hutter) with the
# betas Power et al. and Nanda et al. used, on the cross-entropy loss.
#
# The protocol, exactly (the grader runs the same code on the same split):
# - `logs = grok_run(params, params["weight_decay"])` and `logs_no_wd = grok_run(params, 0.0)`, both
#   from the locked cell below. Each returns a dict of lists: `step`, `train_acc`, `test_acc` and
#   `weight_norm` (the square root of the sum of squares of all weights), written every
#   `params["log_every"]` steps, from step 0 to `params["steps"]`;
# - the network *fits* at the first logged step whose training accuracy is at least
#   `params["threshold"]`, and *generalises* at the first logged step whose test accuracy is;
# - a curve that never reaches the threshold within the run gets the step -1.

# %% [markdown]
# ## Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id (on your own
# machine start Jupyter with `JUPYTERHUB_USER=<your course id> jupyter lab`), and defines
# `make_split` and `grok_run`. Editing this cell does not change what you are graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import math
import os

import torch
import torch.nn.functional as F

torch.set_num_threads(1)   # tiny tensors: one thread is the fastest, and the runs repeat bit for bit

VARIANTS = {'A': {'p': 23,
       'train_fraction': 0.6,
       'seed': 0,
       'width': 128,
       'init_scale': 8.0,
       'lr': 0.01,
       'weight_decay': 0.6,
       'steps': 1200,
       'log_every': 25,
       'threshold': 0.95},
 'B': {'p': 29,
       'train_fraction': 0.5,
       'seed': 1,
       'width': 128,
       'init_scale': 8.0,
       'lr': 0.01,
       'weight_decay': 0.6,
       'steps': 1200,
       'log_every': 25,
       'threshold': 0.9},
 'C': {'p': 31,
       'train_fraction': 0.45,
       'seed': 2,
       'width': 128,
       'init_scale': 8.0,
       'lr': 0.01,
       'weight_decay': 1.0,
       'steps': 1200,
       'log_every': 25,
       'threshold': 0.95},
 'D': {'p': 27,
       'train_fraction': 0.55,
       'seed': 3,
       'width': 128,
       'init_scale': 8.0,
       'lr': 0.01,
       'weight_decay': 0.6,
       'steps': 1200,
       'log_every': 25,
       'threshold': 0.9}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-practice:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]


# chapter: include graders.problems.tds_practice.tds_p2_grokking.make_split


# chapter: include graders.problems.tds_practice.tds_p2_grokking.grok_run


print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ## 1. Build it: the first step at which a curve reaches a threshold
#
# Write `first_step(steps, values, threshold)`: given the logged steps and the values logged there
# (two lists of the same length), return the first logged **step** (an int, taken from `steps`)
# whose value is at least `threshold`, or -1 if no value reaches it. The hidden tests call it on
# logs that are not spaced by one step, on values that land exactly on the threshold, and on
# curves that never get there.

# %% nbgrader={"grade": false, "grade_id": "answer_first_step", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def first_step(steps, values, threshold):
    """The first logged step whose value is at least threshold; -1 if there is none."""
    for step, value in zip(steps, values):
        if value >= threshold:
            return int(step)
    return -1
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_first_step", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
_s = first_step([0, 10, 20], [0.1, 0.5, 0.9], 0.5)
assert isinstance(_s, int), "first_step returns a step: an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p2-grokking", "check_first_step", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 2. Run it and read off the delay
#
# Run the variant's training once with its weight decay, `logs = grok_run(params,
# params["weight_decay"])`, and record, at the variant's `params["threshold"]`:
# - `fit_step`: the step at which the training accuracy reaches the threshold;
# - `generalise_step`: the step at which the test accuracy reaches it;
# - `delay_steps`: how many steps the generalisation came after the fit.
#
# The run takes a few seconds.

# %% nbgrader={"grade": false, "grade_id": "answer_delay", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
logs = grok_run(params, params["weight_decay"])
fit_step = first_step(logs["step"], logs["train_acc"], params["threshold"])
generalise_step = first_step(logs["step"], logs["test_acc"], params["threshold"])
delay_steps = generalise_step - fit_step
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_delay", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
for _name in ("fit_step", "generalise_step", "delay_steps"):
    assert isinstance(globals()[_name], numbers.Integral), f"{_name} is a number of steps: an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p2-grokking", "check_delay", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 3. Look for the mechanism
#
# If Omnigrok's picture is right, the norm at which the network generalises is smaller than the one
# at which it memorised, and a run without weight decay keeps its large norm and never makes the
# jump. Record:
# - `norm_at_fit` and `norm_at_generalise`: the logged weight norm of the run above at `fit_step`
#   and at `generalise_step`;
# - then run the same network with no weight decay, `logs_no_wd = grok_run(params, 0.0)`, and record
#   `generalise_step_no_wd` (the step at which its test accuracy reaches the threshold, -1 if it never
#   does) and `norm_end_no_wd` (its weight norm at the last logged step).

# %% nbgrader={"grade": false, "grade_id": "answer_mechanism", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
norm_at_fit = logs["weight_norm"][logs["step"].index(fit_step)]
norm_at_generalise = logs["weight_norm"][logs["step"].index(generalise_step)]
logs_no_wd = grok_run(params, 0.0)
generalise_step_no_wd = first_step(logs_no_wd["step"], logs_no_wd["test_acc"], params["threshold"])
norm_end_no_wd = logs_no_wd["weight_norm"][-1]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_mechanism", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
for _name in ("norm_at_fit", "norm_at_generalise", "norm_end_no_wd"):
    assert isinstance(globals()[_name], numbers.Real), f"{_name} is a norm: a float"
assert isinstance(generalise_step_no_wd, numbers.Integral), "generalise_step_no_wd is a step: an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p2-grokking", "check_mechanism", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 4. Look at it (not graded)
#
# The top panel is the familiar grokking picture; the bottom one is the reason for it. Look for the
# stretch where the training accuracy is already perfect, the test accuracy is still at chance and
# the norm of the decayed run is falling, and compare it with the flat norm of the run without decay.

# %%
import matplotlib.pyplot as plt

try:
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    ax1.plot(logs["step"], logs["train_acc"], label="train, with weight decay")
    ax1.plot(logs["step"], logs["test_acc"], label="test, with weight decay")
    ax1.plot(logs_no_wd["step"], logs_no_wd["test_acc"], ":", label="test, no weight decay")
    ax1.set(ylabel="accuracy", title=f"Variant {VARIANT}: (a + b) mod {params['p']}")
    ax1.legend()
    ax2.plot(logs["step"], logs["weight_norm"], label="with weight decay")
    ax2.plot(logs_no_wd["step"], logs_no_wd["weight_norm"], ":", label="no weight decay")
    for s in (fit_step, generalise_step):
        ax2.axvline(s, color="grey", ls="--")
    ax2.set(xlabel="step", ylabel="weight norm")
    ax2.legend()
    plt.show()
except NameError as exc:
    print(f"Run the cells above first ({exc}).")

# %% [markdown]
# ## 5. Read it
#
# **The delay is a norm-shrinking time.** With AdamW the decay is decoupled from the gradient:
# every step multiplies each weight by one minus the learning rate times the weight decay, before
# the Adam update is added. On its own that shrinks the norm geometrically, with a time constant of
# one over (learning rate times weight decay) steps. So the prediction is that doubling the weight
# decay should roughly halve the wait, and removing it should make the wait unbounded; both are
# easy to try below. Your run's norm does not fall forever: it levels off near the size the general
# solution needs, and then drifts up a little, because the cross-entropy loss keeps rewarding a
# larger margin once every example is right, and the decay only balances that push.
#
# **What is and is not shown.** The experiment shows an association in one small network: the
# jump comes after the norm has fallen, and does not come when the norm cannot fall. It does not
# show that norm is the only thing that matters. Nanda et al.'s progress measures show the general
# circuit forming *gradually* during the apparent plateau, well before the test accuracy moves;
# the sudden jump is the moment the general circuit, not the memorised table, dominates the
# logits on held-out pairs. Other work (Kumar et al. 2024, *Grokking as the transition from lazy to
# rich training dynamics*; Lyu et al. 2024) explains the delay as a slow change of regime, from a
# network that behaves like a fixed-feature kernel machine to one that learns its features; the
# large initialisation here is exactly what makes the early phase lazy (tds-p5 measures laziness
# directly). These accounts agree more than they disagree: a large norm and a lazy network are two
# descriptions of the same starting point.
#
# **Widely repeated, and not quite right.** Grokking is often described as "the network suddenly
# understands after a long time of doing nothing". Nothing in the weights is idle during the
# plateau: the norm moves steadily, and Nanda et al.'s Fourier measures move steadily too; it is
# only the test *accuracy*, an all-or-nothing score per example, that waits and then jumps. The same
# artefact of a thresholded metric is the subject of tds-e2. A second common claim, that grokking
# needs tiny algorithmic datasets, is too narrow: Omnigrok produces delayed generalisation on MNIST
# images, IMDb sentiment and molecular data simply by enlarging the initialisation, although the
# jump there is much less dramatic than on modular arithmetic.
#
# Weight decay as an optimiser setting, and why AdamW decouples it from Adam's per-coordinate
# scaling, is II.8's subject (the weight-decay exercise e03 and p2-adamw-from-scratch); this item
# only uses it.

# %% [markdown]
# ## 6. Break it (not graded)
#
# - Halve `params["weight_decay"]` (copy `params` first) and rerun. Does the delay roughly double?
# - Set `init_scale` to 1. Omnigrok predicts the delay shrinks, because the network no longer
#   starts far above the norm where the rule lives. Does the training accuracy still saturate first?
# - Lower `train_fraction`. Power et al. report the time to generalise growing steeply as the
#   training fraction falls, and below some fraction no generalisation within their budget at all.
