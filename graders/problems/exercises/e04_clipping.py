"""e04-clipping: global-norm gradient clipping, implemented by the student.

The reference is torch's own `torch.nn.utils.clip_grad_norm_` (its documented
rule: every gradient is multiplied by min(max_norm / (total_norm + 1e-6), 1),
where total_norm is the 2-norm of all gradients concatenated). The rule itself
goes back to Pascanu, Mikolov and Bengio, "On the difficulty of training
recurrent neural networks" (ICML 2013), Algorithm 1. The thresholds in the
variants are the ones large runs printed: 1.0 in GPT-3 (Brown et al. 2020,
Appendix B) and LLaMA (Touvron et al. 2023, section 2.3); 0.3 in OPT-175B
(Zhang et al. 2022, section 2.5, lowered from 1.0 mid-run for stability).

Besides the variant's numbers, the student's function `clip_grad_norm(grads,
max_norm) -> (clipped_grads, total_norm)` is called on fresh random gradients
(a `Probe`) and compared, call by call, with torch.

This module also defines `Outputs`, the check for a probed function's outputs
(one output per hidden call, each a number or a nested list of numbers); the
other code exercises of the chapter import it from here.
"""
from __future__ import annotations

import math

import numpy as np
import sympy
import torch

from graders.numeric import Number, Outputs
from graders.problem import Mistake, Probe, Problem, seed_for
from graders.symbolic import Expr, symbols_for

EPS = 1e-6          # torch adds this to the total norm before dividing
FUNCTION = "clip_grad_norm"
# clip_coef_expr's symbols: the tensor count, each tensor's norm, and the threshold (the
# chapter's M, torch's max_norm)
SYMBOLS = ("n_tensors", "g", "M")


# --- the reference: torch -------------------------------------------------------------

def torch_clip(grads, max_norm):
    """(clipped gradients as lists, total norm) exactly as torch's clip_grad_norm_ leaves them."""
    params = []
    for g in grads:
        p = torch.nn.Parameter(torch.zeros(len(g), dtype=torch.float64))
        p.grad = torch.tensor([float(x) for x in g], dtype=torch.float64)
        params.append(p)
    total = torch.nn.utils.clip_grad_norm_(params, float(max_norm))
    return [p.grad.tolist() for p in params], float(total)


def torch_coef(total_norm, max_norm):
    """torch's clip coefficient: min(max_norm / (total_norm + 1e-6), 1), as it computes it."""
    coef = torch.tensor(float(max_norm), dtype=torch.float64) / (
        torch.tensor(float(total_norm), dtype=torch.float64) + EPS)
    return float(torch.clamp(coef, max=1.0))


def probe_calls(params: dict) -> list:
    """Hidden calls [grads, max_norm]: fresh random gradients, some clipped and some not."""
    rng = np.random.default_rng(seed_for(params, "e04-clipping"))
    c = float(params["max_norm"])
    calls = []
    for ratio, limit in ((3.0, c), (0.4, c), (15.0, 2 * c), (1.3, c)):
        k = int(rng.integers(2, 5))
        tensors = [rng.standard_normal(int(rng.integers(3, 9))) for _ in range(k)]
        norm = math.sqrt(sum(float((t ** 2).sum()) for t in tensors))
        scale = ratio * limit / norm
        calls.append([[[round(float(x) * scale, 6) for x in t] for t in tensors], limit])
    calls.append([[[0.0, 0.0, 0.0], [0.0, 0.0]], c])   # a step where every gradient is zero
    return calls


# --- the mistakes, as functions of the same shape as the reference -------------------

def _norms(grads):
    return [math.sqrt(sum(float(x) ** 2 for x in g)) for g in grads]


def _scaled(grads, coef):
    return [[float(x) * coef for x in g] for g in grads]


def _wrong_clip(kind, grads, max_norm):
    """What a function with mistake `kind` returns: (clipped, total_norm)."""
    norms = _norms(grads)
    true_total = math.sqrt(sum(n * n for n in norms))
    if kind == "sum-of-norms":
        total = sum(norms)
        return _scaled(grads, min(max_norm / (total + EPS), 1.0)), total
    if kind == "squared-norm":
        total = true_total ** 2
        return _scaled(grads, min(max_norm / (total + EPS), 1.0)), total
    if kind == "no-clamp":
        return _scaled(grads, max_norm / (true_total + EPS)), true_total
    if kind == "per-tensor":
        return [[float(x) * min(max_norm / (n + EPS), 1.0) for x in g]
                for g, n in zip(grads, norms)], true_total
    if kind == "by-value":
        return [[min(max(float(x), -max_norm), max_norm) for x in g] for g in grads], true_total
    raise ValueError(kind)


def _expr(kind="global"):
    s = symbols_for(SYMBOLS)
    n_tensors, g, m = s["n_tensors"], s["g"], s["M"]
    return {"global": m / (sympy.sqrt(n_tensors) * g), "sum-of-norms": m / (n_tensors * g),
            "squared-norm": m / (n_tensors * g ** 2), "per-tensor": m / g}[kind]


def _mistake(kind, keys):
    def wrong(q):
        out = {}
        total = None
        if {"total_norm", "clip_coef"} & set(keys):
            total = _wrong_clip(kind, q["grads"], float(q["max_norm"]))[1]
        if "total_norm" in keys:
            out["total_norm"] = total
        if "clip_coef" in keys:
            coef = float(q["max_norm"]) / (total + EPS)
            out["clip_coef"] = coef if kind == "no-clamp" else min(coef, 1.0)
        if "clip_coef_expr" in keys:
            out["clip_coef_expr"] = _expr(kind)
        if "clip_probe" in keys:
            out["clip_probe"] = [list(_wrong_clip(kind, grads, limit))
                                 for grads, limit in probe_calls(q)]
        return out
    return wrong


class ClippingProblem(Problem):
    id = "e04-clipping"
    title = "Global-norm gradient clipping, implemented"
    strand = "mathematics"
    kind = "exercise"
    assignment = "exercises"
    symbols = SYMBOLS
    # One step's gradients of a small network (W1, b1, W2, b2, each flattened),
    # with the clipping thresholds that GPT-3, OPT-175B and LLaMA printed.
    variants = {
        "A": {  # GPT-3: clip the global norm at 1.0; this step is clipped
            "grads": [[0.3407, 0.8099, 0.3257, -1.2846, 0.8925, 0.44],
                      [-0.5293, 0.5728, 0.3594],
                      [0.2899, 0.028, 0.5389, -0.726, -0.1606, -0.4753],
                      [0.5903, 0.0392]],
            "max_norm": 1.0,
        },
        "B": {  # OPT-175B after lowering the threshold to 0.3
            "grads": [[0.0474, -0.131, -0.1035, -0.6116, 0.4509, 0.2866, -0.0815, 0.1938],
                      [0.0704, -0.1387, 0.2449, -0.0778],
                      [-0.0824, -0.1984, 0.114, -0.0249],
                      [0.1366]],
            "max_norm": 0.3,
        },
        "C": {  # LLaMA's threshold 1.0 on a spike: one tensor carries nearly all the norm
            "grads": [[22.3051, -27.9307, 4.5694, -6.2051, -4.947, -2.3562],
                      [-0.6623, -0.076, -0.2837, 1.0895, 0.074, -0.1156],
                      [-0.0922, -0.219, -0.3459],
                      [-0.1281, 0.158, -0.0782]],
            "max_norm": 1.0,
        },
        "D": {  # OPT's 0.3 on an ordinary step: the norm is under the threshold
            "grads": [[-0.0284, -0.0076, 0.0724, 0.0287, -0.0714, -0.0002],
                      [-0.0271, 0.0065, -0.07],
                      [0.0105, 0.0102, 0.0686, 0.0138, 0.0222, -0.065],
                      [0.098, -0.0834]],
            "max_norm": 0.3,
        },
    }
    checks = {
        "clip_coef_expr": Expr(symbols=SYMBOLS),
        "total_norm": Number(rtol=1e-6),
        "clip_coef": Number(rtol=1e-5),
        "clip_probe": Outputs(rtol=1e-5, atol=1e-9, points=2.0),
    }
    cells = {
        "check_expr": ("clip_coef_expr",),
        "check_function": ("clip_probe",),
        "check_numbers": ("total_norm", "clip_coef"),
    }

    def probes(self, params):
        return {"clip_probe": Probe(function=FUNCTION, calls=probe_calls(params))}

    def solve(self, params):
        grads, max_norm = params["grads"], float(params["max_norm"])
        if not grads or any(len(g) == 0 for g in grads):
            raise ValueError("grads must be a non-empty list of non-empty arrays")
        if not max_norm > 0:
            raise ValueError("max_norm must be positive")
        _, total = torch_clip(grads, max_norm)
        return {
            "clip_coef_expr": _expr("global"),
            "total_norm": total,
            "clip_coef": torch_coef(total, max_norm),
            "clip_probe": [list(torch_clip(g, limit)) for g, limit in probe_calls(params)],
        }

    mistakes = (
        Mistake(
            "sum-of-norms",
            "the per-tensor norms were added; the global norm is the square root of the sum of "
            "their squares (the norm of all gradients laid end to end).",
            _mistake("sum-of-norms", ("total_norm", "clip_coef", "clip_coef_expr", "clip_probe")),
            instant="how per-tensor norms combine into one global norm.",
        ),
        Mistake(
            "squared-norm",
            "the square root was left off: the sum of squares is the squared norm, not the norm.",
            _mistake("squared-norm", ("total_norm", "clip_coef", "clip_coef_expr", "clip_probe")),
            instant="the difference between a norm and a sum of squares.",
        ),
        Mistake(
            "no-clamp",
            "the coefficient was not capped at 1, so gradients under the threshold were scaled up; "
            "clipping may only shrink a step.",
            _mistake("no-clamp", ("clip_coef", "clip_probe")),
            instant="what clipping does to gradients already within the threshold.",
        ),
        Mistake(
            "per-tensor",
            "each tensor was clipped by its own norm; global clipping rescales all of them by one "
            "common coefficient, which keeps the update's direction.",
            _mistake("per-tensor", ("clip_coef_expr", "clip_probe")),
            instant="the single coefficient shared by every tensor.",
        ),
        Mistake(
            "by-value",
            "each entry was clamped to [-max_norm, max_norm] (clip_grad_value_); clip_grad_norm_ "
            "rescales whole gradients by their global norm.",
            _mistake("by-value", ("clip_probe",)),
            instant="which torch clipping function the question describes.",
        ),
    )


PROBLEM = ClippingProblem()
