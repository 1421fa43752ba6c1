"""tds-e7-loss-curve-extrapolation: fit a saturating power law to three early points, predict the end.

Model: L(t) = E + A t^(-alpha), with t steps or tokens. Through three points at geometrically spaced
t1, t2 = r t1, t3 = r^2 t1 the fit is exact and in closed form: the excesses L_i - E form a geometric
sequence, so
    E = (L1 L3 - L2^2) / (L1 + L3 - 2 L2),   alpha = ln((L1 - L2)/(L2 - L3)) / ln r,
    A = (L1 - L2) / (t1^-alpha - t2^-alpha).
Sources of the form and of the variants:
- Kaplan et al. 2020, "Scaling Laws for Neural Language Models", eq. (1.6)/(5.6) and Table 3: in the
  infinite-data limit a learning curve follows L(N, S_min) = (N_c/N)^alpha_N + (S_c/S_min)^alpha_S,
  alpha_N = 0.077, N_c = 6.5e13, alpha_S = 0.76, S_c = 2.1e3: a saturating power law in steps with
  floor (N_c/N)^alpha_N.
- Hoffmann et al. 2022 (Chinchilla), App. D.2, eq. (10): L(N, D) = E + A/N^alpha + B/D^beta with
  E = 1.69, A = 406.4, B = 410.7, alpha = 0.34, beta = 0.28: at fixed N, a saturating power law in
  tokens with floor E + A/N^alpha.
- OpenAI 2023, GPT-4 Technical Report, §3.1 (not §2.1): the final loss was predicted by fitting
  L(C) = a C^b + c, "with an irreducible loss term", to models trained with at most 10,000x less
  compute (§3 says 1,000x to 10,000x across the predictions).

Answers, for the variant's three points (t, loss) and end point t_end: `floor_expr` (E in L_1, L_2,
L_3), `alpha`, `A`, `E`, `loss_end` (the saturating law at t_end) and `error_without_floor` (the
prediction at t_end of a pure power law L = A0 t^-alpha0 through the first and last points, minus
`loss_end`).
"""
from __future__ import annotations

import math

from graders.numeric import Number
from graders.problem import Mistake, Problem
from graders.symbolic import Expr, symbols_for

SYMBOLS = ("L_1", "L_2", "L_3")


def _read(q):
    ts, losses, t_end = [float(t) for t in q["t"]], [float(x) for x in q["loss"]], float(q["t_end"])
    if len(ts) != 3 or len(losses) != 3 or min(ts) <= 0 or not t_end > ts[2]:
        raise ValueError("need three positive steps, three losses and an end point past them")
    if not math.isclose(ts[1] / ts[0], ts[2] / ts[1], rel_tol=1e-9) or not ts[1] > ts[0]:
        raise ValueError("the three steps must be geometrically spaced and increasing")
    l1, l2, l3 = losses
    if not (l1 > l2 > l3 > 0) or not (l1 - l2) > (l2 - l3):
        raise ValueError("the losses must fall, and fall by less each time")
    return ts, losses, t_end


def _answers(q, *, inverted=False, a_sign=1, floor_in_end=True, error_sign=1):
    (t1, t2, t3), (l1, l2, l3), t_end = _read(q)
    r = t2 / t1
    ratio = (l2 - l3) / (l1 - l2) if inverted else (l1 - l2) / (l2 - l3)
    alpha = math.log(ratio) / math.log(r)
    coef = (l1 - l2) / (t1 ** (-a_sign * alpha) - t2 ** (-a_sign * alpha))
    floor = (l1 * l3 - l2**2) / (l1 + l3 - 2 * l2)
    loss_end = (floor if floor_in_end else 0.0) + coef * t_end ** (-alpha)
    alpha0 = math.log(l1 / l3) / math.log(t3 / t1)
    pure_end = l1 * (t_end / t1) ** (-alpha0)
    s = symbols_for(SYMBOLS)
    return {
        "floor_expr": (s["L_1"] * s["L_3"] - s["L_2"] ** 2) / (s["L_1"] + s["L_3"] - 2 * s["L_2"]),
        "alpha": alpha,
        "A": coef,
        "E": floor,
        "loss_end": loss_end,
        "error_without_floor": error_sign * (pure_end - loss_end),
    }


def _changed(q, keys, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    return {k: wrong[k] for k in keys if wrong[k] != right[k]}


class LossCurveExtrapolationExercise(Problem):
    id = "tds-e7-loss-curve-extrapolation"
    title = "Predicting the end of a run from its start: a saturating power law through three points"
    strand = "mathematics"
    kind = "exercise"
    assignment = "tds-exercises"
    symbols = SYMBOLS
    # Losses (nats, rounded to 4 decimals as a log would print them) read off published fitted laws:
    # A, B: Kaplan et al. 2020 L(N, S_min) (eq. 1.6, Table 3) for N = 1.5e9 and 1.2e8 non-embedding
    # parameters, against steps, extrapolated to 2.5e5 steps (the length of their runs);
    # C, D: Hoffmann et al. 2022 L(N, D) (App. D.2) for Chinchilla (N = 7e10, to its 1.4e12 tokens)
    # and Gopher (N = 2.8e11, to its 3e11 tokens), against tokens.
    variants = {
        "A": {"t": [1000, 2000, 4000], "loss": [4.0327, 3.3131, 2.8881], "t_end": 250000},
        "B": {"t": [2000, 8000, 32000], "loss": [3.8015, 3.1256, 2.8899], "t_end": 250000},
        "C": {"t": [1.0e10, 4.0e10, 1.6e11], "loss": [2.4244, 2.215, 2.073], "t_end": 1.4e12},
        "D": {"t": [5.0e9, 1.5e10, 4.5e10], "loss": [2.5324, 2.3232, 2.1693], "t_end": 3.0e11},
    }
    checks = {
        "floor_expr": Expr(symbols=SYMBOLS, ranges=(("L_1", (3.6, 4.0)), ("L_2", (2.0, 2.4)), ("L_3", (1.4, 1.6)))),
        "alpha": Number(rtol=1e-6),
        "A": Number(rtol=1e-6),
        "E": Number(rtol=1e-6),
        "loss_end": Number(rtol=1e-6),
        "error_without_floor": Number(rtol=1e-6),
    }
    cells = {"check_expression": ("floor_expr",),
             "check_numbers": ("alpha", "A", "E", "loss_end", "error_without_floor")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("ratio-upside-down",
                "the ratio was taken as (L2 - L3)/(L1 - L2); on a falling curve the earlier difference is "
                "the larger, (L1 - L2)/(L2 - L3) = r^α, so α = ln((L1 - L2)/(L2 - L3)) / ln r is positive.",
                lambda q: _changed(q, ("alpha", "A", "loss_end"), inverted=True),
                instant="the order of the successive loss differences in the ratio that gives the exponent."),
        Mistake("coefficient-with-wrong-power",
                "A was solved with t^α in place of t^-α; the power term is A t^-α, so "
                "A = (L1 - L2) / (t1^-α - t2^-α).",
                lambda q: _changed(q, ("A", "loss_end"), a_sign=-1),
                instant="solving the decaying term for its coefficient at known steps."),
        Mistake("floor-dropped-at-the-end",
                "the prediction at t_end left out E; the fitted curve tends to E, not to zero, so "
                "L(t_end) = E + A t_end^-α.",
                lambda q: _changed(q, ("loss_end", "error_without_floor"), floor_in_end=False),
                instant="what the fitted curve tends to as the run goes on."),
        Mistake("error-measured-the-other-way",
                "the error was taken as the saturating prediction minus the pure power law; it is the "
                "pure power law's prediction minus the saturating one (negative: a law without a floor "
                "predicts a loss that keeps falling towards zero).",
                lambda q: _changed(q, ("error_without_floor",), error_sign=-1),
                instant="which prediction the error is measured from."),
    )


PROBLEM = LossCurveExtrapolationExercise()
