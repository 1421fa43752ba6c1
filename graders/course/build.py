"""Generated notebooks: source .ipynb from .pct.py text, then release/ and solutions/.

Authors write `source/<assignment>/<id>.pct.py` (jupytext's percent format,
which keeps nbgrader's cell metadata). From it come, in order:
- `source/<assignment>/<id>.ipynb`, through jupytext;
- `release/<assignment>/<id>.ipynb`, through `nbgrader generate_assignment`;
- `solutions/<assignment>/<id>.ipynb`, through `nbgrader generate_solution`
  (configured to strip hidden tests and not to execute).
All three are committed, and `check` says where any has drifted from its source.
"""
from __future__ import annotations

import importlib
import inspect
import re
import shutil
import tempfile
from pathlib import Path

import jupytext
import nbformat

from graders.engine.scratch import assignments, make_course, nbgrader
from graders.engine.scratch import differences as _differences

GENERATED = ("release", "solutions")


INCLUDE = re.compile(r"^# chapter: include ([\w.]+)\.(\w+)$", re.MULTILINE)


def include_sources(text: str) -> str:
    """Each `# chapter: include MODULE.NAME` line replaced by that function's or class's source.

    A practice notebook's locked harness runs the very code its problem module's
    reference runs (the training loop, the data); the code is written once, in
    the module, and the notebook cell names it.
    """
    def source(match):
        obj = getattr(importlib.import_module(match[1]), match[2])
        return inspect.getsource(obj).rstrip("\n")
    return INCLUDE.sub(source, text)


def notebook_text(pct: Path) -> str:
    """The .ipynb text generated from one percent-format source."""
    nb = jupytext.reads(include_sources(pct.read_text()), fmt="py:percent")
    nb.metadata.pop("jupytext", None)
    for i, cell in enumerate(nb.cells):  # stable ids, so regenerating changes nothing
        cell.id = cell.metadata.get("nbgrader", {}).get("grade_id") or f"cell-{i}"
    if any(c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade") for c in nb.cells):
        nb.cells.insert(1, validate_note())
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    return nbformat.writes(nb) + "\n"


VALIDATE_NOTE = """\
> **What Validate tells you.** *Validate* runs the visible tests, which check only the form of
> your answers: that each is there, of the right type, in the allowed symbols.
> "Success! Your notebook passes all the tests." means the form is right, not that your
> derivation or your numbers are: those are checked when your notebook is graded. Where your
> course offers instant feedback, use it to check them before you submit."""


def validate_note():
    """The note every autograded notebook carries under its title: what Validate does not check."""
    cell = nbformat.v4.new_markdown_cell(VALIDATE_NOTE, id="validate-note")
    cell.metadata.update(deletable=False, editable=False)
    return cell


def sync_sources(root: Path, write: bool) -> list[str]:
    """Make (or, with write=False, check) every source .ipynb from its .pct.py."""
    stale = []
    for pct in sorted((root / "source").glob("*/*.pct.py")):
        target = pct.with_name(pct.name.removesuffix(".pct.py") + ".ipynb")
        text = notebook_text(pct)
        if not target.exists() or target.read_text() != text:
            stale.append(str(target.relative_to(root)))
            if write:
                target.write_text(text)
    return stale


def generate(root: Path, course: Path) -> None:
    """Release and solutions of every assignment, generated inside the scratch `course`."""
    for assignment in assignments(course):
        nbgrader("generate_assignment", assignment, "--force", cwd=course)
        nbgrader("generate_solution", assignment, "--force", cwd=course)


def build(root: Path, write: bool = True) -> list[str]:
    """Regenerate everything from source/ (write=True), or list what has drifted (write=False)."""
    reasons = [f"{path} is out of date with its .pct.py: run `chapter build`"
               for path in sync_sources(root, write=write)]
    with tempfile.TemporaryDirectory(prefix="chapter-build-") as tmp:
        course = make_course(root, Path(tmp))
        if not write:  # compare the notebooks the committed .pct.py files would give
            sync_sources(course_with_pct(root, course), write=True)
        generate(root, course)
        for label in GENERATED:
            if write:
                shutil.rmtree(root / label, ignore_errors=True)
                shutil.copytree(course / label, root / label)
            else:
                reasons += _differences(course / label, root / label, label)
    return reasons


def course_with_pct(root: Path, course: Path) -> Path:
    """Put the .pct.py sources into the scratch course so its .ipynb come from them."""
    for pct in (root / "source").glob("*/*.pct.py"):
        shutil.copy(pct, course / "source" / pct.parent.name / pct.name)
    return course


