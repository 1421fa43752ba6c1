"""tds-t4-inference-aware-scaling: why over-trained models are the rational choice.

Source: Sardana, Portes, Doubov & Frankle, "Beyond Chinchilla-Optimal: Accounting for Inference in
Language Model Scaling Laws" (arXiv 2401.00448, ICML 2024), §2. Minimise the lifetime compute
6 N D (training) + 2 N D_inf (inference) over (N, D) subject to a target loss
L(N, D) = E + A / N^alpha + B / D^beta (Hoffmann et al. 2022's parametric fit, their eq. 10).

- Along the iso-loss curve D(N) = (B / (ℓ - E - A / N^alpha))^(1/beta), the cost is a function of N
  alone; its minimum is found numerically (here a golden-section search on log N).
- The Lagrange condition at the optimum, solved for the inference demand that makes a pair (N, D)
  optimal: D_inf = 3 (alpha A D^(beta+1) / (beta B N^alpha) - D). At D_inf = 0 it is Chinchilla's
  compute-optimal condition.
- The Chinchilla-optimal pair at the same loss minimises 6 N D alone.

The fit's coefficients are the variant's. Sardana et al. use E = 1.69, A = 406.4, B = 410.7 with
alpha = 0.336 and beta = 0.283 (one digit more than Hoffmann et al.'s eq. 10 prints, 0.34 and 0.28):
with them the paper's Figure 1 (13B -> 7B at 2T inference tokens, 1.7e22 FLOPs, 17%) is reproduced,
with the rounded exponents it is not. Variant C uses Besiroglu et al. 2024's refit.

Answers: `dinf_expr` (the inference demand that makes (N, D) optimal, an expression in N and D with
the variant's coefficients as numbers), `chinchilla_N`, `chinchilla_D` (the Chinchilla-optimal pair at
the target loss), `optimal_N`, `optimal_D` (the lifetime-optimal pair at that loss and demand),
`compute_saving` (the fraction of the Chinchilla pair's lifetime FLOPs that the optimal pair saves).
"""
from __future__ import annotations

import math

import sympy

from graders.numeric import Number
from graders.problem import Mistake, Problem
from graders.symbolic import Expr, symbols_for

SYMBOLS = ("N", "D")
RANGES = (("N", (1e9, 1e11)), ("D", (1e11, 1e13)))


def _read(q):
    fit = {k: float(q["fit"][k]) for k in ("E", "A", "B", "alpha", "beta")}
    loss, demand = float(q["target_loss"]), float(q["inference_tokens"])
    if not (loss > fit["E"] and demand > 0 and all(v > 0 for v in fit.values())):
        raise ValueError("the target loss must lie above E, with a positive demand and fit")
    return fit, loss, demand


def tokens_for_loss(n, loss, fit):
    """Training tokens D at which a model of n parameters reaches `loss` (infinite if it cannot)."""
    gap = loss - fit["E"] - fit["A"] / n ** fit["alpha"]
    return (fit["B"] / gap) ** (1 / fit["beta"]) if gap > 0 else math.inf


def _smallest_n(loss, fit):
    """The parameter count below which `loss` cannot be reached with any amount of data."""
    return (fit["A"] / (loss - fit["E"])) ** (1 / fit["alpha"])


def lifetime_optimum(loss, demand, fit, train_flops=6.0, inference_flops=2.0):
    """The N minimising train_flops N D(N) + inference_flops N demand along the iso-loss curve,
    by golden-section search on log N (the cost is unimodal there), and its D."""
    def cost(log_n):
        n = math.exp(log_n)
        return train_flops * n * tokens_for_loss(n, loss, fit) + inference_flops * n * demand

    lo = math.log(_smallest_n(loss, fit)) + 1e-9
    hi = lo + math.log(1e4)
    golden = (math.sqrt(5) - 1) / 2
    for _ in range(300):
        c, d = hi - golden * (hi - lo), lo + golden * (hi - lo)
        if cost(c) < cost(d):
            hi = d
        else:
            lo = c
    n = math.exp((lo + hi) / 2)
    return n, tokens_for_loss(n, loss, fit)


def _twenty_tokens_pair(loss, fit):
    """The pair with D = 20 N at the target loss (the rule of thumb), by bisection on log N."""
    lo, hi = math.log(_smallest_n(loss, fit)) + 1e-9, math.log(_smallest_n(loss, fit)) + math.log(1e5)
    for _ in range(200):
        mid = (lo + hi) / 2
        n = math.exp(mid)
        if tokens_for_loss(n, loss, fit) > 20 * n:
            lo = mid
        else:
            hi = mid
    n = math.exp((lo + hi) / 2)
    return n, 20 * n


def _answers(q, *, ignore_inference=False, inference_flops=2.0, twenty_rule=False):
    fit, loss, demand = _read(q)
    s = symbols_for(SYMBOLS)
    n_sym, d_sym = s["N"], s["D"]
    a, b, alpha, beta = (sympy.Float(fit[k], 15) for k in ("A", "B", "alpha", "beta"))
    per_token = sympy.Rational(6) / sympy.nsimplify(inference_flops)
    dinf_expr = per_token * (alpha * a * d_sym ** (beta + 1) / (beta * b * n_sym ** alpha) - d_sym)
    cn, cd = _twenty_tokens_pair(loss, fit) if twenty_rule else lifetime_optimum(loss, 0.0, fit)
    on, od = (cn, cd) if ignore_inference else lifetime_optimum(loss, demand, fit, inference_flops=inference_flops)
    chinchilla_cost = 6 * cn * cd + 2 * cn * demand
    optimal_cost = 6 * on * od + 2 * on * demand
    return {"dinf_expr": dinf_expr, "chinchilla_N": cn, "chinchilla_D": cd, "optimal_N": on, "optimal_D": od,
            "compute_saving": 1 - optimal_cost / chinchilla_cost}


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    out = {}
    for k, v in wrong.items():
        if isinstance(v, sympy.Basic):
            if sympy.simplify(v - right[k]) != 0:
                out[k] = v
        elif not math.isclose(v, right[k], rel_tol=1e-6, abs_tol=1e-12):
            out[k] = v
    return out


SARDANA_FIT = {"E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.336, "beta": 0.283}
BESIROGLU_FIT = {"E": 1.8172, "A": 482.01, "B": 2085.43, "alpha": 0.3478, "beta": 0.3658}


class InferenceAwareScalingTheory(Problem):
    id = "tds-t4-inference-aware-scaling"
    title = "Why over-trained models are rational: scaling laws with inference"
    strand = "theory"
    kind = "theory"
    assignment = "tds-theory"
    symbols = SYMBOLS
    variants = {
        # Target losses of 7B-, 30B- and 70B-class models; demands from ~1B requests of ~1k tokens
        # (Sardana et al.'s "reasonably large demand") up to a heavily served model (1e13-5e13 tokens).
        "A": {"fit": dict(SARDANA_FIT), "target_loss": 2.1, "inference_tokens": 1e12},
        "B": {"fit": dict(SARDANA_FIT), "target_loss": 1.95, "inference_tokens": 1e13},
        "C": {"fit": dict(BESIROGLU_FIT), "target_loss": 2.05, "inference_tokens": 5e12},
        "D": {"fit": dict(SARDANA_FIT), "target_loss": 2.3, "inference_tokens": 1e13},
    }
    checks = {
        "dinf_expr": Expr(symbols=SYMBOLS, rtol=1e-6, ranges=RANGES),
        "chinchilla_N": Number(rtol=1e-3),
        "chinchilla_D": Number(rtol=1e-3),
        "optimal_N": Number(rtol=1e-3),
        "optimal_D": Number(rtol=1e-3),
        "compute_saving": Number(rtol=1e-3),
    }
    cells = {"check_expression": ("dinf_expr",),
             "check_numbers": ("chinchilla_N", "chinchilla_D", "optimal_N", "optimal_D", "compute_saving")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("ignores-inference",
                "this is the Chinchilla-optimal pair: it minimises training compute alone. With 2 N FLOPs "
                "per inference token in the cost, the optimum moves to a smaller model trained on more tokens.",
                lambda q: _changed(q, ignore_inference=True),
                instant="what the lifetime cost contains beyond training."),
        Mistake("inference-priced-as-training",
                "an inference token costs a forward pass, about 2 N FLOPs, not the 6 N of a training token "
                "(forward and backward); pricing it at 6 N overstates the pull towards small models.",
                lambda q: _changed(q, inference_flops=6.0),
                instant="what one inference token costs compared with one training token."),
        Mistake("twenty-tokens-rule",
                "the Chinchilla-optimal pair at a loss comes from the fit (minimise 6 N D on the iso-loss "
                "curve), not from the 20-tokens-per-parameter rule of thumb, which this fit does not give.",
                lambda q: _changed(q, twenty_rule=True),
                instant="where the compute-optimal pair at a given loss comes from."),
    )


PROBLEM = InferenceAwareScalingTheory()
