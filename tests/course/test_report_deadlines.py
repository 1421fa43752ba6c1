"""`chapter report`'s deadlines part: each student's own due date, hand-in time and penalty, and
where the gradebook is out of step with deadlines.toml (an extension not yet applied)."""
import pytest

from graders.course import deadlines as dl
from graders.course.report import lateness
from graders.course.report.data import ClassData
from graders.course.report.render import render_html, render_text
from tests.course.synthetic_gradebook import built_once, course_from
from tests.course.test_deadlines import CLASS, NOTEBOOKS, POLICY


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    # test_deadlines' class (ann and bo 30 h late, cy on time), and di 10 minutes late
    return built_once(tmp_path_factory, NOTEBOOKS,
                      {**CLASS, ("di", "hw1"): {"scores": {"nb": [4, 4]}, "late_hours": 1 / 6}})


@pytest.fixture
def course(tmp_path, built):
    return course_from(tmp_path, built)


def row(found, student):
    got = next(r for r in found.rows if r[0] == student)
    return dict(zip(lateness.COLUMNS, got))


def test_each_students_due_date_lateness_and_penalty(course):
    (course / dl.FILE).write_text(POLICY.replace("cap = 0.5", "cap = 0.5\ngrace_minutes = 15"))
    dl.apply(course, dl.load(course))
    found = lateness.read(course, "hw1")
    assert row(found, "ann") == {"student": "ann", "due (UTC)": "2026-11-20 17:00", "handed in (UTC)": "2026-11-21 23:00",
                                 "hours late": 30.0, "penalty (points)": 4.0, "note": ""}
    assert row(found, "cy")["hours late"] == 0 and row(found, "cy")["penalty (points)"] == 0
    assert row(found, "di")["penalty (points)"] == 0 and "no penalty" in row(found, "di")["note"]
    assert found.counts() == {"submissions": 4, "on time": 1, "late": 3, "penalised": 2, "points taken": 6.0,
                              "with an extension": 0}
    assert found.summary().startswith("Due 2026-11-20 17:00 UTC: 4 submissions, 1 on time, 3 late "
                                      "(2 penalised, 6 points taken in all)")
    assert "chapter deadlines" not in found.summary()


def test_the_printed_report_opens_with_the_deadlines_and_lists_every_late_student(course):
    """ann lost 4 points for 30 h late and has no note: she is listed all the same, and cy, on
    time, is not; the deadlines come before the class overview, as on the page."""
    (course / dl.FILE).write_text(POLICY.replace("cap = 0.5", "cap = 0.5\ngrace_minutes = 15"))
    dl.apply(course, dl.load(course))
    found = lateness.read(course, "hw1")
    text = render_text(ClassData("hw1", "c", [], ["ann", "bo", "cy", "di"], 0, lateness=found), [])
    listed = text.split("late, extended or out of step", 1)[1].split("\n\n", 1)[0]
    assert [line.split()[0] for line in listed.splitlines()[3:]] == ["ann", "bo", "di"], listed
    assert text.index("Due 2026-11-20 17:00 UTC") < text.index("the five most common mistakes")


def test_an_extension_not_yet_applied_is_named_then_applied(course):
    (course / dl.FILE).write_text(POLICY)
    dl.apply(course, dl.load(course))
    (course / dl.FILE).write_text(POLICY + "\n[extensions.hw1]\nann = { hours = 48 }\n")
    found = lateness.read(course, "hw1")
    assert "48 h of extension, the gradebook 0 h: run `chapter deadlines`" in row(found, "ann")["note"]
    assert found.out_of_step == 1 and "1 row differs from deadlines.toml" in found.summary()
    assert found.counts()["with an extension"] == 0          # granted, but not yet in the gradebook
    page = render_html(ClassData("hw1", "c", [], ["ann"], 0, lateness=found), [], {"overview": ""})
    assert "<h2>Deadlines and late penalties</h2>" in page and '<tr class="flagged"><td>ann</td>' in page
    assert "ann" in render_text(ClassData("hw1", "c", [], ["ann"], 0, lateness=found), [])

    dl.apply(course, dl.load(course))
    found = lateness.read(course, "hw1")
    assert row(found, "ann")["note"] == "extension of 48 h" and row(found, "ann")["penalty (points)"] == 0
    assert row(found, "ann")["due (UTC)"] == "2026-11-22 17:00" and row(found, "ann")["hours late"] == 0
    assert found.out_of_step == 0 and found.counts()["with an extension"] == 1


def test_a_moved_due_date_or_a_broken_file_is_said_and_the_gradebook_still_shown(course):
    (course / dl.FILE).write_text(POLICY)
    dl.apply(course, dl.load(course))
    (course / dl.FILE).write_text(POLICY.replace("2026-11-20T17:00", "2026-11-22T17:00"))
    assert "deadlines.toml says 2026-11-22 17:00 UTC but the gradebook says 2026-11-20 17:00: run " \
           "`chapter deadlines`" in lateness.read(course, "hw1").summary()
    (course / dl.FILE).write_text("[due]\nhw1 = 'friday'\n")
    found = lateness.read(course, "hw1")
    assert "could not be read" in found.summary() and "not a date" in found.summary()
    assert row(found, "ann")["penalty (points)"] == 4.0


def test_without_a_due_date_the_part_is_left_out(course):
    from nbgrader.api import Gradebook
    db_url, course_id = dl.gradebook_of(course)
    with Gradebook(db_url, course_id) as gb:
        gb.update_or_create_assignment("hw1", duedate=None)
    found = lateness.read(course, "hw1")
    assert not found.shown and found.summary() == ""
    page = render_html(ClassData("hw1", "c", [], [], 0, lateness=found), [], {"overview": ""})
    assert "Deadlines" not in page
