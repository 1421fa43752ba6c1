"""A student's notebook put back into nbgrader's shape: flags restored, missing cells re-added, hidden tests stripped."""
from __future__ import annotations

import functools
import json
import math

import nbformat

from graders.engine import feedback as say
from graders.engine.course_dir import InstructorNotebook
from graders.engine.shared import silent_log
from graders.engine.snapshot import GradebookStandIn


@functools.lru_cache(maxsize=1)
def _overwrite_cells_class():
    """(The class is made once; each notebook gets an instance of its own: it keeps that notebook's state.)"""
    from nbgrader.preprocessors import NbGraderPreprocessor, OverwriteCells

    class SnapshotOverwriteCells(OverwriteCells):
        """nbgrader's OverwriteCells, reading the instructor's cells from a snapshot."""

        def preprocess(self, nb, resources):
            self.notebook_id = resources["nbgrader"]["notebook"]
            self.assignment_id = resources["nbgrader"]["assignment"]
            self.gradebook = resources["snapshot"]
            self.changes = resources.setdefault("changes", [])
            nb, resources = NbGraderPreprocessor.preprocess(self, nb, resources)
            if self.add_missing_cells:
                nb, resources = self.add_missing_task_cells(nb, resources)
            return nb, resources

        def report_change(self, name, attr, old, new):
            self.changes.append((name, attr))

    return SnapshotOverwriteCells


def nbgrader_meta(cell):
    meta = cell.get("metadata", {}).get("nbgrader") if isinstance(cell.get("metadata"), dict) else None
    return meta if isinstance(meta, dict) else None


def normalize(nb) -> list[str]:
    """Make a hostile notebook structurally safe for nbgrader's preprocessors; say what was wrong."""
    notes = []
    if not isinstance(nb.get("cells"), list):
        raise ValueError(say.NO_LIST_OF_CELLS)
    if not isinstance(nb.get("metadata"), dict):
        nb["metadata"] = nbformat.NotebookNode()
    # Widget state is the student's to write, and a page made from the notebook (formgrader's,
    # the feedback) that finds it loads a widget manager from a CDN to render it: none is kept.
    nb.metadata.pop("widgets", None)
    kept = []
    for cell in nb.cells:
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            notes.append(say.MALFORMED_CELL_DROPPED)
            continue
        if isinstance(cell.get("source"), list):
            cell["source"] = "".join(str(s) for s in cell["source"])
        if not isinstance(cell.get("source"), str):
            cell["source"] = ""
        if not isinstance(cell.get("metadata"), dict):
            cell["metadata"] = nbformat.NotebookNode()
        meta = cell.metadata.get("nbgrader")    # present but None or {} is malformed too
        if "nbgrader" in cell.metadata and not (isinstance(meta, dict) and meta.get("grade_id")
                                                and isinstance(meta.get("grade_id"), str)):
            del cell.metadata["nbgrader"]
            notes.append(say.MALFORMED_METADATA)
        if cell.cell_type == "code":
            cell.setdefault("outputs", [])
            cell.setdefault("execution_count", None)
        kept.append(cell)
    nb.cells = kept
    return notes


def deduplicate(nb) -> list[str]:
    """nbgrader's DeduplicateIds rule, the last copy of a cell keeps its nbgrader metadata, applied
    to every cell that carries a grade_id; returns the ids found more than once, sorted.

    nbgrader's own looks only at cells flagged grade, solution or locked: a copy whose flags were
    cleared kept its grade_id, `restore_flags` gave the flags back, and nbgrader's CheckCellMetadata
    then refused the notebook (two cells, one id). One pass, so a notebook of many cells costs no more.
    """
    seen, duplicated = set(), set()
    for cell in reversed(nb.cells):
        meta = nbgrader_meta(cell)
        if meta is None:
            continue
        if meta["grade_id"] in seen:
            duplicated.add(meta["grade_id"])
            del cell.metadata["nbgrader"]
        else:
            seen.add(meta["grade_id"])
    return sorted(duplicated)


def restore_flags(nb, instructor: InstructorNotebook) -> list[str]:
    """Give every known cell the instructor's nbgrader flags; strip unknown ones."""
    notes, unknown = [], []
    grade = {c.name: c for c in instructor.grade_cells}
    solution = {c.name for c in instructor.solution_cells}
    task = {c.name: c for c in instructor.task_cells}
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if meta is None:
            continue
        name = meta.get("grade_id")
        source = instructor.source(name)
        if source is None:
            del cell.metadata["nbgrader"]
            unknown.append(name)
            continue
        want = {"grade": name in grade, "solution": name in solution, "task": name in task,
                "locked": bool(source.locked), "grade_id": name, "schema_version": 3}
        if name in grade:
            want["points"] = float(grade[name].max_score)
        elif name in task:
            want["points"] = float(task[name].max_score)
        # nbgrader writes only the flags a cell has: a missing flag is False, not a change
        changed = any((bool(meta.get(k, False)) if isinstance(v, bool) else meta.get(k)) != v
                      for k, v in want.items() if k not in ("schema_version", "points"))
        if "points" in want and _points(meta.get("points")) != want["points"]:
            notes.append(say.points_restored(name))
        elif changed:
            notes.append(say.metadata_restored(name))
        for key in ("grade", "solution", "task", "locked", "points"):
            meta.pop(key, None)
        meta.update(want)
    if unknown:
        notes.append(say.not_in_assignment(unknown))
    return notes


def _points(value) -> float | None:
    """A student's `points` as a number (missing: 0), or None when it is not a finite number."""
    try:
        points = float(value or 0)
    except (TypeError, ValueError):
        return None
    return points if math.isfinite(points) else None


def readd_missing(nb, instructor: InstructorNotebook) -> list[str]:
    """Put back graded and locked cells the submission lost, after their predecessor (as nbgrader does)."""
    from nbgrader.preprocessors import OverwriteCells
    notes = []
    present = {m.get("grade_id") for m in map(nbgrader_meta, nb.cells) if m}
    grade = {c.name: c for c in instructor.grade_cells}
    solution = {c.name for c in instructor.solution_cells}
    maker = OverwriteCells(log=silent_log)
    previous = None
    for source in instructor.source_cells:
        name = source.name
        if name in present or not (name in grade or source.locked):
            previous = name if name in present else previous
            continue
        if name in grade:
            cell = nbformat.from_dict(   # nbgrader gives a plain dict; the grader reads attributes
                maker.missing_cell_transform(source, grade[name].max_score, is_solution=name in solution))
        else:
            cell = _missing_locked_cell(maker, source)
        position = 0
        if previous is not None:
            position = next(i for i, c in enumerate(nb.cells)
                            if (nbgrader_meta(c) or {}).get("grade_id") == previous) + 1
        nb.cells.insert(position, cell)
        present.add(name)
        previous = name
        notes.append(say.cell_put_back(name))
    return notes


def _missing_locked_cell(maker, source):
    note = maker.missing_cell_notification.format(cell_id=source.name)
    cell = {"cell_type": source.cell_type, "source": note + source.source,
            "metadata": {"deletable": False, "editable": False,
                         "nbgrader": {"grade": False, "grade_id": source.name, "locked": True,
                                      "solution": False, "task": False, "schema_version": 3,
                                      "checksum": source.checksum}}}
    if source.cell_type == "code":
        cell["source"] = "# " + cell["source"]
        cell.update(execution_count=None, outputs=[])
    return nbformat.from_dict(cell)


def sanitize(nb, instructor: InstructorNotebook, assignment: str, student: str,
             begin: str = "BEGIN HIDDEN TESTS", end: str = "END HIDDEN TESTS"):
    """nbgrader's sanitizing step (autograde's first pass), fed from the snapshot; returns notes."""
    from nbgrader.preprocessors import ClearOutput
    notes = normalize(nb)
    duplicated = deduplicate(nb)
    if duplicated:
        notes.append(say.cells_repeated(duplicated))
    resources = {"nbgrader": {"notebook": instructor.name, "assignment": assignment, "student": student,
                              "db_url": None}, "snapshot": GradebookStandIn(instructor)}
    nb, resources = ClearOutput(log=silent_log).preprocess(nb, resources)
    notes += restore_flags(nb, instructor)
    if instructor.kernelspec:
        nb.metadata["kernelspec"] = json.loads(instructor.kernelspec)
    before = {m["grade_id"]: c.source for c in nb.cells if (m := nbgrader_meta(c))}
    overwrite = _overwrite_cells_class()(log=silent_log, add_missing_cells=True)
    nb, resources = overwrite.preprocess(nb, resources)
    for name, attr in resources.get("changes", []):
        if attr == "checksum":
            original = instructor.source(name).source
            if before.get(name) not in (original, strip_hidden(original, begin, end)):
                notes.append(say.locked_cell_restored(name))
        elif attr == "cell_type":
            notes.append(say.cell_type_restored(name))
    notes += readd_missing(nb, instructor)
    check_metadata(nb)
    return nb, unique(notes)


def check_metadata(nb) -> None:
    """nbgrader's CheckCellMetadata, with one of its validators kept (building one reads and
    parses three schema files); the same checks, the same error when one fails."""
    from nbgrader.nbgraderformat import ValidationError
    try:
        _metadata_validator().validate_nb(nb)
    except ValidationError:
        raise ValidationError("Notebook failed to validate; the nbgrader metadata may be corrupted.") from None


MEMO_ENTRIES = 4096        # valid metadata texts remembered, then no more (a hostile class of distinct metadata)
MEMO_TEXT = 2048           # metadata longer than this is never remembered


@functools.lru_cache(maxsize=1)
def _metadata_validator():
    """nbgrader's MetadataValidator, which remembers the metadata it found valid.

    nbgrader checks each cell's metadata in two parts: its schema version and `jsonschema.validate`
    against the schema (which first checks nbgrader's schema file itself, ~1 ms a cell), then the
    rules of version 3 (a grade id, points, the cell type). The first part depends on the metadata
    alone, and every student's copy of a cell carries the same (`restore_flags` writes it): that
    part is skipped for metadata whose exact JSON text (1, 1.0 and true apart) passed it before.
    Metadata met for the first time, and any that failed, goes through nbgrader's own code, so a
    hostile cell gets nbgrader's error; the version 3 rules run for every cell. nbgrader's modules
    are not changed: the remembering sits between its two classes (MetadataValidatorV3 calls it
    as its base)."""
    from nbgrader.nbgraderformat import MetadataValidator
    from nbgrader.nbgraderformat.common import BaseMetadataValidator

    class Remembering(BaseMetadataValidator):
        def validate_cell(self, cell):
            meta = cell.metadata.get("nbgrader") if isinstance(cell.get("metadata"), dict) else None
            try:
                text = json.dumps(meta, sort_keys=True) if isinstance(meta, dict) else None
            except (TypeError, ValueError, RecursionError):
                text = None
            valid = self.__dict__.setdefault("_valid_texts", set())
            if text is not None and text in valid:
                return
            super().validate_cell(cell)
            if text is not None and len(text) <= MEMO_TEXT and len(valid) < MEMO_ENTRIES:
                valid.add(text)

    class Validator(MetadataValidator, Remembering):
        pass

    return Validator()


def unique(items):
    seen, out = set(), []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def strip_hidden(source: str, begin: str, end: str) -> str:
    """A test cell's visible part, by nbgrader's own ClearHiddenTests rule."""
    if begin not in source and end not in source:
        return source    # no marker on any line: the rule keeps every line (and building it cost more)
    cell = nbformat.NotebookNode(cell_type="code", source=source, metadata={})
    try:
        _hidden_tests_clearer(begin, end)._remove_hidden_test_region(cell)
    except RuntimeError:   # unbalanced markers: keep nothing after the first BEGIN
        cell.source = source.split(begin)[0].rsplit("\n", 1)[0]
    return cell.source


@functools.lru_cache(maxsize=8)
def _hidden_tests_clearer(begin: str, end: str):
    """nbgrader's ClearHiddenTests for these markers, built once (a traitlets object costs ~0.1 ms;
    its region rule keeps no state between cells)."""
    from nbgrader.preprocessors import ClearHiddenTests
    return ClearHiddenTests(log=silent_log, begin_test_delimeter=begin, end_test_delimeter=end)
