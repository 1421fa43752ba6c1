"""The times a student's side writes (inbound folder names, timestamp.txt), read without trusting them."""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

MAX_TIME_TEXT = 64                       # characters of a timestamp worth reading
EARLIEST = datetime(2000, 1, 1, tzinfo=timezone.utc)
CLOCK_SLACK = timedelta(hours=1)         # a student's clock may run a little ahead of ours
# `nbgrader submit` writes the time it started, then copies the files: seconds, or a minute on a
# slow shared disk. Files last changed later than the student's time by more than this were
# written after the time the student gives, whatever timestamp.txt says.
WRITING_SLACK = timedelta(minutes=10)
RETIMED = Path(".chapter") / "retimed"
MAX_ENTRIES = 10_000                     # files and folders copied from one submission (or looked at)
MAX_DEPTH = 32                           # folders within folders, the same


@dataclass
class Retimed:
    """A submission whose files were written later than its timestamp.txt says: handed in then."""
    folder: str            # the inbound folder's name
    student: str
    claimed: str           # the text of its timestamp.txt
    written: str           # when its files were last changed (ISO 8601, UTC), which no student can set back
    seen: float            # when collect found it

    def moment(self) -> datetime | None:
        """`written` as a time, read as UTC when it names no zone (an instructor's hand-edit of the
        ledger), or None when it is not a time."""
        try:
            moment = datetime.fromisoformat(self.written)
        except (TypeError, ValueError):
            return None
        return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def written_after(claimed: datetime, changed: float) -> datetime | None:
    """When the files were last changed (`changed`, a change time in seconds), if that is later
    than the student's `claimed` time by more than WRITING_SLACK; else None."""
    written = datetime.fromtimestamp(changed, timezone.utc)
    return written if written - claimed > WRITING_SLACK else None


def trusted_moment(claimed: datetime, changed: float) -> datetime:
    """When a submission was handed in: the student's `claimed` time, unless its files were written
    later than that by more than WRITING_SLACK (`changed`, a change time; 0 when unknown)."""
    return (written_after(claimed, changed) if changed else None) or claimed


def folder_written(folder: Path) -> float:
    """When an inbound folder was last written: the latest change time (st_ctime) of the folder and
    of everything in it, 0.0 when it cannot be read. Renaming it, adding to it, or rewriting a file
    in place moves it, and no student can move it back. The look is the copy's (exchange.safe_copy,
    whose Copied.changed is the same time for what it copies): no link followed, nothing opened but
    folders, through their descriptors (no path grows too long), and at most MAX_ENTRIES entries,
    MAX_DEPTH folders deep."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        top = os.open(folder, flags)
    except OSError:
        return 0.0
    changed, count, stack = 0.0, 0, [(top, 0)]
    try:
        changed = os.fstat(top).st_ctime
        while stack:
            fd, depth = stack.pop()
            try:
                with os.scandir(fd) as entries:
                    for entry in entries:
                        count += 1
                        if count > MAX_ENTRIES:
                            return changed
                        try:
                            info = entry.stat(follow_symlinks=False)
                        except OSError:
                            continue          # gone meanwhile
                        changed = max(changed, info.st_ctime)
                        if stat.S_ISDIR(info.st_mode) and depth < MAX_DEPTH:
                            try:
                                stack.append((os.open(entry.name, flags, dir_fd=fd), depth + 1))
                            except OSError:
                                continue
            except OSError:
                pass
            finally:
                if fd != top:
                    os.close(fd)
    finally:
        for fd, _ in stack:
            if fd != top:
                os.close(fd)
        os.close(top)
    return changed


def retimed_path(root, assignment: str) -> Path:
    return Path(root) / RETIMED / f"{assignment}.jsonl"


def read_retimed(root, assignment: str) -> list[Retimed]:
    from graders.engine import ledger
    return list(ledger.entries(retimed_path(root, assignment), Retimed).values())


def handed_in(root, assignment: str, student: str, claimed: str) -> datetime | None:
    """When the student's submission whose timestamp.txt says `claimed` was really written, when
    collect found its files written later than that; else None."""
    found = [entry.moment() for entry in read_retimed(root, assignment)
             if entry.student == student and entry.claimed == claimed]
    return max((moment for moment in found if moment is not None), default=None)


def submitted_at(root, assignment: str, student: str, text) -> tuple[datetime | None, str]:
    """(when the student's submission whose timestamp.txt says `text` was handed in, ""): their
    time, or when collect found its files written if later (handed_in), or if theirs is missing or
    unusable; (None, why) for a time that is unusable, of a submission collect did not retime."""
    moment, why = submission_time(text)
    written = handed_in(root, assignment, student, text or "")
    if moment is None:
        return (None, why) if written is None else (written, "")
    return (moment if written is None else max(moment, written)), ""


def submission_time(text, now: datetime | None = None) -> tuple[datetime | None, str]:
    """(the moment, "") for a usable timestamp; (None, why) for anything else."""
    from nbgrader.utils import parse_utc
    if not isinstance(text, str) or not text.strip():
        return None, "no timestamp"
    text = text.strip()
    shown = repr(text[:40] + ("…" if len(text) > 40 else ""))
    if len(text) > MAX_TIME_TEXT:
        return None, f"the timestamp {shown} is too long to be a time"
    try:
        moment = parse_utc(text)
    except Exception:  # noqa: BLE001 - ValueError, OverflowError, TypeError...: all the same to us
        return None, f"the timestamp {shown} does not parse as a time"
    if not _dated(text):
        return None, f"the timestamp {shown} has no full date (the day of grading would fill it in)"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    now = now or datetime.now(timezone.utc)
    if moment < EARLIEST or moment > now + CLOCK_SLACK:
        return None, f"the timestamp {shown} is out of range (before 2000 or in the future)"
    return moment, ""


def _dated(text: str) -> bool:
    """Whether `text` gives its own year, month and day: the parser nbgrader uses (dateutil) takes
    what is missing from today, so "10:00" would be late or not depending on when it is graded."""
    from dateutil.parser import parse
    parts = text.split(" ")
    head = " ".join(parts[:2]) if len(parts) == 3 else text    # as parse_utc splits off a zone
    try:
        days = {parse(head, default=default, ignoretz=True).date()
                for default in (datetime(2001, 1, 1), datetime(2002, 2, 2))}
    except (ValueError, OverflowError):
        return True      # parse_utc read it; this check has nothing to add
    return len(days) == 1


def naive_utc(moment: datetime) -> datetime:
    """As nbgrader keeps times: UTC, without a zone."""
    return moment.astimezone(timezone.utc).replace(tzinfo=None)


def read_small(path: Path, limit: int, strip: bool = True) -> str | None:
    """At most `limit` bytes of a student's file (stripped, unless not `strip`), if it is a
    regular file (no link followed, a FIFO never waited on); else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:   # a folder opens too (and os.fdopen would refuse it, leaving the descriptor open)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)
    text = data.decode("utf-8", errors="replace")
    return (text.strip() if strip else text) or None


def read_timestamp(folder: Path) -> str | None:
    """The text of `folder/timestamp.txt`, read as `read_small` reads, or None."""
    return read_small(Path(folder) / "timestamp.txt", 4 * MAX_TIME_TEXT)
