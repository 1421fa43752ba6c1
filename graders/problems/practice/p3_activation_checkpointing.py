"""p3-activation-checkpointing: what autograd saves, measured, with and without checkpointing.

The model is a stack of L pre-LayerNorm MLP blocks, x + W2 gelu(W1 LN(x)) with
a 4d hidden layer (a transformer layer's MLP half), in float32, on inputs of B
sequences of s tokens, width d; the loss is mean(h**2) of the last output. The
student writes
- `run_blocks(blocks, x, segment)`: the stack, with each run of `segment`
  consecutive blocks wrapped in one `torch.utils.checkpoint.checkpoint(...,
  use_reentrant=False)` (segment 0: no checkpointing);
- `saved_tensor_stats(fn, parameters)`: run fn() under
  `torch.autograd.graph.saved_tensors_hooks` and return (count, bytes) of the
  tensors packed for backward, leaving out those that share a parameter's
  storage (Linear saves a transposed view of its weight, which is not an
  nn.Parameter object but is the weight's memory).
The hidden tests call both, through the notebook's locked probes, on hidden
shapes and compare with the same measurement made here with the reference
functions; the gradient probe compares gradients and the number of block
forward calls (checkpointing runs each checkpointed block twice).

What the measurement gives, per block, without checkpointing (each a float32
tensor): LayerNorm's input (Bsd), its mean and rstd (Bs each), the normalised
input that fc1 saves (Bsd), fc1's output that GELU saves (4Bsd) and GELU's
output that fc2 saves (4Bsd): 4Bs(10d + 2) bytes, plus the 4Bsd of the final
output that the loss saves. With checkpointing only each region's input is
saved. This is the fp32, MLP-only, no-dropout analogue of Korthikanti et al.
2022 (Table 2, sbh(34 + 5as/h) bytes per layer in 16-bit with attention and
dropout); the selective/full recomputation trade-off is Chen et al. 2016.
"""
from __future__ import annotations

import copy
import json
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from graders.numeric import Count, Number, Outputs
from graders.problem import Mistake, Probe, Problem, one_torch_thread, seed_for
from graders.symbolic import Expr, symbols_for

ARGS = ("n_layers", "d", "batch", "seq", "segment", "seed")
FP32 = 4


# --- the harness: identical to the locked cell of the notebook (a test checks it) ------

class Block(torch.nn.Module):
    """A pre-LayerNorm MLP block of a transformer layer: x + fc2(gelu(fc1(norm(x))))."""

    def __init__(self, d):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, 4 * d)
        self.fc2 = torch.nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


def make_stack(n_layers, d, batch, seq, seed):
    """L blocks of width d with seeded weights, and an input of shape (batch, seq, d)."""
    gen = torch.Generator().manual_seed(int(seed))
    blocks = torch.nn.ModuleList([Block(int(d)) for _ in range(int(n_layers))])
    with torch.no_grad():
        for p in blocks.parameters():
            p.copy_(0.2 * torch.randn(p.shape, generator=gen))
    x = torch.randn(int(batch), int(seq), int(d), generator=gen)
    return blocks, x


def loss_of(h):
    return h.pow(2).mean()


# --- the reference (and the mistakes, as `kind`) ------------------------------------------

def reference_run_blocks(blocks, x, segment, kind=None):
    """The stack, with each run of `segment` blocks checkpointed as one region."""
    blocks = list(blocks)
    if segment == 0:
        chunks = [(blocks, False)]
    else:
        chunks = [(blocks[i:i + segment], True) for i in range(0, len(blocks), segment)]
        if kind == "last-segment-plain":            # what checkpoint_sequential does
            chunks[-1] = (chunks[-1][0], False)

    def run(chunk):
        def forward(h):
            for block in chunk:
                h = block(h)
            return h
        return forward

    h = x
    for chunk, wrapped in chunks:
        h = checkpoint(run(chunk), h, use_reentrant=False) if wrapped else run(chunk)(h)
    return h


def reference_saved_stats(fn, parameters, kind=None):
    """(count, bytes) of the tensors saved for backward while fn() runs, parameters left out."""
    parameters = list(parameters)
    storages = {p.untyped_storage().data_ptr() for p in parameters}
    packed = []

    def pack(t):
        packed.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    if kind == "no-parameter-filter":
        kept = packed
    elif kind == "isinstance-parameter":
        kept = [t for t in packed if not isinstance(t, torch.nn.Parameter)]
    else:
        kept = [t for t in packed if t.untyped_storage().data_ptr() not in storages]
    size = 2 if kind == "sixteen-bit-bytes" else None
    return len(kept), sum(t.numel() * (size or t.element_size()) for t in kept)


def measure(q: dict, kind=None):
    """[count, bytes] of one configuration, as the notebook's saved_probe returns it."""
    blocks, x = make_stack(q["n_layers"], q["d"], q["batch"], q["seq"], q["seed"])
    count, nbytes = reference_saved_stats(
        lambda: loss_of(reference_run_blocks(blocks, x, int(q["segment"]), kind)), blocks.parameters(), kind)
    return [count, nbytes]


def gradients(q: dict, kind=None, checkpointed=True):
    """[block forward calls, 1 if the gradients equal the plain run's bit for bit, gradients]."""
    blocks, x = make_stack(q["n_layers"], q["d"], q["batch"], q["seq"], q["seed"])
    calls = [0]

    def count_call(module, args):
        calls[0] += 1

    hooks = [b.register_forward_pre_hook(count_call) for b in blocks]
    loss_of(reference_run_blocks(blocks, x, int(q["segment"]) if checkpointed else 0, kind)).backward()
    for hook in hooks:
        hook.remove()
    grads = torch.cat([p.grad.flatten() for p in blocks.parameters()])
    blocks.zero_grad(set_to_none=True)
    loss_of(reference_run_blocks(blocks, x, 0)).backward()
    plain = torch.cat([p.grad.flatten() for p in blocks.parameters()])
    return [calls[0], int(torch.equal(grads, plain)), grads.tolist()]


def _validate(q: dict) -> None:
    for key in ARGS:
        if int(q[key]) != q[key] or q[key] < 0:
            raise ValueError(f"{key} must be a non-negative whole number")
    if not (1 <= q["n_layers"] <= 64 and 1 <= q["d"] <= 256 and q["batch"] >= 1 and q["seq"] >= 1):
        raise ValueError("n_layers, d, batch and seq must be positive (and small)")
    if q["segment"] > q["n_layers"]:
        raise ValueError("segment cannot exceed n_layers")


@lru_cache(maxsize=256)
def _cached(what, kind, text):
    q = json.loads(text)
    _validate(q)
    with one_torch_thread():
        if what == "measure":
            return measure(q, kind)
        return gradients(q, kind)


def cached(what, q, kind=None):
    return copy.deepcopy(_cached(what, kind, json.dumps(q, sort_keys=True)))


def probe_calls(params: dict) -> list:
    """Hidden calls [n_layers, d, batch, seq, segment, seed]: plain and checkpointed, with
    segments that leave a shorter last region."""
    rng = np.random.default_rng(seed_for(params, "p3-activation-checkpointing"))
    calls = []
    for n_layers, segment in ((int(rng.integers(3, 6)), 0), (5, 1), (5, 2), (7, 3), (4, 4)):
        calls.append([n_layers, int(rng.choice([8, 12, 16])), int(rng.integers(1, 4)),
                      int(rng.choice([4, 6, 10])), segment, int(rng.integers(0, 10_000))])
    return calls


def _symbols():
    return symbols_for(("B", "s", "d", "L"))


def bytes_plain_expr(no_ln_stats=False, no_loss=False, element=FP32):
    S = _symbols()
    B, s, d, L = S["B"], S["s"], S["d"], S["L"]
    per_layer = 10 * d + (0 if no_ln_stats else 2)
    return element * B * s * (L * per_layer + (0 if no_loss else d))


def _answers(q: dict, kind=None):
    plain = cached("measure", dict(q, segment=0), kind)
    ckpt = cached("measure", q, kind)
    grads = cached("gradients", q, kind)
    return {
        "count_plain": plain[0], "bytes_plain": plain[1],
        "count_ckpt": ckpt[0], "bytes_ckpt": ckpt[1],
        "memory_ratio": ckpt[1] / plain[1],
        "forward_calls_ckpt": grads[0],
    }


def _mistake(kind, keys, probe=True):
    def wrong(q):
        out = {k: v for k, v in _answers(q, kind).items() if k in keys}
        if probe:
            out["saved_probe"] = [cached("measure", dict(zip(ARGS, c)), kind) for c in probe_calls(q)]
        if kind == "last-segment-plain":
            out["grad_probe"] = [cached("gradients", dict(zip(ARGS, c)), kind) for c in probe_calls(q)]
        if kind == "sixteen-bit-bytes":
            out["bytes_plain_expr"] = bytes_plain_expr(element=2)
        return out
    return wrong


class CheckpointingProblem(Problem):
    id = "p3-activation-checkpointing"
    title = "Activation checkpointing, measured"
    strand = "practice"
    kind = "practice"
    assignment = "practice"
    symbols = ("B", "s", "d", "L")
    variants = {
        "A": {"n_layers": 6, "d": 32, "batch": 2, "seq": 16, "segment": 1, "seed": 1},
        "B": {"n_layers": 8, "d": 24, "batch": 4, "seq": 8, "segment": 2, "seed": 2},
        "C": {"n_layers": 9, "d": 16, "batch": 2, "seq": 32, "segment": 3, "seed": 3},
        "D": {"n_layers": 10, "d": 20, "batch": 3, "seq": 10, "segment": 4, "seed": 4},
    }
    checks = {
        "saved_probe": Outputs(rtol=0.0, atol=0.0, points=2.0),
        "grad_probe": Outputs(rtol=1e-5, atol=1e-7, points=2.0),
        "count_plain": Count(),
        "bytes_plain": Count(),
        "count_ckpt": Count(),
        "bytes_ckpt": Count(),
        "memory_ratio": Number(rtol=1e-9),
        "forward_calls_ckpt": Count(),
        "bytes_plain_expr": Expr(symbols=("B", "s", "d", "L")),
    }
    cells = {
        "check_functions": ("saved_probe", "grad_probe"),
        "check_numbers": ("count_plain", "bytes_plain", "count_ckpt", "bytes_ckpt", "memory_ratio",
                          "forward_calls_ckpt"),
        "check_expr": ("bytes_plain_expr",),
    }

    def probes(self, params):
        calls = probe_calls(params)
        return {"saved_probe": Probe(function="saved_probe", calls=calls),
                "grad_probe": Probe(function="grad_probe", calls=calls)}

    def solve(self, params):
        _validate(params)
        if params["segment"] < 1:
            raise ValueError("the variant's segment must be at least 1")
        calls = [dict(zip(ARGS, c)) for c in probe_calls(params)]
        return {
            **_answers(params),
            "saved_probe": [cached("measure", q) for q in calls],
            "grad_probe": [cached("gradients", q) for q in calls],
            "bytes_plain_expr": bytes_plain_expr(),
        }

    mistakes = (
        Mistake(
            "no-parameter-filter",
            "the weights were counted as saved activations; every layer saves its weights for the "
            "backward pass, but they live in memory anyway, so tensors sharing a parameter's storage "
            "are left out.",
            _mistake("no-parameter-filter", ("count_plain", "bytes_plain", "memory_ratio")),
            instant="which saved tensors are parameters that live in memory anyway.",
        ),
        Mistake(
            "isinstance-parameter",
            "parameters were recognised with isinstance(t, nn.Parameter); Linear saves a transposed "
            "view of its weight, which is a plain tensor on the weight's storage. Compare storages "
            "(t.untyped_storage().data_ptr()).",
            _mistake("isinstance-parameter", ("count_plain", "bytes_plain", "memory_ratio")),
            instant="how a saved view of a weight is recognised.",
        ),
        Mistake(
            "sixteen-bit-bytes",
            "the bytes were counted at 2 per element; this model runs in float32, 4 bytes per element "
            "(t.element_size() says so). The 16-bit figure is for mixed-precision activations.",
            _mistake("sixteen-bit-bytes", ("bytes_plain", "bytes_ckpt")),
            instant="the element size of this model's tensors.",
        ),
        Mistake(
            "last-segment-plain",
            "the last segment was run without checkpointing, as torch.utils.checkpoint."
            "checkpoint_sequential does; here every segment, the last included, is checkpointed.",
            _mistake("last-segment-plain", ("count_ckpt", "bytes_ckpt", "memory_ratio",
                                            "forward_calls_ckpt")),
            instant="which segments are checkpointed.",
        ),
        Mistake(
            "ratio-inverted",
            "the ratio was taken the wrong way up; memory_ratio is the checkpointed bytes divided by "
            "the plain bytes.",
            lambda q: {"memory_ratio": 1.0 / _answers(q)["memory_ratio"]},
            instant="the definition of memory_ratio.",
        ),
        Mistake(
            "no-layernorm-stats",
            "LayerNorm's saved mean and reciprocal standard deviation (one number per token each) "
            "were left out of the expression.",
            lambda q: {"bytes_plain_expr": bytes_plain_expr(no_ln_stats=True)},
            instant="what LayerNorm saves for its backward pass.",
        ),
        Mistake(
            "no-loss-term",
            "the output saved by the loss (one more B*s*d tensor) was left out of the expression.",
            lambda q: {"bytes_plain_expr": bytes_plain_expr(no_loss=True)},
            instant="what the loss saves for its backward pass.",
        ),
    )


PROBLEM = CheckpointingProblem()
