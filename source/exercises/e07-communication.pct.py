# %% [markdown]
# # e07-communication · Bytes on the wire: all-reduce, ZeRO-3, and the pipeline bubble
#
# *Chapter II.8 Training at Scale · mathematics · exercise 7 of 10*
#
# Splitting a model over many devices buys memory and FLOP/s, and pays in communication
# or in idle time. This exercise counts three such bills: the gradient all-reduce of data
# parallelism, the extra traffic of ZeRO stage 3, and the idle time ("bubble") of a
# pipeline.
#
# Sources:
# - nccl-tests, `doc/PERFORMANCE.md` (NVIDIA): what the `algbw` and `busbw` columns mean.
# - Rajbhandari et al., *ZeRO: Memory Optimizations Toward Training Trillion Parameter
#   Models* (SC 2020), §7 "Communication Analysis of ZeRO-DP".
# - Huang et al., *GPipe: Efficient Training of Giant Neural Networks using Pipeline
#   Parallelism* (NeurIPS 2019), §2.3.
# - Narayanan et al., *Efficient Large-Scale Language Model Training on GPU Clusters Using
#   Megatron-LM* (SC 2021), §2.2.1.
# - PyTorch documentation, *torch.distributed.fsdp.fully_shard* (FSDP2) and its
#   `MixedPrecisionPolicy`.
# - NVIDIA's A100 and H200 datasheets (device memory; H200 has H100's NVLink 4 and
#   NVSwitch, 900 GB/s per GPU on both datasheets, so H100's measured bus bandwidths
#   apply to it).
#
# Notation: $N$ parameters, $b_\text{grad}$ bytes per gradient value, $b_\text{weight}$ bytes per parameter as
# ZeRO-3 gathers it, $P$ data-parallel devices;
# $n_\text{stages}$ pipeline stages and $n_\text{micro}$ micro-batches (GPipe calls them K and M).

# %% [markdown]
# ## 1. Ring all-reduce: how many bytes each device sends
#
# After the backward pass each of the $P$ devices holds its own gradient, $S = N b_\text{grad}$ bytes,
# and all of them need the sum. The ring algorithm does it in two phases.
#
# 1. **Reduce-scatter.** Cut the gradient into $P$ chunks of $S/P$ bytes. In each of $P-1$
#    steps every device passes one chunk to its neighbour, which adds its own copy of that
#    chunk. Afterwards each device owns one chunk that is fully summed. Each device has sent
#    $(P-1)\,S/P$ bytes.
# 2. **All-gather.** The summed chunks go round the ring once more, $P-1$ steps of $S/P$
#    bytes, until every device has all of them: another $(P-1)\,S/P$.
#
# Each device therefore sends (and receives) $2\frac{P-1}{P}S$ bytes, which tends to $2S$
# for large $P$ and does not grow with $P$. That is why data parallelism scales. The
# nccl-tests notes show the same count is a lower bound for any all-reduce built from
# point-to-point transfers: every element needs $n-1$ additions and $n$ assignments.
#
# ## 2. From bytes to seconds: bus bandwidth
#
# nccl-tests prints two bandwidths for a collective on $S$ bytes that took $t$ seconds:
# `algbw` $= S/t$, and `busbw`, which rescales it so that it can be compared with the
# hardware's link speed whatever the number of ranks $n$:
#
# | collective | busbw / algbw |
# |---|---|
# | all-reduce | $2(n-1)/n$ |
# | reduce-scatter, all-gather | $(n-1)/n$ |
# | broadcast, reduce | 1 |
#
# So a measured all-reduce bus bandwidth turns back into time as
# $t = 2\frac{n-1}{n}\,S/\text{busbw}$: the bytes each device sends, divided by `busbw`.
# Dividing $S$ itself by `busbw` treats it as if it were `algbw`, and is too fast by the
# factor $2(n-1)/n$. Measured all-reduce bus bandwidths at large messages:
#
# | system | busbw | where it is reported |
# |---|---|---|
# | 8 × A100-SXM4, NVLink | ≈ 231 GB/s at 8 GB | Azure `AI-benchmarking-guide`, ND A100 v4 results |
# | 8 × H100, NVLink with NVLink SHARP | ≈ 480 GB/s | NCCL maintainer, nccl-tests issue #212 |
# | 8 × H100, NVLink, ring | ≈ 370 GB/s | same comment (line rate 450 GB/s, ~20% protocol overhead) |
# | NDR InfiniBand, 400 Gb/s per NIC | 46–48 GB/s per NIC | NCCL maintainer, nccl-tests issue #290 |
# | 3 nodes × 8 A100, 4 HDR NICs each | ≈ 85–96 GB/s | user measurement, nccl-tests issue #119 |
#
# With NVLink SHARP the switch does the additions: each GPU's data crosses its link about
# once each way, so neither the ring count nor `busbw` is what goes on any wire (nccl-tests issues
# #212 and #366). The variants below all reduce with a ring.
#
# ## 3. ZeRO stage 3: one more pass of the parameters
#
# ZeRO's §7 counts traffic per device in units of the model size $\Psi$ (ignoring the
# $(P-1)/P$ factors). Plain data parallelism moves $2\Psi$ per step: a reduce-scatter and
# an all-gather. Stages 1 and 2 move the same $2\Psi$: the gradients are reduce-scattered
# to their owners, and the updated parameters are all-gathered back. Stage 3 keeps only a
# slice of the parameters on each device, so it must all-gather them before the forward
# pass, and again before the backward pass, besides reduce-scattering the gradients:
# $3\Psi$, "1.5x compared to the baseline" in the paper's words.
#
# $\Psi$ counts **values**. On the wire what counts is bytes, and the collectives need not
# move values of the same width: the parameters are gathered at the width they are computed
# in, the gradients are reduced at the width chosen for the reduction. With $b_\text{weight}$ bytes per
# gathered parameter and $b_\text{grad}$ bytes per reduced gradient, each collective moving
# $\frac{P-1}{P}N$ values (the all-reduce twice that):
#
# $$\text{ZeRO-3 volume ratio} = \frac{2\cdot\frac{P-1}{P}N b_\text{weight} + \frac{P-1}{P}N b_\text{grad}}{2\cdot\frac{P-1}{P}N b_\text{grad}}
#   = \frac{2b_\text{weight} + b_\text{grad}}{2b_\text{grad}}.$$
#
# This byte ratio is the quantity asked for below. It is the paper's $3/2$ when $b_\text{weight} = b_\text{grad}$
# (both 16-bit, or both fp32); with bf16 parameters and fp32 gradients it is
# $(2+2+4)/(4+4) = 1$. At $P = 1$ nothing moves at all and the ratio is $0/0$: it is not
# defined.
#
# **FSDP is ZeRO stage 3.** PyTorch's fully sharded data parallelism, `fully_shard` in
# `torch.distributed.fsdp` ("FSDP2"; PyTorch docs, *torch.distributed.fsdp.fully_shard*),
# shards each parameter across the data-parallel ranks. Its docs describe the same three
# collectives: before a module's forward it all-gathers the module's parameters, it frees
# them after the forward and all-gathers them again before the backward, and it
# reduce-scatters the gradients so that each rank keeps the gradient of its own shard.
# Its `MixedPrecisionPolicy(param_dtype=..., reduce_dtype=...)` sets exactly $b_\text{weight}$ and $b_\text{grad}$:
# `param_dtype=torch.bfloat16, reduce_dtype=torch.float32` is the common recipe, so $b_\text{weight} = 2$
# and $b_\text{grad} = 4$. torchao's float8 training can all-gather the weights in FP8 ($b_\text{weight} = 1$).

# ## 4. The pipeline bubble: two definitions
#
# Cut the model into $n_\text{stages}$ stages on $n_\text{stages}$ devices and the batch into
# $n_\text{micro}$ micro-batches.
# In GPipe's schedule all forward passes run, then all backward passes. Let $t_f$ and
# $t_b$ be one stage's forward and backward time for one micro-batch, and $t = t_f + t_b$.
# In the forward phase the first stage starts the micro-batches one slot of $t_f$ after
# another, and the last micro-batch must still cross every stage after it enters; the
# devices downstream wait while the pipeline fills, the upstream ones while it drains.
# The backward phase mirrors it. Counting those slots, for the whole step and for one
# device's busy time, is your first task below.
#
# - **GPipe** (§2.3) states the bubble, amortised over the $n_\text{micro}$ micro-steps, as the
#   idle share of the **total** time of the step. This is the definition asked for below.
# - **Narayanan et al.** (§2.2.1) call the bubble time fraction
#   $(n_\text{stages}-1)/n_\text{micro}$ (their p and m): the idle time divided by the **ideal**
#   time $n_\text{micro}\,t$, that is, the time with no bubble at all.
#
# Both papers call their ratio the bubble, so check which one a number means. GPipe reports
# the overhead as negligible once $n_\text{micro} \ge 4\,n_\text{stages}$, partly because
# recomputation hides some of it. After the graded cells you can draw both ratios from your
# own expression (section 5d).

# %% [markdown]
# ## 5. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student
# id. On JupyterHub that is your hub user name; working on your own machine, start
# Jupyter with `JUPYTERHUB_USER=<your course id> jupyter lab` so that you see the same
# variant the grader uses. Editing this cell does not change what you are graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import sympy as sp

n_stages, n_micro = sp.symbols("n_stages n_micro", positive=True)

VARIANTS = {
    "A": {"N": 3_250_000_000, "bytes_per_grad": 2, "weight_bytes": 2, "P": 8,
          "bus_bandwidth": 230e9, "stages": 4, "microbatches": 16},
    "B": {"N": 3_369_207_808, "bytes_per_grad": 4, "weight_bytes": 2, "P": 24,
          "bus_bandwidth": 90e9, "stages": 2, "microbatches": 8},
    "C": {"N": 4_375_000_000, "bytes_per_grad": 4, "weight_bytes": 1, "P": 8,
          "bus_bandwidth": 370e9, "stages": 16, "microbatches": 64},
    "D": {"N": 3_645_833_333, "bytes_per_grad": 2, "weight_bytes": 2, "P": 8,
          "bus_bandwidth": 230e9, "stages": 48, "microbatches": 192},
}
# What each variant runs on: P x stages x tensor_parallel devices; N = model_params / stages.
SYSTEMS = {
    "A": {"model": "a 13B GPT", "model_params": 13_000_000_000, "device": "NVIDIA A100 SXM 80GB",
          "device_memory_bytes": 80e9,
          "nodes": 4, "devices_per_node": 8, "tensor_parallel": 1,
          "layout": "one pipeline stage per node; data parallelism over NVLink inside the node"},
    "B": {"model": "a 7B Llama-2-sized model", "model_params": 6_738_415_616, "device": "NVIDIA A100 SXM 80GB",
          "device_memory_bytes": 80e9,
          "nodes": 6, "devices_per_node": 8, "tensor_parallel": 1,
          "layout": "two stages of 3 nodes each; data parallelism over 4 HDR NICs per node"},
    "C": {"model": "a 70B model", "model_params": 70_000_000_000, "device": "NVIDIA H200 SXM",
          "device_memory_bytes": 141e9,
          "nodes": 16, "devices_per_node": 8, "tensor_parallel": 1,
          "layout": "one stage per node; data parallelism over NVLink (ring) inside the node"},
    "D": {"model": "GPT-3 175B", "model_params": 175_000_000_000, "device": "NVIDIA A100 SXM 80GB",
          "device_memory_bytes": 80e9,
          "nodes": 48, "devices_per_node": 8, "tensor_parallel": 1,
          "layout": "48 stages of 2 layers, one per node; data parallelism over NVLink (ring; "
                    "A100's NVSwitch does no reduction) inside the node"},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"exercises:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")
print(f"It runs on: {SYSTEMS[VARIANT]}")

# %% [markdown]
# Your parameters describe one real configuration (printed as `SYSTEMS` above):
# `model_params` split into `stages` pipeline stages, each stage replicated on `P`
# data-parallel devices, so `P * stages` devices in all. Each device holds `N` parameters
# (its stage), and its `N` gradient values are all-reduced over the `P` devices of its
# data-parallel group, `bytes_per_grad` bytes each; `bus_bandwidth` is the all-reduce bus
# bandwidth nccl-tests reports for that group (bytes per second). `weight_bytes` is the
# width at which ZeRO-3 (FSDP) would all-gather each parameter. Under plain data
# parallelism each device's model states, $N(b_\text{weight} + b_\text{grad} + 12)$ bytes, fit in at most 80% of the
# device's memory, leaving room for activations.
#
# ### 5a. Derive
#
# Count the time slots of a GPipe step with sympy (total and busy, in units of $t$) and
# assign the idle share of the total to `bubble_expr`, an expression in the symbols
# `n_stages` and `n_micro` defined above.

# %% nbgrader={"grade": false, "grade_id": "answer_expr", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
t = sp.symbols("t", positive=True)
total_time = (n_micro + n_stages - 1) * t
busy_time = n_micro * t
bubble_expr = sp.simplify((total_time - busy_time) / total_time)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expr", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the mathematics is checked when your notebook is graded.
assert isinstance(bubble_expr, sp.Expr), "bubble_expr should be a sympy expression"
assert {x.name for x in bubble_expr.free_symbols} <= {x.name for x in (n_stages, n_micro)}, "use only the symbols n_stages and n_micro"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e07-communication", "check_expr", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 5b. The gradient all-reduce
#
# For your variant, compute
# - `allreduce_bytes_per_device`: bytes each device sends in a ring all-reduce of the
#   gradients;
# - `allreduce_seconds`: how long that all-reduce takes at your `bus_bandwidth`.

# %% nbgrader={"grade": false, "grade_id": "answer_allreduce", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
gradient_bytes = params["N"] * params["bytes_per_grad"]
allreduce_bytes_per_device = 2 * (params["P"] - 1) / params["P"] * gradient_bytes
allreduce_seconds = allreduce_bytes_per_device / params["bus_bandwidth"]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_allreduce", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the numbers are checked when your notebook is graded.
for name in ("allreduce_bytes_per_device", "allreduce_seconds"):
    assert isinstance(globals()[name], numbers.Real), f"{name} should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e07-communication", "check_allreduce", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 5c. ZeRO-3 and the pipeline
#
# Compute
# - `zero3_volume_ratio`: the bytes each device moves in one ZeRO stage-3 step (two
#   all-gathers of its parameters at `weight_bytes`, one reduce-scatter of its gradients at
#   `bytes_per_grad`) divided by the bytes of plain data parallelism's gradient all-reduce
#   at `bytes_per_grad` (same `N`, same `P`);
# - `bubble_fraction`: your `bubble_expr` at your `stages` and `microbatches`.

# %% nbgrader={"grade": false, "grade_id": "answer_zero_pipeline", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
share = (params["P"] - 1) / params["P"] * params["N"]        # values one all-gather or reduce-scatter moves
zero3_bytes = 2 * share * params["weight_bytes"] + share * params["bytes_per_grad"]
zero3_volume_ratio = zero3_bytes / allreduce_bytes_per_device
bubble_fraction = float(bubble_expr.subs({n_stages: params["stages"], n_micro: params["microbatches"]}))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_zero_pipeline", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
for name in ("zero3_volume_ratio", "bubble_fraction"):
    assert isinstance(globals()[name], numbers.Real), f"{name} should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e07-communication", "check_zero_pipeline", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 5d. Read your numbers
#
# Not graded. The next cell draws your `bubble_expr` next to Narayanan et al.'s ratio for a
# few pipeline depths (dots at $n_\text{micro} = 4\,n_\text{stages}$).

# %%
import matplotlib.pyplot as plt
import numpy as np

if isinstance(globals().get("bubble_expr"), sp.Expr) and {x.name for x in bubble_expr.free_symbols} <= {x.name for x in (n_stages, n_micro)}:
    yours = sp.lambdify((n_stages, n_micro), bubble_expr, "numpy")
    micro = np.arange(1, 257, dtype=float)
    fig, ax = plt.subplots(figsize=(9, 3.6))
    for i, stages in enumerate((4, 8, 16)):
        ax.plot(micro, yours(stages, micro) * np.ones_like(micro), color=f"C{i}",
                label=f"{stages} stages: your bubble_expr")
        ax.plot(micro, (stages - 1) / micro, color=f"C{i}", ls=":",
                label=f"{stages} stages: idle / ideal (Narayanan)")
        ax.plot(4 * stages, yours(stages, 4 * stages), "o", color=f"C{i}")
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 1.0)
    ax.set_xlabel(r"micro-batches $n_\mathrm{micro}$")
    ax.set_ylabel("bubble")
    ax.set_title(r"Same schedule, two ratios (dots: $n_\mathrm{micro} = 4\,n_\mathrm{stages}$)")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    plt.tight_layout()
    plt.show()
else:
    print("Define bubble_expr in 5a first.")

# %% [markdown]
# A few sentences for yourself:
# - Is your all-reduce long next to a training step of a few seconds? Frameworks start
#   reducing each layer's gradients as soon as the backward pass produces them, so much of
#   it can hide behind computation. What fraction would have to hide?
# - Which choice of `param_dtype` and `reduce_dtype` makes stage 3 cost no more traffic
#   than plain data parallelism? When is its extra traffic a good trade for the memory it
#   saves? (w1-memory gives the memory side.)
# - How many micro-batches would bring your bubble under 5%? What does a larger $n_\text{micro}$
#   cost, at a fixed global batch?
# - On a switch that reduces in the network (NVLink SHARP on H100 and H200, or InfiniBand
#   SHARP), the switch does the additions and each GPU's data crosses its link about once
#   each way: the ring count of
#   5b is then no longer what goes on the wire (nccl-tests issues #212 and #366).

# %% [markdown]
# *Your answer, for yourself (not graded): double-click this cell and write it here.*
