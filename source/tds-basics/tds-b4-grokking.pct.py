# %% [markdown]
# # tds-b4-grokking · Fitted at step one thousand, generalised near step a million
#
# *Module TDS Training Dynamics & Scaling · basics · term 4 of 5*
#
# **Grokking.** Power et al. (2022, *Grokking: Generalization Beyond Overfitting on Small
# Algorithmic Datasets*) trained small transformers on tables of modular arithmetic, such as
# $a \cdot b^{-1} \bmod 97$, with part of the table held out. The training accuracy reached about
# 100% within roughly $10^3$ steps; the validation accuracy stayed near chance until about $10^5$
# steps, and then climbed, reaching about 100% near $10^6$ (their Fig. 1, on a logarithmic step
# axis). *Grokking* is
# that generalisation arriving long after the training set is fitted, and the number to read off
# a run is the delay between the two moments.
#
# Because the log is written at roughly log-spaced steps, "the moment" is the first **logged**
# step at which an accuracy reaches a threshold (at least the threshold, not above it).

# %% [markdown]
# ## Worked example (not your variant)

# %%
ex_steps = [10, 100, 1000, 10000, 100000]
ex_train = [0.05, 0.6, 1.0, 1.0, 1.0]
ex_val = [0.01, 0.01, 0.02, 0.5, 1.0]
fit = next(s for s, a in zip(ex_steps, ex_train) if a >= 0.99)
gen = next(s for s, a in zip(ex_steps, ex_val) if a >= 0.99)
print(f"fitted at step {fit}, generalised at step {gen}: {gen / fit:g} times later")

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

VARIANTS = {'A': {'steps': [10, 30, 100, 300, 1000, 3000, 10000, 30000, 100000, 300000],
       'train_acc': [0.02, 0.1, 0.45, 0.93, 0.99, 1.0, 1.0, 1.0, 1.0, 1.0],
       'val_acc': [0.01, 0.01, 0.01, 0.01, 0.02, 0.02, 0.05, 0.41, 0.99, 1.0],
       'threshold': 0.99},
 'B': {'steps': [20, 50, 200, 500, 2000, 5000, 20000, 50000, 200000],
       'train_acc': [0.05, 0.3, 0.97, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
       'val_acc': [0.01, 0.01, 0.01, 0.02, 0.03, 0.2, 0.95, 0.99, 1.0],
       'threshold': 0.95},
 'C': {'steps': [100, 300, 1000, 3000, 10000, 30000, 100000, 300000, 1000000],
       'train_acc': [0.01, 0.2, 0.85, 0.9, 0.98, 1.0, 1.0, 1.0, 1.0],
       'val_acc': [0.01, 0.01, 0.01, 0.01, 0.02, 0.04, 0.3, 0.9, 0.97],
       'threshold': 0.9},
 'D': {'steps': [10, 40, 160, 640, 2560, 10240, 40960, 163840],
       'train_acc': [0.1, 0.6, 0.995, 1.0, 1.0, 1.0, 1.0, 1.0],
       'val_acc': [0.01, 0.01, 0.01, 0.01, 0.01, 0.3, 0.995, 1.0],
       'threshold': 0.995}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-basics:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# Your variant's `steps`, `train_acc`, `val_acc` and `threshold` are one run's log. Compute
# - `fit_step`: the first logged step whose training accuracy is at least the threshold (an int);
# - `generalise_step`: the same for the validation accuracy (an int);
# - `delay_factor`: how many times later generalisation came, `generalise_step / fit_step` (a float).

# %% nbgrader={"grade": false, "grade_id": "answer_grokking", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def first_step(accuracies):
    return next(s for s, a in zip(params["steps"], accuracies) if a >= params["threshold"])


fit_step = first_step(params["train_acc"])
generalise_step = first_step(params["val_acc"])
delay_factor = generalise_step / fit_step
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_grokking", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
assert isinstance(fit_step, numbers.Integral) and isinstance(generalise_step, numbers.Integral), "the two steps are ints"
assert isinstance(delay_factor, numbers.Real), "delay_factor should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-b4-grokking", "check_grokking", globals())
### END HIDDEN TESTS
