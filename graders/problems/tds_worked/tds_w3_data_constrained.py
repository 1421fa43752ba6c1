"""tds-w3-data-constrained: what repeated tokens are worth, in Muennighoff et al.'s law.

Source: Muennighoff, Rush, Barak, Le Scao, Piktus, Tazi, Pyysalo, Wolf and Raffel, "Scaling
Data-Constrained Language Models" (NeurIPS 2023, arXiv 2305.16264), §3.1, eqs. (5)-(6). A run
that sees U_D unique tokens and repeats them R_D more times (R_D = epochs - 1) has the value of
    D' = U_D + U_D R*_D (1 - exp(-R_D / R*_D))
fresh tokens: each repetition is worth exp(-1/R*_D) of the one before, and the total value of
all repetitions is capped at U_D R*_D. Excess parameters get the same form with their own
constant R*_N. The fitted constants the paper prints are R*_D = 15.4 and R*_N = 5.3; the
authors' repository (huggingface/datablations, README "Parametric Fit") gives them unrounded,
15.387756 and 5.309743, with the rest of the fit.

Here the variant gives a corpus of `unique_tokens` U, a list of epoch counts (total passes over
it, >= 1), a `target_effective` amount of fresh-token value, and both fitted constants.
Answers: `effective_data_expr` (D' as an expression in the total tokens D, with the variant's U
and R*_D as numbers), `effective_tokens` and `value_lost` (1 - D'/D) at each epoch count,
`half_value_epochs` (the pass count at which one more repeated pass is worth half a pass of new
data: the marginal value U exp(-R/R*_D) equals U/2) and `epochs_for_target` (the passes over the
corpus needed for D' to reach the target).
"""
from __future__ import annotations

import math

import sympy

from graders.numeric import Number, Numbers
from graders.problem import Mistake, Problem
from graders.problems.common.changed import changed_answers
from graders.symbolic import Expr, symbols_for

SYMBOLS = ("D",)


def effective(unique, repetitions, r_star):
    """Muennighoff et al. eq. (5): the value of `unique` items seen 1 + `repetitions` times.

    The same form serves data (U_D, R_D, R*_D) and excess parameters (U_N, R_N, R*_N)."""
    return unique + unique * r_star * (1 - math.exp(-repetitions / r_star))


def _read(q):
    unique, target = float(q["unique_tokens"]), float(q["target_effective"])
    r_data, r_params = float(q["r_star_data"]), float(q["r_star_params"])
    epochs = [float(e) for e in q["epochs"]]
    if not (unique > 0 and r_data > 0 and r_params > 0) or not epochs or any(not e >= 1 for e in epochs):
        raise ValueError("unique_tokens and the fitted constants must be positive, every epoch count >= 1")
    if not unique < target < unique * (1 + r_data):
        raise ValueError("target_effective must lie between one pass and the cap U (1 + R*_D)")
    return unique, epochs, target, r_data, r_params


def _answers(q, *, offset=1.0, decay=True, constant="data", average=False):
    """The reference; the keywords reproduce declared mistakes:
    offset=0 counts every pass as a repetition, decay=False counts repeats as fresh,
    constant="params" uses R*_N, average=True asks when the *average* repeat is worth half."""
    unique, epochs, target, r_data, r_params = _read(q)
    r_star = r_data if constant == "data" else r_params
    if decay:
        value = lambda e: effective(unique, e - offset, r_star)   # noqa: E731
        # the marginal pass is worth half a fresh one: exp(-R/R*) = 1/2
        half = r_star * math.log(2) + offset
        if average:   # the repeats so far worth half on average: (1 - e^-x)/x = 1/2, x = R/R*
            x = _average_half()
            half = r_star * x + offset
        left = 1 - (target / unique - 1) / r_star
        need = offset - r_star * math.log(left) if left > 0 else None   # None: past the cap
    else:
        value = lambda e: unique * e   # noqa: E731
        half = None                    # fresh-valued repeats are never worth half
        need = target / unique
    D = symbols_for(SYMBOLS)["D"]
    U, R = sympy.nsimplify(unique), sympy.nsimplify(r_star)
    expr = (U + U * R * (1 - sympy.exp(-(D / U - offset) / R))) if decay else D
    tokens = [value(e) for e in epochs]
    return {
        "effective_data_expr": expr,
        "effective_tokens": tokens,
        "value_lost": [1 - t / (unique * e) for t, e in zip(tokens, epochs)],
        "half_value_epochs": half,
        "epochs_for_target": need,
    }


def _average_half():
    """The x > 0 with (1 - exp(-x)) / x = 1/2 (bisection; the left side falls from 1 to 0)."""
    lo, hi = 1e-9, 10.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if (1 - math.exp(-mid)) / mid > 0.5:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


class DataConstrainedWorked(Problem):
    id = "tds-w3-data-constrained"
    title = "Data-constrained scaling: what repeated tokens are worth"
    strand = "mathematics"
    kind = "worked"
    assignment = "tds-worked"
    symbols = SYMBOLS
    # Real corpora and budgets; R*_D = 15.4 and R*_N = 5.3 as printed (Muennighoff et al. §3.1).
    # A: a 1.4T-token budget (Chinchilla's, Hoffmann et al. 2022) on a 100B-token corpus.
    # B: Muennighoff et al.'s Fig. 1 (right): 25B unique tokens, runs of 178B and 242B tokens.
    # C: Galactica (Taylor et al. 2022): a 106B-token corpus, 450B tokens trained (4.25 epochs).
    # D: phi-1 (Gunasekar et al. 2023): about 7B tokens of code and text, about 8 passes.
    variants = {
        "A": {"unique_tokens": 100e9, "epochs": [1, 4, 14, 40], "target_effective": 1.4e12,
              "r_star_data": 15.4, "r_star_params": 5.3},
        "B": {"unique_tokens": 25e9, "epochs": [4, 7.12, 9.68, 20], "target_effective": 178e9,
              "r_star_data": 15.4, "r_star_params": 5.3},
        "C": {"unique_tokens": 106e9, "epochs": [1, 2, 4.25, 10], "target_effective": 1e12,
              "r_star_data": 15.4, "r_star_params": 5.3},
        "D": {"unique_tokens": 7e9, "epochs": [2, 8, 16, 100], "target_effective": 50e9,
              "r_star_data": 15.4, "r_star_params": 5.3},
    }
    checks = {
        "effective_data_expr": Expr(symbols=SYMBOLS, rtol=1e-6),
        "effective_tokens": Numbers(rtol=1e-4),
        "value_lost": Numbers(rtol=1e-4, atol=1e-9),
        "half_value_epochs": Number(rtol=1e-4),
        "epochs_for_target": Number(rtol=1e-4),
    }
    cells = {
        "check_expression": ("effective_data_expr",),
        "check_numbers": ("effective_tokens", "value_lost", "half_value_epochs", "epochs_for_target"),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("epochs-as-repetitions",
                "R_D counts the repetitions beyond the first pass, R_D = epochs - 1; counting every "
                "pass as a repetition discounts the first, fresh pass as if it were a repeat.",
                lambda q: changed_answers(_answers, q, offset=0.0),
                instant="which passes of the corpus count as repetitions."),
        Mistake("repeats-as-fresh",
                "a repeated token was valued like a new one (D' = D); in the law each repetition is "
                "worth exp(-1/R*_D) of the one before, and all of them together at most U_D R*_D.",
                lambda q: changed_answers(_answers, q, decay=False),
                instant="how the value of a token decays each time it is seen again."),
        Mistake("parameter-constant",
                "R*_N = 5.3 is the constant of the excess-parameter term; the data term uses its own "
                "fitted constant, R*_D = 15.4.",
                lambda q: changed_answers(_answers, q, constant="params"),
                instant="which fitted constant of the law governs repeated data."),
        Mistake("average-not-marginal",
                "the half-value point asks when the next repeated pass is worth half a fresh pass (the "
                "marginal value U_D exp(-R_D/R*_D) = U_D/2), not when the repeats so far are worth half "
                "on average.",
                lambda q: changed_answers(_answers, q, average=True),
                instant="the value of one further pass, as against the passes so far."),
    )


PROBLEM = DataConstrainedWorked()
