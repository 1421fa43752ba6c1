"""What students may be told, and the checks that hold every text they read to it.

The feedback policy
-------------------
- **Instant feedback** (`chapter serve`, seconds after a submission, while attempts remain)
  names which answer is wrong and, where a declared mistake reproduces it, the idea that mistake
  misses: "the fp32 master copy", "the partial batch at the end of an epoch". It never gives a
  value, a length, a direction, an offset, a factor, a unit conversion or a formula: with a few
  attempts, any of these turns a wrong answer into the right one without the idea.
- **Released feedback** (nbgrader's feedback pages, released after the deadline) may say more:
  how the mistake arises, the step it skips, the formula.
- So each declared mistake carries both texts: `Mistake.instant` and `Mistake.feedback`.
- **Flashcards** are read before and while students work: no card holds a reference value of its
  item in any usual printed form, nor an expression equal to one of its symbolic keys.
- **An item's prose** (the markdown and the given code of its released notebook) does not state
  an expression its checks grade, except a worked problem's: it derives its expressions in the
  open on a worked example, and the student then does their own variant.

The words an instant text may not use are kept here, in REFUSED_WORDS, and nowhere else.
`chapter gate` refuses an item whose texts break any of these rules (`gate.giveaway_reasons`).

Formulas are found in prose by `formulas`: runs of the item's symbols, numbers and operators,
written as the notebooks and cards write them (LaTeX between dollars, or plain text with Greek
letters, `·`, `×`, `√`, `²`), are rewritten into Python syntax, turned into sympy's `srepr`
text, and read by the grading library's own safe reader (`symbolic.from_srepr`); a candidate
that agrees with a symbolic key at random points is then compared as mathematics
(`symbolic.compare`).
"""
from __future__ import annotations

import ast
import functools
import math
import random
import re
from dataclasses import dataclass

import sympy

from graders import symbolic

# --- instant texts ---------------------------------------------------------------------
REFUSED_WORDS = {
    "a direction or an offset": (
        "too", "large", "larger", "small", "smaller", "big", "bigger", "more", "fewer", "less",
        "high", "higher", "low", "lower", "short", "shorter", "long", "longer", "over", "under",
        "above", "below", "up", "down", "increase", "increased", "decrease", "decreased", "extra",
        "excess", "missing", "forgot", "forgotten", "omitted", "left out", "instead", "rather than",
        "not", "add", "added", "subtract", "subtracted", "remove", "removed", "off by",
        "early", "late", "earlier", "later", "before", "after", "next", "previous",
    ),
    "a factor": (
        "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "twelve", "sixteen",
        "hundred", "thousand", "million", "billion", "trillion", "half", "halve", "halved",
        "twice", "double", "doubled", "triple", "third", "thirds", "quarter", "quarters", "square",
        "squared", "cube", "cubed", "root", "reciprocal", "inverse", "inverted", "invert",
        "swapped", "swap", "flipped", "factor", "power", "powers", "times", "fold",
        "way round", "wrong way", "other way", "upside down", "reversed", "opposite",
    ),
    "a unit conversion": (
        "convert", "converted", "conversion", "divide", "divided", "division", "multiply",
        "multiplied", "percent", "percentage", "per cent", "gb", "gib", "mb", "mib", "kb", "kib",
        "tb", "tib", "pb", "seconds", "minutes", "hours", "days", "ms",
    ),
}
_REFUSED = re.compile(r"(?<![\w-])(" + "|".join(
    re.escape(word).replace(r"\ ", r"\s+") for words in REFUSED_WORDS.values()
    for word in sorted(words, key=len, reverse=True)) + r")(?![\w-])", re.IGNORECASE)
_KIND = {word: kind for kind, words in REFUSED_WORDS.items() for word in words}
# a numeral standing alone (fp32, bf16, E4M3 and GPT-2 are names, not numbers)
_NUMERAL = re.compile(r"(?<![\w.\-])\d+(?:[.,]\d+)*(?![\w])")
_FORMULA_SIGNS = set("/×·*^=√²³⁻<>≈≤≥%+−")


def instant_reasons(text: str) -> list[str]:
    """Why an instant feedback text breaks the policy (empty when it keeps it)."""
    if not isinstance(text, str) or not text.strip():
        return ["has no instant text"]
    reasons = []
    for match in _REFUSED.finditer(text):
        word = match.group(1)
        kind = _KIND.get(word.lower()) or _KIND.get(re.sub(r"\s+", " ", word.lower()), "a refused word")
        reasons.append(f"gives {kind} ({word!r})")
    for match in _NUMERAL.finditer(text):
        reasons.append(f"gives a number ({match.group(0)!r})")
    signs = sorted(set(text) & _FORMULA_SIGNS)
    if signs:
        reasons.append(f"writes a formula ({' '.join(signs)!r})")
    return reasons


# --- printed values ----------------------------------------------------------------------
_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
_SCALES = {
    "%": (0.01,), "percent": (0.01,), "per cent": (0.01,),
    "k": (1e3,), "thousand": (1e3,), "m": (1e6,), "million": (1e6,), "b": (1e9,), "billion": (1e9,),
    "t": (1e12,), "trillion": (1e12,),
    "kb": (1e3,), "mb": (1e6,), "gb": (1e9,), "tb": (1e12,), "pb": (1e15,),
    "kib": (2.0**10,), "mib": (2.0**20,), "gib": (2.0**30,), "tib": (2.0**40,),
}
_VALUE = re.compile(
    r"(?<![\w.\-])(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?P<frac>\.\d+)?"
    r"(?:(?:\s*[eE](?P<e>[-+−]?\d+))|(?:\s*[×x·]\s*10\s*(?:\^\s*\{?(?P<p>[-+−]?\d+)\}?|(?P<s>[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+))))?"
    r"(?:\s*(?P<unit>%|per cent|percent|thousand|million|billion|trillion|[kmgtp]i?b|[kmbt])(?![\w]))?"
    r"(?![\w])", re.IGNORECASE)


@dataclass(frozen=True)
class Printed:
    text: str
    value: float
    half_unit: float    # half a unit in the last printed digit: what rounding hides
    digits: int         # significant digits printed


def printed_values(text: str) -> list[Printed]:
    """Every number `text` prints, with each value it may stand for (25% is 0.25 and 25;
    4 GB is 4e9; 1.6e9 and 1.6 × 10⁹ are 1.6e9)."""
    found = []
    for m in _VALUE.finditer(text):
        digits = m.group("int").replace(",", "") + (m.group("frac") or "")
        exponent = m.group("e") or m.group("p") or (m.group("s") or "").translate(_SUPERSCRIPT) or "0"
        try:
            power = 10.0 ** int(exponent.replace("−", "-"))
        except (ValueError, OverflowError):
            continue
        base = float(digits) * power
        decimals = len(m.group("frac") or "") - 1 if m.group("frac") else 0
        half = 0.5 * 10.0 ** (-decimals) * power
        significant = len(digits.replace(".", "").lstrip("0")) or 1
        scales = (1.0,) + _SCALES.get((m.group("unit") or "").lower(), ())
        for scale in dict.fromkeys(scales):
            found.append(Printed(m.group(0), base * scale, half * scale, significant))
    return found


TRIVIAL = (0.0, 1.0, -1.0)   # values any prose says ("none", "one", "the whole"); never a give-away


def gives_value(printed: Printed, reference: float, rtol: float) -> bool:
    """Whether a printed number hands over `reference`: it is the reference within the check's
    own tolerance, or the reference rounded for print to two significant digits or more."""
    if not math.isfinite(reference) or reference in TRIVIAL or printed.value in TRIVIAL:
        return False
    gap = abs(printed.value - reference)
    return gap <= rtol * abs(reference) or (printed.digits >= 2 and gap <= printed.half_unit)


# --- formulas in prose -----------------------------------------------------------------
_GREEK = {
    "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "η": "eta", "θ": "theta",
    "κ": "kappa", "λ": "lambda", "μ": "mu", "ν": "nu", "ρ": "rho", "σ": "sigma", "τ": "tau",
    "φ": "phi", "ψ": "psi", "ω": "omega", "Δ": "Delta", "Θ": "Theta", "Σ": "Sigma", "Ψ": "Psi",
    "Φ": "Phi", "Ω": "Omega", "ℓ": "ell", "π": "pi",
}
_SUBSCRIPT = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")
_FUNCTIONS = {"sqrt": "sqrt", "log": "log", "ln": "log", "exp": "exp", "cos": "cos", "sin": "sin",
              "max": "Max", "min": "Min"}
_LATEX_SPACES = re.compile(r"\\(?:left|right|big|Big|bigg|Bigg|[,;:! ]|quad|qquad|displaystyle)(?![a-zA-Z])")
_TOKEN = re.compile(r"\s*(?:(?P<num>\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)|(?P<name>[A-Za-z_][A-Za-z_0-9]*)"
                    r"|(?P<op>\*\*|[-+*/()])|(?P<other>\S))")
MAX_RUN = 40         # tokens of one run of mathematics tried as candidates


def _braced(text: str, start: int) -> tuple[str, int]:
    """The contents of the {...} group opening at `start` (or the one character or command
    there, with a \\text-like command's own group), and the index after it."""
    if text.startswith("\\", start):
        command = re.match(r"\\([a-zA-Z]+|.?)", text[start:])
        end = start + command.end()
        if command.group(1) in ("text", "mathrm", "operatorname", "mathit", "mathbf"):
            inside, end = _braced(text, end)
            return inside, end
        return text[start:end], end
    if start >= len(text) or text[start] != "{":
        return (text[start], start + 1) if start < len(text) else ("", start)
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start + 1:i], i + 1
    return text[start + 1:], len(text)


def latex_to_plain(tex: str) -> str:
    """LaTeX mathematics as the plain notation `plain_to_python` reads."""
    tex = _LATEX_SPACES.sub(" ", tex)
    out, i = [], 0
    while i < len(tex):
        if tex.startswith("\\frac", i) or tex.startswith("\\dfrac", i) or tex.startswith("\\tfrac", i):
            i = tex.index("c", i) + 1
            top, i = _braced(tex, i)
            bottom, i = _braced(tex, i)
            out.append(f"(({latex_to_plain(top)})/({latex_to_plain(bottom)}))")
        elif tex.startswith("\\sqrt", i):
            i += 5
            root = None
            if i < len(tex) and tex[i] == "[":
                end = tex.find("]", i)
                root, i = tex[i + 1:end], end + 1
            inside, i = _braced(tex, i)
            inner = latex_to_plain(inside)
            out.append(f"(({inner})**(1/({root})))" if root else f"sqrt({inner})")
        elif tex.startswith(("\\text", "\\mathrm", "\\operatorname", "\\mathit", "\\mathbf"), i):
            i = re.match(r"\\[a-zA-Z]+", tex[i:]).end() + i
            inside, i = _braced(tex, i)
            out.append(inside)
        elif tex[i] == "\\":
            name = re.match(r"\\([a-zA-Z]+|.?)", tex[i:]).group(1)
            i += 1 + len(name)
            out.append({"cdot": "*", "times": "*", "ln": " log ", "log": " log ", "exp": " exp ",
                        "cos": " cos ", "sin": " sin ", "max": "max", "min": "min", "pi": " pi ",
                        "infty": " ? ", "approx": " ? ", "le": " ? ", "ge": " ? ", "to": " ? ",
                        "sum": " ? ", "prod": " ? ", "mid": " ? ", "{": "(", "}": ")",
                        "lvert": " ? ", "rvert": " ? "}.get(name, f" {name} "))
        elif tex[i] in "^_":
            mark = tex[i]
            inside, i = _braced(tex, i + 1)
            if mark == "^":
                out.append(f"**({latex_to_plain(inside)})")
            else:
                out.append("_" + re.sub(r"\W", "", latex_to_plain(inside).replace(" ", "")))
        elif tex[i] in "{}":
            out.append("(" if tex[i] == "{" else ")")
            i += 1
        else:
            out.append(tex[i])
            i += 1
    return "".join(out)


def plain_to_python(text: str) -> str:
    """Plain mathematics (Greek letters, ·, ×, −, √, ², subscript digits) in Python's spelling."""
    text = text.translate(_SUBSCRIPT)
    for sign, spelled in (("·", "*"), ("×", "*"), ("⋅", "*"), ("−", "-"), ("–", "-"), ("^", "**"),
                          ("²", "**2"), ("³", "**3"), ("⁻¹", "**(-1)"), ("÷", "/")):
        text = text.replace(sign, spelled)
    text = re.sub(r"√\s*([A-Za-z0-9_α-ωΑ-Ωℓ]+)", r"sqrt(\1)", text).replace("√", "sqrt")
    text = re.sub(r"[α-ωΑ-Ωℓ]", lambda m: f" {_GREEK.get(m.group(0), m.group(0))} ", text)
    return re.sub(r"(?<=\w) +_", "_", text)


def _symbol_of(word: str, allowed: dict) -> str | None:
    for name in (word, word.replace("_", "")):
        if name in allowed:
            return name
    return None


def _split_word(word: str, allowed: dict) -> list[str] | None:
    """A word read as a product of the allowed symbols (δΘ, bP), or None."""
    if _symbol_of(word, allowed):
        return [_symbol_of(word, allowed)]
    if len(word) > 4 or "_" in word:
        return None
    parts = [_symbol_of(ch, allowed) for ch in word]
    return parts if all(parts) else None


def _runs(python_text: str, allowed: dict) -> list[list[tuple[str, str]]]:
    """Runs of mathematical tokens (kind, text): numbers, the allowed symbols, functions, operators."""
    runs, current = [], []
    for m in _TOKEN.finditer(python_text):
        kind = m.lastgroup
        text = m.group(kind)
        if kind == "name":
            if text in _FUNCTIONS:
                current.append(("fn", _FUNCTIONS[text]))
                continue
            if text == "pi":
                current.append(("name", text))
                continue
            parts = _split_word(text, allowed)
            if parts:
                current.extend(("name", part) for part in parts)
                continue
            kind = "other"
        if kind == "other":
            if current:
                runs.append(current)
            current = []
            continue
        current.append((kind, text))
    if current:
        runs.append(current)
    return [run[:MAX_RUN] for run in runs]


def _joined(tokens) -> str:
    """Python text for tokens, with the products that juxtaposition writes (2δΘ, (n−1)(p))."""
    out, before = [], None
    for kind, text in tokens:
        operand_start = kind in ("num", "name", "fn") or text == "("
        if before is not None and operand_start and (before in ("num", "name") or before == ")"):
            out.append("*")
        out.append(f"sym_{text}" if kind == "name" else text)   # `lambda` is a Python keyword
        before = ")" if text == ")" else (kind if kind != "op" else None)
        if kind == "fn":
            before = None
    return " ".join(out)


def _srepr(node) -> str:
    """sympy `srepr` text for a Python expression tree of arithmetic only; ValueError otherwise."""
    if isinstance(node, ast.BinOp):
        left, right = _srepr(node.left), _srepr(node.right)
        op = type(node.op)
        if op is ast.Add:
            return f"Add({left}, {right})"
        if op is ast.Sub:
            return f"Add({left}, Mul(Integer(-1), {right}))"
        if op is ast.Mult:
            return f"Mul({left}, {right})"
        if op is ast.Div:
            return f"Mul({left}, Pow({right}, Integer(-1)))"
        if op is ast.Pow:
            return f"Pow({left}, {right})"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _srepr(node.operand)
        return f"Mul(Integer(-1), {inner})" if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        if isinstance(node.value, int):
            return f"Integer({node.value})"
        fraction = sympy.Rational(repr(node.value))
        return f"Rational({fraction.p}, {fraction.q})"
    if isinstance(node, ast.Name):
        name = node.id.removeprefix("sym_")
        return "pi" if name == "pi" else f"Symbol({name!r})"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args and not node.keywords:
        return f"{node.func.id}({', '.join(_srepr(a) for a in node.args)})"
    raise ValueError("not arithmetic")


def _subtrees(node):
    yield node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.expr):
            yield from _subtrees(child)


@functools.lru_cache(maxsize=64)
def formulas(text: str, symbols: tuple[str, ...]) -> tuple[sympy.Expr, ...]:
    """The formulas in the item's notation that `text` writes, and each of their parts
    (remembered: an item's cards and prose are read once for all its symbolic keys).

    `text` may mix prose, LaTeX between dollars and plain notation; only runs made of the
    item's symbols, numbers, functions and operators are read, through `symbolic.from_srepr`."""
    allowed = symbolic.symbols_for(symbols)
    plain = re.sub(r"\$\$(.+?)\$\$|\$([^$\n]+)\$",
                   lambda m: " ; " + latex_to_plain(m.group(1) or m.group(2)) + " ; ", text, flags=re.DOTALL)
    found, seen = [], set()
    for run in _runs(plain_to_python(plain), allowed):
        i = 0
        while i < len(run):
            for j in range(len(run), i, -1):
                try:
                    tree = ast.parse(_joined(run[i:j]), mode="eval").body
                except (SyntaxError, ValueError, RecursionError):
                    continue
                for part in _subtrees(tree):
                    try:
                        expr = symbolic.from_srepr(_srepr(part), allowed)
                    except (ValueError, symbolic.ExpressionError):
                        continue
                    key = sympy.srepr(expr)
                    if expr.free_symbols and key not in seen:
                        seen.add(key)
                        found.append(expr)
                i = j - 1
                break
            i += 1
    return tuple(found)


def _close_at_points(a: sympy.Expr, b: sympy.Expr, ranges: dict, points: int = 3) -> bool:
    """A cheap test in this process (the texts are the project's own): do `a` and `b` agree at a
    few random points? Only then is the bounded, exact comparison worth running."""
    rng = random.Random(8)
    symbols = a.free_symbols | b.free_symbols
    for _ in range(points):
        at = {}
        for sym in symbols:
            low, high = (sympy.Rational(str(v)) for v in ranges.get(sym.name, (0.3, 4)))
            at[sym] = low + (high - low) * sympy.Rational(rng.randint(1, 999), 1000)
        try:
            x, y = complex(a.evalf(20, subs=at)), complex(b.evalf(20, subs=at))
        except (TypeError, ValueError, ZeroDivisionError, OverflowError):
            return False
        if not (math.isfinite(abs(x)) and math.isfinite(abs(y))) or abs(x - y) > 1e-7 * max(abs(x), abs(y), 1e-30):
            return False
    return True


def states_expression(text: str, key: str, check, references) -> sympy.Expr | None:
    """The formula in `text` equal, as mathematics, to one of the symbolic key's references, or None."""
    ranges = dict(getattr(check, "ranges", ()) or ())
    allowed = symbolic.symbols_for(check.symbols)
    targets = []
    for ref in references:
        try:
            targets.append(symbolic.from_srepr(sympy.srepr(ref), allowed))
        except (ValueError, symbolic.ExpressionError):
            continue
    for candidate in formulas(text, tuple(check.symbols)):
        for target in targets:
            if not candidate.free_symbols <= target.free_symbols or not _close_at_points(candidate, target, ranges):
                continue
            if symbolic.compare(target, candidate, rtol=check.rtol, ranges=ranges).verdict == "equal":
                return candidate
    return None
