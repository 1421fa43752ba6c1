"""Each notebook's time limit, from what its own solution needs.

The configured limit (`c.ChapterSandbox.notebook_seconds`, 300 s of CPU time by default) is a
ceiling meant for the slowest notebook of any course. Given to every notebook, it lets one
hostile notebook that spins hold a worker for five minutes, beside a class whose notebooks take
a second each. So the gate (`chapter gate`, `chapter status`), which grades every item's
published solution as a student of each of its variants, keeps the CPU time the slowest variant
took, and `chapter autograde` gives each notebook

    limit = min(ceiling, max(floor, multiple x the solution's CPU time))

with `multiple` and `floor` from the course's configuration (`c.ChapterSandbox.time_multiple`,
`c.ChapterSandbox.time_floor`). A notebook with no measurement, or one measured from a source
notebook that has changed since, keeps the ceiling, and the run's summary says how many did.

The measurements live in the course folder, `.chapter/solution-seconds.json`:
`{"assignment/notebook": {"seconds": float, "source": sha256 of source/assignment/notebook.ipynb}}`.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, replace
from pathlib import Path

from graders.engine.exchange import private_folder
from graders.sandbox.zygote import Limits

MEASURED = Path(".chapter") / "solution-seconds.json"
MAX_MEASURED_BYTES = 4 << 20


@dataclass(frozen=True)
class TimePolicy:
    multiple: float = 10.0     # a student's notebook may take this many times the solution's CPU time
    floor: float = 30.0        # and never less than this many seconds

    @classmethod
    def from_config(cls, config) -> "TimePolicy":
        section = config.get("ChapterSandbox", {}) if config is not None else {}
        policy = cls(float(section.get("time_multiple", cls.multiple)), float(section.get("time_floor", cls.floor)))
        if not (math.isfinite(policy.multiple) and policy.multiple >= 1 and math.isfinite(policy.floor)
                and policy.floor > 0):
            raise ValueError(f"ChapterSandbox.time_multiple must be at least 1 and time_floor above 0 "
                             f"(got {policy.multiple:g} and {policy.floor:g})")
        return policy

    def seconds(self, measured: float | None, ceiling: float) -> float:
        """The notebook's CPU-time limit: the ceiling when nothing was measured."""
        if measured is None:
            return ceiling
        return min(ceiling, max(self.floor, self.multiple * measured))


def source_hash(root: Path, assignment: str, notebook: str) -> str | None:
    path = Path(root) / "source" / assignment / f"{notebook}.ipynb"
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def read_measured(root: Path) -> dict:
    """The course's measurements, or {} when there are none or the file is not what it should be."""
    path = Path(root) / MEASURED
    try:
        if path.stat().st_size > MAX_MEASURED_BYTES:
            return {}
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def measured_seconds(root: Path, assignment: str, notebook: str, measured: dict | None = None) -> float | None:
    """The solution's CPU seconds for `notebook`, when measured from its current source notebook."""
    measured = read_measured(root) if measured is None else measured
    entry = measured.get(f"{assignment}/{notebook}")
    if not isinstance(entry, dict) or entry.get("source") != source_hash(root, assignment, notebook):
        return None
    seconds = entry.get("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) \
            or seconds < 0:
        return None
    return float(seconds)


def record_measured(root: Path, seconds: dict[str, float]) -> None:
    """Keep `{"assignment/notebook": CPU seconds}` (the gate's measurements) beside the others."""
    measured = read_measured(root)
    for notebook, value in seconds.items():
        assignment, name = notebook.split("/")
        measured[notebook] = {"seconds": round(float(value), 3), "source": source_hash(root, assignment, name)}
    path = Path(root) / MEASURED
    private_folder(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(measured, indent=1, sort_keys=True))
    os.replace(tmp, path)


def notebook_limits(root: Path, assignment: str, names, policy: TimePolicy) -> dict[str, float | None]:
    """Each notebook's CPU-time limit before the ceiling, by name (None: nothing measured)."""
    measured = read_measured(root)
    found = {name: measured_seconds(root, assignment, name, measured) for name in names}
    return {name: None if seconds is None else policy.seconds(seconds, math.inf) for name, seconds in found.items()}


def for_notebook(limits: Limits, seconds: float | None) -> Limits:
    """`limits` with the notebook's own time limit, never above the configured one (and no cell
    allowed longer than the notebook)."""
    if seconds is None or seconds >= limits.notebook_seconds:
        return limits
    return replace(limits, notebook_seconds=seconds, cell_seconds=min(limits.cell_seconds, seconds))
