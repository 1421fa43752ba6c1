"""journal.py on its own: what invalidates a kept grade, how a submission is keyed, and a journal
file that is not what the journal wrote. A course built by hand in a temporary folder; no
gradebook, no sandbox."""
from __future__ import annotations

import builtins
import dataclasses
import io
import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from graders.engine import journal
from graders.engine.course_dir import Course, InstructorNotebook
from graders.engine.grading import NotebookResult, SubmissionResult
from graders.engine.journal import Journal, fingerprint, submission_key
from graders.sandbox.zygote import Limits

ASSIGNMENT = "a1"


def make_course(root, **changes) -> Course:
    source = root / "source" / ASSIGNMENT
    source.mkdir(parents=True, exist_ok=True)
    (source / "nb.ipynb").write_text("{}")
    nb = InstructorNotebook(
        name="nb", kernelspec=None,
        source_cells=[SimpleNamespace(name="test", cell_type="code", locked=True, checksum="c", source="assert x")],
        grade_cells=[SimpleNamespace(name="test", max_score=2.0, cell_type="code")],
        solution_cells=[], task_cells=[])
    course = Course(root=str(root), assignment=ASSIGNMENT, db_url="sqlite:///gradebook.db", course_id="course",
                    submitted=str(root / "submitted" / "{student}" / ASSIGNMENT),
                    autograded=str(root / "autograded" / "{student}" / ASSIGNMENT),
                    source_dir=str(source), ignore=[".ipynb_checkpoints", "*.pyc", "__pycache__"],
                    notebooks={"nb": nb}, permissions=0o444, begin_hidden="BEGIN HIDDEN TESTS",
                    end_hidden="END HIDDEN TESTS", max_lines=1000, max_traceback=100, exclude_overwriting=[],
                    excluded_students=[], time_limits={"nb": None})
    return dataclasses.replace(course, **changes)


@pytest.fixture
def course(tmp_path):
    return make_course(tmp_path)


def hand_in(course, student, files: dict):
    folder = course.submission_dir(student)
    folder.mkdir(parents=True, exist_ok=True)
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    return folder


# ------------------------------------------------------------------------------ the fingerprint
def test_the_fingerprint_is_the_same_for_the_same_course(course):
    assert fingerprint(course, Limits()) == fingerprint(make_course(Path(course.root)), Limits())


def _helper_changed(course):
    (Path(course.source_dir) / "helpers.py").write_text("SCALE = 2\n")
    return course


def _data_added(course):
    data = Path(course.source_dir) / "data" / "table.csv"
    data.parent.mkdir()
    data.write_text("1,2\n")
    return course


CHANGES = {
    "a helper module shipped beside the notebooks changes": _helper_changed,
    "a data file is added to the assignment": _data_added,
    "the course switches to instant feedback": lambda c: dataclasses.replace(c, instant=True),
    "a notebook's time limit changes": lambda c: dataclasses.replace(c, time_limits={"nb": 12.5}),
    "an instructor's cell changes": lambda c: dataclasses.replace(c, notebooks={"nb": dataclasses.replace(
        c.notebooks["nb"], grade_cells=[SimpleNamespace(name="test", max_score=3.0, cell_type="code")])}),
    "the hidden-test markers change": lambda c: dataclasses.replace(c, begin_hidden="BEGIN SECRET"),
}


@pytest.mark.parametrize("what", CHANGES)
def test_anything_a_grade_depends_on_changes_the_fingerprint(course, what):
    (Path(course.source_dir) / "helpers.py").write_text("SCALE = 1\n")
    before = fingerprint(course, Limits())
    assert fingerprint(CHANGES[what](course), Limits()) != before, what


def test_a_changed_limit_changes_the_fingerprint(course):
    assert fingerprint(course, Limits(notebook_seconds=30)) != fingerprint(course, Limits())


def test_a_measured_time_limit_counts_as_the_notebook_is_given_it(course):
    """Above the configured ceiling a new measurement changes nothing a notebook is given: no regrade."""
    ceiling = Limits(notebook_seconds=60)
    slow, slower = (dataclasses.replace(course, time_limits={"nb": s}) for s in (400.0, 900.0))
    assert fingerprint(slow, ceiling) == fingerprint(slower, ceiling) == fingerprint(course, ceiling)


def test_ignored_files_and_the_source_notebooks_do_not_change_the_fingerprint(course):
    before = fingerprint(course, Limits())
    source = Path(course.source_dir)
    (source / "__pycache__").mkdir()
    (source / "__pycache__" / "helpers.cpython-311.pyc").write_bytes(b"\0compiled")
    (source / "nb.ipynb").write_text('{"cells": []}')    # the gradebook's snapshot speaks for it
    assert fingerprint(course, Limits()) == before


def test_a_missing_source_folder_or_a_link_in_it_does_not_stop_the_fingerprint(course, tmp_path):
    source = Path(course.source_dir)
    (source / "outside").symlink_to(tmp_path / "nowhere")
    (source / "fifo").parent.mkdir(exist_ok=True)
    os.mkfifo(source / "fifo")
    assert fingerprint(course, Limits())
    assert fingerprint(dataclasses.replace(course, source_dir=str(tmp_path / "none")), Limits())


# ------------------------------------------------------------------------------ the submission key
def test_the_same_submission_has_the_same_key_and_another_student_another(course):
    hand_in(course, "s1", {"nb.ipynb": b"{}", "notes.txt": b"x"})
    hand_in(course, "s2", {"nb.ipynb": b"{}", "notes.txt": b"x"})
    key = submission_key(course, "s1", "base")
    assert submission_key(course, "s1", "base") == key
    assert submission_key(course, "s2", "base") != key
    assert submission_key(course, "s1", "another base") != key


@pytest.mark.parametrize("first, second", [
    ({"a": b"bc"}, {"ab": b"c"}),                    # a name's end taken for the content's start
    ({"a": b"", "b": b""}, {"a": b"b"}),             # a file's name taken for another's content
    ({"x": b"1"}, {"x": b"1", "y": b""}),            # an empty file added
])
def test_two_different_submissions_never_share_a_key(course, first, second):
    hand_in(course, "s1", first)
    one = submission_key(course, "s1", "base")
    for path in course.submission_dir("s1").iterdir():
        path.unlink()
    hand_in(course, "s1", second)
    assert submission_key(course, "s1", "base") != one


def test_a_link_is_keyed_as_a_link_not_as_a_file_that_looks_like_one(course):
    folder = hand_in(course, "s1", {})
    (folder / "data").symlink_to("target")
    linked = submission_key(course, "s1", "base")
    (folder / "data").unlink()
    (folder / "data").write_bytes(b"Ltarget")
    assert submission_key(course, "s1", "base") != linked


def test_names_that_are_not_utf8_are_keyed_by_their_bytes(course):
    """A file or a link target named in bytes that are not UTF-8 (a student's shell can make both)
    keys by those bytes, and two such names do not key alike."""
    folder = os.fsencode(hand_in(course, "s1", {"nb.ipynb": b"{}"}))
    with open(folder + b"/\xff.csv", "wb") as fh:
        fh.write(b"1,2")
    os.symlink(b"\xfe-target", folder + b"/data")
    key = submission_key(course, "s1", "base")
    os.rename(folder + b"/\xff.csv", folder + b"/\xfe.csv")
    assert submission_key(course, "s1", "base") != key


def test_an_unreadable_file_keys_without_stopping_the_run(course, monkeypatch):
    hand_in(course, "s1", {"nb.ipynb": b"{}", "locked.csv": b"1,2"})
    readable = submission_key(course, "s1", "base")

    real_open = io.open

    def refusing_open(file, *args, **kwargs):     # as a file another account owns, mode 600, would
        if str(file).endswith("locked.csv"):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(io, "open", refusing_open)
    monkeypatch.setattr(builtins, "open", refusing_open)
    assert submission_key(course, "s1", "base") not in ("", readable)


def test_student_and_base_are_framed_apart(course):
    for student in ("as", "s"):
        hand_in(course, student, {})
    assert submission_key(course, "as", "b") != submission_key(course, "s", "ba")


# ------------------------------------------------------------------------------ the journal file
def result(student="s1", key="k") -> SubmissionResult:
    return SubmissionResult(student, key, [NotebookResult("nb", score=1.0, max_score=2.0, grades={"test": 1.0})])


def test_a_kept_result_comes_back_only_for_its_key_and_student(course):
    kept = Journal(course)
    kept.put(result(), "graded")
    entry = kept.get("s1", "k")
    assert entry["state"] == "graded"
    assert SubmissionResult.from_json(entry["result"]) == result()
    assert kept.get("s1", "other") is None and kept.get("s2", "k") is None


@pytest.mark.parametrize("text", [
    "[1, 2]", '"k"', "3", "null", "not json", "\xff\xfe not UTF-8",
    json.dumps({"key": "k"}),
    json.dumps({"key": "k", "state": "graded", "result": []}),
    json.dumps({"key": "k", "state": "graded", "result": "s1"}),
    json.dumps({"key": "k", "state": "graded", "result": {"student": "s1"}}),
    json.dumps({"key": "k", "state": "graded", "result": {"student": "s1", "key": "k", "notebooks": [1]}}),
    json.dumps({"key": "k", "state": "graded",
                "result": {"student": "s1", "key": "k", "notebooks": [{"name": "nb", "extra": 1}]}}),
    json.dumps({"key": "k", "result": result().to_json()}),
    json.dumps({"key": "k", "state": "halfway", "result": result().to_json()}),
])
def test_a_journal_file_of_the_wrong_shape_is_taken_as_absent(course, text):
    kept = Journal(course)
    kept.dir.mkdir(parents=True)
    kept.path("s1").write_text(text, encoding="latin-1")
    assert kept.get("s1", "k") is None


def test_a_folder_where_the_journal_file_should_be_is_taken_as_absent(course):
    kept = Journal(course)
    kept.path("s1").mkdir(parents=True)
    assert kept.get("s1", "k") is None


@pytest.mark.parametrize("student", ["../../escape", "", "a/b", "é" * 300])
def test_every_student_name_has_its_own_file_inside_the_journal(course, student):
    kept = Journal(course)
    assert kept.path(student).parent == kept.dir
    kept.put(result(student), "recorded")
    assert kept.get(student, "k")["state"] == "recorded"


def test_the_journal_lives_under_the_course(course):
    assert Journal(course).dir == Path(course.root) / journal.JOURNAL / ASSIGNMENT


def test_a_result_put_with_its_text_is_the_file_put_without_it(course):
    """GradingRun.accept serialises a result once for its two puts: the files are as before."""
    kept = Journal(course)
    graded = SubmissionResult('s"1\u00e9', 'k"\\', [NotebookResult("nb", notebook='{"cells": ["\u00e9\\n"]}',
                                                                  grades={"t": 1.0}, feedback=["a\nb"])])
    for state in ("graded", "recorded"):
        kept.put(graded, state, Journal.result_text(graded))
        assert kept.path(graded.student).read_text() == json.dumps(
            {"key": graded.key, "state": state, "result": graded.to_json()})
        assert kept.get(graded.student, graded.key)["state"] == state
