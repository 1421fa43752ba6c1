"""Generated notebooks: source .ipynb from .pct.py text, then release/ and solutions/.

Authors write `source/<assignment>/<id>.pct.py` (jupytext's percent format,
which keeps nbgrader's cell metadata). From it come, in order:
- `source/<assignment>/<id>.ipynb`, through jupytext;
- `release/<assignment>/<id>.ipynb`, through nbgrader's GenerateAssignment converter (what
  `nbgrader generate_assignment` runs; run in this process, it writes the same bytes);
- `solutions/<assignment>/<id>.ipynb`, through its GenerateSolution converter
  (configured to strip hidden tests and not to execute).
All three are committed, and `check` says where any has drifted from its source.
"""
from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import re
import shutil
from pathlib import Path

import jupytext
import nbformat

from graders.engine.scratch import (CONVERTERS, assignments, copy_config, make_course, nbgrader_coursedir,
                                   nbgrader_inprocess)
from graders.sandbox.tempdirs import owned_scratch

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
    """Release and solutions of every assignment, generated inside the scratch `course` by
    nbgrader's converters in this process, as `nbgrader generate_assignment <assignment> --force`
    and `generate_solution` generate them (tests/course/test_build_inprocess.py: byte for byte),
    without starting an nbgrader command twice per assignment (about 5 s each). The scratch
    gradebook is thrown away, so no cell is recorded in it (`files_only`)."""
    for assignment in assignments(course):
        for command in CONVERTERS:
            nbgrader_inprocess(command, assignment, course, files_only=True)


def build(root: Path, write: bool = True, only: list[str] | None = None, cache: bool = True) -> list[str]:
    """Regenerate everything from source/ (write=True), or list what has drifted (write=False).

    The check may be narrowed to the notebooks `only` (ids), and reuses, unless `cache` is off,
    what nbgrader generated before from the same notebook text (see `drift`).
    A malformed deadlines.toml stops it before anything is written (DeadlineError).
    """
    from graders.course import deadlines
    policy = deadlines.load(root)
    if not write:
        return drift(root, policy, only=only, cache=cache)
    reasons = [f"{path} is out of date with its .pct.py: run `chapter build`"
               for path in sync_sources(root, write=write)]
    with owned_scratch("chapter-build-") as tmp:
        course = make_course(root, Path(tmp))
        generate(root, course)
        for label in GENERATED:
            shutil.rmtree(root / label, ignore_errors=True)
            shutil.copytree(course / label, root / label)
    return reasons


GENERATED_CACHE = Path(".chapter") / "generated.json"


def generation_key(root: Path, notebook: str, text: str, due: str = "") -> str:
    """What nbgrader's output for one notebook depends on: its text, its place, the course's
    configuration, nbgrader's version, and `due`, the due-date header deadlines.toml gives its
    release (`deadlines.release_text`: the due date and the schedule; none, the key is as before)."""
    import nbgrader as nbgrader_package
    digest = hashlib.sha256(f"{nbgrader_package.__version__}\0{notebook}\0".encode())
    digest.update((root / "nbgrader_config.py").read_bytes() + b"\0" + text.encode())
    if due:
        digest.update(b"\0due\0" + due.encode())
    return digest.hexdigest()


def source_texts(root: Path, only: list[str] | None = None) -> tuple[dict[str, str], list[str]]:
    """{"assignment/id": the source .ipynb text the committed .pct.py (or, lacking one, the
    committed .ipynb) gives}, and the reasons where a committed source .ipynb differs from it."""
    texts, reasons = {}, []
    for path in sorted((root / "source").glob("*/*.ipynb")) + sorted((root / "source").glob("*/*.pct.py")):
        stem = path.name.removesuffix(".pct.py").removesuffix(".ipynb")
        if only and stem not in only:
            continue
        notebook = f"{path.parent.name}/{stem}"
        if path.name.endswith(".ipynb"):
            texts.setdefault(notebook, path.read_text())
            continue
        texts[notebook] = text = notebook_text(path)
        target = path.with_name(stem + ".ipynb")
        if not target.exists() or target.read_text() != text:
            reasons.append(f"{target.relative_to(root)} is out of date with its .pct.py: run `chapter build`")
    return texts, reasons


def drift(root: Path, policy, only: list[str] | None = None, cache: bool = True) -> list[str]:
    """Where source/, release/ and solutions/ have drifted from what the .pct.py sources give
    (`policy`: the course's deadlines.toml as `deadlines.load` read it, for the release headers).

    Each notebook's release and solution are generated by nbgrader's own converters, in this
    process, one notebook at a time; their hashes are kept in `.chapter/generated.json` under
    `generation_key`, so a notebook whose text did not change is not generated again. With `only`,
    just those notebooks are checked; otherwise also every file of release/ and solutions/
    that no source gives.
    """
    texts, reasons = source_texts(root, only)
    cache_path = root / GENERATED_CACHE
    known: dict = {}
    if cache_path.exists():
        try:
            known = json.loads(cache_path.read_text())
        except ValueError:
            known = {}
    from graders.course import deadlines
    keys = {notebook: generation_key(root, notebook, text, deadlines.release_text(policy, notebook.split("/")[0]))
            for notebook, text in texts.items()}
    stale = [nb for nb in texts if not cache or not isinstance(known.get(keys[nb]), dict)]
    if stale:
        with owned_scratch("chapter-check-") as tmp:
            course = generate_notebooks(root, Path(tmp), {notebook: texts[notebook] for notebook in stale})
            for notebook in stale:
                known[keys[notebook]] = {label: _sha(course / label / f"{notebook}.ipynb") for label in GENERATED}
        cache_path.parent.mkdir(exist_ok=True)
        cache_path.write_text(json.dumps(known, indent=1, sort_keys=True))
    expected = {label: {f"{nb}.ipynb": known[keys[nb]][label] for nb in texts} for label in GENERATED}
    if not only:
        for label, files in expected.items():
            files.update(other_files(root))
    for label in GENERATED:
        committed = root / label
        kept = ({str(p.relative_to(committed)) for p in committed.rglob("*") if p.is_file()}
                if committed.exists() else set())
        if only:
            kept &= set(expected[label])
        for rel in sorted(kept | set(expected[label])):
            if rel not in kept:
                reasons.append(f"{label}/{rel} is missing: run `chapter build`")
            elif rel not in expected[label]:
                reasons.append(f"{label}/{rel} has no source: run `chapter build`")
            elif _sha(committed / rel) != expected[label][rel]:
                reasons.append(f"{label}/{rel} is out of date with source/: run `chapter build`")
    return reasons


def generate_notebooks(root: Path, course: Path, texts: dict[str, str]) -> Path:
    """In the scratch folder `course` (the configuration of `root`), the release and the solution
    of each notebook of `texts` ({"assignment/id": source .ipynb text}), generated by nbgrader's
    converters in this process, one notebook at a time (`--notebook <id>`); the files only, with
    no cells recorded in the scratch gradebook (see `nbgrader_inprocess`)."""
    copy_config(root, course)
    for notebook, text in texts.items():
        (course / "source" / notebook).parent.mkdir(parents=True, exist_ok=True)
        (course / "source" / f"{notebook}.ipynb").write_text(text)
    for notebook in texts:
        assignment, item = notebook.split("/")
        for command in CONVERTERS:
            nbgrader_inprocess(command, assignment, course, notebook=item, files_only=True)
    return course


def other_files(root: Path) -> dict[str, str]:
    """{path inside release/: hash} of the files other than notebooks that nbgrader copies from
    source/<assignment>/ into release/ and solutions/ (those its `CourseDirectory.ignore` lets through)."""
    from nbgrader.utils import find_all_files
    ignore = nbgrader_coursedir(root).ignore
    files = {}
    for assignment in assignments(root):
        folder = root / "source" / assignment
        for name in find_all_files(str(folder), [*ignore, "*.ipynb", ".ipynb_checkpoints", "__pycache__"]):
            files[str(Path(assignment) / Path(name).relative_to(folder))] = _sha(Path(name))
    return files


def _sha(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def course_with_pct(root: Path, course: Path) -> Path:
    """Put the .pct.py sources into the scratch course so its .ipynb come from them."""
    for pct in (root / "source").glob("*/*.pct.py"):
        shutil.copy(pct, course / "source" / pct.parent.name / pct.name)
    return course


