"""w3-range: the casts against torch, the limits against what the sources print, and the grader."""
import math
import random

import pytest
import sympy
import torch

from graders import problems
from graders.problems.worked import w3_range
from tests.problems.worked.mistakes import assert_loses_points_where_made

PROBLEM = problems.get("w3-range")
TORCH = {"float16": torch.float16, "bfloat16": torch.bfloat16,
         "float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}

# --- (a) what the primary sources print ------------------------------------------------------
# Micikevicius et al., Mixed Precision Training (ICLR 2018): §3.2 gives 65,504 as fp16's largest
# value and §3.1 2^-24 as the magnitude below which values become zero; IEEE 754-2008 binary16
# has smallest normal 2^-14 (printed in decimal as about 6.10e-5); bfloat16 shares fp32's
# exponent range, smallest normal 2^-126 (about 1.18e-38). Each figure is stored as printed,
# with a tolerance matching its printed rounding.
PRINTED_LIMITS = {
    "fp16_max": (65504.0, 0.0),                 # "65,504", exact
    "fp16_min_subnormal": (2.0 ** -24, 0.0),    # "2^-24", exact
    "fp16_min_normal": (6.10e-5, 5e-3),         # "~6.10e-5", three figures
    "bf16_min_normal": (1.18e-38, 5e-3),        # "1.18e-38", three figures
}


# Micikevicius et al. 2022, "FP8 Formats for Deep Learning", Table 1, as printed:
# E4M3 max normal 448 (1.75 * 2^8), min normal 2^-6, min subnormal 2^-9;
# E5M2 max normal 57,344 (1.75 * 2^15), min normal 2^-14, min subnormal 2^-16.
PRINTED_FP8 = {"float8_e4m3fn": (448.0, 2.0 ** -6, 2.0 ** -9),
               "float8_e5m2": (57344.0, 2.0 ** -14, 2.0 ** -16)}


@pytest.mark.parametrize("dtype", sorted(PRINTED_FP8))
def test_fp8_limits_match_the_fp8_paper_and_torch_finfo(dtype):
    from graders.problems.common.formats import format_limits
    largest, min_normal, min_subnormal = format_limits(dtype)
    assert (largest, min_normal, min_subnormal) == PRINTED_FP8[dtype]
    info = torch.finfo(TORCH[dtype])
    assert (info.max, info.smallest_normal, info.tiny * info.eps) == (largest, min_normal, min_subnormal)
    assert torch.tensor([min_subnormal]).to(TORCH[dtype]).item() == min_subnormal
    assert torch.tensor([min_subnormal / 2]).to(TORCH[dtype]).item() == 0.0    # the tie goes to 0


def test_fp8_variants_and_the_scale_ceiling_of_each_format():
    """Two variants are FP8; max_log2_scale is taken against each format's own largest finite value."""
    dtypes = {q["dtype"] for q in PROBLEM.variants.values()}
    assert {"float8_e4m3fn", "float8_e5m2"} <= dtypes
    for dtype, ceiling in (("float8_e4m3fn", 448.0), ("float8_e5m2", 57344.0), ("float16", 65504.0)):
        k = PROBLEM.solve({"grads": [1.0, -1e-3], "dtype": dtype})["max_log2_scale"]
        assert 2.0 ** k <= ceiling < 2.0 ** (k + 1)
    # torch 2.13 saturates e4m3fn casts (no infinities) and rounds e5m2 past the top to inf
    assert torch.tensor([1e6, float("inf")]).to(torch.float8_e4m3fn).tolist() == [448.0, 448.0]
    assert w3_range.cast(1e6, "float8_e4m3fn") == 448.0
    assert math.isinf(torch.tensor([61440.0]).to(torch.float8_e5m2).item())
    assert math.isinf(w3_range.cast(61440.0, "float8_e5m2")) and w3_range.cast(61439.0, "float8_e5m2") == 57344.0


@pytest.mark.parametrize("key", sorted(PRINTED_LIMITS))
def test_limits_match_printed_figures(key):
    printed, rtol = PRINTED_LIMITS[key]
    value = PROBLEM.solve(PROBLEM.variants["A"])[key]
    assert value == pytest.approx(printed, rel=rtol, abs=0)


def test_limits_match_torch_finfo():
    answers = PROBLEM.solve(PROBLEM.variants["C"])
    assert answers["fp16_max"] == torch.finfo(torch.float16).max
    assert answers["fp16_min_normal"] == torch.finfo(torch.float16).tiny
    assert answers["bf16_min_normal"] == torch.finfo(torch.bfloat16).tiny
    assert answers["fp16_min_subnormal"] == torch.finfo(torch.float16).tiny * torch.finfo(torch.float16).eps


def test_expressions_give_the_limits_of_three_formats():
    answers = PROBLEM.solve(PROBLEM.variants["A"])
    e, m = sympy.symbols("e m", positive=True)
    for dtype, bits in ((torch.float16, (5, 10)), (torch.bfloat16, (8, 7)), (torch.float32, (8, 23))):
        at = {e: bits[0], m: bits[1]}
        info = torch.finfo(dtype)
        assert float(answers["max_finite_expr"].subs(at)) == info.max
        assert float(answers["min_subnormal_expr"].subs(at)) == info.tiny * info.eps


def _share_zero(values, dtype):
    return sum(v == 0 for v in torch.tensor(values).to(TORCH[dtype]).tolist()) / len(values)


def test_paper_section_3_2_ssd_ranges():
    # §3.2: values in [2^-27, 2^-24) mattered and a scale of 8 kept them; Fig. 3's caption bins
    # [2^-24, 2^-23) (kept even unscaled) and [2^-34, 2^-32) (lost, and still lost after x8).
    rng = random.Random(3)
    mattered = [2.0 ** rng.uniform(-27, -24) for _ in range(200)]
    kept = [2.0 ** rng.uniform(-24, -23) for _ in range(200)]
    lost = [2.0 ** rng.uniform(-34, -32) for _ in range(200)]

    def share(values, k=0):
        return w3_range.underflow_fraction(values, "float16", k)

    assert share(mattered) > 0.3                   # unscaled, many of them vanish
    assert share(mattered, 3) == 0.0               # x8 keeps every one
    assert share(kept) == 0.0
    assert share(lost) == 1.0 and share(lost, 3) == 1.0
    # the same through torch, independently of the module's own rounding
    assert _share_zero([v * 8 for v in mattered], "float16") == 0.0
    assert _share_zero([v * 8 for v in lost], "float16") == 1.0


def test_paper_section_3_1_cut_is_half_of_2_pow_minus_24():
    # "smaller than 2^-24 becomes zero" is the paper's round figure; with round-to-nearest
    # the cut is at 2^-25: above it a value rounds up to 2^-24, at it the tie goes to 0.
    assert w3_range.cast(2.0 ** -25, "float16") == 0.0
    assert w3_range.cast(0.6 * 2.0 ** -24, "float16") == 2.0 ** -24
    assert torch.tensor([0.6 * 2.0 ** -24]).to(torch.float16).item() == 2.0 ** -24


# --- (b) the cast is torch's cast --------------------------------------------------------------

def _boundary_values():
    values = []
    for dtype in TORCH:
        info = torch.finfo(TORCH[dtype])
        sub = info.tiny * info.eps
        for base in (sub / 2, sub, 1.5 * sub, 2.5 * sub, info.tiny, info.max):
            for f in (1 - 2 ** -30, 1.0, 1 + 2 ** -30, 1 - 2 ** -12, 1 + 2 ** -12):
                values.append(base * f)
        values.append(info.max + (info.max * info.eps / 4))   # rounds back to max
    return values


@pytest.mark.parametrize("dtype", sorted(TORCH))
def test_cast_matches_torch(dtype):
    rng = random.Random(8)
    values = [rng.choice((-1, 1)) * 10.0 ** rng.uniform(-44, 38) for _ in range(4000)]
    values += [v for v in _boundary_values() if v < 3.4e38]
    values = [v for v in values if abs(v) < 3.4e38]          # torch.tensor needs fp32 range
    expected = torch.tensor(values).to(TORCH[dtype]).tolist()
    got = [w3_range.cast(v, dtype) for v in values]
    mismatches = [(v, a, b) for v, a, b in zip(values, got, expected) if a != b]
    assert not mismatches, mismatches[:5]


@pytest.mark.parametrize("label", "ABCD")
def test_variant_fractions_match_torch(label):
    params = PROBLEM.variants[label]
    dtype, grads = params["dtype"], params["grads"]
    answers = PROBLEM.solve(params)
    assert answers["underflow_fraction"] == pytest.approx(_share_zero(grads, dtype), abs=1e-12)
    k = answers["max_log2_scale"]
    ceiling = torch.finfo(TORCH[dtype]).max
    peak = max(abs(g) for g in grads)
    assert peak * 2.0 ** k <= ceiling < peak * 2.0 ** (k + 1)
    scaled = [g * 2.0 ** k for g in grads]
    assert answers["underflow_fraction_scaled"] == pytest.approx(_share_zero(scaled, dtype), abs=1e-12)
    assert all(math.isfinite(v) for v in torch.tensor(scaled).to(TORCH[dtype]).tolist())


@pytest.mark.parametrize("label", "ABCD")
def test_variants_are_far_from_rounding_ties(label):
    # float64 -> dtype rounded once (numpy for fp16) must agree with torch's double rounding
    # through fp32; otherwise a student's correct route could disagree with the reference.
    import numpy as np
    params = PROBLEM.variants[label]
    for k in (0, PROBLEM.solve(params)["max_log2_scale"]):
        values = [g * 2.0 ** k for g in params["grads"]]
        if params["dtype"] == "float16":
            once = (np.array(values, dtype=np.float64).astype(np.float16) == 0).tolist()
            assert once == [v == 0 for v in torch.tensor(values).to(torch.float16).tolist()]
        for v in values:
            zero = [w3_range.cast(v * f, params["dtype"]) == 0 for f in (1 - 1e-3, 1.0, 1 + 1e-3)]
            assert len(set(zero)) == 1, v


def test_solve_accepts_any_valid_parameters():
    rng = random.Random(11)
    for _ in range(50):
        dtype = rng.choice(sorted(TORCH))
        grads = [rng.choice((-1, 1)) * 10.0 ** rng.uniform(-40, 3) for _ in range(rng.randint(1, 30))]
        answers = PROBLEM.solve({"grads": grads, "dtype": dtype})
        assert 0 <= answers["underflow_fraction_scaled"] <= answers["underflow_fraction"] <= 1
        assert answers["underflow_fraction"] == pytest.approx(_share_zero(grads, dtype), abs=1e-12)
    with pytest.raises(ValueError):
        PROBLEM.solve({"grads": [1e-3], "dtype": "float8"})
    with pytest.raises(ValueError):
        PROBLEM.solve({"grads": [0.0, 1e-3], "dtype": "float16"})


# --- (c) the grader ----------------------------------------------------------------------------

def test_variants_differ():
    numbers = {label: tuple(PROBLEM.solve(q)[k] for k in ("underflow_fraction", "max_log2_scale",
                                                          "underflow_fraction_scaled"))
               for label, q in PROBLEM.variants.items()}
    assert len(set(numbers.values())) == 4


def test_problem_declares_the_interface():
    assert PROBLEM.kind == "worked" and PROBLEM.assignment == "worked"
    for key in ("underflow_fraction", "max_log2_scale", "underflow_fraction_scaled", "fp16_max",
                "fp16_min_normal", "fp16_min_subnormal", "bf16_min_normal"):
        assert key in PROBLEM.checks
    assert any(key.endswith("_expr") for key in PROBLEM.checks)


@pytest.mark.parametrize("mistake", PROBLEM.mistakes, ids=lambda m: m.name)
def test_every_mistake_loses_points_with_its_feedback(mistake):
    lost = False
    for params in PROBLEM.variants.values():
        answers = dict(PROBLEM.solve(params))
        wrong = mistake.wrong(params)
        answers.update(wrong)
        result = PROBLEM.grade(params, answers)
        if result.score < result.max_score:
            lost = True
            assert any(mistake.feedback in line for line in result.feedback), result.feedback
    assert lost, f"{mistake.name} never loses points"


def test_feedback_never_states_a_reference_value():
    params = PROBLEM.variants["D"]
    reference = PROBLEM.solve(params)
    answers = {key: (value * 3 if isinstance(value, (int, float)) else value + 1)
               for key, value in reference.items()}
    text = " ".join(PROBLEM.grade(params, answers).feedback)
    for key, value in reference.items():
        if isinstance(value, (int, float)) and value not in (0, 1):
            assert repr(value) not in text and f"{value:g}" not in text, key
    for mistake in PROBLEM.mistakes:
        for token in ("65504", "65,504", "2^-", "2**-", "e-0", "e-1", "e-2", "e-3"):
            assert token not in mistake.feedback


@pytest.mark.parametrize("bad", [None, "0.25", float("nan"), [0.1], {"x": 1}, sympy.Symbol("x")])
def test_bad_answers_score_zero_without_raising(bad):
    params = PROBLEM.variants["A"]
    result = PROBLEM.grade(params, {key: bad for key in PROBLEM.checks})
    assert result.score == 0
    assert len(result.feedback) == len(PROBLEM.checks)


def test_missing_answers_and_wrong_symbols_score_zero():
    params = PROBLEM.variants["B"]
    result = PROBLEM.grade(params, {})
    assert result.score == 0 and all("missing" in line for line in result.feedback)
    k = sympy.Symbol("k", positive=True)
    result = PROBLEM.grade(params, {"min_subnormal_expr": 2 ** (-k), "max_finite_expr": "2**16"},
                           keys=["min_subnormal_expr", "max_finite_expr"])
    assert result.score == 0
    assert "not in this problem's notation" in result.feedback[0]
    assert "string" in result.feedback[1]


# --- what Fig. 3 of the 2018 paper shows -------------------------------------------------------
# Micikevicius et al. 2018, Fig. 3, is a histogram of Multibox SSD's activation gradients recorded
# during fp32 training: its 67% zero bin counts values already zero in fp32, and the paper prints
# no share lost to fp16 underflow (the w3 notebook says so). A card quoting the 67% says fp32.
def test_a_card_quoting_fig3s_zero_share_places_it_in_fp32():
    import tomllib
    from pathlib import Path
    root = Path(__file__).resolve().parents[3] / "graders" / "problems"
    quoting = [card for path in sorted(root.glob("*/*.cards.toml"))
               for card in tomllib.loads(path.read_text())["card"] if "67%" in card["back"]]
    assert quoting, "the w3 card on Fig. 3 quotes its 67%"
    for card in quoting:
        assert "in fp32" in card["back"] and "in fp16" not in card["back"], card["back"]


# --- every declared mistake is tested where it can be made ---------------------------------------
# The policy scan found 'flush-subnormals', 'truncate-not-round' and 'percent-not-fraction' giving
# the right answers in variant C (no bf16 value lay near bf16's floor, so the share was 0 either
# way), and 'fp16-range-for-bf16' in variant A, an fp16 cast where the mistake cannot be made.
@pytest.mark.parametrize("label", "ABCD")
@pytest.mark.parametrize("mistake", PROBLEM.mistakes, ids=lambda m: m.name)
def test_a_mistake_that_can_be_made_loses_points_in_every_variant(mistake, label):
    assert_loses_points_where_made(PROBLEM, mistake, label)


def test_variant_c_reaches_bf16s_floor_as_torch_casts_it():
    """C's three smallest values: one rounds to 0, one rounds up to bf16's smallest subnormal,
    one survives as a subnormal, so bf16's floor is a floor."""
    smallest = PROBLEM.variants["C"]["grads"][:3]
    cast_values = torch.tensor(smallest).to(torch.bfloat16).float().abs().tolist()
    tiny = torch.finfo(torch.bfloat16).tiny
    assert cast_values[0] == 0
    assert cast_values[1] == tiny * torch.finfo(torch.bfloat16).eps
    assert 0 < cast_values[2] < tiny
    assert PROBLEM.solve(PROBLEM.variants["C"])["underflow_fraction"] > 0


def test_fp16_range_cannot_be_confused_in_an_fp16_variant():
    mistake = next(m for m in PROBLEM.mistakes if m.name == "fp16-range-for-bf16")
    assert mistake.wrong(PROBLEM.variants["A"]) == {}
    assert mistake.wrong(PROBLEM.variants["C"])
