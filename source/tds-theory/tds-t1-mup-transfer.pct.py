# %% [markdown]
# # tds-t1-mup-transfer · Why the best learning rate moves with width, and why muP stops it
#
# *Module TDS Training Dynamics & Scaling · theory*
#
# The practice of tuning a small proxy and scaling it up rests on one hope: that the proxy's best
# learning rate is still right for the big model. Under the standard parametrisation (SP, every
# layer at the same rate $\eta$ whatever its width) it is not: the best rate falls as the model
# widens. Yang et al. (2022, *Tensor Programs V*, §5 and Table 3) explain why and fix it with muP.
#
# ## 1. The argument, for one hidden layer
#
# Take a hidden layer $y = Wx$, $W$ an $n \times n$ matrix, inputs $x$ with entries of size order
# 1. Its gradient is an outer product: $\nabla_W L = g x^\top$ with $g = \partial L/\partial y$.
#
# - **Adam's step is entrywise of size about $\eta$.** On the first step $\hat m$ is the gradient
#   entry $G_{ij} = g_i x_j$ and $\sqrt{\hat v}$ is $|G_{ij}|$, and Adam adds its $\epsilon$ ($10^{-8}$ in
#   torch) to the denominator: the step is $\eta\,G_{ij}/(|G_{ij}| + \epsilon)$, which is
#   $\eta\,\mathrm{sign}(g_i x_j)$ up to $\epsilon$ wherever $|G_{ij}| \gg \epsilon$. Later steps stay of that order.
# - **The step is correlated with the input.** The change of the output is
#   $(\Delta W x)_i \approx -\eta\,\mathrm{sign}(g_i)\sum_j |x_j|$: all $n$ terms of the sum have the same sign.
#   It grows like $n$, not like $\sqrt n$ as $n$ independent changes would (the central-limit
#   intuition that gives the $1/\sqrt n$ of initialisation does **not** apply to updates).
# - **So under SP the effect of one step depends on width.** Take the rate $\eta$ tuned on a base
#   width $n_0$ and use it at width $n$. From the two points above, work out how far one step moves
#   the outputs at width $n$ compared with width $n_0$, and which SP rate at width $n$ would bring
#   the step back to the base model's size (part 4a asks for it). That rate is the one that keeps a
#   hidden layer's update at the base size. It is not the best SP rate of the whole network (which
#   also depends on its input and output layers, and on how flat the loss is around its optimum),
#   but it shows which way the best rate drifts with width, and why a rate tuned on the proxy can
#   make the big model's training unstable.
# - **muP builds the width dependence in.** It sets the hidden matrices' rate from the width
#   multiplier $m = n/n_0$ (and scales the output logits; tds-b5) so that the correlated growth is
#   cancelled inside the parametrisation. What then happens to the best *base* rate across widths
#   is what makes a sweep on the proxy transfer; part 4b asks for it.
#
# ## 2. When it does not hold
#
# - The argument is about **width**. Depth, batch size, training length and the data distribution
#   are outside it; Yang et al. list which hyperparameters transfer (their Table 1) and which do not.
# - "Best" is up to the flatness of the loss around the optimum; the drift is a trend across widths,
#   not a prediction of the exact optimum at one width.
# - In the infinite-width *kernel* (NTK) parametrisation the features do not move at all; muP is the
#   choice of scaling under which they move by a width-independent amount (maximal update).

# %% [markdown]
# ## 3. See the correlated growth (not your variant)

# %%
import math

import sympy
import torch

torch.set_num_threads(1)


# chapter: include graders.problems.tds_theory.tds_t1_mup_transfer.adam_output_change


for width in (64, 256, 1024):
    print(f"width {width:5d}: rms change of the output after one Adam step {adam_output_change(width, 1e-3):.4f}")

# %% [markdown]
# Compare the ratio of two widths with the ratio of their changes: is it the growth that $n$
# independent changes would give, or the growth of the correlated sum? Whatever it is, the SP rate
# has to absorb it.
#
# ## 4. Your variant

# %% [markdown]
# Run the next cell. It works out which variant you are graded on from your student id. On
# JupyterHub that is your hub user name; on your own machine start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab`. Editing this cell does not change what you are
# graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {'A': {'base_width': 256, 'widths': [256, 1024, 4096, 8192], 'base_lr': 0.003},
 'B': {'base_width': 128, 'widths': [128, 512, 2048], 'base_lr': 0.01},
 'C': {'base_width': 512, 'widths': [512, 1536, 6144, 12288], 'base_lr': 0.001},
 'D': {'base_width': 64, 'widths': [32, 64, 256, 1024, 4096], 'base_lr': 0.02}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-theory:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ### 4a. Derive it
#
# With `eta, d = sympy.symbols("eta d", positive=True)`, give `sp_best_lr_expr`: the SP rate at width
# `d` that gives one Adam step the same effect as the rate `eta` has at your variant's `base_width`.

# %% nbgrader={"grade": false, "grade_id": "answer_expression", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
eta, d = sympy.symbols("eta d", positive=True)
sp_best_lr_expr = eta * params["base_width"] / d
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expression", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
assert isinstance(sp_best_lr_expr, sympy.Basic), "sp_best_lr_expr should be a sympy expression in eta and d"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-t1-mup-transfer", "check_expression", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4b. Compute it
#
# For your variant's `base_width`, `widths` and `base_lr` (the best rate of the base model), one entry per width:
# - `update_growth`: how many times as far one Adam step at `base_lr` moves a hidden layer's outputs, compared with the base width, as the argument of section 3 gives it (the ratio in the limit it describes, not a measurement with `adam_output_change`, which comes close to it but not to the grader's tolerance);
# - `sp_best_lrs`: the SP rate that restores the base model's step (the key is named for the best
#   rate whose drift it tracks; it holds this rate);
# - `mup_best_base_lrs`: the best base rate under muP;
#
# and `lr_shift_decades`: $\log_{10}$ of the ratio between those SP rates at the narrowest and at the widest width.

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
update_growth = [w / params["base_width"] for w in params["widths"]]
sp_best_lrs = [params["base_lr"] / g for g in update_growth]
mup_best_base_lrs = [params["base_lr"] for _ in params["widths"]]
narrow, wide = params["widths"].index(min(params["widths"])), params["widths"].index(max(params["widths"]))
lr_shift_decades = math.log10(sp_best_lrs[narrow] / sp_best_lrs[wide])
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
for _name in ("update_growth", "sp_best_lrs", "mup_best_base_lrs"):
    assert isinstance(globals()[_name], list) and len(globals()[_name]) == len(params["widths"]), \
        f"{_name} should be a list with one number per width"
assert isinstance(lr_shift_decades, numbers.Real), "lr_shift_decades should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-t1-mup-transfer", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# Not graded: a colleague tunes $\eta$ on your narrowest model under SP and launches the widest
# one with it. By how many times is the step too large, and what does tds-c1 say happens to a run
# whose step is several times past its stable rate?
