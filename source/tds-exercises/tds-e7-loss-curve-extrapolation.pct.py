# %% [markdown]
# # tds-e7-loss-curve-extrapolation · Predicting the end of a run from its start
#
# *Module TDS Training Dynamics & Scaling · mathematics · exercise*
#
# A pretraining run is expensive, and the question asked of its first few percent is always the
# same: where will the loss end up? Scaling-law papers answer it across runs, fitting the final
# losses of small models and extrapolating to a large one. The same mathematics answers it within
# one run, extrapolating the early part of a learning curve to its last step. In both cases the
# curve is modelled as a **saturating power law**: a floor that no amount of training removes,
# plus an excess that decays as a power of the steps (or tokens, or compute). This exercise has
# you fit that law exactly through three points of a logged curve, in closed form, extrapolate it,
# and measure what goes wrong when the floor is left out.
#
# ## Where the form comes from
#
# Kaplan et al. (2020, *Scaling Laws for Neural Language Models*) fit the learning curves of their
# language models, in the limit of unlimited data and after an early transient, with a sum of two
# terms: a model-size term that sets the floor, and a term in the number of optimisation steps
# that decays as a power of the steps (their eq. 1.6, with the constants in their Table 3). Their step count is
# an *adjusted* one, $S_\mathrm{min}$, corrected for the batch size relative to the critical batch
# (II.8's t3-critical-batch); with a batch far above critical, steps and $S_\mathrm{min}$ nearly
# coincide. Hoffmann et al. (2022, the Chinchilla paper) fit final losses with an irreducible term
# $E$ plus power laws in parameters and in tokens (their App. D.2; II.8's e09-chinchilla uses the
# same fit for a different question). Hold the model size fixed in either, and what is left is a
# saturating power law in steps or tokens. Variants A and B read their three points off Kaplan et
# al.'s law, C and D off Hoffmann et al.'s, rounded to four decimals as a training log prints
# them.
#
# The GPT-4 technical report (OpenAI 2023) made the method famous: it predicted GPT-4's final loss
# on an internal code dataset by fitting a law of this form, in training compute, "with an
# irreducible loss term", to models trained with at most ten thousand times less compute, before
# the large run had produced any usable partial result. That is its §3.1, *Loss Prediction*; it is
# often cited as §2.1, which is the report's section on its scope and limitations. The same
# section reports predicting HumanEval pass rates from models trained with at most a thousand
# times less compute, which is where the widely quoted range of "1,000 to 10,000 times" comes from.
#
# ## The derivation's route
#
# Write the law as $L(t) = E + A\,t^{-\alpha}$, with three unknowns. Three points fix them, and if
# the points are spaced geometrically, $t_2 = r\,t_1$ and $t_3 = r\,t_2$, the solution needs no
# iteration:
# - Subtract the floor from each loss. What kind of sequence do the three excesses form when the
#   steps are geometric, and what is the common ratio in terms of $r$ and $\alpha$?
# - Such a sequence has a property that involves only its three terms: write it down with the
#   excesses, and solve it for $E$. It is a linear equation, because the squares of $E$ cancel.
#   Give $E$ as an expression in the three losses.
# - The differences between successive losses no longer involve $E$ at all. Their ratio gives
#   $\alpha$ through a logarithm, and either difference then gives $A$.
#
# The floor formula you will find is old: it is the extrapolation step of Aitken's
# $\Delta^2$ method for accelerating a geometrically converging sequence, here applied to a curve
# that converges geometrically when sampled at geometric steps.
#
# ## Why the floor matters so much
#
# A pure power law, with no floor, predicts a loss that falls towards zero forever. Fitted through
# the same early points it must bend less steeply, and it then keeps falling where the true curve
# flattens. The further the extrapolation, the larger the gap: on the log-log plot the pure power
# law is a straight line, while the saturating one curves towards a horizontal asymptote. You will
# compute the gap for your variant at its end point. It is not small; in some variants the pure
# law predicts a final loss below the floor itself.
#
# Conversely, the fitted floor is the most fragile of the three parameters. Its formula divides by
# a second difference of the three losses, which is small whenever the curve is nearly straight
# over the fitted range. A rounding in the fourth decimal then moves $E$ visibly,
# and through $E$ the prediction. This is why serious extrapolations fit many points by least
# squares, spaced over as wide a range as the budget allows, and report the spread of the
# prediction, not one number. With only three points you get the exact fit and none of that
# protection; compare your fitted exponent with the one printed in the paper your variant was
# read from to see the rounding at work.
#
# ## When extrapolation fails
#
# The law describes one regime. A change of learning-rate schedule breaks it: the cooldown of a
# warmup-stable-decay schedule (II.8's e02-schedules and p9-wsd-vs-cosine) drops the loss by an
# amount the power law of the stable phase knows nothing about, and a cosine schedule's curve
# depends on the run's planned length. Loss spikes (II.8's p5-loss-spike) and data that repeats or
# changes mid-run break it too. Kaplan et al. also exclude the early transient from their fits;
# points taken inside the warmup belong to a different curve. The safe use of the method is the
# one the GPT-4 report describes: runs trained the same way to their ends, at smaller scale, rather
# than the first steps of the run being predicted.

# %% [markdown]
# ## Worked example: a law recovered from its own points (not your variant)
#
# We generate three exact points from a law with $E = 1.5$, $A = 8$, $\alpha = 0.5$ at steps 100,
# 300 and 900, and show that their successive differences shrink by a constant factor and that
# the floor is not visible in them. Fitting the law is left to you.

# %%
import math

import sympy

ex_steps = [100, 300, 900]
ex_loss = [1.5 + 8 * s ** -0.5 for s in ex_steps]
ex_diffs = [ex_loss[0] - ex_loss[1], ex_loss[1] - ex_loss[2]]
print("losses:", [round(x, 4) for x in ex_loss])
print("successive differences:", [round(d, 4) for d in ex_diffs])
print("step ratio 3, difference ratio:", round(ex_diffs[0] / ex_diffs[1], 4), "= 3 ** 0.5:", round(3 ** 0.5, 4))

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

VARIANTS = {'A': {'t': [1000, 2000, 4000], 'loss': [4.0327, 3.3131, 2.8881], 't_end': 250000},
 'B': {'t': [2000, 8000, 32000], 'loss': [3.8015, 3.1256, 2.8899], 't_end': 250000},
 'C': {'t': [10000000000.0, 40000000000.0, 160000000000.0], 'loss': [2.4244, 2.215, 2.073], 't_end': 1400000000000.0},
 'D': {'t': [5000000000.0, 15000000000.0, 45000000000.0], 'loss': [2.5324, 2.3232, 2.1693], 't_end': 300000000000.0}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-exercises:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ### Derive it
#
# With `L_1, L_2, L_3 = sympy.symbols("L_1 L_2 L_3", positive=True)`, the losses at three
# geometrically spaced steps, give
# - `floor_expr`: the floor $E$ of the saturating power law through the three points, in `L_1`, `L_2` and `L_3`.

# %% nbgrader={"grade": false, "grade_id": "answer_expression", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
L_1, L_2, L_3 = sympy.symbols("L_1 L_2 L_3", positive=True)
floor_expr = (L_1 * L_3 - L_2**2) / (L_1 + L_3 - 2 * L_2)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expression", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the value is checked when your notebook is graded.
assert isinstance(floor_expr, sympy.Basic), "floor_expr should be a sympy expression"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-e7-loss-curve-extrapolation", "check_expression", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Compute it
#
# For your variant's three points (`t`, `loss`) and end point `t_end`:
# - `alpha`, `A`, `E`: the parameters of $L(t) = E + A\,t^{-\alpha}$ through the three points (floats);
# - `loss_end`: the law's prediction at `t_end` (a float);
# - `error_without_floor`: fit instead a pure power law $L = A_0\,t^{-\alpha_0}$ (no floor) through the *first and last* of the three points, predict at `t_end`, and give that prediction minus `loss_end` (a float, with its sign).

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
(_t1, _t2, _t3), (_l1, _l2, _l3) = params["t"], params["loss"]
alpha = math.log((_l1 - _l2) / (_l2 - _l3)) / math.log(_t2 / _t1)
A = (_l1 - _l2) / (_t1 ** -alpha - _t2 ** -alpha)
E = (_l1 * _l3 - _l2**2) / (_l1 + _l3 - 2 * _l2)
loss_end = E + A * params["t_end"] ** -alpha
_alpha0 = math.log(_l1 / _l3) / math.log(_t3 / _t1)
error_without_floor = _l1 * (params["t_end"] / _t1) ** -_alpha0 - loss_end
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
for _name in ("alpha", "A", "E", "loss_end", "error_without_floor"):
    assert isinstance(globals()[_name], numbers.Real), f"{_name} should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-e7-loss-curve-extrapolation", "check_numbers", globals())
### END HIDDEN TESTS
