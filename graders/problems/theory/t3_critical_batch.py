"""t3-critical-batch: why larger batches stop paying (theory).

Source: McCandlish, Kaplan, Amodei et al., "An Empirical Model of Large-Batch Training"
(2018, arXiv 1812.06162), §2.3 and §3; restated by Kaplan et al. 2020 ("Scaling Laws for
Neural Language Models", §5.1, eqs. 5.1 to 5.4). To reach a fixed loss at batch size B a run
takes S optimisation steps and E = B*S training examples, with
    S / S_min = 1 + B_noise / B,        E / E_min = 1 + B / B_noise,
so (S/S_min - 1)(E/E_min - 1) = 1, and the critical batch size B_crit = E_min / S_min, which
under this model equals B_noise (E_min = S_min * B_noise). Below B_crit doubling the batch
nearly halves the steps at almost no extra cost in examples ("perfect scaling"); above it the
steps barely fall while the examples (compute) grow almost linearly ("diminishing returns").

The noise scale comes from the measured pair of squared gradient norms exactly as in
e10-noise-scale (McCandlish et al., Appendix A): this module imports that problem's
estimators and its step/example ratios rather than restating them.

Answers (all derived from the same B_noise):
- b_noise: the simple noise scale B_simple from the two measurements (examples);
- steps: S = S_min (1 + B_noise/B) at each candidate batch in `batches`;
- examples: E = B * S at each candidate batch (= E_min (1 + B/B_noise));
- doubling_speedups: S(B) / S(2B) at each candidate batch (2 = perfect, 1 = no gain);
- diminishing: the indices of the candidates above the critical batch (B > B_noise);
- near_linear_limit: the largest B at which doubling still divides the steps by `speedup`,
  B = B_noise (2 - s) / (2 (s - 1));
- overhead_batch: the largest B whose examples stay within `overhead` of E_min, B = overhead * B_noise;
- deadline_batch: the smallest B that reaches the loss within `max_steps`,
  B = B_noise / (max_steps/S_min - 1);
- deadline_cost: E/E_min at that batch, = max_steps / (max_steps - S_min).
"""
import math

from graders.numeric import Number, Numbers
from graders.problem import Mistake, Problem
from graders.problems.common.noise_scale import noise_scale_answers

MEASURED = ("b_small", "b_big", "g2_small", "g2_big")


def _positive(q, name):
    value = q[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, not {value!r}")
    return float(value)


def _read(q):
    batches = q["batches"]
    if not isinstance(batches, (list, tuple)) or not batches:
        raise ValueError("batches must be a non-empty list of batch sizes")
    batches = [_positive({"batch": b}, "batch") for b in batches]
    s_min, overhead, speedup, max_steps = (_positive(q, k) for k in ("s_min", "overhead", "speedup", "max_steps"))
    if not 1 < speedup < 2:
        raise ValueError(f"speedup must lie strictly between 1 and 2 (doubling can at most halve the steps), "
                         f"not {speedup!r}")
    if max_steps <= s_min:
        raise ValueError("max_steps must exceed s_min: no batch size reaches the loss in fewer than S_min steps")
    return batches, s_min, overhead, speedup, max_steps


def _noise_scale(q, biased=False):
    """B_simple from the measurements, with e10's estimators (or its declared biased one)."""
    measured = {k: q[k] for k in MEASURED}
    if biased:
        return noise_scale_answers({**measured, "batch": 1}, g2=lambda bs, bb, gs, gb: gs)["b_simple"]
    return noise_scale_answers({**measured, "batch": 1})["b_simple"]


def _ratios(q, batch):
    """(S/S_min, E/E_min) at `batch`, from e10's reference (McCandlish §2.3)."""
    r = noise_scale_answers({**{k: q[k] for k in MEASURED}, "batch": batch})
    return r["steps_ratio"], r["examples_ratio"]


def _answers(q, *, biased=False, swap=False, speedup_inverted=False, overhead_inverted=False,
             deadline_inverted=False, examples_at_min=False, diminishing_below=False):
    """The reference answers; each keyword reproduces one declared mistake."""
    batches, s_min, overhead, speedup, max_steps = _read(q)
    noise = _noise_scale(q, biased=biased)

    def steps_at(b):
        if biased:
            ratio = 1 + noise / b
        else:
            ratio = _ratios(q, b)[0]
        if swap:
            ratio = 1 + b / noise
        return s_min * ratio

    steps = [steps_at(b) for b in batches]
    examples = [s_min * b if examples_at_min else b * s for b, s in zip(batches, steps)]
    speedups = [steps_at(b) / steps_at(2 * b) for b in batches]
    if speedup_inverted:
        speedups = [1 / s for s in speedups]
    above = [i for i, b in enumerate(batches) if (b < noise if diminishing_below else b > noise)]
    ratio = max_steps / s_min
    deadline = noise * (ratio - 1) if deadline_inverted else noise / (ratio - 1)
    return {
        "b_noise": noise,
        "steps": steps,
        "examples": examples,
        "doubling_speedups": speedups,
        "diminishing": above,
        "near_linear_limit": noise * (2 - speedup) / (2 * (speedup - 1)),
        "overhead_batch": noise / overhead if overhead_inverted else noise * overhead,
        "deadline_batch": deadline,
        "deadline_cost": 1 + deadline / noise,
    }


def _changed(q, **kwargs):
    right, wrong = _answers(q), _answers(q, **kwargs)
    return {k: v for k, v in wrong.items() if v != right[k]}


def _only(keys, **kwargs):
    return lambda q: {k: v for k, v in _changed(q, **kwargs).items() if k in keys}


class CriticalBatchProblem(Problem):
    id = "t3-critical-batch"
    title = "Why larger batches stop paying: the critical batch size"
    strand = "theory"
    kind = "theory"
    assignment = "theory"
    symbols = ()
    # Measurements as in e10 (b_small one device's batch, b_big the global batch, sequences;
    # squared norms to 4 significant digits), candidate global batches, the fewest steps S_min
    # that reach the target loss, an allowed compute overhead, a wanted doubling speedup and
    # a step budget. Settings are in the range of GPT-2/GPT-3-style language-model runs
    # (batches of 0.5M to 4M tokens at 1,024 to 2,048 tokens per sequence). Every batch an
    # answer names is at least one device's measured batch `b_small`: a global batch below that
    # is no data-parallel configuration. D is a GPT-3-scale run: B_noise about 1,600 sequences
    # (3.3M tokens at 2,048 per sequence) and E_min = S_min * B_noise about 330B tokens.
    variants = {
        "A": {"b_small": 16, "b_big": 1024, "g2_small": 0.2125, "g2_big": 0.01563,
              "batches": [32, 128, 512, 2048], "s_min": 20_000, "overhead": 0.1, "speedup": 1.8,
              "max_steps": 30_000},
        "B": {"b_small": 8, "b_big": 2048, "g2_small": 0.3646, "g2_big": 0.003516,
              "batches": [128, 512, 1024, 2048, 4096], "s_min": 60_000, "overhead": 0.2, "speedup": 1.9,
              "max_steps": 75_000},
        "C": {"b_small": 32, "b_big": 4096, "g2_small": 0.08165, "g2_big": 0.001035,
              "batches": [2048, 8192, 16384, 65536], "s_min": 8_000, "overhead": 0.25, "speedup": 1.5,
              "max_steps": 12_000},
        "D": {"b_small": 8, "b_big": 2048, "g2_small": 0.3015, "g2_big": 0.002672,
              "batches": [256, 512, 1024, 2048], "s_min": 100_000, "overhead": 0.3, "speedup": 1.75,
              "max_steps": 400_000},
    }
    checks = {
        "b_noise": Number(rtol=1e-3),
        "steps": Numbers(rtol=1e-3),
        "examples": Numbers(rtol=1e-3),
        "doubling_speedups": Numbers(rtol=1e-4),
        "diminishing": Numbers(exact=True),
        "near_linear_limit": Number(rtol=1e-3),
        "overhead_batch": Number(rtol=1e-3),
        "deadline_batch": Number(rtol=1e-3),
        "deadline_cost": Number(rtol=1e-4),
    }
    cells = {
        "check_noise": ("b_noise",),
        "check_tradeoff": ("steps", "examples", "doubling_speedups", "diminishing"),
        "check_limits": ("near_linear_limit", "overhead_batch", "deadline_batch", "deadline_cost"),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake(
            "biased-noise-scale",
            "the small-batch squared norm was used as |G|^2; it carries tr(Sigma)/B_small of noise, "
            "so the noise scale comes out too small (combine both measurements, as in e10).",
            _only(("b_noise", "steps", "examples", "doubling_speedups", "diminishing", "near_linear_limit",
                   "overhead_batch", "deadline_batch"), biased=True),
            instant="the noise that the small-batch gradient norm carries.",
        ),
        Mistake(
            "swapped-ratios",
            "the step count used E/E_min's formula; the steps fall as the batch grows, "
            "S = S_min (1 + B_noise/B).",
            _only(("steps", "examples", "doubling_speedups"), swap=True),
            instant="which trade-off relation gives the step count.",
        ),
        Mistake(
            "examples-at-minimum-steps",
            "the examples were counted as B * S_min; a batch of B takes S > S_min steps, "
            "so E = B * S = E_min (1 + B/B_noise).",
            _only(("examples",), examples_at_min=True),
            instant="the number of steps a batch of your size takes.",
        ),
        Mistake(
            "speedup-inverted",
            "the speedup was taken as S(2B)/S(B); a speedup compares the steps before doubling "
            "with the steps after, so it lies between 1 and 2.",
            _only(("doubling_speedups",), speedup_inverted=True),
            instant="what a speedup compares.",
        ),
        Mistake(
            "diminishing-below",
            "these are the candidates below the critical batch; returns diminish above it, "
            "where doubling B barely lowers S.",
            _only(("diminishing",), diminishing_below=True),
            instant="where the returns on batch size diminish.",
        ),
        Mistake(
            "overhead-inverted",
            "E/E_min = 1 + B/B_noise, so an overhead o allows B = o * B_noise, not B_noise / o.",
            _only(("overhead_batch",), overhead_inverted=True),
            instant="how the examples spent grow with the batch size.",
        ),
        Mistake(
            "deadline-inverted",
            "solve S_min (1 + B_noise/B) = max_steps for B: B = B_noise / (max_steps/S_min - 1).",
            _only(("deadline_batch", "deadline_cost"), deadline_inverted=True),
            instant="solving the step-count relation for the batch a deadline needs.",
        ),
    )


PROBLEM = CriticalBatchProblem()
