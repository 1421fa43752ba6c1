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


def preload_for(notebooks: list[Path]) -> tuple[str, ...]:
    """The zygote's libraries that these notebooks import (with IPython, which every run needs).

    Preloading is only for speed: a library not preloaded is imported inside the sandbox the
    first time a cell needs it. A notebook that cannot be read gets the whole list."""
    names = set()
    for path in notebooks:
        try:
            cells = json.loads(Path(path).read_text())["cells"]
            names |= {m for c in cells if c.get("cell_type") == "code"
                      for m in IMPORTED.findall("".join(c.get("source", "")))}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return PRELOAD
    return tuple(m for m in PRELOAD if m.split(".")[0] in names or m == "IPython")
