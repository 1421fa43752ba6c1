"""deadlines.toml: extensions and moved deadlines recompute penalties without regrading; a bad file
changes nothing; the nbgrader plugin gives the same penalty as `chapter deadlines`."""
from datetime import datetime

import pytest

from graders.course import deadlines as dl
from graders.course.deadlines import gradebook_of
from tests.course.synthetic_gradebook import built_once, course_from

POLICY = """
[penalty]
per = "day"
kind = "fraction"
amount = 0.25
cap = 0.5

[due]
hw1 = 2026-11-20T17:00:00Z
"""


# due 2026-11-20 17:00 (synthetic_gradebook.DUE): ann 30 h late, bo 30 h late, cy on time
NOTEBOOKS = {"hw1": {"nb": [4, 4]}}
CLASS = {("ann", "hw1"): {"scores": {"nb": [4, 4]}, "late_hours": 30},
         ("bo", "hw1"): {"scores": {"nb": [2, 2]}, "late_hours": 30},
         ("cy", "hw1"): {"scores": {"nb": [4, 0]}}}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return built_once(tmp_path_factory, NOTEBOOKS, CLASS)


@pytest.fixture
def course(tmp_path, built):
    return course_from(tmp_path, built)


def penalties(root):
    from nbgrader.api import Gradebook
    db_url, course_id = gradebook_of(root)
    with Gradebook(db_url, course_id) as gb:
        return {s.student_id: (float(s.score), float(s.late_submission_penalty or 0))
                for s in gb.assignment_submissions("hw1")}


def write(root, text):
    (root / dl.FILE).write_text(text)
    return dl.load(root)


def test_schedule():
    s = dl.Schedule("day", "fraction", 0.25, 0.5)
    assert s.penalty(8, 0) == 0 and s.penalty(8, 1) == 2 and s.penalty(8, 86400) == 2
    assert s.penalty(8, 86401) == 4 and s.penalty(8, 10 * 86400) == 4       # capped at half
    p = dl.Schedule("hour", "points", 1.5, 4, grace_minutes=10)
    assert p.penalty(10, 600) == 0 and p.penalty(10, 601) == 1.5 and p.penalty(10, 99 * 3600) == 4
    assert p.penalty(1, 99 * 3600) == 1                                    # never more than the score
    due = dl.parse("[due]\na = 2026-11-20\nb = 2026-11-20T18:00:00+01:00\nc = 2026-11-20T17:00:00\n").due
    assert due == {"a": datetime(2026, 11, 20, 23, 59, 59), "b": datetime(2026, 11, 20, 17),
                   "c": datetime(2026, 11, 20, 17)}


def test_schedule_applied_then_48h_for_one_student(course):
    notes, changes = dl.apply(course, write(course, POLICY))
    # 30 h late: two started days, 0.5 of the score (the cap)
    assert penalties(course) == {"ann": (8, 4), "bo": (4, 2), "cy": (4, 0)}
    assert sorted(c.student for c in changes) == ["ann", "bo"]
    notes, changes = dl.apply(course, write(course, POLICY + '\n[extensions.hw1]\nann = { hours = 48 }\n'))
    assert penalties(course) == {"ann": (8, 0), "bo": (4, 2), "cy": (4, 0)}
    assert [c.line() for c in changes] == ["ann  hw1: penalty 4 -> 0"]
    assert any("ann" in n and "extension None -> 2 days" in n for n in notes)


def test_extension_as_a_due_date_and_withdrawn(course):
    dl.apply(course, write(course, POLICY + '\n[extensions.hw1]\nbo = { due = 2026-11-21T17:00:00Z }\n'))
    assert penalties(course)["bo"] == (4, 1)                     # 6 h past their own date: one day
    notes, changes = dl.apply(course, write(course, POLICY))     # the extension taken off again
    assert penalties(course)["bo"] == (4, 2)
    assert [c.line() for c in changes] == ["bo  hw1: penalty 1 -> 2"]


def test_moving_the_deadline_recomputes(course):
    dl.apply(course, write(course, POLICY))
    notes, changes = dl.apply(course, write(course, POLICY.replace("2026-11-20T17:00", "2026-11-21T17:00")))
    assert penalties(course) == {"ann": (8, 2), "bo": (4, 1), "cy": (4, 0)}
    assert any("due 2026-11-20 17:00:00 -> 2026-11-21 17:00:00" in n for n in notes)
    assert {c.student: (c.old, c.new) for c in changes} == {"ann": (4, 2), "bo": (2, 1)}
    scores = {s: v[0] for s, v in penalties(course).items()}
    assert scores == {"ann": 8, "bo": 4, "cy": 4}                # nothing regraded


@pytest.mark.parametrize("text, message", [
    ("[penalty\n", "not valid TOML"),
    ("[penalty]\nper = 'week'\n", "choose \"hour\" or \"day\""),
    ("[penalty]\namount = -1\n", "amount"),
    ("[penalty]\namount = 2\n", "at most 1"),
    ("[due]\nhw1 = 'friday'\n", "not a date"),
    ("[due]\nhw1 = 2026-11-20T17:00:00Z\n[extensions.hw1]\nann = { hours = 1, due = 2026-11-22 }\n",
     "exactly one"),
    ("[due]\nhw1 = 2026-11-20T17:00:00Z\n[extensions.hw1]\nann = { due = 2026-11-19T00:00:00Z }\n", "before"),
    ("[extensions.hw9]\nann = { hours = 1 }\n", "no due date"),
    ("[dues]\n", "unknown key"),
])
def test_malformed_file_is_a_clear_message_and_changes_nothing(course, capsys, text, message):
    from graders.cli import main
    dl.apply(course, write(course, POLICY))
    before = penalties(course)
    with pytest.raises(dl.DeadlineError, match=message):
        dl.parse(text)
    (course / dl.FILE).write_text(text)
    assert main(["deadlines", "--course", str(course)]) == 2
    err = capsys.readouterr().err
    assert "nothing was changed" in err and "Traceback" not in err
    assert penalties(course) == before


def test_autograde_says_when_the_file_keeps_penalties_from_being_given(course, capsys, monkeypatch):
    """nbgrader's plugin can only log a malformed deadlines.toml; `chapter autograde` says it."""
    from types import SimpleNamespace

    from graders.cli import main
    from graders.engine import autograde
    monkeypatch.setattr(autograde, "autograde", lambda *args, **kwargs: SimpleNamespace(failed={}))
    (course / dl.FILE).write_text(POLICY)
    assert main(["autograde", "hw1", "--course", str(course)]) == 0
    assert "LATE PENALTIES NOT GIVEN" not in capsys.readouterr().err
    (course / dl.FILE).write_text("[dues]\n")
    assert main(["autograde", "hw1", "--course", str(course)]) == 0
    err = capsys.readouterr().err
    assert "LATE PENALTIES NOT GIVEN" in err and "unknown key" in err


def test_cli_prints_what_changed(course, capsys):
    from graders.cli import main
    (course / dl.FILE).write_text(POLICY)
    assert main(["deadlines", "--course", str(course)]) == 0
    out = capsys.readouterr().out
    assert "ann  hw1: penalty 0 -> 4" in out and "2 penalties changed, nothing regraded" in out


def test_plugin_agrees_with_chapter_deadlines(course):
    """The plugin nbgrader_config.py names, loaded as nbgrader loads it, gives the same penalty."""
    from nbgrader.preprocessors import AssignLatePenalties

    from graders.engine.course_dir import load_config
    (course / dl.FILE).write_text(POLICY)
    late = AssignLatePenalties(config=load_config(course))
    late.init_plugin()
    assert isinstance(late.plugin_inst, dl.DeadlinePenalty)
    dl.apply(course, dl.load(course))
    assert late.plugin_inst.late_submission_penalty("ann", 8, 30 * 3600) == penalties(course)["ann"][1]
    (course / dl.FILE).write_text("[penalty\n")                   # broken: no penalty, an error logged
    assert late.plugin_inst.late_submission_penalty("ann", 8, 30 * 3600) is None


def test_the_plugin_reads_the_file_once_until_it_changes(course, monkeypatch):
    """A class of late notebooks costs one read of deadlines.toml, not one a notebook."""
    import os
    reads = []
    monkeypatch.setattr(dl, "load", lambda root, load=dl.load: reads.append(root) or load(root))
    (course / dl.FILE).write_text(POLICY)
    from graders.engine.course_dir import load_config
    plugin = dl.DeadlinePenalty(config=load_config(course))
    assert [plugin.late_submission_penalty("ann", 8, 30 * 3600) for _ in range(5)] == [4.0] * 5
    assert len(reads) == 1
    (course / dl.FILE).write_text(POLICY.replace("amount = 0.25", "amount = 0.125"))
    os.utime(course / dl.FILE, ns=(1, 1))
    assert plugin.late_submission_penalty("ann", 8, 30 * 3600) == 2.0 and len(reads) == 2


def test_feedback_tells_each_student_their_own_due_date(course):
    """The preprocessor nbgrader_config.py puts in generate_feedback: ann's page says her extended
    date and no penalty; bo's says the class's date, how late and the penalty."""
    import nbformat
    from nbconvert import HTMLExporter

    from graders.engine.course_dir import load_config
    dl.apply(course, write(course, POLICY + '\n[extensions.hw1]\nann = { hours = 48 }\n'))
    config = load_config(course)
    assert "graders.course.deadlines.DueDateInFeedback" in config.GenerateFeedback.preprocessors
    db_url, _ = gradebook_of(course)
    first = {}
    for student in ("ann", "bo", "cy"):
        released = dl.release_cell(dl.load(course), "hw1")    # the release's header: the class's date
        nb = nbformat.v4.new_notebook(cells=[released, nbformat.v4.new_markdown_cell("the work")])
        resources = {"nbgrader": {"db_url": db_url, "assignment": "hw1", "student": student, "notebook": "nb"}}
        nb, _ = dl.DueDateInFeedback()(nb, resources)
        first[student] = nb.cells[0].source
        assert [c.source for c in nb.cells[1:]] == ["the work"]     # replaced by their own
    assert first["ann"].startswith("**Your due date:** 2026-11-22 17:00 UTC (the class's 2026-11-20 17:00, "
                                   "with your extension of 48 h).")
    assert "30.0 h late, with no penalty" not in first["ann"] and "on time" in first["ann"]
    assert first["bo"] == ("**Your due date:** 2026-11-20 17:00 UTC. Handed in 2026-11-21 23:00 UTC, "
                           "30.0 h late: a late penalty of 2 points on this notebook.")
    assert first["cy"].endswith("on time.")
    # outside generate_feedback (no gradebook in its resources) it changes nothing
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("x")])
    assert len(dl.DueDateInFeedback()(nb, {})[0].cells) == 1
    page, _ = HTMLExporter().from_notebook_node(dl.DueDateInFeedback()(
        nbformat.v4.new_notebook(), {"nbgrader": {"db_url": db_url, "assignment": "hw1", "student": "bo",
                                                  "notebook": "nb"}})[0])
    assert "Your due date" in page


def test_export_waits_for_the_policy(course, capsys):
    """Grades go out only with deadlines.toml's penalties: edited and not applied, or malformed,
    `chapter export` refuses and says to run `chapter deadlines`; --dry-run changes nothing."""
    from graders.cli import main
    (course / dl.FILE).write_text(POLICY)
    assert main(["export", "hw1", "--course", str(course)]) == 2
    err = capsys.readouterr().err
    assert "ann  hw1: penalty 0 -> 4" in err and "run `chapter deadlines` first" in err
    assert main(["deadlines", "--dry-run", "--course", str(course)]) == 0
    assert "2 penalties would change" in capsys.readouterr().out
    assert penalties(course)["ann"] == (8, 0)
    assert main(["deadlines", "--course", str(course)]) == 0
    assert main(["export", "hw1", "--course", str(course)]) == 0
    (course / dl.FILE).write_text("[penalty\n")
    assert main(["export", "hw1", "--course", str(course)]) == 2
    assert "not valid TOML" in capsys.readouterr().err


def test_serve_counts_by_each_students_own_due_date(tmp_path):
    """`chapter serve` counts the last attempt before the student's OWN due date (extension
    included), follows edits of deadlines.toml, and keeps the last good version of a broken one."""
    import io

    from graders.engine import serve
    (tmp_path / dl.FILE).write_text('[due]\nworked = 2026-03-03T00:00:00Z\n'
                                    '[extensions.worked]\nann = { hours = 48 }\n')
    own = dl.OwnDueDates(tmp_path)
    assert own.refresh() is None
    out = io.StringIO()
    service = serve.Service(tmp_path, ["worked"], out=out, own_due=own)
    service.duedates = {"worked": None, "other": datetime(2026, 1, 1)}
    attempts = [serve.Attempt("a", "2026-03-02 10:00:00.000000 UTC", state="graded", score=1.0),
                serve.Attempt("b", "2026-03-04 10:00:00.000000 UTC", state="graded", score=1.0)]
    policy = serve.Policy(counts="last")
    assert serve.counted(attempts, policy, service._due("worked", "bo")).folder == "a"
    assert serve.counted(attempts, policy, service._due("worked", "ann")).folder == "b"
    assert service._due("other", "ann") == datetime(2026, 1, 1)     # none in the file: the gradebook's

    import os
    (tmp_path / dl.FILE).write_text('[due]\nworked = 2026-03-05T00:00:00Z\n')   # moved; no extension
    os.utime(tmp_path / dl.FILE, ns=(1, 1))
    assert service._due("worked", "bo") == datetime(2026, 3, 5)
    (tmp_path / dl.FILE).write_text('[due]\nworked = "soon"\n')
    assert service._due("worked", "bo") == datetime(2026, 3, 5)                 # the last good version
    assert "deadlines.toml NOT APPLIED" in out.getvalue() and "soon" in out.getvalue()
    (tmp_path / dl.FILE).unlink()
    assert service._due("worked", "bo") is None                                 # back to the gradebook's


def test_serve_will_not_start_on_a_broken_deadlines_file(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from graders.course import commands, contract
    (tmp_path / dl.FILE).write_text("[due]\nworked = 3\n")
    monkeypatch.setattr(contract, "course_root", lambda course: tmp_path)
    args = SimpleNamespace(course=None, history=False, assignment=["worked"], workers=1, poll=True)
    with pytest.raises(SystemExit, match="attempt that counts"):
        commands.cmd_serve(args)
