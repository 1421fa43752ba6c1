"""One warm zygote per grading process, started as early as a command knows it will grade.

This module imports only the sandbox's trusted side (no nbgrader, no nbformat), so that
`chapter check` can start the zygote before it imports anything else: the zygote's own
imports (numpy, sympy, torch, matplotlib, IPython) then run beside the command's.
"""
from __future__ import annotations

import atexit
import json
import re
from pathlib import Path

from graders.sandbox.zygote import PRELOAD, Zygote

_SHARED: dict[bool, Zygote] = {}


def start_zygote(isolate: bool = True, preload=PRELOAD) -> Zygote:
    """The process's zygote, started now if it has none alive; returns at once (not yet ready).
    `preload` applies to a zygote started here."""
    zygote = _SHARED.get(isolate)
    if zygote is None or not zygote.alive():
        zygote = _SHARED[isolate] = Zygote(isolate=isolate, preload=preload).start()
        atexit.register(zygote.close)
    return zygote


def shared_zygote(isolate: bool = True) -> Zygote:
    """The process's zygote, ready (the gate grades several assignments in a row with it)."""
    return start_zygote(isolate).wait_ready()


IMPORTED = re.compile(r"^\s*(?:import|from)\s+([A-Za-z_]\w*)", re.MULTILINE)
# torch's optimizers, activation checkpointing and loss scaler import torch._dynamo (0.8 s) on their
# first call: preloaded only for notebooks that call one of them (ON_USE: not for every torch user)
DYNAMO_USERS = re.compile(r"\boptim\.\w|\bimport optim\b|\butils\.checkpoint\b|\bGradScaler\(")
ON_USE = {"torch._dynamo"}


def preload_for_assignment(root: Path, assignment: str) -> tuple[str, ...]:
    """The libraries an assignment's own notebooks import (the instructor's source, never a
    student's), so a course without torch does not wait for it; all of them when there is no
    source to read. A library left out is imported in the sandbox when a cell needs it."""
    notebooks = sorted((Path(root) / "source" / assignment).glob("*.ipynb"))
    return preload_for(notebooks) if notebooks else PRELOAD


def zygote_for(root: Path, assignment: str, isolate: bool = True, allow_degraded: bool = False) -> Zygote:
    """A zygote of its own for grading `assignment` of the course at `root`, started (not yet ready).
    `chapter autograde` starts it before it imports nbgrader, so its imports run beside the command's."""
    return Zygote(isolate=isolate, secrets=[Path(root)], preload=preload_for_assignment(root, assignment),
                  allow_degraded=allow_degraded).start()


def preload_for(notebooks: list[Path]) -> tuple[str, ...]:
    """The zygote's libraries that these notebooks import (with IPython, which every run needs).

    Preloading is only for speed: a library not preloaded is imported inside the sandbox the
    first time a cell needs it. A notebook that cannot be read gets the whole list."""
    names = {"IPython"}
    for path in notebooks:
        try:
            code = ["".join(c.get("source", "")) for c in json.loads(Path(path).read_text())["cells"]
                    if c.get("cell_type") == "code"]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return PRELOAD
        imported = {m for source in code for m in IMPORTED.findall(source)}
        names |= imported
        if "torch" in imported and any(DYNAMO_USERS.search(source) for source in code):
            names.add("torch._dynamo")
    # a library with what it brings (matplotlib.pyplot), but one in ON_USE only when called
    return tuple(m for m in PRELOAD if m in names or m.split(".")[0] in names and m not in ON_USE)
