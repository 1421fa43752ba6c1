"""One definition of a checkpoint for the chapter: b10, e06 and p6 state it in the same words and count by it."""
import pathlib
import re

import pytest
import sympy

from graders import definitions, problems

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = ["source/basics/b10-checkpoint.pct.py", "source/exercises/e06-checkpointing.pct.py",
             "source/practice/p6-resume-bit-for-bit.pct.py"]


def markdown_text(path):
    """The notebook's markdown cells as one string, comment marks and line breaks removed."""
    text, cells = (ROOT / path).read_text(), []
    for cell in re.split(r"^# %%", text, flags=re.M):
        if cell.startswith(" [markdown]"):
            cells.append(" ".join(line[2:] if line.startswith("# ") else line.lstrip("#")
                                  for line in cell.splitlines()[1:]))
    return re.sub(r"\s+", " ", " ".join(cells))


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_each_notebook_states_the_definition_verbatim(path):
    """The three notebooks print graders.definitions.CHECKPOINT word for word."""
    assert definitions.CHECKPOINT in markdown_text(path)


def test_b10_counts_adam_checkpoints_by_the_definition():
    """b10: an AdamW checkpoint is 12 bytes per parameter, and the 16-bit copy is not in must_hold."""
    b10 = problems.get("b10-checkpoint")
    for params in b10.variants.values():
        answers = b10.solve(params)
        assert 7 not in answers["must_hold"]          # MENU[7]: the 16-bit copy of the weights
        if params["optimizer"] == "adamw":
            assert answers["checkpoint_bytes"] == definitions.ADAM_CHECKPOINT_BYTES_PER_PARAM * params["N"]


def test_e06_variants_use_one_of_the_two_layouts():
    """e06: every variant writes the chapter's 12 bytes, or 14 with the 16-bit copy; both occur."""
    e06 = problems.get("e06-checkpointing")
    layouts = {params["bytes_per_param"] for params in e06.variants.values()}
    assert layouts == {definitions.ADAM_CHECKPOINT_BYTES_PER_PARAM,
                       definitions.WITH_16BIT_COPY_BYTES_PER_PARAM}


def test_p6_counts_fp32_adamw_by_the_definition():
    """p6: the fp32 AdamW checkpoint's expression has 12 bytes per parameter."""
    p6 = problems.get("p6-resume-bit-for-bit")
    expr = p6.solve(p6.variants["A"])["checkpoint_bytes_expr"]
    n = next(s for s in expr.free_symbols if s.name == "N")
    assert sympy.diff(expr, n) == definitions.ADAM_CHECKPOINT_BYTES_PER_PARAM
