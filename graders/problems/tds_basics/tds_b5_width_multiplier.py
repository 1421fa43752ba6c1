"""tds-b5-width-multiplier: the width multiplier of muP, and the rates and multipliers it sets.

The term. muP (the Maximal Update Parametrisation; Yang, Hu, Babuschkin, Sidor, Liu, Farhi,
Ryder, Pachocki, Chen and Gao, "Tensor Programs V: Tuning Large Neural Networks via Zero-Shot
Hyperparameter Transfer", 2022, arXiv 2203.03466) describes a model by its width relative to a
tuned base model, the width multiplier m = width / base_width, and scales with m what the
standard parametrisation leaves fixed. For Adam, in the form of their Table 8, which
microsoft/mup's MuAdam and MuReadout implement (Table 3 writes the same parametrisation through
initialisation variances and learning rates):
- hidden (width x width) weight matrices: learning rate base_lr / m;
- the output (readout) layer: its logits multiplied by 1/m;
- input weights and biases: learning rate unchanged, base_lr.
Under the standard parametrisation every layer keeps base_lr, which is why its best rate moves.

Answers, for the variant's `base_width`, `widths` and `base_lr`: `width_multipliers` (m per
width), `hidden_lrs` (Adam rate of hidden matrices per width) and `output_multipliers` (per width).
"""
from __future__ import annotations

from graders.numeric import Numbers
from graders.problem import Mistake, Problem


def _read(q):
    base, lr = float(q["base_width"]), float(q["base_lr"])
    widths = [float(w) for w in q["widths"]]
    if not (base > 0 and lr > 0) or not widths or any(not w > 0 for w in widths):
        raise ValueError("base_width, base_lr and every width must be positive")
    return base, widths, lr


def _answers(q, *, lr_power=1.0, out_power=1.0):
    base, widths, lr = _read(q)
    ms = [w / base for w in widths]
    return {"width_multipliers": ms,
            "hidden_lrs": [lr / m ** lr_power for m in ms],
            "output_multipliers": [1 / m ** out_power for m in ms]}


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    return {k: v for k, v in wrong.items() if v != right[k]}


class WidthMultiplierBasics(Problem):
    id = "tds-b5-width-multiplier"
    title = "The width multiplier: muP's learning rates and output multipliers"
    strand = "basics"
    kind = "basics"
    assignment = "tds-basics"
    # Base widths and rates of muP-style sweeps (a 256-wide proxy; GPT-3-like widths up to 12288).
    variants = {
        "A": {"base_width": 256, "widths": [256, 1024, 4096, 12288], "base_lr": 0.01},
        "B": {"base_width": 128, "widths": [64, 512, 2048, 8192], "base_lr": 0.003},
        "C": {"base_width": 512, "widths": [1024, 2048, 5120, 8192], "base_lr": 0.002},
        "D": {"base_width": 64, "widths": [32, 128, 1024, 4096], "base_lr": 0.02},
    }
    checks = {"width_multipliers": Numbers(rtol=1e-9), "hidden_lrs": Numbers(rtol=1e-6),
              "output_multipliers": Numbers(rtol=1e-6)}
    cells = {"check_multipliers": ("width_multipliers", "hidden_lrs", "output_multipliers")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("lr-square-root",
                "the hidden rate was divided by the square root of m, the scaling of an initialisation's "
                "standard deviation; muP's Adam rate for hidden matrices falls as 1/m.",
                lambda q: _changed(q, lr_power=0.5),
                instant="the width scaling of Adam's hidden-matrix rate, as distinct from the initialisation's."),
        Mistake("lr-multiplied",
                "the hidden rate was multiplied by m; a wider matrix sums more coordinated updates into "
                "each output, so its rate must fall with width, base_lr / m.",
                lambda q: _changed(q, lr_power=-1.0),
                instant="how coordinated updates accumulate in each output of a wider hidden matrix."),
        Mistake("output-square-root",
                "the output multiplier was taken as 1/sqrt(m); muP multiplies the logits by 1/m.",
                lambda q: _changed(q, out_power=0.5),
                instant="the output multiplier in the muP parametrisation that the mup package implements."),
    )


PROBLEM = WidthMultiplierBasics()
