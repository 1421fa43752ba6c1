"""b10-checkpoint: what a full training checkpoint holds, and how many bytes it is.

The term. A training checkpoint is everything needed to continue the run as if it had never
stopped: the weights (fp32, the master copy in mixed precision), the optimizer's state
(per-parameter moments or momentum buffers, and step counts), the learning-rate scheduler's
state, the random number generators' states, and the position in the data. A GradScaler's
state (loss scale, growth tracker) belongs to it when fp16 is trained with one. Gradients,
activations and the 16-bit copy of the weights are not saved: a checkpoint is taken between
steps, when the first two do not exist, and the third is a cast of the fp32 weights. This is
the chapter's definition (graders.definitions.CHECKPOINT, printed in b10, e06 and p6): the
16-bit copy is saved only when the checkpoint must also load as a model without its
optimiser, as DeepSpeed's and Megatron-LM's do (14 bytes per parameter with Adam, not 12).

Sizes (tensor bytes only; the scheduler's and data position's few numbers are ignored):
- torch.optim.AdamW keeps exp_avg and exp_avg_sq (fp32) and a 0-dim float32 `step` tensor per
  parameter tensor; torch.optim.RMSprop with momentum keeps square_avg, momentum_buffer and
  `step`; torch.optim.SGD with momentum keeps momentum_buffer only.
- A model of N parameters therefore checkpoints as N * (4 + 4 * states) bytes plus 4 bytes per
  parameter tensor for the step counters.
For the tiny model the count is exact: torch.save writes each storage as one zip entry
`archive/data/<k>`, so the entries' sizes add up to the tensor payload (the tests check it).

Variants (parameter counts as published):
- A: GPT-2 XL, 1,557,611,200 parameters (the count of the released checkpoint, 48 layers of
  width 1600, vocabulary 50257, 1024 positions, tied output head), trained here with AdamW in
  fp16 with a GradScaler. (Radford et al. 2019, Table 2, print "1542M" for this model.)
- B: ResNet-50, 25,557,032 parameters (torchvision's count), SGD with momentum 0.9 (He et al.
  2016), trained here in fp16 with a GradScaler.
- C: Llama 2 7B, 6,738,415,616 parameters (the released checkpoint's count), AdamW, bf16.
- D: EfficientNet-B4, 19 million parameters (Tan and Le 2019, Table 2: 19M), RMSprop with
  decay 0.9 and momentum 0.9 (section 5.2), trained here in bf16.
"""
from __future__ import annotations

import math

from graders.numeric import Count, Number, Numbers
from graders.problem import Mistake, Problem
from graders.units import byte_unit_slips

# What might go into a checkpoint; the student answers with the indices that must.
MENU = (
    "the fp32 weights (the master copy)",                       # 0
    "the gradients of the last step",                           # 1
    "the optimizer's state (moments or momentum, step counts)",  # 2
    "the learning-rate scheduler's state",                      # 3
    "the random number generators' states",                     # 4
    "the position in the data (epoch, batch index, shuffle seed)",  # 5
    "the activations saved for the backward pass",              # 6
    "the 16-bit copy of the weights",                           # 7
    "the GradScaler's state (loss scale, growth tracker)",      # 8
)

# optimizer -> (fp32 states per parameter, whether it keeps a step tensor per parameter tensor)
OPTIMIZERS = {"adamw": (2, True), "rmsprop_momentum": (2, True), "sgd_momentum": (1, False)}


def _read(q):
    n = q["N"]
    if isinstance(n, bool) or not isinstance(n, (int, float)) or not math.isfinite(n) or n <= 0:
        raise ValueError("N must be a positive number of parameters")
    if q["optimizer"] not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {sorted(OPTIMIZERS)}")
    if q["precision"] not in ("fp16", "bf16", "fp32"):
        raise ValueError("precision must be 'fp16', 'bf16' or 'fp32'")
    layers = q["tiny_layers"]
    if not isinstance(layers, (list, tuple)) or not layers:
        raise ValueError("tiny_layers must be a non-empty list of [in, out] pairs")
    for pair in layers:
        if len(pair) != 2 or any(isinstance(x, bool) or int(x) != x or x < 1 for x in pair):
            raise ValueError("each tiny layer is [in_features, out_features], positive ints")
    return n, OPTIMIZERS[q["optimizer"]], q["precision"], [(int(a), int(b)) for a, b in layers]


def must_hold(precision):
    return [0, 2, 3, 4, 5] + ([8] if precision == "fp16" else [])


def tiny_counts(layers):
    """(parameters, parameter tensors) of nn.Linear layers with bias."""
    return sum(a * b + b for a, b in layers), 2 * len(layers)


def payload(n, tensors, states, has_step):
    return 4 * n + 4 * states * n + (4 * tensors if has_step else 0)


def _answers(q):
    n, (states, has_step), precision, layers = _read(q)
    tiny_n, tiny_tensors = tiny_counts(layers)
    return {
        "must_hold": must_hold(precision),
        "checkpoint_bytes": (4 + 4 * states) * n,
        "tiny_payload_bytes": payload(tiny_n, tiny_tensors, states, has_step),
    }


# --- what the declared mistakes compute ------------------------------------------------

def _weights_only(q):
    n, _, _, layers = _read(q)
    return {"checkpoint_bytes": 4 * n, "tiny_payload_bytes": 4 * tiny_counts(layers)[0],
            "must_hold": [0]}


def _model_and_optimizer(q):
    return {"must_hold": [0, 2]}


def _everything_in_memory(q):
    n, (states, _), precision, _ = _read(q)
    return {"must_hold": sorted(set(must_hold(precision)) | {1, 6, 7}),
            "checkpoint_bytes": (4 + 4 * states + 4 + 2) * n}


def _no_step_tensors(q):
    _, (states, has_step), _, layers = _read(q)
    if not has_step:   # SGD with momentum keeps no step counter: there is none to leave out
        return {}
    tiny_n, tiny_tensors = tiny_counts(layers)
    return {"tiny_payload_bytes": payload(tiny_n, tiny_tensors, states, False)}


def _scaler_rule_reversed(q):
    _, _, precision, _ = _read(q)
    held = [0, 2, 3, 4, 5]
    return {"must_hold": held if precision == "fp16" else held + [8]}


class CheckpointProblem(Problem):
    id = "b10-checkpoint"
    title = "Checkpoint"
    strand = "basics"
    kind = "basics"
    assignment = "basics"
    variants = {
        "A": {"model": "GPT-2 XL", "N": 1_557_611_200, "optimizer": "adamw", "precision": "fp16",
              "tiny_layers": [[16, 32], [32, 4]]},
        "B": {"model": "ResNet-50", "N": 25_557_032, "optimizer": "sgd_momentum",
              "precision": "fp16", "tiny_layers": [[8, 64], [64, 64], [64, 10]]},
        "C": {"model": "Llama 2 7B", "N": 6_738_415_616, "optimizer": "adamw", "precision": "bf16",
              "tiny_layers": [[32, 48], [48, 48], [48, 32]]},
        "D": {"model": "EfficientNet-B4", "N": 19_000_000, "optimizer": "rmsprop_momentum",
              "precision": "bf16", "tiny_layers": [[12, 24], [24, 24], [24, 24], [24, 6]]},
    }
    checks = {
        "must_hold": Numbers(exact=True),
        "checkpoint_bytes": Number(rtol=1e-3),
        "tiny_payload_bytes": Count(),
    }
    cells = {
        "check_contents": ("must_hold",),
        "check_sizes": ("checkpoint_bytes", "tiny_payload_bytes"),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake(
            "weights-only",
            "only the weights were counted; resuming also needs the optimizer's state: two fp32 "
            "values per weight for AdamW and for RMSprop with momentum, one for SGD with momentum.",
            _weights_only,
            instant="the optimiser's part of a checkpoint.",
        ),
        Mistake(
            "model-and-optimizer-only",
            "weights and optimizer state alone do not resume a run: the schedule, the random "
            "streams and the place in the data must come back too.",
            _model_and_optimizer,
            instant="what resuming a run exactly requires.",
        ),
        Mistake(
            "everything-in-memory",
            "gradients, saved activations and the 16-bit weight copy were included; between "
            "steps the first two do not exist and the third is a cast of the fp32 weights.",
            _everything_in_memory,
            instant="what exists between steps, when a checkpoint is taken.",
        ),
        Mistake(
            "scaler-rule-reversed",
            "the GradScaler belongs to fp16 training: its loss scale must be saved with fp16, "
            "and bf16 needs no loss scaling.",
            _scaler_rule_reversed,
            instant="which precision needs loss scaling.",
        ),
        Mistake(
            "step-tensors-forgotten",
            "the optimizer's per-tensor `step` counters were left out; torch keeps each as a "
            "0-dim float32 tensor, 4 bytes per parameter tensor.",
            _no_step_tensors,
            instant="the optimiser's per-tensor step counters.",
        ),
        *byte_unit_slips(lambda q: {"checkpoint_bytes": _answers(q)["checkpoint_bytes"]},
                         what="the size"),
    )


PROBLEM = CheckpointProblem()
