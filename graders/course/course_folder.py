"""One chapter as a course of its own: `chapter course CHAPTER DIR --id COURSE_ID`.

A hub can serve several nbgrader courses side by side, each with its own course folder, its
own gradebook, its own folder in the shared exchange and its own `chapter serve`. This makes
such a folder from this one: the chapter's assignments (source/, release/, solutions/), the
course's nbgrader_config.py and contracts.toml, a chapters.toml that lists that chapter
alone and names the course id (`course_id`), which nbgrader_config.py reads, and the measured
solution times of its notebooks (graders/engine/time_limits.py).
"""
from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path

from graders.course import contract
from graders.engine.time_limits import MEASURED, read_measured

COURSE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")   # a folder of the exchange, a hub group's suffix


def chapter_block(text: str, chapter_id: str) -> str:
    """The `[[chapter]]` table of `chapter_id` in chapters.toml's text, as written (its comments
    and sub-tables), up to the next chapter's."""
    starts = [m.start() for m in re.finditer(r"(?m)^\[\[chapter\]\]\s*$", text)] + [len(text)]
    for start, end in zip(starts, starts[1:]):
        block = text[start:end]
        if tomllib.loads(block)["chapter"][0].get("id") == chapter_id:
            # the comment lines that introduce the next chapter belong to it
            return re.sub(r"(?:\n#[^\n]*)+\n*$", "\n", block.rstrip("\n") + "\n")
    raise KeyError(f"no chapter {chapter_id!r} in chapters.toml")


def make_course_folder(root: Path, chapter_id: str, into: Path, course_id: str) -> list[str]:
    """Write the course `course_id` holding `chapter_id` alone into `into` (new, or empty); its
    assignments."""
    if not COURSE_ID.match(course_id):
        raise ValueError(f"course id {course_id!r}: letters, digits, '.', '_' and '-' only")
    into = Path(into)
    if into.exists() and any(into.iterdir()):
        raise FileExistsError(f"{into} is not empty")
    chapter = contract.find_chapter(chapter_id, root)
    assignments = sorted({nb.split("/")[0] for nb in chapter.notebooks})
    into.mkdir(parents=True, exist_ok=True)
    for name in ("nbgrader_config.py", "contracts.toml"):
        shutil.copy(root / name, into / name)
    block = chapter_block((root / "chapters.toml").read_text(), chapter_id)
    (into / "chapters.toml").write_text(
        f"# The course {course_id}: the chapter {chapter_id} alone, made by `chapter course`.\n"
        f'course_id = "{course_id}"\n\n{block}')
    for folder in ("source", "release", "solutions"):
        for assignment in assignments:
            if (root / folder / assignment).is_dir():
                shutil.copytree(root / folder / assignment, into / folder / assignment,
                                ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    # the measured solution times go with their notebooks (each notebook's time limit follows them)
    measured = {nb: entry for nb, entry in read_measured(root).items() if nb.split("/")[0] in assignments}
    if measured:
        (into / MEASURED).parent.mkdir(exist_ok=True)
        (into / MEASURED).write_text(json.dumps(measured, indent=1, sort_keys=True))
    return assignments
