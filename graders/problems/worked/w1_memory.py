"""w1-memory: model-state memory of mixed-precision Adam, and ZeRO sharding.

Source: Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion
Parameter Models" (SC 2020), section 3.1 (model states: 2Ψ + 2Ψ + KΨ with K = 12
for mixed-precision Adam) and section 5 (stages P_os, P_os+g, P_os+g+p).
PyTorch's FSDP2 (torch.distributed.fsdp.fully_shard) is stage 3: per its docs it shards
parameters, gradients and optimizer states over the data-parallel ranks, all-gathers a
module's parameters before its forward and again before its backward, and reduce-scatters
the gradients.
"""

from graders import hardware
from graders.numeric import Count, Number
from graders.problem import Mistake, Problem
from graders.symbolic import Expr, symbols_for
from graders.units import byte_unit_slips

FP16 = 2  # bytes of one fp16 parameter, and of one fp16 gradient


def per_device(n, p, k, stage):
    """Bytes of model states on one of `p` devices at ZeRO `stage` (works for numbers and symbols)."""
    if stage == 0:
        return (FP16 + FP16 + k) * n
    if stage == 1:
        return (FP16 + FP16) * n + k * n / p
    if stage == 2:
        return FP16 * n + (FP16 + k) * n / p
    if stage == 3:
        return (FP16 + FP16 + k) * n / p
    raise ValueError(f"ZeRO stage must be 0, 1, 2 or 3, not {stage!r}")


def _answers(n, p, k, stage):
    s = symbols_for(("N", "P", "K"))
    return {
        "bytes_per_param": FP16 + FP16 + k,
        "total_bytes": (FP16 + FP16 + k) * n,
        "per_device_bytes": per_device(n, p, k, stage),
        "per_device_expr": per_device(s["N"], s["P"], s["K"], stage),
    }


def _sharded_next_stage(q):
    """The per-device answers of the stage above this one. Stage 3 already shards every model
    state (parameters, gradients, optimizer states), so there is no further stage to slip into
    and the mistake cannot be made there."""
    stage = int(q["stage"])
    if stage >= 3:
        return {}
    return {k: v for k, v in _answers(q["N"], q["P"], q["K"], stage + 1).items() if k.startswith("per_device")}


def _sharded_previous_stage(q):
    """The per-device answers of the stage below this one. Stage 0 shards nothing, so there is
    no stage below it to slip into and the mistake cannot be made there."""
    stage = int(q["stage"])
    if stage <= 0:
        return {}
    return {k: v for k, v in _answers(q["N"], q["P"], q["K"], stage - 1).items() if k.startswith("per_device")}


# The device each variant runs on (figures from graders.hardware, the vendors' datasheets).
DEVICES = {"A": hardware.A100, "B": hardware.H100, "C": hardware.MI300X, "D": hardware.B200}


class MemoryProblem(Problem):
    id = "w1-memory"
    title = "Model-state memory and ZeRO"
    strand = "mathematics"
    kind = "worked"
    assignment = "worked"
    symbols = ("N", "P", "K")
    # Real model sizes and cluster sizes; K = 12 is mixed-precision Adam
    # (fp32 master weights, momentum and variance: 4 + 4 + 4 bytes). Each variant runs on the
    # device DEVICES names, and its model states at its stage fit in 80% of that device's memory.
    variants = {
        "A": {"N": 1_300_000_000, "P": 8, "K": 12, "stage": 0},      # GPT-3 XL, plain DP on one A100 node
        "B": {"N": 13_000_000_000, "P": 64, "K": 12, "stage": 1},    # GPT-3 13B on 8 H100 nodes
        "C": {"N": 70_000_000_000, "P": 256, "K": 12, "stage": 2},   # a 70B model on 32 MI300X nodes
        "D": {"N": 175_000_000_000, "P": 64, "K": 12, "stage": 3},   # GPT-3 175B on 8 B200 nodes
    }
    checks = {
        "bytes_per_param": Count(),
        "total_bytes": Number(rtol=1e-3),
        "per_device_bytes": Number(rtol=1e-3),
        "per_device_expr": Expr(symbols=("N", "P", "K")),
    }
    cells = {
        "check_expr": ("per_device_expr",),
        "check_numbers": ("bytes_per_param", "total_bytes", "per_device_bytes"),
    }

    def solve(self, params):
        n, p, k, stage = params["N"], params["P"], params["K"], int(params["stage"])
        return _answers(n, p, k, stage)

    mistakes = (
        Mistake(
            "no-master-copy",
            "the fp32 master copy of the weights was left out; mixed-precision Adam keeps "
            "fp32 weights, momentum and variance (K = 12 bytes), beside the fp16 weights and gradients.",
            lambda q: _answers(q["N"], q["P"], q["K"] - 4, int(q["stage"])),
            instant="the fp32 master copy of the weights.",
        ),
        Mistake(
            "sharded-a-stage-early",
            "more was partitioned than this stage partitions: stage 1 shards only the optimizer "
            "states, stage 2 adds the gradients, and only stage 3 shards the fp16 parameters.",
            _sharded_next_stage,
            instant="which model states this ZeRO stage partitions.",
        ),
        Mistake(
            "sharded-a-stage-late",
            "less was partitioned than this stage partitions: stage 1 shards the optimizer states, "
            "stage 2 the gradients as well, and stage 3 the fp16 parameters as well, so at stage 3 "
            "every model state is divided by P.",
            _sharded_previous_stage,
            instant="which model states this ZeRO stage partitions.",
        ),
        *byte_unit_slips(lambda q: {k: v for k, v in _answers(q["N"], q["P"], q["K"], int(q["stage"])).items()
                                    if k in ("total_bytes", "per_device_bytes")}),
        Mistake(
            "fp32-gradients",
            "the gradients were counted in fp32 (4 bytes); in mixed precision they are fp16 (2 bytes).",
            lambda q: {"bytes_per_param": 6 + q["K"], "total_bytes": (6 + q["K"]) * q["N"]},
            instant="the precision the gradients are kept in.",
        ),
    )


PROBLEM = MemoryProblem()
