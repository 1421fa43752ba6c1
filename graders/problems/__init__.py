"""The registry of graded items: `ids()` in chapter order, and `get(id)`.

A problem lives in `graders/problems/<assignment>/<id with _ for ->.py` as PROBLEM,
in a folder named after its assignment in `source/` (with `_` for `-`), so
`source/worked/w1-memory.pct.py` is graded by `graders/problems/worked/w1_memory.py`.
Code that several problems share lives in `graders/problems/common/`.

The order is the chapter's: chapter II.8 before the module's items (`tds-`), and in
each the strands as a chapter page lists them (basics, concept, theory, worked,
exercises, practice), then the item's number. tests/problems/test_registry.py checks
that this is the order in which chapters.toml lists the notebooks.
"""
from __future__ import annotations

import importlib
import pkgutil
import re
from functools import lru_cache

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


@lru_cache(maxsize=1)
def _registry() -> dict[str, Problem]:
    found = {}
    for info in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
        if info.ispkg or ".common." in info.name:
            continue
        module = importlib.import_module(info.name)
        problem = getattr(module, "PROBLEM", None)
        if isinstance(problem, Problem):
            found[problem.id] = problem
    return dict(sorted(found.items(), key=lambda kv: chapter_key(kv[1])))


def ids() -> list[str]:
    """Every graded item of the chapter, in chapter order."""
    return list(_registry())


def get(problem_id: str) -> Problem:
    """The Problem with this id; KeyError names the known ids when it is unknown."""
    try:
        return _registry()[problem_id]
    except KeyError:
        raise KeyError(f"no problem {problem_id!r}; known: {', '.join(_registry())}") from None
