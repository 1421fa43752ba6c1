# %% [markdown]
# # b02-batch · One batch, four ways to count it
#
# *Chapter II.8 Training at Scale · basics · term 2 of 11*
#
# **Batch.** The batch is the set of $B$ sequences whose gradients are averaged into *one*
# optimiser step. Papers usually quote it in tokens, $BT$; code configures it in sequences.
# On a cluster it is split twice:
#
# - **over replicas.** The GPUs are grouped into model-parallel groups: tensor parallel
#   (TP) splits each layer, pipeline parallel (PP) splits the stack of layers. One group of
#   TP·PP GPUs holds *one* copy of the model, so the number of copies, the data-parallel
#   degree, is $P = \text{gpus}/(\text{TP}\cdot\text{PP})$. Each replica gets $B/P$ sequences.
# - **over time.** A replica pushes its $B/P$ sequences through in **micro-batches** of $b$
#   sequences, adding up gradients: $B/(bP)$ micro-batches per step (gradient accumulation,
#   or the micro-batches that fill a pipeline).
#
# None of this changes the step's mathematics: the update is the average over all $B$
# sequences, however they were scheduled.

# %% [markdown]
# ## Worked example: Pythia-12B
#
# The Pythia-12B config (EleutherAI/pythia, `models/12B/pythia-12b.yml`) runs 256 GPUs with
# a model-parallel size of 4 and no pipeline, micro-batches of 8 sequences of 2048 tokens,
# and a batch of 1024 sequences.

# %%
ex_B, ex_T, ex_b, ex_gpus, ex_tp, ex_pp = 1024, 2048, 8, 256, 4, 1
ex_P = ex_gpus // (ex_tp * ex_pp)
print(f"tokens per batch  B*T       = {ex_B * ex_T:,}")
print(f"data-parallel     P         = {ex_gpus} / ({ex_tp}*{ex_pp}) = {ex_P}")
print(f"per replica       B/P       = {ex_B // ex_P} sequences")
print(f"micro-batches     B/(b*P)   = {ex_B // (ex_b * ex_P)}")

# %% [markdown]
# **What the sources print.** Papers round the batch in tokens: BLOOM's launch script
# comments its 2048 × 2048 batch as "4.2M tokens", and Llama 3's Table 4 prints "16M" for a
# batch that variant B counts exactly. GPT-NeoX-20B's paper (Black et al. 2022) says
# "1538 contexts of 2048 tokens", but its published config gives 1536 (variant C works it
# out), and 1538 does not even divide evenly among its data-parallel replicas.
# Recompute a batch from the config before you divide by it.
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
    "A": {"B": 2048, "T": 2048, "micro_batch": 2, "gpus": 384, "tensor_parallel": 4,
          "pipeline_parallel": 12},
    "B": {"B": 2048, "T": 8192, "micro_batch": 1, "gpus": 8192, "tensor_parallel": 8,
          "pipeline_parallel": 16},
    "C": {"B": 1536, "T": 2048, "micro_batch": 4, "gpus": 96, "tensor_parallel": 2,
          "pipeline_parallel": 4},
    "D": {"B": 512, "T": 1024, "micro_batch": 64, "gpus": 8, "tensor_parallel": 1,
          "pipeline_parallel": 1},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"basics:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# The variants: **A** BLOOM-176B (BigScience's `tr11-176B-ml.slurm`); **B** Llama 3 405B
# in its first stage (Table 4; a micro-batch of one sequence is our assumption); **C**
# GPT-NeoX-20B (`configs/20B.yml`); **D** GPT-2 124M in Karpathy's build-nanogpt on one
# 8-GPU node.
#
# For your variant compute four ints:
# - `tokens_per_batch`: tokens consumed by one optimiser step;
# - `data_parallel`: the number of model replicas, $P$;
# - `sequences_per_replica`: sequences each replica processes per step;
# - `accumulation_steps`: micro-batches each replica runs per step.

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
tokens_per_batch = params["B"] * params["T"]
data_parallel = params["gpus"] // (params["tensor_parallel"] * params["pipeline_parallel"])
sequences_per_replica = params["B"] // data_parallel
accumulation_steps = sequences_per_replica // params["micro_batch"]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the numbers are checked when your notebook is graded.
for _name in ("tokens_per_batch", "data_parallel", "sequences_per_replica", "accumulation_steps"):
    assert _name in globals(), f"assign {_name} = ... in the answer cell"
    assert isinstance(globals()[_name], numbers.Integral), f"{_name} is a count: make it an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("b02-batch", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# Your variant's replicas each hold a whole copy of the model. If the same GPUs were all
# data-parallel (no TP or PP), how many sequences would each GPU get per step, and would
# the batch still divide evenly? (Not graded.)
