"""The engine's sentences to students live in graders/engine/feedback.py, and read as they did."""
from __future__ import annotations

import ast
from pathlib import Path

from graders.engine import feedback

ENGINE = Path(feedback.__file__).parent
# marks only a sentence to the student starts with: a check mark, a cross, a cell not graded yet
MARKS = ("✓", "✗", "? not graded yet", "NOT GRADED ", "**This notebook could not be graded", "**Autograder notes",
         # and how the autograder's notes, the reasons a notebook could not be read, and the causes
         # the sandbox may have of an error begin
         "the cell", "the points of cell", "the nbgrader metadata", "the locked cell", "the type of cell",
         "the submitted", "the notebook", "the module", "the installed module", "cells appear", "a malformed",
         "a cell with malformed", "could not be recorded", "a system call", "a write outside", "a pseudo-terminal",
         "does not match your variant")


def sentences_outside(source: str) -> list[str]:
    """String constants (f-strings' literal parts included) that start like a student-facing line."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(MARKS):
            found.append(node.value)
    return found


def test_the_finder_sees_a_sentence_in_an_f_string():
    assert sentences_outside('x = f"✗ not graded: {why}"\ny = "not a sentence"\n') == ["✗ not graded: "]


def test_no_engine_module_writes_its_own_feedback_sentences():
    elsewhere = {path.name: found for path in sorted(ENGINE.glob("*.py")) if path.name != "feedback.py"
                 for found in [sentences_outside(path.read_text())] if found}
    assert elsewhere == {}, "student-facing sentences belong in graders/engine/feedback.py"


def test_the_wording_students_have_seen_is_kept():
    assert feedback.not_graded("the notebook did not reach this cell") == \
        "✗ not graded: the notebook did not reach this cell"
    assert feedback.cell_score("B", 1.5, 3) == "Variant B: 1.5 of 3 points in this cell"
    assert feedback.judged_inside(2.0, 2.0).startswith("✓ 2 of 2 points in this cell, judged as nbgrader")
    assert feedback.judged_inside(0.0, 2.0).startswith("✗ 0 of 2 points")
    assert feedback.too_soon(60, 20) == ("Graded attempts must be at least 60 s apart; this one came 40 s "
                                         "after your last, so it was not graded. Submit again in 20 s.")
    assert feedback.not_graded_line("ada", "why") == "NOT GRADED ada: why"
    assert feedback.stopped("timeout", " (in cell 3)", "") == "the notebook was stopped (in cell 3): it ran past its time limit"
    assert feedback.stopped("odd", "", "") == "the notebook could not be run: odd"
    assert feedback.submitted_under_other_names("w1", "`a.ipynb`", True) == (
        "the notebook was not submitted under its name `w1.ipynb`; the submission holds `a.ipynb` "
        "(more than one could be it: hand in one, named as released)")
    assert feedback.another_notebook("w1", "w2", "") == ("this is not w1: it is the notebook of w2, handed in "
                                                         "as `w1.ipynb`, so it was not graded")
    assert feedback.cell_raised(4, "E" * 100) == "cell 4 raised " + "E" * 80
    # an exception's name is the student's to choose: it neither clears the screen nor forges a line
    forged = "E\x1b[2J\nNOT GRADED alice: sandbox failure"
    for line in (feedback.cell_raised(3, forged), feedback.checks_raised(forged, 2),
                 feedback.visible_checks_raised(forged), feedback.cell_reason("checks raised", "c1", forged)):
        assert "\x1b" not in line and "\n" not in line and "E\\x1b[2J\\x0aNOT GRADED" in line, line
    assert feedback.cell_reason("grading too long", "c1", "30 s") == "grading cell 'c1' took longer than 30 s"
    assert feedback.not_in_assignment(["x"]) == "the cell 'x' is not part of this assignment; it runs as ordinary code"
    assert feedback.not_in_assignment([f"c{i}" for i in range(12)]) == (
        "the cells 'c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7', 'c8', 'c9' and 2 more are not part of this "
        "assignment; they run as ordinary code")
    assert feedback.file_left_out("data.bin", 3 << 20) == ("the submitted file 'data.bin' (3 MiB) was too large to "
                                                          "give the notebook and was left out")
    assert feedback.too_many_cells(10_001, 10_000) == ("the notebook has 10,001 cells, more than the 10,000 a "
                                                       "notebook may have")
    assert feedback.module_did_not_import("helper", shipped=True) == (
        "the module 'helper', which the assignment ships beside the notebook, did not import")
    assert feedback.could_not_be_recorded(OSError("disk full")) == "could not be recorded (OSError: disk full)"


def test_the_refusal_page_escapes_what_it_is_given():
    page = feedback.refusal_page("ps<1>", "you & <b>them</b>")
    assert "This submission of ps&lt;1&gt; was not graded" in page
    assert "you &amp; &lt;b&gt;them&lt;/b&gt;" in page and "<b>" not in page
