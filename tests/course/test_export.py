"""`chapter export`: the LMS's CSV read back gives the gradebook's numbers; no silent 0; hostile ids."""
import csv
import json

import pytest

from graders.course import export as ex
from tests.course.synthetic_gradebook import built_once, course_from

ASSIGNMENTS = {"hw1": {"nb-a": [2, 3], "nb-b": [5]}, "hw2": {"nb-c": [1.5, 2.5]}}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return built_once(tmp_path_factory, ASSIGNMENTS, {
        ("ann", "hw1"): {"scores": {"nb-a": [2, 1.25], "nb-b": [4.1]}},
        ("ann", "hw2"): {"scores": {"nb-c": [1.5, 0.1]}, "late_hours": 3, "penalty": 0.4},
        ("=cmd|' /C calc'!A0", "hw1"): {"scores": {"nb-a": [1, 1], "nb-b": [0]}},
        ('bo, "the" one', "hw1"): {"scores": {"nb-a": [2, 3], "nb-b": [5]}, "waiting": True},
        ("cy\nnewline", "hw2"): {"scores": {"nb-c": [0, 0]}},
    })


@pytest.fixture
def course(tmp_path, built):
    return course_from(tmp_path, built)


def read(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_round_trip_canvas(course):
    written = ex.export(course, "all", lms="canvas")
    rows = {r["ID"]: r for r in read(written.export)}
    assert list(read(written.export)[0]) == ex.CANVAS_COLUMNS + ["hw1", "hw2"]
    # the gradebook's own numbers: sum of the cells minus the penalty, exactly
    assert float(rows["ann"]["hw1"]) == 2 + 1.25 + 4.1
    assert float(rows["ann"]["hw2"]) == max(0.0, (1.5 + 0.1) - 0.4)
    assert float(rows["'=cmd|' /C calc'!A0"]["hw1"]) == 2.0
    assert float(rows["cy newline"]["hw2"]) == 0.0          # a graded 0 is a 0
    assert written.exported == 4
    # every student's grade: the instructor's alone, in exports/ or wherever --out puts them
    assert written.export.parent.stat().st_mode & 0o777 == 0o700
    assert written.export.stat().st_mode & 0o777 == 0o600 and written.apart.stat().st_mode & 0o777 == 0o600
    # an export left readable by an older version is replaced whole, not rewritten in place with its mode
    written.export.chmod(0o644)
    again = ex.export(course, "all", lms="canvas")
    assert again.export == written.export and again.export.stat().st_mode & 0o777 == 0o600
    assert read(again.export) == read(written.export)


def test_out_makes_a_closed_folder_and_leaves_an_existing_one_as_it_is(course, tmp_path):
    made = ex.export(course, "all", lms="canvas", out=tmp_path / "new" / "grades")
    assert made.export.parent.stat().st_mode & 0o777 == 0o700
    shared = tmp_path / "shared"           # say, /tmp: closing it would break every other user of it
    shared.mkdir(mode=0o1777)
    shared.chmod(0o1777)
    written = ex.export(course, "all", lms="canvas", out=shared)
    assert shared.stat().st_mode & 0o7777 == 0o1777
    assert written.export.stat().st_mode & 0o777 == 0o600 and written.apart.stat().st_mode & 0o777 == 0o600


def test_no_silent_zero(course):
    written = ex.export(course, "all")
    rows = {r["ID"]: r for r in read(written.export)}
    assert rows['bo, "the" one']["hw1"] == ""            # waiting for a person: empty, not 0
    assert rows["ann"]["hw2"] != ""
    assert rows["cy newline"]["hw1"] == ""               # no submission: empty
    apart = {(r["student"], r["assignment"]): r["why"] for r in read(written.apart)}
    assert "waits for a person" in apart['bo, "the" one', "hw1"]
    assert apart["cy newline", "hw1"] == "no submission"
    assert ("ann", "hw1") not in apart
    assert any("bo" in line and "waits" in line for line in written.apart_lines)


def test_set_aside_is_apart_and_cannot_blank_a_grade(course):
    ledger = course / ".chapter" / "set-aside"
    ledger.mkdir(parents=True)
    (ledger / "hw2.json").write_text(json.dumps([
        {"folder": "dee+hw2+2026", "claimed": "dee", "why": "written by another login", "seen": 1.0},
        {"folder": "ann+hw2+x", "claimed": "ann", "why": "forged", "seen": 2.0},
        {"folder": "odd", "claimed": {"not": "a name"}, "why": "?", "seen": 3.0}]))
    written = ex.export(course, "hw2")
    rows = {r["ID"]: r for r in read(written.export)}
    assert rows["ann"]["hw2"] != ""                      # a forged claim does not blank ann's grade
    apart = {(r["student"], r["assignment"]): r["why"] for r in read(written.apart)}
    assert apart["dee", "hw2"].startswith("set aside")
    assert "graded one is exported" in apart["ann", "hw2"]
    # a folder may claim any name: one the gradebook does not know is apart, never a row of the LMS's
    # file (thousands of forged folders would make thousands of unknown students at the import)
    assert "dee" not in rows
    assert [line for line in written.apart_lines if line.startswith("APART dee ")] == [
        "APART dee hw2: set aside (dee+hw2+2026): written by another login"]
    # nor is a name that no one bears said to have no submission for the other assignments
    assert not [line for line in ex.export(course, "all").apart_lines if line.startswith("APART dee hw1")]
    # on the roster (ids.csv), the same student is a row, with an empty cell
    ids = course / "ids.csv"
    ids.write_text("course_id,lms_id\nann,101\ndee,103\n", encoding="utf-8")
    mapped = {r["ID"]: r for r in read(ex.export(course, "hw2", ids=ids).export)}
    assert mapped["103"]["hw2"] == "" and mapped["101"]["hw2"] != ""


def test_a_set_aside_folder_named_in_any_bytes_neither_stops_the_export_nor_writes_raw(course):
    """A forged folder named in bytes that are not UTF-8 stopped the whole export (UnicodeEncodeError),
    and one holding ESC or a newline was printed raw in the APART lines."""
    from graders.engine import exchange
    exchange.set_aside(course, "hw2", "eve\udcff+hw2+x", "eve\udcff", "written by another login")
    exchange.set_aside(course, "hw2", "mo\x1b[2J\nFAKE+hw2+y", "mo", "written by another login")
    written = ex.export(course, "hw2")
    lines = "\n".join(written.apart_lines)
    assert "APART eve\\xff hw2: set aside (eve\\xff+hw2+x)" in lines
    assert "\x1b" not in lines and "mo\\x1b[2J\\x0aFAKE+hw2+y" in lines
    assert "eve\\xff" not in {r["ID"] for r in read(written.export)}     # a name only the folder gives
    assert {(r["student"], r["assignment"]) for r in read(written.apart)} >= {("eve\\xff", "hw2")}


def test_hostile_ids_are_neutralised(course):
    written = ex.export(course, "hw1")
    text = written.export.read_text()
    for row in csv.reader(text.splitlines()):
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@")), cell
            assert "\n" not in cell
    assert '"bo, ""the"" one"' in text                   # quoted, not split


@pytest.mark.parametrize("text, shown", [
    ("\x01=HYPERLINK(\"http://x\")", "' =HYPERLINK(\"http://x\")"),   # a control before the formula
    ("\t+1", "' +1"),
    ("  @SUM(A1)", "'  @SUM(A1)"),
    ("ann\u202eexe.txt", "ann exe.txt"),        # a bidirectional override reorders what is shown
    ("b\u200bo\x85b", "b o b"),                  # a zero-width space, and C1's next-line
    ("Zoë O'Neil-Smith", "Zoë O'Neil-Smith"),    # a name stays as written
    (None, ""),
])
def test_safe_text(text, shown):
    assert ex.safe_text(text) == shown


def test_ids_file_and_moodle(course, tmp_path):
    ids = tmp_path / "ids.csv"
    ids.write_text("course_id,lms_id,sis_id,section,name,sis_login_id\nann,101,S-1,A,Ann Example,ann@uni\n"
                   "=cmd|' /C calc'!A0,102,@S2,B,,\ndee,103,S-3,A,Dee Never,\n", encoding="utf-8")
    canvas = ex.export(course, "all", lms="canvas", ids=ids)
    rows = {r["ID"]: r for r in read(canvas.export)}
    assert rows["101"]["Student"] == "Ann Example" and rows["101"]["SIS User ID"] == "S-1"
    assert rows["101"]["SIS Login ID"] == "ann@uni" and rows["101"]["Section"] == "A"
    assert rows["102"]["SIS User ID"] == "'@S2"
    assert float(rows["101"]["hw1"]) == 2 + 1.25 + 4.1
    assert "cy newline" not in {r["Student"] for r in rows.values()}
    assert any("not in the ids file" in line for line in canvas.apart_lines)
    assert rows["103"]["hw1"] == rows["103"]["hw2"] == ""          # on the roster, never submitted
    assert "APART dee hw1: no submission" in canvas.apart_lines
    moodle = ex.export(course, "hw1", lms="moodle", ids=ids)
    mrows = {r[ex.MOODLE_ID_COLUMN]: r for r in read(moodle.export)}
    assert float(mrows["S-1"]["hw1"]) == 2 + 1.25 + 4.1
    assert list(read(moodle.export)[0]) == [ex.MOODLE_ID_COLUMN, "hw1"]


@pytest.mark.parametrize("text, message", [
    ("lms_id\n1\n", "missing course_id"),
    ("course_id,lms_id\nann,1\nann,2\n", "mapped twice"),
    ("course_id,lms_id\nann,1,extra\n", "more fields"),
    ("course_id,lms_id\n,1\n", "no course_id"),
])
def test_bad_ids_file_is_a_clear_message(course, tmp_path, text, message):
    ids = tmp_path / "ids.csv"
    ids.write_text(text)
    with pytest.raises(ex.ExportError, match=message):
        ex.export(course, "all", ids=ids)


def test_cli(course, capsys):
    from graders.cli import main
    assert main(["export", "nope", "--course", str(course)]) == 2
    assert "no assignment 'nope'" in capsys.readouterr().err
    assert main(["export", "all", "--lms", "moodle", "--course", str(course)]) == 0
    out = capsys.readouterr().out
    assert "APART" in out and "held apart" in out
    assert (course / "exports" / "moodle-all.csv").exists()
