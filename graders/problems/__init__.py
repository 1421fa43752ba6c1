"""The registry of graded items: `ids()` in chapter order, and `get(id)`.

A problem lives in `graders/problems/<assignment>/<id with _ for ->.py` as PROBLEM,
in a folder named after its assignment in `source/` (with `_` for `-`), so
`source/worked/w1-memory.pct.py` is graded by `graders/problems/worked/w1_memory.py`.
Code that several problems share lives in `graders/problems/common/`.

The order is the chapter's: chapter II.8 before the module's items (`tds-`), and in
each the strands as a chapter page lists them (basics, concept, theory, worked,
exercises, practice), then the item's number. tests/problems/test_registry.py checks
that this is the order in which chapters.toml lists the notebooks.

`get(id)` imports only that item's module (its path follows from the id), so a command
about one item does not pay for importing all of them; `ids()` imports every one.
"""
from __future__ import annotations

import importlib
import pkgutil
import re
from functools import lru_cache
from pathlib import Path

from graders.problem import Problem

ASSIGNMENTS = ("basics", "concept", "theory", "worked", "exercises", "practice")


def chapter_key(problem: Problem) -> tuple:
    """Where an item stands in its chapter: (module item?, strand folder, number)."""
    assignment = problem.assignment or ""
    module = assignment.startswith("tds-")
    folder = assignment.removeprefix("tds-")
    rank = ASSIGNMENTS.index(folder) if folder in ASSIGNMENTS else len(ASSIGNMENTS)
    number = re.search(r"\d+", problem.id.removeprefix("tds-"))
    return module, rank, int(number[0]) if number else 0, problem.id


def _problem_in(module_name: str) -> Problem | None:
    problem = getattr(importlib.import_module(module_name), "PROBLEM", None)
    return problem if isinstance(problem, Problem) else None


@lru_cache(maxsize=1)
def _registry() -> dict[str, Problem]:
    found = {}
    for info in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
        if info.ispkg or ".common." in info.name:
            continue
        problem = _problem_in(info.name)
        if problem is not None:
            found[problem.id] = problem
    return dict(sorted(found.items(), key=lambda kv: chapter_key(kv[1])))


@lru_cache(maxsize=None)
def _one(problem_id: str) -> Problem | None:
    """The problem with this id from the one module its id names, or None when there is none
    (or it holds another id: then only the whole registry can say)."""
    stem = problem_id.replace("-", "_")
    if not stem.isidentifier():
        return None
    for folder in sorted(Path(__path__[0]).iterdir()):
        if folder.name != "common" and (folder / f"{stem}.py").is_file():
            problem = _problem_in(f"{__name__}.{folder.name}.{stem}")
            if problem is not None and problem.id == problem_id:
                return problem
    return None


def ids() -> list[str]:
    """Every graded item of the chapter, in chapter order."""
    return list(_registry())


def get(problem_id: str) -> Problem:
    """The Problem with this id; KeyError names the known ids when it is unknown."""
    problem = _one(problem_id) if isinstance(problem_id, str) else None
    if problem is not None:
        return problem
    try:
        return _registry()[problem_id]
    except KeyError:
        raise KeyError(f"no problem {problem_id!r}; known: {', '.join(_registry())}") from None


def known(problem_id: str) -> bool:
    """Whether a problem with this id is registered (without importing the others when it is)."""
    try:
        get(problem_id)
    except KeyError:
        return False
    return True
