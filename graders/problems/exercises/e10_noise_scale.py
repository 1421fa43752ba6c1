"""e10-noise-scale: the gradient noise scale and the critical batch size.

Source: McCandlish, Kaplan, Amodei et al., "An Empirical Model of Large-Batch
Training" (2018, arXiv 1812.06162).
- §2: the simple noise scale B_simple = tr(Sigma)/|G|^2, and the trade-off between
  optimisation steps S and training examples E at batch size B,
      S/S_min = 1 + B_noise/B,   E/E_min = 1 + B/B_noise,
  i.e. (S/S_min - 1)(E/E_min - 1) = 1; B_simple stands in for B_noise here.
- Appendix A: a mini-batch gradient of size B has E|G_B|^2 = |G|^2 + tr(Sigma)/B,
  so two measurements at B_small < B_big give unbiased estimates
      |G|^2    = (B_big |G_big|^2 - B_small |G_small|^2) / (B_big - B_small),
      tr(Sigma) = (|G_small|^2 - |G_big|^2) / (1/B_small - 1/B_big).
  In data-parallel training B_small is one device's batch and B_big the global batch.
"""
from graders.numeric import Number
from graders.problem import Mistake, Problem
from graders.problems.common.noise_scale import SYMBOLS
from graders.problems.common.noise_scale import noise_scale_answers as _answers
from graders.symbolic import Expr


def _changed(q, **kwargs):
    right, wrong = _answers(q), _answers(q, **kwargs)
    return {k: v for k, v in wrong.items() if v != right[k]}


class NoiseScaleProblem(Problem):
    id = "e10-noise-scale"
    title = "The gradient noise scale and the critical batch size"
    strand = "mathematics"
    kind = "exercise"
    assignment = "exercises"
    symbols = SYMBOLS
    # Data-parallel measurements: b_small is one device's batch, b_big the all-reduced global batch
    # (sequences); g2_* are the measured squared norms, 4 significant digits, early to late in training.
    variants = {
        "A": {"b_small": 8, "b_big": 512, "g2_small": 0.3801, "g2_big": 0.02691, "batch": 256},
        "B": {"b_small": 16, "b_big": 2048, "g2_small": 0.07378, "g2_big": 0.002462, "batch": 256},
        "C": {"b_small": 32, "b_big": 8192, "g2_small": 0.009752, "g2_big": 0.0001018, "batch": 16384},
        "D": {"b_small": 4, "b_big": 64, "g2_small": 2.8, "g2_big": 0.5031, "batch": 16},
    }
    checks = {
        "b_simple_expr": Expr(symbols=SYMBOLS),
        "g2": Number(rtol=1e-3),
        "trace_sigma": Number(rtol=1e-3),
        "b_simple": Number(rtol=1e-3),
        "steps_ratio": Number(rtol=1e-4),
        "examples_ratio": Number(rtol=1e-4),
    }
    cells = {
        "check_expr": ("b_simple_expr",),
        "check_estimates": ("g2", "trace_sigma", "b_simple"),
        "check_tradeoff": ("steps_ratio", "examples_ratio"),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake(
            "biased-small-batch-norm",
            "the small-batch squared norm was used as |G|^2; it is biased upward by tr(Sigma)/B_small, "
            "so combine the two measurements to cancel the noise term.",
            lambda q: _changed(q, g2=lambda bs, bb, gs, gb: gs),
            instant="the noise carried by the small-batch gradient's norm.",
        ),
        Mistake(
            "big-batch-as-exact",
            "the big-batch gradient was treated as the exact gradient; it still carries tr(Sigma)/B_big "
            "of noise, so both |G|^2 and tr(Sigma) come out biased.",
            lambda q: _changed(q, g2=lambda bs, bb, gs, gb: gb, trace=lambda bs, bb, gs, gb: bs * (gs - gb)),
            instant="the noise carried by the big-batch gradient.",
        ),
        Mistake(
            "inverted-noise-scale",
            "the noise scale is noise over signal, tr(Sigma)/|G|^2 (a number of examples), not its inverse.",
            lambda q: _changed(q, b_simple=lambda t, g: g / t),
            instant="what the noise scale measures, and in what unit.",
        ),
        Mistake(
            "swapped-ratios",
            "the two ratios are swapped: a batch above the noise scale saves steps but costs examples, "
            "so S/S_min = 1 + B_noise/B and E/E_min = 1 + B/B_noise.",
            lambda q: _changed(q, swap_ratios=True),
            instant="which of steps and examples each ratio counts.",
        ),
    )


PROBLEM = NoiseScaleProblem()
