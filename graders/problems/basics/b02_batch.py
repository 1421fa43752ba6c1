"""b02-batch: a batch in sequences and in tokens, split over data-parallel replicas.

The batch B is the number of sequences whose gradients are averaged into one
optimiser step; B·T is the same batch in tokens, the unit papers quote. A large
run splits its `gpus` into model-parallel groups (tensor parallel × pipeline
parallel) that together hold one copy of the model; the number of copies is the
data-parallel degree P = gpus / (tensor_parallel · pipeline_parallel). Each
replica takes B / P sequences per step, in micro-batches of b sequences, so it
runs B / (b·P) micro-batches (gradient accumulation, or a pipeline's micro-batches).

Sources for the variants:
- A, BLOOM-176B: bigscience-workshop/bigscience, train/tr11-176B-ml/tr11-176B-ml.slurm
  (48 nodes x 8 GPUs, TP_SIZE=4, PP_SIZE=12, MICRO_BATCH_SIZE=2,
  GLOBAL_BATCH_SIZE=2048 "# 4.2M tokens", SEQ_LEN=2048).
- B, Llama 3 405B: Llama Team 2024, "The Llama 3 Herd of Models", Table 4, first
  row (8,192 GPUs, TP 8, CP 1, PP 16, DP 64, Seq. Len. 8,192, Batch size/DP 32,
  Tokens/Batch 16M). The micro-batch of one sequence is our assumption.
- C, GPT-NeoX-20B: EleutherAI/gpt-neox configs/20B.yml (96 GPUs,
  model-parallel-size 2, pipe-parallel-size 4, train_micro_batch_size_per_gpu 4,
  gradient_accumulation_steps 32, seq-length 2048). Black et al. 2022 print "1538
  contexts of 2048 tokens"; the config gives 4 x 32 x 12 = 1536.
- D, GPT-2 124M in karpathy/build-nanogpt train_gpt2.py: total_batch_size 524288
  tokens, micro-batch B = 64 sequences of T = 1024, on 8 GPUs.
"""
import math

from graders.numeric import Count
from graders.problem import Mistake, Problem


def _whole(q, name):
    value = q[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value != int(value) or value < 1:
        raise ValueError(f"{name} must be a whole number >= 1, not {value!r}")
    return int(value)


def _divide(numerator, denominator, what):
    if numerator % denominator:
        raise ValueError(f"{what}: {numerator} is not divisible by {denominator}")
    return numerator // denominator


def _read(q):
    return {k: _whole(q, k) for k in ("B", "T", "micro_batch", "gpus", "tensor_parallel",
                                       "pipeline_parallel")}


def _answers(q, *, replicas=None):
    v = _read(q)
    P = replicas(v) if replicas else _divide(v["gpus"], v["tensor_parallel"] * v["pipeline_parallel"],
                                             "gpus / (tensor_parallel * pipeline_parallel)")
    per_replica = _divide(v["B"], P, "B / P (sequences per data-parallel replica)") if not replicas \
        else v["B"] / P
    accumulation = _divide(per_replica, v["micro_batch"], "micro-batches per replica") \
        if not replicas else per_replica / v["micro_batch"]
    return {
        "tokens_per_batch": v["B"] * v["T"],
        "data_parallel": P,
        "sequences_per_replica": per_replica,
        "accumulation_steps": accumulation,
    }


def _changed(q, answers):
    """Only the keys where a mistake's answer differs from the reference."""
    right = _answers(q)
    return {k: v for k, v in answers.items() if v != right[k]}


class BatchProblem(Problem):
    id = "b02-batch"
    title = "Batch: sequences, tokens, replicas and micro-batches"
    strand = "basics"
    kind = "basics"
    assignment = "basics"
    symbols = ()
    variants = {
        "A": {"B": 2048, "T": 2048, "micro_batch": 2, "gpus": 384, "tensor_parallel": 4,
              "pipeline_parallel": 12},                      # BLOOM-176B
        "B": {"B": 2048, "T": 8192, "micro_batch": 1, "gpus": 8192, "tensor_parallel": 8,
              "pipeline_parallel": 16},                      # Llama 3 405B, first stage
        "C": {"B": 1536, "T": 2048, "micro_batch": 4, "gpus": 96, "tensor_parallel": 2,
              "pipeline_parallel": 4},                       # GPT-NeoX-20B
        "D": {"B": 512, "T": 1024, "micro_batch": 64, "gpus": 8, "tensor_parallel": 1,
              "pipeline_parallel": 1},                       # GPT-2 124M, build-nanogpt
    }
    checks = {
        "tokens_per_batch": Count(),
        "data_parallel": Count(),
        "sequences_per_replica": Count(),
        "accumulation_steps": Count(),
    }
    cells = {
        "check_numbers": ("tokens_per_batch", "data_parallel", "sequences_per_replica",
                          "accumulation_steps"),
    }

    def solve(self, params):
        """Reference answers; ValueError when the GPUs or the batch do not divide evenly."""
        return _answers(params)

    mistakes = (
        Mistake(
            "every-gpu-a-replica",
            "every GPU was counted as a data-parallel replica; the GPUs of one tensor- and "
            "pipeline-parallel group hold one copy of the model between them, so P = gpus / (TP·PP).",
            lambda q: _changed(q, _answers(q, replicas=lambda v: v["gpus"])),
            instant="which GPUs hold one copy of the model between them.",
        ),
        Mistake(
            "forgot-the-pipeline",
            "only the tensor-parallel degree was divided out; the pipeline stages belong to the same "
            "model copy, so divide the GPUs by TP·PP.",
            lambda q: _changed(q, _answers(q, replicas=lambda v: v["gpus"] / v["tensor_parallel"])),
            instant="the pipeline stages that share one model copy.",
        ),
        Mistake(
            "micro-batch-tokens",
            "the tokens of one micro-batch (b sequences on one device) were counted; the batch is all "
            "B sequences of one optimiser step, B·T tokens.",
            lambda q: {"tokens_per_batch": _whole(q, "micro_batch") * _whole(q, "T")},
            instant="the sequences whose gradients one optimiser step averages.",
        ),
        Mistake(
            "accumulation-ignores-replicas",
            "the accumulation count ignored the data-parallel replicas: each replica runs only its "
            "B / P sequences, in micro-batches of b, so B / (b·P) micro-batches, not B / b.",
            lambda q: {"accumulation_steps": _whole(q, "B") // _whole(q, "micro_batch")},
            instant="each replica's share of the batch.",
        ),
    )


PROBLEM = BatchProblem()
