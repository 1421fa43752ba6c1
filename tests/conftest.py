"""Shared fixtures: the repository, and scratch copies of it that tests may break."""
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def copy_course(into: Path, items: list[str]) -> Path:
    """A scratch course holding only `items` ("assignment/id"), with a one-chapter chapters.toml."""
    shutil.copy(REPO / "nbgrader_config.py", into / "nbgrader_config.py")
    shutil.copy(REPO / "contracts.toml", into / "contracts.toml")
    for item in items:
        for folder in ("source", "release", "solutions"):
            for path in (REPO / folder).glob(f"{item}.*"):
                target = into / folder / path.relative_to(REPO / folder)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, target)
    listed = ", ".join(f'"{i}"' for i in items)
    (into / "chapters.toml").write_text(
        '[[chapter]]\nid = "II.8"\ntitle = "Training at Scale"\nmaturity = "M3"\nstate = "draft"\n\n'
        f'[chapter.strands]\nbasics = []\nconcept = []\ntheory = []\nmathematics = [{listed}]\n'
        'practice = []\n')
    return into


@pytest.fixture
def scratch_course(tmp_path, monkeypatch):
    """A scratch course with w1-memory only, used as the chapter root."""
    root = copy_course(tmp_path, ["worked/w1-memory"])
    monkeypatch.setenv("CHAPTER_ROOT", str(root))
    return root
