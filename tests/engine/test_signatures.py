"""No function of the engine, the sandbox or the course tools takes more than 8 parameters.

nbgrader, whose pipeline this engine follows, has none over 8; a longer list is a run's state
travelling by hand (issue 29), which belongs in `graders.engine.run.GradingRun`.

Counted as `inspect.signature` counts them, so as nbgrader's own methods would be: every
positional, positional-only and keyword-only parameter, `*args` and `**kwargs` one each, and
`self`/`cls` included (a method of 8 has 7 of its own). Lambdas are functions too. The problem
modules (graders/problems) are out of scope: their functions mirror the formulas they grade.
"""
from __future__ import annotations

import ast
from pathlib import Path

import graders

MOST = 8
LIBRARY = Path(graders.__file__).parent
SCOPE = ("engine", "sandbox", "course")

# Functions allowed over the limit, each named with its reason (none today).
PENDING: set = set()


def count(args: ast.arguments) -> int:
    return (len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs)
            + (args.vararg is not None) + (args.kwarg is not None))


def too_long(source: str, where: str = "<source>") -> list[tuple[str, int, int]]:
    """(name, line, parameters) of every function or lambda in `source` over MOST."""
    found = []
    for node in ast.walk(ast.parse(source, where)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            n = count(node.args)
            if n > MOST:
                found.append((getattr(node, "name", "<lambda>"), node.lineno, n))
    return sorted(found, key=lambda f: f[1])


def test_the_counter_counts_self_varargs_and_keyword_only():
    source = ("class A:\n"
              "    def m(self, a, b, c, d, e, f, g):\n        pass\n"           # 8 with self: allowed
              "    def n(self, a, b, c, d, e, f, *, g):\n        pass\n"        # 8: allowed
              "    def o(self, a, b, c, d, e, f, g, *rest):\n        pass\n"    # 9
              "def p(a, /, b, c, d, e, f, g, h, **kw):\n    pass\n"             # 9
              "q = lambda a, b, c, d, e, f, g, h, i: a\n")                      # 9
    assert [(name, n) for name, _, n in too_long(source)] == [("o", 9), ("p", 9), ("<lambda>", 9)]


def test_no_function_takes_more_than_eight_parameters():
    offenders = []
    for part in SCOPE:
        for path in sorted((LIBRARY / part).rglob("*.py")):
            for name, line, n in too_long(path.read_text(), str(path)):
                if (part, name) not in PENDING:
                    offenders.append(f"{path.relative_to(LIBRARY.parent)}:{line} {name}() takes {n}")
    assert not offenders, ("more than 8 parameters (put the run's state in a GradingRun or a "
                           "dataclass):\n" + "\n".join(offenders))


def test_autograde_names_its_keywords_and_refuses_a_misspelt_one(tmp_path):
    """autograde's keywords are `Options`' (typed, each with a default); an unknown one is a
    TypeError before anything is read, as it would be for a function that lists them."""
    import pytest

    from graders.engine.autograde import DEFAULTS, Options, autograde
    assert set(Options.__annotations__) == set(DEFAULTS)
    with pytest.raises(TypeError, match="wokers"):
        autograde(tmp_path / "no-course", "ps1", wokers=2)
