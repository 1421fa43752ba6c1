"""tds-w2-chinchilla-refit: the Chinchilla parametric fit against its replication.

Sources:
- Hoffmann et al., "Training Compute-Optimal Large Language Models" (2022, arXiv 2203.15556),
  §3.3, eq. (2): L(N, D) = E + A/N^alpha + B/D^beta (Approach 3), and eq. (4), its minimiser
  under C = 6ND; Appendix D.2, eq. (10): E = 1.69, A = 406.4, B = 410.7, alpha = 0.34,
  beta = 0.28, as printed.
- Besiroglu, Erdil, Barnett and You, "Chinchilla Scaling: A replication attempt" (2024, arXiv
  2404.10102): refitting the same law to data reconstructed from Hoffmann's Fig. 4 gives
  E = 1.8172, A = 482.01, B = 2085.43, alpha = 0.3478, beta = 0.3658 (often quoted with E
  rounded to 1.82), and a = beta/(alpha + beta) = 0.5126, in line with Approaches 1 and 2.

The Lagrange condition of min L subject to 6ND = C is alpha A / N^alpha = beta B / D^beta, so
    N_opt = G (C/6)^(beta/(alpha+beta)),  D_opt = (C/6)^(alpha/(alpha+beta)) / G,
    G = (alpha A / (beta B))^(1/(alpha+beta)),
and the tokens per parameter at the optimum are
    D_opt / N_opt = (beta B / (alpha A))^(2/(alpha+beta)) (C/6)^((alpha-beta)/(alpha+beta)),
constant in C only when alpha = beta.

The variant gives a list of real compute budgets (6ND of real runs, and regulatory thresholds)
and the two constant sets. Answers: `tokens_per_param_expr` (D_opt/N_opt as an expression in
C, alpha, beta and the coefficients A_N, B_D; the paper's A and B, renamed because B is the
batch size in this module), `n_opt_hoffmann` and `n_opt_refit` (N_opt per budget),
`ratio_hoffmann` and `ratio_refit` (D_opt/N_opt per budget), and `loss_penalty` (per budget,
the loss the refit law predicts for the allocation of Hoffmann's printed fit, minus the refit's
own minimum: what following the printed constants costs if the refit is right).
II.8 e09-chinchilla grades the single-budget allocation of one constant set and p7-chinchilla-
table compares the law with Table 3; none of the budgets here is one of theirs with the same
constants.
"""
from __future__ import annotations

import math

from graders.numeric import Numbers
from graders.problem import Mistake, Problem
from graders.problems.common.changed import changed_answers
from graders.problems.common.scaling_laws import FLOPS_PER_PARAM_TOKEN, allocation
from graders.symbolic import Expr, symbols_for

SYMBOLS = ("C", "alpha", "beta", "A_N", "B_D")
CONSTANTS = ("E", "A", "B", "alpha", "beta")
PRINTED = {"E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28}        # Hoffmann eq. (10)
REFIT = {"E": 1.8172, "A": 482.01, "B": 2085.43, "alpha": 0.3478, "beta": 0.3658}  # Besiroglu et al.


def _law(k, name):
    if not isinstance(k, dict):
        raise ValueError(f"{name} must be a dict of {', '.join(CONSTANTS)}")
    out = {}
    for key in CONSTANTS:
        v = k[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 \
                or (v == 0 and key != "E"):
            raise ValueError(f"{name}[{key}] must be a positive finite number, not {v!r}")
        out[key] = float(v)
    return out


def _read(q):
    budgets = [float(c) for c in q["budgets"]]
    if not budgets or any(not (c > 0 and math.isfinite(c)) for c in budgets):
        raise ValueError("budgets must be a non-empty list of positive FLOP counts")
    return budgets, _law(q["hoffmann"], "hoffmann"), _law(q["refit"], "refit")


def loss(n, d, k):
    """Eq. (2): the fitted loss at n parameters and d tokens under the constants k."""
    return k["E"] + k["A"] / n ** k["alpha"] + k["B"] / d ** k["beta"]


def _optimum(c, k, flags):
    n, d, _, _ = allocation(c, k["E"], k["A"], k["B"], k["alpha"], k["beta"], **flags)
    return n, d


def _answers(q, *, upside_down=False, judge_law="refit", **flags):
    """The reference; keywords reproduce declared mistakes (flags go to `allocation`)."""
    budgets, hoff, refit = _read(q)
    hoff_opt = [_optimum(c, hoff, flags) for c in budgets]
    refit_opt = [_optimum(c, refit, flags) for c in budgets]
    six = FLOPS_PER_PARAM_TOKEN if flags.get("six", True) else 1

    def ratio(n, d):
        return n / d if upside_down else d / n

    if judge_law == "refit":   # the refit law judges the printed fit's allocation
        penalty = [loss(nh, c / (six * nh), refit) - loss(nr, dr, refit)
                   for c, (nh, _), (nr, dr) in zip(budgets, hoff_opt, refit_opt)]
    else:                      # the printed law judges the refit's allocation
        penalty = [loss(nr, c / (six * nr), hoff) - loss(nh, dh, hoff)
                   for c, (nh, dh), (nr, _) in zip(budgets, hoff_opt, refit_opt)]
    s = symbols_for(SYMBOLS)
    C, al, be, A, B = (s[k] for k in SYMBOLS)
    budget = C / 6 if flags.get("six", True) else C
    a_exp, b_exp = be / (al + be), al / (al + be)
    if flags.get("swap"):
        a_exp, b_exp = b_exp, a_exp
    G = (al * A / (be * B)) ** (1 / (al + be))
    if flags.get("invert_g"):
        G = 1 / G
    n_s, d_s = G * budget ** a_exp, budget ** b_exp / G
    return {
        "tokens_per_param_expr": n_s / d_s if upside_down else d_s / n_s,
        "n_opt_hoffmann": [n for n, _ in hoff_opt],
        "n_opt_refit": [n for n, _ in refit_opt],
        "ratio_hoffmann": [ratio(n, d) for n, d in hoff_opt],
        "ratio_refit": [ratio(n, d) for n, d in refit_opt],
        "loss_penalty": penalty,
    }


class ChinchillaRefitWorked(Problem):
    id = "tds-w2-chinchilla-refit"
    title = "The Chinchilla fit and its replication: compute-optimal allocations compared"
    strand = "mathematics"
    kind = "worked"
    assignment = "tds-worked"
    symbols = SYMBOLS
    # Budgets are 6ND of real runs (parameters x tokens as their papers report), and two
    # regulatory thresholds; constants as printed (Hoffmann eq. 10) and as refitted (Besiroglu).
    # A: GPT-3 175B on 300B tokens (Brown et al. 2020), Gopher 280B on 300B (Rae et al. 2021),
    #    1e25 FLOPs (the EU AI Act's systemic-risk threshold).
    # B: Chinchilla 70B on 1.4T (Hoffmann et al.), PaLM 540B on 780B (Chowdhery et al. 2022),
    #    1e26 FLOPs (the reporting threshold of US Executive Order 14110, 2023).
    # C: Llama 2 7B and 13B on 2T (Touvron et al. 2023), Llama 3 70B on 15T (Meta 2024).
    # D: OPT-175B on 180B (Zhang et al. 2022), BLOOM 176B on 366B (BigScience 2022),
    #    Llama 3 8B on 15T (Meta 2024).
    variants = {
        "A": {"budgets": [3.15e23, 5.04e23, 1e25], "hoffmann": PRINTED, "refit": REFIT},
        "B": {"budgets": [5.88e23, 2.527e24, 1e26], "hoffmann": PRINTED, "refit": REFIT},
        "C": {"budgets": [8.4e22, 1.56e23, 6.3e24], "hoffmann": PRINTED, "refit": REFIT},
        "D": {"budgets": [1.89e23, 3.865e23, 7.2e23], "hoffmann": PRINTED, "refit": REFIT},
    }
    checks = {
        "tokens_per_param_expr": Expr(symbols=SYMBOLS, ranges=(
            ("C", (1e20, 1e26)), ("alpha", (0.2, 0.5)), ("beta", (0.2, 0.5)),
            ("A_N", (100, 3000)), ("B_D", (100, 3000)))),
        "n_opt_hoffmann": Numbers(rtol=1e-3),
        "n_opt_refit": Numbers(rtol=1e-3),
        "ratio_hoffmann": Numbers(rtol=1e-3),
        "ratio_refit": Numbers(rtol=1e-3),
        # a small difference of two losses near 2: held to an absolute tolerance as well
        "loss_penalty": Numbers(rtol=1e-3, atol=1e-7),
    }
    cells = {
        "check_expression": ("tokens_per_param_expr",),
        "check_allocations": ("n_opt_hoffmann", "n_opt_refit", "ratio_hoffmann", "ratio_refit"),
        "check_penalty": ("loss_penalty",),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("swapped-exponents",
                "the exponents are swapped: N_opt grows as (C/6)^(beta/(alpha+beta)) and D_opt as "
                "(C/6)^(alpha/(alpha+beta)); the term that falls faster with its own variable needs "
                "less of it.",
                lambda q: changed_answers(_answers, q, swap=True),
                instant="which fitted exponent governs the growth of which of N and D."),
        Mistake("no-six",
                "the budget was used as C = ND; training costs about 6 FLOPs per parameter per token, "
                "so the allocation is a function of C/6.",
                lambda q: changed_answers(_answers, q, six=False),
                instant="the training FLOPs of one parameter on one token."),
        Mistake("inverted-G",
                "G = (alpha A/(beta B))^(1/(alpha+beta)) multiplies N_opt and divides D_opt; it was "
                "used the other way round.",
                lambda q: changed_answers(_answers, q, invert_g=True),
                instant="how the constant of the Lagrange condition enters N_opt and D_opt."),
        Mistake("ratio-upside-down",
                "tokens per parameter is D_opt/N_opt; N_opt/D_opt was given.",
                lambda q: changed_answers(_answers, q, upside_down=True),
                instant="what tokens per parameter means."),
        Mistake("penalty-under-printed-law",
                "the penalty asks what the printed fit's allocation costs if the refit is right: "
                "evaluate the refit law at Hoffmann's N_opt (with D = C/6N) and subtract the refit's "
                "own minimum. The printed law was used as the judge.",
                lambda q: changed_answers(_answers, q, judge_law="hoffmann"),
                instant="which law judges the allocation."),
    )


PROBLEM = ChinchillaRefitWorked()
