"""Answers as plain data: how they leave a student's interpreter.

`encode` runs beside the student's code and turns each answer into JSON-able
data: numbers, booleans, lists, and sympy expressions as `srepr` text. The
grading side never unpickles or evaluates anything; it reads this data back
with `json` and the whitelisting reader in `symbolic`. The module imports only
the standard library, so it can run where `graders` is otherwise unreachable.
"""
import math
import numbers

MAX_ITEMS = 100_000
MAX_TEXT = 20_000
MARKERS = ("sympy", "str", "float", "error", "callable", "object")


def encode(value, depth: int = 0):
    """Plain data for one answer value. Never raises."""
    try:
        return _encode(value, depth)
    except Exception as exc:  # noqa: BLE001 - a hostile object must not break gathering
        return {"error": f"could not be read ({type(exc).__name__})"}


def _encode(value, depth):
    if depth > 4:
        return {"error": "is nested too deeply"}
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):   # int subclasses too, read through int's own method
        number = int.__index__(value)
        return number if abs(number) < 2**63 else float(number)
    if isinstance(value, float):  # float subclasses (numpy's float64 among them): the stored value
        number = float.__float__(value)
        return number if math.isfinite(number) else {"float": repr(number)}
    if type(value) is str:
        return {"str": value[:200]}
    if type(value) is dict and len(value) == 1:
        # already plain data (answers handed straight to `grade`): keep the marker
        (kind, inner), = value.items()
        if kind in MARKERS and type(inner) is str:
            return {kind: inner[:MAX_TEXT]}
    if type(value) is dict and set(value) == {"sympy", "value"} and type(value["sympy"]) is str \
            and type(value["value"]) is float:
        return {"sympy": value["sympy"][:MAX_TEXT], "value": value["value"]}
    module = type(value).__module__ or ""
    if module.startswith("sympy"):
        import sympy
        if isinstance(value, sympy.Basic):
            if value.is_Integer:
                return _encode(int(value), depth)
            if value.is_Number:
                return _encode(float(value), depth)
            text = sympy.srepr(value)
            if len(text) > MAX_TEXT:
                return {"error": "is too large an expression"}
            if not value.free_symbols:
                # a number written as an expression (sqrt(2), 3*pi): an expression where one
                # is asked for, and its value where a number is
                number = _constant(value)
                if number is not None:
                    return {"sympy": text, "value": number}
            return {"sympy": text}
    if isinstance(value, numbers.Integral):   # numpy's and other registered integers
        return _encode(int(value), depth)
    if isinstance(value, numbers.Real):       # numpy's float32, fractions.Fraction, ...
        return _encode(float(value), depth)
    if module.startswith("numpy") or module.startswith("torch"):
        if hasattr(value, "tolist"):
            return _encode(value.tolist(), depth + 1)
    if type(value) in (list, tuple):
        if len(value) > MAX_ITEMS:
            return {"error": "is too long a list"}
        return [_encode(item, depth + 1) for item in value]
    if callable(value):
        return {"callable": getattr(value, "__name__", "function")[:100]}
    return {"object": type(value).__name__[:100]}


def _constant(expr):
    """The finite real value of a sympy constant expression, or None."""
    try:
        number = complex(expr.evalf(30))
    except Exception:  # noqa: BLE001 - not a number after all
        return None
    if number.imag != 0 or not math.isfinite(number.real):
        return None
    return float(number.real)


def describe(value) -> str:
    """Why a transported marker is not an answer, for feedback (no values shown)."""
    if isinstance(value, dict):
        if "error" in value:
            return str(value["error"])
        for kind, text in (("str", "is a string"), ("callable", "is a function"),
                           ("object", "is an object"), ("float", "is NaN or infinite")):
            if kind in value:
                return text
    return f"is a {type(value).__name__}"
