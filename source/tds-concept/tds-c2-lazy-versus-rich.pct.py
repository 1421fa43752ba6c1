# %% [markdown]
# # tds-c2-lazy-versus-rich · How far the features move as the network widens
#
# *Module TDS Training Dynamics & Scaling · concept · what to picture*
#
# Train the same two-layer network at a narrow width and at a wide one, and after training measure
# how much each hidden unit's activation on the training inputs has changed, relative to its value at
# initialisation. Call that the **feature movement**. Whether it shrinks as the width grows depends on
# how the network is parametrised, and the two answers are two different kinds of learning:
#
# | parametrisation | output scale, learning rate | feature movement as width $n$ grows | regime |
# |---|---|---|---|
# | NTK (Jacot et al. 2018) | output divided by $\sqrt n$, the same rate at every width | falls like $1/\sqrt n$ | **lazy**: features freeze, the network trains as a fixed kernel machine |
# | muP (Yang & Hu 2021) | output divided by $n$, rate scaled up with $n$ (for one hidden layer: the mean-field scaling) | stays the same | **rich**: features are learned at every width |
#
# Hold that table in mind: on a log-log plot of movement against width, the lazy runs fall on a
# line of slope one half downward, and the rich runs lie flat.
#
# ## Why the NTK parametrisation freezes the features
#
# In the NTK parametrisation the output is a sum of $n$ hidden units, each multiplied by a weight of
# order one and the whole divided by $\sqrt n$. The gradient of the loss with respect to one unit's
# incoming weights carries that factor: it is of order $1/\sqrt n$. With a learning rate that does not
# change with width, each unit's incoming weights, and so its feature, move by an amount of order
# $1/\sqrt n$ of their initial size. The output still changes by an amount of order one, because it
# sums $n$ small changes that all push in the direction that reduces the loss. Lee et al. (2019)
# measured exactly this, plotting the relative change of the weights during training against the
# width: it falls like one over the square root of the width. In the limit nothing inside the network changes, the
# tangent kernel stays put (tds-t2), and training is a linear regression on features fixed at
# initialisation.
#
# ## Why muP keeps them moving
#
# Yang and Hu (2021, *Feature Learning in Infinite-Width Neural Networks*, the fourth Tensor Programs
# paper) asked which scalings of initialisation, output multiplier and learning rate let *every*
# layer's features move by an amount that neither vanishes nor blows up as the width grows. Their
# answer, the maximal-update parametrisation (muP), divides the output by $n$ instead of $\sqrt n$ and
# raises the hidden layers' rate to compensate. For a network with one hidden layer this is the
# mean-field scaling studied by Mei, Montanari and Nguyen and by Chizat and Bach (2018). They also
# proved that the NTK limit and the feature-learning limit are the two sides of a dichotomy: a
# stable parametrisation either learns features in the limit or converges to a kernel, not both. tds-t1
# shows the practical payoff of muP: the best learning rate found on a narrow proxy stays the best
# on the wide model.
#
# ## Why the kernel regime is strictly weaker
#
# A lazy network can only fit a function in the span of its initial tangent features, and the
# kernel's spectrum decides which targets are cheap to fit. Chizat, Oyallon and Bach (2019, *On Lazy
# Training in Differentiable Programming*) showed that laziness is caused by the scaling, not by
# width itself (any model becomes lazy if its output is multiplied by a large enough factor and the
# rate is cut to match), and that on real image tasks lazy training of convolutional networks does
# markedly worse than the same networks trained with moving features. Ghorbani, Mei, Misiakiewicz and
# Montanari (2019, 2020) made the gap precise: to learn even a simple target that depends on a few
# directions of the input, a kernel method (and so a lazy network) needs a number of samples that
# grows like a polynomial of the input dimension whose degree is the degree of the target, while a
# network that learns its features can find the relevant directions first and needs far fewer. Much of
# what deep learning does well, learning representations that transfer, is exactly what the kernel
# regime cannot do.
#
# ## How to tell which regime a run is in
#
# One run at one width does not tell you: a lazy run at a small width can move its features a lot,
# and a rich run at a large width can move them little in absolute terms. What separates the regimes
# is how the movement *scales*. Measure it at two widths $n_1 < n_2$ and fit the exponent $p$ in
# movement $\propto n^{p}$ through the two points (the slope of the line on a log-log plot). Near
# $-\tfrac12$ is lazy; near 0 is rich. At finite width a rich run's movement still drifts a little,
# up or down, so "the movement fell" is not the test; "it fell at the lazy rate" is. Here we call a
# run lazy when its exponent is nearer $-\tfrac12$ than 0.
#
# ## When the picture misleads
#
# - Real training runs for a number of steps that grows with the task, not for a fixed time; the NTK
#   statements are for a fixed training time as the width grows, and over very long training even a
#   wide NTK-parametrised network can drift.
# - "Wide networks are kernel machines" is a widely repeated misreading. Wide networks in the NTK
#   *parametrisation* are; a wide network in the standard parametrisation trained with a tuned rate,
#   or in muP, is not.
# - Depth, normalisation layers and Adam change the exponents; the clean $-\tfrac12$ is for this
#   setting (gradient descent, squared loss, the NTK scaling).

# %% [markdown]
# ## An example (not your variant)
#
# The cell below trains a two-layer ReLU network on sixteen points for forty steps of full-batch
# gradient descent, in both parametrisations, at three widths, and plots the feature movement against
# the width on log-log axes.

# %%
import math

import matplotlib.pyplot as plt


# chapter: include graders.problems.tds_concept.tds_c2_lazy_versus_rich.feature_movement


def draw(widths, movements, title):
    plt.figure(figsize=(6, 3.6))
    for label, values in movements.items():
        plt.loglog(widths, values, marker="o", label=label)
    plt.xlabel("width n")
    plt.ylabel("feature movement")
    plt.title(title)
    plt.legend()
    plt.tight_layout()
    plt.show()


example_widths = [32, 128, 512]
draw(example_widths, {p: [feature_movement(n, p, seed=9) for n in example_widths] for p in ("ntk", "mup")},
     "Example: two real parametrisations")

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

VARIANTS = {'A': {'base_width': 256, 'widths': [256, 1024, 4096, 16384], 'base_movement': 0.04,
       'target_movement': 0.005,
       'runs': [[128, 0.06133, 2048, 0.01391], [128, 0.4838, 2048, 0.4387], [64, 0.4935, 1024, 0.4987]]},
 'B': {'base_width': 128, 'widths': [64, 128, 512, 2048], 'base_movement': 0.06,
       'target_movement': 0.01,
       'runs': [[256, 0.5088, 4096, 0.5], [64, 0.08692, 1024, 0.02197], [256, 0.0437, 1024, 0.02349]]},
 'C': {'base_width': 512, 'widths': [512, 2048, 8192], 'base_movement': 0.03,
       'target_movement': 0.002,
       'runs': [[512, 0.0378, 4096, 0.01218], [64, 0.6568, 512, 0.5923], [128, 0.4496, 2048, 0.4868]]},
 'D': {'base_width': 64, 'widths': [64, 256, 1024, 4096, 65536], 'base_movement': 0.08,
       'target_movement': 0.001,
       'runs': [[64, 0.6463, 256, 0.6218], [128, 0.08109, 512, 0.03605], [256, 0.4921, 2048, 0.4767],
                [64, 0.08476, 4096, 0.01091]]}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-concept:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ### Movement across widths
#
# The two parametrisations are set to agree at your variant's `base_width` (as muP's base shapes
# are), where a run moves its features by `base_movement`. Compute, in the order of `widths`:
# - `ntk_movements`: the feature movement the picture predicts at each width under the NTK
#   parametrisation (a list of floats);
# - `mup_movements`: the same under muP (a list of floats);
# - `frozen_width`: the width at which the NTK run's movement has fallen to `target_movement` (a
#   float; it need not be a power of two).

# %% nbgrader={"grade": false, "grade_id": "answer_widths", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
ntk_movements = [params["base_movement"] * math.sqrt(params["base_width"] / n) for n in params["widths"]]
mup_movements = [params["base_movement"] for _ in params["widths"]]
frozen_width = params["base_width"] * (params["base_movement"] / params["target_movement"]) ** 2
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_widths", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
for _name in ("ntk_movements", "mup_movements"):
    assert isinstance(globals()[_name], list) and len(globals()[_name]) == len(params["widths"]), \
        f"{_name} should be a list with one number per width"
assert isinstance(frozen_width, numbers.Real), "frozen_width should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-c2-lazy-versus-rich", "check_widths", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Which regime is each run in?
#
# Each entry of your variant's `runs` is one run measured at two widths:
# `[width1, movement1, width2, movement2]`. Compute
# - `run_exponents`: for each run, the exponent of the power law through its two points (a list of
#   floats);
# - `run_regimes`: for each run, 0 if it is lazy and 1 if it is rich, by the rule above (a list of
#   ints).

# %% nbgrader={"grade": false, "grade_id": "answer_runs", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
run_exponents = [math.log(m2 / m1) / math.log(n2 / n1) for n1, m1, n2, m2 in params["runs"]]
run_regimes = [0 if p < -0.25 else 1 for p in run_exponents]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_runs", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
assert isinstance(run_exponents, list) and len(run_exponents) == len(params["runs"]), "one exponent per run"
assert isinstance(run_regimes, list) and all(isinstance(r, numbers.Integral) for r in run_regimes), \
    "run_regimes holds ints"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-c2-lazy-versus-rich", "check_runs", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Your picture (not graded), drawn from your answers

# %%
try:
    draw(params["widths"], {"NTK": ntk_movements, "muP": mup_movements}, f"Variant {VARIANT}")
except (NameError, TypeError, ValueError) as exc:
    print(f"Answer the movements first ({type(exc).__name__}: {exc}).")
