"""e06-checkpointing: checkpoint size, write time, job MTBF and the checkpoint interval.

Sources:
- J. W. Young, "A first order approximation to the optimum checkpoint interval",
  CACM 17(9), 1974: the interval sqrt(2 * delta * M) that minimises the first-order
  waste delta/tau + tau/(2M) (delta: time to write a checkpoint, M: mean time
  between failures).
- J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
  dumps", Future Generation Computer Systems 22 (2006) 303-312: the higher-order
  interval sqrt(2 delta M) * [1 + (1/3) sqrt(delta/(2M)) + (1/9) (delta/(2M))] - delta
  for delta < 2M, and M otherwise. Its Figs. 3-5 print the intervals the model
  predicts for delta = 5 min and M = 24 h, 6 h, 15 min: 117, 57 and 9.1 minutes.
- A. Kokolis et al., "Revisiting Reliability in Large-Scale Machine Learning Research
  Clusters", HPCA 2025 (arXiv 2410.21680): failure rates of 6.50 (RSC-1) and 2.34
  (RSC-2) failures per 1000 node-days, and a job MTTF of 1/(nodes * r_f).
"""
import math

import sympy

from graders.numeric import Number
from graders.problem import Mistake, Problem
from graders.symbolic import Expr
from graders.units import byte_unit_slips

SECONDS_PER_DAY = 86_400
GPUS_PER_NODE = 8          # the 8-GPU A100 servers of Kokolis et al.'s clusters
SYMBOLS = ("delta", "Theta")   # Theta is the job's MTBF (Young and Daly write M)


def young_interval(delta, mtbf):
    """Young's first-order optimum: sqrt(2 delta Theta) (numbers or sympy symbols)."""
    return sympy.sqrt(2 * delta * mtbf) if isinstance(delta, sympy.Basic) else (2 * delta * mtbf) ** 0.5


def daly_interval(delta, mtbf):
    """Daly's higher-order optimum (2006); Theta itself once delta >= 2 Theta."""
    if delta >= 2 * mtbf:
        return float(mtbf)
    xi = delta / (2 * mtbf)
    return (2 * delta * mtbf) ** 0.5 * (1 + xi ** 0.5 / 3 + xi / 9) - delta


def first_order_waste(delta, tau, mtbf):
    """Share of time lost: writing (delta per tau) plus half an interval redone per failure."""
    return delta / tau + tau / (2 * mtbf)


def _answers(n, bytes_per_param, bandwidth, mtbf):
    s = {name: sympy.Symbol(name, positive=True) for name in SYMBOLS}
    checkpoint = n * bytes_per_param
    delta = checkpoint / bandwidth
    young = young_interval(delta, mtbf)
    return {
        "checkpoint_bytes": checkpoint,
        "write_seconds": delta,
        "job_mtbf_seconds": mtbf,
        "young_interval_seconds": young,
        "daly_interval_seconds": daly_interval(delta, mtbf),
        "waste_fraction": first_order_waste(delta, young, mtbf),
        "interval_expr": young_interval(s["delta"], s["Theta"]),
    }


def job_mtbf(n_nodes, failure_rate):
    """Seconds between failures of a job on `n_nodes` nodes that each fail `failure_rate` times a day."""
    return SECONDS_PER_DAY / (n_nodes * failure_rate)


class CheckpointingProblem(Problem):
    id = "e06-checkpointing"
    title = "Checkpoints: size, write time and the interval that minimises lost work"
    strand = "mathematics"
    kind = "exercise"
    assignment = "exercises"
    symbols = SYMBOLS
    # failure_rate is per node-day: Kokolis et al. report 6.50 (RSC-1) and 2.34 (RSC-2)
    # failures per 1000 node-days. bytes_per_param follows the chapter's definition of a
    # checkpoint (graders.definitions.CHECKPOINT): 12 = fp32 master weights, Adam momentum
    # and variance; 14 when the framework also writes the bf16 module weights (DeepSpeed,
    # Megatron-LM).
    variants = {
        # a 7B model on 32 nodes (256 GPUs), writing to a 10 GB/s shared filesystem
        "A": {"N": 7_000_000_000, "bytes_per_param": 14, "write_bandwidth": 10e9,
              "n_nodes": 32, "failure_rate": 2.34e-3},
        # a 70B model on 512 nodes (4096 GPUs), sharded writes at 50 GB/s
        "B": {"N": 70_000_000_000, "bytes_per_param": 14, "write_bandwidth": 50e9,
              "n_nodes": 512, "failure_rate": 2.34e-3},
        # GPT-3 175B on 2048 nodes (16,384 GPUs): Kokolis et al.'s 1.8-hour projection
        "C": {"N": 175_000_000_000, "bytes_per_param": 14, "write_bandwidth": 100e9,
              "n_nodes": 2048, "failure_rate": 6.50e-3},
        # Llama 3 405B on 16,384 H100 (2,048 nodes): 419 unexpected interruptions in a 54-day
        # snapshot, 419 / (54 x 2048) = 3.79e-3 per node-day; checkpoints written to Tectonic at
        # its sustained 2 TB/s (Llama Team, "The Llama 3 Herd of Models", 2024, sections 3.3.1
        # and 3.3.4)
        "D": {"N": 405_000_000_000, "bytes_per_param": 12, "write_bandwidth": 2e12,
              "n_nodes": 2048, "failure_rate": 3.79e-3},
    }
    checks = {
        "interval_expr": Expr(symbols=SYMBOLS),
        "checkpoint_bytes": Number(rtol=1e-6),
        "write_seconds": Number(rtol=1e-3),
        "job_mtbf_seconds": Number(rtol=1e-3),
        "young_interval_seconds": Number(rtol=1e-3),
        "daly_interval_seconds": Number(rtol=1e-3),
        "waste_fraction": Number(rtol=1e-3),
    }
    cells = {
        "check_expr": ("interval_expr",),
        "check_io": ("checkpoint_bytes", "write_seconds", "job_mtbf_seconds"),
        "check_interval": ("young_interval_seconds", "daly_interval_seconds", "waste_fraction"),
    }

    def solve(self, params):
        n, b, w, nodes, rate = _positive(params, ("N", "bytes_per_param", "write_bandwidth",
                                                  "n_nodes", "failure_rate"))
        return _answers(n, b, w, job_mtbf(nodes, rate))

    def breakdown(self, params):
        """Where the model's own assumptions fail: Young (1974) and Daly (2006, section 3)
        assume a write much shorter than the MTBF. A first-order waste share above 1, or an
        interval shorter than one checkpoint write, is a job that cannot progress."""
        n, b, w, nodes, rate = _positive(params, ("N", "bytes_per_param", "write_bandwidth",
                                                  "n_nodes", "failure_rate"))
        answers = _answers(n, b, w, job_mtbf(nodes, rate))
        delta, tau = answers["write_seconds"], answers["young_interval_seconds"]
        reasons = []
        if answers["waste_fraction"] > 1:
            reasons.append(f"the first-order waste share is {answers['waste_fraction']:.3g}, above 1: "
                           f"the job loses more time than it runs")
        if tau < delta:
            reasons.append(f"Young's interval ({tau:,.0f} s) is shorter than one checkpoint "
                           f"write ({delta:,.0f} s)")
        return reasons

    mistakes = (
        Mistake(
            "one-node-mtbf",
            "the job's MTBF looks like one node's: a job fails when any of its nodes fails, "
            "so the failure rates of all its nodes add up.",
            lambda q: _downstream(q, SECONDS_PER_DAY / q["failure_rate"]),
            instant="what stops a job that runs on many nodes.",
        ),
        Mistake(
            "rate-per-gpu",
            "the rate was applied per GPU; Kokolis et al.'s rate is per node (8 GPUs), "
            "so multiply it by the node count, not the GPU count.",
            lambda q: _downstream(q, job_mtbf(q["n_nodes"] * GPUS_PER_NODE, q["failure_rate"])),
            instant="which unit Kokolis et al.'s failure rate counts.",
        ),
        Mistake(
            "mtbf-in-days",
            "the MTBF was left in days; the rate is per node-day, and every time in this "
            "problem is in seconds (86,400 to a day).",
            lambda q: _downstream(q, 1 / (q["n_nodes"] * q["failure_rate"])),
            instant="the time unit of the failure rate and of every answer.",
        ),
        Mistake(
            "young-without-2",
            "Young's interval lost its factor 2: minimising delta/tau + tau/(2 Theta) "
            "gives tau = sqrt(2 delta Theta).",
            lambda q: _young_without_2(q),
            instant="the redone-work term, carried intact through the minimisation.",
        ),
        Mistake(
            "daly-without-minus-delta",
            "Daly's interval is the bracketed series times sqrt(2 delta Theta) minus delta; "
            "the final - delta was left out.",
            lambda q: _daly_plus_delta(q),
            instant="every term of Daly's interval.",
        ),
        Mistake(
            "lose-whole-interval",
            "the waste counted a whole interval redone per failure; failures land uniformly "
            "inside an interval, so on average half of it (tau/2) is lost.",
            lambda q: _whole_interval(q),
            instant="where, on average, a failure lands inside an interval.",
        ),
        *byte_unit_slips(lambda q: {"checkpoint_bytes": q["N"] * q["bytes_per_param"]},
                         what="the checkpoint size"),
    )


def _positive(params, keys):
    """The values of `keys`, refusing anything that is not a positive finite number."""
    values = []
    for key in keys:
        value = params[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value <= 0:
            raise ValueError(f"{key} must be a positive finite number, not {value!r}")
        values.append(value)
    return values


def _downstream(q, mtbf):
    """Every answer that depends on the MTBF, recomputed with a wrong MTBF."""
    answers = _answers(q["N"], q["bytes_per_param"], q["write_bandwidth"], mtbf)
    return {k: answers[k] for k in ("job_mtbf_seconds", "young_interval_seconds",
                                     "daly_interval_seconds", "waste_fraction")}


def _young_without_2(q):
    mtbf = job_mtbf(q["n_nodes"], q["failure_rate"])
    delta = q["N"] * q["bytes_per_param"] / q["write_bandwidth"]
    tau = (delta * mtbf) ** 0.5
    d, m = (sympy.Symbol(name, positive=True) for name in SYMBOLS)
    return {"young_interval_seconds": tau, "waste_fraction": first_order_waste(delta, tau, mtbf),
            "interval_expr": sympy.sqrt(d * m)}


def _daly_plus_delta(q):
    mtbf = job_mtbf(q["n_nodes"], q["failure_rate"])
    delta = q["N"] * q["bytes_per_param"] / q["write_bandwidth"]
    if delta >= 2 * mtbf:   # the Theta branch has no - delta to forget
        return {}
    return {"daly_interval_seconds": daly_interval(delta, mtbf) + delta}


def _whole_interval(q):
    mtbf = job_mtbf(q["n_nodes"], q["failure_rate"])
    delta = q["N"] * q["bytes_per_param"] / q["write_bandwidth"]
    tau = young_interval(delta, mtbf)
    return {"waste_fraction": delta / tau + tau / mtbf}


PROBLEM = CheckpointingProblem()
