"""A submission read once, bounded in size, before anything else looks at it."""
from __future__ import annotations

import json
from pathlib import Path

import nbformat

from graders import unicode
from graders.engine import feedback as say
from graders.engine.course_dir import InstructorNotebook, MAX_NOTEBOOK_BYTES, MAX_NOTEBOOK_CELLS, MAX_NOTEBOOK_SOURCE


class GradebookStandIn:
    """Stands in for nbgrader's Gradebook inside its own preprocessors."""

    def __init__(self, notebook: InstructorNotebook):
        self.notebook = notebook

    def find_notebook(self, name, assignment):
        return self.notebook

    def find_source_cell(self, name, notebook, assignment):
        from nbgrader.api import MissingEntry
        cell = self.notebook.source(name)
        if cell is None:
            raise MissingEntry(name)
        return cell

    def find_graded_cell(self, name, notebook, assignment):
        from nbgrader.api import MissingEntry
        for cell in self.notebook.grade_cells + self.notebook.task_cells:
            if cell.name == name:
                return cell
        raise MissingEntry(name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def read_submission(path: Path):
    if path.is_symlink() or not path.is_file():
        raise ValueError(say.NOT_A_FILE)
    if path.stat().st_size > MAX_NOTEBOOK_BYTES:
        raise ValueError(say.too_large(MAX_NOTEBOOK_BYTES))
    text = path.read_bytes().decode("utf-8")
    try:
        # nbformat.reads' own steps, with the cells counted in the parsed JSON, before any is built
        data = nbformat.reader.parse_json(text)
        cells = count_cells(data)
        if cells > MAX_NOTEBOOK_CELLS:
            raise ValueError(say.too_many_cells(cells, MAX_NOTEBOOK_CELLS))
        clear_outputs(data)
        major, minor = nbformat.reader.get_version(data)
        if major not in nbformat.versions:
            raise nbformat.NBFormatError(f"unsupported nbformat version {major}")
        nb = nbformat.convert(nbformat.versions[major].to_notebook_json(data, minor=minor), 4)
        chars = sum(len(c.source) for c in nb.get("cells") or ()
                    if isinstance(c, dict) and isinstance(c.get("source"), str))
        if chars > MAX_NOTEBOOK_SOURCE:
            raise ValueError(say.too_much_text(chars, MAX_NOTEBOOK_SOURCE))
        try:
            nbformat.validate(nb)
        except nbformat.ValidationError as exc:   # as nbformat.reads: said, and read all the same
            nbformat.get_logger().error("Notebook JSON is invalid: %s", exc)
            nb = mended(nb)
        # JSON can spell a lone surrogate, which nothing can write as UTF-8 later: it reads as U+FFFD
        return unicode.mend(nb) if unicode.may_hold(text) else nb
    except (AttributeError, TypeError, KeyError, AssertionError, nbformat.NBFormatError, nbformat.ValidationError):
        # JSON, but an array, a string, an unknown nbformat version, no cells (nbformat's validator
        # asserts on a minor version that is not a number)...
        raise ValueError(say.NOT_A_NOTEBOOKS_SHAPE) from None


def mended(nb):
    """A notebook the schema refuses, with its metadata and attachments made valid: nbconvert makes
    no page of an invalid notebook, so formgrader's view and the feedback need it. nbformat's own
    repair strips the metadata the schema refuses, and an attachment that is not a bundle of text
    by type is dropped. (Grading clears the outputs, and `sanitize.normalize` mends the cells.)"""
    for cell in nb.get("cells") if isinstance(nb.get("cells"), list) else ():
        if isinstance(cell, dict) and "attachments" in cell:
            given = cell["attachments"] if cell.get("cell_type") in ("markdown", "raw") else None
            kept = {name: bundle for name, bundle in given.items() if _text_bundle(bundle)} \
                if isinstance(given, dict) else {}
            if kept:
                cell["attachments"] = kept
            else:
                del cell["attachments"]
    try:
        return nbformat.from_dict(nbformat.validator.normalize(nb, strip_invalid_metadata=True)[1])
    except Exception:  # noqa: BLE001 - a shape nbformat's repair cannot take: graded as it is
        return nb


def _text_bundle(bundle) -> bool:
    return isinstance(bundle, dict) and all(
        isinstance(value, str) or (isinstance(value, list) and all(isinstance(line, str) for line in value))
        for value in bundle.values())


def _cell_lists(data) -> list[list]:
    """The lists of cells in a notebook's parsed JSON: nbformat 4's one, or nbformat 3's worksheets'."""
    if not isinstance(data, dict):
        return []
    sheets = data.get("worksheets")
    lists = [data.get("cells")] + ([w.get("cells") for w in sheets if isinstance(w, dict)]
                                   if isinstance(sheets, list) else [])
    return [cells for cells in lists if isinstance(cells, list)]


def count_cells(data) -> int:
    return sum(len(cells) for cells in _cell_lists(data))


def clear_outputs(data) -> None:
    """Empty every cell's outputs in the parsed JSON, before nbformat builds and checks them. Grading
    runs each code cell again and keeps only what the sandbox gives, as nbgrader's ClearOutput does,
    so the submission's own outputs are never read: 900,000 tiny ones in a 50 MB notebook held the
    reading for most of a minute."""
    for cells in _cell_lists(data):
        for cell in cells:
            if isinstance(cell, dict) and "outputs" in cell:
                cell["outputs"] = []


def why_broken(exc) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return say.NOT_UTF8
    if isinstance(exc, RecursionError):
        return say.NESTED_TOO_DEEPLY
    if isinstance(exc, (json.JSONDecodeError,)) or "JSON" in type(exc).__name__ \
            or type(exc).__name__ == "NotJSONError":
        return say.NOT_JSON
    if isinstance(exc, ValueError) and str(exc).startswith("the "):
        return str(exc)
    return say.unreadable(type(exc).__name__)
