"""Numeric checks: one number, a count, or a list of either, each with its own tolerance.

Anything that is not a finite real number of the right kind is invalid and
scores 0 with a reason; nothing here raises on a student's answer.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .feedback import FAIL, INVALID, PASS, Outcome

DEFAULT_RTOL = 1e-3
MAX_LIST = 100_000


def as_real(value):
    """A finite float from a student value, or a string saying why not."""
    if isinstance(value, bool) or value is None:
        return f"is {value!r}, not a number"
    if isinstance(value, dict):  # transport markers: {"str": ...}, {"float": "nan"}, ...
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
            return Outcome(FAIL, f"has {len(ans)} entries; {len(ref)} are expected.")
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
