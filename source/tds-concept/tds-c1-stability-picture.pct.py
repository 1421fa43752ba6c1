# %% [markdown]
# # tds-c1-stability-picture · One quadratic, four learning rates
#
# *Module TDS Training Dynamics & Scaling · concept · what to picture*
#
# Everything about stability on a quadratic fits in one picture. On $L(x) = \tfrac12 a x^2$ a step
# of gradient descent is $x \leftarrow (1 - \eta a)x$, so $x_t = (1 - \eta a)^t x_0$, and the number
# $\eta a$ alone decides what the run looks like:
#
# | $\eta a$ | multiplier $1 - \eta a$ | what you see |
# |---|---|---|
# | between 0 and 1 | between 0 and 1 | a smooth slide to the minimum |
# | between 1 and 2 | between −1 and 0 | a zig-zag across the valley that still closes in |
# | above 2 | below −1 | a zig-zag that widens at every step: divergence |
#
# In a network, $a$ is the sharpness (tds-b1). Cohen et al. (ICLR 2021) saw full-batch training
# push the sharpness up until $\eta a$ reached 2, the border between the second and third rows,
# and stay there: the *edge of stability*. This notebook draws the three rows from numbers you compute.

# %% [markdown]
# ## An example (not your variant)

# %%
import matplotlib.pyplot as plt


def trajectory(lr, a, x0, steps):
    return [x0 * (1 - lr * a) ** t for t in range(steps + 1)]


def draw(a, lrs, paths, title):
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    for lr, path in zip(lrs, paths):
        left.plot(path, marker="o", ms=3, label=f"η a = {lr * a:.2f}")
        right.plot([abs(x) for x in path], marker="o", ms=3)
    left.axhline(0, color="grey", lw=0.8)
    left.set(xlabel="step t", ylabel="x_t", title=title)
    right.set(xlabel="step t", ylabel="|x_t|", yscale="log", title="distance to the minimum")
    left.legend(fontsize=8)
    plt.tight_layout()
    plt.show()


ex_a, ex_lrs = 10.0, [0.05, 0.15, 0.19, 0.21]
draw(ex_a, ex_lrs, [trajectory(lr, ex_a, 1.0, 12) for lr in ex_lrs], "Example: a = 10")

# %% [markdown]
# Read the right panel: the two lower lines fall at constant slopes $\log|1 - \eta a|$, the third
# ($\eta a = 1.9$) falls barely at all, and the fourth ($\eta a = 2.1$) rises. Near the edge, a small
# change of rate or curvature decides between "slowly converging" and "slowly diverging".

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

VARIANTS = {'A': {'curvature': 100.0, 'lrs': [0.005, 0.015, 0.019, 0.021], 'x0': 1.0, 'steps': 12},
 'B': {'curvature': 20.0, 'lrs': [0.02, 0.07, 0.098, 0.11], 'x0': 0.5, 'steps': 15},
 'C': {'curvature': 4.0, 'lrs': [0.1, 0.4, 0.55, 0.45], 'x0': 2.0, 'steps': 10},
 'D': {'curvature': 250.0, 'lrs': [0.0016, 0.006, 0.0079, 0.0082], 'x0': 1.0, 'steps': 14}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-concept:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ### Trajectories
#
# For your variant's `curvature` ($a$), `lrs`, `x0` and `steps` ($T$), compute `trajectories`: for
# each rate, in order, the list $x_0, x_1, \dots, x_T$ of gradient descent's iterates ($T + 1$ floats).

# %% nbgrader={"grade": false, "grade_id": "answer_trajectories", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
trajectories = [[params["x0"] * (1 - lr * params["curvature"]) ** t for t in range(params["steps"] + 1)]
                for lr in params["lrs"]]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_trajectories", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
assert isinstance(trajectories, list) and len(trajectories) == len(params["lrs"]), "one trajectory per rate"
assert all(isinstance(path, list) for path in trajectories), "each trajectory is a list of floats"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-c1-stability-picture", "check_trajectories", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Regimes
#
# - `regimes`: for each rate, 0 if the run slides monotonically to the minimum, 1 if it oscillates and
#   still converges, 2 if it diverges (a list of ints);
# - `final_distances`: for each rate, $|x_T|$ (a list of floats).

# %% nbgrader={"grade": false, "grade_id": "answer_regimes", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
h = [lr * params["curvature"] for lr in params["lrs"]]
regimes = [0 if x < 1 else 1 if x < 2 else 2 for x in h]
final_distances = [abs(path[-1]) for path in trajectories]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_regimes", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
assert isinstance(regimes, list) and all(isinstance(r, numbers.Integral) for r in regimes), "regimes holds ints"
assert isinstance(final_distances, list) and len(final_distances) == len(params["lrs"]), "one distance per rate"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-c1-stability-picture", "check_regimes", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Your picture (not graded), drawn from your answers

# %%
try:
    draw(params["curvature"], params["lrs"], trajectories, f"Variant {VARIANT}")
except (NameError, TypeError, ValueError) as exc:
    print(f"Answer the trajectories first ({type(exc).__name__}: {exc}).")
