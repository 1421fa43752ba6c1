"""w4-activations: the reference against Korthikanti et al.'s printed figures, and its grading.

Source: Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
Models" (MLSys 2023, arXiv:2205.05198):
- Table 2: activation bytes per layer: no parallelism sbh(34 + 5as/h); tensor parallel +
  selective recomputation sbh(10 + 24/t) (t = 1 here); full recomputation sbh(2).
- Section 5: GPT-3 (a=96, s=2048, h=12288): 5as/h = 80; MT-NLG (a=128, s=2048, h=20480):
  5as/h = 64; selective recomputation saves "70% and 65%" of activation memory at "2.7% and
  1.6% FLOPs overhead".
- Table 3 (shapes) and Table 5 (MFU and HFU, in %): 22B 41.5/43.7, 175B 51.4/52.8,
  530B 56.0/57.0, 1T 56.3/57.0; s = 2048 throughout.
- Section 6.2: full recomputation's "expected 33%" overhead.
- Appendix A: eq. (7) and eq. (8) as printed, and the words "an additional forward pass
  attention matrix computation (2Bs^2h operations) and attention over values (2Bs^2h)".
- Appendix B: for the 530B model (p = 35 pipeline stages) "sbhp = 2.73 GB" at 2 bytes a value.
"""
import ast
from fractions import Fraction
from pathlib import Path

import pytest
import sympy

from graders import problems
from graders.problems.worked import w4_activations as module
from tests.problems.worked.mistakes import assert_loses_points_where_made

P = problems.get("w4-activations")
ROOT = Path(__file__).resolve().parents[3]
s, b, h, a = sympy.symbols("s b h a", positive=True)

GPT3 = {"s": 2048, "b": 1, "h": 12288, "a": 96, "L": 96}
MTNLG = {"s": 2048, "b": 1, "h": 20480, "a": 128, "L": 105}
TABLE3 = {"22B": (64, 6144, 48), "175B": (96, 12288, 96), "530B": (128, 20480, 105), "1T": (160, 25600, 128)}
TABLE5 = {"22B": ("41.5", "43.7"), "175B": ("51.4", "52.8"), "530B": ("56.0", "57.0"), "1T": ("56.3", "57.0")}


def solve(shape, strategy):
    return P.solve({**shape, "strategy": strategy})


def rounds_to(value: float, printed: str) -> bool:
    mantissa, _, exponent = printed.upper().partition("E")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    unit = 10.0 ** (int(exponent or 0) - decimals)
    return abs(value - float(printed)) <= 0.5 * unit * (1 + 1e-9)


def same(x, y) -> bool:
    return sympy.simplify(sympy.expand(x - y)) == 0


# --- (a) the printed figures -------------------------------------------------------------

@pytest.mark.parametrize("strategy, printed", [
    ("none", s * b * h * (34 + 5 * a * s / h)),
    ("selective", s * b * h * (10 + 24)),      # Table 2: sbh(10 + 24/t), here t = 1
    ("full", s * b * h * 2),
])
def test_table2_per_layer_expressions(strategy, printed):
    got = solve(GPT3, strategy)["per_layer_expr"]
    assert same(got, printed)
    # and the number is the expression at the shape
    at = {s: GPT3["s"], b: GPT3["b"], h: GPT3["h"], a: GPT3["a"]}
    assert solve(GPT3, strategy)["per_layer_bytes"] == int(printed.subs(at))


@pytest.mark.parametrize("shape, printed", [(GPT3, "80"), (MTNLG, "64")])
def test_section5_attention_term(shape, printed):
    sbh = shape["s"] * shape["b"] * shape["h"]
    term = solve(shape, "none")["per_layer_bytes"] / sbh - 34
    assert rounds_to(term, printed)


@pytest.mark.parametrize("shape, printed", [(GPT3, "0.70"), (MTNLG, "0.65")])
def test_section5_memory_saved_by_selective(shape, printed):
    saved = 1 - solve(shape, "selective")["total_bytes"] / solve(shape, "none")["total_bytes"]
    assert rounds_to(saved, printed), saved


@pytest.mark.parametrize("shape, printed", [(GPT3, "0.027"), (MTNLG, "0.016")])
def test_section5_flops_overhead_of_selective(shape, printed):
    assert rounds_to(solve(shape, "selective")["recompute_flops_ratio"] - 1, printed)


@pytest.mark.parametrize("model", list(TABLE5))
def test_table5_hfu_over_mfu_is_the_selective_ratio(model):
    heads, width, layers = TABLE3[model]
    ratio = solve({"s": 2048, "b": 1, "h": width, "a": heads, "L": layers}, "selective")["recompute_flops_ratio"]
    mfu, hfu = (float(x) for x in TABLE5[model])
    # each percentage is printed to 0.1, so the true ratio lies in this interval
    low, high = (hfu - 0.05) / (mfu + 0.05), (hfu + 0.05) / (mfu - 0.05)
    assert low <= ratio <= high, (model, ratio, low, high)


def test_table5_rules_out_the_corrected_count_for_the_22b_model():
    # why the graded definition follows eq. (8) as printed: the paper's own HFU used it
    x = Fraction(2048, 6144)
    corrected = float((1 + module.ERRATUM_HW_S_TERM * x) / (1 + module.MODEL_S_TERM * x))
    assert not (43.65 / 41.55 <= corrected <= 43.75 / 41.45)


def test_section6_full_recomputation_expected_overhead():
    assert rounds_to(solve(GPT3, "full")["recompute_flops_ratio"] - 1, "0.33")


def test_appendix_a_equations():
    B_, L_, v = sympy.symbols("B L v", positive=True)
    forward = 24 * B_ * s * h**2 + 4 * B_ * s**2 * h          # per layer, as the appendix sums it
    eq7 = 72 * B_ * L_ * s * h**2 * (1 + s / (6 * h) + v / (12 * h * L_))
    eq8 = 72 * B_ * L_ * s * h**2 * (1 + s / (3 * h) + v / (12 * h * L_))
    assert same(3 * L_ * forward + 6 * B_ * s * h * v, eq7)
    x = s / h
    mine = (1 + module.SELECTIVE_HW_S_TERM * x) / (1 + module.MODEL_S_TERM * x)
    assert same(mine, (eq8 / eq7).subs(v, 0))
    # the appendix's words (one more forward of 2Bs^2h + 2Bs^2h per layer) give the erratum's 2/9
    words = eq7.subs(v, 0) + L_ * (2 * B_ * s**2 * h + 2 * B_ * s**2 * h)
    assert same(words, 72 * B_ * L_ * s * h**2 * (1 + module.ERRATUM_HW_S_TERM * x))


def test_appendix_b_sbhp_is_gib():
    # 530B: one layer input is 2sbh bytes (full recomputation keeps exactly that); p = 35 of them
    got = solve(MTNLG, "full")["per_layer_bytes"] * 35 / 2**30
    assert rounds_to(got, "2.73")


def test_chen_2016_one_extra_forward():
    assert solve(MTNLG, "full")["recompute_flops_ratio"] == pytest.approx((2 + 4 + 2) / (2 + 4), rel=1e-15)
    assert solve(MTNLG, "none")["recompute_flops_ratio"] == 1


# --- solve accepts any valid parameters ------------------------------------------------

def test_solve_accepts_floats_and_any_shape():
    ints = P.solve({"s": 4096, "b": 2, "h": 8192, "a": 64, "L": 80, "strategy": "none"})
    floats = P.solve({"s": 4096.0, "b": 2.0, "h": 8192.0, "a": 64.0, "L": 80.0, "strategy": "none"})
    for key in ("per_layer_bytes", "total_bytes", "recompute_flops_ratio"):
        assert float(ints[key]) == pytest.approx(float(floats[key]), rel=1e-12)


@pytest.mark.parametrize("bad", [{"strategy": "partial"}, {"s": 0}, {"h": float("nan")}, {"a": "96"}])
def test_solve_rejects_meaningless_parameters(bad):
    with pytest.raises(ValueError):
        P.solve({**GPT3, "strategy": "none", **bad})


# --- (b) grading ------------------------------------------------------------------------

def test_four_variants_with_different_answers():
    assert sorted(P.variants) == ["A", "B", "C", "D"]
    solved = [P.solve(v) for v in P.variants.values()]
    for key in ("per_layer_bytes", "total_bytes"):
        assert len({sol[key] for sol in solved}) == 4, key
    assert {v["strategy"] for v in P.variants.values()} == {"none", "selective", "full"}


def test_chapter_letters_are_read_too():
    B_, d = sympy.symbols("B d")
    v = P.variants["A"]   # strategy none
    answer = 34 * s * B_ * d + 5 * a * s**2 * B_
    assert P.grade(v, {"per_layer_expr": answer}, keys=["per_layer_expr"]).full_marks
    # but an expression right at one point only is rejected
    assert P.grade(v, {"per_layer_expr": 34 * s * b * h + 5 * a * s * 2048 * b},
                   keys=["per_layer_expr"]).score == 0


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
        for key in wrong:
            if isinstance(right[key], (int, float)):
                assert f"{right[key]:.4g}" not in " ".join(result.feedback)
    assert shown, f"{mistake.name} gives the right answers in every variant"


@pytest.mark.parametrize("bad", [
    {},
    {"per_layer_bytes": "7e9", "total_bytes": None, "recompute_flops_ratio": True},
    {"per_layer_bytes": float("nan"), "total_bytes": [1, 2], "recompute_flops_ratio": {"str": "1"}},
])
def test_bad_numbers_score_zero_without_raising(bad):
    keys = ["per_layer_bytes", "total_bytes", "recompute_flops_ratio"]
    result = P.grade(P.variants["D"], bad, keys=keys)
    assert result.score == 0 and len(result.feedback) == 3


@pytest.mark.parametrize("bad", [
    "34*s*b*h",
    {"sympy": "Mul(Integer(34), Symbol('s'), Symbol('b'), Symbol('x'))"},
    {"sympy": "eval('1')"},
    {"sympy": "Pow(Integer(10), Pow(Integer(10), Integer(100)))"},
    sympy.Float(1.5),
])
def test_bad_expressions_score_zero_without_raising(bad):
    result = P.grade(P.variants["B"], {"per_layer_expr": bad}, keys=["per_layer_expr"])
    assert result.score == 0, result.feedback


# --- the notebook agrees with the problem --------------------------------------------------

def test_notebook_variants_and_cells_match_the_problem():
    text = (ROOT / "source" / "worked" / "w4-activations.pct.py").read_text()
    tree = ast.parse(text)
    literal = next(node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                   and any(getattr(t, "id", None) == "VARIANTS" for t in node.targets))
    assert ast.literal_eval(literal) == P.variants
    for grade_id, keys in P.cells.items():
        assert f'"grade_id": "{grade_id}", "locked": true, "points": {P.points(keys):g},' in text
        assert f'judge("w4-activations", "{grade_id}", globals())' in text


# --- the erratum's corrected eq. (8) is accepted too ----------------------------------------

@pytest.mark.parametrize("label", [k for k, v in P.variants.items() if v["strategy"] == "selective"])
def test_erratum_form_earns_full_marks_and_says_so(label):
    """2s/(9h) in place of s/(3h) (NVIDIA/Megatron-LM #523) scores in full, and the line names the erratum."""
    q = P.variants[label]
    x = Fraction(q["s"], q["h"])
    corrected = float((1 + Fraction(2, 9) * x) / (1 + Fraction(1, 6) * x))
    assert corrected != pytest.approx(P.solve(q)["recompute_flops_ratio"], rel=1e-3)
    result = P.grade(q, {"recompute_flops_ratio": corrected}, keys=["recompute_flops_ratio"])
    assert result.full_marks
    (text,) = result.feedback
    assert text.startswith("✓ recompute_flops_ratio: correct")
    assert "erratum's corrected form" in text and "Megatron-LM issue #523" in text


@pytest.mark.parametrize("label", [k for k, v in P.variants.items() if v["strategy"] == "selective"])
def test_printed_form_is_the_reference_and_plainly_correct(label):
    """The printed eq. (8) stays the reference: it earns full marks with the plain 'correct' line."""
    q = P.variants[label]
    x = Fraction(q["s"], q["h"])
    printed = float((1 + Fraction(1, 3) * x) / (1 + Fraction(1, 6) * x))
    assert P.solve(q)["recompute_flops_ratio"] == pytest.approx(printed, rel=1e-15)
    result = P.grade(q, {"recompute_flops_ratio": printed}, keys=["recompute_flops_ratio"])
    assert result.full_marks and result.feedback == ["✓ recompute_flops_ratio: correct"]


def test_erratum_form_is_not_accepted_for_other_strategies():
    """Outside "selective" the corrected term does not apply: that value still fails."""
    q = P.variants["C"]                                   # full recomputation
    x = Fraction(q["s"], q["h"])
    corrected = float((1 + Fraction(2, 9) * x) / (1 + Fraction(1, 6) * x))
    result = P.grade(q, {"recompute_flops_ratio": corrected}, keys=["recompute_flops_ratio"])
    assert result.score == 0 and "erratum" not in result.feedback[0]


def test_erratum_accepted_in_a_full_grade_with_other_keys():
    """Accepting the erratum changes only its own line and adds only its own points."""
    q = P.variants["B"]
    answers = dict(P.solve(q), recompute_flops_ratio=module.erratum_ratio(q), per_layer_bytes=1.0)
    result = P.grade(q, answers)
    assert result.score == result.max_score - P.checks["per_layer_bytes"].points
    assert sum("erratum" in line for line in result.feedback) == 1


# --- the feedback of "backward-equals-forward" --------------------------------------------
# The backward pass costs two forwards (Narayanan et al. 2021, eqs. 3 and 4), so one recomputed
# forward adds a third to a training step: solve's 8/6. The mistake prices the backward like the
# forward and answers 1.5. Its feedback may name the share that answer implies (a half), and no
# other: not a wrong share, and not the reference's, which would hand the "full" variant its answer.
SHARE_WORDS = {"half": Fraction(1, 2), "third": Fraction(1, 3), "quarter": Fraction(1, 4),
               "fifth": Fraction(1, 5), "sixth": Fraction(1, 6), "eighth": Fraction(1, 8)}


def shares_named(text: str) -> set:
    """Every share of a step a text names: in words, as a fraction a/b, or as a percentage."""
    import re
    text = text.lower()
    named = {share for word, share in SHARE_WORDS.items() if re.search(rf"\b{word}s?\b", text)}
    named |= {Fraction(int(n), int(d)) for n, d in re.findall(r"(?<![\w.])(\d+)\s*/\s*(\d+)(?![\w.])", text)}
    named |= {Fraction(p) / 100 for p in re.findall(r"(\d+(?:\.\d+)?)\s*%", text)}
    return named


def test_backward_equals_forward_names_no_share_but_the_students_own():
    mistake = next(m for m in P.mistakes if m.name == "backward-equals-forward")
    full = next(v for v in P.variants.values() if v["strategy"] == "full")
    own = Fraction(mistake.wrong(full)["recompute_flops_ratio"]).limit_denominator(100) - 1
    reference = Fraction(P.solve(full)["recompute_flops_ratio"]).limit_denominator(100) - 1
    assert (own, reference) == (Fraction(1, 2), Fraction(1, 3))
    assert shares_named(mistake.feedback) <= {own}, mistake.feedback
    assert shares_named("adds a quarter, not a half; 4/3; 33%") == {Fraction(1, 4), Fraction(1, 2),
                                                                    Fraction(4, 3), Fraction(33, 100)}


# --- what the cards may say ----------------------------------------------------------------------
# The erratum card printed eq. (8)'s s-term and its correction, the numerator of the graded
# recompute_flops_ratio for the selective variants; a card names the erratum, not the terms.
def test_no_card_states_a_term_of_the_graded_ratio():
    from graders.course.cards import item_cards
    for card in item_cards("w4-activations"):
        text = f"{card.front} {card.back}".replace(" ", "")
        for term in ("s/(3h)", "2s/(9h)", "s/(6h)", "8/6", "4/3"):
            assert term not in text, (term, card.back)


@pytest.mark.parametrize("label", "ABCD")
@pytest.mark.parametrize("mistake", P.mistakes, ids=lambda m: m.name)
def test_a_mistake_that_can_be_made_loses_points_in_every_variant(mistake, label):
    assert_loses_points_where_made(P, mistake, label)
