"""e07-communication: bytes on the wire for ring all-reduce, ZeRO-3, and the pipeline bubble.

Sources:
- nccl-tests, doc/PERFORMANCE.md: an all-reduce of S bytes over n ranks needs at best
  t = (S/B) * 2(n-1)/n, so the reported bus bandwidth is busbw = algbw * 2(n-1)/n
  (and (n-1)/n for all-gather and reduce-scatter). With a measured busbw, the time of an
  all-reduce is therefore 2(n-1)/n * S / busbw.
- Rajbhandari et al., ZeRO (SC 2020), section 7: plain data parallelism moves 2 Psi per
  step (reduce-scatter + all-gather); P_os+g moves the same 2 Psi; P_os+g+p (stage 3)
  moves 3 Psi (parameter all-gathers in the forward and in the backward pass, plus the
  gradient reduce-scatter), "1.5x compared to the baseline". Psi counts elements, so the
  paper's 1.5 is the byte ratio only when parameters and gradients have the same width.
  The graded quantity is the byte ratio (curriculum section 4):
      zero3_volume_ratio = (2 all-gathers of N values at weight_bytes
                            + 1 reduce-scatter of N values at bytes_per_grad)
                           / (plain DP's all-reduce of N values at bytes_per_grad)
                         = (2 weight_bytes + bytes_per_grad) / (2 bytes_per_grad),
  each collective moving (P-1)/P of its buffer (all-reduce: twice that). At P = 1 nothing
  moves and the ratio is 0/0, so solve refuses P = 1.
- PyTorch's FSDP (torch.distributed.fsdp.fully_shard, "FSDP2") is ZeRO stage 3: its docs
  (pytorch.org/docs/stable/distributed.fsdp.fully_shard.html) say it all-gathers each
  module's parameters before its forward, again before its backward, and reduce-scatters
  the gradients; MixedPrecisionPolicy's param_dtype and reduce_dtype set weight_bytes and
  bytes_per_grad.
- Huang et al., GPipe (NeurIPS 2019), section 2.3: with K partitions and M micro-batches
  the bubble is O((K-1)/(M+K-1)), the idle share of the pipeline's total time.
  Narayanan et al. (SC 2021), section 2.2.1, instead divide the bubble time by the ideal
  time, (p-1)/m: a different ratio for the same schedule.
"""
import math

import sympy

from graders import hardware
from graders.numeric import Number
from graders.problem import Mistake, Problem
from graders.symbolic import Expr
from graders.units import byte_unit_slips

# The pipeline stages and micro-batches (GPipe's K and M; the chapter keeps K and M for
# optimiser bytes and the clip threshold).
SYMBOLS = ("n_stages", "n_micro")


def allreduce_bytes(n, bytes_per_grad, p):
    """Bytes each device sends (and receives) in a ring all-reduce of N values over P devices."""
    return 2 * (p - 1) / p * n * bytes_per_grad


def gpipe_bubble(stages, microbatches):
    """Idle share of a GPipe schedule's total time: (n_stages-1)/(n_micro+n_stages-1) (numbers or symbols)."""
    return (stages - 1) / (microbatches + stages - 1)


def zero3_volume_ratio(n, weight_bytes, bytes_per_grad, p):
    """Bytes a device moves per step under ZeRO-3 over those of plain data parallelism."""
    if p == 1:
        raise ValueError("P = 1: with one device nothing is communicated, and the ZeRO-3 "
                         "volume ratio is 0/0; it needs P >= 2")
    share = (p - 1) / p * n                  # what one all-gather or reduce-scatter moves
    zero3 = 2 * share * weight_bytes + share * bytes_per_grad
    return zero3 / allreduce_bytes(n, bytes_per_grad, p)


def _answers(n, bytes_per_grad, weight_bytes, p, bus_bandwidth, stages, microbatches):
    n_stages, n_micro = (sympy.Symbol(name, positive=True) for name in SYMBOLS)
    moved = allreduce_bytes(n, bytes_per_grad, p)
    return {
        "allreduce_bytes_per_device": moved,
        "allreduce_seconds": moved / bus_bandwidth,
        "zero3_volume_ratio": zero3_volume_ratio(n, weight_bytes, bytes_per_grad, p),
        "bubble_fraction": gpipe_bubble(stages, microbatches),
        "bubble_expr": gpipe_bubble(n_stages, n_micro),
    }


# What each variant runs on. Devices = P x stages x tensor_parallel; each device holds the model
# states of its N parameters (model_params / (stages x tensor_parallel)): under plain data
# parallelism its weights at weight_bytes, its gradients at bytes_per_grad and 12 bytes of fp32
# master weights and Adam moments per parameter (ZeRO's K = 12). The data-parallel group is the
# P devices that hold the same N parameters; bus_bandwidth is what nccl-tests measures there.
SYSTEMS = {
    "A": {"model": "a 13B GPT", "model_params": 13_000_000_000, "device": hardware.A100.name,
          "device_memory_bytes": hardware.A100.memory_bytes,
          "nodes": 4, "devices_per_node": 8, "tensor_parallel": 1,
          "layout": "one pipeline stage per node; data parallelism over NVLink inside the node"},
    "B": {"model": "a 7B Llama-2-sized model", "model_params": 6_738_415_616, "device": hardware.A100.name,
          "device_memory_bytes": hardware.A100.memory_bytes,
          "nodes": 6, "devices_per_node": 8, "tensor_parallel": 1,
          "layout": "two stages of 3 nodes each; data parallelism over 4 HDR NICs per node"},
    "C": {"model": "a 70B model", "model_params": 70_000_000_000, "device": hardware.H200.name,
          "device_memory_bytes": hardware.H200.memory_bytes,
          "nodes": 16, "devices_per_node": 8, "tensor_parallel": 1,
          "layout": "one stage per node; data parallelism over NVLink (ring) inside the node"},
    "D": {"model": "GPT-3 175B", "model_params": 175_000_000_000, "device": hardware.A100.name,
          "device_memory_bytes": hardware.A100.memory_bytes,
          "nodes": 48, "devices_per_node": 8, "tensor_parallel": 1,
          "layout": "48 stages of 2 layers, one per node; data parallelism over NVLink (ring; "
                    "A100's NVSwitch does no reduction) inside the node"},
}
ADAM_STATE_BYTES = 12     # fp32 master weights, momentum and variance (ZeRO section 3.1)


def plain_dp_state_bytes(params):
    """Model-state bytes on one device under plain data parallelism (weights, gradients, Adam)."""
    return params["N"] * (params["weight_bytes"] + params["bytes_per_grad"] + ADAM_STATE_BYTES)


class CommunicationProblem(Problem):
    id = "e07-communication"
    title = "Bytes on the wire: ring all-reduce, ZeRO-3 traffic, the pipeline bubble"
    strand = "mathematics"
    kind = "exercise"
    assignment = "exercises"
    symbols = SYMBOLS
    # bus_bandwidth is the all-reduce bus bandwidth nccl-tests reports at large messages:
    # ~231 GB/s on 8 A100-SXM4 (Azure ND A100 v4 results, 8 GB all-reduce); ~85-96 GB/s
    # over 3 nodes of 8 A100 with 4 HDR NICs each (nccl-tests issue #119); on 8 H100 with
    # NVLink, ~370 GB/s as a ring and ~480 GB/s with NVLink SHARP (nccl-tests issue #212).
    # H200 has H100's NVLink 4 and NVSwitch (900 GB/s per GPU on both datasheets), so the
    # H100 figures carry over. N is the parameters one device holds and all-reduces
    # (SYSTEMS below: model_params / stages); weight_bytes and bytes_per_grad are FSDP2's
    # MixedPrecisionPolicy(param_dtype, reduce_dtype), or torchao's float8 all-gather.
    variants = {
        # 13B on 4 nodes of 8 A100: bf16 weights and gradients; 4 stages, 16 micro-batches
        "A": {"N": 3_250_000_000, "bytes_per_grad": 2, "weight_bytes": 2, "P": 8,
              "bus_bandwidth": 230e9, "stages": 4, "microbatches": 16},
        # 7B on 6 nodes of 8 A100: bf16 weights, fp32 gradient reduction; 2 stages, 8 micro-batches
        "B": {"N": 3_369_207_808, "bytes_per_grad": 4, "weight_bytes": 2, "P": 24,
              "bus_bandwidth": 90e9, "stages": 2, "microbatches": 8},
        # 70B on 16 nodes of 8 H200: FP8 weight all-gather, fp32 gradients; 16 stages, 64 micro-batches
        "C": {"N": 4_375_000_000, "bytes_per_grad": 4, "weight_bytes": 1, "P": 8,
              "bus_bandwidth": 370e9, "stages": 16, "microbatches": 64},
        # GPT-3 175B on 48 nodes of 8 A100: bf16 weights and bf16 gradient reduction
        # (MixedPrecisionPolicy(param_dtype=reduce_dtype=torch.bfloat16)); the ring runs over
        # NVLink, whose A100 switches only forward; 48 stages, 192 micro-batches
        "D": {"N": 3_645_833_333, "bytes_per_grad": 2, "weight_bytes": 2, "P": 8,
              "bus_bandwidth": 230e9, "stages": 48, "microbatches": 192},
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
        n, b, w, bus = (_positive(params, key)
                        for key in ("N", "bytes_per_grad", "weight_bytes", "bus_bandwidth"))
        p, stages, microbatches = (_count(params, key) for key in ("P", "stages", "microbatches"))
        return _answers(n, b, w, p, bus, stages, microbatches)

    mistakes = (
        Mistake(
            "reduce-scatter-only",
            "only one of the all-reduce's two phases was counted: a ring all-reduce is a "
            "reduce-scatter followed by an all-gather, each moving (P-1)/P of the data.",
            lambda q: _allreduce(q, (q["P"] - 1) / q["P"] * q["N"] * q["bytes_per_grad"]),
            instant="the phases of a ring all-reduce.",
        ),
        Mistake(
            "no-ring-discount",
            "the factor (P-1)/P was dropped: each device already holds its own 1/P share, "
            "so it sends 2(P-1)/P of the data, not twice all of it.",
            lambda q: _allreduce(q, 2 * q["N"] * q["bytes_per_grad"]),
            instant="the chunk each device already holds and never sends.",
        ),
        Mistake(
            "busbw-as-algbw",
            "the time divides the message size by the bus bandwidth as if it were the "
            "algorithm bandwidth; nccl-tests' busbw already includes the 2(P-1)/P factor.",
            lambda q: {"allreduce_seconds": q["N"] * q["bytes_per_grad"] / q["bus_bandwidth"]},
            instant="how nccl-tests defines bus bandwidth.",
        ),
        Mistake(
            "zero-same-as-dp",
            "ZeRO stages 1 and 2 move the same bytes as plain data parallelism, but stage 3 "
            "also gathers the parameters, in the forward and again in the backward pass.",
            lambda q: {"zero3_volume_ratio": 1.0}
            if 2 * q["weight_bytes"] + q["bytes_per_grad"] != 2 * q["bytes_per_grad"] else {},
            instant="the parameter gathers of ZeRO's final stage.",
        ),
        Mistake(
            "psi-units-not-bytes",
            "that is ZeRO's count in units of Psi (3 Psi over 2 Psi), which counts values, not "
            "bytes; the question weighs each collective by the width it moves: parameters at "
            "weight_bytes, gradients at bytes_per_grad.",
            lambda q: {"zero3_volume_ratio": 1.5}
            if q["weight_bytes"] != q["bytes_per_grad"] else {},
            instant="the width of the values each collective moves.",
        ),
        Mistake(
            "one-parameter-gather",
            "only one parameter all-gather was counted; stage 3 frees each layer's gathered "
            "parameters after its forward and gathers them again for its backward.",
            lambda q: _one_gather(q),
            instant="what ZeRO's final stage does with gathered parameters between the forward and backward passes.",
        ),
        Mistake(
            "narayanan-bubble",
            "that is Narayanan et al.'s ratio, bubble time over ideal time, (n_stages-1)/n_micro; the "
            "question asks for GPipe's idle share of the total time.",
            lambda q: {"bubble_fraction": (q["stages"] - 1) / q["microbatches"],
                       "bubble_expr": (sympy.Symbol("n_stages", positive=True) - 1)
                       / sympy.Symbol("n_micro", positive=True)},
            instant="which time the bubble is measured against.",
        ),
        Mistake(
            "busy-share",
            "that is the busy share of the pipeline, n_micro/(n_micro+n_stages-1); the bubble is the idle share.",
            lambda q: {"bubble_fraction": 1 - gpipe_bubble(q["stages"], q["microbatches"])},
            instant="which part of the pipeline's time the bubble names.",
        ),
        *byte_unit_slips(lambda q: {"allreduce_bytes_per_device":
                                    allreduce_bytes(q["N"], q["bytes_per_grad"], q["P"])}),
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


def _one_gather(q):
    """The ratio with a single parameter all-gather; where it comes out at plain data
    parallelism's 1 or ZeRO's 3/2, those two mistakes' feedback already says what is missing."""
    ratio = (q["weight_bytes"] + q["bytes_per_grad"]) / (2 * q["bytes_per_grad"])
    return {} if ratio in (1.0, 1.5) else {"zero3_volume_ratio": ratio}


def _allreduce(q, moved):
    return {"allreduce_bytes_per_device": moved, "allreduce_seconds": moved / q["bus_bandwidth"]}


PROBLEM = CommunicationProblem()
