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
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import jupytext
import nbformat

GENERATED = ("release", "solutions")


def nbgrader(*args: str, cwd: Path, quiet: bool = True) -> subprocess.CompletedProcess:
    """Run one nbgrader command in the course directory `cwd`."""
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    result = subprocess.run([str(bin_dir / "nbgrader"), *args], cwd=cwd, env=env,
                            capture_output=True, text=True)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-15:])
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{tail}")
    return result


def assignments(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "source").iterdir() if p.is_dir() and not p.name.startswith("."))


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


def make_course(root: Path, into: Path, only: list[str] | None = None) -> Path:
    """A scratch copy of the course (config and source) in `into`, with its own gradebook."""
    into.mkdir(parents=True, exist_ok=True)
    shutil.copy(root / "nbgrader_config.py", into / "nbgrader_config.py")
    for assignment in only or assignments(root):
        shutil.copytree(root / "source" / assignment, into / "source" / assignment,
                        ignore=shutil.ignore_patterns("*.pct.py", ".ipynb_checkpoints", "__pycache__"))
    return into


def generate(root: Path, course: Path) -> None:
    """Release and solutions of every assignment, generated inside the scratch `course`."""
    for assignment in assignments(course):
        nbgrader("generate_assignment", assignment, "--force", cwd=course)
        nbgrader("generate_solution", assignment, "--force", cwd=course)


def _differences(made: Path, committed: Path, label: str) -> list[str]:
    made_files = {p.relative_to(made) for p in made.rglob("*") if p.is_file()} if made.exists() else set()
    kept = {p.relative_to(committed) for p in committed.rglob("*") if p.is_file()} if committed.exists() else set()
    reasons = []
    for rel in sorted(made_files | kept):
        if rel not in kept:
            reasons.append(f"{label}/{rel} is missing: run `chapter build`")
        elif rel not in made_files:
            reasons.append(f"{label}/{rel} has no source: run `chapter build`")
        elif (made / rel).read_bytes() != (committed / rel).read_bytes():
            reasons.append(f"{label}/{rel} is out of date with source/: run `chapter build`")
    return reasons


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


def register_release(root: Path, assignment: str, db_url: str, course_id: str) -> str:
    """Put a committed release's assignment into a gradebook that lacks it; the line that says so.

    `release/` is committed, so `nbgrader generate_assignment` skips it and records nothing.
    nbgrader's own generate_assignment runs instead in a scratch copy of the course's config
    and source, writing the real gradebook; its release must equal the committed one byte for
    byte, or the assignment is taken out again and the grading refused, naming what differs.
    """
    from nbgrader.api import Gradebook
    with tempfile.TemporaryDirectory(prefix="chapter-register-") as tmp:
        course = make_course(root, Path(tmp), only=[assignment])
        with (course / "nbgrader_config.py").open("a") as config:   # the real gradebook, kept out of argv
            config.write(f"\nc.CourseDirectory.db_url = {db_url!r}\n")
        nbgrader("generate_assignment", assignment, "--force", cwd=course)
        drift = _differences(course / "release" / assignment, root / "release" / assignment,
                             f"release/{assignment}")
    if drift:
        with Gradebook(db_url, course_id) as gb:
            gb.remove_assignment(assignment)
        raise SystemExit(f"no assignment {assignment!r} in the gradebook, and the committed release does "
                         f"not match source/{assignment}:\n  " + "\n  ".join(drift))
    return (f"gradebook: registered {assignment!r} from source/{assignment} "
            f"(its release matches the committed release/{assignment})")
