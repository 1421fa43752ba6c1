"""A release that opens with deadlines.toml's due-date header (issue 30) grades as before, under
`chapter autograde` and under plain `nbgrader autograde`: the header is no nbgrader cell, so a
student who keeps it, edits it or deletes it gets what a student of the same variant gets for the
same answers in a release without it."""
import shutil

import nbformat
import pytest

from graders import variants
from graders.course import deadlines as dl
from graders.course.build import build
from graders.course.demo import fill
from graders.course.verify import autograde, autograde_nbgrader
from tests.conftest import REPO, copy_course

pytestmark = pytest.mark.slow
ASSIGNMENT, NB = "worked", "w1-memory"
POLICY = '[penalty]\nper = "day"\namount = 0.1\n\n[due]\nworked = 2099-01-01T17:00:00Z\n'


def student(name):
    return variants.student_for("A", ASSIGNMENT, prefix=name)   # one variant: the same expected output


@pytest.fixture(scope="module")
def handed_in(tmp_path_factory):
    """(course root whose release has the header, {student: {NB: path}}, {student: the one they match})."""
    tmp = tmp_path_factory.mktemp("header")
    (tmp / "root").mkdir()
    root = copy_course(tmp / "root", [f"{ASSIGNMENT}/{NB}"])
    (root / dl.FILE).write_text(POLICY)
    build(root)
    released = root / "release" / ASSIGNMENT / f"{NB}.ipynb"
    assert nbformat.read(released, as_version=4).cells[0].id == dl.HEADER_ID

    def notebook(name, source, how, change=None):
        path = tmp / f"{name}.ipynb"
        shutil.copy(source, path)
        fill(path, how, root)
        if change:
            nb = nbformat.read(path, as_version=4)
            change(nb)
            nbformat.write(nb, path)
        return path

    def deleted(nb):
        nb.cells = [c for c in nb.cells if c.id != dl.HEADER_ID]

    def edited(nb):
        nb.cells[0].source = "**Due:** whenever I like. ~~Late work~~"
        nb.cells[0].metadata.update(editable=True, deletable=True, deadline={"due": "2999-01-01T00:00:00"})

    def made_code(nb):   # the header turned into a code cell that prints (and runs nothing graded)
        nb.cells[0] = nbformat.v4.new_code_cell("print('the due date')", id=dl.HEADER_ID)

    without = REPO / "release" / ASSIGNMENT / f"{NB}.ipynb"
    cases = {   # student: (notebook, the student without a header whose grade it must equal)
        "before-correct": (notebook("before-correct", without, "correct"), None),
        "before-wrong": (notebook("before-wrong", without, "wrong"), None),
        "kept-correct": (notebook("kept-correct", released, "correct"), "before-correct"),
        "kept-wrong": (notebook("kept-wrong", released, "wrong"), "before-wrong"),
        "deleted": (notebook("deleted", released, "correct", deleted), "before-correct"),
        "edited": (notebook("edited", released, "correct", edited), "before-correct"),
        "code": (notebook("code", released, "correct", made_code), "before-correct"),
        "blank": (notebook("blank", released, "blank"), None),
    }
    assert nbformat.read(cases["kept-correct"][0], as_version=4).cells[0].id == dl.HEADER_ID
    submissions = {student(name): {NB: path} for name, (path, _) in cases.items()}
    same = {student(name): student(like) for name, (_, like) in cases.items() if like}
    return root, submissions, same


# plain nbgrader takes seconds a notebook: it grades the header kept, against no header, only
PLAIN = ("before-correct", "kept-correct", "before-wrong", "kept-wrong")


@pytest.mark.parametrize("grader", [autograde, autograde_nbgrader], ids=["chapter autograde", "nbgrader autograde"])
def test_the_header_kept_edited_or_deleted_grades_as_before(handed_in, tmp_path, grader):
    root, submissions, same = handed_in
    if grader is autograde_nbgrader:
        submissions = {s: v for s, v in submissions.items() if s in {student(n) for n in PLAIN}}
        same = {s: like for s, like in same.items() if s in submissions}
    scores = grader(root, tmp_path / "course", ASSIGNMENT, submissions)
    score = {s: scores[s][NB] for s in submissions}
    assert score[student("before-correct")].score == 4 and 0 < score[student("before-wrong")].score < 4
    assert student("blank") not in score or score[student("blank")].score == 0
    for who, like in same.items():
        assert (score[who].score, score[who].max_score, score[who].feedback) == \
               (score[like].score, score[like].max_score, score[like].feedback), who
    # the scratch course's release opened with the header, and no cell of it is in the gradebook
    course_release = nbformat.read(tmp_path / "course" / "release" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    assert course_release.cells[0].id == dl.HEADER_ID
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{tmp_path / 'course' / 'gradebook.db'}") as gb:
        recorded = {c.name for c in gb.find_notebook(NB, ASSIGNMENT).source_cells}
    assert recorded and dl.HEADER_ID not in recorded
