"""tds-t3-grokking-delay: why grokking waits, in the one quantity its explanations share.

Sources: Power et al., "Grokking: Generalization Beyond Overfitting on Small Algorithmic
Datasets" (2022, arXiv 2201.02177; weight decay shortens the delay most of the interventions they
try); Nanda et al., "Progress measures for grokking via mechanistic interpretability" (ICLR 2023,
arXiv 2301.05217; memorisation, circuit formation, cleanup, with weight decay doing the cleanup);
Liu et al., "Omnigrok" (ICLR 2023, arXiv 2210.01117; the weight norm); Varma et al.,
"Explaining grokking through circuit efficiency" (2023, arXiv 2309.02390); Kumar et al., "Grokking
as the transition from lazy to rich training dynamics" (2023, arXiv 2310.06110).

The graded model. With AdamW's decoupled weight decay (torch.optim.AdamW, Loshchilov & Hutter
2019) each step first multiplies every weight by (1 - η λ) and then adds Adam's step. Once the
training loss is near zero, in the directions the loss no longer cares about (the memorising
components) nothing pushes back, so their norm falls by that factor every step. The number of
steps t for the norm to fall by a factor r solves (1 - η λ)^t = 1/r:
- exactly, t = ln r / (-ln(1 - η λ)), and the whole number of steps is its ceiling;
- to first order in η λ, t ≈ ln r / (η λ): the delay scales like 1/(η λ).

Answers, for the variant's rate `lr`, weight decay `weight_decay`, factor `shrink` and a second
weight decay `other_weight_decay`: `steps_expr` (the exact t, in eta, lambda and r), `approx_expr`
(the first-order t), `steps_exact` (whole steps, a count), `steps_first_order` (the first-order t as
a number) and `delay_ratio` (the exact t at `other_weight_decay` over the exact t at `weight_decay`).
"""
from __future__ import annotations

import math

import sympy

from graders.numeric import Count, Number
from graders.problem import Mistake, Problem
from graders.symbolic import Expr, symbols_for

SYMBOLS = ("eta", "lambda", "r")
RANGES = (("eta", (1e-4, 1e-2)), ("lambda", (0.01, 1.0)), ("r", (1.5, 100.0)))


def _read(q):
    lr, wd, r, other = (float(q[k]) for k in ("lr", "weight_decay", "shrink", "other_weight_decay"))
    if not (0 < lr * wd < 1 and 0 < lr * other < 1 and r > 1 and other != wd):
        raise ValueError("need 0 < lr * weight_decay < 1 for both decays, a shrink factor above 1, two decays")
    return lr, wd, r, other


def _answers(q, *, first_order=False, squared=False, inverted=False, without_lr=False):
    lr, wd, r, other = _read(q)
    s = symbols_for(SYMBOLS)
    eta, lam, rr = s["eta"], s["lambda"], s["r"]
    per_step = 2 if squared else 1          # the squared norm shrinks by the factor twice a step
    scale = 1 if without_lr else lr
    sym_scale = 1 if without_lr else eta

    def exact(decay):
        return math.log(r) / (-per_step * math.log(1 - scale * decay))

    approx = math.log(r) / (per_step * scale * wd)
    exact_expr = sympy.log(rr) / (-per_step * sympy.log(1 - sym_scale * lam))
    approx_expr = sympy.log(rr) / (per_step * sym_scale * lam)
    steps = approx if first_order else exact(wd)
    ratio = exact(other) / exact(wd)
    return {
        "steps_expr": approx_expr if first_order else exact_expr,
        "approx_expr": approx_expr,
        "steps_exact": math.ceil(steps),
        "steps_first_order": approx,
        "delay_ratio": 1 / ratio if inverted else ratio,
    }


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    out = {}
    for k, v in wrong.items():
        same = sympy.simplify(v - right[k]) == 0 if isinstance(v, sympy.Basic) else v == right[k]
        if not same:
            out[k] = v
    return out


def _without_lr(q):
    # Decaying by (1 - λ) a step is a slip that gives a number only while λ < 1: at λ >= 1 it
    # wipes the weights out in one step. The ratio needs both decays below 1.
    wd, other = float(q["weight_decay"]), float(q["other_weight_decay"])
    if wd >= 1:
        return {}
    wrong = _changed({**q, "other_weight_decay": other if other < 1 else wd / 2}, without_lr=True)
    if other >= 1:
        wrong.pop("delay_ratio", None)
    return wrong


def adamw_zero_gradient_norms(lr, weight_decay, steps, width=16, seed=0):
    """The weight norm of a torch.optim.AdamW layer over `steps` steps with a zero gradient,
    relative to its start: the pure decoupled-decay drift the model describes."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    w = torch.nn.Parameter(torch.randn(width, width, generator=gen, dtype=torch.float64))
    opt = torch.optim.AdamW([w], lr=lr, weight_decay=weight_decay)
    start, norms = float(w.detach().norm()), [1.0]
    for _ in range(steps):
        opt.zero_grad()
        w.grad = torch.zeros_like(w)
        opt.step()
        norms.append(float(w.detach().norm()) / start)
    return norms


class GrokkingDelayTheory(Problem):
    id = "tds-t3-grokking-delay"
    title = "Why grokking waits: weight decay's clock"
    strand = "theory"
    kind = "theory"
    assignment = "tds-theory"
    symbols = SYMBOLS
    variants = {
        # Nanda et al. 2023, as their released notebook sets it: p = 113, 30% of pairs, full batch,
        # AdamW lr 1e-3, weight decay 1, betas (0.9, 0.98); compared with a tenfold weaker decay.
        "A": {"lr": 0.001, "weight_decay": 1.0, "shrink": 10.0, "other_weight_decay": 0.1},
        # Power et al. 2022's defaults as a re-implementation restates them (AdamW lr 1e-3, weight
        # decay 1, beta2 0.98, minibatch 512, 1e5 steps; not read from the paper); compared with a
        # weaker decay of 0.3.
        "B": {"lr": 0.001, "weight_decay": 1.0, "shrink": 3.0, "other_weight_decay": 0.3},
        # Liu et al. 2023 (Omnigrok), MNIST on 1000 points: AdamW lr 1e-3, weight decay 0.01, 1e5 steps
        # (read from a reproduction of their notebook, not from the paper; see the test).
        "C": {"lr": 0.001, "weight_decay": 0.01, "shrink": 2.0, "other_weight_decay": 0.05},
        # A GPT-2-style language-model recipe (nanoGPT: AdamW lr 6e-4, weight decay 0.1): the same clock
        # at the weight decay large models use.
        "D": {"lr": 0.0006, "weight_decay": 0.1, "shrink": 5.0, "other_weight_decay": 1.0},
    }
    checks = {
        "steps_expr": Expr(symbols=SYMBOLS, ranges=RANGES),
        "approx_expr": Expr(symbols=SYMBOLS, ranges=RANGES),
        "steps_exact": Count(),
        "steps_first_order": Number(rtol=1e-6),
        "delay_ratio": Number(rtol=1e-6),
    }
    cells = {"check_expressions": ("steps_expr", "approx_expr"),
             "check_numbers": ("steps_exact", "steps_first_order", "delay_ratio")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("first-order-as-exact",
                "ln r / (η λ) is the first-order approximation; the exact count solves (1 - η λ)^t = 1/r, "
                "t = ln r / (-ln(1 - η λ)), which is slightly smaller and whose ceiling can differ.",
                lambda q: _changed(q, first_order=True),
                instant="the difference between the exact per-step shrinkage and its first-order approximation."),
        Mistake("squared-norm",
                "this tracks the squared norm |w|², which shrinks by (1 - η λ)² a step; the factor r is "
                "for the norm |w| itself, so the count is twice this.",
                lambda q: _changed(q, squared=True),
                instant="which quantity the shrinking is measured on: the norm of the weights itself."),
        Mistake("more-decay-longer-delay",
                "a stronger weight decay shrinks the weights faster, so the clock runs faster and the "
                "delay is shorter (Power et al. found weight decay the most effective way to shorten it); "
                "the ratio is upside down.",
                lambda q: _changed(q, inverted=True),
                instant="how the strength of weight decay sets the speed of the shrinking."),
        Mistake("decay-without-lr",
                "torch's AdamW multiplies the weights by (1 - lr · weight_decay) each step: the decoupled "
                "decay is still scaled by the learning rate, so the per-step factor is 1 - η λ, not 1 - λ.",
                _without_lr,
                instant="how the optimiser's learning rate enters the decoupled decay step."),
    )


PROBLEM = GrokkingDelayTheory()
