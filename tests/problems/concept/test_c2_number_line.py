"""c2-number-line: the picture's shares against torch's casts, the formats' limits against what
the sources print, and the grader against mistakes and bad input."""
import math
import random

import pytest
import sympy
import torch

from graders import problems
from graders.problems.concept import c2_number_line

PROBLEM = problems.get("c2-number-line")

# --- (a) primary sources -----------------------------------------------------------------------
# IEEE 754-2008 binary16: largest finite 65504, smallest normal 2^-14, smallest subnormal 2^-24
# (Micikevicius et al., Mixed Precision Training, ICLR 2018, print 65,504 in section 3.2 and 2^-24
# in section 3.1). bfloat16 keeps fp32's 8 exponent bits: smallest normal 2^-126, and with 7
# fraction bits the smallest subnormal 2^-133. Stored as printed, exact.
PRINTED_WINDOWS = {          # the window of exponents E for which 2^E is nonzero and finite
    "float16": (-24, 15),    # 2^-24 .. 2^15 (2^16 = 65536 > 65504)
    "bfloat16": (-133, 127),
}
TORCH = {"float16": torch.float16, "bfloat16": torch.bfloat16}


@pytest.mark.parametrize("dtype", sorted(PRINTED_WINDOWS))
def test_unscaled_window_matches_the_format(dtype):
    assert c2_number_line.exponent_window(0, dtype) == list(PRINTED_WINDOWS[dtype])
    # and torch agrees, power of two by power of two
    survivors = [E for E in range(-160, 140)
                 if 0 < torch.tensor([2.0 ** E], dtype=torch.float64).to(TORCH[dtype]).abs().item() < math.inf]
    assert [min(survivors), max(survivors)] == list(PRINTED_WINDOWS[dtype])


def test_paper_factor_8_slides_the_window_by_three_binades():
    # section 3.2: a scale of 8 was enough for SSD; values in [2^-27, 2^-24) were kept by it
    assert c2_number_line.exponent_window(3) == [-27, 12]


def _torch_shares(grads, k):
    scaled = torch.tensor(grads) * 2.0 ** k
    fp16 = scaled.to(torch.float16)
    plain16 = torch.tensor(grads).to(torch.float16)
    return {
        "lost_fp16": (plain16 == 0).double().mean().item(),
        "lost_bf16": (torch.tensor(grads).to(torch.bfloat16) == 0).double().mean().item(),
        "subnormal_fp16": ((plain16 != 0) & (plain16.abs() < 2.0 ** -14)).double().mean().item(),
        "lost_fp16_scaled": (fp16 == 0).double().mean().item(),
        "overflow_fp16_scaled": torch.isinf(fp16).double().mean().item(),
    }


@pytest.mark.parametrize("label", "ABCD")
def test_shares_match_torch(label):
    params = PROBLEM.variants[label]
    answers = PROBLEM.solve(params)
    for key, value in _torch_shares(params["grads"], params["log2_scale"]).items():
        assert answers[key] == pytest.approx(value, abs=1e-12), key


@pytest.mark.parametrize("label", "ABCD")
def test_min_scale_matches_a_torch_search(label):
    params = PROBLEM.variants[label]
    need = params["target_share"] * len(params["grads"])
    def saved(k):
        cast = (torch.tensor(params["grads"]) * 2.0 ** k).to(torch.float16)
        return ((cast != 0) & torch.isfinite(cast)).sum().item()
    expected = next(k for k in range(128) if saved(k) >= need - 1e-9)
    assert PROBLEM.solve(params)["min_log2_scale"] == expected


def test_random_histograms_match_torch():
    rng = random.Random(7)
    for _ in range(5):
        grads = [rng.choice((-1, 1)) * 2.0 ** rng.gauss(-22, 8) for _ in range(60)]
        grads = [g for g in grads if abs(g) < 6e4]
        k = rng.randrange(0, 30)
        answers = PROBLEM.solve({"grads": grads, "log2_scale": k, "target_share": 0.8})
        for key, value in _torch_shares(grads, k).items():
            assert answers[key] == pytest.approx(value, abs=1e-12), key


def test_round_to_nearest_at_the_floor():
    # between 2^-25 and 2^-24 a value rounds up and survives; at 2^-25 the tie goes to 0
    params = {"grads": [2.0 ** -25, 1.01 * 2.0 ** -25, 0.99 * 2.0 ** -24], "log2_scale": 0,
              "target_share": 1.0}
    answers = PROBLEM.solve(params)
    assert answers["lost_fp16"] == pytest.approx(1 / 3)
    assert answers["subnormal_fp16"] == pytest.approx(2 / 3)
    assert answers["min_log2_scale"] == 1


@pytest.mark.parametrize("label", "ABCD")
def test_the_picture_tells_the_variant_story(label):
    # every variant loses part of its histogram in fp16 and none of it in bf16
    answers = PROBLEM.solve(PROBLEM.variants[label])
    assert answers["lost_fp16"] > 0 and answers["lost_bf16"] == 0


def test_variant_c_scale_overflows_the_top():
    answers = PROBLEM.solve(PROBLEM.variants["C"])
    assert answers["overflow_fp16_scaled"] > 0 and answers["lost_fp16_scaled"] == 0


def test_solve_rejects_bad_parameters():
    base = PROBLEM.variants["A"]
    for change in ({"grads": []}, {"grads": [0.0]}, {"grads": [float("inf")]}, {"log2_scale": -1},
                   {"log2_scale": 1.5}, {"target_share": 0}, {"target_share": 1.5}):
        with pytest.raises(ValueError):
            PROBLEM.solve(dict(base, **change))
    with pytest.raises(ValueError):      # a share no scale can save: a histogram wider than fp16
        PROBLEM.solve({"grads": [1e-30, 1e3], "log2_scale": 0, "target_share": 1.0})


# --- (b) the grader --------------------------------------------------------------------------------

def test_problem_declares_the_interface():
    assert PROBLEM.strand == "concept" and PROBLEM.kind == "concept" and PROBLEM.assignment == "concept"


def test_variants_differ():
    answers = [PROBLEM.solve(q) for q in PROBLEM.variants.values()]
    for key in ("lost_fp16", "subnormal_fp16", "min_log2_scale", "exponent_window"):
        assert len({repr(a[key]) for a in answers}) == 4, key


@pytest.mark.parametrize("bad", [None, "0.5", float("nan"), {"x": 1}, sympy.Symbol("x"), [1.5, 2], True])
def test_bad_answers_score_zero_without_raising(bad):
    params = PROBLEM.variants["A"]
    result = PROBLEM.grade(params, {key: bad for key in PROBLEM.checks})
    assert result.score == 0
    assert len(result.feedback) == len(PROBLEM.checks)


def test_missing_answers_score_zero():
    result = PROBLEM.grade(PROBLEM.variants["B"], {})
    assert result.score == 0 and all("missing" in line for line in result.feedback)


def test_the_four_format_number_line_matches_torch_finfo_and_the_fp8_paper():
    """c2's side-by-side number line draws fp16, bf16, E5M2 and E4M3 where torch.finfo and the
    sources put them: E5M2 57344, 2^-14, 2^-16 and E4M3 448, 2^-6, 2^-9 (Micikevicius et al. 2022,
    Table 1); fp16 65504, 2^-14, 2^-24 (IEEE 754-2008); bf16 2^-126 and 2^-133."""
    import math

    import matplotlib
    matplotlib.use("Agg")
    import nbformat
    from matplotlib import pyplot as plt

    from graders.problems.common.formats import format_limits
    from tests.conftest import REPO
    nb = nbformat.read(REPO / "source" / "concept" / "c2-number-line.ipynb", as_version=4)
    cell = next(c.source for c in nb.cells if c.cell_type == "code" and "FORMAT_WINDOWS = {}" in c.source)
    namespace = {}
    exec(compile(cell, "c2-formats", "exec"), namespace)  # noqa: S102 - our own notebook
    plt.close("all")
    printed = {"fp16": (65504.0, -14, -24), "bf16": (None, -126, -133),
               "E5M2 (float8_e5m2)": (57344.0, -14, -16), "E4M3 (float8_e4m3fn)": (448.0, -6, -9)}
    dtypes = {"fp16": "float16", "bf16": "bfloat16", "E5M2 (float8_e5m2)": "float8_e5m2",
              "E4M3 (float8_e4m3fn)": "float8_e4m3fn"}
    windows = namespace["FORMAT_WINDOWS"]
    assert list(windows) == list(printed)
    for name, (largest, normal_exp, subnormal_exp) in printed.items():
        floor, tiny, top = windows[name]
        assert (floor, tiny) == (subnormal_exp, normal_exp)
        if largest is not None:
            assert top == math.log2(largest)
        ours = format_limits(dtypes[name])
        assert (math.log2(ours[2]), math.log2(ours[1]), math.log2(ours[0])) == (floor, tiny, top)
    # the drawn bars are those windows, row by row: subnormal band then normal band
    ax = namespace["format_figure"].axes[0]
    bars = [patch for collection in ax.collections for patch in collection.get_paths()]
    assert len(ax.collections) == 2 * len(windows)
    for row, (floor, tiny, top) in enumerate(windows.values()):
        sub, normal = ax.collections[2 * row], ax.collections[2 * row + 1]
        sub_x = sub.get_paths()[0].vertices[:, 0]
        normal_x = normal.get_paths()[0].vertices[:, 0]
        assert (min(sub_x), max(sub_x)) == pytest.approx((floor, tiny))
        assert (min(normal_x), max(normal_x)) == pytest.approx((tiny, top))
    assert bars


# --- what E4M3's third fraction bit costs -------------------------------------------------------
# Micikevicius et al. 2022, Table 1: E4M3 spans 2^-9 to 448, about 18 binades; E5M2 spans 2^-16 to
# 57344, about 32 (b09, t1 and w3 say so). E4M3's third fraction bit costs it about 14 binades of
# range, not one. Every place in the course that counts the binades E4M3 gives up says that.
NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "ten": 10,
                "fourteen": 14}


def _range_given_up(text: str) -> list[int]:
    import re
    prose = " ".join(re.sub(r"^\s*#\s?", "", line) for line in text.splitlines())
    return [int(n) if n.isdigit() else NUMBER_WORDS[n.lower()]
            for n in re.findall(r"(\w+) binades? of range", prose)]


def test_the_range_e4m3_gives_up_is_about_fourteen_binades():
    from graders.problems.common.formats import format_limits
    from tests.conftest import REPO
    span = {}
    for dtype in ("float8_e4m3fn", "float8_e5m2"):
        largest, _, smallest = format_limits(dtype)
        span[dtype] = math.log2(largest / smallest)
    given_up = span["float8_e5m2"] - span["float8_e4m3fn"]
    assert (round(span["float8_e4m3fn"]), round(span["float8_e5m2"]), given_up) == (18, 32, 14)
    places = [*REPO.glob("source/*/*.pct.py"), *REPO.glob("graders/problems/*/*.py"),
              *REPO.glob("graders/problems/*/*.cards.toml"), REPO / "chapters.toml", REPO / "README.md"]
    claims = {path.relative_to(REPO).as_posix(): _range_given_up(path.read_text()) for path in places}
    claims = {place: counts for place, counts in claims.items() if counts}
    assert "source/concept/c2-number-line.pct.py" in claims
    assert all(abs(n - given_up) <= 1 for counts in claims.values() for n in counts), claims
    assert _range_given_up("# E4M3 trades a\n# binade of range") == [1]
