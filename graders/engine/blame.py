"""Errors the sandbox may have caused: flagged for the instructor, never a final 0.

The sandbox shows student code what a Jupyter kernel would (its folder, its files, the
installed libraries), but it is not a kernel: a system call outside the seccomp allowlist fails
with EPERM, the root outside the working folder is read-only, there is no terminal. A notebook
that is right in a kernel and fails only here must not score 0 as if the student were wrong.

So a cell whose error is one the sandbox itself can cause is named as such:
- `ModuleNotFoundError` for a module the grading machine's Python has installed (its standard
  library and site-packages, which the sandbox binds) or that the assignment ships beside its
  notebooks: a kernel would have imported it;
- an `OSError` with EPERM ("Operation not permitted"), ENOSYS ("Function not implemented"),
  EROFS ("Read-only file system") or no pseudo-terminal: what the allowlist and the read-only
  root answer.

The error's name and text come from the sandbox, so a student can forge them; a forged one buys
a person's look at the notebook, never points. `graders` itself is hidden on purpose: failing to
import it is never the sandbox's fault.
"""
from __future__ import annotations

import importlib.machinery
import re
import sys
import sysconfig
from functools import lru_cache
from pathlib import Path

from graders.engine import feedback as say

HIDDEN = frozenset({"graders"})       # kept from the sandbox on purpose
MAX_TEXT = 2000                        # characters of an error's text looked at
MAX_OUTPUTS = 1000                     # outputs of one cell looked at for its error
_MISSING = re.compile(r"No module named '([A-Za-z_][A-Za-z0-9_]{0,99})(?:\.[A-Za-z0-9_.]*)?'")
_OS_ERRORS = {          # what the error's text says -> the cause, in feedback's words
    "[Errno 1] Operation not permitted": say.SANDBOX_CAUSES["EPERM"],
    "[Errno 38] Function not implemented": say.SANDBOX_CAUSES["ENOSYS"],
    "[Errno 30] Read-only file system": say.SANDBOX_CAUSES["EROFS"],
    "out of pty devices": say.SANDBOX_CAUSES["pty"],
}


@lru_cache(maxsize=1)
def _library_paths() -> tuple[str, ...]:
    """Where the grading machine's Python finds installed modules (no course or project folder)."""
    paths = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths |= {p for p in sys.path if "site-packages" in p or "dist-packages" in p}
    dynload = Path(sysconfig.get_paths()["platstdlib"]) / "lib-dynload"
    return tuple(sorted(str(p) for p in paths | {str(dynload)} if Path(p).is_dir()))


def installed(module: str) -> bool:
    """True when `module` (top level) is installed for the grading machine's Python."""
    if module in sys.builtin_module_names:
        return True
    return importlib.machinery.PathFinder.find_spec(module, list(_library_paths())) is not None


def shipped(module: str, source_dir: str) -> bool:
    """True when the assignment ships `module` beside its notebooks (a .py file or a package)."""
    base = Path(source_dir)
    return (base / f"{module}.py").is_file() or (base / module / "__init__.py").is_file()


def sandbox_cause(ename, evalue, source_dir: str) -> str | None:
    """What in the sandbox may have caused this error, or None when a kernel would raise it too."""
    name, text = str(ename)[:100], str(evalue)[:MAX_TEXT]
    if name == "ModuleNotFoundError":
        found = _MISSING.search(text)
        if not found or found.group(1) in HIDDEN:
            return None
        module = found.group(1)
        if shipped(module, source_dir):
            return say.module_did_not_import(module, shipped=True)
        if installed(module):
            return say.module_did_not_import(module, shipped=False)
        return None
    for said, cause in _OS_ERRORS.items():
        if said in text:
            return cause
    return None


def error_of(message) -> tuple[str, str] | None:
    """(name, text) of the error a cell's message reports, or None when it raised nothing."""
    if not isinstance(message, dict) or message.get("raised") is not True:
        return None
    outputs = message.get("outputs")
    for output in outputs[:MAX_OUTPUTS] if isinstance(outputs, list) else []:
        if isinstance(output, dict) and output.get("output_type") == "error":
            return str(output.get("ename") or "")[:100], str(output.get("evalue") or "")[:MAX_TEXT]
    return str(message.get("ename") or "")[:100], ""


def first_sandbox_fault(run, source_dir: str) -> tuple[int, str] | None:
    """(cell index, cause) of the first cell, in the order the cells ran, whose error the sandbox
    may have caused; the cells after it may have failed only because it did."""
    for index in run.begun:
        error = error_of(run.cells.get(index))
        cause = error and sandbox_cause(*error, source_dir)
        if cause:
            return index, cause
    return None
