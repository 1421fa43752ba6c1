"""e08-evaluation: perplexity, bits per byte, and the error bar of an eval loss.

- Perplexity is exp of the mean negative log-likelihood per token (nats).
- Bits per byte follows the Pile paper (Gao et al. 2020, "The Pile: An 800GB
  Dataset of Diverse Text for Language Modeling", section 3.1):
  BPB = (L_T / L_B) * log2(e^loss) = (L_T / L_B) * loss / ln 2, with L_T and L_B
  the eval set's length in tokens and in UTF-8 bytes.
- The eval loss is a mean over sequences, the independent units (tokens inside
  one sequence are correlated), so its standard error is s / sqrt(n) with s the
  sample standard deviation (n - 1 in the denominator) of the per-sequence losses.
  The number of sequences for a half-width Delta_ell at z standard errors is
  ceil((z s / Delta_ell)**2).
- The student also writes a numerically stable `logsumexp(x)`, called on hidden
  logits around +-1e4 (a `Probe`) and compared with torch.logsumexp.

All sequences of a variant have the same length T = tokens / len(seq_nll), so the
mean of the per-sequence means is also the mean over tokens.
"""
from __future__ import annotations

import math
import statistics

import numpy as np
import sympy
import torch

from graders.numeric import Count, Number, Outputs
from graders.problem import Mistake, Probe, Problem, seed_for
from graders.symbolic import Expr, symbols_for

FUNCTION = "logsumexp"
# Delta_ell is the half-width of the interval on the loss (the chapter keeps h for the width)
_S = symbols_for(("L_T", "L_B", "ell", "z", "sigma", "Delta_ell"))


def _validate(q):
    x = q["seq_nll"]
    if not isinstance(x, (list, tuple)) or len(x) < 2:
        raise ValueError("seq_nll needs at least two per-sequence losses")
    if not all(isinstance(v, (int, float)) and math.isfinite(v) and v >= 0 for v in x):
        raise ValueError("per-sequence losses are finite non-negative numbers (nats)")
    if not (q["tokens"] >= len(x) and q["bytes"] > 0 and q["z"] > 0 and q["halfwidth"] > 0):
        raise ValueError("tokens, bytes, z and halfwidth must be positive (tokens at least one per sequence)")


def _stats(q, ddof=1):
    x = [float(v) for v in q["seq_nll"]]
    n = len(x)
    mean = math.fsum(x) / n
    s = statistics.stdev(x) if ddof == 1 else statistics.pstdev(x)
    return x, n, mean, s


def _answers(q, ddof=1):
    _validate(q)
    x, n, mean, s = _stats(q, ddof)
    return {
        "mean_nll": mean,
        "perplexity": math.exp(mean),
        "bits_per_byte": q["tokens"] / q["bytes"] * mean / math.log(2),
        "standard_error": s / math.sqrt(n),
        "sequences_needed": math.ceil((q["z"] * s / q["halfwidth"]) ** 2),
    }


def torch_logsumexp(values):
    return float(torch.logsumexp(torch.tensor([float(v) for v in values], dtype=torch.float64), dim=0))


def probe_calls(params: dict) -> list:
    """Hidden calls [x]: logits around +1e4, around -1e4, mixed, ordinary, and a single one."""
    rng = np.random.default_rng(seed_for(params, "e08-evaluation"))

    def noisy(center, spread, n):
        return [round(float(center + spread * v), 4) for v in rng.standard_normal(n)]

    return [
        [noisy(1e4, 3.0, 20)],
        [noisy(-1e4, 2.0, 16)],
        [noisy(1e4, 1.0, 10) + noisy(-1e4, 1.0, 10)],
        [noisy(0.0, 2.0, 30)],
        [[round(float(1e4 + rng.standard_normal()), 4)]],
    ]


def _bpb(kind="right"):
    L_T, L_B, ell = _S["L_T"], _S["L_B"], _S["ell"]
    return {"right": L_T * ell / (L_B * sympy.log(2)), "nats": L_T * ell / L_B,
            "per-token": ell / sympy.log(2), "inverted": L_B * ell / (L_T * sympy.log(2))}[kind]


def _needed(kind="right"):
    z, sigma, half = _S["z"], _S["sigma"], _S["Delta_ell"]
    return {"right": (z * sigma / half) ** 2, "not-squared": z * sigma / half}[kind]


class EvaluationProblem(Problem):
    id = "e08-evaluation"
    title = "Perplexity, bits per byte, and the error bar of an eval loss"
    strand = "mathematics"
    kind = "exercise"
    assignment = "exercises"
    symbols = ("L_T", "L_B", "ell", "z", "sigma", "Delta_ell")
    # Per-sequence losses are illustrative draws shaped like real eval sets; the
    # token and byte counts follow each setting's context length and tokenizer.
    variants = {
        "A": {  # a GPT-2-small-sized model on a Pile slice: 32 x 1024 tokens, 0.29335 tokens/byte
            "seq_nll": [2.7731, 3.5687, 3.474, 2.6118, 2.7946, 2.8707, 3.007, 2.6598, 3.2698, 2.3978,
                        3.6354, 3.0145, 3.2603, 2.6244, 2.6606, 2.9889, 3.2651, 2.8861, 2.8846, 3.3769,
                        2.4648, 2.5008, 2.8578, 2.6615, 1.9266, 2.3705, 2.9525, 2.3114, 2.2734, 3.4045,
                        3.1545, 3.136],
            "tokens": 32768, "bytes": 111703, "z": 1.96, "halfwidth": 0.02,
        },
        "B": {  # a 1.4B model at 2048 tokens per sequence, 40 sequences, 99% interval
            "seq_nll": [2.1579, 2.8975, 2.6198, 2.388, 2.8877, 1.3287, 1.9861, 1.6932, 2.3056, 2.9204,
                        2.0944, 2.4872, 0.7982, 2.2331, 1.3516, 2.9795, 2.5424, 2.9407, 2.1854, 2.2199,
                        2.5941, 2.0222, 2.0025, 1.8733, 1.8797, 2.0713, 1.8625, 1.857, 2.7558, 1.0535,
                        2.2657, 1.7615, 1.7006, 1.3325, 1.9804, 2.0602, 2.1036, 1.5537, 2.2823, 3.0534],
            "tokens": 81920, "bytes": 274439, "z": 2.576, "halfwidth": 0.025,
        },
        "C": {  # a 7B model at 4096 tokens per sequence (about 3.7 bytes per token), 90% interval
            "seq_nll": [2.4519, 0.5776, 1.8986, 1.6365, 2.0423, 1.757, 2.342, 1.7548, 1.615, 1.8939,
                        1.834, 1.69, 1.674, 1.9024, 1.8748, 1.4766, 1.6972, 1.1956, 2.1668, 1.5218,
                        2.5067, 1.7675, 2.3575, 2.1411, 1.874, 2.0636, 1.5264, 2.0233, 1.1081, 2.134,
                        2.0629, 1.9793, 1.6377, 1.3225, 1.5746, 2.3428],
            "tokens": 147456, "bytes": 546133, "z": 1.645, "halfwidth": 0.005,
        },
        "D": {  # a byte-level model: every token is one byte, 40 sequences of 8192 bytes
            "seq_nll": [0.7185, 0.5796, 0.4755, 0.3181, 0.6436, 0.7581, 0.6703, 0.685, 0.793, 0.5056,
                        0.9265, 0.5947, 0.6825, 0.9598, 0.6153, 0.7465, 0.5834, 0.6466, 0.4428, 0.618,
                        0.9223, 0.6573, 0.6044, 0.65, 0.7858, 0.6566, 0.6934, 0.4764, 0.7169, 0.5589,
                        0.7679, 0.6529, 0.6172, 0.7349, 0.5169, 0.8164, 0.6082, 0.7289, 0.5703, 0.8961],
            "tokens": 327680, "bytes": 327680, "z": 1.96, "halfwidth": 0.01,
        },
    }
    checks = {
        "logsumexp_probe": Outputs(rtol=1e-6, atol=1e-6, points=2.0),
        "bpb_expr": Expr(symbols=("L_T", "L_B", "ell")),
        "sequences_expr": Expr(symbols=("z", "sigma", "Delta_ell")),
        "mean_nll": Number(rtol=1e-6),
        "perplexity": Number(rtol=1e-5),
        "bits_per_byte": Number(rtol=1e-5),
        "standard_error": Number(rtol=1e-4),
        "sequences_needed": Count(),
    }
    cells = {
        "check_function": ("logsumexp_probe",),
        "check_expr": ("bpb_expr", "sequences_expr"),
        "check_numbers": ("mean_nll", "perplexity", "bits_per_byte", "standard_error", "sequences_needed"),
    }

    def probes(self, params):
        return {"logsumexp_probe": Probe(function=FUNCTION, calls=probe_calls(params))}

    def solve(self, params):
        out = _answers(params)
        out["bpb_expr"] = _bpb()
        out["sequences_expr"] = _needed()
        out["logsumexp_probe"] = [torch_logsumexp(x) for (x,) in probe_calls(params)]
        return out

    mistakes = (
        Mistake(
            "token-level-error",
            "the standard error treated every token as an independent sample; tokens within one "
            "sequence are correlated, so the sequences are the units: divide by the square root of "
            "the number of sequences.",
            lambda q: {"standard_error": _stats(q)[3] / math.sqrt(q["tokens"])},
            instant="which units are independent samples.",
        ),
        Mistake(
            "population-sd",
            "the population standard deviation (dividing by n) was used; the error bar of a mean "
            "estimated from the same data uses the sample standard deviation (dividing by n - 1).",
            lambda q: {k: v for k, v in _answers(q, ddof=0).items()
                       if k in ("standard_error", "sequences_needed")},
            instant="which standard deviation an estimated mean's error bar uses.",
        ),
        Mistake(
            "nats-per-byte",
            "the loss was left in nats; bits per byte divides by ln 2 to turn nats into bits.",
            lambda q: {"bits_per_byte": q["tokens"] / q["bytes"] * _stats(q)[2],
                       "bpb_expr": _bpb("nats")},
            instant="the unit of the loss and the unit of the answer.",
        ),
        Mistake(
            "bits-per-token",
            "this is bits per token: the tokens-per-byte ratio L_T / L_B was left out, and it is "
            "what makes the number comparable across tokenizers.",
            lambda q: {"bits_per_byte": _stats(q)[2] / math.log(2), "bpb_expr": _bpb("per-token")},
            instant="what makes the number comparable across tokenizers.",
        ),
        Mistake(
            "inverted-ratio",
            "the ratio was inverted: multiply by tokens per byte (L_T / L_B), not bytes per token.",
            lambda q: {"bits_per_byte": q["bytes"] / q["tokens"] * _stats(q)[2] / math.log(2),
                       "bpb_expr": _bpb("inverted")},
            instant="how many tokens the tokenizer spends on each byte.",
        ),
        Mistake(
            "mean-of-perplexities",
            "the per-sequence perplexities were averaged; perplexity is exp of the mean loss, and "
            "the mean of exps is larger (Jensen's inequality).",
            lambda q: {"perplexity": math.fsum(math.exp(v) for v in _stats(q)[0]) / len(q["seq_nll"])},
            instant="how perplexity is defined from the loss.",
        ),
        Mistake(
            "halfwidth-not-squared",
            "the ratio z s / Delta_ell was not squared; the half-width shrinks like 1 / sqrt(n), so n grows "
            "with its square.",
            lambda q: {"sequences_needed": math.ceil(q["z"] * _stats(q)[3] / q["halfwidth"]),
                       "sequences_expr": _needed("not-squared")},
            instant="how the half-width shrinks with the number of sequences.",
        ),
        Mistake(
            "max-not-added-back",
            "the maximum was subtracted inside the exponentials but not added back outside the log.",
            lambda q: {"logsumexp_probe": [torch_logsumexp(x) - max(x) for (x,) in probe_calls(q)]},
            instant="what happens to the shift once the log is taken.",
        ),
    )


PROBLEM = EvaluationProblem()
