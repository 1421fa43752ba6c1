"""Which students' answers are unusually alike: a ranked table for a person to read, never a verdict.

`chapter report ASSIGNMENT` writes, beside the class report, `similarity.html` and
`similarity.csv`. They come from the students' own notebooks (the submitted folder; the
autograded one for a student with no submitted folder), and from nothing else:

- answers are keyed on nbgrader's stable cell ids (`metadata.nbgrader.grade_id` of the
  solution cells), so cell i of one student is compared with the same cell of another
  whatever else they moved, added or deleted;
- code: each answer cell is fingerprinted by copydetect's winnowing (names, strings and
  comments are normalised away, so renamed variables do not hide a copy), with the code
  the release gives everyone in that cell removed as boilerplate, and with the
  fingerprints that many students share removed too (a common idiom is no sign of
  anything; MOSS does the same). A cell's similarity is copydetect's overlap, the mean
  of the two sides' shares;
- symbolic answers: an assignment `name = expression` whose right side is plain
  arithmetic over names is rebuilt as a sympy expression from its syntax tree (never
  evaluated as Python: only arithmetic, names, numbers and a few named functions are
  accepted, bounded in size and depth; anything else is skipped), and compared as
  mathematics by its values at fixed random points (a randomized identity test: for
  polynomials Schwartz-Zippel bounds the chance that unequal ones agree there; for the
  rest it is a strong heuristic, not a proof). Two students
  with the same expression weigh by how rare it is in the class: one only they wrote
  weighs 1, one more than COMMON_SHARE of the class wrote (the right answer, most
  often) weighs 0, and a match within one variant weighs SAME_VARIANT of one across
  different variants (each variant has its own numbers, so alike across variants is
  less likely by chance);
- a pair's score: the mean code similarity over the code cells both answered (each cell
  weighing as much as its normalised code is long: a function copied says more than a
  one-line formula written alike), and the mean symbolic weight over the symbolic
  answers both gave, mixed CODE_WEIGHT to the rest (0 = nothing alike, 1 = every answer alike). Pairs are ranked; a pair whose score
  stands far out from the class's (robust z-score against the median of all pairs)
  is marked "unusually alike - look closer". Whether anything was copied is a person's
  question: the page shows the alike cells side by side for that.
"""
from __future__ import annotations

import ast
import csv
import difflib
import hashlib
import html
import json
import math
import statistics
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

CELL_LIMIT = 32 * 1024          # characters of one answer cell compared; the rest is cut, and said
STUDENT_LIMIT = 128 * 1024      # characters of one student's answer cells in all (tokenizing 64 KiB takes ~3 s)
NOTEBOOK_LIMIT = 16 << 20        # bytes of a notebook file read; a larger one is skipped, and said
K = 15                          # copydetect's noise threshold: k-grams of normalised code
WINDOW = 4                      # winnowing window (a copy of K + WINDOW - 1 characters is always found)
COMMON_SHARE = 0.1              # a fingerprint in more than this share of the class (and ...
COMMON_MIN = 3                  # ... more than this many students) is a common idiom, not evidence
EXPR_NODES = 400                # syntax nodes of one symbolic answer
EXPR_DEPTH = 40                 # nesting depth of one symbolic answer
EXPR_CONSTANT = 1e15            # largest number literal accepted
SYMBOLIC_SECONDS = 60.0         # the symbolic comparison of a whole class stops after this, and says so
POINTS = 2                      # random points each expression is evaluated at
SAME_VARIANT = 0.8              # a symbolic match within one variant, against one across variants
CODE_WEIGHT = 0.7               # of a pair's score; the symbolic answers weigh the rest (a few short answers
                                # alike by chance are likelier than whole cells of code alike by chance)
STAND_OUT_Z = 6.0               # robust z-score from which a pair is "unusually alike"
STAND_OUT_MIN = 0.25            # ... and at least this score
MIN_CLASS = 10                  # fewer students, and no pair is marked: "unusual" needs a class to compare with
TOP = 25                        # pairs in the table and the CSV
SHOWN = 10                      # top pairs with a side-by-side view
COLUMNS = ["rank", "student a", "student b", "score", "code", "symbolic", "cells alike", "cells compared",
           "unusually alike"]


# ============================================================================ reading
@dataclass
class Answers:
    """Every student's answer cells of one assignment, and the release's."""
    assignment: str
    cells: dict = field(default_factory=dict)       # student -> {(notebook, grade_id): source}
    templates: dict = field(default_factory=dict)   # (notebook, grade_id) -> the release's source
    variants: dict = field(default_factory=dict)    # (student, notebook) -> variant label
    notes: list = field(default_factory=list)       # what was cut or skipped, in words


def _source(cell) -> str | None:
    source = cell.get("source") if isinstance(cell, dict) else None
    if isinstance(source, list) and all(isinstance(s, str) for s in source):
        return "".join(source)
    return source if isinstance(source, str) else None


def answer_cells(path: Path, notes: list, who: str) -> dict:
    """{grade_id: source} of the solution cells of the notebook at `path`; {} (and a note) if unreadable."""
    try:
        size = path.stat().st_size
        if size > NOTEBOOK_LIMIT:
            notes.append(f"{who}: {path.name} is {size >> 20} MiB, over the {NOTEBOOK_LIMIT >> 20} MiB read; "
                         "not compared")
            return {}
        with open(path, "rb") as fh:
            nb = json.loads(fh.read().decode("utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError) as error:
        notes.append(f"{who}: {path.name} is not a readable notebook ({type(error).__name__}); not compared")
        return {}
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        notes.append(f"{who}: {path.name} has no list of cells; not compared")
        return {}
    found = {}
    for cell in cells:
        meta = cell.get("metadata") if isinstance(cell, dict) else None
        grading = meta.get("nbgrader") if isinstance(meta, dict) else None
        if not isinstance(grading, dict) or not grading.get("solution") or cell.get("cell_type") != "code":
            continue
        grade_id, source = grading.get("grade_id"), _source(cell)
        if not isinstance(grade_id, str) or source is None or grade_id in found:
            continue
        if len(source) > CELL_LIMIT:
            notes.append(f"{who}: {path.stem} cell {grade_id} has {len(source)} characters; "
                         f"only the first {CELL_LIMIT} are compared")
            source = source[:CELL_LIMIT]
        found[grade_id] = source
    return found


def _variant_assignment(notebook: str) -> str | None:
    """The assignment id a registered problem draws its variants under (its own, if it declares one)."""
    from graders import problems
    try:
        return getattr(problems.get(notebook), "assignment", None)
    except Exception:  # noqa: BLE001 - not a registered problem (or one that fails to import): the assignment's
        return None


def read_answers(root, assignment: str) -> Answers:
    """The answer cells of `assignment` in the course at `root`, where nbgrader's configuration puts them."""
    from types import SimpleNamespace

    from graders.engine.course_dir import course_directory, discover
    from graders.variants import variant_for
    root = Path(root).resolve()
    coursedir = course_directory(root)
    excluded = [s for s in (coursedir.student_id_exclude or "").split(",") if s]
    answers = Answers(assignment)
    release = Path(coursedir.format_path(coursedir.release_directory, ".", assignment))
    for path in sorted(release.glob("*.ipynb")):
        for grade_id, source in answer_cells(path, answers.notes, "release").items():
            answers.templates[(path.stem, grade_id)] = source
    drawn_for = {path.stem: _variant_assignment(path.stem) or assignment for path in release.glob("*.ipynb")}
    folders = {}
    for step in (coursedir.autograded_directory, coursedir.submitted_directory):   # submitted wins
        template = coursedir.format_path(step, "{student}", assignment)
        for student in discover(SimpleNamespace(submitted=template, excluded_students=excluded)):
            folders[student] = Path(template.format(student=student))
    for student in sorted(folders):
        cells = answers.cells[student] = {}
        room = STUDENT_LIMIT
        for path in sorted(folders[student].glob("*.ipynb")):
            if path.is_symlink():
                answers.notes.append(f"{student}: {path.name} is a link; not compared")
                continue
            for grade_id, source in answer_cells(path, answers.notes, student).items():
                if len(source) > room:
                    answers.notes.append(f"{student}: over {STUDENT_LIMIT} characters of answers in all; "
                                         f"{path.stem} cell {grade_id} is cut to {room}")
                    source = source[:room]
                room -= len(source)
                cells[(path.stem, grade_id)] = source
        for notebook in {nb for nb, _ in cells}:
            answers.variants[(student, notebook)] = variant_for(student, drawn_for.get(notebook, assignment))
    return answers


# ============================================================================ symbolic answers
class _Skip(Exception):
    """Not plain arithmetic, or too large: this statement is not compared as mathematics."""


def _functions():
    import sympy
    one = {"sqrt": sympy.sqrt, "exp": sympy.exp, "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan,
           "abs": sympy.Abs, "Abs": sympy.Abs, "floor": sympy.floor, "ceiling": sympy.ceiling,
           "ceil": sympy.ceiling, "tanh": sympy.tanh, "log2": lambda x: sympy.log(x, 2),
           "log10": lambda x: sympy.log(x, 10)}
    table = {name: (f, 1, 1) for name, f in one.items()}
    table.update({"log": (sympy.log, 1, 2), "min": (sympy.Min, 2, 4), "Min": (sympy.Min, 2, 4),
                  "max": (sympy.Max, 2, 4), "Max": (sympy.Max, 2, 4),
                  "Rational": (lambda a, b: a / b, 2, 2)})
    return table


MODULES = {"sympy", "sp", "math", "np", "numpy", "torch"}   # `sp.sqrt(x)` is read as sqrt(x)


class _Builder:
    """Builds a sympy expression from a syntax tree, node by node, within EXPR_NODES and EXPR_DEPTH."""

    def __init__(self, env: dict):
        import sympy
        self.sympy, self.env, self.nodes, self.functions = sympy, env, 0, _functions()

    def build(self, node, depth: int = 0):
        self.nodes += 1
        if self.nodes > EXPR_NODES or depth > EXPR_DEPTH:
            raise _Skip("too large")
        sp = self.sympy
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise _Skip("not a number")
            if not math.isfinite(value) or abs(value) > EXPR_CONSTANT:
                raise _Skip("number out of range")
            return sp.Float(value) if isinstance(value, float) or value != int(value) else sp.Integer(value)
        if isinstance(node, ast.Name):
            if node.id in self.env:
                return self.env[node.id]
            if len(node.id) > 64:
                raise _Skip("name too long")
            return sp.Symbol(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = self.build(node.operand, depth + 1)
            return -inner if isinstance(node.op, ast.USub) else inner
        if isinstance(node, ast.BinOp):
            a, b = self.build(node.left, depth + 1), self.build(node.right, depth + 1)
            op = node.op
            if isinstance(op, ast.Add):
                return a + b
            if isinstance(op, ast.Sub):
                return a - b
            if isinstance(op, ast.Mult):
                return a * b
            if isinstance(op, ast.Div):
                return a / b
            if isinstance(op, ast.FloorDiv):
                return sp.floor(a / b)
            if isinstance(op, ast.Pow):
                # never let sympy compute an exact power of two numbers (2**10**9): a float power instead
                if a.is_Number and b.is_Number:
                    return sp.Pow(sp.Float(a), sp.Float(b))
                return sp.Pow(a, b)
            raise _Skip("operator")
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in MODULES:
                name = func.attr
            elif isinstance(func, ast.Name):
                name = func.id
            else:
                raise _Skip("call")
            if name not in self.functions or node.keywords:
                raise _Skip("call")
            f, least, most = self.functions[name]
            if not least <= len(node.args) <= most:
                raise _Skip("call")
            return f(*[self.build(arg, depth + 1) for arg in node.args])
        raise _Skip(type(node).__name__)


def _point_value(name: str, point: int) -> float:
    """A fixed pseudo-random value in (1.1, 3.1) for symbol `name` at point `point`, the same for everyone."""
    digest = hashlib.sha256(f"{point}:{name}".encode()).digest()
    return 1.1 + int.from_bytes(digest[:6], "big") / float(1 << 48) * 2.0


def fingerprint(expr) -> tuple | None:
    """The expression's values at POINTS fixed points (9 significant digits), or None if not a finite number."""
    import sympy
    values = []
    for point in range(POINTS):
        subs = {s: sympy.Float(_point_value(s.name, point)) for s in expr.free_symbols}
        try:
            value = complex(expr.xreplace(subs).evalf(15))
        except Exception:  # noqa: BLE001 - sympy may raise anything on odd input: the answer is not compared
            return None
        if not (math.isfinite(value.real) and math.isfinite(value.imag)):
            return None
        values.append(f"{value.real:.9g}" + (f"{value.imag:+.9g}j" if abs(value.imag) > 1e-12 else ""))
    return tuple(values)


@dataclass
class Expression:
    target: str
    text: str          # the student's statement, as written
    print: str         # the sympy expression, printed
    key: tuple         # fingerprint


def expressions(source: str) -> dict:
    """{target: Expression} for the top-level `name = arithmetic` statements of a cell with a symbol in them.

    Earlier assignments in the cell are substituted (a helper name of the student's own is
    inlined), so what is compared is the expression in the notebook's given names. The
    last assignment to a name counts. Anything not plain arithmetic is skipped."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    env, found = {}, {}
    for statement in tree.body[:500]:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        else:
            continue
        if not isinstance(target, ast.Name):
            continue
        try:
            expr = _Builder(env).build(value)
        except Exception:  # noqa: BLE001 - _Skip, or whatever sympy raises on odd input: not compared
            env.pop(target.id, None)
            found.pop(target.id, None)
            continue
        env[target.id] = expr
        if not expr.free_symbols or expr.is_Symbol:
            found.pop(target.id, None)
            continue
        key = fingerprint(expr)
        if key is None:
            found.pop(target.id, None)
            continue
        text = (ast.get_source_segment(source, statement) or "")[:400]
        found[target.id] = Expression(target.id, text, str(expr)[:400], key)
    return found


# ============================================================================ comparing
@dataclass
class CellMatch:
    notebook: str
    grade_id: str
    kind: str              # "code" or "symbolic"
    similarity: float
    left: str = ""         # html of student a's side
    right: str = ""
    detail: str = ""


@dataclass
class Pair:
    a: str
    b: str
    code: float = 0.0          # sum of code similarities, each times its cell's size
    code_size: float = 0.0     # sum of the sizes of the code cells both answered
    code_cells: int = 0        # code cells both answered
    symbolic: float = 0.0      # sum of symbolic weights
    symbolic_answers: int = 0  # symbolic answers both gave
    matches: list = field(default_factory=list)
    stands_out: bool = False

    @property
    def compared(self) -> int:
        return self.code_cells + self.symbolic_answers

    @property
    def score(self) -> float:
        """CODE_WEIGHT x the code score + (1 - CODE_WEIGHT) x the symbolic one; the one kind alone if only it was compared."""
        if self.code_cells and self.symbolic_answers:
            return CODE_WEIGHT * self.code_score + (1 - CODE_WEIGHT) * self.symbolic_score
        return self.code_score if self.code_cells else self.symbolic_score

    @property
    def code_score(self) -> float:
        return self.code / self.code_size if self.code_size else 0.0

    @property
    def symbolic_score(self) -> float:
        return self.symbolic / self.symbolic_answers if self.symbolic_answers else 0.0

    @property
    def alike(self) -> int:
        return sum(1 for m in self.matches if m.similarity >= 0.5)


@dataclass
class Similarity:
    assignment: str
    students: int
    pairs: list                     # the top pairs, best first
    pairs_scored: int               # pairs with any likeness at all
    median: float
    spread: float
    notes: list
    seconds: dict


def own_code(source: str, template: str) -> str:
    """`source` without the lines it keeps of the release's `template` (matched in order, blanks aside).

    copydetect's boilerplate removal drops the template's fingerprints, but the k-grams that
    straddle the end of the given code and the start of a student's own still match between
    any two students; leaving the given lines out first removes those too."""
    if not template.strip():
        return source
    lines = source.splitlines(keepends=True)
    given = [line.strip() for line in template.splitlines()]
    matcher = difflib.SequenceMatcher(None, [line.strip() for line in lines], given, autojunk=False)
    drop = set()
    for block in matcher.get_matching_blocks():
        drop.update(range(block.a, block.a + block.size))
    return "".join(line for i, line in enumerate(lines) if i not in drop or not line.strip())


def _code_fingerprints(answers: Answers, notes: list, own: dict) -> dict:
    """{cell: {student: Fingerprint}} with the release's code and the class's common idioms left out.

    `own` is filled with {student: {cell: the code fingerprinted}}."""
    from copydetect.utils import get_token_coverage
    import numpy as np
    by_cell = defaultdict(dict)
    boiler, seen = {}, {}
    for cell, template in answers.templates.items():
        boiler[cell] = np.array(list(_fingerprint(template).hashes), dtype=np.int64)
    for student, cells in answers.cells.items():
        for cell, source in cells.items():
            source = own[student][cell] = own_code(source, answers.templates.get(cell, ""))
            if not source.strip():
                continue           # untouched: nothing of the student's own
            if (cell, source) in seen:     # the same text (a one-line answer many wrote alike): fingerprinted once
                fp = seen[(cell, source)]
                if fp is not None and fp.hashes:
                    by_cell[cell][student] = fp
                continue
            seen[(cell, source)] = None
            try:
                fp = seen[(cell, source)] = _fingerprint(source, boiler.get(cell))
            except Exception as error:  # noqa: BLE001 - a tokenizer failure on hostile text skips one cell
                notes.append(f"{student}: cell {cell[1]} of {cell[0]} could not be fingerprinted "
                             f"({type(error).__name__}); not compared")
                continue
            if fp.hashes:
                by_cell[cell][student] = fp
    for cell, prints in by_cell.items():
        counts = Counter(h for fp in prints.values() for h in fp.hashes)
        limit = max(COMMON_MIN, COMMON_SHARE * len(prints))
        common = {h for h, n in counts.items() if n > limit}
        if not common:
            continue
        for fp in set(prints.values()):
            if fp.hashes & common:
                fp.hashes = fp.hashes - common
                fp.hash_idx = {h: i for h, i in fp.hash_idx.items() if h not in common}
                fp.token_coverage = get_token_coverage(fp.hash_idx, K, len(fp.filtered_code))
    return by_cell


@dataclass(eq=False)     # compared by identity: one fingerprint may stand for many students' same text
class Fingerprint:
    """What copydetect's `compare_files` reads of one answer cell (its `CodeFingerprint`'s fields)."""
    filtered_code: str
    offsets: object       # numpy array: characters removed by filtering, by position
    hashes: set
    hash_idx: dict        # hash -> positions in filtered_code
    token_coverage: int
    k: int = K


def _fingerprint(source: str, boilerplate=None) -> Fingerprint:
    """copydetect's fingerprint of `source` (its tokenizer, its winnowing), with k-gram hashes that are
    the same in every process, and without the `boilerplate` hashes (wherever they occur).

    copydetect's own `CodeFingerprint` hashes k-grams with Python's `hash`, which each process salts
    afresh (PYTHONHASHSEED). Winnowing keeps the smallest hash of each window, so which k-grams were
    kept, and so every score, changed from one `chapter report` to the next: a planted copy's code
    score ranged from 0.59 to 0.76 over eight seeds."""
    from copydetect.utils import filter_code, get_token_coverage, winnow
    import numpy as np
    code, offsets = filter_code(source, "cell.py", "python")
    grams = np.array([_kgram_hash(code[i:i + K]) for i in range(len(code) - K + 1)], dtype=np.int64)
    if len(grams):
        hashes, where = winnow(grams, window_size=WINDOW, remove_duplicates=False)
    else:
        hashes, where = grams, np.zeros(0, dtype=np.int64)
    if boilerplate is not None and len(boilerplate):
        kept = ~np.isin(hashes, boilerplate)
        hashes, where = hashes[kept], where[kept]
    positions = defaultdict(list)
    for value, at in zip(hashes.tolist(), where.tolist()):
        positions[value].append(at)
    return Fingerprint(code, offsets, set(positions), dict(positions), get_token_coverage(positions, K, len(code)))


def _kgram_hash(gram: str) -> int:
    """A signed 64-bit hash of one k-gram, the same in every process."""
    digest = hashlib.blake2b(gram.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def _size(one, other) -> float:
    """A code cell's weight in a pair's code score: the mean length of the two normalised codes."""
    return (len(one.filtered_code) + len(other.filtered_code)) / 2


def _mark(source: str, slices) -> str:
    from copydetect.utils import highlight_overlap
    if slices is None or len(slices) == 0 or slices.shape[-1] == 0:
        return html.escape(source)
    marked, _ = highlight_overlap(source, slices, "<mark>", "</mark>", escape_html=True)
    return marked


def compare(answers: Answers, top: int = TOP, shown: int = SHOWN, budget: float = SYMBOLIC_SECONDS) -> Similarity:
    """Every pair of students, scored and ranked; the top `top` kept, the first `shown` with their alike cells."""
    from copydetect import compare_files
    seconds, notes = {}, list(answers.notes)
    students = sorted(answers.cells)
    pairs: dict = {}

    def pair(a, b) -> Pair:
        a, b = min(a, b), max(a, b)
        if (a, b) not in pairs:
            pairs[(a, b)] = Pair(a, b)
        return pairs[(a, b)]

    mark = time.perf_counter()
    own = defaultdict(dict)
    prints = _code_fingerprints(answers, notes, own)
    code_hits = {}
    for cell, by_student in prints.items():
        index = defaultdict(list)
        for student, fp in by_student.items():
            for h in fp.hashes:
                index[h].append(student)
        candidates = {(min(x, y), max(x, y)) for group in index.values()
                      for i, x in enumerate(group) for y in group[i + 1:]}
        for a, b in candidates:
            overlap, (sa, sb), slices = compare_files(by_student[a], by_student[b])
            if overlap <= 0:
                continue
            value = min(1.0, (float(sa) + float(sb)) / 2)
            code_hits[(a, b, cell)] = (value, slices)
            pair(a, b).code += value * _size(by_student[a], by_student[b])
    seconds["code"] = time.perf_counter() - mark

    mark = time.perf_counter()
    found = defaultdict(dict)        # (notebook, grade_id, target) -> {student: Expression}
    parsed = {}
    stopped = False
    for student in students:
        if stopped:
            break
        for cell, source in answers.cells[student].items():
            if time.perf_counter() - mark > budget:
                notes.append(f"the symbolic comparison stopped after {budget:.0f} s; the students after "
                             f"{student} were compared by code only")
                stopped = True
                break
            if cell in answers.templates and source.strip() == answers.templates[cell].strip():
                continue
            if source not in parsed:          # the same text many wrote alike is parsed once
                parsed[source] = expressions(source)
            for target, expr in parsed[source].items():
                found[cell + (target,)][student] = expr
    template_keys = {}
    for cell, template in answers.templates.items():
        for target, expr in expressions(template).items():
            template_keys[cell + (target,)] = expr.key
    symbolic_hits = {}
    for where, by_student in found.items():
        groups = defaultdict(list)
        for student, expr in by_student.items():
            groups[expr.key].append(student)
        n = len(by_student)
        limit = max(COMMON_MIN, COMMON_SHARE * n)
        for key, group in groups.items():
            if len(group) < 2 or len(group) > limit or key == template_keys.get(where):
                continue          # alone, common in the class (the right answer, most often), or the template's
            weight = 1.0 - (len(group) - 2) / (limit - 1)
            for i, x in enumerate(group):
                for y in group[i + 1:]:
                    a, b = min(x, y), max(x, y)
                    differ = answers.variants.get((a, where[0])) != answers.variants.get((b, where[0]))
                    w = weight * (1.0 if differ else SAME_VARIANT)
                    symbolic_hits[(a, b, where)] = (w, len(group), n, differ)
                    if w > 0:
                        pair(a, b).symbolic += w
    seconds["symbolic"] = time.perf_counter() - mark

    # what each pair both answered: the denominators
    code_cells = {s: {c for c, fps in prints.items() if s in fps} for s in students}
    sym_cells = defaultdict(set)
    for where, by_student in found.items():
        for s in by_student:
            sym_cells[s].add(where)
    for p in pairs.values():
        both = code_cells.get(p.a, set()) & code_cells.get(p.b, set())
        p.code_cells = len(both)
        p.code_size = sum(_size(prints[c][p.a], prints[c][p.b]) for c in both)
        p.symbolic_answers = len(sym_cells[p.a] & sym_cells[p.b])

    total = len(students) * (len(students) - 1) // 2
    scores = sorted(p.score for p in pairs.values())
    everything = [0.0] * (total - len(scores)) + scores
    median = statistics.median(everything) if everything else 0.0
    mad = statistics.median([abs(x - median) for x in everything]) if everything else 0.0
    spread = max(1.4826 * mad, 0.02)
    ranked = sorted(pairs.values(), key=lambda p: (-p.score, p.a, p.b))[:top]
    for p in ranked:
        p.stands_out = (len(students) >= MIN_CLASS and p.score >= STAND_OUT_MIN
                        and (p.score - median) / spread >= STAND_OUT_Z)
    for p in ranked[:shown]:
        _matches(p, own, code_hits, symbolic_hits, found)
    return Similarity(answers.assignment, len(students), ranked, len(pairs), median, spread, notes, seconds)


def _matches(p: Pair, own: dict, code_hits: dict, symbolic_hits: dict, found: dict) -> None:
    for (a, b, cell), (value, slices) in code_hits.items():
        if (a, b) != (p.a, p.b):
            continue
        p.matches.append(CellMatch(cell[0], cell[1], "code", value,
                                   _mark(own[a][cell], slices[0]), _mark(own[b][cell], slices[1])))
    for (a, b, where), (w, count, n, differ) in symbolic_hits.items():
        if (a, b) != (p.a, p.b) or w <= 0:
            continue
        ea, eb = found[where][a], found[where][b]
        detail = (f"{where[2]}: equal as mathematics ({ea.print}); {count} of {n} students wrote an "
                  f"expression equal to it" + ("; their variants differ" if differ else ""))
        p.matches.append(CellMatch(where[0], where[1], "symbolic", w, html.escape(ea.text), html.escape(eb.text),
                                   detail))
    p.matches.sort(key=lambda m: (-m.similarity, m.notebook, m.grade_id, m.kind))


# ============================================================================ writing
def _row(rank: int, p: Pair) -> list:
    return [rank, p.a, p.b, f"{p.score:.3f}", f"{p.code_score:.3f}" if p.code_cells else "",
            f"{p.symbolic_score:.3f}" if p.symbolic_answers else "", p.alike, p.compared,
            "unusually alike - look closer" if p.stands_out else ""]


STYLE = """body{font-family:sans-serif;margin:1.5em;max-width:110em}table{border-collapse:collapse}
td,th{border:1px solid #bbb;padding:.25em .5em;text-align:left;vertical-align:top}
tr.out td{background:#fff4d6}pre{white-space:pre-wrap;margin:0;font-size:.85em}mark{background:#ffd54f}
.side{display:grid;grid-template-columns:1fr 1fr;gap:.5em}.note{color:#444}section{margin-top:2em}"""


def render_html(result: Similarity) -> str:
    e = html.escape
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>Similarity: {e(result.assignment)}</title>",
           f"<style>{STYLE}</style></head><body>",
           f"<h1>Which answers are unusually alike: {e(result.assignment)}</h1>",
           "<p class='note'>This page ranks pairs of students by how alike their answer cells are. It is "
           "<strong>not a verdict</strong>: students who worked from the same lecture, the same hint or the "
           "same textbook write alike answers, and a pair marked <em>unusually alike - look closer</em> only "
           "means a person should read the two side by side. Code is compared by winnowing fingerprints "
           "(copydetect) with the release's template code left out and names normalised away; symbolic answers "
           "are compared as mathematics, weighed by how few students wrote the same expression.</p>",
           f"<p>{result.students} students, {result.pairs_scored} pairs with anything alike; the class's median "
           f"pair score {result.median:.3f}. A pair is marked when its score is at least {STAND_OUT_MIN} and "
           f"{STAND_OUT_Z:g} robust spreads ({result.spread:.3f}) above that median.</p>"]
    if result.students < MIN_CLASS:
        out.append(f"<p><strong>Too few students ({result.students}, fewer than {MIN_CLASS}) for "
                   "&quot;unusual&quot; to mean anything</strong>: the table ranks the pairs, and no pair is "
                   "marked.</p>")
    if not result.pairs:
        out.append("<p>No two students' answers have anything alike beyond the template and common idioms.</p>")
    else:
        out.append("<table data-table='similarity'><tr>" + "".join(f"<th>{e(c)}</th>" for c in COLUMNS) + "</tr>")
        for rank, p in enumerate(result.pairs, 1):
            cells = _row(rank, p)
            cells[1] = f"<a href='#pair-{rank}'>{e(p.a)}</a>" if p.matches else e(p.a)
            out.append(f"<tr{' class=out' if p.stands_out else ''}>"
                       + "".join(f"<td>{c if i == 1 else e(str(c))}</td>" for i, c in enumerate(cells)) + "</tr>")
        out.append("</table>")
    for rank, p in enumerate(result.pairs, 1):
        if not p.matches:
            continue
        word = "unusually alike - look closer" if p.stands_out else "alike in places"
        out.append(f"<section id='pair-{rank}' data-pair='{rank}'><h2>{rank}. {e(p.a)} and {e(p.b)}: {word} "
                   f"(score {p.score:.3f})</h2>")
        for m in p.matches:
            what = ("code (the release's lines left out), highlighted where the fingerprints match"
                    if m.kind == "code" else e(m.detail))
            out.append(f"<h3>{e(m.notebook)}, cell {e(m.grade_id)} ({m.kind}, {m.similarity:.2f})</h3>"
                       f"<p class='note'>{what}</p><div class='side'>"
                       f"<div><strong>{e(p.a)}</strong><pre>{m.left}</pre></div>"
                       f"<div><strong>{e(p.b)}</strong><pre>{m.right}</pre></div></div>")
        out.append("</section>")
    if result.notes:
        out.append("<section><h2>What was cut or skipped</h2><ul>"
                   + "".join(f"<li>{e(n)}</li>" for n in result.notes[:200]) + "</ul>"
                   + (f"<p>and {len(result.notes) - 200} more.</p>" if len(result.notes) > 200 else "")
                   + "</section>")
    out.append("</body></html>")
    return "\n".join(out)


@dataclass
class Written:
    html: Path
    csv: Path
    result: Similarity


def write(result: Similarity, folder: Path) -> Written:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    page, table = folder / "similarity.html", folder / "similarity.csv"
    # a student's file names and metadata may hold bytes that are not UTF-8 (lone surrogates in Python)
    page.write_text(render_html(result), encoding="utf-8", errors="backslashreplace")
    with open(table, "w", newline="", encoding="utf-8", errors="backslashreplace") as fh:
        writer = csv.writer(fh)
        writer.writerow(COLUMNS)
        writer.writerows(_row(rank, p) for rank, p in enumerate(result.pairs, 1))
    return Written(page, table, result)


def build_similarity(root, assignment: str, folder: Path) -> Written:
    """Read the class's notebooks of `assignment`, compare every pair, write the page and the CSV into `folder`."""
    mark = time.perf_counter()
    answers = read_answers(root, assignment)
    reading = time.perf_counter() - mark
    result = compare(answers)
    result.seconds["reading"] = reading
    return write(result, folder)


def summary(result: Similarity) -> str:
    out = [p for p in result.pairs if p.stands_out]
    if result.students < MIN_CLASS:
        return (f"similarity: {result.students} students, too few (under {MIN_CLASS}) to mark any pair; "
                "the page ranks them")
    head = (f"similarity: {result.students} students; {len(out)} pair(s) unusually alike - look closer"
            if out else f"similarity: {result.students} students; no pair stands out")
    return "\n".join([head] + [f"  {p.a} and {p.b}: score {p.score:.3f}" for p in out[:10]])
