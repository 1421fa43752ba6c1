"""The build gate refuses what does not hold, and passes what does (real grading runs)."""
import json

import nbformat
import pytest

from graders.course import contract
from graders import problems
from graders.course.build import build
from graders.cli import main
from graders.course.commands import run_gate
from graders.course.gate import mistake_reasons
from graders.engine import time_limits
from graders.problem import Mistake

pytestmark = pytest.mark.slow
W1 = problems.get("w1-memory")


def gate_lines(root, capsys):
    code = run_gate(root, contract.find_chapter("II.8", root))
    return code, capsys.readouterr().out


def test_the_gate_passes_w1_and_reports_the_draft_shortfall(scratch_course, capsys):
    code, out = gate_lines(scratch_course, capsys)
    assert code == 0, out
    assert "gate II.8: passed" in out
    # it measured the solution's CPU time (its slowest variant), which sets the notebook's time limit
    measured = json.loads((scratch_course / ".chapter/solution-seconds.json").read_text())
    assert 0 < measured["worked/w1-memory"]["seconds"] < 30
    assert time_limits.measured_seconds(scratch_course, "worked", "w1-memory") == \
        measured["worked/w1-memory"]["seconds"]


@pytest.mark.parametrize("state", ["draft", "published"])
def test_a_broken_solution_is_refused(scratch_course, capsys, state):
    contract.set_state("II.8", state, scratch_course)
    source = scratch_course / "source/worked/w1-memory.pct.py"
    text = source.read_text()
    assert 'bytes_per_param = 2 + 2 + params["K"]' in text
    source.write_text(text.replace('bytes_per_param = 2 + 2 + params["K"]', 'bytes_per_param = 2 + params["K"]'))
    build(scratch_course, write=True)
    code, out = gate_lines(scratch_course, capsys)
    assert code == 1
    assert "w1-memory: the published solution scores" in out
    assert "gate II.8: REFUSED" in out


def test_a_solution_whose_visible_checks_raise_is_refused(scratch_course, capsys):
    # full marks (the hidden checks grade outside the student's process), but Validate fails
    # every student who writes this solution: b05 shipped so, its check cell using `numbers`
    # before any cell imported it
    source = scratch_course / "source/worked/w1-memory.pct.py"
    text = source.read_text()
    assert text.count("import numbers\n") == 1
    source.write_text(text.replace("import numbers\n", ""))
    build(scratch_course, write=True)
    code, out = gate_lines(scratch_course, capsys)
    assert code == 1
    assert "w1-memory: the published solution raises in variant A (cell" in out and "NameError" in out
    assert "the published solution scores" not in out


def test_a_solution_the_grader_cannot_decide_is_refused(scratch_course, capsys):
    # every variant's expression times (√2 + √3)/√(5 + 2√6), which is 1 and which sympy cannot
    # prove: the cell waits for a person, outside the scored cells, so it looked like full marks
    source = scratch_course / "source/worked/w1-memory.pct.py"
    text = source.read_text()
    old = '}[params["stage"]]\n'
    assert text.count(old) == 1
    source.write_text(text.replace(old, old + "per_device_expr = per_device_expr * (sp.sqrt(2) + sp.sqrt(3)) "
                                             "/ sp.sqrt(5 + 2*sp.sqrt(6))\n"))
    build(scratch_course, write=True)
    code, out = gate_lines(scratch_course, capsys)
    assert code == 1
    assert "w1-memory: the published solution leaves check_expr for a person in variant A" in out
    assert "gate II.8: REFUSED" in out


def test_a_stale_release_is_refused(scratch_course, capsys):
    release = scratch_course / "release/worked/w1-memory.ipynb"
    nb = nbformat.read(release, as_version=4)
    nb.cells[0].source += "\n\nAn edit made by hand in the release."
    nbformat.write(nb, release)
    code, out = gate_lines(scratch_course, capsys)
    assert code == 1
    assert "release/worked/w1-memory.ipynb is out of date with source/" in out


def test_a_mistake_the_grader_does_not_catch_is_refused(scratch_course, capsys, monkeypatch):
    harmless = Mistake("rounding", "rounded the answer to three figures.",
                       lambda q: {"total_bytes": float(f"{(4 + q['K']) * q['N']:.4g}")})
    monkeypatch.setattr(type(W1), "mistakes", W1.mistakes + (harmless,))
    code, out = gate_lines(scratch_course, capsys)
    assert code == 1
    assert "mistake 'rounding' gives the right answers in every variant" in out


def test_a_mistake_whose_feedback_never_shows_is_refused(monkeypatch):
    # same wrong answers as the first declared mistake, so its own line is never the one shown
    shadowed = Mistake("shadow", "a different explanation.", W1.mistakes[0].wrong)
    monkeypatch.setattr(type(W1), "mistakes", W1.mistakes + (shadowed,))
    assert any("mistake 'shadow' is not named in the feedback" in r for r in mistake_reasons(W1))


def test_fewer_than_three_mistakes_are_refused(monkeypatch):
    monkeypatch.setattr(type(W1), "mistakes", W1.mistakes[:2])
    assert any("at least 3 are owed" in r for r in mistake_reasons(W1))


def test_publish_refuses_a_chapter_short_of_its_contract(scratch_course, capsys):
    assert main(["publish", "II.8"]) == 1
    out = capsys.readouterr().out
    assert "mathematics has 1 of 15 owed" in out and "refused" in out
    assert contract.find_chapter("II.8", scratch_course).state == "draft"


def test_publish_marks_a_chapter_that_meets_its_contract(scratch_course, capsys):
    levels = (scratch_course / "contracts.toml").read_text()
    levels += ('\n[levels.MT]\nname = "Test"\nowes = { basics = 0, concept = 0, theory = 0, mathematics = 1, '
               'practice = 0, worked = 1, exercises = 0, variants = 4 }\n')
    (scratch_course / "contracts.toml").write_text(levels)
    chapters = scratch_course / "chapters.toml"
    chapters.write_text(chapters.read_text().replace('maturity = "M3"', 'maturity = "MT"'))
    assert main(["publish", "II.8"]) == 0, capsys.readouterr().out
    assert "publish II.8: published" in capsys.readouterr().out
    assert contract.find_chapter("II.8", scratch_course).state == "published"
    assert main(["status", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)["chapters"][0]
    assert status["state"] == "published" and status["owes"] == 0 and status["variants"]["have"] == 4


def test_a_published_chapter_short_of_its_contract_fails_the_gate(scratch_course, capsys):
    contract.set_state("II.8", "published", scratch_course)
    code, out = gate_lines(scratch_course, capsys)
    assert code == 1
    assert "II.8: mathematics has 1 of 15 owed" in out and "(draft" not in out
