"""Comparing a declared mistake's answers with the reference: keep only those that differ."""
from __future__ import annotations

import math

import sympy


def differing(right: dict, wrong: dict, rtol: float = 1e-6) -> dict:
    """The entries of `wrong` that differ from `right`: expressions as mathematics, floats (and
    lists of them) beyond `rtol`, anything else by equality. A mistake that changes nothing in a
    variant so gives no wrong answer there."""
    out = {}
    for key, value in wrong.items():
        ref = right[key]
        if isinstance(value, sympy.Basic):
            same = sympy.simplify(value - ref) == 0
        elif isinstance(value, list):
            same = len(value) == len(ref) and all(
                math.isclose(a, b, rel_tol=rtol) if isinstance(a, float) else a == b for a, b in zip(value, ref))
        elif isinstance(value, float):
            same = math.isclose(value, ref, rel_tol=rtol)
        else:
            same = value == ref
        if not same:
            out[key] = value
    return out
