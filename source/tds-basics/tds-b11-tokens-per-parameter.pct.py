# %% [markdown]
# # tds-b11-tokens-per-parameter · How many tokens did each parameter see?
#
# *Module TDS Training Dynamics & Scaling · basics · term 11 of 11*
#
# **Tokens per parameter.** A model with $N$ parameters trained on $D$ tokens has seen $D/N$
# tokens per parameter. With the training compute, close to
#
# $$C \approx 6ND \ \text{FLOPs},$$
#
# it is the one number that places a run on the map of scaling laws: how much of the budget went
# into the model and how much into the data. A model trained on far more tokens per parameter
# than the compute-optimal ratio is called **over-trained**.

# %% [markdown]
# ## Where the six comes from
#
# Kaplan et al. (2020, *Scaling Laws for Neural Language Models*, §2.1) count the work of a
# transformer per token. Almost all of it is matrix multiplication against the weights: each
# parameter is multiplied by an activation and the product added to a sum, two floating-point
# operations per parameter per token in the forward pass. The backward pass does that twice
# over, once to pass the gradient back to the activations and once to form the gradient of each
# weight, so it costs about twice the forward pass. Together that is six operations per parameter
# per token, and $C \approx 6ND$ for a whole run. The count leaves out attention's own work on the
# sequence (small while the context is short compared with the width) and the embedding lookup;
# Kaplan et al. also count only non-embedding parameters, while most model names count them all.
# II.8's w2-compute derives the estimate in full and checks it against GPT-3's table, where
# 175B parameters on 300B tokens come to $3.14 \times 10^{23}$ FLOPs (Brown et al. 2020,
# Table D.1). A run that recomputes activations (activation checkpointing) executes more than
# this, but $6ND$ stays the measure of *useful* work.

# %% [markdown]
# ## The Chinchilla ratio
#
# Kaplan et al. concluded that a growing compute budget should go mostly into parameters, and the
# models of 2020 to 2022 followed: GPT-3 (175B parameters) and Gopher (280B) were both trained on
# about 300B tokens.
# Hoffmann et al. (2022, *Training Compute-Optimal Large Language Models*) fitted the loss over a
# wide grid of model sizes and token counts, trained to their own schedules, and found instead
# that for a fixed compute budget parameters and tokens should grow at about the same rate. To
# test it they trained Chinchilla, 70B parameters on 1.4T tokens, with about the compute of the
# 280B Gopher, and it beat Gopher on nearly every benchmark they tried. Seventy billion parameters
# and 1.4 trillion tokens is twenty tokens per parameter, and "twenty tokens per parameter" has
# since become the shorthand for compute-optimal. II.8's e09-chinchilla derives the allocation
# from their fitted law, and p7-chinchilla-table reproduces their table.
#
# The shorthand is looser than it sounds. The ratio that minimises the loss depends on the fit
# (their three approaches disagree), on the budget, and on the data; Meta's Llama 3 announcement
# put the compute-optimal budget of an 8B model at about 200B tokens, twenty-five per parameter,
# and later replications of the Chinchilla fit found somewhat different constants. Treat twenty
# as a landmark, not a target.

# %% [markdown]
# ## Over-training on purpose
#
# Compute-optimal means the lowest loss for the *training* budget. A model that will serve
# billions of requests is paid for again at every token it generates, and inference cost grows
# with $N$, not with $D$. So since LLaMA (Touvron et al. 2023) the open models have been trained
# far past the Chinchilla ratio: a smaller model, fed many more tokens, reaches a loss a
# compute-optimal model would only reach at a larger size, and is cheaper to run ever after.
# Llama 3's 8B model was trained on about 15T tokens, and Meta reported that its quality was
# still improving at the end. The loss gained per extra
# token shrinks, but it does not stop.
#
# Two slips are common when comparing models. The ratio is tokens per parameter, $D/N$, not its
# inverse, and a comparison with Chinchilla compares *ratios*: a model that saw 1.4T tokens is
# not "Chinchilla-trained" unless it also has 70B parameters. And the compute of a training run
# counts the backward pass too: $2ND$ is the cost of one forward pass over the data, roughly what
# evaluating the model on its training set would cost, not what training it cost.

# %% [markdown]
# ## Worked example (not your variant)
#
# A made-up 3B model trained on 600B tokens.

# %%
ex_n, ex_d = 3e9, 600e9
print(f"{ex_d / ex_n:.0f} tokens per parameter, C = {6 * ex_n * ex_d:.2e} FLOPs, "
      f"{ex_d / ex_n / 20:.0f} times the Chinchilla ratio")

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

VARIANTS = {'A': {'models': [{'name': 'OPT-175B', 'N': 175000000000.0, 'D': 180000000000.0},
                  {'name': 'LLaMA 13B', 'N': 13000000000.0, 'D': 1000000000000.0},
                  {'name': 'Llama 3 8B', 'N': 8000000000.0, 'D': 15000000000000.0}]},
 'B': {'models': [{'name': 'Gopher 280B', 'N': 280000000000.0, 'D': 300000000000.0},
                  {'name': 'LLaMA 65B', 'N': 65000000000.0, 'D': 1400000000000.0},
                  {'name': 'Llama 2 7B', 'N': 7000000000.0, 'D': 2000000000000.0}]},
 'C': {'models': [{'name': 'PaLM 540B', 'N': 540000000000.0, 'D': 780000000000.0},
                  {'name': 'LLaMA 7B', 'N': 7000000000.0, 'D': 1000000000000.0},
                  {'name': 'Llama 3 70B', 'N': 70000000000.0, 'D': 15000000000000.0}]},
 'D': {'models': [{'name': 'Llama 3 405B', 'N': 405000000000.0, 'D': 15600000000000.0},
                  {'name': 'TinyLlama 1.1B', 'N': 1100000000.0, 'D': 3000000000000.0},
                  {'name': 'BLOOM 176B', 'N': 176000000000.0, 'D': 366000000000.0}]}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-basics:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# Your variant lists published models, each with its parameter count `N` and training tokens `D`.
# Compute, one entry per model, in order (lists of floats):
# - `tokens_per_param`: tokens per parameter;
# - `compute`: the training compute by the $6ND$ estimate, in FLOPs;
# - `chinchilla_multiple`: how many times Chinchilla's ratio of twenty tokens per parameter each
#   model's ratio is.

# %% nbgrader={"grade": false, "grade_id": "answer_tokens", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
tokens_per_param = [m["D"] / m["N"] for m in params["models"]]
compute = [6 * m["N"] * m["D"] for m in params["models"]]
chinchilla_multiple = [r / 20 for r in tokens_per_param]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_tokens", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
for _name in ("tokens_per_param", "compute", "chinchilla_multiple"):
    assert isinstance(globals()[_name], list) and len(globals()[_name]) == len(params["models"]), \
        f"{_name} should be a list with one number per model"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-b11-tokens-per-parameter", "check_tokens", globals())
### END HIDDEN TESTS
