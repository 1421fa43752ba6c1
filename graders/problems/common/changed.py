"""The answers a declared mistake changes: the entries of its answers that differ from the reference."""
from __future__ import annotations

import math
import numbers

import sympy


def differing(right: dict, wrong: dict, rtol: float = 1e-6, atol: float = 0.0) -> dict:
    """The entries of `wrong` that differ from `right`: expressions as mathematics, real numbers (and
    lists of them) beyond `rtol` (and `atol`), anything else by equality. A mistake that changes nothing in a
    variant so gives no wrong answer there."""
    def same(a, b):
        if isinstance(a, sympy.Basic) or isinstance(b, sympy.Basic):
            return sympy.simplify(sympy.sympify(a) - sympy.sympify(b)) == 0
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
        if isinstance(a, numbers.Real) and isinstance(b, numbers.Real) and not isinstance(a, bool):
            return math.isclose(a, b, rel_tol=rtol, abs_tol=atol)
        return a == b

    return {key: value for key, value in wrong.items() if not same(value, right.get(key))}


def changed_answers(answers, q, rtol: float = 1e-9, **mistake) -> dict:
    """{key: wrong answer} where `answers(q, **mistake)` differs from `answers(q)`; an answer the
    mistake cannot produce (None) is left out."""
    wrong = {key: value for key, value in answers(q, **mistake).items() if value is not None}
    return differing(answers(q), wrong, rtol)
