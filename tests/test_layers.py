"""The package's layers: each imports only from itself and the layers below it, and nothing cycles.

From the bottom up: the problem library (`graders/*.py` and `graders/problems/`), the sandbox
(`graders/sandbox/`), the engine (`graders/engine/`), the course tooling (`graders/course/`), and
the command line (`graders/cli.py`). Imports inside functions count as much as those at the top.
"""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

import pytest

GRADERS = Path(__file__).resolve().parents[1] / "graders"
LAYERS = ("library", "sandbox", "engine", "course", "cli")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(GRADERS.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in ("sandbox", "engine", "course", "cli"):
        return parts[1]
    return "library"


@lru_cache(maxsize=1)
def known_modules() -> frozenset:
    return frozenset(module_name(p) for p in GRADERS.rglob("*.py") if "__pycache__" not in p.parts)


def imports_of(path: Path) -> set[str]:
    """Every graders module `path` imports, resolved to its full dotted name."""
    found = set()
    known = known_modules()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("graders")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module_name(path).split(".")
                package = package[: len(package) - node.level + (1 if path.name == "__init__.py" else 0)]
                base = ".".join(package + ([base] if base else []))
            if not base.startswith("graders"):
                continue
            for alias in node.names:   # `from graders.engine import grading` names a module
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return found


@lru_cache(maxsize=1)
def graph() -> dict[str, set[str]]:
    return {module_name(p): imports_of(p) for p in GRADERS.rglob("*.py") if "__pycache__" not in p.parts}


def test_every_module_imports_only_its_own_layer_and_those_below():
    """No module imports from a layer above its own (the library never imports the engine, ...)."""
    wrong = []
    for module, targets in graph().items():
        for target in targets:
            if LAYERS.index(layer_of(target)) > LAYERS.index(layer_of(module)):
                wrong.append(f"{module} imports {target}")
    assert not wrong, "\n".join(sorted(wrong))


def test_no_import_cycles():
    """Following imports from any module never leads back to it."""
    edges = graph()
    cycles = []

    def visit(module, path):
        seen.add(module)
        for target in sorted(edges.get(module, ())):
            if target == path[0]:
                cycles.append(" -> ".join(path + [target]))
            elif target not in path and target not in seen:
                visit(target, path + [target])

    for module in sorted(edges):
        seen = set()
        visit(module, [module])
    # a package's __init__ importing its own modules (graders -> graders.problems) is no cycle of logic
    cycles = [c for c in cycles if not c.startswith("graders -> ")]
    assert not cycles, "\n".join(cycles[:20])


def test_problems_share_code_only_through_the_common_module():
    """A problem module imports no other problem: what two share lives in graders/problems/common/."""
    wrong = []
    for module, targets in graph().items():
        if not module.startswith("graders.problems.") or ".common" in module or module.count(".") < 3:
            continue
        for target in targets:
            if target.startswith("graders.problems.") and not target.startswith("graders.problems.common") \
                    and target.count(".") >= 3:
                wrong.append(f"{module} imports {target}")
    assert not wrong, "\n".join(sorted(wrong))


@pytest.mark.parametrize("folder", sorted(p.name for p in (GRADERS / "problems").iterdir()
                                          if p.is_dir() and p.name not in ("common", "__pycache__")))
def test_problem_folders_mirror_source(folder):
    """graders/problems/<assignment>/ holds exactly the problems of source/<assignment>/."""
    source = GRADERS.parent / "source" / folder.replace("_", "-")
    items = {p.name.removesuffix(".pct.py").replace("-", "_") for p in source.glob("*.pct.py")}
    modules = {p.stem for p in (GRADERS / "problems" / folder).glob("*.py") if p.stem != "__init__"}
    assert modules == items


def test_the_sandbox_worker_imports_nothing_from_the_package():
    """worker.py and the files it loads run as separate files (python -I -S): none may import graders."""
    for name in ("worker", "linux", "layers", "monitor", "cells", "protocol"):
        assert imports_of(GRADERS / "sandbox" / f"{name}.py") == set(), name
    assert imports_of(GRADERS / "sandbox" / "seccomp.py") == set()
    assert imports_of(GRADERS / "sandbox" / "cgroups.py") == set()


def test_the_command_line_only_parses_and_dispatches():
    """cli.py defines no logic of its own beyond argument parsing and calling the layers' functions."""
    tree = ast.parse((GRADERS / "cli.py").read_text())
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    long = [f"{f.name} ({f.end_lineno - f.lineno + 1} lines)" for f in functions
            if f.name != "main" and f.end_lineno - f.lineno + 1 > 25]
    assert not long, long


def private_crossings(path: Path) -> list[str]:
    """Where `path` reaches for another project module's private name: `from m import _x`, or
    `m._x` on a name bound to one of the project's modules (the sandbox's files load each other
    as `_sandbox_<name>`)."""
    known, tree = known_modules(), ast.parse(path.read_text())

    def project(name: str) -> bool:
        return name.startswith("graders") or name.startswith("_sandbox_")

    def private(name: str) -> bool:
        return name.startswith("_") and not name.startswith("__")

    bound, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names if project(a.name)}
        elif isinstance(node, ast.ImportFrom) and node.module and project(node.module):
            for alias in node.names:
                if private(alias.name):
                    found.append(f"line {node.lineno}: from {node.module} import {alias.name}")
                elif f"{node.module}.{alias.name}" in known:
                    bound.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in bound and private(node.attr)):
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_module_uses_another_modules_private_names():
    """A name two modules need is public in one of them; a leading underscore means "this file only"."""
    found = {str(p.relative_to(GRADERS.parent)): crossings for p in GRADERS.rglob("*.py")
             if "__pycache__" not in p.parts and (crossings := private_crossings(p))}
    assert not found, found


def test_the_readers_see_what_the_rules_forbid(tmp_path):
    """The rules above pass only if their readers find imports: a module of the library written
    with an upward import, a function-level one and a private crossing is caught by each."""
    bad = GRADERS / "problems" / "common" / "_layers_probe.py"     # read here, never written there
    text = ("from graders.engine import grading\n"
            "def f():\n    from graders.course import report\n    return grading._quiet, report\n"
            "from graders.symbolic import _TEXT\n")
    probe = tmp_path / "probe.py"
    probe.write_text(text)
    found = imports_of(probe)
    assert {"graders.engine.grading", "graders.course.report"} <= found, found
    upward = [t for t in found if LAYERS.index(layer_of(t)) > LAYERS.index(layer_of(module_name(bad)))]
    assert upward, found
    crossings = private_crossings(probe)
    assert any("grading._quiet" in c for c in crossings) and any("import _TEXT" in c for c in crossings), crossings
