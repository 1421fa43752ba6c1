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
# state per parameter. Units are plain bytes (1 GB here means $10^9$ bytes, as in the paper).

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
# The printout reproduces the paper's figure: 120 GB for plain data parallelism,
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
    "A": {"N": 1_300_000_000, "P": 8, "K": 12, "stage": 1},
    "B": {"N": 13_000_000_000, "P": 64, "K": 12, "stage": 2},
    "C": {"N": 70_000_000_000, "P": 512, "K": 12, "stage": 3},
    "D": {"N": 175_000_000_000, "P": 1024, "K": 12, "stage": 1},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"worked:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ### 4a. Derive
#
# Write `per_device_expr`, the bytes of model states on one device at **your** stage,
# as a sympy expression in `N`, `P` and `K` (the symbols defined above).

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
assert per_device_expr.free_symbols <= {N, P, K}, "use only the symbols N, P and K"
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
# Form only: the numbers are checked when your notebook is graded.
assert isinstance(bytes_per_param, int), "bytes_per_param is a count of bytes: an int"
for name in ("total_bytes", "per_device_bytes"):
    assert isinstance(globals()[name], (int, float)), f"{name} should be a number of bytes"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("w1-memory", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4c. Read your number
#
# Does your per-device figure fit on an 80 GB accelerator with room left for
# activations? Which stage would you need, at your $P$, to get under 40 GB?
# (Not graded: a sentence for yourself.)

# %% [markdown]
# *Your answer, for yourself (not graded): double-click this cell and write it here.*
