"""The ledgers the instructor's side keeps about what students put in the exchange (submissions
set aside, submissions whose own time was not taken): JSON lines, one entry each, keyed by the
inbound folder's name.

A flood of folders must cost a line each. So an entry is appended in one write (`O_APPEND`; two
processes appending at once write whole lines), never by rewriting the file, and each process
reads a ledger only from where it last stopped. A line still being written waits for the next
read; a ledger replaced or cut short is read again from its start.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

_read: dict = {}      # path -> (bytes read, (dev, inode), {folder: entry}) in this process


def entries(path: Path, kind) -> dict:
    """The ledger's entries (dataclasses `kind`, each with a `folder`) by folder, first kept."""
    read, file_id, found = _read.get(path, (0, None, {}))
    try:
        with open(path, "rb") as fh:
            info = os.fstat(fh.fileno())
            if (info.st_dev, info.st_ino) != file_id or info.st_size < read:
                read, file_id, found = 0, (info.st_dev, info.st_ino), {}
            fh.seek(read)
            tail = fh.read()
    except OSError:
        return {}
    whole = tail[:tail.rfind(b"\n") + 1]
    for line in whole.splitlines():
        try:
            entry = kind(**json.loads(line))
        except (ValueError, TypeError):
            continue
        found.setdefault(entry.folder, entry)
    _read[path] = (read + len(whole), file_id, found)
    return found


def append(path: Path, entry) -> None:
    """Add `entry` (a dataclass) to the ledger at `path`, whose folder exists: one write, 0600."""
    line = json.dumps(asdict(entry)).encode() + b"\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
