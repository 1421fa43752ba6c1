"""Numeric checks: tolerances per key, and a clear verdict for anything that is not a number."""
import math

import numpy as np
import pytest
import torch

from graders.feedback import FAIL, INVALID, PASS
from graders.numeric import Count, Number, Numbers
from graders.transport import encode


@pytest.mark.parametrize("answer, status", [
    (1000.0, PASS), (1000.9, PASS), (1001.1, FAIL), (998.9, FAIL), (1000, PASS),
])
def test_a_number_passes_within_its_relative_tolerance(answer, status):
    assert Number(rtol=1e-3).judge(1000.0, answer).status == status


def test_tolerance_is_per_check():
    assert Number(rtol=1e-2).judge(1000.0, 1005.0).passed
    assert not Number(rtol=1e-4).judge(1000.0, 1005.0).passed


@pytest.mark.parametrize("answer", [float("nan"), math.inf, "1000", True, None, [1000.0], {"str": "x"}])
def test_things_that_are_not_finite_numbers_are_invalid(answer):
    outcome = Number().judge(1000.0, encode(answer))
    assert outcome.status == INVALID and outcome.reason


@pytest.mark.parametrize("answer", [np.float64(1000.0), np.int64(1000), torch.tensor(1000.0)])
def test_numpy_and_torch_scalars_are_numbers(answer):
    assert Number().judge(1000.0, encode(answer)).passed


def test_feedback_says_too_large_or_small_but_not_the_value():
    outcome = Number().judge(123456.0, 200000.0)
    assert outcome.status == FAIL and "too large" in outcome.reason and "123456" not in outcome.reason


def test_counts_are_exact_and_whole():
    assert Count().judge(16, 16).passed
    assert Count().judge(16, 16.0).passed
    assert Count().judge(16, 17).status == FAIL
    assert Count().judge(16, 16.5).status == INVALID


def test_lists_check_length_and_every_entry():
    check = Numbers(rtol=1e-6)
    assert check.judge([1.0, 2.0], [1.0, 2.0]).passed
    assert check.judge([1.0, 2.0], [1.0]).status == FAIL
    assert check.judge([1.0, 2.0], [1.0, 2.1]).status == FAIL
    assert check.judge([1.0, 2.0], [1.0, "2"]).status == INVALID
    assert Numbers(exact=True).judge([3, 7], [3, 7]).passed
    assert not Numbers(exact=True).judge([3, 7], [3, 8]).passed


def test_a_list_of_the_wrong_length_keeps_the_reference_length_to_itself():
    """A list of the wrong length is wrong, and the feedback names neither length nor entries."""
    reference = [0.25, 0.5, 0.75]
    for answer in ([0.25], [0.25, 0.5], [0.25, 0.5, 0.75, 1.0]):
        outcome = Numbers().judge(reference, answer)
        assert outcome.status == FAIL
        assert not any(ch.isdigit() for ch in outcome.reason), outcome.reason
        assert "three" not in outcome.reason


def test_wrong_entries_of_a_list_of_the_right_length_are_named_by_position():
    outcome = Numbers(rtol=1e-6).judge([1.0, 2.0, 3.0], [1.0, 2.5, 3.5])
    assert outcome.status == FAIL and "entries 1, 2" in outcome.reason


def test_sympy_numbers_are_numbers():
    """`expr.subs({...})` gives a sympy Float or Integer: that is a number, wherever one is asked for."""
    import sympy
    N, P = sympy.symbols("N P", positive=True)
    per_device_bytes = (16 * N / P).subs({N: 7.5e9, P: 64})
    assert isinstance(per_device_bytes, sympy.Float)
    assert Number().judge(7.5e9 * 16 / 64, encode(per_device_bytes)).passed
    assert Count().judge(16, encode((16 * N / P).subs({N: 4, P: 4}))).passed
    assert Count().judge(16, encode(sympy.Float(16.0))).passed
    assert Number().judge(1 / 3, encode(sympy.Rational(1, 3))).passed
    assert Number().judge(2**0.5 * 3, encode(3 * sympy.sqrt(2))).passed
    assert Numbers().judge([0.5, 2.0], encode([sympy.Rational(1, 2), sympy.Integer(2)])).passed
    assert Number().judge(1000.0, encode(sympy.Symbol("N") * 3)).status == INVALID
    assert Number().judge(1000.0, encode(sympy.zoo)).status == INVALID


@pytest.mark.parametrize("answer", [np.float32(0.75), np.float16(0.75), np.int8(0) + np.float32(0.75),
                                    np.array(0.75), __import__("fractions").Fraction(3, 4)])
def test_every_registered_real_is_a_number(answer):
    assert Number().judge(0.75, encode(answer)).passed


def test_numbers_real_holds_what_the_notebooks_accept():
    """The notebooks' visible checks use numbers.Real / numbers.Integral: sympy and numpy register there."""
    import numbers

    import sympy
    for value in (sympy.Float(1.5), sympy.Rational(1, 3), sympy.Integer(3), np.float32(1), np.float64(1),
                  np.int64(2)):
        assert isinstance(value, numbers.Real)
    for value in (sympy.Integer(3), np.int64(2), np.int32(2)):
        assert isinstance(value, numbers.Integral)


# --- large outputs: the numpy comparison decides exactly as the leaf-by-leaf walk --------------
def _walk(check, ref, ans):
    from graders.numeric import _Unreadable
    try:
        return check._same(ref, ans)
    except _Unreadable:
        return "unreadable"


def _large_cases():
    """(reference, answer, whether numpy decides it): plain numbers nested alike are numpy's."""
    import random
    rng = random.Random(5)
    ref = [[rng.uniform(-3, 3) for _ in range(40)] for _ in range(8)]
    near = [[x * (1 + 1e-8) for x in row] for row in ref]
    off = [row[:] for row in ref]
    off[3][7] += 1.0
    ints = [[round(x) for x in row] for row in ref]
    yield ref, near, True
    yield ref, off, True
    yield ints, [[float(x) for x in row] for row in ints], True
    yield ints, [[x + 1 for x in row] for row in ints], True
    yield [[0.0] * 40] * 8, [[1e-10] * 40] * 8, True                # within atol
    for bad in (True, None, "1.0", float("nan"), float("inf"), 10 ** 308, 2 ** 2000, {"float": "nan"},
                [1.0], {"error": "raised ValueError"}):
        changed = [row[:] for row in near]
        changed[5][9] = bad
        yield ref, changed, False
    yield ref, near[:7], False                                       # a row missing
    yield ref, [row + [0.0] for row in near], False                 # a column too many
    yield ref, [near[0][:39]] + near[1:], False                     # ragged
    yield ref, [x for row in near for x in row], False              # flattened: the wrong shape
    ragged = [[1.5] * 70, [[2.0, 3.0]] * 10, 4.0]                   # nested unevenly, as several tensors
    yield ragged, [[1.5] * 70, [[2.0, 3.0]] * 10, 4.0], True
    yield ragged, [[1.5] * 70, [[2.0, 3.0]] * 9 + [[2.0, 3.5]], 4.0], True
    yield ragged, [[1.5] * 70, [[2.0, 3.0]] * 9 + [[2.0]], 4.0], False
    yield ragged, [[1.5] * 70, [[2.0, 3.0]] * 10, [4.0]], False


CASES = list(_large_cases())


@pytest.mark.parametrize("case", range(len(CASES)))
def test_large_outputs_are_judged_as_the_walk_judges_them(case, monkeypatch):
    from graders import numeric
    ref, ans, numpy_decides = CASES[case]
    check = numeric.Outputs(rtol=1e-6, atol=1e-9)
    fast = numeric._same_reals(ref, ans, check.rtol, check.atol)
    if numpy_decides:
        assert fast is not None
    assert fast is None or fast == _walk(check, ref, ans)
    quick = check.judge([ref, ref], [ans, ans])
    monkeypatch.setattr(numeric, "FAST_MINIMUM", 10 ** 9)   # the walk alone
    assert check.judge([ref, ref], [ans, ans]) == quick
