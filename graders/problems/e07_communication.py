"""e07-communication: bytes on the wire for ring all-reduce, ZeRO-3, and the pipeline bubble.

Sources:
- nccl-tests, doc/PERFORMANCE.md: an all-reduce of S bytes over n ranks needs at best
  t = (S/B) * 2(n-1)/n, so the reported bus bandwidth is busbw = algbw * 2(n-1)/n
  (and (n-1)/n for all-gather and reduce-scatter). With a measured busbw, the time of an
  all-reduce is therefore 2(n-1)/n * S / busbw.
- Rajbhandari et al., ZeRO (SC 2020), section 7: plain data parallelism moves 2 Psi per
  step (reduce-scatter + all-gather); P_os+g moves the same 2 Psi; P_os+g+p (stage 3)
  moves 3 Psi (parameter all-gathers in the forward and in the backward pass, plus the
  gradient reduce-scatter), "1.5x compared to the baseline".
- Huang et al., GPipe (NeurIPS 2019), section 2.3: with K partitions and M micro-batches
  the bubble is O((K-1)/(M+K-1)), the idle share of the pipeline's total time.
  Narayanan et al. (SC 2021), section 2.2.1, instead divide the bubble time by the ideal
  time, (p-1)/m: a different ratio for the same schedule.
"""
import math

import sympy

from ..numeric import Number
from ..problem import Mistake, Problem
from ..symbolic import Expr

SYMBOLS = ("K", "M")


def allreduce_bytes(n, bytes_per_grad, p):
    """Bytes each device sends (and receives) in a ring all-reduce of N values over P devices."""
    return 2 * (p - 1) / p * n * bytes_per_grad


def gpipe_bubble(stages, microbatches):
    """Idle share of a GPipe schedule's total time: (K-1)/(M+K-1) (numbers or symbols)."""
    return (stages - 1) / (microbatches + stages - 1)


def _answers(n, bytes_per_grad, p, bus_bandwidth, stages, microbatches):
    k, m = (sympy.Symbol(name, positive=True) for name in SYMBOLS)
    moved = allreduce_bytes(n, bytes_per_grad, p)
    return {
        "allreduce_bytes_per_device": moved,
        "allreduce_seconds": moved / bus_bandwidth,
        "zero3_volume_ratio": 3 / 2,          # 3 Psi against 2 Psi (ZeRO section 7.2.2)
        "bubble_fraction": gpipe_bubble(stages, microbatches),
        "bubble_expr": gpipe_bubble(k, m),
    }


class CommunicationProblem(Problem):
    id = "e07-communication"
    title = "Bytes on the wire: ring all-reduce, ZeRO-3 traffic, the pipeline bubble"
    strand = "mathematics"
    kind = "exercise"
    assignment = "exercises"
    symbols = SYMBOLS
    # bus_bandwidth is the all-reduce bus bandwidth nccl-tests reports at large messages:
    # ~231 GB/s on 8 A100-SXM4 (Azure ND A100 v4 results, 8 GB all-reduce); ~85-96 GB/s
    # over 3 nodes of 8 A100 with 4 HDR NICs each (nccl-tests issue #119); 46-48 GB/s per
    # NDR 400 Gb/s NIC, so ~370 GB/s with 8 per node (nccl-tests issue #290); ~480 GB/s on
    # 8 H100 with NVLink SHARP (nccl-tests issue #212).
    variants = {
        # GPT-3 XL, bf16 gradients, one DGX A100; a 4-stage pipeline with 8 micro-batches
        "A": {"N": 1_300_000_000, "bytes_per_grad": 2, "P": 8, "bus_bandwidth": 230e9,
              "stages": 4, "microbatches": 8},
        # a 13B model over 3 A100 nodes with 4 HDR NICs each; 8 stages, 32 micro-batches
        "B": {"N": 13_000_000_000, "bytes_per_grad": 2, "P": 24, "bus_bandwidth": 90e9,
              "stages": 8, "microbatches": 32},
        # a 70B model reducing fp32 gradients over 8 H100 nodes with 8 NDR NICs each
        "C": {"N": 70_000_000_000, "bytes_per_grad": 4, "P": 64, "bus_bandwidth": 370e9,
              "stages": 16, "microbatches": 64},
        # GPT-3 175B, bf16 gradients inside one H100 node (NVLink SHARP); 12 stages, 12 micro-batches
        "D": {"N": 175_000_000_000, "bytes_per_grad": 2, "P": 8, "bus_bandwidth": 480e9,
              "stages": 12, "microbatches": 12},
    }
    checks = {
        "bubble_expr": Expr(symbols=SYMBOLS),
        "allreduce_bytes_per_device": Number(rtol=1e-3),
        "allreduce_seconds": Number(rtol=1e-3),
        "zero3_volume_ratio": Number(rtol=1e-3),
        "bubble_fraction": Number(rtol=1e-3),
    }
    cells = {
        "check_expr": ("bubble_expr",),
        "check_allreduce": ("allreduce_bytes_per_device", "allreduce_seconds"),
        "check_zero_pipeline": ("zero3_volume_ratio", "bubble_fraction"),
    }

    def solve(self, params):
        n, b, bus = (_positive(params, key) for key in ("N", "bytes_per_grad", "bus_bandwidth"))
        p, stages, microbatches = (_count(params, key) for key in ("P", "stages", "microbatches"))
        return _answers(n, b, p, bus, stages, microbatches)

    mistakes = (
        Mistake(
            "reduce-scatter-only",
            "only one of the all-reduce's two phases was counted: a ring all-reduce is a "
            "reduce-scatter followed by an all-gather, each moving (P-1)/P of the data.",
            lambda q: _allreduce(q, (q["P"] - 1) / q["P"] * q["N"] * q["bytes_per_grad"]),
        ),
        Mistake(
            "no-ring-discount",
            "the factor (P-1)/P was dropped: each device already holds its own 1/P share, "
            "so it sends 2(P-1)/P of the data, not twice all of it.",
            lambda q: _allreduce(q, 2 * q["N"] * q["bytes_per_grad"]),
        ),
        Mistake(
            "busbw-as-algbw",
            "the time divides the message size by the bus bandwidth as if it were the "
            "algorithm bandwidth; nccl-tests' busbw already includes the 2(P-1)/P factor.",
            lambda q: {"allreduce_seconds": q["N"] * q["bytes_per_grad"] / q["bus_bandwidth"]},
        ),
        Mistake(
            "zero-same-as-dp",
            "ZeRO stages 1 and 2 move the same 2 Psi as plain data parallelism, but stage 3 "
            "also gathers the parameters, in the forward and again in the backward pass.",
            lambda q: {"zero3_volume_ratio": 1.0},
        ),
        Mistake(
            "narayanan-bubble",
            "that is Narayanan et al.'s ratio, bubble time over ideal time, (p-1)/m; the "
            "question asks for GPipe's idle share of the total time.",
            lambda q: {"bubble_fraction": (q["stages"] - 1) / q["microbatches"],
                       "bubble_expr": (sympy.Symbol("K", positive=True) - 1) / sympy.Symbol("M", positive=True)},
        ),
        Mistake(
            "busy-share",
            "that is the busy share of the pipeline, M/(M+K-1); the bubble is the idle share.",
            lambda q: {"bubble_fraction": 1 - gpipe_bubble(q["stages"], q["microbatches"])},
        ),
    )


def _positive(params, key):
    value = params[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{key} must be a positive finite number, not {value!r}")
    return value


def _count(params, key):
    value = params[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value < 1 or value != int(value):
        raise ValueError(f"{key} must be a whole number of at least 1, not {value!r}")
    return int(value)


def _allreduce(q, moved):
    return {"allreduce_bytes_per_device": moved, "allreduce_seconds": moved / q["bus_bandwidth"]}


PROBLEM = CommunicationProblem()
