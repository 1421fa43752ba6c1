# %% [markdown]
# # tds-b5-width-multiplier · How wide, relative to the model you tuned?
#
# *Module TDS Training Dynamics & Scaling · basics · term 5 of 5*
#
# **Width multiplier.** muP, the Maximal Update Parametrisation of Yang et al. (2022, *Tensor
# Programs V*), measures a model's width against a small *base* model whose hyperparameters were
# tuned: the width multiplier is $m = \text{width}/\text{base width}$. It then scales with $m$
# what the standard parametrisation (SP) keeps fixed. For Adam, in the form of their Table 8
# (which microsoft/mup's `MuAdam` and `MuReadout` implement; their Table 3 writes the same
# parametrisation through initialisation variances and learning rates):
# - **hidden weight matrices** (width × width) train at $\eta_{\text{base}}/m$;
# - **the output layer**'s logits are multiplied by $1/m$;
# - input weights and biases keep $\eta_{\text{base}}$.
#
# Under SP every layer keeps $\eta_{\text{base}}$ as the model widens, which is why the best SP
# learning rate has to be re-tuned at every width; tds-t1 derives why the $1/m$ is the right
# correction.

# %% [markdown]
# ## Worked example (not your variant)

# %%
base_width, base_lr = 128, 0.004
for width in (128, 256, 1024):
    m = width / base_width
    print(f"width {width}: m = {m:g}, hidden Adam lr {base_lr / m:.2e}, output multiplier {1 / m:g}")

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

VARIANTS = {'A': {'base_width': 256, 'widths': [256, 1024, 4096, 12288], 'base_lr': 0.01},
 'B': {'base_width': 128, 'widths': [64, 512, 2048, 8192], 'base_lr': 0.003},
 'C': {'base_width': 512, 'widths': [1024, 2048, 5120, 8192], 'base_lr': 0.002},
 'D': {'base_width': 64, 'widths': [32, 128, 1024, 4096], 'base_lr': 0.02}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-basics:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# For your variant's `base_width`, `widths` and `base_lr`, compute, one entry per width (lists of floats):
# - `width_multipliers`: $m$;
# - `hidden_lrs`: the Adam learning rate muP gives the hidden weight matrices;
# - `output_multipliers`: the factor muP applies to the output logits.

# %% nbgrader={"grade": false, "grade_id": "answer_multipliers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
width_multipliers = [w / params["base_width"] for w in params["widths"]]
hidden_lrs = [params["base_lr"] / m for m in width_multipliers]
output_multipliers = [1 / m for m in width_multipliers]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_multipliers", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
for _name in ("width_multipliers", "hidden_lrs", "output_multipliers"):
    assert isinstance(globals()[_name], list) and len(globals()[_name]) == len(params["widths"]), \
        f"{_name} should be a list with one number per width"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-b5-width-multiplier", "check_multipliers", globals())
### END HIDDEN TESTS
