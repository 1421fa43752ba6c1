"""Chapters and contracts, read from the two files people edit.

`chapters.toml` says which chapters exist (id, title, maturity, state, and the
notebooks of each strand); `contracts.toml` says what each maturity level owes.
Nothing here decides whether an item counts: that is the gate's job (`graders.course.gate`,
which grades each published solution through `verify`).
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

STRANDS = ("basics", "concept", "theory", "mathematics", "practice")


COURSE_FILES = ("nbgrader_config.py", "chapters.toml")


class CourseNotFound(FileNotFoundError):
    """No folder holding the course files where the instructor said or stands."""


def is_course(folder: Path) -> bool:
    return all((folder / name).is_file() for name in COURSE_FILES)


def course_root(explicit: str | os.PathLike | None = None, start: Path | None = None) -> Path:
    """The course directory, found the way nbgrader and git find theirs.

    In order: the folder given explicitly (`--course`), which must hold nbgrader_config.py; else the
    nearest folder at or above the current directory holding nbgrader_config.py and
    chapters.toml; else $CHAPTER_ROOT. Where the grading package is installed plays no
    part, so a copy of the course, or a non-editable install, works from its own folder.
    """
    wanted = " and ".join(COURSE_FILES)
    if explicit:   # a grading-only course (nbgrader's folders, no chapters.toml) is one too
        folder = Path(explicit).resolve()
        if not (folder / COURSE_FILES[0]).is_file():
            raise CourseNotFound(f"--course {explicit}: {folder} holds no {COURSE_FILES[0]}")
        return folder
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if is_course(folder):
            return folder
    named = os.environ.get("CHAPTER_ROOT")
    if named:
        folder = Path(named).resolve()
        if not is_course(folder):
            raise CourseNotFound(f"$CHAPTER_ROOT={named}: {folder} holds no {wanted}")
        return folder
    raise CourseNotFound(f"no course found: no folder holding {wanted} at or above {here}, "
                         "and neither --course nor $CHAPTER_ROOT was given")


@dataclass(frozen=True)
class Concept:
    """One numbered concept of a chapter's page: its name, one-line summary and the items teaching it."""
    name: str
    summary: str = ""
    items: tuple[str, ...] = ()


@dataclass(frozen=True)
class Chapter:
    id: str
    title: str
    maturity: str
    state: str
    strands: dict[str, tuple[str, ...]]   # strand -> ("assignment/notebook", ...)
    concepts: tuple[str, ...] = ()        # what the chapter covers, as its page lists it
    subtitle: str = ""                    # the page's one-line subtitle
    concept_notes: tuple[Concept, ...] = ()   # the concepts with their summaries and items

    @property
    def notebooks(self) -> list[str]:
        return [nb for strand in STRANDS for nb in self.strands.get(strand, ())]


def load_chapters(root: Path | None = None) -> list[Chapter]:
    data = tomllib.loads(((root or course_root()) / "chapters.toml").read_text())
    chapters = []
    for entry in data.get("chapter", []):
        if entry.get("state") not in ("draft", "published"):
            raise ValueError(f"chapter {entry.get('id')}: state must be draft or published")
        strands = {s: tuple(entry.get("strands", {}).get(s, ())) for s in STRANDS}
        notes = tuple(Concept(c["name"], c.get("summary", ""), tuple(c.get("items", ())))
                      for c in entry.get("concept", ()))
        names = tuple(c.name for c in notes) or tuple(entry.get("concepts", ()))
        if notes and entry.get("concepts"):
            raise ValueError(f"chapter {entry['id']}: list its concepts once, as `concepts` or as [[chapter.concept]]")
        chapters.append(Chapter(entry["id"], entry["title"], entry["maturity"], entry["state"], strands,
                                names, entry.get("subtitle", ""), notes))
    return chapters


def find_chapter(chapter_id: str, root: Path | None = None) -> Chapter:
    for chapter in load_chapters(root):
        if chapter.id == chapter_id:
            return chapter
    raise KeyError(f"no chapter {chapter_id!r} in chapters.toml")


def load_contracts(root: Path | None = None) -> dict:
    return tomllib.loads(((root or course_root()) / "contracts.toml").read_text())


def set_state(chapter_id: str, state: str, root: Path | None = None) -> None:
    """Rewrite the `state` line of one chapter in chapters.toml, keeping the rest as written."""
    path = (root or course_root()) / "chapters.toml"
    lines, current = path.read_text().splitlines(keepends=True), None
    for i, text in enumerate(lines):
        stripped = text.strip()
        if stripped.startswith("id ="):
            current = tomllib.loads(stripped)["id"]
        elif stripped.startswith("state =") and current == chapter_id:
            lines[i] = f'state = "{state}"\n'
            path.write_text("".join(lines))
            return
    raise KeyError(f"no chapter {chapter_id!r} with a state line in chapters.toml")
