"""The registry: every problem found in its assignment's folder, listed in the chapter's order."""
import sys
from pathlib import Path

from graders import problems
from graders.course.contract import load_chapters


def chapter_order() -> list[str]:
    """Item ids (notebook names) of every chapter, in the order chapters.toml lists them."""
    return [nb.split("/")[-1] for chapter in load_chapters() for nb in chapter.notebooks]


def test_ids_are_the_order_chapters_toml_lists_the_notebooks():
    """problems.ids() follows chapters.toml: II.8's strands in order, then the module's items."""
    assert problems.ids() == chapter_order()


def test_each_problem_lives_in_the_folder_of_its_assignment():
    """graders/problems/<assignment>/<id>.py for every problem, with `_` for `-`."""
    for item in problems.ids():
        problem = problems.get(item)
        path = Path(sys.modules[type(problem).__module__].__file__)
        assert path.parent.name == problem.assignment.replace("-", "_"), item
        assert path.stem == item.replace("-", "_"), item
