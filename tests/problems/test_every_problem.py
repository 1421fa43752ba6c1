"""What every registered problem owes, whatever its strand: checked once here for all of them.

Each problem's own test file checks its mathematics against the primary sources;
here, the contract they share: four variants, checks that are exactly the cells'
keys, a reference that earns full marks in every variant, and feedback that never
gives the answer away. (The declared mistakes' rule is the gate's: see below.)
"""
import pytest

from graders import problems

IDS = problems.ids()


@pytest.mark.parametrize("pid", IDS)
def test_shape(pid):
    P = problems.get(pid)
    assert set(P.variants) == set("ABCD")
    assert set(P.checks) == {k for keys in P.cells.values() for k in keys}
    assert len(P.mistakes) >= 3


@pytest.mark.parametrize("label", "ABCD")
@pytest.mark.parametrize("pid", IDS)
def test_reference_gets_full_marks(pid, label):
    P = problems.get(pid)
    q = P.variants[label]
    result = P.grade(q, P.reference(q))
    assert result.full_marks, result.feedback


# The declared mistakes' rule is `chapter gate`'s (the first step of `make test`, and so of CI):
# it applies it to every item a chapter lists, draft or published, and fails on any item that breaks
# it (tests/course/test_gate.py shows it refusing). Every registered problem is listed in a chapter
# (tests/problems/test_registry.py), so the gate checks each one; it is not checked again here.


# --- feedback never gives the answer away ---------------------------------------------
# A feedback line may say that an answer is wrong, too large or too small, which of the
# student's own entries are wrong, and what mistake probably produced it. It never shows a
# reference value, and never the length of a reference list unless the question gives it.
# The scan reads every number printed in the feedback and asks whether it is a reference
# value as it would be printed (an int, or a float rounded to the digits shown, also as a
# percentage). Numbers the question itself states (its parameters, the lengths of its
# parameter lists, and the numbers printed in the released notebook's text, such as
# "K = 4 + 4 + 4 = 12") are the student's already, and a feedback line may repeat them.
# A length is looked for in the check's own verdict, not in a declared mistake's prose
# ("the half-life asks for a factor of 2"), which is the same text in every variant.
import math
import random
import re

import sympy

_NUMBER = re.compile(r"(?<![\w.^])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w^])(%?)")
# positions, not values: "entries 0, 3 ...", "entry 2", "hidden calls (numbers 1, 4)", "rank 0, rank 2"
# (a rank of the variant's world, whose size the question gives), and "3 of 5 hidden calls" (said
# only of a list with one output per call, whose length the student has made)
_POSITIONS = re.compile(r"(?:entr(?:y|ies)|numbers|hidden calls?|hidden runs?|rank)\s+\d+(?:,\s*\d+)*|"
                        r"\d+ of \d+ hidden (?:calls|runs)")


def _question_text_numbers(P):
    """The numbers printed in the markdown of the notebook students are given."""
    import nbformat

    from tests.conftest import REPO
    path = REPO / "release" / P.assignment / f"{P.id}.ipynb"
    text = " ".join(cell.source for cell in nbformat.read(path, as_version=4).cells
                    if cell.cell_type == "markdown")
    return [float(m.group(0).rstrip("%").replace(",", "")) for m in _NUMBER.finditer(text.replace("$", " "))]


def _numbers_in(value):
    """Every real number inside a reference or parameter value (bools and text excluded)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return []
    if isinstance(value, (int, float)):
        return [value] if math.isfinite(value) else []
    if isinstance(value, (list, tuple)):
        return [x for item in value for x in _numbers_in(item)]
    if isinstance(value, dict):
        return [x for item in value.values() for x in _numbers_in(item)]
    if isinstance(value, sympy.Basic) and value.is_number:
        return _numbers_in(float(value))
    return []


def _lengths_in(value):
    if isinstance(value, (list, tuple)):
        return [len(value)] + [n for item in value for n in _lengths_in(item)]
    if isinstance(value, dict):
        return [n for item in value.values() for n in _lengths_in(item)]
    return []


def _printed_as(token: str, exact_int: bool, value: float) -> bool:
    """Whether `value` printed at the precision of `token` reads as `token`."""
    text = token.replace(",", "")
    shown = float(text)
    if exact_int:
        return shown == value
    mantissa = re.split(r"[eE]", text)[0].lstrip("+-")
    digits = len(mantissa.replace(".", "").lstrip("0")) or 1
    if digits < 2:   # one significant digit is too coarse to give a value away
        return False
    return shown == float(f"{value:.{digits}g}") or (
        "." in mantissa and shown == round(value, len(mantissa.split(".")[1])))


def leaks(lines, secret_values, secret_lengths, public_values):
    """The numbers in feedback `lines` that give away a secret value or length."""
    found = []
    for line in lines:
        text = _POSITIONS.sub(" ", line)
        verdict_end = text.find("Likely mistake:") % (len(text) + 1)
        for match in _NUMBER.finditer(text):
            token, percent = match.group(0).rstrip("%"), match.group(1)
            shown = float(token.replace(",", ""))

            def same(value):
                plain = "." not in token and "e" not in token.lower()
                if _printed_as(token, plain and float(value).is_integer(), value):
                    return True
                return bool(percent) and _printed_as(token, False, 100 * value)
            if (match.start() < verdict_end and not percent and "." not in token
                    and "e" not in token.lower() and int(shown) in secret_lengths):
                found.append((line, token, "length"))
            elif any(v != 0 and same(v) for v in secret_values) and not any(same(v) for v in public_values):
                found.append((line, token, "value"))
    return found


def _scaled(value, factor):
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value * int(factor) + 1
    if isinstance(value, float):
        return value * factor
    if isinstance(value, (list, tuple)):
        return [_scaled(v, factor) for v in value]
    if isinstance(value, sympy.Expr):
        return value * factor
    return value


def generic_wrong_answers(reference):
    """Wrong answers any student might give: off by a factor, the wrong length, shuffled, the wrong type."""
    shuffle = random.Random(0)
    for key, ref in reference.items():
        yield key, "twice as large", _scaled(ref, 2.0)
        yield key, "ten times smaller", _scaled(ref, 0.1)
        yield key, "a unit slip", _scaled(ref, 1e9)
        yield key, "a string", "the answer"
        if isinstance(ref, (list, tuple)):
            if ref:
                yield key, "one entry short", list(ref[:-1])
                yield key, "one entry too many", list(ref) + [ref[-1]]
                yield key, "one entry", [ref[0]]
                shuffled = list(ref)
                shuffle.shuffle(shuffled)
                yield key, "shuffled", shuffled
                yield key, "reversed", list(ref)[::-1]
            yield key, "empty", []
        else:
            yield key, "a list", [ref, ref]
            yield key, "a dict", {"value": 1}


@pytest.mark.parametrize("pid", IDS)
def test_feedback_never_gives_the_answer_away(pid):
    """Feedback on wrong answers (declared mistakes and generic slips) shows no reference value or length."""
    P = problems.get(pid)
    found = []
    text_numbers = _question_text_numbers(P)
    for label, params in P.variants.items():
        # the reference and the declared mistakes' answers the grader itself uses: remembered per
        # variant by the problem (Problem._memo), so computed once here or by the tests above
        reference, mistaken = P.reference(params), P.mistaken(params)
        public = _numbers_in(params) + _lengths_in(params) + text_numbers
        secret_values = [v for key in P.checks for v in _numbers_in(reference[key])]
        # the length of a list the student works out, and of a probe's outputs: as many as its
        # hidden calls, the size of the hidden test, which the student is not told either
        secret_lengths = {len(reference[key]) for key in P.checks
                          if isinstance(reference[key], (list, tuple))}
        secret_lengths -= set(_lengths_in(params)) | {int(v) for v in _numbers_in(params) if float(v).is_integer()}
        attempts = [(f"mistake {m.name!r}", {**reference, **wrong}) for m, wrong in mistaken]
        attempts += [(f"{key}: {what}", {**reference, key: wrong})
                     for key, what, wrong in generic_wrong_answers(reference) if key in P.checks]
        for what, answers in attempts:
            result = P.grade(params, answers)
            wrong_lines = [text for text in result.feedback if not text.startswith("✓")]
            found += [(label, what, *leak) for leak in leaks(wrong_lines, secret_values, secret_lengths, public)]
    assert not found, "\n".join(map(str, found[:20]))


def test_the_leak_scan_finds_a_reference_value_and_a_reference_length():
    """The scan itself can fail: it sees a value at several precisions, and an ungiven length."""
    secret = [123456.789, 0.03125, 7]
    assert leaks(["✗ x: should be 123456.789"], secret, set(), [])
    assert leaks(["✗ x: should be 1.23e+05"], secret, set(), [])
    assert leaks(["✗ x: should be 123,457"], secret, set(), [])
    assert leaks(["✗ x: about 3.1%"], secret, set(), [])
    assert leaks(["✗ x: exactly 7 of them"], secret, set(), [])
    assert leaks(["✗ clipped_steps: has 1 entries; 3 are expected."], [], {3}, [])
    assert not leaks(["✗ clipped_steps: entries 3, 7 do not match your variant."], [3, 7], {3}, [])
    assert not leaks(["✗ x: the counts of rank 0, rank 2 do not match the run of your variant."], [2], {2}, [])
    assert not leaks(["✗ x: does not match your variant within 0.001 relative (too large)."], secret, set(),
                     [0.001])
    assert not leaks(["✗ x: exactly 7 of them"], secret, set(), [7])
    assert not leaks(["✗ x: fp16 holds 65504 at most"], [16], set(), [65504])


# --- a list of a function's outputs of the wrong length names no count ------------------
# A probed key's reference holds one output per hidden call, so its length is the size of the
# hidden test, which the student is not told: the verdict on a list of another length says
# only that it does not have one output per call, in the one wording numeric.py defines.
PROBED = [pid for pid in IDS if problems.get(pid).probes(problems.get(pid).variants["A"])]


@pytest.mark.parametrize("pid", PROBED)
def test_a_wrong_length_list_of_outputs_names_neither_count(pid):
    from graders.numeric import WRONG_OUTPUT_COUNT
    P = problems.get(pid)
    for label, params in P.variants.items():
        reference = P.reference(params)
        for key in P.probes(params):
            calls = len(reference[key])
            for answer in ([], list(reference[key][:1]), list(reference[key][:-1]),
                           list(reference[key]) + list(reference[key][-1:])):
                if len(answer) == calls:
                    continue
                feedback = P.grade(params, {**reference, key: answer}).feedback
                said = [int(n) for text in feedback if not text.startswith("✓")
                        for n in re.findall(r"\d+", text)]
                assert calls not in said and len(answer) not in said, (label, key, feedback)
                assert f"✗ {key}: {WRONG_OUTPUT_COUNT}" in feedback, (label, key, feedback)


# --- a number is a number, whatever library made it ------------------------------------
def _as_library_numbers(value, library):
    if isinstance(value, bool) or isinstance(value, sympy.Basic) or not isinstance(value, (int, float, list)):
        return value
    if isinstance(value, list):
        return [_as_library_numbers(v, library) for v in value]
    import numpy as np
    if library == "sympy":
        return sympy.Integer(value) if isinstance(value, int) else sympy.Float(value)
    if isinstance(value, int):
        return np.int64(value) if abs(value) < 2**63 else np.float64(value)
    return np.float32(value)


@pytest.mark.parametrize("library", ["sympy", "numpy"])
@pytest.mark.parametrize("pid", IDS)
def test_visible_checks_take_sympy_and_numpy_numbers(pid, library, capsys):
    """Each notebook's visible checks accept its answers as sympy numbers (`expr.subs(...)`) and numpy scalars."""
    from tests.conftest import REPO
    from tests.problems.notebook_cells import cell_sources
    P = problems.get(pid)
    cells = cell_sources(REPO / "source" / P.assignment / f"{P.id}.pct.py")
    import numbers

    import numpy
    refused, ran = [], 0
    for label, params in P.variants.items():
        # what the notebook's cells above its checks import (its worked example, its other checks)
        namespace = {"math": math, "numbers": numbers, "np": numpy, "sympy": sympy}
        exec(compile(cells["setup"], "setup", "exec"), namespace)  # noqa: S102 - our own notebook
        namespace["params"] = params
        reference = P.reference(params)
        probed = set(P.probes(params))
        for key, value in reference.items():
            if key not in probed:
                namespace[key] = _as_library_numbers(value, library)
        for grade_id in P.cells:
            visible = cells[grade_id].split("### BEGIN HIDDEN TESTS")[0]
            try:
                exec(compile(visible, grade_id, "exec"), dict(namespace))  # noqa: S102
                ran += 1
            except AssertionError as exc:
                refused.append((label, grade_id, str(exc)))
            except NameError:   # a cell that calls the student's own functions: not this test's
                pass
        break   # the form of the answers is the same in every variant
    capsys.readouterr()
    assert not refused, refused
    assert ran, "no visible check of this item ran"


# --- one notation for the chapter ------------------------------------------------------
def test_the_chapters_notation_keeps_the_specifications_symbols_and_names_the_new_ones():
    """chapters.toml's notation (printed at the head of the site's index) holds curriculum §2's
    twelve symbols as they are, and the symbols the precision items and e09/p7 introduced."""
    import tomllib

    from graders.course.site import notation_table
    from tests.conftest import REPO
    chapter = next(c for c in tomllib.loads((REPO / "chapters.toml").read_text())["chapter"] if c["id"] == "II.8")
    notation = chapter["notation"]
    for symbol in ("N", "B", "T", "d", "L", "η (eta)", "λ (lambda)", "P", "a", "s", "C", "D"):
        assert symbol in notation
    assert "batch" in notation["B"] and "clip" in notation["M"] and "optimiser" in notation["K"]
    assert "A_N, B_D" in notation
    html = "".join(notation_table(REPO, "II.8"))
    assert "<table" in html and "A_N, B_D" in html and notation_table(REPO, "TDS") == []


def test_e09_and_p7_write_the_chinchilla_coefficients_apart_from_the_batch_size():
    """The fit's coefficients are A_N and B_D in the notebooks' formulas; the parameter keys stay A, B."""
    from tests.conftest import REPO
    for notebook in ("exercises/e09-chinchilla", "practice/p7-chinchilla-table"):
        text = (REPO / "source" / f"{notebook}.pct.py").read_text()
        assert "\\frac{B_D}{D^{\\beta}}" in text and "\\frac{A_N}{N^{\\alpha}}" in text
        assert "\\frac{B}{D^{\\beta}}" not in text and "\\frac{A}{N^{\\alpha}}" not in text
    assert set(problems.get("e09-chinchilla").variants["A"]) >= {"A", "B"}


@pytest.mark.parametrize("pid", IDS)
def test_every_hidden_test_is_in_a_cell_the_checks_grade(pid):
    """`chapter autograde` sends a test cell whole into the sandbox, hidden tests and all, only when
    no check grades it (a plain nbgrader course's asserts): in this course none is so sent."""
    import nbformat

    from tests.conftest import REPO
    P = problems.get(pid)
    nb = nbformat.read(REPO / "source" / P.assignment / f"{P.id}.ipynb", as_version=4)
    hidden = [cell.metadata["nbgrader"]["grade_id"] for cell in nb.cells
              if cell.cell_type == "code" and "BEGIN HIDDEN TESTS" in cell.source]
    assert hidden, "no hidden tests"
    assert [name for name in hidden if not P.cells.get(name)] == []
