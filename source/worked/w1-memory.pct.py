# %% [markdown]
# # w1-memory · What the model states cost, and what ZeRO takes off each device
#
# *Chapter II.8 Training at Scale · mathematics · worked problem 1 of 5*
#
# Before a single activation is stored, a training run must hold its **model states**:
# the weights, their gradients, and whatever the optimiser remembers about each weight.
# This problem derives that bill for mixed-precision Adam, then shows how ZeRO's three
# stages split it across $P$ data-parallel devices. Source: Rajbhandari et al., *ZeRO:
# Memory Optimizations Toward Training Trillion Parameter Models* (SC 2020), §3.1 and §5.
#
# Notation: $N$ parameter count, $P$ data-parallel devices, $K$ bytes of optimiser
# state per parameter. Units are plain bytes: the answers are counts of bytes, not GB
# ($10^9$ bytes, as the paper and the datasheets print them) and not GiB ($2^{30}$ bytes).

# %% [markdown]
# ## 1. The account for one parameter
#
# Mixed-precision training runs the forward and backward passes in 16-bit, so each
# parameter has
#
# | what | precision | bytes |
# |---|---|---|
# | the weight used in the passes | fp16 | 2 |
# | its gradient | fp16 | 2 |
# | the optimiser's state | fp32 | $K$ |
#
# For Adam the optimiser's state is three fp32 numbers: a **master copy** of the
# weight (updates are applied there, because an fp16 weight cannot absorb a tiny
# update), the first moment and the second moment. So $K = 4 + 4 + 4 = 12$ and one
# parameter costs $2 + 2 + K = 16$ bytes. A model of $N$ parameters needs $(4 + K)N$
# bytes before anything else is counted.
#
# ## 2. ZeRO's three stages
#
# Plain data parallelism keeps a full copy of all of it on each of the $P$ devices.
# ZeRO partitions the states so that each device keeps only a $1/P$ slice:
#
# | stage | partitioned across $P$ | bytes per device |
# |---|---|---|
# | 0 (plain data parallel) | nothing | $(4 + K)N$ |
# | 1 ($P_{os}$) | optimiser states | $4N + KN/P$ |
# | 2 ($P_{os+g}$) | optimiser states and gradients | $2N + (2 + K)N/P$ |
# | 3 ($P_{os+g+p}$) | everything | $(4 + K)N/P$ |
#
# Stage 1 already removes three quarters of the bill when $K = 12$ and $P$ is large;
# only stage 3 makes the per-device cost fall to zero as $P$ grows.
#
# **FSDP is stage 3.** PyTorch's fully sharded data parallelism, `fully_shard` in
# `torch.distributed.fsdp` ("FSDP2"; PyTorch docs, *torch.distributed.fsdp.fully_shard*),
# shards every parameter, its gradient and its optimiser state over the $P$ data-parallel
# ranks: the $(4 + K)N/P$ row. What it pays for that is communication. Before a module's
# forward it all-gathers the module's parameters, it frees them after the forward and
# all-gathers them again before the backward, and it reduce-scatters the gradients so that
# each rank keeps only its shard's (e07-communication counts these bytes). While a module
# computes, its gathered parameters are on the device too; the table counts only what stays
# between modules.

# %% [markdown]
# ## 3. Worked example: the paper's 7.5B model on 64 GPUs
#
# ZeRO's Figure 1 takes $N = 7.5 \times 10^9$, $K = 12$ and $P = 64$. We derive the four
# expressions once, symbolically, and then substitute.

# %%
import sympy as sp

N_, P_, K_ = sp.symbols("N P K", positive=True)
example_stages = {
    0: (2 + 2 + K_) * N_,
    1: (2 + 2) * N_ + K_ * N_ / P_,
    2: 2 * N_ + (2 + K_) * N_ / P_,
    3: (2 + 2 + K_) * N_ / P_,
}
example = {N_: 7.5e9, P_: 64, K_: 12}
for stage, expr in example_stages.items():
    print(f"stage {stage}: {str(expr):22s} = {float(expr.subs(example)) / 1e9:6.1f} GB per device")

# %% [markdown]
# The same four numbers as bars, against the memory of the paper's device, a 32 GB V100
# (in the style of ZeRO's Figure 1; the scale is logarithmic, and a red bar does not fit):

# %%
import matplotlib.pyplot as plt


def draw_zero_stages(stage_bytes, device_bytes, device_name, title, own_stage=None):
    """Per-device model-state bytes of ZeRO stages 0-3 as bars, against one device's memory."""
    labels = ["0: plain DP", "1: $P_{os}$", "2: $P_{os+g}$", "3: $P_{os+g+p}$"]
    colours = ["C3" if b > device_bytes else "C0" for b in stage_bytes]
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    bars = ax.bar(labels, [b / 1e9 for b in stage_bytes], color=colours)
    ax.bar_label(bars, labels=[f"{b / 1e9:.3g} GB" for b in stage_bytes], fontsize=8)
    if own_stage is not None:                     # outline the stage the run uses
        bars[own_stage].set_edgecolor("k")
        bars[own_stage].set_linewidth(2)
    ax.axhline(device_bytes / 1e9, color="k", ls="--", lw=1)
    ax.text(3.45, device_bytes / 1e9, f" {device_name}: {device_bytes / 1e9:.0f} GB",
            va="bottom", ha="right", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("model states per device (GB)")
    ax.set_title(title, fontsize=10)
    plt.tight_layout()
    plt.show()


draw_zero_stages([float(e.subs(example)) for e in example_stages.values()], 32e9,
                 "V100", "ZeRO's Figure 1: 7.5B parameters, K = 12, 64 devices")

# %% [markdown]
# The printout and the bars reproduce the paper's figure: 120 GB for plain data parallelism,
# 31.4 GB with $P_{os}$, 16.6 GB with $P_{os+g}$ and 1.9 GB with $P_{os+g+p}$. A 32 GB
# V100 of the time could hold the model's states only from stage 1 on, and those states
# are not yet the whole story: activations, temporary buffers and fragmentation come on top.
#
# ## 4. Your variant
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

N, P, K = sp.symbols("N P K", positive=True)

VARIANTS = {
    "A": {"N": 1_300_000_000, "P": 8, "K": 12, "stage": 0},
    "B": {"N": 13_000_000_000, "P": 64, "K": 12, "stage": 1},
    "C": {"N": 70_000_000_000, "P": 256, "K": 12, "stage": 2},
    "D": {"N": 175_000_000_000, "P": 64, "K": 12, "stage": 3},
}
# The device each variant runs on, with its memory from the vendor's datasheet (1 GB = 1e9 bytes).
# B200: NVIDIA's DGX B200 datasheet prints 1,440 GB for its 8 GPUs, 180 GB each (the 192 GB
# often quoted for a B200 is not the DGX B200's figure).
DEVICES = {
    "A": {"device": "NVIDIA A100 SXM 80GB", "memory_bytes": 80e9},
    "B": {"device": "NVIDIA H100 SXM", "memory_bytes": 80e9},
    "C": {"device": "AMD Instinct MI300X", "memory_bytes": 192e9},
    "D": {"device": "NVIDIA B200 (DGX B200)", "memory_bytes": 180e9},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"worked:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}, on {DEVICES[VARIANT]['device']}")

# %% [markdown]
# ### 4a. Derive
#
# Write `per_device_expr`, the bytes of model states on one device at **your** stage,
# as a sympy expression in `N`, `P` and `K` (the symbols defined above). Keep `K` a symbol,
# as `N` and `P` are: the expression must hold for any optimiser, not only for your variant's.

# %% nbgrader={"grade": false, "grade_id": "answer_expr", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
per_device_expr = {
    0: (2 + 2 + K) * N,
    1: 4 * N + K * N / P,
    2: 2 * N + (2 + K) * N / P,
    3: (2 + 2 + K) * N / P,
}[params["stage"]]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expr", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the mathematics is checked when your notebook is graded.
assert isinstance(per_device_expr, sp.Expr), "per_device_expr should be a sympy expression"
assert {x.name for x in per_device_expr.free_symbols} <= {x.name for x in (N, P, K)}, "use only the symbols N, P and K"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("w1-memory", "check_expr", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4b. Compute
#
# For your variant, compute in plain bytes:
# - `bytes_per_param`: model-state bytes of one parameter, unsharded (an int);
# - `total_bytes`: model-state bytes of the whole model, unsharded;
# - `per_device_bytes`: model-state bytes on one device at your stage.

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
bytes_per_param = 2 + 2 + params["K"]
total_bytes = bytes_per_param * params["N"]
per_device_bytes = float(per_device_expr.subs({N: params["N"], P: params["P"], K: params["K"]}))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the numbers are checked when your notebook is graded.
assert isinstance(bytes_per_param, numbers.Integral), "bytes_per_param is a count of bytes: an int"
for name in ("total_bytes", "per_device_bytes"):
    assert isinstance(globals()[name], numbers.Real), f"{name} should be a number of bytes"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("w1-memory", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4c. Draw your variant, and read it
#
# Draw your variant's four stages against your device's memory with `draw_zero_stages`
# (section 3), the per-device bytes of stages 0 to 3 at your $N$, $P$ and $K$. Not graded.
# Does your stage fit, with room left for activations (w4-activations)? Which is the lowest
# stage that would fit, at your $P$?

# %% nbgrader={"grade": false, "grade_id": "figure_variant", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
your_stage_bytes = [float(expr.subs({N_: params["N"], P_: params["P"], K_: params["K"]}))
                    for expr in example_stages.values()]
device = DEVICES[VARIANT]
draw_zero_stages(your_stage_bytes, device["memory_bytes"], device["device"],
                 f"Variant {VARIANT}: N = {params['N']:.3g}, P = {params['P']}, K = {params['K']} "
                 f"(outlined: your stage {params['stage']})", own_stage=params["stage"])
### END SOLUTION
