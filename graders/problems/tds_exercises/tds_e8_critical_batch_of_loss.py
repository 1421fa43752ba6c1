"""tds-e8-critical-batch-of-loss: the critical batch grows as the loss falls.

Sources:
- Kaplan et al., "Scaling Laws for Neural Language Models" (2020, arXiv 2001.08361), §5.1,
  eq. (5.3) (also eq. (1.4) of the summary): B_crit(L) ~ B* / L^(1/alpha_B), with
  B* ~ 2e8 tokens and alpha_B ~ 0.21, L the WebText2 test loss in nats per token; the table
  of fitted constants in the same paper prints B* = 2.1e8 tokens and alpha_B = 0.21, and Fig. 10
  draws the fit as 2.1e8 * L^(-4.8). Kaplan et al. write every law of the paper in one
  convention, L = (X_c / X)^(alpha_X); the critical batch in that convention is
  L = (B* / B_crit)^alpha_B, which the student inverts.
- McCandlish, Kaplan, Amodei et al., "An Empirical Model of Large-Batch Training" (2018,
  arXiv 1812.06162), abstract and §3: the gradient noise scale, which predicts the critical
  batch, grows as the loss falls over a training run.

Answers, for the variant's b_star (tokens), alpha_b, losses (nats per token), a training batch of
`batch_sequences` sequences of `context` tokens, and a run from `start_loss` to `end_loss`:
`b_crit_expr` (B_crit as an expression in the symbol `loss`), `b_crit_at_losses` (tokens, at each
loss), `critical_loss` (the loss at which the training batch, in tokens, is the critical batch) and
`growth_factor` (B_crit at the end of the run over B_crit at its start).

The gradient-noise-scale estimators (e10-noise-scale), the step/example trade-off (t3-critical-batch)
and the measurement on a model (p8-noise-scale) are graded there, not here.
"""
from __future__ import annotations

import math

import sympy

from graders.numeric import Number, Numbers
from graders.problem import Mistake, Problem
from graders.symbolic import Expr, symbols_for

SYMBOLS = ("loss",)


def _read(q):
    """The variant's numbers, checked: positive reals, whole-number batch shapes, a falling loss."""
    p = {}
    for name in ("b_star", "alpha_b", "start_loss", "end_loss"):
        number = q[name]
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not 0 < number < math.inf:
            raise ValueError(f"{name} should be a positive real, got {number!r}")
        p[name] = float(number)
    for name in ("batch_sequences", "context"):
        value = q[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number >= 1, not {value!r}")
        p[name] = value
    p["losses"] = [float(x) for x in q["losses"]]
    if not p["losses"] or min(p["losses"]) <= 0 or p["end_loss"] >= p["start_loss"]:
        raise ValueError("need positive losses and a run whose loss falls")
    return p


def _answers(q, *, alpha_as_power=False, tokens=True, upside_down=False):
    """The reference; the keywords reproduce declared mistakes."""
    p = _read(q)
    b_star, alpha_b = p["b_star"], p["alpha_b"]
    k = alpha_b if alpha_as_power else 1.0 / alpha_b          # the power of the loss in B_crit(L)
    batch = p["batch_sequences"] * p["context"] if tokens else p["batch_sequences"]
    loss = symbols_for(SYMBOLS)["loss"]
    growth = (p["start_loss"] / p["end_loss"]) ** k
    return {
        "b_crit_expr": sympy.Float(b_star) * loss ** (-sympy.Float(k)),
        "b_crit_at_losses": [b_star * x ** (-k) for x in p["losses"]],
        "critical_loss": (b_star / batch) ** (1.0 / k),
        "growth_factor": 1.0 / growth if upside_down else growth,
    }


def _only(keys, **kw):
    def wrong(q):
        right, bad = _answers(q), _answers(q, **kw)
        out = {}
        for key in keys:
            a, b = right[key], bad[key]
            if isinstance(a, sympy.Basic):
                if sympy.simplify(a - b) != 0:
                    out[key] = b
            elif a != b:
                out[key] = b
        return out
    return wrong


class CriticalBatchOfLossExercise(Problem):
    id = "tds-e8-critical-batch-of-loss"
    title = "The critical batch as a power law in the loss"
    strand = "mathematics"
    kind = "exercise"
    assignment = "tds-exercises"
    symbols = SYMBOLS
    # Kaplan et al.'s WebText2 fit, with B* as eq. (5.3) rounds it (2e8) or as the table of fitted
    # constants prints it (2.1e8), and training batches of real runs: Kaplan et al.'s own 512 x 1024
    # tokens (§2.3), and GPT-3's 1.3B, 6.7B and 175B models (Brown et al. 2020, Table 2.1: 1M, 2M
    # and 3.2M tokens, i.e. 512, 1024 and 1536 sequences of 2048 tokens).
    variants = {
        "A": {"b_star": 2.1e8, "alpha_b": 0.21, "losses": [6.0, 5.0, 4.0, 3.5, 3.0],
              "batch_sequences": 512, "context": 1024, "start_loss": 4.5, "end_loss": 3.0},
        "B": {"b_star": 2.0e8, "alpha_b": 0.21, "losses": [4.0, 3.0, 2.5, 2.2, 2.0],
              "batch_sequences": 1536, "context": 2048, "start_loss": 3.2, "end_loss": 2.0},
        "C": {"b_star": 2.1e8, "alpha_b": 0.21, "losses": [5.5, 4.5, 3.8, 3.3],
              "batch_sequences": 512, "context": 2048, "start_loss": 5.0, "end_loss": 3.3},
        "D": {"b_star": 2.0e8, "alpha_b": 0.21, "losses": [4.2, 3.6, 3.0, 2.6, 2.3],
              "batch_sequences": 1024, "context": 2048, "start_loss": 3.6, "end_loss": 2.3},
    }
    checks = {
        "b_crit_expr": Expr(symbols=SYMBOLS, rtol=1e-6, ranges=(("loss", (1.5, 8.0)),)),
        "b_crit_at_losses": Numbers(rtol=1e-6),
        "critical_loss": Number(rtol=1e-6),
        "growth_factor": Number(rtol=1e-6),
    }
    cells = {"check_expression": ("b_crit_expr",),
             "check_numbers": ("b_crit_at_losses", "critical_loss", "growth_factor")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("exponent-not-inverted",
                "the exponent alpha_B was used where its reciprocal belongs: Kaplan et al.'s convention is "
                "L = (B*/B_crit)^alpha_B, so solving for B_crit gives B*/L^(1/alpha_B), and solving for the loss "
                "at a given batch gives (B*/B)^alpha_B.",
                _only(("b_crit_expr", "b_crit_at_losses", "critical_loss", "growth_factor"),
                      alpha_as_power=True),
                instant="solving Kaplan et al.'s convention for a scaling law for the quantity it describes."),
        Mistake("sequences-not-tokens",
                "the batch was counted in sequences; B* is a number of tokens, so the batch must be too: "
                "sequences times the context length.",
                _only(("critical_loss",), tokens=False),
                instant="the unit in which Kaplan et al. count their fitted batch constant."),
        Mistake("growth-upside-down",
                "the ratio was taken as B_crit at the start over B_crit at the end; the critical batch grows "
                "as the loss falls (McCandlish et al.), so the factor from start to end is "
                "(L_start/L_end)^(1/alpha_B).",
                _only(("growth_factor",), upside_down=True),
                instant="which end of the run has the wider critical batch."),
    )


PROBLEM = CriticalBatchOfLossExercise()
