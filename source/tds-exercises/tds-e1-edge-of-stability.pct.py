# %% [markdown]
# # tds-e1-edge-of-stability · Past the stability threshold: which directions blow up, and how fast
#
# *Module TDS Training Dynamics & Scaling · mathematics · exercise 1 of 2*
#
# Cohen et al. (ICLR 2021) found that full-batch gradient descent on real networks drives the
# sharpness (tds-b1) up until it reaches a threshold set by the learning rate, the **stability
# threshold**, and then hovers there while the loss keeps falling, non-monotonically. To read
# their plots you need the quadratic model exactly, and this exercise has you derive it. Take
# $L(x) = \tfrac12\sum_i a_i x_i^2$ with every $a_i > 0$ (any quadratic is one, in the
# eigenvectors of its Hessian); its largest curvature is the sharpness $S$. Gradient descent at
# rate $\eta$ takes the step $x \leftarrow x - \eta \nabla L(x)$, and on this loss each
# coordinate moves on its own.
#
# Questions to settle on paper before you write any code:
# - By what factor does one step multiply the coordinate $x_i$? What does $t$ steps do?
# - When does that coordinate shrink, when does it flip sign, and when does it grow?
# - Which direction is the first to grow as $\eta$ rises, and at what rate does that happen?
# - Once a direction grows, how many steps until it has grown by a given factor?
#
# Just past the threshold the blow-up is slow, which leaves a network time to correct itself. A
# quadratic cannot (its curvature is fixed), but in a network a little growth along the top
# direction lowers the sharpness itself, through the loss's third derivative, and the run falls
# back: *self-stabilisation*, the account of Damian, Nichani and Lee (*Self-Stabilization: The
# Implicit Bias of Gradient Descent at the Edge of Stability*, ICLR 2023) of the hovering that
# Cohen et al. observed. II.8's t4-warmup-and-wsd links this to warmup.

# %% [markdown]
# ## Worked example: watch one direction (not your variant)
#
# One coordinate of curvature 10, started at 2, run for six steps at three rates. The code only
# iterates the update; it is for checking your derivation against, not a formula.

# %%
import math

import sympy

ex_a = 10.0
for ex_lr in (0.04, 0.14, 0.26):
    ex_x, ex_path = 2.0, []
    for _ in range(6):
        ex_x = ex_x - ex_lr * ex_a * ex_x      # one gradient step on a x^2 / 2
        ex_path.append(round(ex_x, 3))
    print(f"rate {ex_lr}: {ex_path}")

# %% [markdown]
# Three behaviours: at the lowest rate the coordinate shrinks steadily; at the middle one it
# flips sign every step but still shrinks; at the highest it flips and grows. Your derivation
# should say where the boundaries between these lie, for any curvature.

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

VARIANTS = {'A': {'curvatures': [250.0, 120.0, 30.0, 5.0], 'lr': 0.01, 'growth': 1000.0},
 'B': {'curvatures': [45.0, 41.0, 12.0, 0.5], 'lr': 0.05, 'growth': 100.0},
 'C': {'curvatures': [640.0, 420.0, 380.0, 90.0], 'lr': 0.005, 'growth': 1000000.0},
 'D': {'curvatures': [22.0, 15.0, 9.0, 2.0], 'lr': 0.1, 'growth': 10.0}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-exercises:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ### Derive it
#
# With `eta, S = sympy.symbols("eta S", positive=True)`, give
# - `multiplier_expr`: the factor by which gradient descent multiplies the top direction per step, in `eta` and `S`;
# - `threshold_expr`: the largest rate at which it converges, in `S`.

# %% nbgrader={"grade": false, "grade_id": "answer_expressions", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
eta, S = sympy.symbols("eta S", positive=True)
multiplier_expr = 1 - eta * S
threshold_expr = 2 / S
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expressions", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
for _name in ("multiplier_expr", "threshold_expr"):
    assert isinstance(globals()[_name], sympy.Basic), f"{_name} should be a sympy expression"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-e1-edge-of-stability", "check_expressions", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Compute it
#
# For your variant's `curvatures`, `lr` and `growth`:
# - `threshold_lr`: the largest rate at which gradient descent converges on this quadratic (a float);
# - `multipliers`: the factor one step multiplies each direction's coordinate by, in the order of `curvatures` (a list of floats);
# - `unstable`: the 0-based indices of the directions that grow (a list of ints);
# - `steps_to_grow`: the fewest steps after which the fastest-growing direction has grown by at least `growth` (an int).

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
threshold_lr = 2 / max(params["curvatures"])
multipliers = [1 - params["lr"] * a for a in params["curvatures"]]
unstable = [i for i, m in enumerate(multipliers) if abs(m) > 1]
steps_to_grow = math.ceil(math.log(params["growth"]) / math.log(max(abs(m) for m in multipliers)))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
assert isinstance(threshold_lr, numbers.Real), "threshold_lr should be a number"
assert isinstance(multipliers, list) and len(multipliers) == len(params["curvatures"]), "one multiplier per direction"
assert isinstance(unstable, list) and all(isinstance(i, numbers.Integral) for i in unstable), "unstable holds ints"
assert isinstance(steps_to_grow, numbers.Integral), "steps_to_grow is a count of steps: an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-e1-edge-of-stability", "check_numbers", globals())
### END HIDDEN TESTS
