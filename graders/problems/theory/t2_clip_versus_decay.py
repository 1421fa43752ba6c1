"""t2-clip-versus-decay: Proposition 2, and when each half of it fails (theory).

Proposition 2 (the chapter's): weight decay and gradient clipping guard different failures and do
not substitute for each other. This item asks for the two edges of it:
- when clipping does nothing: with torch's convention (clip_grad_norm_ multiplies by
  min(max_norm / (norm + 1e-6), 1); Pascanu, Mikolov and Bengio, ICML 2013, §3.2) a threshold
  above every norm never acts, and a slow drift made of ordinary steps is never touched;
- when decay does harm: decoupled weight decay (Loshchilov and Hutter, ICLR 2019, Algorithm 2,
  as torch.optim.AdamW implements it: w <- (1 - lr*wd) w - lr * adam_step) balances the optimiser's
  push where lr*wd*|w| equals lr*|mean step|. For a coordinate whose gradient has mean mu and standard
  deviation sigma, Adam's mean step in units of lr is u = mu / sqrt(mu^2 + sigma^2) (m -> mu,
  v -> mu^2 + sigma^2), so the weight settles at u / wd: the learning rate cancels. A weight the
  model needs larger than that is shrunk by decay, whatever the schedule. A pure-noise coordinate
  random-walks (one unit of lr^2 variance per step) inside the same pull and settles at an rms of
  sqrt(lr / (wd (2 - lr*wd))) (Kosson et al., "Rotational Equilibrium", ICML 2024, give the
  small-lr*wd form sqrt(lr/(2 wd)) per coordinate). The weights are an exponential moving average
  of the updates over a timescale of 1/(lr*wd) steps (Wang and Aitchison 2024, "How to set AdamW's
  weight decay as you scale model and dataset size"), so the ratio of the signal's equilibrium to
  the noise's, u * sqrt(2 / (lr*wd)) for small lr*wd, falls as lr*wd grows: too large lr*wd
  averages over too few steps.
The model is checked against torch.optim.AdamW itself in the tests (a few percent, the size of the
steady-state approximation m/sqrt(v) ~ mu/sqrt(mu^2 + sigma^2)).

Variant hyper-parameters (lr, weight decay, run length in steps): LLaMA-7B (Touvron et al. 2023,
§2.3 and Table 2: 3.0e-4, 0.1, 1.0T tokens at 4M tokens per step), GPT-3 175B (Brown et al. 2020,
Table 2.1 and Appendix B: 0.6e-4, 0.1, 300B tokens at 3.2M tokens per step), BERT-base (Devlin et al.
2019, Appendix A.2: 1e-4, 0.01, 1M steps), DeiT-B (Touvron et al. 2021, Table 9: 5e-4 x 1024/512
= 1e-3, 0.05, 300 epochs of ImageNet-1k at batch 1024). The gradient statistics, thresholds and
"needed" magnitudes are made up for the exercise.
"""
import math

import sympy

from graders.numeric import Number, Numbers
from graders.problem import Mistake, Problem
from graders.symbolic import Expr, symbols_for

EPS = 1e-6   # torch's clip_grad_norm_ adds this to the total norm
EXPR_SYMBOLS = ("eta", "lambda", "mu", "sigma")


def _real(q, name, positive=True):
    value = q[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, not {value!r}")
    if positive and value <= 0:
        raise ValueError(f"{name} must be positive, not {value!r}")
    return float(value)


def _reals(q, name):
    values = q[name]
    if not isinstance(values, (list, tuple)) or not values:
        raise ValueError(f"{name} must be a non-empty list of numbers")
    out = [_real({name: v}, name, positive=False) for v in values]
    if any(v < 0 for v in out):
        raise ValueError(f"{name} must hold non-negative numbers")
    return out


def _read(q):
    norms, thresholds = _reals(q, "grad_norms"), _reals(q, "thresholds")
    if any(t <= 0 for t in thresholds):
        raise ValueError("thresholds must be positive")
    lr, wd = _real(q, "lr"), _real(q, "weight_decay")
    if not lr * wd < 1:
        raise ValueError("lr * weight_decay must be below 1")
    mu, needed = _real(q, "signal"), _real(q, "needed")
    sigma = _real(q, "noise", positive=False)
    if sigma < 0:
        raise ValueError("noise must be non-negative")
    steps = q["steps"]
    if isinstance(steps, bool) or not isinstance(steps, (int, float)) or steps != int(steps) or steps < 0:
        raise ValueError("steps must be a non-negative whole number")
    return norms, thresholds, lr, wd, mu, sigma, needed, int(steps)


def clips(norm, threshold):
    """Whether torch's clip_grad_norm_ changes the gradient: its coefficient is below 1."""
    return threshold / (norm + EPS) < 1.0


def _answers(q, *, count_unclipped=False, one_based=False, active_listed=False, u_rule=None,
             decay_without_lr=False, walk_without_decay=False):
    norms, thresholds, lr, wd, mu, sigma, needed, steps = _read(q)
    counts = [sum(clips(n, t) for n in norms) for t in thresholds]
    idle = [i for i, c in enumerate(counts) if (c > 0 if active_listed else c == 0)]
    if count_unclipped:
        counts = [len(norms) - c for c in counts]
    if one_based:
        idle = [i + 1 for i in idle]
    u = (u_rule or (lambda m, s: m / math.hypot(m, s)))(mu, sigma)
    pull = wd if decay_without_lr else lr * wd
    cap = u / wd
    noise_rms = lr * math.sqrt(steps) if walk_without_decay else math.sqrt(lr / (wd * (2 - lr * wd)))
    lam, m, s = (symbols_for(EXPR_SYMBOLS)[k] for k in ("lambda", "mu", "sigma"))
    u_expr = sympy.sympify(u_rule(m, s)) if u_rule is not None else m / sympy.sqrt(m ** 2 + s ** 2)
    return {
        "clipped_counts": counts,
        "idle_thresholds": idle,
        "update_ratio": u,
        "equilibrium_weight": cap,
        "equilibrium_expr": u_expr / lam,
        "largest_safe_decay": u / needed,
        "noise_rms": noise_rms,
        "weight_snr": cap / noise_rms,
        "timescale_steps": 1.0 / pull,
        "weight_no_decay": lr * u * steps,
        "weight_with_decay": cap * (1.0 - (1.0 - pull) ** steps) if pull < 1 else cap,
    }


def _one(m, s):
    return 1.0


def _raw(m, s):
    return m


def _changed(q, keys=None, **kwargs):
    right, wrong = _answers(q), _answers(q, **kwargs)
    out = {}
    for k, v in wrong.items():
        if keys is not None and k not in keys:
            continue
        if isinstance(v, sympy.Basic):
            if sympy.simplify(v - right[k]) != 0:
                out[k] = v
        elif v != right[k]:
            out[k] = v
    return out


class ClipVersusDecayProblem(Problem):
    id = "t2-clip-versus-decay"
    title = "Clipping and decay: when each one does nothing, and when decay does harm"
    strand = "theory"
    kind = "theory"
    assignment = "theory"
    symbols = EXPR_SYMBOLS
    variants = {
        # LLaMA-7B: lr 3e-4, wd 0.1, 250k steps
        "A": {"grad_norms": [0.42, 0.38, 0.45, 1.9, 0.41, 0.36, 0.47, 0.37, 7.3, 0.39, 0.44, 0.43],
              "thresholds": [0.4, 1.0, 2.0, 10.0],
              "lr": 3.0e-4, "weight_decay": 0.1, "steps": 250_000,
              "signal": 0.02, "noise": 1.0, "needed": 0.5},
        # GPT-3 175B: lr 6e-5, wd 0.1, 93,750 steps
        "B": {"grad_norms": [0.55, 0.61, 0.58, 0.52, 0.66, 12.4, 0.57, 0.60, 0.63, 0.54, 3.1, 0.59],
              "thresholds": [0.3, 1.0, 25.0, 50.0],
              "lr": 6.0e-5, "weight_decay": 0.1, "steps": 93_750,
              "signal": 0.05, "noise": 1.0, "needed": 0.3},
        # BERT-base: lr 1e-4, wd 0.01, 1M steps
        "C": {"grad_norms": [0.21, 0.19, 0.24, 0.22, 0.20, 0.26, 0.23, 0.18, 2.7, 0.21, 0.245, 0.20],
              "thresholds": [5.0, 0.5, 1.0, 0.25],
              "lr": 1.0e-4, "weight_decay": 0.01, "steps": 1_000_000,
              "signal": 0.004, "noise": 0.1, "needed": 2.0},
        # DeiT-B: lr 1e-3, wd 0.05, 375k steps (300 epochs x 1,251)
        "D": {"grad_norms": [0.90, 0.85, 1.2, 0.95, 31.0, 0.88, 0.92, 0.87, 0.93, 2.2, 0.89, 0.91],
              "thresholds": [1.0, 0.1, 100.0, 3.0],
              "lr": 1.0e-3, "weight_decay": 0.05, "steps": 375_000,
              "signal": 0.015, "noise": 0.5, "needed": 0.8},
    }
    checks = {
        "clipped_counts": Numbers(exact=True),
        "idle_thresholds": Numbers(exact=True),
        "weight_no_decay": Number(rtol=1e-3),
        "update_ratio": Number(rtol=1e-3),
        "equilibrium_weight": Number(rtol=1e-3),
        "equilibrium_expr": Expr(symbols=EXPR_SYMBOLS),
        "largest_safe_decay": Number(rtol=1e-3),
        "weight_with_decay": Number(rtol=1e-3),
        "timescale_steps": Number(rtol=1e-3),
        "noise_rms": Number(rtol=1e-3),
        "weight_snr": Number(rtol=1e-3),
    }
    cells = {
        "check_clipping": ("clipped_counts", "idle_thresholds", "weight_no_decay"),
        "check_equilibrium": ("update_ratio", "equilibrium_weight", "equilibrium_expr", "largest_safe_decay"),
        "check_timescale": ("weight_with_decay", "timescale_steps", "noise_rms", "weight_snr"),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake(
            "counted-unclipped-steps",
            "these count the steps clipping leaves alone; count the steps where the coefficient "
            "max_norm/(norm + 1e-6) is below 1.",
            lambda q: _changed(q, keys=("clipped_counts",), count_unclipped=True),
            instant="which steps count as clipped.",
        ),
        Mistake(
            "one-based-indices",
            "the threshold indices look 1-based; count the first threshold as index 0.",
            lambda q: _changed(q, keys=("idle_thresholds",), one_based=True),
            instant="how the list of thresholds is indexed.",
        ),
        Mistake(
            "active-not-idle",
            "these are the thresholds at which clipping acts; the question asks where it never does.",
            lambda q: _changed(q, keys=("idle_thresholds",), active_listed=True),
            instant="which thresholds the question asks for.",
        ),
        Mistake(
            "raw-gradient-as-step",
            "the raw mean gradient was used as the step; Adam divides by the root-mean-square "
            "gradient, so its mean step (in units of the learning rate) is mu/sqrt(mu^2 + sigma^2).",
            lambda q: _changed(q, u_rule=_raw),
            instant="Adam's normalisation of the gradient by its running moments.",
        ),
        Mistake(
            "noise-ignored",
            "the step was taken as a full learning rate every step; with noise, Adam's mean step is "
            "only the signal's share mu/sqrt(mu^2 + sigma^2) of it.",
            lambda q: _changed(q, u_rule=_one),
            instant="what gradient noise does to Adam's mean step.",
        ),
        Mistake(
            "decay-without-learning-rate",
            "the per-step pull was taken as the weight decay alone; torch's AdamW pulls by "
            "lr * weight_decay per step, so the timescale is 1/(lr * weight_decay).",
            lambda q: _changed(q, keys=("timescale_steps", "weight_with_decay"), decay_without_lr=True),
            instant="the part the learning rate plays in the pull of AdamW's decay.",
        ),
        Mistake(
            "walk-without-decay",
            "this is the random walk's spread with no decay (it grows like sqrt(steps) forever); "
            "with decay the walk settles where the pull balances the noise.",
            lambda q: _changed(q, keys=("noise_rms", "weight_snr"), walk_without_decay=True),
            instant="the balance between the decay's pull and the noise.",
        ),
    )


PROBLEM = ClipVersusDecayProblem()
