"""tds-e10-test-set-resolution: a score of zero on a finite test set, and how much data resolves it.

Source: Schaeffer, Miranda and Koyejo, "Are Emergent Abilities of Large Language Models a Mirage?"
(NeurIPS 2023). §2 lists insufficient resolution among the ways an analysis can manufacture
emergence: on a test set of n examples the smallest nonzero accuracy is 1/n, so a model whose true
exact match is far below it scores exactly 0; §3 tests the prediction that emergence fades "with
better statistics", by scoring the same models on much more test data. The model of the model is
the one tds-e2-metric-artefacts uses (their §2): per-token cross-entropy (N/c)^α with α < 0,
per-token accuracy p = exp(-(N/c)^α), exact match of an answer of `length` tokens p^length.

Here the n test examples are independent trials, each answered exactly right with probability
EM(N) = p(N)^length, so the measured exact match reads exactly 0 with probability (1 - EM)^n.

Answers, for the variant's c, alpha, length, test-set size n, confidence level delta and a model
size `target_size`:
- `smallest_score`: the smallest nonzero exact match the test set can report, 1/n;
- `zero_probability_expr`: the chance that the measured exact match is exactly 0, as an expression
  in the symbols N (parameters) and n (test examples): (1 - exp(-length (N/c)^alpha))^n;
- `resolvable_size`: the smallest N at which that chance is at most delta,
  c (-ln(1 - delta^(1/n)) / length)^(1/alpha);
- `test_size_needed`: the smallest n at which a model of `target_size` parameters reads 0 with
  chance at most delta, ceil(ln delta / ln(1 - EM(target_size))).
tds-e2 grades p, p^L, the size at a target exact match and the accuracy there; none of those here.
"""
from __future__ import annotations

import math

import sympy

from graders.numeric import Count, Number
from graders.problem import Mistake, Problem
from graders.symbolic import Expr, symbols_for

SYMBOLS = ("N", "n")


def _read(q):
    c, alpha, delta, target = float(q["c"]), float(q["alpha"]), float(q["delta"]), float(q["target_size"])
    length, n = q["length"], q["n_test"]
    for name, value in (("length", length), ("n_test", n)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number >= 1, not {value!r}")
    if not (c > 0 and alpha < 0 and 0 < delta < 1 and target > 0):
        raise ValueError("need c > 0, alpha < 0, 0 < delta < 1 and a positive target size")
    return c, alpha, length, n, delta, target


def _answers(q, *, per_token=False, expected_count=False, flipped=False):
    """The reference; the keywords reproduce declared mistakes."""
    c, alpha, length, n, delta, target = _read(q)
    k = 1 if per_token else length                  # tokens that must all be right
    bound = 1 - delta if flipped else delta         # the chance of reading zero that is tolerated
    N, n_sym = symbols_for(SYMBOLS)["N"], symbols_for(SYMBOLS)["n"]
    em_target = math.exp(-k * (target / c) ** alpha)
    if expected_count:      # "resolvable once one correct answer is expected": EM = 1/n
        level = math.log(n) / k
        needed = math.ceil(1 / em_target)
    else:
        level = -math.log1p(-bound ** (1 / n)) / k
        needed = math.ceil(math.log(bound) / math.log1p(-em_target))
    return {
        "smallest_score": 1 / n,
        "zero_probability_expr": (1 - sympy.exp(-k * (N / sympy.Float(c)) ** sympy.Float(alpha))) ** n_sym,
        "resolvable_size": c * level ** (1 / alpha),
        "test_size_needed": needed,
    }


def _only(keys, **kw):
    def wrong(q):
        right, bad = _answers(q), _answers(q, **kw)
        out = {}
        for key in keys:
            if isinstance(right[key], sympy.Basic):
                out[key] = bad[key]
            elif bad[key] != right[key]:
                out[key] = bad[key]
        return out
    return wrong


class TestSetResolutionExercise(Problem):
    id = "tds-e10-test-set-resolution"
    title = "Resolution: when a finite test set reads a smooth model as zero"
    strand = "mathematics"
    kind = "exercise"
    assignment = "tds-exercises"
    symbols = SYMBOLS
    # The task-level power laws of tds-e2-metric-artefacts (decade grids of 10^7 to 10^12 parameters,
    # answers of 3 to 12 tokens), scored on test sets of a few hundred to a few thousand examples, the
    # size of BIG-Bench tasks; confidence levels of 5% and 1%.
    variants = {
        "A": {"c": 3.0e9, "alpha": -0.5, "length": 5, "n_test": 500, "delta": 0.05, "target_size": 1.0e9},
        "B": {"c": 1.0e10, "alpha": -0.3, "length": 10, "n_test": 1000, "delta": 0.05, "target_size": 1.0e10},
        "C": {"c": 5.0e8, "alpha": -0.4, "length": 3, "n_test": 200, "delta": 0.05, "target_size": 3.0e7},
        "D": {"c": 2.0e9, "alpha": -0.6, "length": 12, "n_test": 2000, "delta": 0.01, "target_size": 2.0e9},
    }
    checks = {
        "zero_probability_expr": Expr(symbols=SYMBOLS, rtol=1e-6, ranges=(("N", (1e8, 1e11)), ("n", (10, 2000)))),
        "smallest_score": Number(rtol=1e-9),
        "resolvable_size": Number(rtol=1e-6),
        "test_size_needed": Count(),
    }
    cells = {"check_expression": ("zero_probability_expr",),
             "check_numbers": ("smallest_score", "resolvable_size", "test_size_needed")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("token-accuracy-not-exact-match",
                "the per-token accuracy p was used as the chance of getting an example right; an example "
                "counts only when all of its tokens are right, with probability p^L.",
                _only(("zero_probability_expr", "resolvable_size", "test_size_needed"), per_token=True),
                instant="what makes one test example count as correct when scored by exact match."),
        Mistake("expected-count-criterion",
                "resolvability was read as 'one correct answer expected' (EM = 1/n); with EM = 1/n the test "
                "set still reads 0 with probability (1 - 1/n)^n, about 37%. Ask for the chance of reading 0 "
                "to be at most delta: (1 - EM)^n <= delta.",
                _only(("resolvable_size", "test_size_needed"), expected_count=True),
                instant="the difference between an expected count and the chance of observing none."),
        Mistake("confidence-level-flipped",
                "the chance of reading 0 was bounded by 1 - delta; delta is the tolerated chance of a false "
                "zero, so (1 - EM)^n <= delta.",
                _only(("resolvable_size", "test_size_needed"), flipped=True),
                instant="which event the confidence level delta bounds."),
    )


PROBLEM = TestSetResolutionExercise()
