"""sanitize.py on its own: a hostile notebook put back into nbgrader's shape, no sandbox, no gradebook.

The instructor's notebook is built by hand (two cells: a solution and a locked test worth 2
points), with checksums from nbgrader's own `compute_checksum`, so nbgrader's OverwriteCells
judges the student's copy exactly as it would in `nbgrader autograde`.
"""
from __future__ import annotations

import copy
import time
from types import SimpleNamespace

import nbformat
import pytest
from nbgrader.utils import compute_checksum

from graders.engine.course_dir import InstructorNotebook
from graders.engine.sanitize import deduplicate, normalize, readd_missing, restore_flags, sanitize, strip_hidden

TEST = "assert x == 1\n### BEGIN HIDDEN TESTS\nassert x + 1 == 2\n### END HIDDEN TESTS"


def _instructor_cell(source, grade_id, cell_type="code", **flags):
    meta = {"grade": False, "solution": False, "locked": False, "task": False, "schema_version": 3,
            "grade_id": grade_id, **flags}
    make = nbformat.v4.new_code_cell if cell_type == "code" else nbformat.v4.new_markdown_cell
    cell = make(source, metadata={"nbgrader": meta})
    cell.metadata.nbgrader["checksum"] = compute_checksum(cell)
    return cell


SOURCE = [
    _instructor_cell("Read the question.", "intro", cell_type="markdown", locked=True),
    _instructor_cell("# YOUR CODE HERE\nraise NotImplementedError()", "answer", solution=True),
    _instructor_cell(TEST, "test", grade=True, locked=True, points=2),
]


def instructor() -> InstructorNotebook:
    cells = [SimpleNamespace(name=c.metadata.nbgrader.grade_id, cell_type=c.cell_type,
                             locked=c.metadata.nbgrader.locked, checksum=c.metadata.nbgrader.checksum,
                             source=c.source) for c in SOURCE]
    return InstructorNotebook(name="nb", kernelspec=None, source_cells=cells,
                              grade_cells=[SimpleNamespace(name="test", max_score=2.0, cell_type="code")],
                              solution_cells=[SimpleNamespace(name="answer")], task_cells=[])


def submission():
    """What a student hands in: the released cells (hidden tests gone), the answer written."""
    nb = nbformat.v4.new_notebook()
    nb.cells = copy.deepcopy(SOURCE)
    nb.cells[1].source = "x = 1"
    nb.cells[2].source = strip_hidden(TEST, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
    return nb


def flags(nb):
    return [(c.metadata.get("nbgrader") or {}).get("grade_id") for c in nb.cells]


def test_an_honest_submission_passes_unchanged_and_unremarked():
    nb, notes = sanitize(submission(), instructor(), "a1", "s1")
    assert notes == []
    assert flags(nb) == ["intro", "answer", "test"]
    assert nb.cells[1].source == "x = 1"
    assert nb.cells[2].metadata.nbgrader["points"] == 2.0


@pytest.mark.parametrize("points", ["lots", [1], {"a": 1}, "nan", float("inf"), None, True])
def test_non_numeric_points_are_refused_and_the_instructors_restored(points):
    nb = submission()
    nb.cells[2].metadata.nbgrader["points"] = points
    notes = restore_flags(nb, instructor())
    assert nb.cells[2].metadata.nbgrader["points"] == 2.0
    assert notes == ["the points of cell 'test' had been changed; the original value was restored"]


def test_raised_points_and_changed_flags_are_restored():
    nb = submission()
    nb.cells[1].metadata.nbgrader.update(grade=True, points=100)      # the answer made a graded cell
    nb.cells[2].metadata.nbgrader["points"] = "2"                      # the same number, as text
    notes = restore_flags(nb, instructor())
    answer = nb.cells[1].metadata.nbgrader
    assert (answer["grade"], answer["solution"], "points" in answer) == (False, True, False)
    assert notes == ["the nbgrader metadata of cell 'answer' had been changed; it was restored"]


@pytest.mark.parametrize("emptied", [{}, None, "text", [], {"grade_id": ""}, {"grade_id": 3},
                                     {"solution": True}])
def test_emptied_or_malformed_nbgrader_metadata_is_dropped_and_grading_goes_on(emptied):
    nb = submission()
    nb.cells.insert(2, nbformat.v4.new_code_cell("y = 2", metadata={"nbgrader": emptied}))
    out, notes = sanitize(nb, instructor(), "a1", "s1")
    assert "nbgrader" not in out.cells[2].metadata
    assert flags(out) == ["intro", "answer", None, "test"]
    assert notes == ["a cell with malformed nbgrader metadata is graded as ordinary code"]


def test_a_duplicated_cell_keeps_its_last_copy_and_the_others_run_as_plain_code():
    nb = submission()
    early = copy.deepcopy(nb.cells[1])
    early.source = "x = 99"
    nb.cells.insert(1, early)
    out, notes = sanitize(nb, instructor(), "a1", "s1")
    assert flags(out) == ["intro", None, "answer", "test"]
    assert out.cells[2].source == "x = 1"
    assert "nbgrader" not in out.cells[1].metadata
    assert notes == ["cells appear more than once (answer); only the last copy of each is graded"]


@pytest.mark.parametrize("fake_at", [2, 3])
def test_a_copy_of_a_test_cell_with_its_flags_cleared_is_graded_once(fake_at):
    nb = submission()
    fake = copy.deepcopy(nb.cells[2])
    fake.source = "pass  # my own test"
    for flag in ("grade", "locked", "solution"):
        fake.metadata.nbgrader[flag] = False
    nb.cells.insert(fake_at, fake)
    out, notes = sanitize(nb, instructor(), "a1", "s1")
    assert flags(out).count("test") == 1
    graded = next(c for c in out.cells if flags(nbformat.v4.new_notebook(cells=[c])) == ["test"])
    assert graded.source.startswith("assert x == 1")          # the instructor's test, whatever the copy said
    assert notes[0] == "cells appear more than once (test); only the last copy of each is graded"


def test_a_notebook_of_many_cells_is_deduplicated_in_one_pass():
    cells = [{"cell_type": "code", "source": "", "metadata": {"nbgrader": {"grade_id": f"c{i % 25_000}"}}}
             for i in range(50_000)]
    nb = nbformat.from_dict({"cells": cells})
    started = time.process_time()
    duplicated = deduplicate(nb)
    assert time.process_time() - started < 2.0      # 0.1 s here; comparing every pair would take minutes
    assert len(duplicated) == 25_000 and sum("nbgrader" in c.metadata for c in nb.cells) == 25_000
    nb = nbformat.from_dict({"cells": [dict(cells[i % 15], outputs=[]) for i in range(30)]})  # 15 ids, twice
    _, notes = sanitize(nb, instructor(), "a1", "s1")
    assert notes[0] == ("cells appear more than once (c0, c1, c10, c11, c12, c13, c14, c2, c3, c4 and 5 more); "
                        "only the last copy of each is graded")
    assert notes[1:2] == ["the cells 'c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7', 'c8', 'c9' and 5 more are not "
                          "part of this assignment; they run as ordinary code"]


def test_a_cell_from_elsewhere_runs_as_ordinary_code_and_is_named():
    nb = submission()
    nb.cells.append(nbformat.v4.new_code_cell("z = 3", metadata={"nbgrader": {"grade_id": "other", "grade": True,
                                                                               "points": 50}}))
    out, notes = sanitize(nb, instructor(), "a1", "s1")
    assert "nbgrader" not in out.cells[3].metadata and out.cells[3].source == "z = 3"
    assert notes == ["the cell 'other' is not part of this assignment; it runs as ordinary code"]


def test_duplicate_and_missing_cell_ids_do_not_stop_it():
    nb = submission()
    for cell in nb.cells:
        cell["id"] = "same"
    del nb.cells[1]["id"]
    out, notes = sanitize(nb, instructor(), "a1", "s1")
    assert flags(out) == ["intro", "answer", "test"] and notes == []


def test_reordered_cells_keep_the_students_order():
    nb = submission()
    nb.cells = [nb.cells[2], nb.cells[0], nb.cells[1]]
    out, notes = sanitize(nb, instructor(), "a1", "s1")
    assert flags(out) == ["test", "intro", "answer"] and notes == []


def test_a_deleted_test_cell_is_put_back_after_its_predecessor():
    nb = submission()
    del nb.cells[2]
    nb.cells.append(nbformat.v4.new_markdown_cell("my notes"))
    out, notes = sanitize(nb, instructor(), "a1", "s1")
    assert flags(out) == ["intro", "answer", "test", None]
    assert notes == ["the cell 'test' was missing from the submission; it was put back"]
    assert out.cells[2].metadata.nbgrader["points"] == 2.0


def test_every_cell_deleted_gives_back_the_locked_and_graded_ones():
    nb = nbformat.v4.new_notebook()
    out, notes = sanitize(nb, instructor(), "a1", "s1")
    assert flags(out) == ["intro", "test"]
    assert len(notes) == 2


def test_readd_missing_alone_says_nothing_when_nothing_is_missing():
    nb = submission()
    assert readd_missing(nb, instructor()) == [] and len(nb.cells) == 3


def test_an_edited_locked_cell_and_a_changed_cell_type_are_restored():
    nb = submission()
    nb.cells[0].source = "The question, reworded."
    nb.cells[2].cell_type = "markdown"
    del nb.cells[2]["outputs"], nb.cells[2]["execution_count"]
    out, notes = sanitize(nb, instructor(), "a1", "s1")
    assert out.cells[0].source == SOURCE[0].source
    assert out.cells[2].cell_type == "code"
    assert "the locked cell 'intro' had been edited; the original was restored" in notes
    assert "the type of cell 'test' had been changed; it was restored" in notes


def test_huge_outputs_are_cleared_before_anything_reads_them():
    nb = submission()
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="x" * (8 << 20))]
    nb.cells[1].execution_count = 7
    out, _ = sanitize(nb, instructor(), "a1", "s1")
    assert out.cells[1].outputs == [] and out.cells[1].execution_count is None


def test_a_students_widget_state_never_reaches_a_page():
    """Notebook metadata holding widget state: nbconvert's page for it would load a widget manager
    from a CDN, on the instructor's formgrader too, and hand it the student's state to render."""
    from pathlib import Path

    from nbconvert import HTMLExporter

    from graders.engine.course_dir import load_config
    nb = submission()
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "version_major": 2, "version_minor": 0, "state": {"w": {
            "model_name": "HTMLModel", "model_module": "@jupyter-widgets/controls", "model_module_version": "2.0.0",
            "state": {"value": "<img src=x onerror=alert(1)>"}}}}}
    out, notes = sanitize(nb, instructor(), "a1", "s1")
    page, _ = HTMLExporter(config=load_config(Path(__file__).resolve().parents[2])).from_notebook_node(out)
    assert "widget-state" not in page and "@jupyter-widgets" not in page and "onerror" not in page
    assert notes == [] and flags(out) == ["intro", "answer", "test"]


def test_normalize_drops_what_is_not_a_cell_and_mends_the_rest():
    nb = nbformat.from_dict({"nbformat": 4, "nbformat_minor": 5, "metadata": [],
                             "cells": [1, {"cell_type": "widget"}, {"cell_type": "code", "source": ["a", 1]},
                                       {"cell_type": "markdown", "source": None, "metadata": "x"}]})
    notes = normalize(nb)
    assert [c.cell_type for c in nb.cells] == ["code", "markdown"]
    assert nb.cells[0].source == "a1" and nb.cells[0].outputs == []
    assert nb.cells[1].source == "" and nb.cells[1].metadata == {}
    assert isinstance(nb.metadata, dict)
    assert notes == ["a malformed cell was dropped"] * 2
    with pytest.raises(ValueError, match="no list of cells"):
        normalize(nbformat.from_dict({"cells": {}}))


def test_hidden_tests_are_stripped_by_nbgraders_rule_even_unbalanced():
    begin, end = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"
    assert strip_hidden(TEST, begin, end) == "assert x == 1"
    assert strip_hidden("a = 1\n### BEGIN HIDDEN TESTS\nsecret()", begin, end) == "a = 1"
    assert strip_hidden("plain", begin, end) == "plain"


def _metadata_cell(i, **meta):
    base = {"grade": True, "solution": False, "locked": True, "task": False, "schema_version": 3,
            "grade_id": f"cell-{i}", "points": 1}
    return nbformat.v4.new_code_cell("pass", metadata={"nbgrader": {**base, **meta}})


def _counting_schema_checks(monkeypatch):
    """The calls nbgrader's metadata validator makes to `jsonschema.validate`, one per cell it
    checks against its schema (counted without changing what the call does)."""
    import jsonschema
    from nbgrader.nbgraderformat import common
    calls = []
    counting = type("Counting", (), {"validate": staticmethod(lambda meta, schema: calls.append(dict(meta))
                                                              or jsonschema.validate(meta, schema)),
                                     "__getattr__": lambda self, name: getattr(jsonschema, name)})()
    monkeypatch.setattr(common, "jsonschema", counting)
    return calls


def test_valid_metadata_is_checked_against_the_schema_once_and_nothing_else(monkeypatch):
    """The metadata check (nbgrader's own) remembers metadata that passed the schema, under its
    exact text: the same metadata again is not validated again; a changed value (1 -> 1.0, 2),
    and any metadata that failed, is validated again every time, with nbgrader's error."""
    import jsonschema

    from graders.engine import sanitize as module
    module._metadata_validator.cache_clear()
    calls = _counting_schema_checks(monkeypatch)
    good = [_metadata_cell(i) for i in range(5)]
    for _ in range(3):
        module.check_metadata(nbformat.v4.new_notebook(cells=[nbformat.from_dict(c) for c in good]))
    assert len(calls) == 5
    for hostile in ({"points": True}, {"points": "ten"}, {"grade": 1}, {"grade_id": 7}):
        for _ in range(2):
            with pytest.raises(jsonschema.ValidationError) as ours:
                module._metadata_validator().validate_cell(_metadata_cell(1, **hostile))
            with pytest.raises(jsonschema.ValidationError) as theirs:
                jsonschema.validate(_metadata_cell(1, **hostile).metadata["nbgrader"],
                                    module._metadata_validator().schema)
            assert ours.value.message == theirs.value.message
    assert len(calls) == 5 + 8
    module._metadata_validator().validate_cell(_metadata_cell(1, points=1.0))   # another text: validated
    module._metadata_validator().validate_cell(_metadata_cell(1, points=2))
    assert len(calls) == 5 + 8 + 2
    module._metadata_validator().validate_cell(_metadata_cell(1))
    assert len(calls) == 5 + 8 + 2
    module._metadata_validator.cache_clear()


def test_nbgraders_own_modules_are_left_as_they_are():
    """Remembering valid metadata changes nothing in nbgrader: its module still calls jsonschema itself."""
    import jsonschema
    from nbgrader.nbgraderformat import common

    from graders.engine.sanitize import check_metadata
    check_metadata(nbformat.v4.new_notebook(cells=[_metadata_cell(1)]))
    assert common.jsonschema is jsonschema


@pytest.mark.parametrize("cells", [
    [_metadata_cell(1), _metadata_cell(1)],                                        # the same id twice
    [nbformat.v4.new_markdown_cell("x", metadata={"nbgrader": {
        "grade": True, "solution": False, "locked": False, "schema_version": 3, "grade_id": "m", "points": 1}})],
    [_metadata_cell(1, points="ten")],
    [_metadata_cell(1, schema_version=9)],
    [_metadata_cell(1, grade_id="")],
    [_metadata_cell(1), _metadata_cell(2)],                                        # valid
])
def test_the_metadata_check_fails_as_nbgraders_own_does(cells):
    from nbgrader.preprocessors import CheckCellMetadata

    from graders.engine.sanitize import check_metadata

    def outcome(check):
        try:
            check(nbformat.v4.new_notebook(cells=[nbformat.from_dict(c) for c in cells]))
        except Exception as exc:  # noqa: BLE001 - the kind and message are what is compared
            return type(exc), str(exc)
        return None

    for _ in range(2):    # the second time with what the first remembered
        assert outcome(check_metadata) == outcome(lambda nb: CheckCellMetadata().preprocess(nb, {}))


def test_what_one_notebook_changed_is_not_said_of_the_next():
    """The preprocessors' classes are made once; what one tampered notebook left in them never
    reaches the next student's notes or cells."""
    tampered = submission()
    tampered.cells[0].source = "The question, reworded."
    _, notes = sanitize(tampered, instructor(), "a1", "s1")
    assert notes
    out, notes = sanitize(submission(), instructor(), "a1", "s2")
    assert notes == [] and out.cells[0].source == SOURCE[0].source
