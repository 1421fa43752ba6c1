"""b04-step: optimiser steps, micro-steps, and the tokens behind a step count.

A step is one update of the weights. With gradient accumulation each of the P
data-parallel replicas runs B / (b·P) forward-backward passes (micro-steps) of b
sequences before the step, so after k steps

    micro_steps = k · B / (b·P)   (on each replica),   tokens_seen = k · B · T.

Training logs count both: TinyLlama's pretrain/tinyllama.py prints "iter" (micro-
steps) next to "step" (optimiser steps), and schedules it by iters.

Sources for the variants (checkpoint names and READMEs print the tokens):
- A, Pythia-12B (EleutherAI/pythia models/12B/pythia-12b.yml: micro-batch 8,
  gradient_accumulation_steps 2, 256 GPUs / model-parallel 4 = 64 replicas,
  seq-length 2048, train-iters 143000). README: "Each model saw 299,892,736,000
  ~= 299.9B tokens".
- B, TinyLlama (jzhang38/TinyLlama pretrain/tinyllama.py: micro_batch_size 8,
  64 sequences per device, 16 A100s, block 2048): checkpoint
  "TinyLlama-1.1B-intermediate-step-240k-503b".
- C, GPT-NeoX-20B (configs/20B.yml: micro-batch 4, gradient_accumulation_steps
  32, 96 GPUs / (TP 2 x PP 4) = 12 replicas, train-iters 150000).
- D, GPT-2 124M in karpathy/build-nanogpt (64 x 1024 per GPU, 8 GPUs,
  total_batch_size 524288, max_steps 19073, "~1 epoch, if data is 10B tokens").
"""
import math

from graders.numeric import Count
from graders.problem import Mistake, Problem
from graders.symbolic import Expr, symbols_for

EXPR_SYMBOLS = ("k", "B", "b", "P")     # k: optimiser steps taken; b: micro-batch (sequences)


def _whole(q, name):
    value = q[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value != int(value) or value < 1:
        raise ValueError(f"{name} must be a whole number >= 1, not {value!r}")
    return int(value)


def _read(q):
    v = {name: _whole(q, name) for name in ("B", "T", "micro_batch", "P", "steps")}
    per_round = v["micro_batch"] * v["P"]
    if v["B"] % per_round:
        raise ValueError(f"B = {v['B']} is not divisible by micro_batch * P = {per_round}")
    v["accumulation"] = v["B"] // per_round
    return v


def _answers(q):
    v = _read(q)
    s = symbols_for(EXPR_SYMBOLS)
    return {
        "micro_steps": v["steps"] * v["accumulation"],
        "tokens_seen": v["steps"] * v["B"] * v["T"],
        "micro_steps_expr": s["k"] * s["B"] / (s["b"] * s["P"]),
    }


class StepProblem(Problem):
    id = "b04-step"
    title = "Step: optimiser steps, micro-steps and tokens seen"
    strand = "basics"
    kind = "basics"
    assignment = "basics"
    symbols = EXPR_SYMBOLS
    variants = {
        "A": {"B": 1024, "T": 2048, "micro_batch": 8, "P": 64, "steps": 143_000},   # Pythia-12B
        "B": {"B": 1024, "T": 2048, "micro_batch": 8, "P": 16, "steps": 240_000},   # TinyLlama
        "C": {"B": 1536, "T": 2048, "micro_batch": 4, "P": 12, "steps": 150_000},   # GPT-NeoX-20B
        "D": {"B": 512, "T": 1024, "micro_batch": 64, "P": 8, "steps": 19_073},     # build-nanogpt
    }
    checks = {
        "micro_steps_expr": Expr(symbols=EXPR_SYMBOLS),
        "micro_steps": Count(),
        "tokens_seen": Count(),
    }
    cells = {
        "check_expr": ("micro_steps_expr",),
        "check_numbers": ("micro_steps", "tokens_seen"),
    }

    def solve(self, params):
        """Reference answers; ValueError when B is not a multiple of micro_batch * P."""
        return _answers(params)

    mistakes = (
        Mistake(
            "micro-steps-as-steps",
            "every micro-step was counted as a full step of B sequences; the replicas' micro-steps "
            "together make up one step, so tokens seen are k·B·T.",
            lambda q: (lambda v: {"tokens_seen": v["steps"] * v["accumulation"] * v["B"] * v["T"]}
                       if v["accumulation"] > 1 else {})(_read(q)),
            instant="what one micro-step contributes to a step.",
        ),
        Mistake(
            "one-micro-batch-per-step",
            "one micro-batch of b sequences was counted per step; a step consumes the whole batch "
            "of B sequences across all replicas.",
            lambda q: (lambda v: {"tokens_seen": v["steps"] * v["micro_batch"] * v["T"]})(_read(q)),
            instant="the data one optimiser step consumes across all replicas.",
        ),
        Mistake(
            "micro-steps-ignore-replicas",
            "the micro-steps ignored the data-parallel replicas: each replica runs only its B / P "
            "sequences, so k·B / (b·P) micro-steps, not k·B / b.",
            lambda q: (lambda v, s: {"micro_steps": v["steps"] * v["B"] // v["micro_batch"],
                                     "micro_steps_expr": s["k"] * s["B"] / s["b"]}
                       )(_read(q), symbols_for(EXPR_SYMBOLS)),
            instant="each replica's share of the batch.",
        ),
        Mistake(
            "micro-steps-are-steps",
            "the micro-step count was taken to equal the step count; with gradient accumulation "
            "each step is B / (b·P) micro-steps on every replica.",
            lambda q: (lambda v: {"micro_steps": v["steps"]} if v["accumulation"] > 1 else {})(_read(q)),
            instant="gradient accumulation within each optimiser step.",
        ),
    )


PROBLEM = StepProblem()
