"""tds-e3-adam-update-burst: how large Adam's step gets when a quiet parameter's gradient jumps.

The model: one coordinate whose gradient has been g for so long that Adam's moment estimates have
settled (m = g, v = g², bias corrections ≈ 1, ε ≪ g), so each step moves it by η. Then its
gradient jumps to k g and stays there. After j steps of the burst
    m_j = g (k - (k - 1) β1^j),   v_j = g² (k² - (k² - 1) β2^j),
and the step, in units of η, is u_j = m_j / √v_j. The first one is
    u_1 = (β1 + (1 - β1) k) / √(β2 + (1 - β2) k²),  which tends to (1 - β1)/√(1 - β2) as k grows.
The estimate v has caught up within `tol` at the fewest j with v_j >= (1 - tol) k² g², that is
(k² - 1) β2^j <= tol k².

Sources: Kingma and Ba, "Adam", ICLR 2015, Algorithm 1 (the update); Molybog et al., "A Theory on
Adam Instability in Large-Scale Machine Learning", arXiv 2304.09871 (2023) (spikes as large,
uncorrelated Adam updates after gradients of shallow layers have been small for long);
Chowdhery et al., "PaLM", 2022, §5 (β2 = 1 - k^-0.8 "more stable than the standard β2 = 0.99"
because of rare embedding tokens) and §5.1 (spikes, restart ~100 steps earlier and skip
200-500 batches).

Answers: `first_update_expr` (u_1 in beta1, beta2, k), `burst_limit_expr` (its limit in beta1,
beta2), `first_update_ratio` (u_1 for the variant), `peak_update_ratio` and `peak_step` (the
largest u_j over a sustained burst, and the j where it occurs), `catch_up_steps`.
"""
from __future__ import annotations

import math

import sympy

from graders.numeric import Count, Number
from graders.problem import Mistake, Problem
from graders.problems.common.changed import differing
from graders.symbolic import Expr, symbols_for

SYMBOLS = ("beta1", "beta2", "k")


def _read(q):
    b1, b2, k, tol = float(q["beta1"]), float(q["beta2"]), float(q["burst"]), float(q["tol"])
    if not (0 <= b1 < 1 and 0 < b2 < 1 and k > 1 and 0 < tol < 1):
        raise ValueError("need 0 <= beta1 < 1, 0 < beta2 < 1, burst > 1 and 0 < tol < 1")
    if not all(math.isfinite(x) for x in (b1, b2, k, tol)):
        raise ValueError("parameters must be finite")
    return b1, b2, k, tol


def update_path(b1, b2, k, steps, *, momentum=True, square=True):
    """u_1 .. u_steps: the step (in units of η) on each step of a sustained burst."""
    big = k * k if square else k
    out = []
    for j in range(1, steps + 1):
        m = k - (k - 1) * b1 ** j if momentum else k
        v = big - (big - 1) * b2 ** j
        out.append(m / math.sqrt(v))
    return out


def _answers(q, *, momentum=True, square=True, catch_up_beta="beta2"):
    b1, b2, k, tol = _read(q)
    s = symbols_for(SYMBOLS)
    big = k * k if square else k
    decay = b2 if catch_up_beta == "beta2" else b1
    catch = max(1, math.ceil(math.log(tol * big / (big - 1)) / math.log(decay)))
    true_catch = max(1, math.ceil(math.log(tol * k * k / (k * k - 1)) / math.log(b2)))
    path = update_path(b1, b2, k, true_catch + 1, momentum=momentum, square=square)
    peak = max(range(len(path)), key=lambda i: path[i])
    kk = s["k"] ** 2 if square else s["k"]
    num = s["beta1"] + (1 - s["beta1"]) * s["k"] if momentum else s["k"]
    first = num / sympy.sqrt(s["beta2"] + (1 - s["beta2"]) * kk)
    limit = (1 - s["beta1"] if momentum else 1) / sympy.sqrt(1 - s["beta2"])
    return {
        "first_update_expr": first,
        "burst_limit_expr": limit,
        "first_update_ratio": path[0],
        "peak_update_ratio": path[peak],
        "peak_step": peak + 1,
        "catch_up_steps": catch,
    }


def _changed(q, **kw):
    return differing(_answers(q), _answers(q, **kw), rtol=1e-3)


class AdamUpdateBurstExercise(Problem):
    id = "tds-e3-adam-update-burst"
    title = "A gradient burst after a quiet stretch: how large Adam's step gets, and for how long"
    strand = "mathematics"
    kind = "exercise"
    assignment = "tds-exercises"
    symbols = SYMBOLS
    # Real (β1, β2) pairs: A LLaMA (Touvron et al. 2023, §2.3) and GPT-3 (Brown et al. 2020, App. B);
    # B Adam's defaults (Kingma and Ba 2015), also BERT's; C PaLM's schedule β2 = 1 - k^-0.8
    # (Chowdhery et al. 2022, §5) at step 10,000, where 1 - 10000^-0.8 = 0.99937; D RoBERTa's
    # β2 = 0.98 (Liu et al. 2019, §3.1). Bursts of 10x to 100x the usual gradient, as an embedding
    # row of a rare token sees when the token turns up in a batch.
    variants = {
        "A": {"beta1": 0.9, "beta2": 0.95, "burst": 10.0, "tol": 0.01},
        "B": {"beta1": 0.9, "beta2": 0.999, "burst": 10.0, "tol": 0.01},
        "C": {"beta1": 0.9, "beta2": 0.99937, "burst": 30.0, "tol": 0.05},
        "D": {"beta1": 0.9, "beta2": 0.98, "burst": 100.0, "tol": 0.001},
    }
    checks = {
        "first_update_expr": Expr(symbols=SYMBOLS, ranges=(("beta1", (0.5, 0.99)), ("beta2", (0.5, 0.999)),
                                                           ("k", (2, 50)))),
        "burst_limit_expr": Expr(symbols=SYMBOLS, ranges=(("beta1", (0.5, 0.99)), ("beta2", (0.5, 0.999)),
                                                          ("k", (2, 50)))),
        "first_update_ratio": Number(rtol=1e-6),
        "peak_update_ratio": Number(rtol=1e-6),
        "peak_step": Count(),
        "catch_up_steps": Count(),
    }
    cells = {
        "check_expressions": ("first_update_expr", "burst_limit_expr"),
        "check_numbers": ("first_update_ratio", "peak_update_ratio", "peak_step", "catch_up_steps"),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("momentum-ignored",
                "the first moment is an average too: one step of the burst moves m only from g to "
                "(β1 + (1 - β1) k) g, not to k g; the numerator of the step is that average.",
                lambda q: _changed(q, momentum=False),
                instant="what the first-moment average does with a single new gradient."),
        Mistake("gradient-not-squared",
                "v averages squared gradients: the burst adds (1 - β2) k² g² to it, not (1 - β2) k g².",
                lambda q: _changed(q, square=False),
                instant="what the second-moment estimate averages."),
        Mistake("catch-up-with-beta1",
                "the catch-up is the second moment's: v forgets its old value at the rate β2 per step, "
                "so the count uses ln β2; β1 sets how fast m catches up.",
                lambda q: _changed(q, catch_up_beta="beta1"),
                instant="which moving average governs the lag of the second-moment estimate."),
    )


PROBLEM = AdamUpdateBurstExercise()
