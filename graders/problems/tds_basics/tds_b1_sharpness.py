"""tds-b1-sharpness: the sharpness of a loss, and the learning rates gradient descent survives.

The term. The sharpness of a loss at a point is the largest eigenvalue of its Hessian there
(Cohen, Kaur, Li, Kolter and Talwalkar, "Gradient Descent on Neural Networks Typically Occurs
at the Edge of Stability", ICLR 2021, §1-§2). On a quadratic L(x) = ½ xᵀHx gradient descent
x <- x - η H x multiplies the component along an eigenvector of eigenvalue a by (1 - η a), so it
converges from every start exactly when |1 - η a| < 1 for every eigenvalue, i.e. when
η · sharpness < 2; at η > 2 / sharpness it diverges along the top eigenvector (ibid. §2, where
2/η is the "stability threshold").

The computed check. A symmetric 3 x 3 Hessian with off-diagonal coupling, so that its largest
diagonal entry, its largest eigenvalue and its trace are three different numbers, and four
learning rates straddling the threshold. Answers: `sharpness` (largest eigenvalue),
`stable_lr_limit` (2 / sharpness), `stable_lrs` (0-based indices of the rates with
η · sharpness < 2).
"""
from __future__ import annotations

import math

import numpy as np

from graders.numeric import Number, Numbers
from graders.problem import Mistake, Problem


def _read(q):
    h = np.array(q["hessian"], dtype=float)
    if h.shape != (3, 3) or not np.all(np.isfinite(h)) or not np.allclose(h, h.T):
        raise ValueError("hessian must be a symmetric 3 x 3 list of finite numbers")
    lrs = [float(x) for x in q["lrs"]]
    if not lrs or any(not (x > 0 and math.isfinite(x)) for x in lrs):
        raise ValueError("lrs must be a non-empty list of positive learning rates")
    return h, lrs


def _answers(q, *, curvature=None, limit_factor=2.0):
    h, lrs = _read(q)
    sharp = float(np.linalg.eigvalsh(h)[-1]) if curvature is None else curvature(h)
    if sharp <= 0:
        raise ValueError("the Hessian's largest eigenvalue must be positive")
    limit = limit_factor / sharp
    return {"sharpness": sharp, "stable_lr_limit": limit,
            "stable_lrs": [i for i, lr in enumerate(lrs) if lr < limit]}


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    return {k: v for k, v in wrong.items() if v != right[k]}


class SharpnessBasics(Problem):
    id = "tds-b1-sharpness"
    title = "Sharpness: the largest Hessian eigenvalue, and the rates GD survives"
    strand = "basics"
    kind = "basics"
    assignment = "tds-basics"
    # Hessians of small quadratics with coupled coordinates; rates on both sides of 2/sharpness.
    variants = {
        "A": {"hessian": [[4.0, 1.5, 0.0], [1.5, 3.0, 1.0], [0.0, 1.0, 1.0]], "lrs": [0.1, 0.3, 0.4, 0.5]},
        "B": {"hessian": [[10.0, 4.0, 2.0], [4.0, 8.0, 0.0], [2.0, 0.0, 3.0]], "lrs": [0.05, 0.12, 0.15, 0.2]},
        "C": {"hessian": [[1.0, 0.6, 0.3], [0.6, 2.0, 0.8], [0.3, 0.8, 0.5]], "lrs": [0.5, 0.8, 0.9, 1.2]},
        "D": {"hessian": [[50.0, 20.0, 5.0], [20.0, 30.0, 10.0], [5.0, 10.0, 20.0]], "lrs": [0.01, 0.025, 0.03, 0.05]},
    }
    checks = {
        "sharpness": Number(rtol=1e-6),
        "stable_lr_limit": Number(rtol=1e-6),
        "stable_lrs": Numbers(exact=True),
    }
    cells = {"check_sharpness": ("sharpness", "stable_lr_limit", "stable_lrs")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("largest-diagonal-entry",
                "the largest diagonal entry was taken for the sharpness; off-diagonal coupling makes the "
                "largest eigenvalue bigger than any diagonal entry, so take the eigenvalue.",
                lambda q: _changed(q, curvature=lambda h: float(np.max(np.diag(h)))),
                instant="what the off-diagonal entries of the Hessian contribute to its top eigenvalue."),
        Mistake("trace-not-eigenvalue",
                "the trace (the sum of all eigenvalues) was taken for the sharpness; the sharpness is the "
                "largest eigenvalue alone.",
                lambda q: _changed(q, curvature=lambda h: float(np.trace(h))),
                instant="which single eigenvalue of the Hessian the sharpness names."),
        Mistake("one-over-sharpness",
                "1/sharpness is where the top direction stops converging monotonically and starts to "
                "oscillate; gradient descent still converges up to 2/sharpness.",
                lambda q: _changed(q, limit_factor=1.0),
                instant="the boundary between oscillating and diverging along the top direction."),
    )


PROBLEM = SharpnessBasics()
