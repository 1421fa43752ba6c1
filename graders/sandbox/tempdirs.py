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


def owned_tempdir(prefix: str) -> str:
    """A new private folder in the temp directory, with its owner (pid and start time) written
    in it, in `.owner`. (The name stays short: a folder deep in the temp directory must still
    leave room for the zygote's socket path, at most 107 bytes.)

    Folders of the same prefix whose owner is gone (killed with SIGKILL, say, so that it
    never removed its own) are removed first.
    """
    sweep_stale(prefix)
    path = tempfile.mkdtemp(prefix=prefix)
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
