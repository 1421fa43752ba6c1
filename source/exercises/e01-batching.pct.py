# %% [markdown]
# # e01-batching · From a pile of tokens to a count of optimiser steps
#
# *Chapter II.8 Training at Scale · mathematics · exercise 1 of 10*
#
# Every training log is indexed by **steps**, every data budget is quoted in **tokens**, and
# every cluster works in **micro-batches**. This exercise ties the three together. It is the
# first line of the chapter's accounting: the later ones (FLOPs, memory, checkpoints)
# multiply from these counts.
#
# Notation (the chapter's): $T$ tokens per sequence, $B$ sequences per optimiser step (the
# global batch), $P$ data-parallel devices. We add $b$, the **micro-batch**: sequences one
# device pushes through one forward and backward pass (the letter the Megatron-LM papers use).

# %% [markdown]
# ## 1. The words, as counts
#
# - **Dataset.** A stream of `dataset_tokens` tokens. Language-model pipelines *pack* it:
#   documents are concatenated (separated by an end-of-text token) and cut into sequences of
#   exactly $T$ tokens. A tail shorter than $T$ makes no sequence, so there are
#   $\lfloor \text{dataset\_tokens}/T \rfloor$ sequences.
# - **Batch and step.** One optimiser **step** consumes a batch of $B$ sequences, that is
#   $BT$ tokens, and updates the weights once.
# - **Epoch.** One pass over every sequence. With `drop_last` semantics (what
#   `torch.utils.data.DataLoader(drop_last=True)` does, and what a fixed-shape training step
#   needs), a final batch with fewer than $B$ sequences is thrown away, so an epoch has
#   $\lfloor \text{sequences}/B \rfloor$ steps, and the dropping happens again at the end of
#   *every* epoch.
# - **Micro-batch and gradient accumulation.** $B$ sequences rarely fit through one device at
#   once. Each of the $P$ data-parallel devices processes $b$ sequences per forward/backward
#   pass and **adds** the gradients into a buffer; after enough passes the buffers are
#   averaged across devices and the optimiser steps. How many passes each device makes per
#   step is the first thing you derive below (the picture after this cell shows a toy case).
#   The count must be a whole number. If the passes cannot make up exactly $B$ sequences, the
#   only honest response is an error, not a silent rounding that changes the batch size (and
#   with it the learning-rate tuning).
#
# Accumulation changes the *wall-clock* cost of a step and its memory, never the step's
# mathematics. One step with accumulation is the same update as one step on all $B$
# sequences at once (up to floating-point summation order).

# %% [markdown]
# Here is the hierarchy for a toy configuration, $P = 4$ devices, $b = 2$, $B = 24$. Count
# the rectangles of one colour, then the colours.

# %%
import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

toy_P, toy_b, toy_B = 4, 2, 24
toy_rounds = 3                     # rounds of passes drawn for this toy step
fig, ax = plt.subplots(figsize=(7, 2.6))
for device in range(toy_P):
    for r in range(toy_rounds):
        for k in range(toy_b):
            x = r * (toy_b + 0.6) + k
            ax.add_patch(Rectangle((x, device), 0.9, 0.8, color=f"C{r}", alpha=0.8))
ax.set_xlim(-0.2, toy_rounds * (toy_b + 0.6))
ax.set_ylim(-0.2, toy_P)
ax.set_yticks([d + 0.4 for d in range(toy_P)], [f"device {d}" for d in range(toy_P)])
ax.set_xticks([r * (toy_b + 0.6) + toy_b / 2 - 0.05 for r in range(toy_rounds)],
              [f"accumulation round {r + 1}" for r in range(toy_rounds)])
ax.set_title(f"one optimiser step: B = {toy_B} sequences on {toy_P} devices, b = {toy_b}",
             fontsize=10)
ax.tick_params(length=0)
for side in ("top", "right", "left", "bottom"):
    ax.spines[side].set_visible(False)
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 2. What the sources print
#
# - nanoGPT's `config/train_gpt2.py` (Karpathy) states its batch in tokens as a product of
#   the micro-batch, the block size, the accumulation steps and the GPUs, aiming at the
#   "~0.5M" tokens per step of GPT-3 Small. In nanoGPT's own code the configured
#   `gradient_accumulation_steps` is the total over devices and is divided by the world
#   size: read a config's accumulation count carefully (variant C is this run).
# - GPT-3's Table 2.1 (Brown et al. 2020) lists a batch of "3.2M" tokens for the 175B model,
#   with 2048-token contexts. The paper gives no sequence count. The configuration
#   Narayanan et al. (2021, Table 1) use for a 175B GPT is 1536 sequences (variant B); count
#   its tokens and round them to two significant figures, and you will not get 3.2M. Quoted
#   batch sizes are rounded. Recompute them from sequences × length before you divide by them.
# - The Pythia README (Biderman et al. 2023) counts the tokens seen to the last token, and
#   a checkpoint every 1,000 steps: exactly 143,000 steps of 1024 sequences of 2048 tokens
#   (variant D's batch). The "300B tokens" quoted for Pythia is that count, rounded.
#
# ## 3. Your variant
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

B, b, P = sp.symbols("B b P", positive=True)

VARIANTS = {
    "A": {"dataset_tokens": 1_003_854, "T": 256, "B": 64, "micro_batch": 64, "P": 1, "epochs": 80},
    "B": {"dataset_tokens": 300_000_000_000, "T": 2048, "B": 1536, "micro_batch": 1, "P": 12,
          "epochs": 1},
    "C": {"dataset_tokens": 9_035_582_198, "T": 1024, "B": 480, "micro_batch": 12, "P": 8,
          "epochs": 32},
    "D": {"dataset_tokens": 207_000_000_000, "T": 2048, "B": 1024, "micro_batch": 8, "P": 64,
          "epochs": 1},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"exercises:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# The variants are real runs: **A** nanoGPT's character-level Shakespeare model (its
# `train.bin` has 1,003,854 characters; 5000 iterations are about 80 epochs); **B** GPT-3
# 175B (300B tokens; 1536 GPUs in a tensor-8 × pipeline-16 layout leave 12 data-parallel
# replicas, as in Narayanan et al. 2021, Table 1; a micro-batch of one sequence is our
# assumption); **C** nanoGPT's GPT-2 124M on OpenWebText (9,035,582,198
# training tokens; its 600,000 iterations are about 32 epochs); **D** Pythia-12B on the
# deduplicated Pile (207B tokens; 256 GPUs with model-parallel size 4 leave 64 replicas).
#
# ### 3a. Derive
#
# Write `accumulation_expr`, the number of micro-batch passes each device makes per
# optimiser step, as a sympy expression in `B`, `b` and `P` (the symbols defined above).

# %% nbgrader={"grade": false, "grade_id": "answer_expr", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
accumulation_expr = B / (b * P)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expr", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the mathematics is checked when your notebook is graded.
assert isinstance(accumulation_expr, sp.Expr), "accumulation_expr should be a sympy expression"
assert {x.name for x in accumulation_expr.free_symbols} <= {x.name for x in (B, b, P)}, "use only the symbols B, b and P"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e01-batching", "check_expr", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 3b. Compute
#
# Write a function `accumulation_steps_for(B, micro_batch, P)` that returns the number of
# accumulation steps as an int, and raises `ValueError` with a message that says what is
# wrong when no whole number of passes makes up exactly `B` sequences. Then, for your variant (use the numbers
# in `params`, not the sympy symbols), compute four ints:
# - `tokens_per_step`: tokens consumed by one optimiser step;
# - `steps_per_epoch`: optimiser steps in one epoch (packed sequences, partial last batch dropped);
# - `accumulation_steps`: micro-batch passes per device per step;
# - `total_steps`: optimiser steps in `epochs` epochs.

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def accumulation_steps_for(B, micro_batch, P):
    per_round = micro_batch * P
    if B % per_round:
        raise ValueError(f"B = {B} is not divisible by micro_batch * P = {per_round}; "
                         f"choose B as a multiple of {per_round}")
    return B // per_round


sequences = params["dataset_tokens"] // params["T"]
tokens_per_step = params["B"] * params["T"]
steps_per_epoch = sequences // params["B"]
accumulation_steps = accumulation_steps_for(params["B"], params["micro_batch"], params["P"])
total_steps = params["epochs"] * steps_per_epoch
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the numbers are checked when your notebook is graded.
for name in ("tokens_per_step", "steps_per_epoch", "accumulation_steps", "total_steps"):
    assert name in globals(), f"{name} is not defined yet"
    assert isinstance(globals()[name], numbers.Integral), f"{name} is a count: make it an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e01-batching", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 3c. Look at your numbers (not graded)
#
# The cell below asks your function about a batch that does not tile, and reports how
# many tokens each epoch throws away. Is the dropped share worth worrying about for your
# variant? At what dataset size would it be?

# %%
if "accumulation_steps_for" in globals() and "steps_per_epoch" in globals():
    try:
        accumulation_steps_for(params["B"] + 1, params["micro_batch"], max(params["P"], 2))
        print("No error was raised for a batch that does not tile: check your function.")
    except ValueError as err:
        print("ValueError:", err)
    used = steps_per_epoch * params["B"] * params["T"]
    dropped = params["dataset_tokens"] - used
    print(f"tokens used per epoch: {used:,}; dropped: {dropped:,} "
          f"({dropped / params['dataset_tokens']:.3%} of the dataset)")
