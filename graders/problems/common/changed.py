"""The answers a declared mistake changes: what its `wrong` function returns."""
from __future__ import annotations

import math

import sympy


def changed_answers(answers, q, **mistake) -> dict:
    """{key: wrong answer} for the keys where `answers(q, **mistake)` differs from `answers(q)`.

    An answer the mistake cannot produce (None) is left out; expressions are compared as
    mathematics, numbers and lists of numbers to a relative 1e-9."""
    right, wrong = answers(q), answers(q, **mistake)
    out = {}
    for key, value in wrong.items():
        if value is None:
            continue
        if isinstance(value, sympy.Basic):
            same = sympy.simplify(value - right[key]) == 0
        elif isinstance(value, (list, tuple)):
            same = len(value) == len(right[key]) and all(
                math.isclose(a, b, rel_tol=1e-9) for a, b in zip(value, right[key]))
        else:
            same = right[key] is not None and math.isclose(value, right[key], rel_tol=1e-9)
        if not same:
            out[key] = value
    return out
