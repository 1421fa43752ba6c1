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
