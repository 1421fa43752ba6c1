"""tds-t2-ntk-linearisation: why a wide network trains like its linearisation, eigendirection by eigendirection.

Sources: Jacot, Gabriel & Hongler, "Neural Tangent Kernel: Convergence and Generalization in Neural
Networks" (NeurIPS 2018, arXiv 1806.07572): in the infinite-width limit the tangent kernel is
deterministic at initialisation (their Theorem 1) and stays constant during training (Theorem 2).
Lee et al., "Wide Neural Networks of Any Depth Evolve as Linear Models Under Gradient Descent"
(NeurIPS 2019, arXiv 1902.06720), §2: under squared loss the linearised network's outputs on the
training set follow f_t - y = exp(-η Θ t)(f_0 - y) under gradient flow, and the real network stays
within O(1/sqrt(width)) of them (their Theorem 2.1, stated for rates below a critical rate; its
exact form was not verified here). Gradient descent on the linearised model converges for
η < 2 / λ_max(Θ): the quadratic's bound (tds-c1, tds-e1).

Convention here: loss ½ Σ_k (f(x_k) - y_k)² summed over the n training points (no 1/n), kernel
Θ = J Jᵀ (J the Jacobian of the n outputs with respect to all parameters), eigenvalues μ_i
(λ is kept for weight decay, as in the course's notation). Gradient descent on the linearised model
multiplies the residual's component along eigenvector i by (1 - η μ_i) each step, so it is stable
while |1 - η μ_i| < 1 for every i, that is η < 2 / μ_max. Gradient flow shrinks it by exp(-η μ_i t)
after t units of time (t steps of size η).

Answers, for the variant's kernel eigenvalues, rate and shrink factor r: `gd_residual_expr` (the
component after t steps of gradient descent, over its start, in eta, mu, t), `flow_residual_expr`
(the same under gradient flow after time t, in units of steps), `stability_bound` (the largest
stable rate), `gd_steps` (per eigenvalue, the fewest whole steps of gradient descent after which
the component has shrunk by at least r in magnitude) and `flow_steps` (per eigenvalue, the
gradient-flow estimate of that number, not rounded).

The variants' spectra are the empirical NTK of a two-layer ReLU network of width 4096 (NTK
parametrisation) on a few points on the unit sphere: `empirical_ntk` computes them, and the test
recomputes them and trains the real network to check the predicted decay.
"""
from __future__ import annotations

import math

import sympy

from graders.numeric import Number, Numbers
from graders.problem import Mistake, Problem
from graders.symbolic import Expr, symbols_for

SYMBOLS = ("eta", "mu", "t")
RANGES = (("eta", (0.01, 0.1)), ("mu", (0.5, 5.0)), ("t", (1.0, 30.0)))


def _read(q):
    mus = [float(m) for m in q["eigenvalues"]]
    lr, r = float(q["lr"]), float(q["shrink"])
    if not mus or any(not m > 0 for m in mus) or not (lr > 0 and r > 1):
        raise ValueError("need positive eigenvalues, a positive rate and a shrink factor above 1")
    if lr * max(mus) >= 2 or any(math.isclose(lr * m, 1.0) for m in mus):
        raise ValueError("keep the rate stable, and off η μ = 1 where a component vanishes in one step")
    return mus, lr, r


def _answers(q, *, bound_numerator=2.0, bound_from_smallest=False, flow_for_gd=False):
    mus, lr, r = _read(q)
    s = symbols_for(SYMBOLS)
    eta, mu, t = s["eta"], s["mu"], s["t"]
    flow = [math.log(r) / (lr * m) for m in mus]
    if flow_for_gd:
        gd = [math.ceil(f) for f in flow]
    else:
        gd = [math.ceil(math.log(r) / -math.log(abs(1 - lr * m))) for m in mus]
    edge = min(mus) if bound_from_smallest else max(mus)
    return {
        "gd_residual_expr": sympy.exp(-eta * mu * t) if flow_for_gd else (1 - eta * mu) ** t,
        "flow_residual_expr": sympy.exp(-eta * mu * t),
        "stability_bound": bound_numerator / edge,
        "gd_steps": gd,
        "flow_steps": flow,
    }


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    out = {}
    for k, v in wrong.items():
        same = sympy.simplify(v - right[k]) == 0 if isinstance(v, sympy.Basic) else v == right[k]
        if not same:
            out[k] = v
    return out


def sphere_points(n, dim, seed):
    """n points drawn uniformly on the unit sphere in `dim` dimensions."""
    import numpy as np
    x = np.random.default_rng(seed).standard_normal((n, dim))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def two_layer(width, dim, seed):
    """A two-layer ReLU network in the NTK parametrisation, f(x) = a · relu(W x) / sqrt(width),
    with standard normal W and a."""
    import numpy as np
    rng = np.random.default_rng(seed + 1)
    return rng.standard_normal((width, dim)), rng.standard_normal(width)


def empirical_ntk(x, w, a):
    """Θ = J Jᵀ on the rows of x, for the network (w, a): the a-part and the W-part of the Jacobian."""
    pre = x @ w.T
    act, on = (pre > 0) * pre, (pre > 0).astype(float)
    return (act @ act.T + (on * a ** 2) @ on.T * (x @ x.T)) / w.shape[0]


def train_two_layer(x, y, w, a, lr, steps):
    """Full-batch gradient descent on ½ Σ (f(x_k) - y_k)²; the residual f - y after each step."""
    import numpy as np
    w, a = w.copy(), a.copy()
    scale = 1 / np.sqrt(w.shape[0])
    residuals = []
    for _ in range(steps + 1):
        pre = x @ w.T
        act = (pre > 0) * pre
        res = scale * act @ a - y
        residuals.append(res)
        grad_a = scale * act.T @ res
        grad_w = scale * ((pre > 0) * a * res[:, None]).T @ x
        a -= lr * grad_a
        w -= lr * grad_w
    return residuals


class NtkLinearisationTheory(Problem):
    id = "tds-t2-ntk-linearisation"
    title = "Why a wide network trains like its linearisation"
    strand = "theory"
    kind = "theory"
    assignment = "tds-theory"
    symbols = SYMBOLS
    # Eigenvalues (4 decimals) of the empirical NTK of a width-4096 two-layer ReLU network on
    # `points` points on the unit sphere in `dim` dimensions (seeded), as `empirical_ntk` gives them.
    variants = {
        "A": {"points": 6, "dim": 3, "seed": 0, "lr": 0.7, "shrink": 100.0,
              "eigenvalues": [2.7155, 1.6067, 1.0154, 0.3468, 0.2073, 0.1093]},
        "B": {"points": 8, "dim": 5, "seed": 1, "lr": 0.5, "shrink": 1000.0,
              "eigenvalues": [2.2139, 1.6038, 1.1758, 1.0313, 0.9182, 0.4769, 0.3926, 0.228]},
        "C": {"points": 5, "dim": 2, "seed": 2, "lr": 0.3, "shrink": 50.0,
              "eigenvalues": [2.7767, 1.2499, 0.7315, 0.2809, 0.0191]},
        "D": {"points": 10, "dim": 4, "seed": 3, "lr": 0.6, "shrink": 10.0,
              "eigenvalues": [3.1416, 2.2757, 1.7266, 0.9445, 0.6323, 0.4347, 0.3856, 0.1423, 0.0903, 0.0741]},
    }
    checks = {
        "gd_residual_expr": Expr(symbols=SYMBOLS, ranges=RANGES),
        "flow_residual_expr": Expr(symbols=SYMBOLS, ranges=RANGES),
        "stability_bound": Number(rtol=1e-6),
        "gd_steps": Numbers(exact=True),
        "flow_steps": Numbers(rtol=1e-6),
    }
    cells = {"check_expressions": ("gd_residual_expr", "flow_residual_expr"),
             "check_numbers": ("stability_bound", "gd_steps", "flow_steps")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("bound-without-two",
                "a component's multiplier 1 - η μ stays inside (-1, 1) up to η μ = 2: between 1 and 2 it "
                "oscillates and still shrinks, so the bound is 2 / μ_max, not 1 / μ_max.",
                lambda q: _changed(q, bound_numerator=1.0),
                instant="what a component does when its multiplier is negative but still inside the unit interval."),
        Mistake("bound-from-smallest",
                "the stability bound is set by the stiffest direction, the largest eigenvalue; the smallest "
                "one sets how slowly the last component converges, not whether the run is stable.",
                lambda q: _changed(q, bound_from_smallest=True),
                instant="which eigendirection decides whether gradient descent stays stable."),
        Mistake("flow-for-gd",
                "exp(-η μ t) is gradient flow; a discrete step multiplies by 1 - η μ, which differs once η μ "
                "is not small (and is negative past η μ = 1), so the step counts differ.",
                lambda q: _changed(q, flow_for_gd=True),
                instant="the difference between a discrete step and the continuous flow it approximates."),
    )


PROBLEM = NtkLinearisationTheory()
