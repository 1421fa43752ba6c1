"""The trusted side's shortcuts (issue 29) give what nbformat's own, slower, calls give."""
from __future__ import annotations

import nbformat
import pytest

from graders.engine import grading

HOSTILE_OUTPUTS = [
    {"output_type": "stream", "name": "stdout", "text": "ok\n"},
    {"output_type": "stream", "name": "stdin", "text": "renamed to stdout"},
    {"output_type": "stream", "name": "stderr", "text": ["not", "a string"]},
    {"output_type": "stream", "text": ""},
    {"output_type": "error", "ename": 3, "evalue": None, "traceback": ["a", 2, None]},
    {"output_type": "error", "traceback": "not a list"},
    {"output_type": "execute_result", "data": {"text/plain": "1", "text/html": "<b>dropped</b>"},
     "execution_count": 4},
    {"output_type": "execute_result", "data": {"text/plain": "x"}, "execution_count": -1},
    {"output_type": "execute_result", "data": {"text/plain": "x"}, "execution_count": True},
    {"output_type": "execute_result", "data": {"text/plain": "x"}, "execution_count": 2 ** 70},
    {"output_type": "execute_result", "data": {"text/plain": "x"}, "execution_count": "7"},
    {"output_type": "execute_result", "data": {"text/plain": ["a list"]}, "execution_count": 1},
    {"output_type": "display_data", "data": {"image/png": "iVBOR", "text/latex": "$x$"},
     "metadata": {"forged": True}},
    {"output_type": "display_data", "data": {"image/png": 12}},
    {"output_type": "display_data", "data": "not a dict"},
    {"output_type": "update_display_data", "data": {"text/plain": "x"}},
    ["not", "a dict"],
    None,
]


@pytest.mark.parametrize("item", HOSTILE_OUTPUTS, ids=range(len(HOSTILE_OUTPUTS)))
def test_sandbox_outputs_are_kept_or_dropped_as_nbformats_checked_outputs_would_be(item, monkeypatch):
    ours = grading.clean_outputs([item])
    monkeypatch.setattr(grading, "new_output", nbformat.v4.new_output)   # checks each against the schema
    assert ours == grading.clean_outputs([item])
    for output in ours:
        nbformat.validate(output, ref=output.output_type, version=4)


def test_the_graders_own_outputs_match_nbformats():
    made = [grading.new_output("stream", name="stdout", text="3 of 3 points\n"),
            grading.new_output("execute_result", data={"text/plain": "3.0"}, execution_count=2),
            grading.new_output("error", ename="Error", evalue="", traceback=[]),
            grading.new_output("display_data", data={"image/png": "iVBOR"})]
    assert made == [nbformat.v4.new_output("stream", name="stdout", text="3 of 3 points\n"),
                    nbformat.v4.new_output("execute_result", data={"text/plain": "3.0"}, execution_count=2),
                    nbformat.v4.new_output("error", ename="Error", evalue="", traceback=[]),
                    nbformat.v4.new_output("display_data", data={"image/png": "iVBOR"})]
    assert all(isinstance(o.get("data", nbformat.NotebookNode()), nbformat.NotebookNode) for o in made)


def _notebook():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Title\nline two"),
        nbformat.v4.new_code_cell("x = 1\nprint(x)", outputs=[
            grading.new_output("stream", name="stdout", text="1\n2\n"),
            grading.new_output("display_data", data={"image/png": "iVBOR", "text/plain": "<Figure>"})]),
        nbformat.v4.new_code_cell("y = 'é'")])
    nb.cells[2]["id"] = "not a valid id!"
    nb.metadata["forged"] = {"nested": ["a", 1]}
    return nb


def test_the_autograded_notebook_is_the_text_nbformat_writes(monkeypatch):
    import copy
    nb = _notebook()
    expected = copy.deepcopy(nb)
    for i, cell in enumerate(expected.cells):       # write_notebook's id rule, applied to nbformat's copy
        if i == 2:
            cell["id"] = "autograded-2"
    expected.nbformat, expected.nbformat_minor = 4, 5
    checked = []
    monkeypatch.setattr(nbformat, "validate", lambda *a, **k: checked.append(a))
    ours = grading.write_notebook(nb)
    assert checked == []          # no second schema check of the whole notebook
    assert ours == nbformat.writes(expected)
    assert nbformat.reads(ours, as_version=4) == nbformat.reads(nbformat.writes(expected), as_version=4)


def _strip_hidden_as_before(source, begin, end):
    """strip_hidden as it was: nbgrader's ClearHiddenTests built for each cell."""
    from nbgrader.preprocessors import ClearHiddenTests
    cell = nbformat.NotebookNode(cell_type="code", source=source, metadata={})
    try:
        ClearHiddenTests(begin_test_delimeter=begin, end_test_delimeter=end)._remove_hidden_test_region(cell)
    except RuntimeError:
        cell.source = source.split(begin)[0].rsplit("\n", 1)[0]
    return cell.source


SOURCES = ["plain", "", "a = 1\n", "x\r\ny", "a\n### BEGIN HIDDEN TESTS\nsecret()\n### END HIDDEN TESTS\nb",
           "a\n### BEGIN HIDDEN TESTS\nsecret()", "a\n### END HIDDEN TESTS\nb", "END HIDDEN TESTS",
           "a # BEGIN HIDDEN TESTS inline\nb\nEND HIDDEN TESTS", "BEGIN HIDDEN TESTS\nBEGIN HIDDEN TESTS\nEND HIDDEN TESTS",
           "begin hidden tests\nlower case is not a marker"]
MARKERS = [("BEGIN HIDDEN TESTS", "END HIDDEN TESTS"), ("", ""), ("<<", ">>"), ("BEGIN HIDDEN TESTS", "")]


@pytest.mark.parametrize("begin, end", MARKERS)
def test_hidden_tests_are_stripped_as_nbgraders_rule_strips_them(begin, end):
    def outcome(strip, source):
        try:
            return strip(source, begin, end)
        except Exception as exc:  # noqa: BLE001 - empty markers raise, before as now
            return type(exc)

    for _ in range(2):     # the second time from the kept ClearHiddenTests, after every hostile source
        for source in SOURCES:
            assert outcome(grading.strip_hidden, source) == outcome(_strip_hidden_as_before, source), source


PATTERNS = [[], ["*.ipynb", "timestamp.txt"], [".ipynb_checkpoints", "*.pyc", "*.ipynb"], ["data"], ["*"],
            ["sub/*.csv"], ["**"], ["[ab]*.txt", "?.py"], [".*"], ["*.txt", "deep"]]


@pytest.mark.parametrize("exclude", PATTERNS, ids=range(len(PATTERNS)))
def test_the_files_beside_a_notebook_are_nbgraders_own_walk(tmp_path, exclude):
    from nbgrader.utils import find_all_files as nbgraders
    from graders.engine.shared import find_all_files
    for name in ["a.ipynb", "timestamp.txt", "a.txt", "b.txt", "c.txt", "x.py", "xy.py", ".hidden", "m.pyc",
                 "data/d.csv", "data/inner/e.csv", "sub/f.csv", "sub/g.json", "sub/deep/h.txt",
                 ".ipynb_checkpoints/a-checkpoint.ipynb", ".ipynb_checkpoints/n.txt", "[ab]*.txt"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    (tmp_path / "link").symlink_to(tmp_path / "a.txt")
    assert find_all_files(str(tmp_path), exclude) == nbgraders(str(tmp_path), exclude)


def test_outputs_are_limited_by_each_courses_own_limits():
    from types import SimpleNamespace
    from nbgrader.preprocessors import LimitOutput

    def limited():
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x", outputs=[
            grading.new_output("stream", name="stdout", text="\n".join(map(str, range(50)))),
            grading.new_output("error", ename="E", evalue="", traceback=[str(i) for i in range(50)])])])
        return nb

    for lines, traceback in ((10, 6), (1000, 100), (10, 6), (-1, -1), (3, 20)):
        ours, theirs = limited(), limited()
        grading.limit_outputs(ours, SimpleNamespace(max_lines=lines, max_traceback=traceback))
        LimitOutput(max_lines=lines, max_traceback=traceback).preprocess(theirs, {})
        assert ours.cells[0].outputs == theirs.cells[0].outputs
