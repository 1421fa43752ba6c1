# %% [markdown]
# # tds-b3-exact-match · All the tokens right, or nothing
#
# *Module TDS Training Dynamics & Scaling · basics · term 3 of 5*
#
# **Exact match.** An exact-match score counts an answer of $L$ tokens as right only when every
# one of its tokens is right. If a model gets each token right with probability $p$,
# independently, the expected score is
#
# $$\text{exact match} = p^{L}.$$
#
# A metric with partial credit behaves differently: the expected number of wrong tokens (the
# token edit distance against the target, for substitutions) is $L(1 - p)$, linear in the
# per-token error. Schaeffer, Miranda and Koyejo (NeurIPS 2023, §2) use exactly this contrast to
# argue that many "emergent abilities" are a property of the metric: as $p$ creeps up smoothly
# with scale, $p^L$ stays near zero for a long time and then shoots up. tds-e2 makes that
# argument quantitative.

# %% [markdown]
# ## Worked example (not your variant)

# %%
L = 6
for p in (0.5, 0.7, 0.9, 0.97):
    print(f"p = {p:.2f}: exact match {p ** L:.3f}, expected wrong tokens {L * (1 - p):.2f}")
print("per-token accuracy needed for exact match 0.8:", 0.8 ** (1 / L))

# %% [markdown]
# From $p = 0.5$ to $0.7$ the expected number of wrong tokens falls by 40%, while exact match moves from 0.016 to 0.118: both far from 'able'.

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

VARIANTS = {'A': {'per_token': [0.5, 0.8, 0.9, 0.99], 'length': 5, 'target': 0.5},
 'B': {'per_token': [0.6, 0.85, 0.95, 0.999], 'length': 10, 'target': 0.9},
 'C': {'per_token': [0.7, 0.9, 0.97, 0.995], 'length': 4, 'target': 0.75},
 'D': {'per_token': [0.4, 0.75, 0.92, 0.98], 'length': 8, 'target': 0.6}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-basics:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# For your variant's `per_token` accuracies, answer `length` $L$ and `target`, compute
# - `exact_match`: the expected exact-match score at each per-token accuracy (a list of floats);
# - `expected_token_errors`: the expected number of wrong tokens at each (a list of floats);
# - `per_token_needed`: the per-token accuracy at which the expected exact match equals `target` (a float).

# %% nbgrader={"grade": false, "grade_id": "answer_exact_match", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
L = params["length"]
exact_match = [p ** L for p in params["per_token"]]
expected_token_errors = [L * (1 - p) for p in params["per_token"]]
per_token_needed = params["target"] ** (1 / L)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_exact_match", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
for _name in ("exact_match", "expected_token_errors"):
    assert isinstance(globals()[_name], list) and len(globals()[_name]) == len(params["per_token"]), \
        f"{_name} should be a list with one number per accuracy"
assert isinstance(per_token_needed, numbers.Real), "per_token_needed should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-b3-exact-match", "check_exact_match", globals())
### END HIDDEN TESTS
