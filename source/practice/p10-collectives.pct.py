# %% [markdown]
# # p10-collectives · At scale, on a CPU: an all-reduce and a sharded model, measured
#
# *Chapter II.8 Training at Scale · practice · at scale, on a CPU*
#
# Every number of a large run's communication and memory can be computed in advance: e07
# derived what an all-reduce puts on the wire, w1 what each device holds when ZeRO shards the
# model states. Here you check both against a real run. The notebook starts 2 to 4 processes on
# your CPU, joins them with `torch.distributed` and its gloo backend (the one that runs without
# GPUs), and then
#
# 1. you write a **ring all-reduce** from point-to-point messages and count what every rank
#    sends, against the ring formula $2(P-1)/P$ times the tensor's bytes;
# 2. you shard a small model with **torch's FSDP** (`fully_shard`, which is ZeRO stage 3) and
#    count the parameter, gradient and optimiser-state bytes each rank holds, against w1's
#    stage-3 formula.
#
# Sources: Patarasuk and Yuan, *Bandwidth optimal all-reduce algorithms for clusters of
# workstations* (JPDC 2009), the ring; NVIDIA's nccl-tests, `doc/PERFORMANCE.md`, which defines an
# all-reduce's bus bandwidth as its algorithm bandwidth times $2(n-1)/n$; Rajbhandari et al.,
# *ZeRO: Memory Optimizations Toward Training Trillion Parameter Models* (SC 2020), §5 and
# Figure 1; Zhao et al., *PyTorch FSDP* (VLDB 2023), and torch's `fully_shard` documentation.

# %% [markdown]
# ## 1. The ring, and what can honestly be measured
#
# An all-reduce leaves on every one of $P$ ranks the sum of the $P$ ranks' tensors. The ring
# does it in two phases over a ring of ranks $0 \to 1 \to \dots \to P-1 \to 0$. Split the tensor
# into $P$ chunks.
#
# - **Reduce-scatter**, $P-1$ steps. At step $s$ rank $r$ sends chunk $(r-s) \bmod P$ to rank
#   $r+1$, receives chunk $(r-s-1) \bmod P$ from rank $r-1$ and adds it to its own. After the
#   last step rank $r$ holds the complete sum of chunk $(r+1) \bmod P$.
# - **All-gather**, $P-1$ steps. At step $s$ rank $r$ sends chunk $(r+1-s) \bmod P$ (a finished
#   sum) and overwrites chunk $(r-s) \bmod P$ with the one it receives.
#
# Each rank sends $2(P-1)$ chunks of $1/P$ of the tensor: for a tensor of $S$ bytes,
#
# $$\text{bytes sent per rank} = \frac{2(P-1)}{P}\, S ,$$
#
# and receives as many. No all-reduce built from messages between the ranks can do with less
# per rank (Patarasuk and Yuan), which is why nccl-tests reports a **bus bandwidth**, the
# algorithm bandwidth $S/t$ times $2(P-1)/P$: the rate at which each rank's link really carried
# data. The bound does not cover **in-network reduction**, where the switch adds the ranks'
# chunks (NVLink SHARP, NCCL's NVLS algorithm): there neither the ring's count nor nccl-tests'
# bus bandwidth is what goes on the wire (nccl-tests issues #212 and #366; NCCL issue #1455).
# When $S$ does not divide into $P$ equal chunks (`torch.tensor_split` makes the first
# $S \bmod P$ chunks one element longer), the ranks differ by a few elements and only their
# **mean** is exactly the formula.
#
# What can be measured here, and what cannot. gloo's own `dist.all_reduce` keeps no byte
# counters that Python can read, and it picks its algorithm by message size, so "what gloo's
# all-reduce moved" is not something this notebook can observe honestly. What it *is given* is
# the tensor's $S$ bytes. So you write the ring yourself, with a `send` and a `recv` that the
# harness hands you and that count every byte where it is sent; the harness checks your result
# against `dist.all_reduce` on the same inputs. The traffic you measure is exactly that of the
# schedule above, the one the formula describes.

# %% [markdown]
# ## 2. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id. On
# JupyterHub that is your hub user name; working on your own machine, start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab` so that you see the variant the grader uses.
# Editing this cell does not change what you are graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {
    "A": {"world": 2, "numel": 1000, "dtype": "float32", "widths": [32, 64, 10],
          "model_dtype": "float32", "seed": 1},
    "B": {"world": 3, "numel": 1000, "dtype": "float32", "widths": [24, 48, 48, 5],
          "model_dtype": "bfloat16", "seed": 2},
    "C": {"world": 4, "numel": 4096, "dtype": "bfloat16", "widths": [40, 30, 7],
          "model_dtype": "float32", "seed": 3},
    "D": {"world": 4, "numel": 1502, "dtype": "float64", "widths": [16, 64, 64, 3],
          "model_dtype": "bfloat16", "seed": 4},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"practice:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: P = {params['world']} ranks; all-reduce of {params['numel']} "
      f"{params['dtype']} values; MLP of widths {params['widths']} in {params['model_dtype']}")

# %% [markdown]
# ## 3. The harness
#
# The next cell is given and locked. `launch(worker, world, *args)` forks `world` processes,
# joins them into one gloo process group (they meet through a file in a fresh temporary
# directory, so no port has to be free; gloo itself talks over the loopback interface), runs
# `worker(rank, world, *args)` in each and returns their results, by rank. A rank that fails
# makes it raise with that rank's error; a rank that hangs (a `send` nobody receives) is killed
# after 45 seconds.
#
# `ring_run(world, numel, dtype, seed)` gives every rank `numel` random values of `dtype`, runs
# **your** `ring_all_reduce` on each, and returns `[sent, received, error]`: the bytes each rank
# sent and received through the counting wire, and the largest difference between any rank's
# result and `dist.all_reduce`'s, relative to the largest entry.
#
# `fsdp_run(world, widths, dtype, seed)` builds the same MLP on every rank, shards each
# `Linear` and then the whole model with `fully_shard`, takes one Adam step, and returns, for
# each rank, what **your** `state_bytes(model, optimizer)` counts there.

# %% nbgrader={"grade": false, "grade_id": "harness", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard

torch.set_num_threads(1)   # tiny tensors, and ranks that share two cores: one thread each
ELEMENT_BYTES = {"float32": 4, "bfloat16": 2, "float64": 8}
LAUNCH_SECONDS = 45.0


# chapter: include graders.problems.practice.p10_collectives.launch


# chapter: include graders.problems.practice.p10_collectives._check_loopback


# chapter: include graders.problems.practice.p10_collectives._listening


# chapter: include graders.problems.practice.p10_collectives._join_and_run


# chapter: include graders.problems.practice.p10_collectives.CountingWire


# chapter: include graders.problems.practice.p10_collectives.SendHandle


# chapter: include graders.problems.practice.p10_collectives.ring_worker


def ring_run(world, numel, dtype, seed, all_reduce=None):
    """[bytes sent per rank, bytes received per rank, largest relative error against gloo's all_reduce]."""
    rows = launch(ring_worker, int(world), int(numel), str(dtype), int(seed), all_reduce or ring_all_reduce)
    return [[row[0] for row in rows], [row[1] for row in rows], max(row[2] for row in rows)]


# chapter: include graders.problems.practice.p10_collectives.make_mlp


# chapter: include graders.problems.practice.p10_collectives.fsdp_worker


def fsdp_run(world, widths, dtype, seed, count=None):
    """Per rank, what state_bytes counts after one sharded Adam step: [parameter, gradient, optimiser] bytes."""
    return launch(fsdp_worker, int(world), [int(w) for w in widths], str(dtype), int(seed), count or state_bytes)


# %% [markdown]
# ## 4. Build the ring
#
# Write `ring_all_reduce(tensor, rank, world, send, recv)`. It sums `tensor` over all ranks, in
# place, with the schedule of section 1, and only with the two functions it is given:
#
# - `send(t, dst)` starts sending the tensor `t` to rank `dst` and returns a handle; call
#   `handle.wait()` before you change `t` or reuse it;
# - `recv(t, src)` waits for a tensor from rank `src` and writes it into `t` (which must have
#   the right shape and dtype: make a buffer with `torch.empty_like`).
#
# Split with `chunks = torch.tensor_split(tensor, world)`: the chunks are views, so adding into a
# chunk changes `tensor`. Start each step's `send` before its `recv`: every rank sends and
# receives at once, and a rank that waited for its `recv` first would wait for ever. Anything sent
# with `dist.send` directly is not counted.

# %% nbgrader={"grade": false, "grade_id": "answer_ring", "locked": false, "schema_version": 3, "solution": true, "task": false}
def ring_all_reduce(tensor, rank, world, send, recv):
    """Sum `tensor` over all ranks in place: a ring reduce-scatter, then a ring all-gather."""
    ### BEGIN SOLUTION
    chunks = torch.tensor_split(tensor, world)
    right, left = (rank + 1) % world, (rank - 1) % world
    for s in range(world - 1):                       # reduce-scatter
        mine, theirs = chunks[(rank - s) % world], chunks[(rank - s - 1) % world]
        buffer = torch.empty_like(theirs)
        handle = send(mine, right)
        recv(buffer, left)
        handle.wait()
        theirs += buffer
    for s in range(world - 1):                       # all-gather
        mine, theirs = chunks[(rank + 1 - s) % world], chunks[(rank - s) % world]
        buffer = torch.empty_like(theirs)
        handle = send(mine, right)
        recv(buffer, left)
        handle.wait()
        theirs.copy_(buffer)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_ring", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the hidden test runs your ring on hidden sizes, dtypes and numbers of ranks.
_r = ring_run(2, 6, "float32", 0)
assert len(_r) == 3 and len(_r[0]) == 2 and len(_r[1]) == 2, "ring_run gives [sent, received, error]"
assert _r[2] < 1e-5, "the ring's sum differs from dist.all_reduce's"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p10-collectives", "check_ring", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 5. Measure it, then compare
#
# For your variant ($P$ = `world` ranks, an all-reduce of `numel` values of `dtype`, inputs from
# `seed`):
#
# - `ring_sent_bytes`: the bytes each rank sent, measured with `ring_run` (a list, rank by rank);
# - `allreduce_input_bytes`: the bytes of the tensor the all-reduce is given, $S$;
# - `ring_formula_bytes`: the ring formula's bytes per rank, $2(P-1)/P \cdot S$;
# - `bus_factor`: nccl-tests' factor from algorithm bandwidth to bus bandwidth for an all-reduce
#   on $P$ ranks.

# %% nbgrader={"grade": false, "grade_id": "answer_ring_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_P = params["world"]
ring_measured = ring_run(_P, params["numel"], params["dtype"], params["seed"])
ring_sent_bytes = ring_measured[0]
allreduce_input_bytes = params["numel"] * ELEMENT_BYTES[params["dtype"]]
bus_factor = 2 * (_P - 1) / _P
ring_formula_bytes = bus_factor * allreduce_input_bytes
### END SOLUTION
print("sent per rank:", ring_sent_bytes, "· formula:", ring_formula_bytes,
      "· mean measured:", sum(ring_sent_bytes) / len(ring_sent_bytes))

# %% nbgrader={"grade": true, "grade_id": "check_ring_numbers", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
import numbers

assert isinstance(ring_sent_bytes, list) and all(isinstance(b, numbers.Integral) for b in ring_sent_bytes)
assert isinstance(allreduce_input_bytes, numbers.Integral), "bytes are whole numbers"
assert all(isinstance(v, numbers.Real) for v in (ring_formula_bytes, bus_factor))
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p10-collectives", "check_ring_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 6. ZeRO-3 is FSDP: what a rank holds
#
# Plain data parallelism keeps the whole model on every rank: parameters, gradients and
# optimiser state. ZeRO stage 3 (§5.3) keeps only $1/P$ of each on every rank, gathers a layer's
# full parameters just before its forward (and again before its backward) pass, frees them right
# after, and reduce-scatters the gradients so that each rank receives the summed gradient of the
# shard it owns and updates only that. ZeRO's Figure 1 counts mixed-precision Adam as 2 bytes of
# fp16 parameter, 2 of fp16 gradient and $K = 12$ of optimiser state (an fp32 master copy, the
# momentum and the variance) per parameter, so stage 3 holds $(2+2+K)N/P$ per rank.
#
# torch's FSDP2, `torch.distributed.fsdp.fully_shard`, is that design: it replaces each parameter
# with a `DTensor` sharded on dim 0 across the ranks, and it runs on gloo on the CPU (gloo has the
# two collectives it needs, all-gather and reduce-scatter), so no hand-written ZeRO-3 step is
# needed. Two details of what it really does:
#
# - a parameter with $d_0$ rows is cut as `torch.chunk` cuts it: $\lceil d_0/P \rceil$ rows per
#   rank, the last ranks getting fewer, or none (a bias of 3 entries on 4 ranks: 1, 1, 1, 0);
# - on a `DTensor`, `p.numel()` is the size of the **whole** parameter; what this rank holds
#   is `p.to_local()`. The same goes for `p.grad` and Adam's `exp_avg` and `exp_avg_sq`.
#
# Adapting the formula to this run, honestly. The run keeps every tensor in one dtype of $e$
# bytes (fp32, $e = 4$, or bf16, $e = 2$): there is no separate 16-bit copy and no fp32 master
# copy, and torch's Adam keeps its two moments in the parameter's dtype. So a parameter costs
# $e$ (parameter) $+\ e$ (gradient) $+\ 2e$ (optimiser) bytes, and stage 3 holds
#
# $$\frac{(e + e + 2e)\,N}{P} \text{ bytes per rank:}\quad \frac{(4+4+8)N}{P} \text{ in fp32},
# \qquad \frac{(2+2+4)N}{P} \text{ in bf16}.$$
#
# (fp32 everywhere gives the same 16 bytes per parameter as ZeRO's mixed precision, split
# differently; pure bf16 gives 8. FSDP's own mixed precision, `MixedPrecisionPolicy`, keeps
# fp32 shards and casts to 16 bits only for the gathered copy, which is freed after use.)

# %% [markdown]
# ## 7. Count what each rank holds
#
# Write `state_bytes(model, optimizer)`: on the rank where it is called, the bytes of
# `[parameters, gradients, optimiser state]` that this rank holds, as three ints. Optimiser
# state means Adam's two moments, `exp_avg` and `exp_avg_sq` (not its `step` counter). Count
# bytes, not elements: `t.numel() * t.element_size()`.

# %% nbgrader={"grade": false, "grade_id": "answer_state_bytes", "locked": false, "schema_version": 3, "solution": true, "task": false}
def state_bytes(model, optimizer):
    """[parameter, gradient, optimiser-state] bytes held on this rank."""
    ### BEGIN SOLUTION
    def held(t):
        local = t.to_local() if hasattr(t, "to_local") else t
        return local.numel() * local.element_size()
    parameters = sum(held(p) for p in model.parameters())
    gradients = sum(held(p.grad) for p in model.parameters() if p.grad is not None)
    moments = sum(held(state[name]) for state in optimizer.state.values()
                  for name in ("exp_avg", "exp_avg_sq") if name in state)
    return [parameters, gradients, moments]
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_fsdp", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the hidden test runs your count inside FSDP runs you have not seen.
_f = fsdp_run(2, [4, 6, 2], "float32", 0)
assert len(_f) == 2 and all(len(row) == 3 for row in _f), "fsdp_run gives one [params, grads, optim] per rank"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p10-collectives", "check_fsdp", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 8. Your sharded model, against the formula
#
# For your variant (the MLP of `widths` in `model_dtype`, sharded over $P$ = `world` ranks):
#
# - `param_bytes_per_rank`, `grad_bytes_per_rank`, `optim_bytes_per_rank`: measured with
#   `fsdp_run`, one list each, rank by rank;
# - `n_params`: the model's parameter count $N$ (weights and biases);
# - `stage3_formula_bytes`: the stage-3 formula adapted to this run, $(e+e+2e)N/P$.

# %% nbgrader={"grade": false, "grade_id": "answer_fsdp_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
fsdp_measured = fsdp_run(params["world"], params["widths"], params["model_dtype"], params["seed"])
param_bytes_per_rank = [row[0] for row in fsdp_measured]
grad_bytes_per_rank = [row[1] for row in fsdp_measured]
optim_bytes_per_rank = [row[2] for row in fsdp_measured]
n_params = sum(p.numel() for p in make_mlp(params["widths"], params["model_dtype"], params["seed"]).parameters())
_e = ELEMENT_BYTES[params["model_dtype"]]
stage3_formula_bytes = (_e + _e + 2 * _e) * n_params / params["world"]
### END SOLUTION
print("held per rank:", [sum(row) for row in fsdp_measured], "· formula:", stage3_formula_bytes)

# %% nbgrader={"grade": true, "grade_id": "check_fsdp_numbers", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
import numbers

for _name in ("param_bytes_per_rank", "grad_bytes_per_rank", "optim_bytes_per_rank"):
    assert all(isinstance(b, numbers.Integral) for b in globals()[_name]), f"{_name} holds whole numbers"
assert isinstance(n_params, numbers.Integral), "n_params is a whole number"
assert isinstance(stage3_formula_bytes, numbers.Real)
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p10-collectives", "check_fsdp_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 9. Look at it
#
# Left: the bytes each rank sent in your ring, against the formula. Right: what each rank holds
# under FSDP, parameters, gradients and optimiser state stacked, against the stage-3 formula and
# against what every rank would hold without sharding (plain data parallelism, $P$ times more).

# %%
import matplotlib.pyplot as plt

try:
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.6))
    _ranks = list(range(len(ring_sent_bytes)))
    ax1.bar(_ranks, ring_sent_bytes, color="C0", label="measured: bytes sent")
    ax1.axhline(ring_formula_bytes, color="k", ls="--", label="2(P-1)/P · S")
    ax1.axhline(allreduce_input_bytes, color="C3", ls=":", label="S, the tensor")
    ax1.set_xlabel("rank")
    ax1.set_ylabel("bytes")
    ax1.set_xticks(_ranks)
    ax1.legend(loc="lower right")
    _bottom = [0] * len(param_bytes_per_rank)
    for _values, _label in ((param_bytes_per_rank, "parameters"), (grad_bytes_per_rank, "gradients"),
                            (optim_bytes_per_rank, "Adam moments")):
        ax2.bar(range(len(_values)), _values, bottom=_bottom, label=_label)
        _bottom = [b + v for b, v in zip(_bottom, _values)]
    ax2.axhline(stage3_formula_bytes, color="k", ls="--", label="stage 3: (e+e+2e)N/P")
    ax2.axhline(stage3_formula_bytes * params["world"], color="C3", ls=":", label="unsharded, per rank")
    ax2.set_xlabel("rank")
    ax2.set_ylabel("bytes held")
    ax2.set_xticks(range(len(param_bytes_per_rank)))
    ax2.legend(loc="center right", fontsize=8)
    fig.tight_layout()
    plt.show()
except (NameError, TypeError):
    print("Answer sections 5 and 8 first.")

# %% [markdown]
# ## 10. Read your numbers
#
# Not graded; a few sentences for yourself.
#
# - Is the mean of your ranks' bytes exactly the formula? If your ranks differ, which ones send
#   more, and by how many elements? What would make them equal?
# - `bus_factor` tends to 2 as $P$ grows: a large ring moves almost twice the tensor through every
#   link, whatever the number of ranks. Why is that the good news about the ring, not the bad?
# - Which of your ranks holds the least under FSDP, and why (look at how `torch.chunk` cuts the
#   last layer)? How far is the largest rank above the formula, and what would happen at
#   $P = 1024$ with a layer of 512 rows?
# - ZeRO-3 pays for its memory with traffic: two all-gathers of the parameters and one
#   reduce-scatter of the gradients per step, against one all-reduce for plain data
#   parallelism (e07's `zero3_volume_ratio`). Which of the two collectives you built here is
#   half of an all-reduce?

# %% [markdown]
# *Your answer, for yourself (not graded): double-click this cell and write it here.*
