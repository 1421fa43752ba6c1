"""b08-gradient-clipping: the global gradient norm and the coefficient torch applies.

The term. Gradient clipping by global norm (Pascanu, Mikolov and Bengio, ICML 2013, section
3.2, Algorithm 1) measures the 2-norm of *all* gradients laid end to end,

    total_norm = sqrt(sum over tensors of ||g_i||^2),

and, when that exceeds the threshold max_norm, scales every gradient by the same factor so the
step keeps its direction. torch.nn.utils.clip_grad_norm_ multiplies every gradient by

    clip_coef = min(max_norm / (total_norm + 1e-6), 1)

(torch.nn.utils.clip_grad._clip_grads_with_norm_: clamp(max_norm / (total_norm + 1e-6),
max=1.0)), so ordinary steps are multiplied by exactly 1 and only the spikes are cut.

The computed check. Six steps of a small transformer, each given as the norms of four
gradient tensors (embedding, attention, MLP, output head). The student computes each step's
global norm, the coefficient torch applies, and which steps are clipped (coefficient < 1).
The per-tensor norms are chosen so that the wrong definitions give different answers: some
steps have every tensor under the threshold but a global norm over it, and some have a sum
of norms over the threshold but a global norm under it.

Thresholds: 1.0 as GPT-3 (Brown et al. 2020, Appendix B) and LLaMA (Touvron et al. 2023,
section 2.3) print; 0.3 as OPT-175B (Zhang et al. 2022, section 2.5) lowered it to mid-run.
"""
from __future__ import annotations

import math

from graders.numeric import Numbers
from graders.problem import Mistake, Problem

EPS = 1e-6   # torch adds this to the total norm before dividing


def _read(q):
    steps = q["tensor_norms"]
    if not isinstance(steps, (list, tuple)) or not steps:
        raise ValueError("tensor_norms must be a non-empty list of steps")
    out = []
    for step in steps:
        if not isinstance(step, (list, tuple)) or not step:
            raise ValueError("each step must be a non-empty list of per-tensor norms")
        norms = [float(n) for n in step]
        if any(not math.isfinite(n) or n < 0 for n in norms):
            raise ValueError("per-tensor norms must be finite and non-negative")
        out.append(norms)
    max_norm = float(q["max_norm"])
    if not (math.isfinite(max_norm) and max_norm > 0):
        raise ValueError("max_norm must be a positive number")
    return out, max_norm


def coefficient(total, max_norm):
    """torch's clip coefficient: min(max_norm / (total + 1e-6), 1)."""
    return min(max_norm / (total + EPS), 1.0)


def _answers(q, combine=None, clamp=True):
    steps, max_norm = _read(q)
    combine = combine or (lambda norms: math.sqrt(math.fsum(n * n for n in norms)))
    totals = [combine(norms) for norms in steps]
    coefs = [coefficient(t, max_norm) if clamp else max_norm / (t + EPS) for t in totals]
    return {
        "global_norms": totals,
        "clip_coefficients": coefs,
        "clipped_steps": [i for i, c in enumerate(coefs) if c < 1.0],
    }


def _per_tensor(q):
    steps, max_norm = _read(q)
    return {"clipped_steps": [i for i, norms in enumerate(steps) if max(norms) > max_norm]}


class GradientClippingProblem(Problem):
    id = "b08-gradient-clipping"
    title = "Gradient clipping"
    strand = "basics"
    kind = "basics"
    assignment = "basics"
    # per step: norms of the gradients of [embedding, attention, MLP, output head]
    variants = {
        "A": {"max_norm": 1.0, "tensor_norms": [      # GPT-3's threshold
            [0.21, 0.35, 0.42, 0.18], [0.55, 0.62, 0.71, 0.30], [0.12, 0.19, 0.25, 0.09],
            [0.40, 2.85, 1.10, 0.33], [0.30, 0.41, 0.52, 0.22], [0.25, 0.33, 0.38, 0.95]]},
        "B": {"max_norm": 0.3, "tensor_norms": [      # OPT-175B's lowered threshold
            [0.05, 0.12, 0.16, 0.07], [0.09, 0.21, 0.19, 0.11], [0.31, 0.88, 0.47, 0.26],
            [0.04, 0.09, 0.11, 0.05], [0.06, 0.14, 0.17, 0.08], [0.07, 0.15, 0.13, 0.05]]},
        "C": {"max_norm": 1.0, "tensor_norms": [      # LLaMA's threshold
            [0.48, 0.52, 0.61, 0.27], [0.36, 0.44, 0.58, 0.25], [1.90, 6.40, 3.30, 0.80],
            [0.51, 0.58, 0.66, 0.31], [0.29, 0.37, 0.45, 0.21], [0.33, 0.41, 0.47, 0.19]]},
        "D": {"max_norm": 0.3, "tensor_norms": [      # OPT-175B's lowered threshold
            [0.02, 0.05, 0.06, 0.03], [0.11, 0.17, 0.20, 0.09], [0.13, 0.18, 0.21, 0.10],
            [0.90, 4.10, 2.20, 0.60], [0.05, 0.08, 0.09, 0.04], [0.21, 0.26, 0.34, 0.12]]},
    }
    checks = {
        "global_norms": Numbers(rtol=1e-6),
        "clip_coefficients": Numbers(rtol=1e-5),
        "clipped_steps": Numbers(exact=True),
    }
    cells = {"check_clipping": ("global_norms", "clip_coefficients", "clipped_steps")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake(
            "sum-of-norms",
            "the per-tensor norms were added; the global norm is the square root of the sum of "
            "their squares, the norm of all gradients laid end to end.",
            lambda q: _answers(q, combine=math.fsum),
            instant="how the tensors' norms combine into one global norm.",
        ),
        Mistake(
            "per-tensor-threshold",
            "a step was called clipped when one tensor's norm passed the threshold; torch "
            "compares the global norm of all tensors together with max_norm.",
            _per_tensor,
            instant="what torch compares with max_norm.",
        ),
        Mistake(
            "squared-norm",
            "the square root was left off: the sum of squared norms is the squared global norm.",
            lambda q: _answers(q, combine=lambda norms: math.fsum(n * n for n in norms)),
            instant="the definition of the Euclidean norm itself.",
        ),
        Mistake(
            "coefficient-not-clamped",
            "the coefficient was not capped at 1; clip_grad_norm_ never scales a gradient up, "
            "so on ordinary steps it multiplies by exactly 1.",
            lambda q: {"clip_coefficients": _answers(q, clamp=False)["clip_coefficients"]},
            instant="what clip_grad_norm_ does on an ordinary step.",
        ),
        Mistake(
            "one-based-steps",
            "the step indices look 1-based; the first step is index 0.",
            lambda q: {"clipped_steps": [i + 1 for i in _answers(q)["clipped_steps"]]},
            instant="how the steps are indexed.",
        ),
    )


PROBLEM = GradientClippingProblem()
