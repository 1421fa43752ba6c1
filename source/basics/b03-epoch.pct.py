# %% [markdown]
# # b03-epoch · How many steps is 4.25 epochs?
#
# *Chapter II.8 Training at Scale · basics · term 3 of 11*
#
# **Epoch.** One epoch is one pass over every sequence of the dataset. With $S$ packed
# sequences and a batch of $B$ sequences, each pass is shuffled and cut into batches; the
# last batch, with fewer than $B$ sequences, is **dropped** (a fixed-shape step needs a full
# batch), so one epoch is $\lfloor S/B \rfloor$ optimiser steps, and every pass drops its
# own remainder. A run of $e$ epochs with $e$ fractional takes the same fraction of the
# next pass's full batches, and a step is never fractional:
#
# $$\text{total steps} = \big\lfloor e \cdot \lfloor S/B \rfloor \big\rfloor,
# \qquad \text{tokens seen} = \text{total steps}\cdot B T .$$
#
# The picture below is a toy: $S = 10$ sequences, $B = 4$, $e = 2.5$. Each pass makes two
# steps and drops two sequences; half of the third pass is one step.

# %%
import math

import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

toy_S, toy_B, toy_e = 10, 4, 2.5
toy_per_epoch = toy_S // toy_B
toy_total = math.floor(toy_e * toy_per_epoch)
fig, ax = plt.subplots(figsize=(8, 1.9))
step = 0
for p in range(math.ceil(toy_e)):
    for i in range(toy_S):
        batch = i // toy_B
        used = batch < toy_per_epoch and step + batch < toy_total
        colour = f"C{(step + batch) % 10}" if used else "lightgrey"
        ax.add_patch(Rectangle((p * (toy_S + 1) + i, 0), 0.9, 0.9, color=colour))
    step += toy_per_epoch
ax.set_xlim(-0.5, math.ceil(toy_e) * (toy_S + 1))
ax.set_ylim(-0.1, 1.0)
ax.set_yticks([])
ax.set_xticks([p * (toy_S + 1) + toy_S / 2 for p in range(math.ceil(toy_e))],
              [f"pass {p + 1}" for p in range(math.ceil(toy_e))])
ax.set_title(f"S = {toy_S}, B = {toy_B}, e = {toy_e}: {toy_total} steps (one colour per step; "
             "grey = not trained on)", fontsize=9)
for side in ("top", "right", "left"):
    ax.spines[side].set_visible(False)
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Worked example: TinyLlama
#
# TinyLlama's README (jzhang38/TinyLlama) gives its combined dataset as "around 950B
# tokens" (earlier versions: "1 trillion tokens"), 2048-token sequences and 1024 sequences
# per step, and its run as "slightly more than 3 epochs". Take $e = 3$:

# %%
ex_tokens, ex_T, ex_B, ex_e = 950_000_000_000, 2048, 1024, 3
ex_S = ex_tokens // ex_T
ex_per_epoch = ex_S // ex_B
ex_total = math.floor(ex_e * ex_per_epoch)
print(f"sequences {ex_S:,}; steps per epoch {ex_per_epoch:,}; total {ex_total:,}; "
      f"tokens seen {ex_total * ex_B * ex_T:,}")

# %% [markdown]
# Its run was set to 1,430,512 steps (`max_step = 715256 * 2` in `pretrain/tinyllama.py`),
# 3.0 trillion tokens, which is 3.16 passes over 950B tokens. Several versions of the README
# print "3 epochs/143k steps", a factor of ten short of the code's 1430k.
#
# **What the sources print.** Galactica (Taylor et al. 2022, §5.1) trains "for 450 billion
# tokens, or approximately 4.25 epochs" of its 106-billion-token corpus: $450/106 = 4.245$.
# The Pythia README calls its deduplicated runs "~= 1.5 epochs" of 207B tokens; the runs
# were 143,000 steps of 2,097,152 tokens, $299.9/207 = 1.45$ epochs. Epoch counts in papers
# are rounded; steps are not.
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

VARIANTS = {
    "A": {"dataset_tokens": 106_000_000_000, "T": 2048, "B": 1024, "epochs": 4.25},
    "B": {"dataset_tokens": 207_000_000_000, "T": 2048, "B": 1024, "epochs": 1.5},
    "C": {"dataset_tokens": 1_003_854, "T": 256, "B": 64, "epochs": 81.6},
    "D": {"dataset_tokens": 106_000_000_000, "T": 2048, "B": 512, "epochs": 4.25},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"basics:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# The variants: **A** Galactica 120B (106B tokens, 2M-token batches, 4.25 epochs); **B**
# Pythia on the deduplicated Pile at the README's 1.5 epochs; **C** nanoGPT's
# character-level Shakespeare, whose 5000 iterations of 64 × 256 characters are 81.6 passes
# over its 1,003,854 training characters; **D** Galactica 1.3B (1M-token batches).
# nanoGPT draws random windows rather than passing over packed sequences; here, in every
# variant, a pass is what this notebook defines, so C's step count is not nanoGPT's 5000.
#
# For your variant compute four ints:
# - `sequences`: packed sequences of `T` tokens in the dataset;
# - `steps_per_epoch`: optimiser steps in one pass;
# - `total_steps`: optimiser steps in `epochs` passes;
# - `tokens_seen`: tokens trained on in those steps.

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
sequences = params["dataset_tokens"] // params["T"]
steps_per_epoch = sequences // params["B"]
total_steps = math.floor(params["epochs"] * steps_per_epoch)
tokens_seen = total_steps * params["B"] * params["T"]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the numbers are checked when your notebook is graded.
for _name in ("sequences", "steps_per_epoch", "total_steps", "tokens_seen"):
    assert _name in globals(), f"assign {_name} = ... in the answer cell"
    assert isinstance(globals()[_name], numbers.Integral), f"{_name} is a count: make it an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("b03-epoch", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# How many tokens does your run *not* see in each pass because of the dropped batch, and
# how does that compare with what rounding the epoch count in a paper hides? (Not graded.)
