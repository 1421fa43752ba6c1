"""e01-batching: dataset, batch, epoch, step, and gradient accumulation.

The accounting every training log starts from. A dataset of `dataset_tokens`
tokens is packed into sequences of T tokens (the remainder shorter than T is
dropped); B sequences make one optimiser step; a partial last batch is dropped,
as a data loader with drop_last=True does. The B sequences are spread over P
data-parallel devices, each of which runs micro-batches of `micro_batch`
sequences and accumulates gradients over B / (micro_batch * P) of them before
the step.

Sources for the variants (the configs and papers that print these numbers):
- nanoGPT (Karpathy), config/train_shakespeare_char.py (batch_size 64, block_size
  256, one device) and data/shakespeare_char/readme.md (train.bin has 1,003,854
  tokens); config/train_gpt2.py ("12 batch size * 1024 block size * 5 gradaccum
  * 8 GPUs = 491,520") and data/openwebtext/prepare.py (train has 9,035,582,198
  tokens).
- GPT-3 175B: Brown et al. 2020, Table 2.1 (batch 3.2M tokens, context 2048),
  300B training tokens; trained in Megatron-LM style as in Narayanan et al. 2021,
  Table 1 (175B on 1536 GPUs, tensor-parallel 8 x pipeline-parallel 16, so 12
  data-parallel replicas, batch 1536 sequences).
- Pythia-12B (Biderman et al. 2023; EleutherAI/pythia models/12B/pythia-12b.yml):
  train_micro_batch_size_per_gpu 8, gradient_accumulation_steps 2, 256 GPUs with
  model-parallel size 4, seq-length 2048; the deduplicated Pile holds 207B tokens.
"""
import math

import sympy

from graders.numeric import Count
from graders.problem import Mistake, Problem
from graders.symbolic import Expr, symbols_for

EXPR_SYMBOLS = ("B", "b", "P")   # b: micro-batch size (sequences), as in Megatron-LM papers


def _count(params, name, minimum=1):
    """A whole number from params[name] (an int, or a float that is integral)."""
    value = params[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a whole number, not {type(value).__name__}")
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            raise ValueError(f"{name} must be a whole number, not {value!r}")
        value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, not {value}")
    return value


def accumulation_steps(B, micro_batch, P):
    """Micro-batches each device accumulates per step; ValueError when they cannot tile B."""
    per_round = micro_batch * P
    if B % per_round:
        raise ValueError(
            f"batch size B = {B} sequences is not divisible by micro_batch * P = "
            f"{micro_batch} * {P} = {per_round}: no whole number of accumulation steps "
            f"makes exactly B sequences per step (B / (micro_batch * P) = {B / per_round:.4g}). "
            f"Choose B as a multiple of {per_round}.")
    return B // per_round


def _answers(q, *, drop_partial=True, micro_steps=False, pooled_epochs=False):
    dataset_tokens = _count(q, "dataset_tokens")
    T = _count(q, "T")
    B = _count(q, "B")
    micro_batch = _count(q, "micro_batch")
    P = _count(q, "P")
    epochs = _count(q, "epochs")
    accumulation = accumulation_steps(B, micro_batch, P)
    sequences = dataset_tokens // T                     # packed; the ragged tail is dropped
    per_step = micro_batch * P if micro_steps else B
    if drop_partial:
        steps_per_epoch = sequences // per_step
    else:
        steps_per_epoch = -(-sequences // per_step)
    total = (epochs * sequences) // per_step if pooled_epochs else epochs * steps_per_epoch
    s = symbols_for(EXPR_SYMBOLS)
    return {
        "tokens_per_step": B * T,
        "steps_per_epoch": steps_per_epoch,
        "accumulation_steps": accumulation,
        "total_steps": total,
        "accumulation_expr": s["B"] / (s["b"] * s["P"]),
    }


class BatchingProblem(Problem):
    id = "e01-batching"
    title = "Dataset, batch, epoch, step and gradient accumulation"
    strand = "mathematics"
    kind = "exercise"
    assignment = "exercises"
    symbols = EXPR_SYMBOLS
    variants = {
        # nanoGPT's character-level Shakespeare run: one device, 5000 iterations ~ 80 epochs
        "A": {"dataset_tokens": 1_003_854, "T": 256, "B": 64, "micro_batch": 64, "P": 1, "epochs": 80},
        # GPT-3 175B: 300B tokens, 1536 x 2048 per step, 12 data-parallel replicas, micro-batch 1
        "B": {"dataset_tokens": 300_000_000_000, "T": 2048, "B": 1536, "micro_batch": 1, "P": 12,
              "epochs": 1},
        # nanoGPT's GPT-2 124M on OpenWebText: 12 x 5 x 8 sequences; 600k iterations ~ 32 epochs
        "C": {"dataset_tokens": 9_035_582_198, "T": 1024, "B": 480, "micro_batch": 12, "P": 8,
              "epochs": 32},
        # Pythia-12B on the deduplicated Pile: 8 per GPU x 2 accumulation x 64 replicas
        "D": {"dataset_tokens": 207_000_000_000, "T": 2048, "B": 1024, "micro_batch": 8, "P": 64,
              "epochs": 1},
    }
    checks = {
        "tokens_per_step": Count(),
        "steps_per_epoch": Count(),
        "accumulation_steps": Count(),
        "total_steps": Count(),
        "accumulation_expr": Expr(symbols=EXPR_SYMBOLS),
    }
    cells = {
        "check_expr": ("accumulation_expr",),
        "check_numbers": ("tokens_per_step", "steps_per_epoch", "accumulation_steps", "total_steps"),
    }

    def solve(self, params):
        """Reference answers; ValueError when B is not a multiple of micro_batch * P."""
        return _answers(params)

    mistakes = (
        Mistake(
            "kept-partial-batch",
            "the last, partial batch was counted as a step; the loader drops it, so round the "
            "number of batches per epoch down, not up.",
            lambda q: {k: v for k, v in _answers(q, drop_partial=False).items()
                       if k in ("steps_per_epoch", "total_steps")},
            instant="what the loader does with a batch it cannot fill.",
        ),
        Mistake(
            "accumulation-ignores-devices",
            "the accumulation count ignored the P data-parallel devices: each of them "
            "contributes micro_batch sequences per micro-step, so one step needs B / (b·P) "
            "micro-steps, not B / b.",
            lambda q: {"accumulation_steps": _count(q, "B") // _count(q, "micro_batch"),
                       "accumulation_expr": sympy.Symbol("B", positive=True)
                       / sympy.Symbol("b", positive=True)},
            instant="the data-parallel devices that share each accumulation round.",
        ),
        Mistake(
            "micro-batch-tokens",
            "the tokens of one micro-batch (one forward pass on one device) were counted, "
            "not the tokens of the whole optimiser step (B sequences of T tokens).",
            lambda q: _if_micro_batch_smaller(q, lambda: {
                "tokens_per_step": _count(q, "micro_batch") * _count(q, "T")}),
            instant="what one optimiser step consumes across all devices and passes.",
        ),
        Mistake(
            "counted-micro-steps",
            "forward/backward passes were counted as steps; the optimiser steps once per B "
            "sequences, after all the accumulated micro-batches.",
            lambda q: _if_accumulating(q, lambda: {
                k: v for k, v in _answers(q, micro_steps=True).items()
                if k in ("steps_per_epoch", "total_steps")}),
            instant="which event counts as an optimiser step.",
        ),
        Mistake(
            "pooled-epochs",
            "the partial batch was dropped once for the whole run; it is dropped at the end "
            "of every epoch, so the total is epochs times the steps of one epoch.",
            # a one-epoch run drops its partial batch once either way: nothing to pool
            lambda q: {} if _count(q, "epochs") == 1
            else {"total_steps": _answers(q, pooled_epochs=True)["total_steps"]},
            instant="where each epoch ends.",
        ),
    )


def _if_micro_batch_smaller(q, wrong):
    """`wrong()` where one micro-batch is a proper part of the batch; {} where one device's
    single pass is the whole batch (micro_batch == B: no smaller unit to count instead)."""
    return {} if _count(q, "micro_batch") == _count(q, "B") else wrong()


def _if_accumulating(q, wrong):
    """`wrong()` where a step takes several rounds of passes; {} where one round of P passes
    is the step (micro_batch * P == B: no accumulation, passes and steps coincide)."""
    return {} if _count(q, "micro_batch") * _count(q, "P") == _count(q, "B") else wrong()


PROBLEM = BatchingProblem()
