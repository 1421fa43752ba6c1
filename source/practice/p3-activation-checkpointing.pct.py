# %% [markdown]
# # p3-activation-checkpointing · What autograd keeps, measured
#
# *Chapter II.8 Training at Scale · practice · build it · 3 of 9*
#
# Between the forward and the backward pass, autograd holds on to every tensor that a
# backward formula will need: a layer's input to compute its weight gradient, a
# nonlinearity's input to compute its derivative, a LayerNorm's statistics. For a large
# model these saved activations, not the weights, are what fills the memory (worked
# problem w4). Activation checkpointing keeps only the inputs of chosen regions and runs
# those regions forward a second time during the backward pass.
#
# Here you measure it instead of deriving it: you will count, tensor by tensor, what
# autograd saves for a small transformer-style stack, with and without
# `torch.utils.checkpoint`, and check that the gradients do not change by a single bit.
#
# Sources: Chen, Xu, Zhang and Guestrin, *Training Deep Nets with Sublinear Memory Cost*
# (2016), the idea and its $O(\sqrt{n})$ schedule; Korthikanti et al., *Reducing Activation
# Recomputation in Large Transformer Models* (2022), Table 2 and §5 (selective
# recomputation); the PyTorch documentation of `torch.utils.checkpoint` and of
# `torch.autograd.graph.saved_tensors_hooks`.

# %% [markdown]
# ## 1. The tools
#
# **Seeing what is saved.** Inside
# `with torch.autograd.graph.saved_tensors_hooks(pack, unpack):`, every tensor that an
# operation saves for backward is passed to `pack(t)`; whatever `pack` returns is stored
# instead, and `unpack` turns it back during the backward pass. With `pack` appending `t`
# to a list and returning it, and `unpack` returning its argument, you get an exact
# inventory and change nothing.
#
# Two things in that inventory are not activations:
#
# - **weights.** `nn.Linear` saves its weight, to compute the input's gradient. What it
#   saves is `weight.t()`, a *view* on the weight's memory, which is **not** an
#   `nn.Parameter` object. The memory is the weight's, which is held anyway, so leave out
#   every tensor whose storage is a parameter's storage:
#   `t.untyped_storage().data_ptr()` compared with the parameters' own.
# - nothing else here: every other saved tensor is a fresh activation (for this model,
#   no tensor is saved twice).
#
# Count a saved tensor's bytes as `t.numel() * t.element_size()`.
#
# **Checkpointing.** `torch.utils.checkpoint.checkpoint(f, h, use_reentrant=False)` runs
# `f(h)` without saving anything inside `f`, keeps `h`, and reruns `f(h)` in the backward
# pass to get the saved tensors back. Pass `use_reentrant=False` explicitly: in this
# version of torch, leaving it out warns and falls back to the older reentrant variant,
# which (among other things) gives **no gradients at all** to the parameters inside a
# region whose input does not require grad, as the model's input does not.
# `torch.utils.checkpoint.checkpoint_sequential` exists too, but it does not checkpoint
# its last segment, and its argument is the number of segments, not their length; here
# every region, the last included, is checkpointed.

# %% [markdown]
# ## 2. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student
# id. On JupyterHub that is your hub user name; working on your own machine, start
# Jupyter with `JUPYTERHUB_USER=<your course id> jupyter lab` so that you see the same
# variant the grader uses. Editing this cell does not change what you are graded on.
#
# A variant is a stack of `n_layers` blocks of width `d`, an input of `batch` sequences
# of `seq` tokens, and `segment`, the number of consecutive blocks per checkpointed region.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import sympy as sp

B, s, d, L = sp.symbols("B s d L", positive=True)

VARIANTS = {
    "A": {"n_layers": 6, "d": 32, "batch": 2, "seq": 16, "segment": 1, "seed": 1},
    "B": {"n_layers": 8, "d": 24, "batch": 4, "seq": 8, "segment": 2, "seed": 2},
    "C": {"n_layers": 9, "d": 16, "batch": 2, "seq": 32, "segment": 3, "seed": 3},
    "D": {"n_layers": 10, "d": 20, "batch": 3, "seq": 10, "segment": 4, "seed": 4},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"practice:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ## 3. The model and the probes (given)
#
# A `Block` is the MLP half of a pre-LayerNorm transformer layer,
# $x + W_2\,\mathrm{gelu}(W_1\,\mathrm{LN}(x))$ with a hidden width of $4d$, in float32.
# `make_stack` builds $L$ of them with seeded weights and an input of shape
# $(B, s, d)$; the loss is the mean of the squared output. The grader calls
# `saved_probe` and `grad_probe` on hidden shapes. `grad_probe` also counts how many
# times a block's forward runs, and checks that your checkpointed gradients equal
# the plain ones bit for bit. Do not edit this cell; it is replaced by this version
# when your notebook is graded.

# %% nbgrader={"grade": false, "grade_id": "harness", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import torch
import torch.nn.functional as F


# chapter: include graders.problems.practice.p3_activation_checkpointing.Block


# chapter: include graders.problems.practice.p3_activation_checkpointing.make_stack


def loss_of(h):
    return h.pow(2).mean()


def saved_probe(n_layers, d, batch, seq, segment, seed):
    """[count, bytes] of the activations saved by one forward pass (called by the grader)."""
    blocks, x = make_stack(n_layers, d, batch, seq, seed)
    count, nbytes = saved_tensor_stats(lambda: loss_of(run_blocks(blocks, x, segment)), blocks.parameters())
    return [int(count), int(nbytes)]


def grad_probe(n_layers, d, batch, seq, segment, seed):
    """[block forward calls, 1 if the gradients equal the plain run's, gradients] (called by the grader)."""
    blocks, x = make_stack(n_layers, d, batch, seq, seed)
    calls = [0]

    def count_call(module, args):
        calls[0] += 1

    hooks = [b.register_forward_pre_hook(count_call) for b in blocks]
    loss_of(run_blocks(blocks, x, segment)).backward()
    for hook in hooks:
        hook.remove()
    grads = torch.cat([p.grad.flatten() for p in blocks.parameters()])
    blocks.zero_grad(set_to_none=True)
    loss_of(run_blocks(blocks, x, 0)).backward()
    plain = torch.cat([p.grad.flatten() for p in blocks.parameters()])
    return [calls[0], int(torch.equal(grads, plain)), grads.tolist()]


# %% [markdown]
# ## 4. Build it
#
# Write
#
# - `run_blocks(blocks, x, segment)`: apply the blocks in order. With `segment == 0`
#   call them plainly; otherwise split them into consecutive regions of `segment`
#   blocks (the last may be shorter) and run each region through one
#   `checkpoint(..., use_reentrant=False)` call;
# - `saved_tensor_stats(fn, parameters)`: call `fn()` under `saved_tensors_hooks` and
#   return `(count, nbytes)` of the saved tensors, leaving out those on a parameter's
#   storage. `parameters` may be a generator.

# %% nbgrader={"grade": false, "grade_id": "answer_functions", "locked": false, "schema_version": 3, "solution": true, "task": false}
from torch.utils.checkpoint import checkpoint


def run_blocks(blocks, x, segment):
    """The stack, each run of `segment` blocks checkpointed as one region (0: no checkpointing)."""
    ### BEGIN SOLUTION
    blocks = list(blocks)
    if segment == 0:
        for block in blocks:
            x = block(x)
        return x

    def region(chunk):
        def forward(h):
            for block in chunk:
                h = block(h)
            return h
        return forward

    for start in range(0, len(blocks), segment):
        x = checkpoint(region(blocks[start:start + segment]), x, use_reentrant=False)
    return x
    ### END SOLUTION


def saved_tensor_stats(fn, parameters):
    """(count, bytes) of the tensors saved for backward while fn() runs, weights left out."""
    ### BEGIN SOLUTION
    weight_storages = {p.untyped_storage().data_ptr() for p in parameters}
    saved = []

    def pack(t):
        saved.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    activations = [t for t in saved if t.untyped_storage().data_ptr() not in weight_storages]
    return len(activations), sum(t.numel() * t.element_size() for t in activations)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_functions", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the hidden tests run the probes on hidden shapes and compare with the reference.
import numbers

_count, _nbytes = saved_probe(2, 8, 1, 4, 0, 0)
assert isinstance(_count, numbers.Integral) and isinstance(_nbytes, numbers.Integral)
_calls, _same, _grads = grad_probe(2, 8, 1, 4, 1, 0)
assert _calls >= 2 and _same in (0, 1)
assert len(_grads) == 2 * (2 * 8 + 8 * 32 + 32 + 32 * 8 + 8), "one gradient per weight"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p3-activation-checkpointing", "check_functions", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 5. Look inside one block
#
# Not graded, but worth a minute: the inventory of a single block, tensor by tensor.
# Work out which operation saved each one.

# %%
_blocks, _x = make_stack(1, 8, 2, 4, 0)
_weights = {p.untyped_storage().data_ptr() for p in _blocks.parameters()}
_saved = []


def _pack(t):
    _saved.append(t)
    return t


with torch.autograd.graph.saved_tensors_hooks(_pack, lambda t: t):
    loss_of(_blocks[0](_x))
for _t in _saved:
    _kind = "weight storage" if _t.untyped_storage().data_ptr() in _weights else "activation"
    print(f"{str(tuple(_t.shape)):>12}  {str(_t.dtype):14} {_t.numel() * _t.element_size():>6} bytes  "
          f"{_kind}{'  (an nn.Parameter)' if isinstance(_t, torch.nn.Parameter) else ''}")

# %% [markdown]
# ## 6. Derive
#
# From the inventory, write `bytes_plain_expr`: the bytes of activations saved by one
# forward pass of the whole stack **without** checkpointing, loss included, as a sympy
# expression in `B` (batch), `s` (sequence length), `d` (width) and `L` (blocks); the
# symbols are defined in the setup cell. (Korthikanti et al.'s Table 2 does the same
# count for a whole transformer layer in 16-bit: $sbh(34 + 5as/h)$ bytes.)

# %% nbgrader={"grade": false, "grade_id": "answer_expr", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
per_block_elements = B * s * d + 2 * B * s + B * s * d + 4 * B * s * d + 4 * B * s * d
# LN input, LN mean and rstd, LN output (fc1's input), fc1 output (GELU's input), GELU output (fc2's input)
loss_elements = B * s * d          # pow saves the last output
bytes_plain_expr = sp.expand(4 * (L * per_block_elements + loss_elements))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expr", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the expression is checked when your notebook is graded.
assert isinstance(bytes_plain_expr, sp.Expr), "bytes_plain_expr should be a sympy expression"
assert {x.name for x in bytes_plain_expr.free_symbols} <= {x.name for x in (B, s, d, L)}, "use only the symbols B, s, d and L"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p3-activation-checkpointing", "check_expr", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 7. Measure your variant
#
# With your functions, on your variant's stack (`make_stack` with its numbers), report
# - `count_plain`, `bytes_plain`: the saved activations without checkpointing (`segment` 0);
# - `count_ckpt`, `bytes_ckpt`: the same with your variant's `segment`;
# - `memory_ratio`: `bytes_ckpt / bytes_plain`;
# - `forward_calls_ckpt`: how many times a block's forward is called in one forward and
#   backward pass with checkpointing, as `grad_probe` counts calls: a call is counted when it
#   starts (a forward pre-hook), whether or not the recomputation runs it to its end.
#
# Check that your measured `bytes_plain` agrees with your expression.

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_shape = (params["n_layers"], params["d"], params["batch"], params["seq"])
count_plain, bytes_plain = saved_probe(*_shape, 0, params["seed"])
count_ckpt, bytes_ckpt = saved_probe(*_shape, params["segment"], params["seed"])
memory_ratio = bytes_ckpt / bytes_plain
forward_calls_ckpt = grad_probe(*_shape, params["segment"], params["seed"])[0]
print("expression gives", bytes_plain_expr.subs({B: params["batch"], s: params["seq"], d: params["d"],
                                                 L: params["n_layers"]}), "| measured", bytes_plain)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 6, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
import numbers

for _name in ("count_plain", "bytes_plain", "count_ckpt", "bytes_ckpt", "forward_calls_ckpt"):
    assert isinstance(globals()[_name], numbers.Integral), f"{_name} is a count (an int)"
assert isinstance(memory_ratio, numbers.Real) and 0 < memory_ratio, "memory_ratio is a positive number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p3-activation-checkpointing", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 8. The trade, for every segment length
#
# What is saved at the end of the forward pass falls as the regions get longer. But
# during the backward pass one region at a time is recomputed, and its activations are
# held while it is differentiated, so the peak is roughly the region inputs plus one
# region's full activations. The figure measures the first and estimates the second for
# your variant's stack; their sum is smallest for regions of a few blocks, which is
# Chen et al.'s $\sqrt{n}$ rule at this scale. Every checkpointed block costs one extra
# forward pass, whatever the segment length.

# %%
import math

import matplotlib.pyplot as plt

try:
    _L = params["n_layers"]
    _shape = (params["n_layers"], params["d"], params["batch"], params["seq"])
    _plain = saved_probe(*_shape, 0, params["seed"])[1]
    _per_block = (_plain - 4 * params["batch"] * params["seq"] * params["d"]) / _L
    _ks = list(range(1, _L + 1))
    _stored = [saved_probe(*_shape, k, params["seed"])[1] for k in _ks]
    _peak = [st + k * _per_block for st, k in zip(_stored, _ks)]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    ax.axhline(_plain, color="k", ls="--", lw=1, label="no checkpointing")
    ax.plot(_ks, _stored, "o-", label="saved at the end of the forward pass (measured)")
    ax.plot(_ks, _peak, "s-", label="+ one region recomputed (estimated peak)")
    ax.axvline(math.sqrt(_L), color="C2", lw=1, label="segment = sqrt(L)")
    ax.set_xlabel("blocks per checkpointed region (segment)")
    ax.set_ylabel("bytes")
    ax.legend(fontsize=8)
    fig.tight_layout()
    plt.show()
except NotImplementedError:
    print("Write run_blocks and saved_tensor_stats above first.")

# %% [markdown]
# ## 9. What the sources print, and what to take away
#
# - Chen et al. (2016) show that keeping only the inputs of $\sqrt{n}$ segments of an
#   $n$-layer network brings the activation memory to $O(\sqrt{n})$ for the price of one
#   extra forward pass per step, which is the $8ND$ instead of $6ND$ of worked problem w2.
# - Korthikanti et al. (2022), Table 2, count $sbh(34 + 5as/h)$ bytes per transformer layer
#   in 16-bit without parallelism, and observe that the $5as/h$ attention term is
#   cheap to recompute but large to store, so recomputing only that part (selective
#   recomputation) keeps most of the saving for a small fraction of the extra FLOPs that
#   full recomputation costs (worked problem w4 computes both ratios).
# - Your measurement is the fp32, MLP-only version of their count. The numbers are
#   exact because autograd's inventory is exact: there is no need to trust a memory
#   profiler to see what a model keeps.
#
# Not graded: measure the reentrant variant (`use_reentrant=True`) on the same stack, once
# as it is and once after `x.requires_grad_()`. What is saved, and which parameters get
# gradients?
