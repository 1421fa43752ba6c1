"""Numeric checks: one number, a count, or a list of either, each with its own tolerance.

Anything that is not a finite real number of the right kind is invalid and
scores 0 with a reason; nothing here raises on a student's answer.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from graders.feedback import FAIL, INVALID, PASS, Outcome

DEFAULT_RTOL = 1e-3
MAX_LIST = 100_000

# The verdict on a list of outputs whose length is not the number of hidden calls. It names
# neither count: the reference's length is the number of calls the hidden test makes, which
# the student is not told. Every check of a student function's outputs uses this wording.
WRONG_OUTPUT_COUNT = "does not have one output per hidden call."


def as_real(value):
    """A finite float from a student value, or a string saying why not."""
    if isinstance(value, bool) or value is None:
        return f"is {value!r}, not a number"
    if isinstance(value, dict):  # transport markers: {"str": ...}, {"float": "nan"}, ...
        if "sympy" in value and isinstance(value.get("value"), float):
            value = value["value"]      # a sympy constant such as 3*sqrt(2): its value
            return value if math.isfinite(value) else "is NaN or infinite"
        if "float" in value:
            return "is NaN or infinite" if value["float"] in ("nan", "inf", "-inf") else "is not a number"
        kind = next(iter(value), "object")
        return "is a string, not a number" if kind == "str" else f"is a {kind}, not a number"
    if isinstance(value, str):
        return "is a string, not a number"
    if isinstance(value, (list, tuple)):
        return "is a list, not a single number"
    if isinstance(value, (int, float)):
        number = float(value) if not isinstance(value, int) or abs(value) < 1e308 else math.inf
    else:
        return f"is a {type(value).__name__}, not a number"
    if not math.isfinite(number):
        return "is NaN or infinite"
    return number


def _compare(ref: float, ans: float, rtol: float, atol: float) -> Outcome:
    if abs(ans - ref) <= max(rtol * abs(ref), atol):
        return Outcome(PASS)
    side = "too large" if ans > ref else "too small"
    return Outcome(FAIL, f"does not match your variant within {rtol:.2g} relative ({side}).")


@dataclass(frozen=True)
class Number:
    """A real number, accepted within relative tolerance `rtol` (absolute `atol` near zero)."""
    rtol: float = DEFAULT_RTOL
    atol: float = 0.0
    points: float = 1.0

    def judge(self, ref, ans) -> Outcome:
        number = as_real(ans)
        if isinstance(number, str):
            return Outcome(INVALID, f"{number}.")
        return _compare(float(ref), number, self.rtol, self.atol)


@dataclass(frozen=True)
class Count:
    """A whole number (steps, bytes, devices), accepted only when exact."""
    points: float = 1.0

    def judge(self, ref, ans) -> Outcome:
        number = as_real(ans)
        if isinstance(number, str):
            return Outcome(INVALID, f"{number}.")
        if number != int(number):
            return Outcome(INVALID, "is not a whole number; counts are ints.")
        if int(number) == int(ref):
            return Outcome(PASS)
        side = "too large" if number > ref else "too small"
        return Outcome(FAIL, f"is not the count for your variant ({side}).")


@dataclass(frozen=True)
class Numbers:
    """A list of reals of a fixed length, each within `rtol` (or exact when `exact`)."""
    rtol: float = DEFAULT_RTOL
    atol: float = 0.0
    exact: bool = False
    points: float = 1.0

    def judge(self, ref, ans) -> Outcome:
        if isinstance(ans, dict) or not isinstance(ans, (list, tuple)):
            return Outcome(INVALID, "is not a list of numbers.")
        if len(ans) != len(ref):
            # Neither the reference's length nor any of its entries is named: only
            # that this list is not the one asked for.
            return Outcome(FAIL, "is not the list for your variant: work out again which entries "
                                 "belong in it, and how many there are.")
        wrong = []
        for i, (r, a) in enumerate(zip(ref, ans)):
            number = as_real(a)
            if isinstance(number, str):
                return Outcome(INVALID, f"entry {i} {number}.")
            if self.exact:
                if number != float(r):
                    wrong.append(i)
            elif not _compare(float(r), number, self.rtol, self.atol).passed:
                wrong.append(i)
        if wrong:
            shown = ", ".join(map(str, wrong[:5])) + (" ..." if len(wrong) > 5 else "")
            return Outcome(FAIL, f"entries {shown} do not match your variant.")
        return Outcome(PASS)


class _Unreadable(Exception):
    """An output that is not a number (NaN, a string, an error...)."""


@dataclass(frozen=True)
class Outputs:
    """The outputs of a student function on hidden calls, compared call by call.

    Each reference output is a number or a (nested) list of numbers; the
    student's output must have the same shape and agree within `rtol` (or
    `atol` near zero). A call that raised, or returned NaN or a non-number,
    makes the check invalid and says which call; no values are ever shown.
    `reference` names what the outputs are compared with in the feedback: torch's
    own function, or (for a paper's formula or definition) "the reference's".
    """
    rtol: float = 1e-6
    atol: float = 1e-9
    points: float = 1.0
    reference: str = "torch's"

    def judge(self, ref, ans) -> Outcome:
        if isinstance(ans, dict) or not isinstance(ans, (list, tuple)):
            return Outcome(INVALID, "was not gathered: define the function with the name asked for.")
        if len(ans) != len(ref):
            return Outcome(INVALID, WRONG_OUTPUT_COUNT)
        wrong = []
        for i, (r, a) in enumerate(zip(ref, ans)):
            if isinstance(a, dict) and "error" in a:
                return Outcome(INVALID, f"hidden call {i}: your function {a['error']}.")
            try:
                same = _same_reals(r, a, self.rtol, self.atol)
                if same is None:
                    same = self._same(r, a)
                if not same:
                    wrong.append(i)
            except _Unreadable as exc:
                return Outcome(INVALID, f"hidden call {i}: the output {exc}.")
        if wrong:
            shown = ", ".join(map(str, wrong[:5])) + (" ..." if len(wrong) > 5 else "")
            return Outcome(FAIL, f"{len(wrong)} of {len(ref)} hidden calls (numbers {shown}) give "
                                 f"outputs that differ from {self.reference} (shape or values).")
        return Outcome(PASS)

    def _same(self, ref, ans) -> bool:
        if isinstance(ref, (list, tuple)):
            if isinstance(ans, dict) and "error" not in ans:
                raise _Unreadable(_describe(ans))
            if not isinstance(ans, (list, tuple)) or len(ans) != len(ref):
                return False
            return all([self._same(r, a) for r, a in zip(ref, ans)])
        if isinstance(ans, dict) and "error" in ans:
            raise _Unreadable(str(ans["error"]))
        number = as_real(ans)
        if isinstance(number, str):
            if isinstance(ans, (list, tuple)):
                return False          # a list where a number belongs: wrong shape
            raise _Unreadable(number)
        return abs(number - float(ref)) <= max(self.rtol * abs(float(ref)), self.atol)


FAST_MINIMUM = 64   # leaves: below this the plain walk is as quick


def _flatten(value, leaves: list, shape: list) -> bool:
    """The leaves of a (nested) list in order, and its shape as the length of every list met
    in that order (-1 for a leaf), so two values with equal shapes nest the same way. False at
    the first leaf that is not a plain int or float (bools, None, strings, transport markers)."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is list or kind is tuple:
            shape.append(len(item))
            stack.extend(reversed(item))
        elif kind is float or kind is int:
            shape.append(-1)
            leaves.append(item)
        else:
            return False
    return True


def _same_reals(ref, ans, rtol: float, atol: float):
    """`Outputs._same` for a large nested list of plain numbers, computed with numpy: the same
    comparison, leaf by leaf, in the same float64 arithmetic. None when the answer is anything
    else (a leaf that is not a plain finite number below 1e308, a different nesting, a small
    list): the leaf-by-leaf walk then decides, and says why."""
    if not isinstance(ref, (list, tuple)) or not isinstance(ans, (list, tuple)):
        return None
    ans_leaves: list = []
    ans_shape: list = []
    if not _flatten(ans, ans_leaves, ans_shape) or len(ans_leaves) < FAST_MINIMUM:
        return None
    ref_leaves: list = []
    ref_shape: list = []
    if not _flatten(ref, ref_leaves, ref_shape) or ref_shape != ans_shape:
        return None
    import numpy as np
    try:
        r = np.array(ref_leaves, dtype=np.float64)
        a = np.array(ans_leaves, dtype=np.float64)
    except (ValueError, TypeError, OverflowError):
        return None
    if not np.all(np.abs(a) < 1e308):
        return None
    return bool(np.all(np.abs(a - r) <= np.maximum(rtol * np.abs(r), atol)))


def _describe(value) -> str:
    number = as_real(value)
    return number if isinstance(number, str) else "is not a list"
