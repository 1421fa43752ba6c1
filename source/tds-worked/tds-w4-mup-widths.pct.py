# %% [markdown]
# # tds-w4-mup-widths · muP in practice: what changes, layer by layer, as the model widens
#
# *Module TDS Training Dynamics & Scaling · mathematics · worked problem*
#
# tds-t1-mup-transfer argued *why* the best Adam learning rate drifts with width under the
# standard parametrisation (SP) and stays put under muP; tds-b5-width-multiplier introduced the
# width multiplier and the two rules most implementations apply (a hidden-layer rate divided by
# it, and an output multiplier). This problem is the practitioner's version: you have tuned a
# narrow proxy, you are about to launch a wide model, and you must write down, for every kind of
# weight, the initial standard deviation and the Adam rate that the wide model gets. The catch is
# that the paper gives the rules in **three equivalent tables**, and mixing rules from two of them
# silently breaks the transfer. Apparatus: the variance of a sum of independent terms.
#
# **Source.** Yang, Hu, Babuschkin, Sidor, Liu, Farhi, Ryder, Pachocki, Chen and Gao, *Tensor
# Programs V: Tuning Large Neural Networks via Zero-Shot Hyperparameter Transfer* (2022, arXiv
# 2203.03466). Their flagship result: hyperparameters tuned on a proxy of about 40M parameters,
# transferred without further tuning to GPT-3 6.7B, beat the published 6.7B model, for about 7% of
# its pretraining compute; and a 13M-parameter proxy gave BERT-large settings that beat the
# published BERT-large.

# %% [markdown]
# ## 1. The three tables, and which one this problem uses
#
# A **parametrisation** here is a rule for how three things change when the width $d$ changes:
# each weight's initial variance, each weight's learning rate, and any constant **multiplier**
# applied to a layer's output in the forward pass. The rules only fix the *scaling* with width;
# the constants are whatever was tuned on the base model of width $d_0$. So a rule "variance
# $\propto 1/\text{fan\_in}^2$" means: at width $d$, with $m = d/d_0$, take the base model's variance
# and divide it by $m^2$.
#
# Weights come in three kinds. **Input weights** (and all biases) map a fixed-size thing, such as
# the vocabulary, into the width. **Hidden weights** map width to width: attention and MLP
# matrices. **Output weights** (the readout) map the width to a fixed-size thing, the logits.
#
# - **Table 3** (the paper's main statement, "muP for general neural networks", for SGD and Adam)
#   uses no multipliers. For Adam: input weights keep variance $1/\text{fan\_in}$ and the base rate;
#   hidden weights keep variance $1/\text{fan\_in}$ but get Adam rate $\propto 1/\text{fan\_in}$; the
#   readout gets variance $\propto 1/\text{fan\_in}^2$ and Adam rate $\propto 1/\text{fan\_in}$. SP, in the
#   same table, has variance $1/\text{fan\_in}$ everywhere and one rate for every layer.
# - **Table 8** (an equivalent form, "easier to implement") puts a multiplier $1/\text{fan\_in}$ on
#   the readout's output, and then the readout's initial variance and Adam rate stay at their base
#   values. This is the form microsoft/mup implements (`MuReadout` divides by the width multiplier,
#   `MuAdam` divides the rate of width-by-width matrices only), and the one tds-b5 uses.
# - **Table 9** writes the same thing in the style of the earlier Tensor Programs IV, with
#   multipliers on both the input and the output layers.
#
# **This problem uses Table 3, for Adam.** The tables are equivalent: each produces the same
# function and the same training trajectory, because a multiplier $c$ on a weight can be traded for
# an initial std multiplied by $c$ and, for Adam, a rate multiplied by $c$ (Adam's update does not
# depend on the gradient's scale, so the multiplier passes straight through to the update). The
# danger is mixing: Table 8's readout init *without* Table 8's multiplier is not muP at all.
#
# ## 2. Derivation: why the readout is special
#
# **Hidden weights, at initialisation.** A hidden pre-activation sums $d$ products of weights and
# activations of order one. With independent weights of variance $\sigma^2$, its variance is
# $d\,\sigma^2$ times the activations' second moment. Keeping it of order one needs
# $\sigma^2 \propto 1/d$: the usual fan-in initialisation, the same under SP and muP.
#
# **Hidden weights, in training.** One Adam step moves every entry by about the learning rate,
# and the step is *correlated* with the incoming activations (the gradient is an outer product
# with them). So the change of the pre-activation sums $d$ terms of one sign and grows like $d$,
# not like $\sqrt{d}$. That is tds-t1's argument, and the reason the hidden Adam rate must fall as
# $1/\text{fan\_in}$: the rule this problem does not grade, because tds-b5 and tds-t1 already do.
#
# **The readout.** The logits are a sum of $d$ products too. At initialisation the weights are
# independent of the features, so the sum grows like $\sqrt{d}\,\sigma_{out}$. In training, the
# readout's update is correlated with the features, so the change of the logits grows like $d$
# times the update size. muP asks the logits' *change* to stay of order one at every width (feature
# learning must not be swamped by the readout, nor the readout frozen). With Adam and no
# multiplier, that fixes the readout's rate $\propto 1/d$. Initialising the readout so that its
# weights are no larger than its updates then gives a variance $\propto 1/d^2$. The consequence: at
# initialisation, the logits of a muP model are **smaller** than the base model's: the sum brings
# a factor $\sqrt{m}$ and the readout's std a factor $1/m$, so they shrink like $1/\sqrt{m}$. The microsoft/mup
# README states it plainly: the network output can shrink to zero at initialisation at a
# $1/\sqrt{\text{width}}$ rate, which is transient; it recommends initialising the readout at zero
# if one can. This is the first thing that surprises people who check a muP model's initial loss.
#
# **Where it fails.** muP fixes scaling in width only. Depth needs its own rules (a later paper,
# Tensor Programs VI, treats it); so do the batch size, the training length and the schedule,
# which tds-t1 and II.8 t3-critical-batch discuss. The transfer is only as good as the proxy: if the
# proxy is too narrow for the optimum to have settled, or differs in depth, sequence length or data,
# the transferred rate can be wrong. Large-scale checks (for example Lingle 2024, *A Large-Scale
# Exploration of µ-Transfer*, up to 10B parameters) found the learning rate transfers in most
# settings but not in all: trainable scale parameters, such as gains in the normalisation layers,
# were among the choices that broke it.

# %% [markdown]
# ## 3. Worked example (not your variant)
#
# A proxy of width 128 was tuned to Adam rate $10^{-3}$, hidden and readout init std 0.05. We want
# widths 640 and 2816. We compute every Table 3 quantity, then check numerically that Table 3 and
# Table 8 are the same training run, and that the initial logits shrink as the derivation says.

# %%
import math

import sympy
import torch

base, lr0, s_hidden, s_out = 128, 1e-3, 0.05, 0.05
for width in (640, 2816):
    m = width / base
    print(f"width {width} (m = {m:g}):")
    print(f"  hidden:  std {s_hidden / math.sqrt(m):.5f} (SP the same)   Adam rate {lr0 / m:.2e} (SP {lr0:.0e})")
    print(f"  readout: std {s_out / m:.5f} (SP {s_out / math.sqrt(m):.5f})   Adam rate {lr0 / m:.2e} (SP {lr0:.0e})")
    print(f"  input:   Adam rate {lr0:.0e} in both; logits at init {1 / math.sqrt(m):.3f} of the base model's")

# %% [markdown]
# Now the equivalence, on a real readout layer with torch's own Adam. Table 3: weights drawn with
# std $\sigma/m$, Adam rate $\eta/m$, no multiplier. Table 8: weights with std $\sigma$, output
# multiplied by $1/m$, Adam rate $\eta$. Same random draw, same inputs, three steps:

# %%
torch.manual_seed(0)
width, m, classes = 2816, 2816 / 128, 10
features = torch.randn(64, width)
targets = torch.randint(0, classes, (64,))
draw = torch.randn(classes, width) * s_out

w3 = torch.nn.Parameter(draw / m)          # Table 3
w8 = torch.nn.Parameter(draw.clone())      # Table 8
opt3 = torch.optim.Adam([w3], lr=lr0 / m, eps=1e-12)
opt8 = torch.optim.Adam([w8], lr=lr0, eps=1e-12)
for step in range(3):
    for w, opt, mult in ((w3, opt3, 1.0), (w8, opt8, 1 / m)):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(features @ w.T * mult, targets).backward()
        opt.step()
    gap = (features @ w3.T - features @ w8.T / m).abs().max().item()
    print(f"step {step + 1}: largest difference between the two models' logits {gap:.1e}")

# %% [markdown]
# The two are the same model to rounding. The initial logits, measured rather than derived:

# %%
widths = [128, 640, 2816, 11264]
x = {w: torch.randn(2000, w) for w in widths}
scale = []
for w in widths:
    readout = torch.randn(1, w) * s_out / (w / base)      # Table 3 readout
    scale.append((x[w] @ readout.T).std().item())
print("logit std relative to the base:", [round(s / scale[0], 3) for s in scale])
print("1/sqrt(m):                      ", [round(1 / math.sqrt(w / base), 3) for w in widths])

# %% [markdown]
# And the readout's initial variance under Table 3, as an expression in the width $d$ with this
# example's base numbers:

# %%
d = sympy.Symbol("d", positive=True)
print(sympy.Rational(1, 20) ** 2 * (128 / d) ** 2)

# %% [markdown]
# ## 4. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id. On
# JupyterHub that is your hub user name; on your own machine start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab`. Editing this cell does not change what you are
# graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {
    "A": {"base_width": 256, "widths": [1024, 4096, 12288], "base_lr": 6e-4,
          "base_hidden_std": 0.02, "base_output_std": 0.02},
    "B": {"base_width": 128, "widths": [512, 768, 1024], "base_lr": 1e-4,
          "base_hidden_std": 0.02, "base_output_std": 0.02},
    "C": {"base_width": 256, "widths": [768, 2048, 5120], "base_lr": 6e-3,
          "base_hidden_std": 0.08, "base_output_std": 0.08},
    "D": {"base_width": 512, "widths": [4096, 5120, 8192], "base_lr": 3e-4,
          "base_hidden_std": 0.02, "base_output_std": 0.004},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-worked:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# Your parameters: the proxy's `base_width` $d_0$, its tuned Adam rate `base_lr`, its hidden and
# readout init stds `base_hidden_std` and `base_output_std`, and the target `widths` (real model
# widths: GPT-3's family from the paper's 40M-parameter proxy, BERT-base and BERT-large, the
# Cerebras-GPT family, Llama 2's). Every answer below is **Table 3, Adam**.
#
# ### 4a. Derive it
#
# With `d = sympy.Symbol("d", positive=True)`, give `output_init_var_expr`: the muP initial
# **variance** of the readout weights as an expression in the width `d`, with your $d_0$ and base
# readout std as numbers.

# %% nbgrader={"grade": false, "grade_id": "answer_expression", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
d = sympy.Symbol("d", positive=True)
output_init_var_expr = (sympy.nsimplify(params["base_output_std"]) ** 2
                        * (sympy.nsimplify(params["base_width"]) / d) ** 2)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expression", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the value is checked when your notebook is graded.
assert isinstance(output_init_var_expr, sympy.Basic), "output_init_var_expr should be a sympy expression in d"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-w4-mup-widths", "check_expression", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4b. Initialisation at each width
#
# For each of your `widths`, in order (lists of floats):
# - `hidden_init_stds`: the initial std of hidden weights (muP and SP agree here);
# - `output_init_stds_mup`: the readout's initial std under muP (Table 3);
# - `output_init_stds_sp`: the readout's initial std under SP (Table 3's SP column).

# %% nbgrader={"grade": false, "grade_id": "answer_inits", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
ms = [w / params["base_width"] for w in params["widths"]]
hidden_init_stds = [params["base_hidden_std"] / math.sqrt(m) for m in ms]
output_init_stds_mup = [params["base_output_std"] / m for m in ms]
output_init_stds_sp = [params["base_output_std"] / math.sqrt(m) for m in ms]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_inits", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
for _name in ("hidden_init_stds", "output_init_stds_mup", "output_init_stds_sp"):
    assert isinstance(globals()[_name], list) and len(globals()[_name]) == len(params["widths"]), \
        f"{_name}: one number per width"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-w4-mup-widths", "check_inits", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4c. The readout's rate, and the logits at initialisation
#
# For each of your `widths`, in order (lists of floats):
# - `output_adam_lrs_mup`: the readout's Adam rate under muP (Table 3);
# - `init_logit_scales_mup`: the std of the logits at initialisation under muP, as a fraction of
#   the base model's (features of order one at every width).

# %% nbgrader={"grade": false, "grade_id": "answer_rates", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
output_adam_lrs_mup = [params["base_lr"] / m for m in ms]
init_logit_scales_mup = [1 / math.sqrt(m) for m in ms]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_rates", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
for _name in ("output_adam_lrs_mup", "init_logit_scales_mup"):
    assert isinstance(globals()[_name], list) and len(globals()[_name]) == len(params["widths"]), \
        f"{_name}: one number per width"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-w4-mup-widths", "check_rates", globals())
### END HIDDEN TESTS

# %% [markdown]
# Look at your numbers (not graded). At your widest model, how much smaller is muP's readout
# init than SP's, and how small are the initial logits? If you implemented muP with microsoft/mup
# instead, which of your lists would look different (Table 8), and which would not? And if a
# colleague took Table 8's readout init but forgot `MuReadout`, which of your answers would their
# model get wrong, and in which direction would its logits drift as it widens?
