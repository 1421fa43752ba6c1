"""e09-chinchilla: compute-optimal allocation from the parametric loss.

Source: Hoffmann et al., "Training Compute-Optimal Large Language Models"
(2022, arXiv 2203.15556). Section 3.3, eq. (2): L(N, D) = E + A/N^alpha + B/D^beta;
eq. (4): minimising it under C = 6ND gives
    N_opt(C) = G (C/6)^a,  D_opt(C) = G^-1 (C/6)^b,
    G = (alpha A / (beta B))^(1/(alpha+beta)),  a = beta/(alpha+beta),  b = alpha/(alpha+beta);
Appendix D.2, eq. (10): the fit E = 1.69, A = 406.4, B = 410.7, alpha = 0.34, beta = 0.28.

Those printed constants are rounded. The unrounded values in the paper's TeX
source (E = 1.6934, alpha = 0.3392, beta = 0.2849, as reported by Besiroglu et
al. 2024, "Chinchilla Scaling: A replication attempt", arXiv 2404.10102) are
the ones that reproduce the paper's own Fig. 4 (40B at the Gopher budget) and
Table 2 (a = 0.46); the rounded ones give 32B and a = 0.45. Besiroglu et al.'s
refit (E = 1.8172, A = 482.01, B = 2085.43, alpha = 0.3478, beta = 0.3658) gives
about 20 tokens per parameter, in line with the paper's Approaches 1 and 2.

The parameter named `B` here is the data-term coefficient of the loss, not the
batch size of the chapter's notation; only the symbol C appears in n_opt_expr.
"""
import math

import sympy

from graders.numeric import Number
from graders.problem import Mistake, Problem
from graders.problems.common.scaling_laws import FLOPS_PER_PARAM_TOKEN, allocation
from graders.symbolic import Expr, symbols_for


def _constants(q):
    """(C, E, A, B, alpha, beta) as floats, refusing anything that is not a positive finite number."""
    values = []
    for key in ("C", "E", "A", "B", "alpha", "beta"):
        value = q[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{key} must be a number, not {type(value).__name__}")
        value = float(value)
        if not math.isfinite(value) or value < 0 or (value == 0 and key != "E"):
            raise ValueError(f"{key} must be a positive finite number, not {value!r}")
        values.append(value)
    return values


def loss(n, d, e, a_coef, b_coef, alpha, beta):
    """Eq. (2): the fitted loss at N parameters and D tokens."""
    return e + a_coef / n ** alpha + b_coef / d ** beta


def _answers(q, **mistake):
    c, e, a_coef, b_coef, alpha, beta = _constants(q)
    n, d, g, a = allocation(c, e, a_coef, b_coef, alpha, beta, **mistake)
    C = symbols_for(("C",))["C"]
    budget = C / FLOPS_PER_PARAM_TOKEN if mistake.get("six", True) else C
    return {
        "n_opt": n,
        "d_opt": d,
        "tokens_per_param": d / n,
        "loss_opt": loss(n, d, e, a_coef, b_coef, alpha, beta),
        "n_opt_expr": sympy.Float(g, 30) * budget ** sympy.Float(a, 30),
    }


def _twenty_tokens(q):
    """The folk rule D = 20N used in place of the fitted law: 6N(20N) = C."""
    c, e, a_coef, b_coef, alpha, beta = _constants(q)
    n = math.sqrt(c / (FLOPS_PER_PARAM_TOKEN * 20))
    C = symbols_for(("C",))["C"]
    return {
        "n_opt": n,
        "d_opt": 20 * n,
        "tokens_per_param": 20.0,
        "loss_opt": loss(n, 20 * n, e, a_coef, b_coef, alpha, beta),
        "n_opt_expr": sympy.sqrt(C / 120),
    }


class ChinchillaProblem(Problem):
    id = "e09-chinchilla"
    title = "Compute-optimal allocation from the Chinchilla loss"
    strand = "mathematics"
    kind = "exercise"
    assignment = "exercises"
    symbols = ("C",)
    # Real budgets, and the three constant sets a practitioner meets:
    # A: Llama 2 70B's budget (Touvron et al. 2023: 70B parameters, 2T tokens; 6ND = 8.4e23), eq. (10) as printed;
    # B: GPT-3 175B's budget (Brown et al. 2020, Table D.1: 3.14e23 FLOPs), the unrounded TeX-source constants;
    # C: Llama 3 405B's budget (Llama 3 paper: 3.8e25 FLOPs), Besiroglu et al. 2024's refit;
    # D: the 1e21-FLOP head-to-head of Hoffmann App. D.4, constants of eq. (10) as printed.
    variants = {
        "A": {"C": 8.4e23, "E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28},
        "B": {"C": 3.14e23, "E": 1.6934, "A": 406.4, "B": 410.7, "alpha": 0.3392, "beta": 0.2849},
        "C": {"C": 3.8e25, "E": 1.8172, "A": 482.01, "B": 2085.43, "alpha": 0.3478, "beta": 0.3658},
        "D": {"C": 1e21, "E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28},
    }
    checks = {
        "n_opt_expr": Expr(symbols=("C",), rtol=1e-6),
        "n_opt": Number(rtol=1e-3),
        "d_opt": Number(rtol=1e-3),
        "tokens_per_param": Number(rtol=1e-3),
        # the loss varies little across allocations near the optimum, so it is held tighter
        "loss_opt": Number(rtol=1e-5),
    }
    cells = {
        "check_expr": ("n_opt_expr",),
        "check_numbers": ("n_opt", "d_opt", "tokens_per_param", "loss_opt"),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake(
            "twenty-tokens-rule",
            "this is the '20 tokens per parameter' rule of thumb (D = 20N), not the minimum of the "
            "fitted loss; with these constants the optimum has a different ratio.",
            _twenty_tokens,
            instant="the minimum of the fitted loss, for these constants.",
        ),
        Mistake(
            "swapped-exponents",
            "the exponents are swapped: N_opt grows as (C/6)^(beta/(alpha+beta)) and D_opt as "
            "(C/6)^(alpha/(alpha+beta)); the larger of alpha and beta sends compute to the other factor.",
            lambda q: _answers(q, swap=True),
            instant="which fitted exponent governs which of N and D.",
        ),
        Mistake(
            "no-six",
            "the budget was used as C = ND; training costs about 6 FLOPs per parameter per token, "
            "so the allocation is a function of C/6.",
            lambda q: _answers(q, six=False),
            instant="the training FLOPs of one parameter on one token.",
        ),
        Mistake(
            "inverted-G",
            "G is upside down: G = (alpha*A/(beta*B))^(1/(alpha+beta)) multiplies N_opt and divides D_opt.",
            lambda q: _answers(q, invert_g=True),
            instant="how the constant G enters N_opt and D_opt.",
        ),
    )


PROBLEM = ChinchillaProblem()
