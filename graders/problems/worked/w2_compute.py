"""w2-compute: training FLOPs, wall-clock days and PF-days.

Sources:
- Kaplan et al., "Scaling Laws for Neural Language Models" (2020), section 2.1:
  a forward pass costs about 2N FLOPs per token and a training step about 6N
  (N without embeddings); compute is quoted in PF-days, 1 PF-day =
  1e15 x 24 x 3600 = 8.64e19 FLOPs.
- Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
  Clusters Using Megatron-LM" (SC 2021), eq. (4): end-to-end training time
  ~ 8TP/(nX). The 8 is 6 plus one more forward pass, because their runs use
  full activation recomputation; X is the achieved FLOP/s per GPU, counting
  the recomputed FLOPs.
- Brown et al., "Language Models are Few-Shot Learners" (2020), Appendix D,
  Table D.1: total train compute = 6 x parameters x tokens (attention ignored).
"""
import math

from graders import hardware
from graders.numeric import Number
from graders.problem import Mistake, Problem
from graders.symbolic import Expr, symbols_for

SECONDS_PER_DAY = 24 * 3600
PF_DAY = 10**15 * SECONDS_PER_DAY      # 8.64e19 FLOPs (Kaplan et al. 2020, section 2.1)

FORWARD = 2       # FLOPs per parameter per token, forward pass (one multiply, one add)
BACKWARD = 4      # backward pass: gradients for activations and for weights, 2N each


def flops_per_param_token(recompute) -> int:
    """6 for forward + backward; 8 when every layer's forward is run once more (full recomputation)."""
    return FORWARD + BACKWARD + (FORWARD if recompute else 0)


def _recompute(params) -> bool:
    value = params["recompute"]
    if isinstance(value, str):
        if value.strip().lower() in ("true", "1", "yes"):
            return True
        if value.strip().lower() in ("false", "0", "no", ""):
            return False
        raise ValueError(f"recompute must be a bool, not {value!r}")
    return bool(value)


def _numbers(params):
    n, d = params["N"], params["D"]
    n_gpus, peak, utilization = params["n_gpus"], params["peak_flops"], params["utilization"]
    for name, value in (("N", n), ("D", d), ("n_gpus", n_gpus), ("peak_flops", peak),
                        ("utilization", utilization)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a positive number, not {value!r}")
    return n, d, n_gpus, peak, utilization


def answers(params, k=None, achieved=None, gpus=None, day=SECONDS_PER_DAY, pf_day=PF_DAY):
    """All four answers; the keyword arguments let a mistake change one ingredient."""
    n, d, n_gpus, peak, utilization = _numbers(params)
    k = flops_per_param_token(_recompute(params)) if k is None else k
    achieved = peak * utilization if achieved is None else achieved
    gpus = n_gpus if gpus is None else gpus
    s = symbols_for(("N", "D"))
    train_flops = k * n * d
    seconds = train_flops / (gpus * achieved)
    return {
        "train_flops": train_flops,
        "days": seconds / day,
        "pf_days": train_flops / pf_day,
        "flops_expr": k * s["N"] * s["D"],
    }


class ComputeProblem(Problem):
    id = "w2-compute"
    title = "Training FLOPs and wall-clock time"
    strand = "mathematics"
    kind = "worked"
    assignment = "worked"
    symbols = ("N", "D")
    # Runs shaped like published ones; peak_flops is the dense 16-bit tensor-core peak of one
    # device from graders.hardware (V100 125 TFLOP/s, A100 312, MI300X 1307.4, B200 2250:
    # datasheets that print the sparse figure are halved there). Each is a run that fits:
    # 70B over 2048 devices and 8B over 1024 hold their model states easily with ZeRO.
    variants = {
        "A": {"N": 1_320_000_000, "D": 300_000_000_000, "n_gpus": 64,        # GPT-3 XL (Table D.1)
              "peak_flops": hardware.V100.dense_bf16, "utilization": 0.35, "recompute": False},
        "B": {"N": 70_000_000_000, "D": 1_400_000_000_000, "n_gpus": 2048,   # Chinchilla-sized
              "peak_flops": hardware.MI300X.dense_bf16, "utilization": 0.35, "recompute": False},
        "C": {"N": 8_030_000_000, "D": 15_000_000_000_000, "n_gpus": 1024,   # Llama-3-8B-sized
              "peak_flops": hardware.B200.dense_bf16, "utilization": 0.38, "recompute": True},
        "D": {"N": 176_000_000_000, "D": 366_000_000_000, "n_gpus": 384,     # BLOOM-sized
              "peak_flops": hardware.A100.dense_bf16, "utilization": 0.48, "recompute": True},
    }
    # the device of each variant, for the notebook's table and the tests
    DEVICES = {"A": hardware.V100, "B": hardware.MI300X, "C": hardware.B200, "D": hardware.A100}
    checks = {
        "train_flops": Number(rtol=1e-3),
        "days": Number(rtol=1e-3),
        "pf_days": Number(rtol=1e-3),
        "flops_expr": Expr(symbols=("N", "D")),
    }
    cells = {
        "check_expr": ("flops_expr",),
        "check_numbers": ("train_flops", "days", "pf_days"),
    }

    def solve(self, params):
        return answers(params)

    mistakes = (
        Mistake(
            "forward-only",
            "only the forward pass was counted (2 FLOPs per parameter per token); the backward "
            "pass costs twice the forward, once for the activation gradients and once for the "
            "weight gradients.",
            lambda q: answers(q, k=FORWARD + (FORWARD if _recompute(q) else 0)),
            instant="the cost of the backward pass.",
        ),
        Mistake(
            "recompute-flipped",
            "the extra forward pass of full activation recomputation was handled the wrong way "
            "round: it belongs in the count only when the variant recomputes.",
            lambda q: answers(q, k=flops_per_param_token(not _recompute(q))),
            instant="whether this variant recomputes its activations.",
        ),
        Mistake(
            "peak-not-achieved",
            "the time assumes the GPUs run at their peak; they deliver only the `utilization` "
            "fraction of it.",
            lambda q: {"days": answers(q, achieved=q["peak_flops"])["days"]},
            instant="the throughput each GPU achieves in this run.",
        ),
        Mistake(
            "one-gpu",
            "the time is for a single GPU; the work is shared by all `n_gpus` of them.",
            lambda q: {"days": answers(q, gpus=1)["days"]},
            instant="the GPUs that share the work.",
        ),
        Mistake(
            "seconds-not-days",
            "the time looks like seconds; `days` is in days of 86,400 seconds.",
            lambda q: {"days": answers(q, day=1)["days"]},
            instant="the unit the key's name asks for.",
        ),
        Mistake(
            "hours-not-days",
            "the time looks like hours; `days` is in days of 24 hours.",
            lambda q: {"days": answers(q, day=3600)["days"]},
            instant="the unit the key's name asks for.",
        ),
        Mistake(
            "petaflop-not-pf-day",
            "the compute was divided by 1e15 only; a PF-day is a petaFLOP/s sustained for a whole "
            "day, so it also carries the day's seconds.",
            lambda q: {"pf_days": answers(q, pf_day=10**15)["pf_days"]},
            instant="what a PF-day measures.",
        ),
    )


PROBLEM = ComputeProblem()
