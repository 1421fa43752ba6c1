"""nbgrader's converters run in-process give, byte for byte, what the `nbgrader` command gives."""
import shutil
from pathlib import Path

import pytest

from graders.course.build import GENERATED, build, generate, generate_notebooks, source_texts, sync_sources
from graders.engine.scratch import alembic_head, make_course
from tests.warm_nbgrader import nbgrader

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]

# a basics notebook, a practice notebook whose harness is a `# chapter: include`, and one of the
# second module's
NOTEBOOKS = ["basics/b01-dataset", "practice/p1-loss-scaler", "tds-basics/tds-b1-sharpness"]


def tree(folder: Path) -> dict[Path, bytes]:
    """{path inside `folder`: its bytes} of every file under `folder`."""
    return {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_in_process_generation_equals_the_nbgrader_commands(tmp_path):
    """Release and solution of each notebook, generated in-process one notebook at a time (the
    drift check) and each assignment whole (`chapter build`), equal those of `nbgrader
    generate_assignment` / `generate_solution` run on the assignment (and the committed ones)."""
    ids = [nb.split("/")[1] for nb in NOTEBOOKS]
    texts, _ = source_texts(ROOT, only=ids)
    assert sorted(texts) == sorted(NOTEBOOKS)
    assert "# chapter: include" not in texts["practice/p1-loss-scaler"]
    assert "# chapter: include" in (ROOT / "source/practice/p1-loss-scaler.pct.py").read_text()
    (tmp_path / "inprocess").mkdir()
    inprocess = generate_notebooks(ROOT, tmp_path / "inprocess", texts)

    assignments = sorted({nb.split("/")[0] for nb in NOTEBOOKS})

    def scratch(name):      # only these notebooks, each assignment generated whole
        course = make_course(ROOT, tmp_path / name, only=assignments)
        for path in course.glob("source/*/*.ipynb"):
            path.unlink()
        for notebook in NOTEBOOKS:
            shutil.copy(ROOT / "source" / f"{notebook}.pct.py", course / "source" / f"{notebook}.pct.py")
        sync_sources(course, write=True)
        return course

    plain = scratch("plain")
    for assignment in assignments:
        nbgrader("generate_assignment", assignment, "--force", cwd=plain)
        nbgrader("generate_solution", assignment, "--force", cwd=plain)
    # `chapter build`'s generation: each assignment whole, in-process; every file, not only notebooks
    built = scratch("built")
    generate(ROOT, built)
    for label in GENERATED:
        files = tree(plain / label)
        assert len(files) >= len(NOTEBOOKS), files.keys()
        assert tree(built / label) == files, label

    for notebook in NOTEBOOKS:
        for label in GENERATED:
            made = (inprocess / label / f"{notebook}.ipynb").read_bytes()
            assert made == (plain / label / f"{notebook}.ipynb").read_bytes(), f"{label}/{notebook}"
            assert made == (ROOT / label / f"{notebook}.ipynb").read_bytes(), f"{label}/{notebook}"
    # the course's configuration applied: hidden tests out of both, solutions out of the release
    assert "BEGIN HIDDEN TESTS" in texts["practice/p1-loss-scaler"]
    assert "BEGIN HIDDEN TESTS" not in (inprocess / "solutions/practice/p1-loss-scaler.ipynb").read_text()
    assert "BEGIN SOLUTION" not in (inprocess / "release/practice/p1-loss-scaler.ipynb").read_text()
    # the same files without nbgrader's SaveCells: the drift check's scratch gradebook records no cell
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{inprocess / 'gradebook.db'}") as gb:
        assert all(not gb.find_assignment(a).notebooks for a in assignments)


def test_the_schema_revision_read_in_process_is_the_one_alembic_prints(monkeypatch):
    """The gradebook revision read with alembic's library is what nbgrader's `alembic heads` gives."""
    import os
    import sys

    from nbgrader.api import get_alembic_version
    # nbgrader runs `alembic` by name, as `chapter` lets it (cli.main puts this Python's bin on PATH)
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    assert alembic_head() == get_alembic_version()


def test_one_item_check_sees_only_that_items_drift(tmp_path):
    """`build --check` narrowed to one item names that item's drifted solution, and not another's;
    the whole check names both; a cached check still sees a drift made after it."""
    course = make_course(ROOT, tmp_path / "course", only=["worked", "basics"])
    for pct in [*(ROOT / "source/worked").glob("*.pct.py"), *(ROOT / "source/basics").glob("*.pct.py")]:
        shutil.copy(pct, course / "source" / pct.parent.name / pct.name)
    for label in GENERATED:
        for assignment in ("worked", "basics"):
            shutil.copytree(ROOT / label / assignment, course / label / assignment)
    assert build(course, write=False) == []
    for notebook in ("worked/w1-memory", "basics/b01-dataset"):
        path = course / "solutions" / f"{notebook}.ipynb"
        path.write_text(path.read_text().replace('"cell_type": "markdown"', '"cell_type":  "markdown"', 1))
    (course / "release/basics/stray.txt").write_text("no source")
    one = build(course, write=False, only=["w1-memory"], cache=False)
    assert one == ["solutions/worked/w1-memory.ipynb is out of date with source/: run `chapter build`"]
    every = build(course, write=False)      # from the per-notebook cache: nothing regenerated
    assert every == ["release/basics/stray.txt has no source: run `chapter build`",
                     "solutions/basics/b01-dataset.ipynb is out of date with source/: run `chapter build`",
                     "solutions/worked/w1-memory.ipynb is out of date with source/: run `chapter build`"]
    pct = course / "source/worked/w1-memory.pct.py"
    pct.write_text(pct.read_text() + "\n# %% [markdown]\n# A new closing line.\n")
    assert "source/worked/w1-memory.ipynb is out of date with its .pct.py: run `chapter build`" in \
        build(course, write=False, only=["w1-memory"])
