"""Two small things several engine modules need: a silent log for nbgrader's apps, and a file
written whole or not at all."""
from __future__ import annotations

import logging
import os
from pathlib import Path

# nbgrader's preprocessors and exchange apps log to the console; in a grading run they stay silent
silent_log = logging.getLogger("chapter.autograde.nbgrader")
silent_log.addHandler(logging.NullHandler())
silent_log.propagate = False


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write `path` so that a reader sees the old file or the new one, never half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
    if mode is not None:
        os.chmod(tmp, mode)
    os.replace(tmp, path)
