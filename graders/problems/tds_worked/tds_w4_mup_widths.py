"""tds-w4-mup-widths: muP for Adam in the form of Table 3, width by width, against SP.

Source: Yang, Hu, Babuschkin, Sidor, Liu, Farhi, Ryder, Pachocki, Chen and Gao, "Tensor Programs V:
Tuning Large Neural Networks via Zero-Shot Hyperparameter Transfer" (2022, arXiv 2203.03466).
Table 3 ("muP and SP for general neural networks") states muP through initialisation variances
and learning rates only, no multipliers. For Adam, with fan_in the width-carrying input
dimension of a weight:
- input weights and all biases: init variance 1/fan_in, Adam rate 1 (as SP);
- hidden (width x width) weights: init variance 1/fan_in (as SP), Adam rate 1/fan_in (SP: 1);
- output weights: init variance 1/fan_in^2 (SP: 1/fan_in), Adam rate 1/fan_in (SP: 1).
Table 8 writes the same parametrisation with an output multiplier 1/fan_in, output init
variance 1 and output Adam rate 1 (the form microsoft/mup implements with MuReadout and MuAdam);
Table 9 moves the factors into multipliers on both the input and the output layers. Only the
width scaling is fixed; the constants come from a tuned base model of width d0, so at width d
with m = d/d0 each entry becomes (base value) times the power of 1/m that the table gives.

Answers, for the variant's base width d0, target widths, base Adam rate and base init stds:
`output_init_var_expr` (muP output init variance as an expression in the width d, the base
numbers in it), `hidden_init_stds` (std of hidden weights at each width; muP and SP agree),
`output_init_stds_mup` and `output_init_stds_sp`, `output_adam_lrs_mup` (Table 3's output
Adam rate), and `init_logit_scales_mup` (the std of the output logits at initialisation, relative
to the base model's, under Table 3: the readout sums d inputs of order one with weights of
variance proportional to 1/d^2). tds-b5-width-multiplier grades the hidden Adam rate and the
Table 8 output multiplier, and tds-t1-mup-transfer the SP rate that tracks the best one; neither
is graded here.
"""
from __future__ import annotations

import math

import sympy

from graders.numeric import Numbers
from graders.problem import Mistake, Problem
from graders.problems.common.changed import changed_answers
from graders.symbolic import Expr, symbols_for

SYMBOLS = ("d",)


def _read(q):
    base, lr = float(q["base_width"]), float(q["base_lr"])
    hidden_std, output_std = float(q["base_hidden_std"]), float(q["base_output_std"])
    widths = [float(w) for w in q["widths"]]
    if not (base > 0 and lr > 0 and hidden_std > 0 and output_std > 0) or not widths \
            or any(not w > 0 for w in widths):
        raise ValueError("base_width, base_lr, the base stds and every width must be positive")
    return base, widths, lr, hidden_std, output_std


def _answers(q, *, out_var_power=2, scale_std=False, out_lr_power=1, hidden_var_power=1):
    """The reference (Table 3, Adam); keywords reproduce declared mistakes:
    out_var_power is the power of 1/m in the output init variance (SP: 1, Table 8 without its
    multiplier: 0), scale_std applies the variance rule to the std, out_lr_power is the power of
    1/m in the output Adam rate, hidden_var_power that of the hidden init variance."""
    base, widths, lr, hidden_std, output_std = _read(q)
    std_of = (lambda p: p) if scale_std else (lambda p: p / 2)   # noqa: E731  power of 1/m in the std
    ms = [w / base for w in widths]
    out_mup = [output_std / m ** std_of(out_var_power) for m in ms]
    d = symbols_for(SYMBOLS)["d"]
    s0, d0 = sympy.nsimplify(output_std), sympy.nsimplify(base)
    var_power = 2 * std_of(out_var_power)
    return {
        "output_init_var_expr": s0 ** 2 * (d0 / d) ** sympy.nsimplify(var_power),
        "hidden_init_stds": [hidden_std / m ** std_of(hidden_var_power) for m in ms],
        "output_init_stds_mup": out_mup,
        "output_init_stds_sp": [output_std / m ** std_of(1) for m in ms],
        "output_adam_lrs_mup": [lr / m ** out_lr_power for m in ms],
        # logits: a sum of d terms of order one, weights of std out_mup: std ~ sqrt(d) * out_mup
        "init_logit_scales_mup": [math.sqrt(m) * s / output_std for m, s in zip(ms, out_mup)],
    }


class MupWidthsWorked(Problem):
    id = "tds-w4-mup-widths"
    title = "muP in practice: Table 3's initialisations and Adam rates, width by width"
    strand = "mathematics"
    kind = "worked"
    assignment = "tds-worked"
    symbols = SYMBOLS
    # Target widths are real d_model values; the base is a narrow proxy. Base rates and stds are
    # published values of real models, used here as the proxy's tuned values.
    # A: Tensor Programs V's GPT-3 transfer (a 40M-parameter proxy for GPT-3 6.7B, as its abstract
    #    says; the proxy's width, 256 here, was not verified), targets GPT-3 Medium, 6.7B and 175B (Brown et al. 2020, Table 2.1: d_model
    #    1024, 4096, 12288); rate 6e-4 and std 0.02 as GPT-3 Small / GPT-2 use.
    # B: the paper's BERT transfer (a 13M proxy for BERT-large): base 128, targets 512, BERT-base
    #    768 and BERT-large 1024; Adam rate 1e-4 and init std 0.02 as in Devlin et al. 2019.
    # C: the widths of Cerebras-GPT (Dey et al. 2023), whose muP runs used a narrow proxy: 111M
    #    (d_model 768, from its model card), 1.3B and 13B (2048 and 5120, Cerebras-GPT's own; GPT-3
    #    13B's is 5140), from a 256-wide proxy; rate 6e-3 and stds 0.08 are the muP base values
    #    Cerebras-GPT reports for that proxy.
    # D: Llama 2's widths (Touvron et al. 2023: 7B 4096, 13B 5120, 70B 8192) from a 512-wide
    #    proxy; rate 3e-4 as Llama 2 7B's, std 0.02, and a readout std of 0.004 (a fifth of it,
    #    as proxies often start the readout small).
    variants = {
        "A": {"base_width": 256, "widths": [1024, 4096, 12288], "base_lr": 6e-4,
              "base_hidden_std": 0.02, "base_output_std": 0.02},
        "B": {"base_width": 128, "widths": [512, 768, 1024], "base_lr": 1e-4,
              "base_hidden_std": 0.02, "base_output_std": 0.02},
        "C": {"base_width": 256, "widths": [768, 2048, 5120], "base_lr": 6e-3,
              "base_hidden_std": 0.08, "base_output_std": 0.08},
        "D": {"base_width": 512, "widths": [4096, 5120, 8192], "base_lr": 3e-4,
              "base_hidden_std": 0.02, "base_output_std": 0.004},
    }
    checks = {
        "output_init_var_expr": Expr(symbols=SYMBOLS),
        "hidden_init_stds": Numbers(rtol=1e-6),
        "output_init_stds_mup": Numbers(rtol=1e-6),
        "output_init_stds_sp": Numbers(rtol=1e-6),
        "output_adam_lrs_mup": Numbers(rtol=1e-6),
        "init_logit_scales_mup": Numbers(rtol=1e-6),
    }
    cells = {
        "check_expression": ("output_init_var_expr",),
        "check_inits": ("hidden_init_stds", "output_init_stds_mup", "output_init_stds_sp"),
        "check_rates": ("output_adam_lrs_mup", "init_logit_scales_mup"),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("sp-output-variance",
                "the readout was initialised as in SP, variance 1/fan_in; under muP (Table 3) its "
                "variance scales as 1/fan_in^2, so its std falls as 1/m rather than 1/sqrt(m).",
                lambda q: changed_answers(_answers, q, out_var_power=1),
                instant="how muP's readout initialisation differs from SP's."),
        Mistake("variance-rule-on-std",
                "Table 3 gives the scaling of the initial *variance*; the std is its square root. "
                "The variance rule was applied to the std itself.",
                lambda q: changed_answers(_answers, q, scale_std=True),
                instant="the difference between a variance and a standard deviation."),
        Mistake("table-8-readout-init",
                "the readout's init was kept at the base value, as Table 8 has it; but Table 8 pairs "
                "that init with an output multiplier 1/m. In Table 3, which has no multipliers, the "
                "factor goes into the init variance (1/fan_in^2).",
                lambda q: changed_answers(_answers, q, out_var_power=0),
                instant="which table the rule comes from, and what that table pairs with it."),
        Mistake("table-8-readout-rate",
                "the readout's Adam rate was kept at the base value, as in Table 8, where the output "
                "multiplier scales the update; Table 3 has no multiplier and scales the readout's Adam "
                "rate as 1/fan_in instead.",
                lambda q: changed_answers(_answers, q, out_lr_power=0),
                instant="which table the readout's Adam rate comes from."),
        Mistake("fixed-hidden-std",
                "the hidden weights kept the base model's std at every width, as code that draws every "
                "weight with one fixed std does; Table 3 (muP and SP alike) gives them variance "
                "1/fan_in, so their std falls as 1/sqrt(m) from the base value.",
                lambda q: changed_answers(_answers, q, hidden_var_power=0),
                instant="how a hidden weight's initial spread depends on its fan-in."),
    )


PROBLEM = MupWidthsWorked()
