"""The feedback page's scores: a cell no one has scored yet says so, in nbgrader's own template.

nbgrader's template prints "Score: 0.0 / 2.0" for a written answer before the instructor reads
it, and for a test cell left for a person; `chapter serve` releases the page at once. These
tests render the page through nbgrader's feedback template with the course's exporter, without
a gradebook: the resources are the ones GetGrades (and GetGradesMarkingWaits) would leave.
"""
from pathlib import Path

import nbformat
import nbgrader
from nbconvert.exporters import HTMLExporter
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from traitlets.config import Config

from graders.engine.nbgrader_hooks import NOT_GRADED, FeedbackPage, not_graded_shown

FORMGRADER = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"
TEMPLATES = FORMGRADER / "templates"          # as nbgrader's GenerateFeedback configures its exporter
BOOTSTRAP = FORMGRADER / "static" / "node_modules" / "bootstrap" / "dist" / "css"


def graded(cell, grade_id, score, points, solution=False):
    cell.metadata["nbgrader"] = {"grade": True, "solution": solution, "grade_id": grade_id,
                                 "points": points, "score": score, "locked": False,
                                 "schema_version": 3}
    return cell


def page(waits: dict | None, exporter=FeedbackPage) -> str:
    nb = new_notebook(cells=[
        new_markdown_cell("Explain why the loss spikes.", id="question"),
        graded(new_markdown_cell("Because the learning rate is too high.", id="why"), "why_spike", 0.0, 2,
               solution=True),
        graded(new_code_cell("check(answer)", id="numbers"), "check_numbers", 3.0, 3),
        graded(new_code_cell("check(answer_expr)", id="expr"), "check_expr", 0.0, 1),
    ])
    config = Config()
    config.HTMLExporter.template_name = "feedback"
    config.HTMLExporter.extra_template_basedirs = [str(TEMPLATES)]
    config.HTMLExporter.extra_template_paths = [str(BOOTSTRAP)]
    resources = {"nbgrader": {"notebook": "t1-spikes", "score": 3.0, "max_score": 6.0, "late_penalty": 0}}
    if waits is not None:
        resources["nbgrader"][NOT_GRADED] = waits
    html, _ = exporter(config=config).from_notebook_node(nbformat.from_dict(nb), resources=resources)
    return html


def test_a_cell_no_one_scored_reads_not_graded_yet():
    text = page({"why_spike": 2.0, "check_expr": 1.0})
    assert "(Score: 3.0 / 6.0; 3 points not graded yet)</h4>" in text
    assert '<a href="#why_spike">Written response</a> (not graded yet, out of 2.0)' in text
    assert '<a href="#check_expr">Test cell</a> (not graded yet, out of 1.0)' in text
    assert text.count("Not graded yet (out of 2.0)") == 1 and text.count("Not graded yet (out of 1.0)") == 1
    assert "Score: 0.0" not in text
    # the scored cell keeps nbgrader's words, in the list and in its header
    assert '<a href="#check_numbers">Test cell</a> (Score: 3.0 / 3.0)' in text
    assert text.count("Score: 3.0 / 3.0") == 2


def test_one_point_waiting_is_one_point():
    assert "(Score: 3.0 / 6.0; 1 point not graded yet)</h4>" in page({"check_expr": 1.0})


def test_a_page_with_every_cell_scored_is_nbgraders_own():
    nbgraders = page(None, exporter=HTMLExporter)      # nbconvert's exporter, as nbgrader sets it by default
    assert page(None) == page({}) == nbgraders
    assert not_graded_shown(nbgraders, {}) == nbgraders
    assert "not graded yet" not in nbgraders.lower() and "Score: 0.0 / 2.0" in nbgraders
