"""Through real `nbgrader autograde`: correct beats wrong beats blank, warnings cost nothing,
released notebooks carry no grader code, and the demo's grade table is what it should be."""
import json

import nbformat
import pytest

from graders import variants
from graders.course.verify import autograde_nbgrader
from graders.engine.scratch import nbgrader

from tests.conftest import REPO

pytestmark = pytest.mark.slow
SOLUTION = REPO / "solutions/worked/w1-memory.ipynb"
RELEASE = REPO / "release/worked/w1-memory.ipynb"


def with_answers(tmp_path, name, replace):
    """A copy of the published solution whose answer cells are rewritten by `replace`."""
    nb = nbformat.read(SOLUTION, as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in replace:
            cell.source = replace[grade_id]
    path = tmp_path / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def test_correct_scores_above_wrong_above_blank(tmp_path):
    wrong = with_answers(tmp_path, "wrong", {"answer_numbers": (
        "bytes_per_param = 12\ntotal_bytes = 12 * params['N']\n"
        "per_device_bytes = float(per_device_expr.subs({N: params['N'], P: params['P'], K: 8}))\n")})
    students = {variants.student_for(v, "worked"): v for v in "AB"}
    a, b = students
    scores = autograde_nbgrader(REPO, tmp_path / "course", "worked", {
        a: {"w1-memory": SOLUTION}, b: {"w1-memory": wrong}, "blank-student": {"w1-memory": RELEASE}})
    correct, wrong_score, blank = (scores[s]["w1-memory"].score for s in (a, b, "blank-student"))
    assert correct == 4
    assert 0 < wrong_score < correct
    assert blank == 0
    assert any("Likely mistake" in line for line in scores[b]["w1-memory"].feedback)


def test_a_warning_on_stderr_does_not_zero_a_correct_answer(tmp_path):
    noisy = nbformat.read(SOLUTION, as_version=4)
    for cell in noisy.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "answer_numbers":
            cell.source += ("\nimport sys, warnings\nwarnings.warn('a harmless warning')\n"
                            "class Loud(float):\n"
                            "    def __float__(self):\n"
                            "        warnings.warn('converted', UserWarning)\n"
                            "        sys.stderr.write('noise on stderr\\n')\n"
                            "        return float.__float__(self)\n"
                            "per_device_bytes = Loud(per_device_bytes)\n")
    path = tmp_path / "noisy.ipynb"
    nbformat.write(noisy, path)
    student = variants.student_for("C", "worked")
    scores = autograde_nbgrader(REPO, tmp_path / "course", "worked", {student: {"w1-memory": path}})
    assert scores[student]["w1-memory"].score == 4, scores[student]["w1-memory"].feedback


def test_released_notebooks_carry_no_grader_code_or_solutions():
    for path in (REPO / "release").rglob("*.ipynb"):
        text = path.read_text()
        assert "graders" not in text and "BEGIN HIDDEN TESTS" not in text, path
        assert "BEGIN SOLUTION" not in text and "BEGIN MARK SCHEME" not in text, path
    for path in (REPO / "solutions").rglob("*.ipynb"):
        assert "graders" not in path.read_text(), path


def test_the_demo_grade_table(tmp_path, capsys):
    from graders.course.demo import CLASS, run
    table = run(tmp_path / "demo")
    assert set(table) == set(CLASS)
    assert table["ada"] == (4, 4)           # correct
    assert 0 < table["grace"][0] < 4        # wrong numbers, right expression
    assert table["alan"] == (0, 4)          # blank
    captured = capsys.readouterr()
    out, err = captured.out, captured.err
    assert "student  variant  submitted" in out and "II.8 Training at Scale" in out
    # graded by `chapter autograde`: its progress bar and its summary, as that command prints them
    assert "autograde worked: 100%" in err and "3/3" in err, err[-2000:]
    assert "autograde worked: 3 submissions (3 notebooks)" in out and "isolation in effect:" in out
    # where the feedback is, one page per student, and nothing from a kernel or nbgrader's log
    for student in CLASS:
        assert str(tmp_path / f"demo/feedback/{student}/worked/w1-memory.html") in out
    noise = [line for line in err.splitlines() if "autograde worked:" not in line and line.strip()]
    assert not noise, noise[:10]
    assert "warning" not in (out + err).lower()
    # closed to other accounts, so no warning on a machine that has them either
    assert (tmp_path / "demo").stat().st_mode & 0o777 == 0o700
    feedback = tmp_path / "demo/feedback/grace/worked/w1-memory.html"
    assert feedback.exists() and "Likely mistake" in feedback.read_text()
    # the exchange lives inside the course, and the collected submissions came through it
    assert list((tmp_path / "demo/exchange").rglob("*.ipynb"))
    assert (tmp_path / "demo/submitted/grace/worked/w1-memory.ipynb").exists()
    json.dumps(table)


def test_the_demo_shows_status_only_from_current_verdicts(tmp_path):
    """The demo's status: rendered from the gate's cached verdicts when every item's is current;
    on a fresh copy (no cache) or after a change, a line saying `chapter status` checks them."""
    from graders.course.demo import cached_status
    from graders.course.gate import CACHE, fingerprint
    from tests.conftest import copy_course
    root = copy_course(tmp_path, ["worked/w1-memory"])
    [line] = cached_status(root)
    assert "1 of 1 items have no current verdict" in line and "`chapter status`" in line
    verdict = {"id": "w1-memory", "notebook": "worked/w1-memory", "solution": dict.fromkeys("ABCD", True),
               "blank_zero": True, "reasons": [], "fingerprint": fingerprint(root, "worked/w1-memory")}
    (root / CACHE).parent.mkdir()
    (root / CACHE).write_text(json.dumps({"w1-memory": verdict}))
    [shown] = cached_status(root)
    assert "II.8 Training at Scale" in shown and "mathematics" in shown and "no current verdict" not in shown
    verdict["fingerprint"] = "stale"
    (root / CACHE).write_text(json.dumps({"w1-memory": verdict}))
    assert "no current verdict" in cached_status(root)[0]


def test_an_answer_the_grader_cannot_decide_waits_for_a_person_under_plain_nbgrader(tmp_path):
    # variant C (stage 2): the reference times (√2 + √3)/√(5 + 2√6), which is 1 and which sympy
    # cannot prove; nbgrader alone would record the expression's point as lost
    from nbgrader.api import Gradebook
    undecided = with_answers(tmp_path, "undecided", {"answer_expr": (
        "per_device_expr = (2*N + (2 + K)*N/P) * (sp.sqrt(2) + sp.sqrt(3)) / sp.sqrt(5 + 2*sp.sqrt(6))\n")})
    student, other = variants.student_for("C", "worked"), variants.student_for("A", "worked")
    scores = autograde_nbgrader(REPO, tmp_path / "course", "worked",
                                {student: {"w1-memory": undecided}, other: {"w1-memory": SOLUTION}})
    assert any("could not decide per_device_expr" in line for line in scores[student]["w1-memory"].feedback)
    with Gradebook(f"sqlite:///{tmp_path / 'course' / 'gradebook.db'}") as gb:
        waiting = gb.find_grade("check_expr", "w1-memory", "worked", student)
        assert waiting.needs_manual_grade and waiting.auto_score is None
        kept = gb.find_grade("check_numbers", "w1-memory", "worked", student)
        assert kept.auto_score == 3 and not kept.needs_manual_grade
        decided = gb.find_grade("check_expr", "w1-memory", "worked", other)   # a proved answer: scored as before
        assert decided.auto_score == 1 and not decided.needs_manual_grade
    # what the student reads: the feedback says the cell waits, and shows no score of 0 for it
    nbgrader("generate_feedback", "worked", cwd=tmp_path / "course")
    page = (tmp_path / "course" / "feedback" / student / "worked" / "w1-memory.html").read_text()
    assert "could not decide per_device_expr either way" in page
    assert "Variant C: not graded yet" in page and "Variant C: 0 of 1 points" not in page
    # and so do the page's own scores, where nbgrader's would print "Score: 0.0 / 1.0"
    assert '<a href="#check_expr">Test cell</a> (not graded yet, out of 1.0)' in page
    assert "Not graded yet (out of 1.0)" in page and "Score: 0.0" not in page
    assert "(Score: 3.0 / 4.0; 1 point not graded yet)</h4>" in page
    assert "Score: 3.0 / 3.0" in page          # the other test cell keeps its score
    scored = (tmp_path / "course" / "feedback" / other / "worked" / "w1-memory.html").read_text()
    assert "(Score: 4.0 / 4.0)</h4>" in scored and "not graded yet" not in scored.lower()
