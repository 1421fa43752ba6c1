"""A digest of the grading library's code and the versions of the libraries a grade depends on."""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path


GRADER_FILES = Path(__file__).resolve().parent   # graders/, every layer of it


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """A digest of the whole grading library (graders/**/*.py) as this process loaded it.

    The gate keys its cached verdicts on it, and a cluster worker grades only when its
    digest equals the grading process's. Read once per process.
    """
    digest = hashlib.sha256()
    for path in sorted(GRADER_FILES.rglob("*.py")):
        for part in (path.relative_to(GRADER_FILES).as_posix().encode(), path.read_bytes()):
            digest.update(len(part).to_bytes(8, "big"))    # lengths first: no two libraries read alike
            digest.update(part)
    return digest.hexdigest()


def library_versions() -> dict:
    """The versions of the libraries a grade depends on (the references compute with them)."""
    from importlib import metadata
    versions = {}
    for name in ("sympy", "numpy", "torch", "nbgrader", "nbformat", "mpmath"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions
