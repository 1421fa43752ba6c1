"""Symbolic answers: safe reading, and equality decided as mathematics.

Student expressions reach the grader as sympy's `srepr` text, e.g.
``Mul(Integer(16), Symbol('N'))``. That text is untrusted, so it is read by
walking its Python syntax tree against a whitelist of sympy constructors;
nothing is passed to `eval`, `sympify` or `parse_expr`. Expressions are built
unevaluated, so that no arithmetic happens outside a time bound.

Equality is decided in a bounded child process, in two layers:
1. sampling: both sides are evaluated to 30 digits at random positive points;
   any disagreement proves the expressions differ (this catches an expression
   that agrees with the reference at one point only);
2. proof: for exact expressions, sympy must show that the difference is zero.
   Expressions containing floating-point constants (fitted exponents, say)
   cannot be proved equal exactly; they are accepted when they agree to a
   relative tolerance at every sampled point.
A comparison that times out, or that sampling cannot refute but sympy cannot
prove, is reported as undecided, never as right.
"""
from __future__ import annotations

import ast
import random
from fractions import Fraction
from dataclasses import dataclass

import sympy

from graders.bounded import Timeout, run_bounded

# The chapter's notation (curriculum section 2), all positive reals. Problems
# add their own symbols (K, W, ...) through `symbols_for`.
NOTATION = {
    "N": "parameter count",
    "B": "batch size (sequences)",
    "T": "sequence length in tokens",
    "d": "model width",
    "L": "number of layers",
    "eta": "learning rate",
    "lambda": "weight decay",
    "P": "number of data-parallel devices",
    "a": "attention heads",
    "s": "sequence length inside activation formulas",
    "C": "training compute in FLOPs",
    "D": "training tokens",
}

MAX_TEXT = 20_000          # characters of srepr text
MAX_NODES = 4_000          # syntax-tree nodes
MAX_INT_DIGITS = 40        # digits in one integer literal
MAX_DEPTH = 60             # nesting of calls (an honest answer is a few levels deep)
MAX_FLOAT_TEXT = 40        # characters of one Float literal (digits and exponent)
SAMPLE_POINTS = 8
DIGITS = 30
COMPARE_SECONDS = 3.0


def symbols_for(names) -> dict[str, sympy.Symbol]:
    """Positive real symbols for `names`, keyed by name."""
    return {name: sympy.Symbol(name, positive=True) for name in names}


class ExpressionError(ValueError):
    """The text is not an expression this grader will read."""


_CONSTRUCTORS = {
    "Add": sympy.Add, "Mul": sympy.Mul, "Pow": sympy.Pow,
    "exp": sympy.exp, "log": sympy.log, "sqrt": sympy.sqrt,
    "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan,
    "Max": sympy.Max, "Min": sympy.Min, "Abs": sympy.Abs,
    "floor": sympy.floor, "ceiling": sympy.ceiling,
}
_CONSTANTS = {"pi": sympy.pi, "E": sympy.E}
# Every node is built unevaluated: reading does no arithmetic at all, so a hostile
# text (a square root of a power with a nine-digit exponent, say) costs the
# reader only its size. All computing happens in the bounded comparison child.
_ARITY = {"Add": (1, MAX_NODES), "Mul": (1, MAX_NODES), "Max": (1, MAX_NODES), "Min": (1, MAX_NODES),
          "Pow": (2, 2), "log": (1, 2)}   # (fewest, most) arguments; every other function takes one


def from_srepr(text: str, allowed: dict[str, sympy.Symbol]) -> sympy.Expr:
    """Build an expression from `srepr` text, using only whitelisted nodes.

    Symbols are matched by name to `allowed` (so assumptions the student gave
    them do not matter); any other name raises ExpressionError naming it.
    """
    if not isinstance(text, str):
        raise ExpressionError("not an expression")
    if len(text) > MAX_TEXT:
        raise ExpressionError(f"the expression is too long ({len(text)} characters)")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ExpressionError("the expression could not be read") from None
    nodes = sum(1 for _ in ast.walk(tree))
    if nodes > MAX_NODES:
        raise ExpressionError(f"the expression is too large ({nodes} parts)")
    if _depth(tree.body) > MAX_DEPTH:
        raise ExpressionError("the expression is nested too deeply")
    unknown: list[str] = []
    try:
        expr = _build(tree.body, allowed, unknown)
    except RecursionError:
        raise ExpressionError("the expression is nested too deeply") from None
    if unknown:
        names = ", ".join(sorted(set(unknown)))
        raise ExpressionError(
            f"uses {names}, which is not in this problem's notation ({', '.join(allowed)})")
    return expr


def _depth(root) -> int:
    """The call-nesting depth of a syntax tree, counted without recursion."""
    deepest, stack = 0, [(root, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            break
        stack.extend((child, depth + isinstance(child, ast.Call)) for child in ast.iter_child_nodes(node))
    return deepest


def _build(node, allowed, unknown):
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.Name) and node.id == "I":
        raise ExpressionError("the expression contains the imaginary unit I; every answer here is real, so "
                              "write it without I (a cosine as sympy.cos, not as complex exponentials; of the "
                              "roots sympy.solve returns, the real one)")
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        raise ExpressionError("the expression contains something other than sympy arithmetic")
    name = node.func.id
    if name == "Symbol":
        sym_name = _literal(node.args[0] if node.args else None, str)
        if sym_name not in allowed:
            unknown.append(sym_name)
            return sympy.Symbol(sym_name)
        return allowed[sym_name]
    if name == "Integer":
        value = _literal(node.args[0] if node.args else None, int)
        if len(str(abs(value))) > MAX_INT_DIGITS:
            raise ExpressionError("the expression has an integer too large to grade")
        return sympy.Integer(value)
    if name == "Rational":
        if len(node.args) != 2:
            raise ExpressionError("a Rational needs two integers")
        p, q = (_literal(arg, int) for arg in node.args)
        if q == 0 or max(len(str(abs(p))), len(str(abs(q)))) > MAX_INT_DIGITS:
            raise ExpressionError("the expression has an unusable rational number")
        return sympy.Rational(p, q)
    if name == "Float":
        text = _literal(node.args[0] if node.args else None, (str, float, int))
        if len(str(text)) > MAX_FLOAT_TEXT:
            raise ExpressionError("the expression has a number too long to grade")
        try:
            value = sympy.Float(text, 30)
        except (ValueError, TypeError):
            raise ExpressionError("the expression has an unreadable number") from None
        if not value.is_finite:
            raise ExpressionError("the expression has an infinite or NaN number")
        return value
    if name in _CONSTRUCTORS:
        args = [_build(arg, allowed, unknown) for arg in node.args]
        if not args:
            raise ExpressionError(f"{name} needs arguments")
        if name == "sqrt":
            if len(args) != 1:
                raise ExpressionError("sqrt takes one argument")
            return sympy.Pow(args[0], sympy.S.Half, evaluate=False)
        low, high = _ARITY.get(name, (1, 1))
        if not low <= len(args) <= high:
            raise ExpressionError(f"{name} has the wrong number of arguments")
        try:
            return _CONSTRUCTORS[name](*args, evaluate=False)
        except (TypeError, ValueError, ArithmeticError):
            raise ExpressionError(f"the expression's {name} could not be built") from None
    raise ExpressionError(f"the expression uses {name}, which this grader does not accept")


def _literal(node, kinds):
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _literal(node.operand, kinds)
        if isinstance(value, str):
            raise ExpressionError("the expression has a malformed literal")
        return -value
    if not isinstance(node, ast.Constant) or isinstance(node.value, bool) \
            or not isinstance(node.value, kinds):
        raise ExpressionError("the expression has a malformed literal")
    return node.value


@dataclass(frozen=True)
class Comparison:
    verdict: str   # "equal" | "different" | "undecided"
    how: str       # which layer decided, for the record (never shown with values)


def compare(reference: sympy.Expr, answer: sympy.Expr, rtol: float = 1e-9,
            timeout: float = COMPARE_SECONDS, ranges: dict | None = None) -> Comparison:
    """Decide whether `answer` equals `reference` as mathematics, within `timeout`.

    `ranges` maps a symbol's name to the (low, high) interval it is sampled from
    (default 0.3 to 4), for symbols whose meaning confines them, such as a
    per-step decay ηλ that must stay below 1.
    """
    key = (sympy.srepr(reference), sympy.srepr(answer), float(rtol),
           tuple(sorted((str(n), tuple(r)) for n, r in (ranges or {}).items())))
    if key in _DECIDED:   # a class hands in the same expression many times: decide it once
        return _DECIDED[key]
    try:
        verdict, how = run_bounded(_decide, key[0], key[1], rtol, dict(ranges or {}), timeout=timeout)
    except Timeout:
        return Comparison("undecided", "timed out")
    except RuntimeError as exc:
        return Comparison("undecided", str(exc))
    result = Comparison(verdict, how)
    if verdict in ("equal", "different") and len(_DECIDED) < MAX_DECIDED:
        _DECIDED[key] = result
    return result


_DECIDED: dict = {}   # decided comparisons (pure functions of their texts); undecided ones are retried
MAX_DECIDED = 10_000


def decided_count() -> int:
    return len(_DECIDED)


def decided_since(mark: int) -> list:
    """The comparisons decided after `decided_count()` was `mark`, as JSON data.

    Grading runs in a bounded child process, whose cache dies with it; the
    parent takes these back (`remember`) so the class's next copy of the same
    expression is decided at once.
    """
    return [[list(key[:3]) + [[list(r) for r in key[3]]], result.verdict, result.how]
            for key, result in list(_DECIDED.items())[mark:]]


def remember(entries) -> None:
    for (ref, ans, rtol, ranges), verdict, how in entries:
        if len(_DECIDED) >= MAX_DECIDED or verdict not in ("equal", "different"):
            return
        key = (str(ref), str(ans), float(rtol), tuple((str(n), tuple(r)) for n, r in ranges))
        _DECIDED[key] = Comparison(str(verdict), str(how))


def _decide(ref_text: str, ans_text: str, rtol: float, ranges: dict):
    # Runs in the bounded child. Both texts come from the parent, which already
    # read the student's text through `from_srepr`; re-reading it here through
    # the same whitelist keeps the child free of any other parser.
    ref_syms = _free_names(ref_text)
    ans_syms = _free_names(ans_text)
    allowed = symbols_for(sorted(ref_syms | ans_syms))
    ref = from_srepr(ref_text, allowed)
    ans = from_srepr(ans_text, allowed)
    if ans.has(sympy.nan, sympy.zoo, sympy.oo, -sympy.oo):
        return "different", "not finite"
    symbols = sorted(ref.free_symbols | ans.free_symbols, key=lambda s: s.name)
    rng = random.Random(20260)
    inexact = bool(ref.atoms(sympy.Float) or ans.atoms(sympy.Float))
    positive = True   # the reference is a positive real at every sampled point
    for _ in range(SAMPLE_POINTS):
        point = {sym: _sample(rng, ranges.get(sym.name)) for sym in symbols}
        r = complex(ref.evalf(DIGITS, subs=point))
        a = complex(ans.evalf(DIGITS, subs=point))
        tol = (rtol if inexact else 1e-20) * max(abs(r), 1e-300)
        if not abs(r - a) <= max(tol, 1e-25 if not inexact else 0.0):
            return "different", "sampling"
        positive = positive and r.imag == 0 and r.real > 0
    if inexact:
        return "equal", "sampling within tolerance"
    difference = ref - ans
    steps = [("expand", lambda: sympy.expand(difference)), ("cancel", lambda: sympy.cancel(difference))]
    if difference.has(sympy.sin, sympy.cos, sympy.tan):
        # a schedule's cosine written through a supplementary or shifted angle: each angle is
        # put in terms of another of the expression's own, where they differ by a multiple of π/2
        steps.append(("shifted angles", lambda: _align_angles(difference)))
        # through a half-angle: as exponentials, the identity is algebra (simplify reaches it
        # too, but takes seconds)
        steps.append(("exponentials", lambda: sympy.expand(sympy.powsimp(sympy.expand(difference.rewrite(sympy.exp))))))
    if positive:   # a quotient of two positive quantities, and its logarithm, are defined
        steps.append(("quotient", lambda: _simplify_quotient(ref, ans) - 1))
    steps += [("simplify", lambda: sympy.simplify(difference)), ("powers", lambda: _simplify_powers(difference))]
    if positive:
        steps.append(("logarithms", lambda: _simplify_logs(ref, ans)))
    for name, step in steps:
        if step() == 0:
            return "equal", name
    return "undecided", "sampling agreed but no proof"


def _align_angles(expr):
    # cos(π(n − t)/(n − W)) is cos(π − π(t − W)/(n − W)) = −cos(π(t − W)/(n − W)), but sympy
    # sees two unrelated angles. An angle that is ±(another angle) + kπ/2, for a whole k, is
    # written that way; sympy's own evaluation of sin, cos and tan then takes the shift out.
    bases, swap = [], {}
    for atom in sorted(expr.atoms(sympy.sin, sympy.cos, sympy.tan), key=sympy.default_sort_key):
        angle = atom.args[0]
        for base in bases:
            shift = next(((sign, k) for sign in (1, -1)
                          for k in [sympy.cancel(2 * (angle - sign * base) / sympy.pi)] if k.is_Integer), None)
            if shift:
                sign, k = shift
                swap[atom] = atom.func(sign * base + k * sympy.pi / 2)
                break
        else:
            bases.append(angle)
    return sympy.expand(expr.xreplace(swap))


def _simplify_powers(expr):
    # Combine powers and logs as if every base were positive. Sampling has already
    # shown agreement where the symbols are meaningful, so this only finishes the proof.
    return sympy.simplify(sympy.powdenest(expr, force=True))


def _simplify_quotient(ref, ans):
    # A product of powers (a scaling law, an optimum C^a/C^b) whose difference sympy cannot
    # cancel is often one whose quotient collapses to 1 once powers of products are split.
    quotient = sympy.expand_power_base(ref / ans, force=True)
    return sympy.simplify(sympy.powsimp(sympy.powdenest(quotient, force=True), force=True))


def _simplify_logs(ref, ans):
    # The same answer written through exp and log: equal positive quantities have equal logarithms.
    return sympy.simplify(sympy.expand_log(sympy.log(ref) - sympy.log(ans), force=True))


def _sample(rng: random.Random, interval) -> sympy.Rational:
    if interval is None:
        return sympy.Rational(rng.randint(300, 4000), 1000)
    low, high = interval
    fraction = Fraction(low + (high - low) * rng.random()).limit_denominator(10**15)
    return sympy.Rational(fraction.numerator, fraction.denominator)


def _free_names(text: str) -> set[str]:
    tree = ast.parse(text, mode="eval")
    return {n.args[0].value for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "Symbol"
            and n.args and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str)}


@dataclass(frozen=True)
class Expr:
    """A sympy expression in the listed symbols, accepted when mathematically equal."""
    symbols: tuple[str, ...]
    rtol: float = 1e-9   # used only when an expression holds floating-point constants
    points: float = 1.0
    ranges: tuple = ()   # ((name, (low, high)), ...): where to sample confined symbols

    def read(self, ans) -> sympy.Expr:
        """The student's expression, read safely; raises ExpressionError."""
        allowed = symbols_for(self.symbols)
        if isinstance(ans, dict) and "sympy" in ans:
            return from_srepr(ans["sympy"], allowed)
        if isinstance(ans, sympy.Basic):
            return from_srepr(sympy.srepr(ans), allowed)
        if isinstance(ans, (dict, str, bool, int, float, list, tuple)) or ans is None:
            from graders.transport import describe
            kind = "is a string" if isinstance(ans, str) else describe(ans)
            raise ExpressionError(f"{kind}, not a sympy expression in {', '.join(self.symbols)}")
        raise ExpressionError(f"is a {type(ans).__name__}, not a sympy expression")

    def rewrite(self, expr: sympy.Expr) -> sympy.Expr:
        """Both sides as they are compared; a check that compares elsewhere (w5's decay) overrides it."""
        return expr

    def judge(self, ref, ans):
        from graders.feedback import FAIL, INVALID, PASS, UNDECIDED, UNDECIDED_REASON, Outcome
        try:
            expr = self.rewrite(self.read(ans))
        except ExpressionError as exc:
            return Outcome(INVALID, f"{exc}.")
        reference = self.rewrite(from_srepr(sympy.srepr(ref), symbols_for(self.symbols)))
        result = compare(reference, expr, rtol=self.rtol, ranges=dict(self.ranges))
        if result.verdict == "equal":
            return Outcome(PASS)
        if result.verdict == "different":
            return Outcome(FAIL, "is not equal to the expression for your variant.")
        return Outcome(UNDECIDED, UNDECIDED_REASON)
