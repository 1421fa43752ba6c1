"""tds-e2-metric-artefacts: a smooth per-token loss, an abrupt exact-match curve.

Source: Schaeffer, Miranda and Koyejo, "Are Emergent Abilities of Large Language Models a Mirage?"
(NeurIPS 2023), §2: suppose the per-token cross-entropy falls with parameter count as a power law,
L_CE(N) = (N/c)^α with α < 0 (the form of Kaplan et al. 2020, eq. 1.1, L(N) = (N_c/N)^α_N), and
read the chance of a correct token as p(N) = exp(-L_CE(N)). Then the exact match of an L-token
answer is p(N)^L = exp(-L (N/c)^α), which stays near 0 over decades of N and rises steeply, while
the expected token edit distance L (1 - p(N)) falls smoothly.

Answers, for the variant's c, α, answer length L, model sizes and a target score:
`token_accuracy` (p at each size), `exact_match` (p^L at each size), `emergence_size` (the N at
which the exact match equals the target, c (-ln(target)/L)^(1/α)), `accuracy_at_emergence`
(p there, target^(1/L)) and `exact_match_expr` (the exact match as an expression in N).
"""
from __future__ import annotations

import math

import sympy

from graders.numeric import Number, Numbers
from graders.problem import Mistake, Problem
from graders.symbolic import Expr, symbols_for

SYMBOLS = ("N",)


def _read(q):
    c, alpha, target = float(q["c"]), float(q["alpha"]), float(q["target"])
    length = int(q["length"])
    sizes = [float(n) for n in q["sizes"]]
    if not (c > 0 and alpha < 0 and 0 < target < 1 and length >= 1) or not sizes or min(sizes) <= 0:
        raise ValueError("need c > 0, alpha < 0, 0 < target < 1, length >= 1 and positive sizes")
    return c, alpha, length, sizes, target


def _answers(q, *, accuracy=None, score=None, solve_log=True):
    c, alpha, length, sizes, target = _read(q)
    accuracy = accuracy or (lambda loss: math.exp(-loss))
    score = score or (lambda p, n: p ** n)
    ps = [accuracy((n / c) ** alpha) for n in sizes]
    level = -math.log(target) / length if solve_log else target / length
    N = symbols_for(SYMBOLS)["N"]
    return {
        "token_accuracy": ps,
        "exact_match": [score(p, length) for p in ps],
        "emergence_size": c * level ** (1 / alpha),
        "accuracy_at_emergence": target ** (1 / length),
        "exact_match_expr": sympy.exp(-length * (N / sympy.Float(c)) ** sympy.Float(alpha)),
    }


def _only(keys, **kw):
    def wrong(q):
        right, bad = _answers(q), _answers(q, **kw)
        return {k: bad[k] for k in keys if bad[k] != right[k]}
    return wrong


class MetricArtefactsExercise(Problem):
    id = "tds-e2-metric-artefacts"
    title = "Emergence from the metric: exact match of a smoothly improving model"
    strand = "mathematics"
    kind = "exercise"
    assignment = "tds-exercises"
    symbols = SYMBOLS
    # Task-level power laws (c, alpha) with answer lengths of a few to a dozen tokens, and model
    # sizes on a decade grid from 10^7 to 10^12 parameters, as in Schaeffer et al.'s Fig. 2.
    variants = {
        "A": {"c": 3.0e9, "alpha": -0.5, "length": 5, "sizes": [1e7, 1e8, 1e9, 1e10, 1e11, 1e12], "target": 0.5},
        "B": {"c": 1.0e10, "alpha": -0.3, "length": 10, "sizes": [1e8, 1e9, 1e10, 1e11, 1e12], "target": 0.5},
        "C": {"c": 5.0e8, "alpha": -0.4, "length": 3, "sizes": [1e7, 1e8, 1e9, 1e10, 1e11], "target": 0.8},
        "D": {"c": 2.0e9, "alpha": -0.6, "length": 12, "sizes": [1e8, 1e9, 1e10, 1e11, 1e12], "target": 0.25},
    }
    checks = {
        "exact_match_expr": Expr(symbols=SYMBOLS, rtol=1e-6, ranges=(("N", (1e8, 1e11)),)),
        "token_accuracy": Numbers(rtol=1e-6),
        "exact_match": Numbers(rtol=1e-6, atol=1e-15),
        "emergence_size": Number(rtol=1e-6),
        "accuracy_at_emergence": Number(rtol=1e-6),
    }
    cells = {"check_expression": ("exact_match_expr",),
             "check_numbers": ("token_accuracy", "exact_match", "emergence_size", "accuracy_at_emergence")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("loss-as-error-rate",
                "the per-token accuracy was taken as 1 - L_CE; a cross-entropy is -log p of the right "
                "token, so p = exp(-L_CE).",
                _only(("token_accuracy", "exact_match"), accuracy=lambda loss: 1 - loss),
                instant="what a cross-entropy measures about the probability of the right token."),
        Mistake("linearised-exact-match",
                "the score 1 - L (1 - p) is one minus the expected number of wrong tokens (the expected "
                "token edit distance), which agrees with exact match only to first order in 1 - p, for p "
                "near 1; exact match needs all L tokens right, p^L.",
                _only(("exact_match",), score=lambda p, n: 1 - n * (1 - p)),
                instant="how per-token successes combine into exact match."),
        Mistake("no-logarithm",
                "setting exp(-L (N/c)^α) equal to the target needs a logarithm: (N/c)^α = -ln(target)/L.",
                _only(("emergence_size",), solve_log=False),
                instant="isolating the model size from inside the exponential."),
    )


PROBLEM = MetricArtefactsExercise()
