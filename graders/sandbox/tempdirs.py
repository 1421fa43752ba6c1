"""Private temporary folders that name their owner, so that a folder whose owner was killed is swept.

`owned_tempdir` is where the zygote keeps its socket and scratch, and where the engine stages
submissions; the next one of the same prefix removes those whose owning process is gone.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile

from graders.sandbox.linux import identity

OWNER_FILE = ".owner"


SOCKET_PATH_MAX = 107      # a unix socket's path: sun_path holds 108 bytes, the last one a NUL
SHORT_BASE = "/tmp"        # where a folder goes when the temp directory is too deep for its sockets


def owned_tempdir(prefix: str, room: int = 0) -> str:
    """A new private folder in the temp directory, with its owner (pid and start time) written
    in it, in `.owner`. `room` is the length of the longest path the caller will put under it
    ("/zygote.sock": a socket's path may be at most 107 bytes); when the temp directory ($TMPDIR)
    is too deep to leave that room, the folder goes in /tmp instead, so that a deep $TMPDIR
    never stops grading.

    Folders of the same prefix whose owner is gone (killed with SIGKILL, say, so that it
    never removed its own) are removed first.
    """
    base = tempfile.gettempdir()
    if room and len(os.fsencode(base)) + len(f"/{prefix}12345678") + room > SOCKET_PATH_MAX:
        base = SHORT_BASE
    sweep_stale(prefix, base)
    path = tempfile.mkdtemp(prefix=prefix, dir=base)
    with open(os.path.join(path, OWNER_FILE + ".new"), "w") as fh:
        fh.write(identity(os.getpid()) or "")
    os.replace(os.path.join(path, OWNER_FILE + ".new"), os.path.join(path, OWNER_FILE))  # read whole or not at all
    return path


@contextlib.contextmanager
def owned_scratch(prefix: str):
    """`tempfile.TemporaryDirectory` as an `owned_tempdir`: removed on the way out, and by the
    next one of the same prefix if its owner was killed before it could remove it."""
    path = owned_tempdir(prefix)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def owner_of(path: str) -> str | None:
    """The `pid.start-time` written in an `owned_tempdir` folder, or None (not one, or not yet)."""
    try:
        with open(os.path.join(path, OWNER_FILE)) as fh:
            owner = fh.read(64).strip()
    except OSError:
        return None
    return owner if owner.count(".") == 1 else None


def sweep_stale(prefix: str, folder: str | None = None) -> list[str]:
    """Remove this user's `owned_tempdir(prefix)` folders whose owning process no longer runs.
    A folder without an owner file (an older one, or one whose owner is writing it now) is left."""
    folder = folder or tempfile.gettempdir()
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
        except OSError:
            continue
        owner = owner_of(entry.path)
        if owner is None:
            continue
        try:
            pid = int(owner.split(".", 1)[0])
        except ValueError:
            continue
        if identity(pid) != owner:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
    return removed
