"""times.py on its own: the times a student's side writes, read without trusting them.

A timestamp is parsed as nbgrader parses it (`nbgrader.utils.parse_utc`), then refused when it
is too long, out of range, or not a time; a student's file is read only when it is a regular
file, never waited on, never followed through a link."""
from __future__ import annotations

import os
import threading
from datetime import datetime, timedelta, timezone

import pytest

from graders.engine import ledger
from graders.engine.times import (CLOCK_SLACK, MAX_TIME_TEXT, WRITING_SLACK, Retimed, folder_written, handed_in,
                                  naive_utc, read_small, read_timestamp, retimed_path, submission_time,
                                  trusted_moment, written_after)

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize("text, expected", [
    ("2026-02-01 10:00:00.123456 UTC", datetime(2026, 2, 1, 10, 0, 0, 123456, tzinfo=timezone.utc)),
    ("2026-02-01T10:00:00+05:00", datetime(2026, 2, 1, 5, 0, tzinfo=timezone.utc)),
    ("2026-02-01 10:00:00", datetime(2026, 2, 1, 10, 0, tzinfo=timezone.utc)),      # no zone: UTC
    ("  2026-02-01 10:00:00 UTC\n", datetime(2026, 2, 1, 10, 0, tzinfo=timezone.utc)),
])
def test_a_usable_timestamp_is_read_as_nbgrader_reads_it(text, expected):
    assert submission_time(text, now=NOW) == (expected, "")


@pytest.mark.parametrize("text, why", [
    (None, "no timestamp"), ("", "no timestamp"), (" \n\t", "no timestamp"), (20260201, "no timestamp"),
    (b"2026-02-01", "no timestamp"),
    ("tomorrow", "does not parse"), ("2026-13-45 10:00:00", "does not parse"), ("\x00", "does not parse"),
    ("1e10", "does not parse"), ("2026-02-01 99:00:00", "does not parse"),
    ("1999-12-31 23:59:59", "out of range"), ("0001-01-01 00:00:00", "out of range"),
    ("9999-12-31 23:59:59", "out of range"), ("3000-01-01", "out of range"),
    ("2" * (MAX_TIME_TEXT + 1), "too long"),
    ("10:00", "no full date"), ("Feb 1", "no full date"), ("2026-02", "no full date"),
])
def test_an_odd_timestamp_is_refused_with_its_reason(text, why):
    moment, reason = submission_time(text, now=NOW)
    assert moment is None and why in reason


def test_a_student_clock_a_little_ahead_is_allowed_far_ahead_is_not():
    ahead = (NOW + CLOCK_SLACK - timedelta(minutes=1)).strftime("%Y-%m-%d %H:%M:%S")
    far = (NOW + CLOCK_SLACK + timedelta(minutes=1)).strftime("%Y-%m-%d %H:%M:%S")
    assert submission_time(ahead, now=NOW)[0] is not None
    assert "out of range" in submission_time(far, now=NOW)[1]


def test_the_reason_shows_at_most_forty_characters_of_the_text():
    _, why = submission_time("x" * 60, now=NOW)
    assert "x" * 40 + "…" in why and "x" * 41 not in why


def test_naive_utc_is_how_nbgrader_keeps_times():
    moment = datetime(2026, 2, 1, 15, 0, tzinfo=timezone(timedelta(hours=5)))
    assert naive_utc(moment) == datetime(2026, 2, 1, 10, 0)


# ------------------------------------------------------------------------------ a student's file
def _open_fds():
    return len(os.listdir("/proc/self/fd"))


def test_a_regular_file_is_read_up_to_the_limit(tmp_path):
    (tmp_path / "t.txt").write_bytes(b"  2026-02-01 \n" + b"x" * 1000)
    assert read_small(tmp_path / "t.txt", 13) == "2026-02-01"
    assert read_small(tmp_path / "t.txt", 13, strip=False) == "  2026-02-01 "
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe2026")
    assert read_small(tmp_path / "bad.txt", 10) == "\ufffd\ufffd2026"
    (tmp_path / "empty.txt").write_bytes(b"  \n")
    assert read_small(tmp_path / "empty.txt", 10) is None


def test_a_folder_where_the_file_should_be_is_none_and_leaks_nothing(tmp_path):
    (tmp_path / "timestamp.txt").mkdir()
    before = _open_fds()
    assert read_small(tmp_path / "timestamp.txt", 64) is None
    assert read_timestamp(tmp_path) is None
    assert _open_fds() == before


def test_a_fifo_is_never_waited_on(tmp_path):
    os.mkfifo(tmp_path / "timestamp.txt")
    answer, before = [], _open_fds()
    reader = threading.Thread(target=lambda: answer.append(read_timestamp(tmp_path)), daemon=True)
    reader.start()
    reader.join(5)
    assert not reader.is_alive(), "read_small blocked on a FIFO"
    assert answer == [None] and _open_fds() == before


def test_a_link_or_a_missing_file_is_none(tmp_path):
    (tmp_path / "real.txt").write_text("2026-02-01 10:00:00")
    (tmp_path / "timestamp.txt").symlink_to(tmp_path / "real.txt")
    assert read_timestamp(tmp_path) is None
    assert read_small(tmp_path / "absent.txt", 10) is None
    assert read_timestamp(tmp_path / "no folder") is None


def test_files_written_well_after_the_students_time_give_the_time_they_were_written():
    claimed = NOW
    assert written_after(claimed, (NOW + WRITING_SLACK).timestamp()) is None       # nbgrader's own copy
    assert written_after(claimed, (NOW - timedelta(days=3)).timestamp()) is None   # earlier: theirs stands
    later = NOW + WRITING_SLACK + timedelta(seconds=1)
    assert written_after(claimed, later.timestamp()) == later


def test_a_retimed_submission_is_handed_in_when_its_files_were_written(tmp_path):
    path = retimed_path(tmp_path, "hw1")
    path.parent.mkdir(parents=True)
    claimed = "2026-03-01 12:00:00.000000 UTC"
    for folder, student, written in (("a+hw1+1", "ann", "2026-03-01T15:00:00+00:00"),
                                     ("a+hw1+2", "ann", "2026-03-01T16:00:00+00:00"),
                                     ("b+hw1+1", "bo", "2026-03-02T09:00:00+00:00"),
                                     ("a+hw1+3", "ann", "not a time"),
                                     ("a+hw1+4", "ann", "2026-03-01T15:30:00")):          # no zone: UTC
        ledger.append(path, Retimed(folder, student, claimed, written, 0.0))
    assert handed_in(tmp_path, "hw1", "ann", claimed) == datetime(2026, 3, 1, 16, tzinfo=timezone.utc)
    assert handed_in(tmp_path, "hw1", "ann", claimed) > datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
    assert handed_in(tmp_path, "hw1", "ann", "2026-03-01 12:00:00 UTC") is None     # another submission
    assert handed_in(tmp_path, "hw1", "cy", claimed) is None
    assert handed_in(tmp_path, "hw2", "ann", claimed) is None


def test_a_submission_is_handed_in_when_its_student_says_unless_written_later():
    assert trusted_moment(NOW, (NOW + WRITING_SLACK).timestamp()) == NOW
    assert trusted_moment(NOW, (NOW - timedelta(days=1)).timestamp()) == NOW
    assert trusted_moment(NOW, 0.0) == NOW                                    # not known
    later = NOW + timedelta(hours=5)
    assert trusted_moment(NOW, later.timestamp()) == later


def test_a_ledgered_time_is_read_once_for_everyone_and_as_utc_without_a_zone():
    def entry(written):
        return Retimed("f", "ann", "c", written, 0.0)
    assert entry("2026-03-01T15:00:00+01:00").moment() == datetime(2026, 3, 1, 14, tzinfo=timezone.utc)
    assert entry("2026-03-01T15:00:00").moment() == datetime(2026, 3, 1, 15, tzinfo=timezone.utc)
    assert entry("yesterday").moment() is None
    assert entry(1767261600).moment() is None                                # a hand-edit with a number


def test_renaming_a_folder_or_rewriting_any_file_in_it_moves_when_it_was_written(tmp_path):
    import time
    folder = tmp_path / "ann+hw1+x"
    assert folder_written(folder) == 0.0
    (folder / "deep").mkdir(parents=True)
    (folder / "timestamp.txt").write_text("2026-03-01 12:00:00 UTC")
    (folder / "deep" / "w1.ipynb").write_text("{}")
    (tmp_path / "elsewhere").write_text("a file outside the folder")
    (folder / "link").symlink_to(tmp_path / "elsewhere")
    before = folder_written(folder)
    assert before >= os.lstat(folder / "deep" / "w1.ipynb").st_ctime

    renamed = folder.rename(tmp_path / "ann+hw1+y")
    assert folder_written(renamed) > before
    before = folder_written(renamed)
    for path in (renamed / "timestamp.txt", renamed / "deep" / "w1.ipynb"):   # in place: no folder's time moves
        time.sleep(0.02)
        with open(path, "r+") as fh:
            fh.write("{ ")
        assert folder_written(renamed) > before, path
        before = folder_written(renamed)
    time.sleep(0.02)
    (tmp_path / "elsewhere").write_text("written later, but not in the folder")
    assert folder_written(renamed) == before                      # a link is not followed
    os.symlink(renamed, tmp_path / "alias")
    assert folder_written(tmp_path / "alias") == 0.0              # nor is the folder itself a link


def test_when_a_folder_was_written_looks_no_deeper_and_at_no_more_than_the_copy_would(tmp_path, monkeypatch):
    import time
    from graders.engine import times
    folder = tmp_path / "ann+hw1+x"
    (folder / "a" / "b").mkdir(parents=True)
    (folder / "a" / "b" / "deep.ipynb").write_text("{}")
    (folder / "top.ipynb").write_text("{}")
    monkeypatch.setattr(times, "MAX_DEPTH", 1)
    before = folder_written(folder)
    time.sleep(0.02)
    (folder / "a" / "b" / "deep.ipynb").write_text("{ }")        # two folders down: not looked at
    assert folder_written(folder) == before
    monkeypatch.setattr(times, "MAX_ENTRIES", 0)
    time.sleep(0.02)
    (folder / "top.ipynb").write_text("{ }")                     # past the count: not looked at
    assert folder_written(folder) == os.lstat(folder).st_ctime < os.lstat(folder / "top.ipynb").st_ctime
    monkeypatch.setattr(times, "MAX_ENTRIES", 10)
    assert folder_written(folder) == os.lstat(folder / "top.ipynb").st_ctime > before
