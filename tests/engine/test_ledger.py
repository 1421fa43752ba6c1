"""The set-aside ledger: refused submissions, one JSON line each, appended.

Anyone can make folders in inbound, so a flood of forged ones must cost the instructor's
collect a line each: the ledger is appended to, never rewritten, and read only from where
this process last stopped.
"""
import json
import os

import pytest

from graders.engine import exchange


def test_a_refusal_is_kept_once_and_read_back_in_order(tmp_path):
    assert exchange.set_aside(tmp_path, "hw1", "bo+hw1+t1", "bo", "written by another login")
    assert not exchange.set_aside(tmp_path, "hw1", "bo+hw1+t1", "bo", "again")
    assert exchange.set_aside(tmp_path, "hw1", "ann+hw1+t2", "ann", "not enrolled")
    assert [(e.folder, e.why) for e in exchange.read_set_aside(tmp_path, "hw1")] == [
        ("bo+hw1+t1", "written by another login"), ("ann+hw1+t2", "not enrolled")]
    assert exchange.read_set_aside(tmp_path, "hw2") == []


def test_the_ledger_is_appended_to_not_rewritten(tmp_path):
    exchange.set_aside(tmp_path, "hw1", "f0", "x", "forged")
    path = exchange.ledger_path(tmp_path, "hw1")
    before, first = path.read_bytes(), os.stat(path).st_ino
    for i in range(1, 2000):
        exchange.set_aside(tmp_path, "hw1", f"f{i}", "x", "forged")
    after = path.read_bytes()
    assert os.stat(path).st_ino == first and after.startswith(before)
    assert len(after.splitlines()) == 2000 and len(exchange.read_set_aside(tmp_path, "hw1")) == 2000


def test_another_process_s_lines_are_read_and_a_half_written_line_waits(tmp_path):
    exchange.set_aside(tmp_path, "hw1", "f0", "x", "forged")
    path = exchange.ledger_path(tmp_path, "hw1")
    line = json.dumps({"folder": "f1", "claimed": "y", "why": "forged", "seen": 1.0}).encode()
    with open(path, "ab") as fh:         # the service appends while collect runs
        fh.write(line[:10])
    assert [e.folder for e in exchange.read_set_aside(tmp_path, "hw1")] == ["f0"]
    with open(path, "ab") as fh:
        fh.write(line[10:] + b"\n" + b"not json\n")
    assert [e.folder for e in exchange.read_set_aside(tmp_path, "hw1")] == ["f0", "f1"]
    assert not exchange.set_aside(tmp_path, "hw1", "f1", "y", "forged")


def test_a_ledger_written_as_one_json_list_is_still_read(tmp_path):
    legacy = tmp_path / ".chapter" / "set-aside" / "hw1.json"
    legacy.parent.mkdir(parents=True)
    legacy.write_text(json.dumps([{"folder": "old", "claimed": "bo", "why": "forged", "seen": 1.0}]))
    assert not exchange.set_aside(tmp_path, "hw1", "old", "bo", "forged")
    assert exchange.set_aside(tmp_path, "hw1", "new", "bo", "forged")
    assert [e.folder for e in exchange.read_set_aside(tmp_path, "hw1")] == ["old", "new"]


def test_a_ledger_in_the_old_form_is_read_once_not_once_a_forgery(tmp_path, monkeypatch):
    legacy = tmp_path / ".chapter" / "set-aside" / "hw1.json"
    legacy.parent.mkdir(parents=True)
    legacy.write_text(json.dumps([{"folder": f"old{i}", "claimed": "bo", "why": "forged", "seen": 1.0}
                                  for i in range(500)]))
    reads = []
    real = json.loads
    monkeypatch.setattr(exchange.json, "loads", lambda text, *a, **k: (reads.append(len(text)), real(text, *a, **k))[1])
    for i in range(300):
        exchange.set_aside(tmp_path, "hw1", f"new{i}", "bo", "forged")
    assert sum(1 for n in reads if n > 10_000) == 1
    assert not exchange.set_aside(tmp_path, "hw1", "old7", "bo", "forged")
    legacy.write_text(json.dumps([{"folder": "changed", "claimed": "bo", "why": "forged", "seen": 1.0}]))
    assert not exchange.set_aside(tmp_path, "hw1", "changed", "bo", "forged")   # a changed file is read again


def test_a_timestamp_earlier_than_its_files_is_ledgered_once_unless_the_course_trusts_it(tmp_path):
    import time
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    from graders.engine.times import handed_in, read_retimed
    coursedir = CourseDirectory(root=str(tmp_path))
    coursedir.assignment_id = "hw1"
    (tmp_path / "sub").mkdir()
    said = "2026-01-01 10:00:00.000000 UTC"
    (tmp_path / "sub" / "timestamp.txt").write_text(said)
    folder = f"ann+hw1+{said}+x"
    collect = exchange.CheckedCollect(coursedir=coursedir, config=Config())
    assert collect.check_time(folder, tmp_path / "sub", 1767261600.0 + 599) == ""    # within the slack
    written = time.time()
    for _ in range(2):
        line = collect.check_time(folder, tmp_path / "sub", written)
        assert line.startswith(f"RETIMED ann: the timestamp.txt of {folder} says {said}")
    assert [e.folder for e in read_retimed(tmp_path, "hw1")] == [folder]
    assert abs(handed_in(tmp_path, "hw1", "ann", said).timestamp() - written) < 1e-3
    config = Config()
    config.CheckedCollect.trust_student_time = True
    trusting = exchange.CheckedCollect(coursedir=coursedir, config=config)
    assert trusting.check_time(f"bo+hw1+{said}+y", tmp_path / "sub", written) == ""
    assert len(read_retimed(tmp_path, "hw1")) == 1


@pytest.mark.parametrize("said, line", [
    (None, "is missing or empty; its files were written at"),
    ("", "is missing or empty; its files were written at"),
    ("yesterday at noon", "says yesterday at noon, not a usable time; its files were written at"),
])
def test_a_submission_without_a_usable_timestamp_is_handed_in_when_its_files_were_written(tmp_path, said, line):
    """A late student who empties, removes or garbles their timestamp.txt was graded with no time,
    so with no late penalty, and (for one missing or empty) with no word to the instructor."""
    import time
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    from graders.engine.times import submitted_at
    coursedir = CourseDirectory(root=str(tmp_path))
    coursedir.assignment_id = "hw1"
    (tmp_path / "sub").mkdir()
    if said is not None:
        (tmp_path / "sub" / "timestamp.txt").write_text(said)
    folder = "ann+hw1+2026-01-01 10:00:00.000000 UTC+x"
    written = time.time()
    told = exchange.CheckedCollect(coursedir=coursedir, config=Config()).check_time(folder, tmp_path / "sub", written)
    assert told.startswith(f"RETIMED ann: the timestamp.txt of {folder} {line}") and told.endswith("handed in then")
    text = said.strip() if said else None
    moment, why = submitted_at(tmp_path, "hw1", "ann", text)
    assert abs(moment.timestamp() - written) < 1e-3 and why == ""
    assert submitted_at(tmp_path, "hw1", "bo", text)[0] is None                 # another student's: none
    config = Config()
    config.CheckedCollect.trust_student_time = True
    assert exchange.CheckedCollect(coursedir=coursedir, config=config).check_time(f"bo+{folder[4:]}",
                                                                                 tmp_path / "sub", written) == ""


def test_the_summary_names_the_first_set_aside_and_counts_the_rest(tmp_path):
    """A flood of forged folders is a line each in the ledger, but 20 and a count in a summary."""
    for i in range(25):
        exchange.set_aside(tmp_path, "hw1", f"bo+hw1+t+{i:02d}", "bo", "written by another login")
    lines = exchange.set_aside_lines(tmp_path, "hw1", most=20)
    assert len(lines) == 21 and lines[0].startswith("SET ASIDE bo+hw1+t+00: written by another login")
    assert lines[-1] == "SET ASIDE: 5 more, listed by `chapter serve --history` and `chapter report`"
    assert len(exchange.set_aside_lines(tmp_path, "hw1")) == 25                 # --history: every one
    assert len(exchange.set_aside_lines(tmp_path, "hw1", most=30)) == 25
