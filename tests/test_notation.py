"""One meaning per symbol: the chapter's notation (chapters.toml) against the notebooks' formulas."""
import re
import tomllib

import pytest

from graders import problems
from graders.symbolic import Expr
from tests.conftest import REPO

CHAPTER = next(c for c in tomllib.loads((REPO / "chapters.toml").read_text())["chapter"]
               if c["id"] == "II.8")
NOTATION = CHAPTER["notation"]
ITEMS = {path.rsplit("/", 1)[1]: path for strand in CHAPTER["strands"].values() for path in strand}

# Quantities that once shared a letter with a symbol the chapter had already declared, and the
# name each has now: (item, the old letter, what it meant there, its name in the notation).
RENAMED = [
    ("e07-communication", "K", "pipeline stages", "n_stages"),
    ("e07-communication", "M", "micro-batches", "n_micro"),
    ("e06-checkpointing", "M", "the job's mean time between failures", "Θ (Theta)"),
    ("p6-resume-bit-for-bit", "K", "parameter tensors", "n_tensors"),
    ("e04-clipping", "L", "parameter tensors", "n_tensors"),
    ("e04-clipping", "c", "the clip threshold (the chapter's M)", "M"),
    ("p2-adamw-from-scratch", "c", "the clip threshold (the chapter's M)", "M"),
    ("e08-evaluation", "h", "the half-width of an interval (h is w4's width)", "Δ_ℓ (Delta_ell)"),
    ("b09-mixed-precision", "K", "the attention keys", None),   # now written out in words
    ("e05-loss-scaling", "W", "GradScaler's growth interval", "n_growth"),
    ("e06-checkpointing", "W", "the job's write bandwidth", "R_write"),
    ("e06-checkpointing", "b", "bytes per parameter", "b_param"),
    ("e07-communication", "b", "bytes per gradient value", "b_grad"),
    ("b06-lr-schedule", "T", "a run's total steps", "n_steps"),
    ("e02-schedules", "T", "a run's total steps", "n_steps"),
    ("t4-warmup-and-wsd", "T", "a run's total steps", "n_steps"),
    ("p9-wsd-vs-cosine", "T", "a run's total steps", "n_steps"),
    ("p9-wsd-vs-cosine", "D", "the length of WSD's decay", None),   # written \text{decay}, as in e02
]

_MATH = re.compile(r"\$\$(.+?)\$\$|\$([^$\n]+)\$", re.S)
# A letter with a subscript is a symbol of its own (A_N is not A); \text{...} and its kin hold
# words, and a command is a word.
_SUBSCRIPTED = re.compile(r"[A-Za-z]_(?:\{[^}]*\}|\\[A-Za-z]+(?:\{[^}]*\})?|[A-Za-z0-9])")
_NOT_A_SYMBOL = re.compile(r"\\(?:text|mathrm|operatorname|texttt|mathbf)\{[^}]*\}|\\[A-Za-z]+")
_LETTER = re.compile(r"(?<![A-Za-z])[A-Za-z](?![A-Za-z])")


def math_letters(text: str) -> set[str]:
    """The single letters that stand as symbols in the $...$ formulas of `text`."""
    letters = set()
    for found in _MATH.finditer(text):
        formula = _SUBSCRIPTED.sub(" ", found.group(1) or found.group(2))
        formula = _NOT_A_SYMBOL.sub(" ", formula)
        letters |= set(_LETTER.findall(formula))
    return letters


def source_text(item: str) -> str:
    return (REPO / "source" / f"{ITEMS[item]}.pct.py").read_text()


def expression_symbols(item: str) -> set[str]:
    """The names of the sympy symbols the item's symbolic answers are graded in."""
    checks = problems.get(item).checks.values()
    return {name for check in checks if isinstance(check, Expr) for name in check.symbols}


def test_math_letters_reads_symbols_not_words_or_labels():
    """The scanner finds K and M as symbols, but not inside \\text{}, a command or a subscripted name."""
    assert math_letters(r"$(M+K-1)\,t$ and $$\frac{K}{M}$$") == {"M", "K", "t"}
    assert math_letters(r"$n_\text{stages}$, $G_B$, $\Delta L_{max}$, $\Theta$, $b_\text{grad}$") == set()
    assert math_letters(r"$G$ and $G_B$, $\sqrt{L}\,g$") == {"G", "L", "g"}
    assert math_letters("a price of US$5 and 6$ later\n") == set()


@pytest.mark.parametrize("item, letter, meaning, name", RENAMED)
def test_a_renamed_quantity_no_longer_uses_the_declared_letter(item, letter, meaning, name):
    """The item writes no formula with the letter it once used for another quantity, and does
    not grade an expression in a symbol of that name."""
    assert letter not in math_letters(source_text(item)), (
        f"{item} writes ${letter}$ for {meaning}; the chapter's notation gives {letter} another meaning")
    assert letter not in expression_symbols(item)


@pytest.mark.parametrize("item, letter, meaning, name", [r for r in RENAMED if r[3]])
def test_a_renamed_quantity_is_declared_in_the_notation(item, letter, meaning, name):
    """Each quantity's new name is a row of the chapter's notation, which names the item."""
    rows = [meaning_there for key, meaning_there in NOTATION.items()
            if name in (part.strip() for part in key.split(","))]
    assert rows, f"{name} ({meaning}, {item}) is not in [chapter.notation]"
    assert item.split("-")[0] in rows[0]


def test_every_declared_letter_that_was_overloaded_keeps_its_chapter_meaning():
    """K, M, L and h still mean optimiser bytes, the clip threshold, layers and width where declared."""
    assert "optimiser" in NOTATION["K"] and "clip threshold" in NOTATION["M"]
    assert "layers" in NOTATION["L"] and "h in" in NOTATION["d"]


@pytest.mark.parametrize("item", sorted(ITEMS))
def test_a_notebook_defines_the_symbols_its_expressions_are_graded_in(item):
    """The sympy symbols a notebook gives the student are exactly those its grader accepts."""
    graded = expression_symbols(item)
    if not graded:
        return
    text = source_text(item)
    defined = set()
    for names in re.findall(r"(?:sp|sympy)\.symbols\(\s*\"([^\"]+)\"", text):
        defined |= set(re.split(r"[\s,]+", names.strip()))
    defined |= set(re.findall(r"(?:sp|sympy)\.Symbol\(\s*\"([^\"]+)\"", text))
    assert graded <= defined, f"{item} grades in {sorted(graded - defined)}, which its notebook never defines"


@pytest.mark.parametrize("item", sorted(ITEMS))
def test_a_capital_letter_graded_as_a_symbol_is_declared(item):
    """A single capital letter that a problem grades an expression in is a row of the notation."""
    graded = expression_symbols(item)
    capitals = {name for name in graded if re.fullmatch(r"[A-Z]", name)}
    declared = {symbol for key in NOTATION for symbol in re.split(r"[,\s()]+", key) if symbol}
    assert capitals <= declared, f"{item} grades in {sorted(capitals - declared)}, undeclared"


def test_visible_checks_compare_symbols_by_name_as_the_grader_does():
    # The grader matches a student's symbols by name (graders.symbolic), so sp.Symbol("N") made
    # without the notebook's positive=True is accepted; a visible check that compared the symbol
    # objects failed Validate for that same correct answer.
    by_object = re.compile(r"\b\w+\.free_symbols\s*<=\s*\{(?!\s*\w+\.name\b)")
    found = [f"{path.name}:{number}" for path in sorted((REPO / "source").glob("*/*.pct.py"))
             for number, line in enumerate(path.read_text().splitlines(), 1) if by_object.search(line)]
    assert not found, f"visible checks comparing symbol objects: {found}"
