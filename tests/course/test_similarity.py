"""The similarity table: planted copies rank first, an honest class has no pair standing out, hostile input is said.

The class is tests/course/similarity_class.py's: 30 students, 3 notebooks, each with a code
cell and a symbolic cell; two planted copies (every name renamed, independent lines
reordered, the shared wrong expression rewritten in an equal form).
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time

import pytest

from graders.course import similarity
from graders.course.similarity import Answers, compare, expressions
from tests.conftest import REPO, code_never_run
from tests.course.similarity_class import NOTEBOOKS, class_answers, write_course


def top_pairs(result, count):
    return [(p.a, p.b) for p in result.pairs[:count]]


def test_two_planted_copies_rank_in_the_top_three_and_are_marked():
    answers, planted = class_answers(30)
    result = compare(answers)
    assert set(planted) <= set(top_pairs(result, 3)), [(p.a, p.b, round(p.score, 3)) for p in result.pairs[:5]]
    marked = {(p.a, p.b) for p in result.pairs if p.stands_out}
    assert set(planted) <= marked
    first = result.pairs[0]
    assert first.matches and {m.kind for m in first.matches} == {"code", "symbolic"}
    assert any("<mark>" in m.left and "<mark>" in m.right for m in first.matches if m.kind == "code")


def test_an_honest_class_has_no_pair_standing_out():
    for seed in (1, 2, 3):
        answers, _ = class_answers(30, copies=(), seed=seed)
        result = compare(answers)
        assert not [p for p in result.pairs if p.stands_out], [(p.a, p.b, p.score) for p in result.pairs[:3]]
        assert result.pairs[0].score < similarity.STAND_OUT_MIN


def test_renamed_code_alone_is_found_by_code_not_by_symbols():
    """A copy whose symbolic answers differ is still found, on its code cells alone."""
    answers, planted = class_answers(30, copies=((3, 9),))
    a, b = planted[0]
    for nb in NOTEBOOKS:     # give both a common right answer: no symbolic signal left
        answers.cells[a][(nb, "answer_expr")] = answers.cells[b][(nb, "answer_expr")] = \
            answers.cells["s001"][(nb, "answer_expr")]
    result = compare(answers)
    assert (result.pairs[0].a, result.pairs[0].b) == (a, b)
    assert result.pairs[0].code_score > 0.6


SCORES = """
from tests.course.similarity_class import class_answers
from graders.course.similarity import compare
print([(p.a, p.b, p.code_score, p.score) for p in compare(class_answers(30, copies=((3, 9),))[0]).pairs[:10]])
"""


def test_the_same_class_gets_the_same_scores_in_every_process():
    """Python salts `hash` per process: the code fingerprints must not depend on it, or each
    `chapter report` would rank the pairs differently (with copydetect's own hashing, the planted
    copy's code score ranged from 0.59 to 0.76 over eight seeds)."""
    runs = [subprocess.run([sys.executable, "-c", SCORES], capture_output=True, text=True, timeout=300,
                           cwd=REPO, env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)})
            for seed in ("1", "4")]
    assert all(run.returncode == 0 for run in runs), [run.stderr[-2000:] for run in runs]
    assert runs[0].stdout == runs[1].stdout, (runs[0].stdout[:300], runs[1].stdout[:300])


def test_the_release_code_everyone_was_given_is_left_out():
    given = ("import math\n\ndef norm_of(values):\n    total = 0.0\n    for value in values:\n"
             "        total += value * value\n    return math.sqrt(total)\n\n# YOUR CODE HERE\n")
    answers = Answers("given")
    cell = ("nb", "answer_code")
    answers.templates[cell] = given
    own = ["scaled = [x / norm_of(grads) for x in grads]\nprint(len(scaled))\n",
           "limit = 3.5\nout = []\nfor g in grads:\n    out.append(min(g, limit))\n",
           "if norm_of(grads) > 1e-3:\n    grads = grads[::-1]\nresult = sum(grads) * 0.25\n"]
    for i, extra in enumerate(own):
        answers.cells[f"s{i}"] = {cell: given + extra}
    assert compare(answers).pairs == []
    answers.templates.clear()          # without the release, the given code makes every pair alike
    assert compare(answers).pairs and compare(answers).pairs[0].code_score > 0.5


@pytest.mark.parametrize("first, second", [
    ("answer = B / (b * P)", "answer = B / b / P"),
    ("answer = c / sqrt(g1**2 + g2**2)", "answer = c * (g1*g1 + g2*g2) ** -0.5"),
    ("per = b * P\nanswer = B / per", "answer = B * (P * b) ** -1"),
    ("answer = sp.log(x) + sp.exp(2*y)", "answer = math.exp(y + y) + log(x)"),
])
def test_equal_expressions_are_equal_as_mathematics(first, second):
    assert expressions(first)["answer"].key == expressions(second)["answer"].key


@pytest.mark.parametrize("first, second", [
    ("answer = B / (b * P)", "answer = B * b / P"),
    ("answer = (x + 1)**2", "answer = x**2 + 1"),
])
def test_different_expressions_differ(first, second):
    assert expressions(first)["answer"].key != expressions(second)["answer"].key


@pytest.mark.parametrize("source", [
    "answer = __import__('os').system('touch /tmp/pwned')",
    "answer = open('/etc/passwd').read()",
    "answer = (lambda: x)()",
    "answer = x.__class__",
    "answer = [x for x in y]",
    "answer = 'text' * 3",
    "answer = eval('x + 1')",
    "answer = x if y else z",
    "answer = " + "(" * 5000 + "x" + ")" * 5000,
    "answer = " + "-" * 5000 + "x",
    "answer = " + " + ".join(f"x{i}" for i in range(2000)),
    "answer = 1e400 * x",
])
def test_anything_but_small_arithmetic_is_skipped(source, tmp_path):
    pwned = tmp_path / "pwned"
    with code_never_run("eval", "exec", "open", "system") as calls:
        started = time.perf_counter()
        found = expressions(source.replace("/tmp/pwned", str(pwned)))
        elapsed = time.perf_counter() - started
    assert "answer" not in found
    assert calls == [] and not pwned.exists(), calls
    assert elapsed < 5


def test_a_huge_power_is_computed_as_a_float_and_quickly():
    """2 ** 10 ** 10 as a float is beyond floats: no finite value to compare, so the name is
    dropped, at once (an exact power would take hours); a power floats hold is kept."""
    started = time.perf_counter()
    found = expressions("answer = x * 2 ** 10 ** 10\nother = x * 2 ** 10")
    assert time.perf_counter() - started < 5
    assert "answer" not in found and found["other"].key


def test_a_later_non_arithmetic_assignment_drops_the_name():
    found = expressions("answer = B / b\nanswer = helper(B)\nother = B * 2\n")
    assert "answer" not in found and "other" in found


def test_the_course_folder_is_read_and_hostile_files_are_said(tmp_path, monkeypatch):
    monkeypatch.setattr(similarity, "CELL_LIMIT", 8000)       # smaller limits, the same code: a quicker test
    monkeypatch.setattr(similarity, "STUDENT_LIMIT", 20000)
    answers, planted = class_answers(12, copies=((0, 7),))
    course = write_course(tmp_path / "course", answers)
    sub = course / "submitted"
    (sub / "s001" / "simclass" / "n1-batching.ipynb").write_text("{not json")
    (sub / "s002" / "simclass" / "n2-decay.ipynb").write_text(json.dumps({"cells": "none"}))
    nb = json.loads((sub / "s003" / "simclass" / "n3-clipping.ipynb").read_text())
    nb["cells"][1]["source"] = "x = 1\n" * 20000
    nb["cells"][3]["source"] = [1, 2, 3]
    (sub / "s003" / "simclass" / "n3-clipping.ipynb").write_text(json.dumps(nb))
    nb["cells"] = [None, 7, {"metadata": []}, {"cell_type": "code", "metadata": {"nbgrader": "x"}}]
    (sub / "s004" / "simclass" / "n3-clipping.ipynb").write_text(json.dumps(nb))
    (sub / "s005" / "simclass" / "n1-batching.ipynb").write_text("[" * 100000)
    (sub / "s006" / "simclass" / "extra.ipynb").symlink_to("/etc/hostname")
    for nb in NOTEBOOKS:       # s008: every cell at the limit, over the student's total
        path = sub / "s008" / "simclass" / f"{nb}.ipynb"
        data = json.loads(path.read_text())
        data["cells"][1]["source"] = data["cells"][3]["source"] = "y = 2\n" * 10000
        path.write_text(json.dumps(data))
    written = similarity.build_similarity(course, "simclass", tmp_path / "out")
    notes = "\n".join(written.result.notes)
    assert "s001: n1-batching.ipynb is not a readable notebook" in notes
    assert "s002: n2-decay.ipynb has no list of cells" in notes
    assert f"only the first {similarity.CELL_LIMIT} are compared" in notes
    assert "s005: n1-batching.ipynb is not a readable notebook" in notes
    assert f"s008: over {similarity.STUDENT_LIMIT} characters of answers in all" in notes
    assert sum(len(s) for s in written_cells(course, "s008")) == similarity.STUDENT_LIMIT
    assert "s006: extra.ipynb is a link" in notes
    assert written.result.students == 12
    assert (written.result.pairs[0].a, written.result.pairs[0].b) == planted[0]
    with open(written.csv, newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == similarity.COLUMNS
    assert rows[1][1:3] == list(planted[0]) and rows[1][-1] == "unusually alike - look closer"
    assert len(rows) == 1 + len(written.result.pairs)
    page = written.html.read_text()
    assert "not a verdict" in page and "look closer" in page and "<script" not in page and "http" not in page
    assert "is a link; not compared" in page


def written_cells(course, student):
    return similarity.read_answers(course, "simclass").cells[student].values()


def test_a_class_of_one_or_none_writes_an_empty_table(tmp_path):
    answers = Answers("empty")
    written = similarity.write(compare(answers), tmp_path)
    assert "No two students" in written.html.read_text()
    answers.cells["alone"] = {("nb", "c"): "x = 1\n"}
    assert compare(answers).pairs == []


def test_an_expression_the_release_gives_is_no_sign():
    answers = Answers("given")
    answers.templates[("nb", "answer_expr")] = "answer = B / b  # replace with yours\n"
    answers.cells = {"s1": {("nb", "answer_expr"): "answer = B / b\nextra = x * y + 1\n"},
                     "s2": {("nb", "answer_expr"): "answer = B/b\nother = q - 7 * r\n"}}
    assert compare(answers).pairs == []
    answers.templates.clear()
    assert compare(answers).pairs[0].symbolic_score > 0


def test_chapter_report_writes_the_similarity_page_beside_the_report(tmp_path, monkeypatch, capsys):
    """`chapter report` (its class report stubbed: it needs a gradebook) writes and names both files."""
    from types import SimpleNamespace

    from graders.cli import main
    from graders.course import report
    answers, planted = class_answers(12, copies=((2, 5),))
    course = write_course(tmp_path / "course", answers)
    out = tmp_path / "out"

    def fake_report(root, assignment, out=None):
        out.mkdir(parents=True, exist_ok=True)
        return SimpleNamespace(text="(the class report)", html=out / "report.html", checks_csv=out / "checks.csv",
                               mistakes_csv=out / "mistakes.csv", items_csv=out / "items.csv", deadlines_csv=None)
    monkeypatch.setattr(report, "build_report", fake_report)
    assert main(["report", "simclass", "--course", str(course), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"similarity: {out / 'similarity.html'}" in text and str(out / "similarity.csv") in text
    assert "1 pair(s) unusually alike - look closer" in text and f"{planted[0][0]} and {planted[0][1]}" in text
    assert (out / "similarity.html").is_file()


def test_random_junk_in_every_cell_never_crashes():
    """Fragments of Python, arithmetic and noise, spliced at random into every student's cells."""
    import random
    rng = random.Random(7)
    pieces = ["answer = ", "(", ")", "**", "x", "B", "/", "0", "1e308", "-", "sqrt(", "log(", "min(", ",", "\n",
              "def f(", "):", "    ", "'", '"""', "\\", "\x00", "é", "[", "]", "lambda", "import os", "#", "=",
              "Max(x, 1j)", "floor(x // 0)", "Rational(1, 0)", "log(0, 0)", "x ** -x ** x"]
    answers, _ = class_answers(12, copies=())
    for cells in answers.cells.values():
        for cell in cells:
            cells[cell] = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 300)))
    result = compare(answers)
    assert result.students == 12
    similarity.render_html(result)


def test_a_small_class_is_ranked_but_no_pair_is_marked(tmp_path):
    answers, planted = class_answers(similarity.MIN_CLASS - 1, copies=((1, 4),))
    result = compare(answers)
    assert (result.pairs[0].a, result.pairs[0].b) == planted[0]
    assert not [p for p in result.pairs if p.stands_out]
    assert "too few" in similarity.summary(result)
    assert "Too few students" in similarity.write(result, tmp_path).html.read_text()


def test_a_match_across_variants_weighs_more():
    answers = Answers("variants")
    cell = ("nb", "answer_expr")
    for i in range(20):
        answers.cells[f"s{i:02d}"] = {cell: f"answer = x * {i + 2}\n"}
        answers.variants[(f"s{i:02d}", "nb")] = "AB"[i % 2]
    answers.cells["s00"][cell] = answers.cells["s02"][cell] = "answer = x ** 3\n"       # same variant A
    answers.cells["s04"][cell] = answers.cells["s05"][cell] = "answer = 3 * x ** 2\n"   # variants A and B
    pairs = {(p.a, p.b): p for p in compare(answers).pairs}
    assert pairs[("s04", "s05")].symbolic_score > pairs[("s00", "s02")].symbolic_score > 0


def test_a_file_name_or_a_grade_id_in_any_bytes_does_not_stop_the_page(tmp_path):
    """A submission holding a notebook named in bytes that are not UTF-8, or a long solution cell whose
    grade_id is a lone surrogate: each reaches the page's notes, and the strict write stopped
    `chapter report` for the class."""
    import os

    from graders.course.similarity import build_similarity
    from tests.conftest import copy_course
    root = copy_course(tmp_path, [])
    for student in ("ann", "eve", "mo"):
        (root / "submitted" / student / "hw1").mkdir(parents=True)
    with open(os.path.join(os.fsencode(root / "submitted" / "eve" / "hw1"), b"\xff.ipynb"), "wb") as fh:
        fh.write(b"not a notebook")
    cell = {"cell_type": "code", "source": "x = 1\n" * 6000, "metadata": {"nbgrader": {"solution": True,
                                                                                       "grade_id": "\ud800"}}}
    (root / "submitted" / "mo" / "hw1" / "nb-a.ipynb").write_text(json.dumps({"cells": [cell]}))
    written = build_similarity(root, "hw1", root / "reports" / "hw1")
    page = written.html.read_text(encoding="utf-8")
    assert "\\xff" in page or "\\udcff" in page
