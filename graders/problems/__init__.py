"""The registry of graded items: `ids()` in chapter order, and `get(id)`.

A problem lives in `graders/problems/<id with _ for ->.py` as PROBLEM; the order
is the order in which `chapters.toml` lists the notebooks.
"""
from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from ..problem import Problem


@lru_cache(maxsize=1)
def _registry() -> dict[str, Problem]:
    found = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        problem = getattr(module, "PROBLEM", None)
        if isinstance(problem, Problem):
            found[problem.id] = problem
    from ..contract import chapter_order
    order = {item: i for i, item in enumerate(chapter_order())}
    return dict(sorted(found.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


def ids() -> list[str]:
    """Every graded item of the chapter, in chapter order."""
    return list(_registry())


def get(problem_id: str) -> Problem:
    """The Problem with this id; KeyError names the known ids when it is unknown."""
    try:
        return _registry()[problem_id]
    except KeyError:
        raise KeyError(f"no problem {problem_id!r}; known: {', '.join(_registry())}") from None
