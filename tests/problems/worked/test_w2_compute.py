"""w2-compute: the reference against the primary sources' printed figures, and its grading.

Sources and what they print:
- Brown et al. 2020 (GPT-3), Appendix D, Table D.1: per model, total train compute in
  PF-days and in FLOPs, from the parameter count (millions) and 300 billion tokens.
- Narayanan et al. 2021 (Megatron-LM, SC21), section 5.1 after eq. (4): GPT-3 175B on
  300B tokens, 1024 A100s at 140 TFLOP/s per GPU: "34 days"; the 1T model (Table 1:
  1008 billion parameters) on 450B tokens, 3072 A100s at 163 TFLOP/s: "84 days".
- Kaplan et al. 2020, section 2.1: 1 PF-day = 1e15 x 24 x 3600 = 8.64e19 FLOPs.
"""
import ast
import math
import re
from pathlib import Path

import pytest
import sympy

from graders import problems
from tests.problems.worked.mistakes import assert_loses_points_where_made

P = problems.get("w2-compute")
ROOT = Path(__file__).resolve().parents[3]
A100_PEAK = 312e12   # dense 16-bit tensor-core peak of one A100


def rounds_to(value: float, printed: str) -> bool:
    """True when `value` prints as `printed` ("3.14E+23", "34"): within half a unit of its last digit."""
    mantissa, _, exponent = printed.upper().partition("E")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    unit = 10.0 ** (int(exponent or 0) - decimals)
    return abs(value - float(printed)) <= 0.5 * unit * (1 + 1e-9)


def params(N, D, n_gpus=1, peak_flops=1e15, utilization=1.0, recompute=False):
    return {"N": N, "D": D, "n_gpus": n_gpus, "peak_flops": peak_flops,
            "utilization": utilization, "recompute": recompute}


# --- (a) the primary sources' printed numbers -------------------------------------------

# Table D.1, GPT-3 rows: params (millions), printed PF-days, printed FLOPs; 300B tokens each.
TABLE_D1 = [
    ("Small", 125, "2.60E+00", "2.25E+20"),
    ("Medium", 356, "7.42E+00", "6.41E+20"),
    ("Large", 760, "1.58E+01", "1.37E+21"),
    ("XL", 1320, "2.75E+01", "2.38E+21"),
    ("2.7B", 2650, "5.52E+01", "4.77E+21"),
    ("6.7B", 6660, "1.39E+02", "1.20E+22"),
    ("13B", 12850, "2.68E+02", "2.31E+22"),
    ("175B", 174600, "3.64E+03", "3.14E+23"),
]


@pytest.mark.parametrize("name, millions, pf_days, flops", TABLE_D1)
def test_gpt3_table_d1(name, millions, pf_days, flops):
    got = P.solve(params(millions * 10**6, 300 * 10**9))
    assert rounds_to(got["train_flops"], flops), (name, got["train_flops"], flops)
    assert rounds_to(got["pf_days"], pf_days), (name, got["pf_days"], pf_days)


@pytest.mark.parametrize("N, D, gpus, per_gpu, printed_days", [
    (175e9, 300e9, 1024, 140e12, "34"),      # GPT-3 175B
    (1008e9, 450e9, 3072, 163e12, "84"),     # the 1T model (Table 1: 1008B parameters)
])
def test_narayanan_eq4_examples(N, D, gpus, per_gpu, printed_days):
    got = P.solve(params(N, D, gpus, A100_PEAK, per_gpu / A100_PEAK, recompute=True))
    assert rounds_to(got["days"], printed_days), got["days"]


def test_narayanan_eq4_is_eight_flops_per_parameter_token():
    # eq. (4): time = 8TP/(nX); with n = X = 1 and one second per FLOP the time is 8TP seconds
    got = P.solve(params(175e9, 300e9, 1, 1.0, 1.0, recompute=True))
    assert got["days"] * 86_400 == pytest.approx(8 * 175e9 * 300e9, rel=1e-12)


def test_kaplan_pf_day_is_8_64e19_flops():
    # 6 x 1.2e9 x 1.2e10 = 8.64e19 FLOPs, one PF-day by Kaplan et al.'s definition
    assert P.solve(params(1.2e9, 1.2e10))["pf_days"] == pytest.approx(1.0, rel=1e-12)
    # and a petaFLOP/s machine needs one day for it
    assert P.solve(params(1.2e9, 1.2e10, 1, 1e15, 1.0))["days"] == pytest.approx(1.0, rel=1e-12)


def test_gpt3_175b_kaplan_count_rounded_n():
    # With N rounded to 175 billion, 6ND gives 3.15e23 (the figure often quoted beside Table D.1's 3.14e23)
    assert rounds_to(P.solve(params(175e9, 300e9))["train_flops"], "3.15E+23")


# --- solve accepts any valid parameters ------------------------------------------------

def test_solve_accepts_other_kinds_of_values():
    ints = P.solve(params(10**9, 10**10, 8, 10**14, 0.5, recompute=0))
    floats = P.solve(params(1e9, 1e10, 8.0, 1e14, 0.5, recompute=False))
    for key in ("train_flops", "days", "pf_days"):
        assert float(ints[key]) == pytest.approx(float(floats[key]), rel=1e-12)
    assert P.solve(params(1e9, 1e10, recompute="true"))["flops_expr"] == \
        P.solve(params(1e9, 1e10, recompute=True))["flops_expr"]


@pytest.mark.parametrize("bad", [{"N": -1}, {"D": 0}, {"n_gpus": float("nan")}, {"utilization": "high"}])
def test_solve_rejects_meaningless_parameters(bad):
    with pytest.raises(ValueError):
        P.solve({**params(1e9, 1e10), **bad})


# --- (b) grading ------------------------------------------------------------------------

def test_four_variants_with_different_answers():
    assert sorted(P.variants) == ["A", "B", "C", "D"]
    solved = [P.solve(v) for v in P.variants.values()]
    for key in ("train_flops", "days", "pf_days"):
        values = [s[key] for s in solved]
        assert len({round(math.log10(v), 6) for v in values}) == 4, key
    assert {str(s["flops_expr"]) for s in solved} == {"6*D*N", "8*D*N"}


def test_equal_expressions_in_other_forms_pass():
    N, D = sympy.symbols("N D")
    v = P.variants["A"]   # no recomputation: 6ND
    result = P.grade(v, {"flops_expr": 2 * N * D + 4 * D * N}, keys=["flops_expr"])
    assert result.full_marks, result.feedback


@pytest.mark.parametrize("mistake", P.mistakes, ids=lambda m: m.name)
def test_each_mistake_loses_points_with_its_feedback(mistake):
    shown = False
    for label, v in P.variants.items():
        right = P.solve(v)
        wrong = mistake.wrong(v)
        answers = {**right, **wrong}
        if all(P.checks[k].judge(right[k], answers[k]).passed for k in wrong):
            continue
        shown = True
        result = P.grade(v, answers)
        assert result.score < result.max_score, (mistake.name, label)
        assert any(mistake.feedback in line for line in result.feedback), (mistake.name, label)
        # the feedback never shows the reference value
        for key in wrong:
            if isinstance(right[key], float):
                assert f"{right[key]:.3g}" not in " ".join(result.feedback)
    assert shown, f"{mistake.name} gives the right answers in every variant"


@pytest.mark.parametrize("bad", [
    {},                                                          # everything missing
    {"train_flops": {"str": "1e23"}, "days": "10", "pf_days": None},
    {"train_flops": float("nan"), "days": float("inf"), "pf_days": True},
    {"train_flops": [1e23], "days": {"object": "Tensor"}, "pf_days": {"float": "nan"}},
])
def test_bad_numbers_score_zero_without_raising(bad):
    v = P.variants["B"]
    result = P.grade(v, bad, keys=["train_flops", "days", "pf_days"])
    assert result.score == 0
    assert len(result.feedback) == 3 and all(line.startswith("✗") for line in result.feedback)


@pytest.mark.parametrize("bad", [
    "6*N*D",                                     # a string, not an expression
    {"sympy": "Mul(Integer(6), Symbol('N'), Symbol('T'))"},     # T is not N or D
    {"sympy": "__import__('os').system('true')"},               # never evaluated
    sympy.Integer(6),                             # a number, not an expression in N and D
])
def test_bad_expressions_score_zero_without_raising(bad):
    result = P.grade(P.variants["C"], {"flops_expr": bad}, keys=["flops_expr"])
    assert result.score == 0, result.feedback


def test_grade_accepts_a_non_dict():
    assert P.grade(P.variants["A"], None).score == 0


# --- the notebook agrees with the problem --------------------------------------------------

def test_notebook_variants_and_cells_match_the_problem():
    text = (ROOT / "source" / "worked" / "w2-compute.pct.py").read_text()
    tree = ast.parse(text)
    literal = next(node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                   and any(getattr(t, "id", None) == "VARIANTS" for t in node.targets))
    assert ast.literal_eval(literal) == P.variants
    for grade_id, keys in P.cells.items():
        assert f'"grade_id": "{grade_id}", "locked": true, "points": {P.points(keys):g},' in text
        assert f'judge("w2-compute", "{grade_id}", globals())' in text


# --- the devices the variants run on -------------------------------------------------------

from graders import hardware


@pytest.mark.parametrize("label", "ABCD")
def test_variant_peak_is_its_devices_dense_datasheet_peak(label):
    """peak_flops is the dense 16-bit peak of the variant's device (half a starred sparse figure)."""
    device = P.DEVICES[label]
    assert device in hardware.ACCELERATORS.values()
    assert P.variants[label]["peak_flops"] == device.dense_bf16


def test_variants_include_current_accelerators():
    """At least two variants run on 2024-2026 parts (H200, B200 or MI300X class)."""
    current = {hardware.H200, hardware.B200, hardware.MI300X}
    assert len([d for d in P.DEVICES.values() if d in current]) >= 2


# --- what the cards may say ----------------------------------------------------------------------
# The recomputation card gave the per-token FLOP count with recomputation ("8 rather than 6 FLOPs
# per parameter per token"), the coefficient of flops_expr in the recomputing variants.
def test_no_card_states_the_flops_per_parameter_per_token():
    from graders.course.cards import item_cards
    for card in item_cards("w2-compute"):
        text = f"{card.front} {card.back}"
        assert not re.search(r"\b[2468]\s*(rather than \d+\s*)?FLOPs? per parameter", text), card.back
        assert not re.search(r"\b[68]\s*[·*×]?\s*N\s*[·*×]?\s*D\b", text), card.back


@pytest.mark.parametrize("label", "ABCD")
@pytest.mark.parametrize("mistake", P.mistakes, ids=lambda m: m.name)
def test_a_mistake_that_can_be_made_loses_points_in_every_variant(mistake, label):
    assert_loses_points_where_made(P, mistake, label)
