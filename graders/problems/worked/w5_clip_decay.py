"""w5-clip-decay: Proposition 2, clipping and decay guard different failures (the chapter's Fig. 8).

Sources:
- Global-norm clipping as torch implements it (torch.nn.utils.clip_grad_norm_, which calls
  _clip_grads_with_norm_): every gradient is multiplied by
  clamp(max_norm / (total_norm + 1e-6), max=1.0). Pascanu, Mikolov and Bengio (ICML 2013,
  section 3.2, Algorithm 1) introduced rescaling by threshold/norm when the norm exceeds it.
- Decoupled weight decay (Loshchilov and Hutter, "Decoupled Weight Decay Regularization",
  ICLR 2019, Algorithm 2) as torch.optim.AdamW implements it: before the Adam step each
  parameter is multiplied by (1 - lr * weight_decay). With a zero gradient Adam's step is 0,
  so after `steps` steps at constant lr the parameter is (1 - lr*wd)**steps times its start.
- Variant hyper-parameters: GPT-3 (Brown et al. 2020, Table 2.1 and Appendix B: clip 1.0,
  weight decay 0.1), LLaMA (Touvron et al. 2023, section 2.3: clip 1.0, weight decay 0.1),
  OPT-175B (Zhang et al. 2022, section 2.2 and Table 1: lr 1.2e-4, weight decay 0.1; section
  2.5: clipping lowered from 1.0 to 0.3 early in training for stability),
  BERT-base (Devlin et al. 2019, appendix A.2: lr 1e-4, "L2 weight decay of 0.01", 1M steps;
  the released code applies it decoupled, AdamW-style, and clips the global norm at 1.0).
"""
import math
import re

import sympy

from graders.numeric import Number, Numbers
from graders.problem import Mistake, Problem
from graders.problems.common.clipping import EPS, clip_coefficient
from graders.problems.common.clipping import clip_settings as _check
from graders.symbolic import Expr, from_srepr, symbols_for


class DecayExpr(Expr):
    """An expression in eta and lambda, compared where decay makes sense: 0 < eta*lambda < 1.

    The shared `Expr` samples every symbol in [0.3, 4], where 1 - eta*lambda is mostly
    negative; there log(1/(1 - eta*lambda)) and -log(1 - eta*lambda) differ by 2*pi*i on
    the principal branch, so a correct half-life would be refused. Here both sides are first
    rewritten with eta -> eta / (lambda * (1 + eta)), which maps every positive eta onto
    0 < eta*lambda < 1 one to one. The rewrite is done on the srepr text and read back
    unevaluated, so no arithmetic runs outside the bounded comparison.
    """
    _ETA = re.compile(r"Symbol\('eta'[^)]*\)")
    _INTO = ("Mul(Symbol('eta'), Pow(Mul(Symbol('lambda'), Add(Integer(1), Symbol('eta'))), "
             "Integer(-1)))")

    def rewrite(self, expr):
        text = self._ETA.sub(lambda _: self._INTO, sympy.srepr(expr))
        return from_srepr(text, symbols_for(self.symbols))


def _symbols():
    return sympy.Symbol("eta", positive=True), sympy.Symbol("lambda", positive=True), \
        sympy.Symbol("t", positive=True)


def _answers(params):
    norms, max_norm, lr, wd, steps = _check(params)
    coefficients = [clip_coefficient(n, max_norm) for n in norms]
    eta, lam, t = _symbols()
    return {
        "clipped_steps": [i for i, c in enumerate(coefficients) if c < 1.0],
        "clip_coefficients": coefficients,
        "decay_factor": (1.0 - lr * wd) ** steps,
        "half_life_steps": math.log(2.0) / -math.log1p(-lr * wd),
        "decay_expr": (1 - eta * lam) ** t,
        "half_life_expr": sympy.log(2) / -sympy.log(1 - eta * lam),
    }


def _decay_without_lr(q):
    _, _, _, wd, steps = _check(q)
    eta, lam, t = _symbols()
    return {"decay_factor": (1.0 - wd) ** steps if wd < 1 else 0.0,
            "half_life_steps": math.log(2.0) / -math.log1p(-wd) if wd < 1 else 0.0,
            "decay_expr": (1 - lam) ** t}


class ClipDecayProblem(Problem):
    id = "w5-clip-decay"
    title = "Clipping and decay guard different failures"
    strand = "mathematics"
    kind = "worked"
    assignment = "worked"
    symbols = ("eta", "lambda", "t")
    # Fourteen global gradient norms (mostly ordinary, two or three spikes) under the
    # clip threshold and AdamW settings of published runs; steps is the stretch of
    # training (at constant lr) over which the decay is accumulated.
    variants = {
        "A": {"grad_norms": [0.31, 0.28, 0.34, 0.29, 6.8, 0.33, 0.27, 0.30, 0.35, 0.26, 0.32,
                             0.29, 14.2, 0.31],
              "max_norm": 1.0, "lr": 2.0e-4, "weight_decay": 0.1, "steps": 20_000},     # GPT-3 XL
        "B": {"grad_norms": [0.62, 0.58, 0.55, 0.71, 0.60, 0.57, 0.66, 21.5, 0.59, 0.63, 4.9,
                             0.56, 0.61, 0.54],
              "max_norm": 1.0, "lr": 3.0e-4, "weight_decay": 0.1, "steps": 50_000},     # LLaMA-7B
        "C": {"grad_norms": [0.18, 0.21, 2.6, 0.19, 0.17, 0.22, 0.20, 0.23, 0.18, 0.21, 0.19,
                             0.24, 9.4, 0.20],
              "max_norm": 0.3, "lr": 1.2e-4, "weight_decay": 0.1, "steps": 100_000},    # OPT-175B
        "D": {"grad_norms": [0.85, 0.79, 0.92, 0.88, 0.81, 0.95, 1.6, 0.83, 0.90, 0.87, 0.80,
                             31.0, 0.86, 0.84],
              "max_norm": 1.0, "lr": 1.0e-4, "weight_decay": 0.01, "steps": 1_000_000},  # BERT-base
    }
    checks = {
        "decay_expr": DecayExpr(symbols=("eta", "lambda", "t")),
        "half_life_expr": DecayExpr(symbols=("eta", "lambda")),
        "clipped_steps": Numbers(exact=True, points=1),
        "clip_coefficients": Numbers(rtol=1e-5, points=2),
        "decay_factor": Number(rtol=1e-3),
        "half_life_steps": Number(rtol=1e-3),
    }
    cells = {
        "check_expr": ("decay_expr", "half_life_expr"),
        "check_clipping": ("clipped_steps", "clip_coefficients"),
        "check_decay": ("decay_factor", "half_life_steps"),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake(
            "coefficient-not-clamped",
            "the coefficient was not clamped at 1; clip_grad_norm_ never scales a gradient up, "
            "so on ordinary steps the coefficient is exactly 1.",
            lambda q: {"clip_coefficients": [q["max_norm"] / (n + EPS) for n in q["grad_norms"]]},
            instant="what clip_grad_norm_ does on an ordinary step.",
        ),
        Mistake(
            "clipped-norm-not-coefficient",
            "these look like the norms after clipping; the coefficient is the factor that "
            "multiplies the gradients, a number no larger than 1.",
            lambda q: {"clip_coefficients": [min(n, q["max_norm"]) for n in q["grad_norms"]]},
            instant="what the clip coefficient is applied to.",
        ),
        Mistake(
            "one-based-steps",
            "the step indices look 1-based; count the first step as index 0.",
            lambda q: {"clipped_steps": [i + 1 for i in _answers(q)["clipped_steps"]]},
            instant="how the steps are indexed.",
        ),
        Mistake(
            "decay-without-learning-rate",
            "the decay was applied as (1 - weight_decay) per step; decoupled AdamW multiplies "
            "by (1 - lr * weight_decay), so the learning rate scales the pull.",
            _decay_without_lr,
            instant="the learning rate's role in AdamW's decoupled decay.",
        ),
        Mistake(
            "e-folding-not-half-life",
            "this is the e-folding timescale 1/(lr * weight_decay), the steps to shrink by a "
            "factor e; the half-life asks for a factor of 2.",
            lambda q: {"half_life_steps": 1.0 / (q["lr"] * q["weight_decay"]),
                       "half_life_expr": 1 / (_symbols()[0] * _symbols()[1])},
            instant="what a half-life measures.",
        ),
        Mistake(
            "small-step-approximation",
            "this is the small-step approximation of the half-life; the exact expression uses "
            "the logarithm of the per-step factor itself.",
            lambda q: {"half_life_expr": sympy.log(2) / (_symbols()[0] * _symbols()[1])},
            instant="the exact half-life, without approximation.",
        ),
    )


PROBLEM = ClipDecayProblem()
