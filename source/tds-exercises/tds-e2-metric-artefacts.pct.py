# %% [markdown]
# # tds-e2-metric-artefacts · A smooth model, an abrupt metric
#
# *Module TDS Training Dynamics & Scaling · mathematics · exercise 2 of 2*
#
# Schaeffer, Miranda and Koyejo (*Are Emergent Abilities of Large Language Models a Mirage?*,
# NeurIPS 2023, §2) ask what an "emergent" jump would look like if the model improved smoothly.
# Their model: the per-token cross-entropy falls as a power law in the parameter count,
#
# $$L_{CE}(N) = (N/c)^{\alpha}, \qquad \alpha < 0,$$
#
# the form Kaplan et al. (2020, eq. 1.1) fit to language models. A cross-entropy is the negative
# natural logarithm of the probability the model gives the right token; call that probability
# $p(N)$, the per-token accuracy. An answer of $L$ tokens is scored by exact match (tds-b3), and,
# as in Schaeffer et al., its tokens are right or wrong independently.
#
# Nothing in this model changes abruptly. Your job is to derive what exact match does with it:
# - Express $p(N)$ through the loss, and the expected exact match through $p(N)$ and $L$.
# - Solve for the size $N_\tau$ at which the expected exact match reaches a target $\tau$.
# - Find the per-token accuracy at $N_\tau$, and compare how sudden each curve looks.

# %% [markdown]
# ## Worked example: the smooth side (not your variant)
#
# The model's loss for one made-up task, on log-log axes: a straight line, with no size at which
# anything happens. The exercise asks what a metric built on it looks like.

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import sympy

ex = {"c": 1e9, "alpha": -0.4}
sizes = np.logspace(7, 13, 61)
fig, ax = plt.subplots(figsize=(7, 3.5))
ax.plot(sizes, (sizes / ex["c"]) ** ex["alpha"], label="per-token cross-entropy")
ax.set(xscale="log", yscale="log", xlabel="parameters N", ylabel="loss (nats)",
       title="A power-law loss: smooth in N")
ax.legend()
plt.show()

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

VARIANTS = {'A': {'c': 3000000000.0,
       'alpha': -0.5,
       'length': 5,
       'sizes': [10000000.0,
                 100000000.0,
                 1000000000.0,
                 10000000000.0,
                 100000000000.0,
                 1000000000000.0],
       'target': 0.5},
 'B': {'c': 10000000000.0,
       'alpha': -0.3,
       'length': 10,
       'sizes': [100000000.0, 1000000000.0, 10000000000.0, 100000000000.0, 1000000000000.0],
       'target': 0.5},
 'C': {'c': 500000000.0,
       'alpha': -0.4,
       'length': 3,
       'sizes': [10000000.0, 100000000.0, 1000000000.0, 10000000000.0, 100000000000.0],
       'target': 0.8},
 'D': {'c': 2000000000.0,
       'alpha': -0.6,
       'length': 12,
       'sizes': [100000000.0, 1000000000.0, 10000000000.0, 100000000000.0, 1000000000000.0],
       'target': 0.25}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-exercises:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ### Derive it
#
# With `N = sympy.symbols("N", positive=True)`, give `exact_match_expr`: the expected exact match as an
# expression in `N`, with your variant's $c$, $\alpha$ and $L$ (`length`) as numbers.

# %% nbgrader={"grade": false, "grade_id": "answer_expression", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
N = sympy.symbols("N", positive=True)
exact_match_expr = sympy.exp(-params["length"] * (N / params["c"]) ** params["alpha"])
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expression", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
assert isinstance(exact_match_expr, sympy.Basic), "exact_match_expr should be a sympy expression in N"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-e2-metric-artefacts", "check_expression", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Compute it
#
# For your variant's `sizes` (parameter counts) and `target`:
# - `token_accuracy`: $p(N)$ at each size (a list of floats);
# - `exact_match`: the expected exact match at each size (a list of floats);
# - `emergence_size`: the $N$ at which the exact match equals `target` (a float);
# - `accuracy_at_emergence`: the per-token accuracy at that size (a float).

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
c, alpha, L = params["c"], params["alpha"], params["length"]
token_accuracy = [math.exp(-(n / c) ** alpha) for n in params["sizes"]]
exact_match = [q ** L for q in token_accuracy]
emergence_size = c * (-math.log(params["target"]) / L) ** (1 / alpha)
accuracy_at_emergence = params["target"] ** (1 / L)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
for _name in ("token_accuracy", "exact_match"):
    assert isinstance(globals()[_name], list) and len(globals()[_name]) == len(params["sizes"]), \
        f"{_name} should be a list with one number per size"
for _name in ("emergence_size", "accuracy_at_emergence"):
    assert isinstance(globals()[_name], numbers.Real), f"{_name} should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-e2-metric-artefacts", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# Not graded: plot your variant's two curves on a log axis. Over how many decades of $N$ does the
# exact match go from 0.01 to 0.9, and how much does the per-token accuracy change over the same range?
