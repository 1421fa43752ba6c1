"""snapshot.py on its own: a submission read once and bounded, and the instructor's notebook
standing in for nbgrader's gradebook. Every unreadable notebook gets a reason a student can act on."""
from __future__ import annotations

import json
import os
from types import SimpleNamespace

import nbformat
import pytest
from nbgrader.api import MissingEntry

from graders.engine import snapshot
from graders.engine.course_dir import InstructorNotebook
from graders.engine.snapshot import GradebookStandIn, why_broken, read_submission

NOTEBOOK = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}


def why(path) -> str:
    """What the student is told about the notebook at `path`, or "" when it was read."""
    try:
        read_submission(path)
    except Exception as exc:  # noqa: BLE001 - as grading catches it
        return why_broken(exc)
    return ""


def test_a_notebook_is_read_in_version_4(tmp_path):
    (tmp_path / "v4.ipynb").write_text(json.dumps(NOTEBOOK))
    assert read_submission(tmp_path / "v4.ipynb").nbformat == 4
    old = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": []}]}
    (tmp_path / "v3.ipynb").write_text(json.dumps(old))
    assert read_submission(tmp_path / "v3.ipynb").nbformat == 4          # converted, as Jupyter does


@pytest.mark.parametrize("data, reason", [
    (b"", "not valid JSON"),
    (b'{"cells": [', "not valid JSON"),
    (b"\xff\xfe{}", "not UTF-8"),
    (b"[1, 2]", "does not have a notebook's shape"),
    (b'"a notebook"', "does not have a notebook's shape"),
    (b"42", "does not have a notebook's shape"),
    (json.dumps({"nbformat": 99, "cells": []}).encode(), "does not have a notebook's shape"),
    (json.dumps({"nbformat": "4", "cells": []}).encode(), "does not have a notebook's shape"),
    (json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}}).encode(), "does not have a notebook's shape"),
    (json.dumps(dict(NOTEBOOK, nbformat_minor="5")).encode(), "does not have a notebook's shape"),
    (json.dumps(dict(NOTEBOOK, cells=[{"cell_type": "markdown", "id": "a", "metadata": {}, "source": "",
                                       "attachments": "x"}])).encode(), "does not have a notebook's shape"),
])
def test_a_file_that_is_not_a_notebook_is_named_as_such(tmp_path, data, reason):
    (tmp_path / "nb.ipynb").write_bytes(data)
    assert reason in why(tmp_path / "nb.ipynb")


def test_a_link_a_folder_a_fifo_or_nothing_is_refused_before_reading(tmp_path):
    (tmp_path / "real.ipynb").write_text(json.dumps(NOTEBOOK))
    (tmp_path / "link.ipynb").symlink_to(tmp_path / "real.ipynb")
    (tmp_path / "folder.ipynb").mkdir()
    os.mkfifo(tmp_path / "fifo.ipynb")
    for name in ("link", "folder", "fifo", "absent"):
        assert why(tmp_path / f"{name}.ipynb") == "the submitted notebook is a link or not a regular file", name


def test_a_notebook_over_the_size_limit_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.setattr(snapshot, "MAX_NOTEBOOK_BYTES", 1 << 20)
    with open(tmp_path / "big.ipynb", "wb") as fh:
        fh.truncate((1 << 20) + 1)                        # sparse: never read
    assert why(tmp_path / "big.ipynb") == "the notebook is larger than 1 MB"


def test_a_notebook_of_too_many_cells_is_refused_before_its_schema_is_checked(tmp_path, monkeypatch):
    def notebook(cells: int) -> str:
        return json.dumps(dict(NOTEBOOK, cells=[{"cell_type": "markdown", "id": f"c{i}", "metadata": {},
                                                 "source": "."} for i in range(cells)]))
    checked = []
    monkeypatch.setattr(nbformat, "validate", lambda nb, *a, **k: checked.append(len(nb.get("cells", ()))))
    (tmp_path / "most.ipynb").write_text(notebook(snapshot.MAX_NOTEBOOK_CELLS))
    assert len(read_submission(tmp_path / "most.ipynb").cells) == 10_000 and checked == [10_000]
    (tmp_path / "more.ipynb").write_text(notebook(snapshot.MAX_NOTEBOOK_CELLS + 1))
    assert why(tmp_path / "more.ipynb") == "the notebook has 10,001 cells, more than the 10,000 a notebook may have"
    assert checked == [10_000]
    old = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [
        {"cells": [{"cell_type": "markdown", "metadata": {}, "source": "."} for _ in range(10_001)]}]}
    (tmp_path / "v3.ipynb").write_text(json.dumps(old))                   # counted once converted
    assert "10,001 cells" in why(tmp_path / "v3.ipynb")


def test_the_submissions_own_outputs_are_dropped_before_nbformat_builds_them(tmp_path, monkeypatch):
    """Grading runs every code cell again and keeps only the sandbox's outputs, so a flood of the
    submission's own (here 200,000 in one cell, in either nbformat) is never built or checked."""
    flood = [{"output_type": "stream", "name": "stdout", "text": "x"}] * 200_000
    built = []         # the outputs of each notebook nbformat's schema check is given
    monkeypatch.setattr(nbformat, "validate", lambda nb, *a, **k: built.append(
        sum(len(c.get("outputs", ())) for c in nb.get("cells", ()))))
    (tmp_path / "v4.ipynb").write_text(json.dumps(dict(NOTEBOOK, cells=[
        {"cell_type": "code", "id": "c", "metadata": {}, "source": "print(1)", "outputs": flood,
         "execution_count": 1}])))
    nb = read_submission(tmp_path / "v4.ipynb")
    assert nb.cells[0].source == "print(1)" and nb.cells[0].outputs == []
    assert built == [0], built
    old = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [
        {"cell_type": "code", "input": "print(1)", "language": "python", "metadata": {}, "outputs": [
            {"output_type": "stream", "stream": "stdout", "text": "x"}] * 200_000}]}]}
    (tmp_path / "v3.ipynb").write_text(json.dumps(old))
    nb = read_submission(tmp_path / "v3.ipynb")
    assert nb.cells[0].source == "print(1)" and nb.cells[0].outputs == []


def test_a_notebook_of_too_much_text_and_code_is_refused(tmp_path):
    """Its cells' source, outputs aside: formgrader's and the feedback's pages are made from it."""
    def notebook(*sources) -> str:
        return json.dumps(dict(NOTEBOOK, cells=[
            {"cell_type": "markdown", "id": "m", "metadata": {}, "source": sources[0]},
            {"cell_type": "code", "id": "c", "metadata": {}, "source": sources[1], "outputs": [
                {"output_type": "stream", "name": "stdout", "text": "o" * 3_000_000}], "execution_count": 1}]))
    (tmp_path / "most.ipynb").write_text(notebook("m" * 500_000, ["c" * 250_000, "d" * 250_000]))
    assert len(read_submission(tmp_path / "most.ipynb").cells) == 2
    (tmp_path / "more.ipynb").write_text(notebook("m" * 500_000, ["c" * 250_000, "d" * 250_001]))
    assert why(tmp_path / "more.ipynb") == ("the notebook's cells hold 1,000,001 characters, more than the "
                                            "1,000,000 a notebook may have")


def test_a_notebook_that_fails_the_schema_is_read_and_only_what_it_fails_on_left_out(tmp_path):
    """Read as nbformat reads it, but without the metadata the schema refuses: nbconvert makes no
    page of an invalid notebook (formgrader's view, the feedback)."""
    loose = dict(NOTEBOOK, metadata={"kernelspec": "not an object", "course_note": "kept"})
    (tmp_path / "loose.ipynb").write_text(json.dumps(loose))
    got, as_read = read_submission(tmp_path / "loose.ipynb"), nbformat.reads(json.dumps(loose), as_version=4)
    assert got.cells == as_read.cells and got.metadata == {"course_note": "kept"}
    nbformat.validate(got)


def test_a_notebook_nested_too_deep_scores_zero_with_a_reason(tmp_path):
    (tmp_path / "deep.ipynb").write_text("[" * 100_000 + "]" * 100_000)
    assert why(tmp_path / "deep.ipynb") == "the notebook's JSON is nested too deeply to be read (the file is damaged)"
    inside = {"cells": [], "metadata": {"x": 0}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "deep-metadata.ipynb").write_text(
        json.dumps(inside).replace('{"x": 0}', '{"x": ' + '{"a": ' * 30_000 + "1" + "}" * 30_000 + "}"))
    assert "nested too deeply" in why(tmp_path / "deep-metadata.ipynb")


def test_why_broken_passes_its_own_reasons_through_and_names_the_rest():
    assert why_broken(ValueError("the notebook is larger than 50 MB")) == "the notebook is larger than 50 MB"
    assert why_broken(KeyError("cells")) == "the notebook could not be read as an nbgrader notebook (KeyError)"
    assert "not valid JSON" in why_broken(json.JSONDecodeError("x", "", 0))


# ------------------------------------------------------------------------------ the gradebook's stand-in
def instructor():
    return InstructorNotebook(
        name="nb", kernelspec=None,
        source_cells=[SimpleNamespace(name="answer", cell_type="code", locked=False, checksum="a", source=""),
                      SimpleNamespace(name="test", cell_type="code", locked=True, checksum="t", source="")],
        grade_cells=[SimpleNamespace(name="test", max_score=2.0, cell_type="code")],
        solution_cells=[SimpleNamespace(name="answer")],
        task_cells=[SimpleNamespace(name="task", max_score=1.0)])


def test_the_snapshot_answers_as_the_gradebook_would():
    nb = instructor()
    with GradebookStandIn(nb) as gradebook:
        assert gradebook.find_notebook("nb", "a1") is nb
        assert gradebook.find_source_cell("test", "nb", "a1").checksum == "t"
        assert gradebook.find_graded_cell("test", "nb", "a1").max_score == 2.0
        assert gradebook.find_graded_cell("task", "nb", "a1").max_score == 1.0
        for find, name in ((gradebook.find_source_cell, "forged"), (gradebook.find_graded_cell, "answer"),
                           (gradebook.find_graded_cell, None)):
            with pytest.raises(MissingEntry):
                find(name, "nb", "a1")


def test_the_snapshot_does_not_swallow_errors():
    with pytest.raises(RuntimeError):
        with GradebookStandIn(instructor()):
            raise RuntimeError("inside")


def test_a_snapshot_read_notebook_is_a_notebook_node(tmp_path):
    cell = nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {"grade_id": "answer"}})
    (tmp_path / "nb.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook(cells=[cell])))
    nb = read_submission(tmp_path / "nb.ipynb")
    assert nb.cells[0].metadata.nbgrader.grade_id == "answer"
