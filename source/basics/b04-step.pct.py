# %% [markdown]
# # b04-step · Steps, micro-steps, and the tokens behind a step count
#
# *Chapter II.8 Training at Scale · basics · term 4 of 11*
#
# **Step.** A step is one update of the weights: the optimiser reads the gradient averaged
# over one batch of $B$ sequences and moves every parameter once. Everything a run is
# scheduled by (the learning rate, checkpoints, evaluations) counts steps.
#
# A **micro-step** is one forward and backward pass of a micro-batch of $b$ sequences on one
# device. With gradient accumulation, each of the $P$ data-parallel replicas works through
# its own share of the batch a micro-batch at a time, adding up gradients, and only then is
# the step taken (b02 counts the micro-batches of one step). A step consumes the whole
# batch, all $B$ sequences of $T$ tokens, however it was scheduled; a micro-step consumes
# one micro-batch on one device.
#
# Logs do not agree on the word "iteration". nanoGPT's `train.py` means a step (it prints
# "tokens per iteration" as accumulation × devices × batch × block); TinyLlama's
# `pretrain/tinyllama.py` means a micro-step (it prints `iter` and `step` side by side, and
# schedules its learning rate by iters, with `warmup_iters = warmup_steps *
# gradient_accumulation_steps`). Read which one a log counts before converting it to tokens.

# %% [markdown]
# ## Worked example: nanoGPT's GPT-2 run
#
# `config/train_gpt2.py` in nanoGPT asks for micro-batches of 12 sequences of 1024 tokens,
# `gradient_accumulation_steps = 5 * 8` on 8 GPUs, and `max_iters = 600000`, with the
# comment "this makes total number of tokens be 300B". `train.py` shares the accumulation
# steps out among the GPUs (5 each) and counts `iter_num` in steps.

# %%
ex_batch_size, ex_block_size, ex_gpus, ex_max_iters = 12, 1024, 8, 600_000
ex_accumulation = 5 * 8 // ex_gpus                     # train.py: per GPU, per step
ex_tokens_per_iter = ex_accumulation * ex_gpus * ex_batch_size * ex_block_size
print(f"micro-steps per GPU: {ex_max_iters * ex_accumulation:,}")
print(f"tokens seen:         {ex_max_iters * ex_tokens_per_iter:,}")

# %% [markdown]
# 294.9 billion tokens: the comment's "300B" is rounded by 1.7%. **What the sources print**
# elsewhere is exact: the Pythia README counts each model's tokens seen to the last token
# (variant A reproduces it), with a checkpoint every 1000 steps of $1024 \times 2048$ tokens;
# TinyLlama names its checkpoints by steps and tokens
# (`TinyLlama-1.1B-intermediate-step-480k-1T`: $480{,}000 \times 2{,}097{,}152 = 1.007$
# trillion tokens).
#
# ## Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id. On
# JupyterHub that is your hub user name; on your own machine, start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab` to see the variant the grader uses.
# Editing this cell does not change what you are graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import sympy as sp

k, B, b, P = sp.symbols("k B b P", positive=True)

VARIANTS = {
    "A": {"B": 1024, "T": 2048, "micro_batch": 8, "P": 64, "steps": 143_000},
    "B": {"B": 1024, "T": 2048, "micro_batch": 8, "P": 16, "steps": 240_000},
    "C": {"B": 1536, "T": 2048, "micro_batch": 4, "P": 12, "steps": 150_000},
    "D": {"B": 512, "T": 1024, "micro_batch": 64, "P": 8, "steps": 19_073},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"basics:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# The variants: **A** Pythia-12B at its last step (64 replicas of 4 GPUs); **B** TinyLlama
# at its `step-240k` checkpoint (16 GPUs, 64 sequences each in micro-batches of 8); **C**
# GPT-NeoX-20B at its last step (12 replicas, 32 accumulation steps); **D** GPT-2 124M in
# build-nanogpt at `max_steps` (8 GPUs, no accumulation).
#
# First write `micro_steps_expr`, the micro-steps each replica has run after $k$ steps, as
# a sympy expression in `k`, `B`, `b` and `P` (the symbols defined above; `b` is the
# micro-batch). A run's configuration makes the division exact, as in every variant, so
# write it with `/`, not with `//` or `floor`.

# %% nbgrader={"grade": false, "grade_id": "answer_expr", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
micro_steps_expr = k * B / (b * P)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expr", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the mathematics is checked when your notebook is graded.
assert isinstance(micro_steps_expr, sp.Expr), "micro_steps_expr should be a sympy expression"
assert {x.name for x in micro_steps_expr.free_symbols} <= {x.name for x in (k, B, b, P)}, "use only the symbols k, B, b and P"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("b04-step", "check_expr", globals())
### END HIDDEN TESTS

# %% [markdown]
# Then, for your variant (`params["steps"]` optimiser steps), compute two ints:
# - `micro_steps`: forward-backward passes each replica has run;
# - `tokens_seen`: tokens the model has been trained on.

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
micro_steps = params["steps"] * params["B"] // (params["micro_batch"] * params["P"])
tokens_seen = params["steps"] * params["B"] * params["T"]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the numbers are checked when your notebook is graded.
for _name in ("micro_steps", "tokens_seen"):
    assert _name in globals(), f"assign {_name} = ... in the answer cell"
    assert isinstance(globals()[_name], numbers.Integral), f"{_name} is a count: make it an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("b04-step", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# If your variant's log printed "iter" in TinyLlama's sense, what number would it show at
# your step count, and what would it show in nanoGPT's sense? (Not graded.)
