"""c1-clip-and-decay: what to picture. The chapter's Fig. 8, generated from numbers.

Fourteen global gradient norms, a clip threshold that cuts only the spikes, and decoupled
weight decay acting on every one of the fourteen steps. The checks are the numbers the
figure is drawn from: which bars the threshold cuts, by what coefficient, how tall each bar
is after clipping, how many steps other thresholds would cut, and the running shrink that
decay applies to every parameter.

The clipping rule and the decay rule are the ones w5-clip-decay grades, imported from there:
- torch.nn.utils.clip_grad_norm_ multiplies every gradient by
  min(max_norm / (total_norm + 1e-6), 1), so clipping acts exactly when that coefficient is
  below 1 (a norm equal to the threshold is still scaled, by M / (M + 1e-6); no variant
  puts a threshold that close to a norm, so `norm > M` and `c < 1` agree on every variant);
- torch.optim.AdamW multiplies every parameter by (1 - lr * weight_decay) before the Adam
  step, on every step (Loshchilov and Hutter, ICLR 2019, Algorithm 2, as torch implements it).
  After t steps a parameter has lost the fraction 1 - (1 - lr*wd)**t of its value to decay.

Variant hyper-parameters are those of published runs (only the fourteen norms are made up):
GPT-3 Small 125M (Brown et al. 2020, Table 2.1: lr 6.0e-4; Appendix B: clip 1.0, weight
decay 0.1); LLaMA-65B (Touvron et al. 2023, Table 2: lr 1.5e-4; section 2.3: weight decay
0.1, clipping 1.0); OPT-175B (Zhang et al. 2022, Table 1: lr 1.2e-4; section 2.2: weight
decay 0.1; section 2.5: clipping lowered from 1.0 to 0.3); BERT-base (Devlin et al. 2019,
appendix A.2: lr 1e-4, weight decay 0.01; clipping at 1.0 in the released optimizer code).
"""
from __future__ import annotations

from graders.numeric import Number, Numbers
from graders.problem import Mistake, Problem
from graders.problems.common.clipping import EPS, clip_coefficient
from graders.problems.common.clipping import clip_settings as _check


def _inputs(params):
    """(norms, max_norm, lr, weight_decay, thresholds), validated with w5's rules."""
    norms, max_norm, lr, wd, _ = _check(dict(params, steps=len(params["grad_norms"])))
    thresholds = [float(m) for m in params["thresholds"]]
    if not thresholds or any(not m > 0 for m in thresholds):
        raise ValueError("thresholds must be a non-empty list of positive numbers")
    return norms, max_norm, lr, wd, thresholds


def clipped_count(norms, max_norm):
    """How many of the steps clip_grad_norm_ would scale down at this threshold."""
    return sum(clip_coefficient(n, max_norm) < 1.0 for n in norms)


def running_shrink(pull, steps_with_decay):
    """Fraction of a parameter removed by decay after each step, for a per-step pull.

    `steps_with_decay` says, per step, whether decay acted (always True in AdamW; the
    declared mistake that ties decay to clipping passes False on ordinary steps).
    """
    factor, out = 1.0, []
    for acted in steps_with_decay:
        if acted:
            factor *= 1.0 - pull
        out.append(1.0 - factor)
    return out


def _answers(params):
    norms, max_norm, lr, wd, thresholds = _inputs(params)
    coefficients = [clip_coefficient(n, max_norm) for n in norms]
    shrinks = running_shrink(lr * wd, [True] * len(norms))
    return {
        "clipped_steps": [i for i, c in enumerate(coefficients) if c < 1.0],
        "clip_coefficients": coefficients,
        "clipped_norms": [n * c for n, c in zip(norms, coefficients)],
        "clip_counts": [clipped_count(norms, m) for m in thresholds],
        "decay_shrinks": shrinks,
        "decay_shrink": shrinks[-1],
    }


# --- what the declared mistakes compute -------------------------------------------------

def _not_clamped(q):
    norms, max_norm, *_ = _inputs(q)
    coefficients = [max_norm / (n + EPS) for n in norms]
    return {"clip_coefficients": coefficients,
            "clipped_norms": [n * c for n, c in zip(norms, coefficients)]}


def _decay_without_lr(q):
    norms, _, _, wd, _ = _inputs(q)
    shrinks = running_shrink(wd, [True] * len(norms))
    return {"decay_shrinks": shrinks, "decay_shrink": shrinks[-1]}


def _decay_with_clipping(q):
    norms, max_norm, lr, wd, _ = _inputs(q)
    acted = [clip_coefficient(n, max_norm) < 1.0 for n in norms]
    shrinks = running_shrink(lr * wd, acted)
    return {"decay_shrinks": shrinks, "decay_shrink": shrinks[-1]}


def _factor_not_shrink(q):
    answers = _answers(q)
    return {"decay_shrinks": [1.0 - s for s in answers["decay_shrinks"]],
            "decay_shrink": 1.0 - answers["decay_shrink"]}


TIE_MARGIN = 0.005     # relative distance every threshold keeps from every norm


class ClipAndDecayConcept(Problem):
    id = "c1-clip-and-decay"
    title = "Fig. 8 from numbers: clipping cuts the spikes, decay pulls on every step"
    strand = "concept"
    kind = "concept"
    assignment = "concept"
    # grad_norms: fourteen global gradient norms (mostly ordinary, a few spikes);
    # thresholds: other clip thresholds to try on the same fourteen steps (one of them
    # sits below the ordinary norms, where clipping stops being rare). No threshold, and no
    # max_norm, lies within TIE_MARGIN of a norm: the question is when clipping acts, and a
    # tie would grade torch's 1e-6 epsilon instead (`norm > M` and `c < 1` would disagree).
    variants = {
        "A": {"grad_norms": [0.42, 0.39, 0.45, 0.41, 0.38, 7.3, 0.44, 0.40, 0.43, 0.37, 0.46,
                             0.41, 2.9, 0.39],
              "max_norm": 1.0, "lr": 6.0e-4, "weight_decay": 0.1,
              "thresholds": [0.35, 0.425, 3.0, 10.0]},                          # GPT-3 Small
        "B": {"grad_norms": [0.27, 0.25, 0.29, 12.6, 0.26, 0.28, 0.24, 0.30, 0.27, 0.25, 0.31,
                             0.26, 0.28, 0.29],
              "max_norm": 1.0, "lr": 1.5e-4, "weight_decay": 0.1,
              "thresholds": [0.2, 0.285, 0.5, 20.0]},                          # LLaMA-65B
        "C": {"grad_norms": [0.16, 0.19, 0.17, 0.15, 1.1, 0.18, 0.20, 0.16, 4.8, 0.17, 0.19,
                             0.15, 0.18, 0.6],
              "max_norm": 0.3, "lr": 1.2e-4, "weight_decay": 0.1,
              "thresholds": [0.1, 0.175, 1.0, 1.5]},                           # OPT-175B
        "D": {"grad_norms": [0.71, 0.66, 0.74, 0.69, 0.72, 0.65, 0.70, 0.68, 0.73, 0.67, 25.0,
                             0.71, 0.69, 0.75],
              "max_norm": 1.0, "lr": 1.0e-4, "weight_decay": 0.01,
              "thresholds": [0.5, 0.705, 0.8, 5.0]},                            # BERT-base
    }
    checks = {
        "clipped_steps": Numbers(exact=True, points=1),
        "clip_coefficients": Numbers(rtol=1e-5, points=1),
        "clipped_norms": Numbers(rtol=1e-5, points=1),
        "clip_counts": Numbers(exact=True, points=1),
        "decay_shrinks": Numbers(rtol=1e-4, points=1),
        "decay_shrink": Number(rtol=1e-3, points=1),
    }
    cells = {
        "check_clipping": ("clipped_steps", "clip_coefficients", "clipped_norms"),
        "check_thresholds": ("clip_counts",),
        "check_decay": ("decay_shrinks", "decay_shrink"),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake(
            "one-based-steps",
            "the step indices look 1-based; the first bar of the figure is step 0.",
            lambda q: {"clipped_steps": [i + 1 for i in _answers(q)["clipped_steps"]]},
            instant="how the steps of the figure are numbered.",
        ),
        Mistake(
            "coefficient-not-clamped",
            "the coefficient was not clamped at 1, which would scale every ordinary step up to "
            "the threshold; clipping never enlarges a gradient, so ordinary bars keep their height.",
            _not_clamped,
            instant="what clipping does to a gradient whose norm is within the threshold.",
        ),
        Mistake(
            "decay-without-learning-rate",
            "the per-step pull was taken as weight_decay alone; AdamW multiplies each parameter "
            "by (1 - lr * weight_decay), so the learning rate scales the pull.",
            _decay_without_lr,
            instant="the part the learning rate plays in AdamW's decoupled decay.",
        ),
        Mistake(
            "decay-only-when-clipping",
            "decay was applied only on the steps where clipping acted; decay does not look at "
            "the gradient at all and pulls on every step.",
            _decay_with_clipping,
            instant="which steps the weight decay acts on.",
        ),
        Mistake(
            "factor-not-shrink",
            "these are the remaining factors (1 - lr * weight_decay)**t; the question asks for "
            "the fraction removed, one minus that factor.",
            _factor_not_shrink,
            instant="which quantity of the decay the question asks for.",
        ),
    )


PROBLEM = ClipAndDecayConcept()
