"""The precision items' shared format table (graders/problems/common/formats.py) and every FP8 figure
the notebooks print, against torch.finfo and Micikevicius et al. 2022, Table 1."""
import math
import re

import pytest
import torch

from graders.problems.common.formats import EIGHT_BIT, FORMATS, cast, format_limits
from tests.conftest import REPO

# "FP8 Formats for Deep Learning" (arXiv 2209.05433), Table 1, as printed:
# E4M3: max normal 448, min normal 2^-6, min subnormal 2^-9; E5M2: 57,344, 2^-14, 2^-16.
PRINTED = {"float8_e4m3fn": (448.0, -6, -9), "float8_e5m2": (57344.0, -14, -16)}
ROW_NAME = {"float8_e4m3fn": "E4M3", "float8_e5m2": "E5M2"}
PRECISION_NOTEBOOKS = ("worked/w3-range", "theory/t1-range-before-speed", "concept/c2-number-line",
                       "basics/b09-mixed-precision")


@pytest.mark.parametrize("dtype", sorted(FORMATS))
def test_each_format_matches_torch_finfo(dtype):
    info = torch.finfo(getattr(torch, dtype))
    largest, min_normal, min_subnormal = format_limits(dtype)
    assert (largest, min_normal, min_subnormal) == (info.max, info.smallest_normal, info.tiny * info.eps)


@pytest.mark.parametrize("dtype", EIGHT_BIT)
def test_cast_is_torchs_near_every_fp8_edge(dtype):
    info = torch.finfo(getattr(torch, dtype))
    sub = info.tiny * info.eps
    values = []
    for base in (sub / 2, sub, 1.5 * sub, 2.5 * sub, info.tiny, 1.0, info.max, 1.06 * info.max, 1.07 * info.max,
                 1.2 * info.max, 1e30):
        for f in (1 - 2 ** -20, 1.0, 1 + 2 ** -20, 1 - 2 ** -4, 1 + 2 ** -4):
            values += [base * f, -base * f]
    expected = torch.tensor(values).to(getattr(torch, dtype)).float().tolist()
    assert [cast(v, dtype) for v in values] == expected


@pytest.mark.parametrize("dtype", sorted(FORMATS))
def test_cast_is_torchs_bit_for_bit_from_zero_past_float32(dtype):
    """Every value torch.tensor([x]).to(dtype) holds, its sign included (a negative value that
    rounds to zero is -0.0), and values past float32's range, which torch.tensor makes infinite."""
    import random
    rng = random.Random(8)
    values = [0.0, -0.0, math.inf, -math.inf, 3.4028235e38, 3.40282357e38, 1e39, -1e39, 1e300, -1e-300]
    values += [rng.choice((-1, 1)) * rng.random() * 2.0 ** rng.uniform(-160, 130) for _ in range(20_000)]
    expected = torch.tensor(values).to(getattr(torch, dtype)).double().tolist()
    got = [cast(v, dtype) for v in values]
    assert [(g, math.copysign(1, g)) for g in got] == [(e, math.copysign(1, e)) for e in expected]


@pytest.mark.parametrize("notebook", PRECISION_NOTEBOOKS)
def test_every_fp8_row_a_precision_notebook_prints_is_the_papers(notebook):
    """Each markdown table row naming E4M3 or E5M2 shows that format's printed limits, and no other's."""
    text = (REPO / "source" / f"{notebook}.pct.py").read_text()
    rows = [line for line in text.splitlines() if line.startswith("# |") and re.search(r"E4M3|E5M2", line)]
    assert rows, f"{notebook} teaches no FP8 format"
    for dtype, (largest, normal, subnormal) in PRINTED.items():
        mine = [row for row in rows if ROW_NAME[dtype] in row]
        assert mine, (notebook, dtype)
        for row in mine:
            assert f"{largest:g}" in row.replace(",", "")
            assert f"2^{{{normal}}}" in row and f"2^{{{subnormal}}}" in row
            other = PRINTED[EIGHT_BIT[1 - EIGHT_BIT.index(dtype)]]
            assert f"{other[0]:g}" not in row.replace(",", "")
    # and the paper's numbers are torch's
    for dtype, (largest, normal, subnormal) in PRINTED.items():
        info = torch.finfo(getattr(torch, dtype))
        assert info.max == largest and math.log2(info.smallest_normal) == normal
        assert math.log2(info.tiny * info.eps) == subnormal


# --- saturation is torch's, not the format's --------------------------------------------------
# E4M3 has no infinity, and its one NaN per sign is S.1111.111. What a cast past 448 gives is the
# converting software's choice: torch 2.13 saturates to +-448, other stacks may give NaN. Every
# place in the course that says an FP8 cast saturates names torch and says that others may give NaN.
def _prose(text: str) -> str:
    return " ".join(re.sub(r"^\s*#\s?", "", line) for line in text.splitlines())


def saturation_claims_without_their_owner(text: str) -> list[str]:
    """The passages of `text` saying an FP8 cast saturates without naming torch and the NaN of others."""
    prose, found = _prose(text), []
    for match in re.finditer(r"saturat", prose, re.IGNORECASE):
        around = prose[max(0, match.start() - 150):match.start() + 250]
        if not re.search(r"e4m3|fp8|float8|448", around, re.IGNORECASE):
            continue          # another saturation (a critical batch size's, say)
        if "torch" not in around or not re.search(r"other (?:stacks|software)[^.]{0,120}NaN", around):
            found.append(around)
    return found


def test_every_fp8_saturation_is_said_to_be_torchs():
    places = [*REPO.glob("source/*/*.pct.py"), *REPO.glob("graders/**/*.py"),
              *REPO.glob("graders/problems/*/*.cards.toml"), REPO / "chapters.toml", REPO / "README.md"]
    found = {path.relative_to(REPO).as_posix(): claims for path in places
             if (claims := saturation_claims_without_their_owner(path.read_text()))}
    assert not found, found
    assert saturation_claims_without_their_owner("# its top is 448 and a cast past it saturates")
    assert not saturation_claims_without_their_owner("the batch's benefit saturates")
    assert torch.tensor([1e6]).to(torch.float8_e4m3fn).item() == 448.0       # torch 2.13's choice
