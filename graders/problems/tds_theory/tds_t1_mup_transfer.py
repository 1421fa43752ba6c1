"""tds-t1-mup-transfer: why the best learning rate moves with width under SP, and not under muP.

Source: Yang et al., "Tensor Programs V: Tuning Large Neural Networks via Zero-Shot
Hyperparameter Transfer" (2022, arXiv 2203.03466), §5 and Table 3. The argument, for a hidden
weight matrix W (n x n) and Adam:
- Adam's update is entrywise of size about η, whatever the width: its first step is
  η g / (|g| + eps), since m̂ = g and sqrt(v̂) = |g| and Adam adds eps to the denominator, so it
  is η sign(g) up to eps wherever |g| >> eps;
- the gradient of W is an outer product g xᵀ, so the update is correlated with the input x: each
  entry of ΔW x sums n terms of one sign, |ΔW x|_i ≈ η Σ_j |x_j|, which grows like n, not like
  sqrt(n) as uncorrelated changes would;
- so under the standard parametrisation (SP: the same η at every width) the change of a hidden
  layer's output in one step grows in proportion to the width. The rate that keeps a hidden
  layer's update at the base model's size is η_base · n_base / n; it is not the best SP rate of
  the whole network, but the best rate drifts down with it as the model widens;
- muP builds that factor in (hidden Adam rate η / m, m = n / n_base), so the best *base* rate η is
  the same at every width and a sweep on the narrow proxy transfers.
The tests check the growth against torch.optim.Adam's own first step on real Linear layers.

Answers, for the variant's base width, widths and base rate: `update_growth` (the factor by which
the output change of one Adam step at the base rate grows, width over base, per width),
`sp_best_lrs` (the SP rate that restores the base model's update size, per width; named for the
best rate whose drift it tracks),
`mup_best_base_lrs` (the best base rate under muP, per width), `lr_shift_decades` (log10 of the
ratio of those SP rates at the narrowest and widest widths) and `sp_best_lr_expr` (the SP rate
as an expression in the width d and the base rate eta, with the variant's base width a number).
"""
from __future__ import annotations

import math

import sympy

from graders.numeric import Number, Numbers
from graders.problem import Mistake, Problem
from graders.symbolic import Expr, symbols_for

SYMBOLS = ("eta", "d")


def _read(q):
    base, lr = float(q["base_width"]), float(q["base_lr"])
    widths = [float(w) for w in q["widths"]]
    if not (base > 0 and lr > 0) or len(widths) < 2 or any(not w > 0 for w in widths):
        raise ValueError("base_width and base_lr must be positive, with at least two positive widths")
    return base, widths, lr


def _answers(q, *, power=1.0, mup_moves=False):
    base, widths, lr = _read(q)
    growth = [(w / base) ** power for w in widths]
    sp = [lr / g for g in growth]
    s = symbols_for(SYMBOLS)
    return {
        "update_growth": growth,
        "sp_best_lrs": sp,
        "mup_best_base_lrs": sp if mup_moves else [lr for _ in widths],
        "lr_shift_decades": math.log10(sp[widths.index(min(widths))] / sp[widths.index(max(widths))]),
        "sp_best_lr_expr": s["eta"] * (sympy.nsimplify(base) / s["d"]) ** sympy.nsimplify(power),
    }


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    out = {}
    for k, v in wrong.items():
        same = sympy.simplify(v - right[k]) == 0 if isinstance(v, sympy.Basic) else v == right[k]
        if not same:
            out[k] = v
    return out


def adam_output_change(width, lr, seed=0):
    """|ΔW x| / sqrt(width) after one torch.optim.Adam step on a width x width Linear layer.

    The loss is <g, W x> for a fixed random g and input x, so the gradient is the outer product
    g xᵀ; the output change ΔW x is measured on the same x.
    """
    import torch
    gen = torch.Generator().manual_seed(seed)
    layer = torch.nn.Linear(width, width, bias=False).double()
    x = torch.randn(width, generator=gen, dtype=torch.float64)
    g = torch.randn(width, generator=gen, dtype=torch.float64)
    before = layer(x).detach()
    opt = torch.optim.Adam(layer.parameters(), lr=lr)
    (g * layer(x)).sum().backward()
    opt.step()
    return float((layer(x).detach() - before).norm() / math.sqrt(width))


class MupTransferTheory(Problem):
    id = "tds-t1-mup-transfer"
    title = "Why the best learning rate moves with width, and why muP stops it"
    strand = "theory"
    kind = "theory"
    assignment = "tds-theory"
    symbols = SYMBOLS
    # Proxy widths and rates of muP-style sweeps (Yang et al. tune 256- to 1024-wide proxies).
    variants = {
        "A": {"base_width": 256, "widths": [256, 1024, 4096, 8192], "base_lr": 0.003},
        "B": {"base_width": 128, "widths": [128, 512, 2048], "base_lr": 0.01},
        "C": {"base_width": 512, "widths": [512, 1536, 6144, 12288], "base_lr": 0.001},
        "D": {"base_width": 64, "widths": [32, 64, 256, 1024, 4096], "base_lr": 0.02},
    }
    checks = {
        "sp_best_lr_expr": Expr(symbols=SYMBOLS),
        "update_growth": Numbers(rtol=1e-6),
        "sp_best_lrs": Numbers(rtol=1e-6),
        "mup_best_base_lrs": Numbers(rtol=1e-6),
        "lr_shift_decades": Number(rtol=1e-6),
    }
    cells = {"check_expression": ("sp_best_lr_expr",),
             "check_numbers": ("update_growth", "sp_best_lrs", "mup_best_base_lrs", "lr_shift_decades")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("uncorrelated-updates",
                "the changes were added as if independent (growth like sqrt(width)); the gradient is g xᵀ, "
                "so every term of (ΔW x)_i has the same sign and the sum grows like the width itself.",
                lambda q: _changed(q, power=0.5),
                instant="the structure of a hidden matrix's gradient, and how the terms of one output's change align."),
        Mistake("mup-also-moves",
                "under muP the 1/m is already in the hidden layers' rate, so the best base rate stays put.",
                lambda q: _changed(q, mup_moves=True),
                instant="where muP already puts the width dependence of the hidden rate."),
        Mistake("rate-grows-with-width",
                "a wider layer's step changes its output more, so the rate that restores the base size "
                "must fall with width, not grow.",
                lambda q: _changed(q, power=-1.0),
                instant="how a wider layer's step changes its output."),
    )


PROBLEM = MupTransferTheory()
