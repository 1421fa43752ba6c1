"""w4-activations: activation memory per transformer layer, and what recomputation costs.

Sources:
- Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
  Models" (MLSys 2023; arXiv:2205.05198). Eq. (1) and Table 2: with 16-bit
  activations and no model parallelism a layer stores sbh(34 + 5as/h) bytes;
  selective recomputation (of the attention scores, softmax, dropout and
  attention over values) leaves 34sbh; full recomputation keeps only the
  layer's input, 2sbh. Appendix A, eqs. (7) and (8): model FLOPs
  72BLsh^2(1 + s/(6h) + v/(12hL)) and hardware FLOPs with selective
  recomputation 72BLsh^2(1 + s/(3h) + v/(12hL)).
- Chen et al., "Training Deep Nets with Sublinear Memory Cost" (2016):
  checkpointing costs one extra forward pass, so a step costs 8/6 of one
  without recomputation (forward 2 units, backward 4, recomputed forward 2).

A note on eq. (8): the appendix's own words add one forward of the two
attention matmuls, 4Bs^2h per layer, which would make the s-term 2s/(9h); the
printed s/(3h) adds 12Bs^2h. A co-author agreed the printed term is wrong
(NVIDIA/Megatron-LM issue #523, 2023). The paper's "2.7% and 1.6%" overheads
and the MFU/HFU pairs of its Table 5 follow the printed eq. (8). The chapter's
specification makes the printed form the reference (solve returns it), and grade
accepts the corrected form too, for full marks, with feedback naming the erratum.
"""
from fractions import Fraction

import sympy

from graders import transport
from graders.feedback import PASS, Outcome, line
from graders.numeric import Number
from graders.problem import Mistake, Problem
from graders.symbolic import Expr, from_srepr, symbols_for
from graders.units import byte_unit_slips

STRATEGIES = ("none", "selective", "full")
SYMBOLS = ("s", "b", "h", "a")
# The chapter calls the width d and the batch B; the paper writes h and b. Either is read.
ALIASES = (("d", "h"), ("B", "b"))

STORED_PER_SBH = 34          # bytes per s*b*h outside the attention scores (11 + 19 + 4)
SCORES_PER_AS2B = 5          # bytes per a*s^2*b: softmax output 2, dropout mask 1, dropout output 2
LAYER_INPUT_PER_SBH = 2      # one 16-bit copy of the layer's input (full recomputation)

MODEL_S_TERM = Fraction(1, 6)          # eq. (7): 72BLsh^2 (1 + s/(6h))
PRINTED_HW_S_TERM = Fraction(1, 3)     # eq. (8) as printed: adds 12Bs^2h per layer
ERRATUM_HW_S_TERM = Fraction(2, 9)     # one extra forward of QK^T and of scores x V: 4Bs^2h
SELECTIVE_HW_S_TERM = PRINTED_HW_S_TERM   # the reference (curriculum section 4); grade also accepts the erratum
FULL_RATIO = Fraction(8, 6)            # one more forward pass: (2 + 4 + 2) / (2 + 4)


def per_layer(s, b, h, a, strategy):
    """Activation bytes of one layer (works for numbers and for sympy symbols)."""
    if strategy == "none":
        return STORED_PER_SBH * s * b * h + SCORES_PER_AS2B * a * s * s * b
    if strategy == "selective":
        return STORED_PER_SBH * s * b * h
    if strategy == "full":
        return LAYER_INPUT_PER_SBH * s * b * h
    raise ValueError(f"strategy must be one of {STRATEGIES}, not {strategy!r}")


def recompute_ratio(s, h, strategy, hw_term=SELECTIVE_HW_S_TERM):
    """Training FLOPs with `strategy` over training FLOPs without recomputation (no vocabulary term)."""
    if strategy == "none":
        return 1.0
    if strategy == "full":
        return float(FULL_RATIO)
    if strategy == "selective":
        x = Fraction(s) / Fraction(h) if isinstance(s, int) and isinstance(h, int) else s / h
        return float((1 + hw_term * x) / (1 + MODEL_S_TERM * x))
    raise ValueError(f"strategy must be one of {STRATEGIES}, not {strategy!r}")


def _params(q):
    values = []
    for name in ("s", "b", "h", "a", "L"):
        value = q[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 \
                or value != value or value == float("inf"):
            raise ValueError(f"{name} must be a positive number, not {value!r}")
        values.append(value)
    strategy = q["strategy"]
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, not {strategy!r}")
    return (*values, strategy)


def answers(q, strategy=None, bytes_per_value=2, hw_term=SELECTIVE_HW_S_TERM):
    s, b, h, a, layers, own = _params(q)
    strategy = strategy or own
    scale = Fraction(bytes_per_value, 2)
    sym = symbols_for(SYMBOLS)
    layer = per_layer(s, b, h, a, strategy) * scale
    layer = int(layer) if isinstance(layer, Fraction) and layer.denominator == 1 else float(layer)
    return {
        "per_layer_bytes": layer,
        "total_bytes": layer * layers,
        "per_layer_expr": per_layer(sym["s"], sym["b"], sym["h"], sym["a"], strategy)
                          * sympy.Rational(bytes_per_value, 2),
        "recompute_flops_ratio": recompute_ratio(s, h, own, hw_term),
    }


class AliasedExpr(Expr):
    """An Expr that also reads the chapter's letters for the paper's (d for h, B for b).

    The alias is resolved while the text is read (both names map to one Symbol),
    so no arithmetic happens outside the grader's time bound.
    """

    def read(self, ans) -> sympy.Expr:
        allowed = symbols_for(self.symbols)
        for alias, target in ALIASES:
            allowed[alias] = allowed[target]
        if isinstance(ans, dict) and "sympy" in ans:
            return from_srepr(ans["sympy"], allowed)
        if isinstance(ans, sympy.Basic):
            return from_srepr(sympy.srepr(ans), allowed)
        return super().read(ans)   # raises ExpressionError saying what the answer is instead


class ActivationsProblem(Problem):
    id = "w4-activations"
    title = "Activation memory and recomputation"
    strand = "mathematics"
    kind = "worked"
    assignment = "worked"
    symbols = SYMBOLS
    # Shapes from Korthikanti et al. Table 3 (22B, MT-NLG 530B, 1T; s = 2048) and
    # GPT-3 6.7B (Brown et al. Table 2.1: d_model 4096, 32 layers, 32 heads).
    variants = {
        "A": {"s": 2048, "b": 4, "h": 6144, "a": 64, "L": 48, "strategy": "none"},
        "B": {"s": 2048, "b": 1, "h": 20480, "a": 128, "L": 105, "strategy": "selective"},
        "C": {"s": 2048, "b": 1, "h": 25600, "a": 160, "L": 128, "strategy": "full"},
        "D": {"s": 2048, "b": 4, "h": 4096, "a": 32, "L": 32, "strategy": "selective"},
    }
    checks = {
        "per_layer_bytes": Number(rtol=1e-3),
        "total_bytes": Number(rtol=1e-3),
        "per_layer_expr": AliasedExpr(symbols=SYMBOLS),
        "recompute_flops_ratio": Number(rtol=1e-4),
    }
    cells = {
        "check_expr": ("per_layer_expr",),
        "check_numbers": ("per_layer_bytes", "total_bytes"),
        "check_ratio": ("recompute_flops_ratio",),
    }

    def solve(self, params):
        return answers(params)

    mistakes = (
        Mistake(
            "fp32-activations",
            "the activations were counted at 4 bytes a value; they are stored in 16-bit (2 bytes).",
            lambda q: {k: v for k, v in answers(q, bytes_per_value=4).items()
                       if k != "recompute_flops_ratio"},
            instant="the precision the activations are stored in.",
        ),
        Mistake(
            "scores-forgotten",
            "the attention scores were left out: without recomputation a layer also stores the "
            "softmax output, its dropout mask and the dropout output, each of a*s*s values per sequence.",
            lambda q: {k: v for k, v in answers(q, strategy="selective").items()
                       if k != "recompute_flops_ratio"} if q["strategy"] == "none" else {},
            instant="the attention scores a layer stores for its backward pass.",
        ),
        Mistake(
            "selective-kept-scores",
            "selective recomputation is exactly what drops the attention-score term; what remains is "
            "the rest of the layer.",
            lambda q: {k: v for k, v in answers(q, strategy="none").items()
                       if k != "recompute_flops_ratio"} if q["strategy"] == "selective" else {},
            instant="what selective recomputation recomputes.",
        ),
        Mistake(
            "full-kept-everything",
            "with full recomputation a layer keeps only its 16-bit input; everything else is "
            "recomputed in the backward pass.",
            lambda q: {k: v for k, v in answers(q, strategy="none").items()
                       if k != "recompute_flops_ratio"} if q["strategy"] == "full" else {},
            instant="what full recomputation keeps of a layer.",
        ),
        *byte_unit_slips(lambda q: {k: v for k, v in answers(q).items()
                                    if k in ("per_layer_bytes", "total_bytes")}),
        Mistake(
            "backward-equals-forward",
            "the backward pass was priced like the forward, which makes one recomputed forward add "
            "a half; the backward costs twice the forward (gradients for activations and for "
            "weights), so price the recomputed forward against that whole step.",
            lambda q: {"recompute_flops_ratio": 1.5} if q["strategy"] == "full" else {},
            instant="how the backward pass is priced against the forward.",
        ),
        Mistake(
            "inverted-ratio",
            "the ratio is upside down: it is FLOPs with recomputation over FLOPs without, so it is "
            "at least 1.",
            lambda q: {"recompute_flops_ratio": 1 / answers(q)["recompute_flops_ratio"]}
            if q["strategy"] != "none" else {},
            instant="the definition of the FLOPs ratio.",
        ),
        Mistake(
            "small-s-approximation",
            "that is the paper's approximation for 3h >> s (its eq. 9); the problem asks for the "
            "exact ratio of the two counts.",
            lambda q: {"recompute_flops_ratio": 1 + float(MODEL_S_TERM) * q["s"] / q["h"]}
            if q["strategy"] == "selective" else {},
            instant="the exact counts behind the ratio.",
        ),
    )

    def grade(self, params, answers, keys=None):
        """Grade as usual, then accept the erratum's corrected ratio for "selective" in full.

        The reference (`solve`) is eq. (8) as printed; a student who uses the corrected term
        2s/(9h) (NVIDIA/Megatron-LM issue #523) earns the same marks, and the feedback says
        which form the answer matched.
        """
        result = super().grade(params, answers, keys)
        key = "recompute_flops_ratio"
        outcome = result.outcomes.get(key)
        if outcome is None or outcome.passed or not isinstance(answers, dict) or key not in answers:
            return result
        corrected = erratum_ratio(params)
        if corrected is None:
            return result
        check = self.checks[key]
        try:
            matched = check.judge(corrected, transport.encode(answers[key])).passed
        except Exception:  # noqa: BLE001 - a bad answer must never crash grading
            matched = False
        if not matched:
            return result
        index = list(keys or self.checks).index(key)     # Problem.grade writes one line per key, in order
        result.outcomes[key] = Outcome(PASS, ERRATUM_FEEDBACK)
        result.score += check.points
        result.feedback[index] = f"{line(key, result.outcomes[key])}; {ERRATUM_FEEDBACK}"
        noted = getattr(result, "mistakes", None)
        if isinstance(noted, dict):
            noted.pop(key, None)
        return result


ERRATUM_FEEDBACK = ("your ratio matched the erratum's corrected form of eq. (8), 2s/(9h) in place of the "
                    "printed s/(3h) (a co-author's correction, NVIDIA/Megatron-LM issue #523); the "
                    "printed form is accepted as well.")


def erratum_ratio(params):
    """The selective ratio with the erratum's 2s/(9h), or None when it does not apply."""
    try:
        s, _, h, _, _, strategy = _params(params)
    except (KeyError, TypeError, ValueError):
        return None
    return recompute_ratio(s, h, "selective", ERRATUM_HW_S_TERM) if strategy == "selective" else None


PROBLEM = ActivationsProblem()
