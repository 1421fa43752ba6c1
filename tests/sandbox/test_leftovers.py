"""Scratch folders outlive no one: a folder whose owner died without removing it is swept by the next one."""
from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

from graders.sandbox.tempdirs import owned_tempdir, owner_of, sweep_stale

PREFIX = "chapter-leftover-test-"


def _folder_of_a_killed_owner(tmp_path: Path) -> Path:
    """A child makes an owned folder, says where, and is killed with SIGKILL before it can remove it."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            os.write(write, owned_tempdir(PREFIX).encode())
            os.close(write)
            signal.pause()
        finally:
            os._exit(0)
    os.close(write)
    path = b""
    while chunk := os.read(read, 4096):                  # until the child closes its end
        path += chunk
    os.close(read)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return Path(path.decode())


def test_a_dead_owners_folder_is_swept_and_a_living_ones_is_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)       # read TMPDIR again
    dead = _folder_of_a_killed_owner(tmp_path)
    assert dead.is_dir() and dead.parent == tmp_path
    assert owner_of(str(dead)).split(".")[0] != str(os.getpid()), "owned by the child, not this process"
    unrelated = tmp_path / f"{PREFIX}no-owner"                            # an older one: left alone
    unrelated.mkdir()
    mine = Path(owned_tempdir(PREFIX))                                     # sweeps on creation
    assert not dead.exists(), "the killed owner's folder was left behind"
    assert mine.is_dir() and unrelated.is_dir()
    assert sweep_stale(PREFIX) == [] and mine.is_dir(), "a living owner's folder was removed"


def test_a_reused_pid_does_not_keep_a_dead_owners_folder(tmp_path):
    """The owner is its pid and its start time: the same pid started later is another process."""
    me = Path(owned_tempdir(PREFIX))
    try:
        pid, start = owner_of(str(me)).split(".")
        stale = Path(me.parent, f"{PREFIX}reused")
        stale.mkdir()
        (stale / ".owner").write_text(f"{pid}.{int(start) - 1}")
        assert sweep_stale(PREFIX) == [str(stale)] and me.is_dir()
    finally:
        shutil.rmtree(me)


def test_the_folder_name_leaves_room_for_the_zygotes_socket():
    """A folder's name is as short as mkdtemp's own, so a deep temp directory still fits
    `<folder>/zygote.sock` in the 107 bytes a socket path may have."""
    me = Path(owned_tempdir("chapter-zygote-"))
    try:
        assert len(me.name) <= len("chapter-zygote-") + 8
    finally:
        shutil.rmtree(me)


def test_a_temp_directory_too_deep_for_a_socket_does_not_stop_grading(tmp_path, monkeypatch):
    """$TMPDIR 150 bytes deep: `<folder>/zygote.sock` cannot fit in 107 bytes there, and the zygote
    could not bind its socket (the sandbox "did not start", and nothing was graded). A folder that
    must hold a socket now goes in /tmp; one that needs no room stays where $TMPDIR says."""
    import tempfile
    from graders.sandbox.zygote import Zygote
    from tests.sandbox.test_figures import LIMITS, job
    deep = tmp_path / ("d" * max(1, 150 - len(str(tmp_path))))
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    plain = Path(owned_tempdir(PREFIX))
    roomy = Path(owned_tempdir(PREFIX, room=len("/zygote.sock")))
    try:
        assert plain.parent == deep and roomy.parent == Path("/tmp")
    finally:
        shutil.rmtree(plain)
        shutil.rmtree(roomy)
    with Zygote(preload=()) as zygote:
        assert len(os.fsencode(zygote.socket_path)) <= 107, zygote.socket_path
        assert zygote.run(job("x = 6 * 7\n", ["x"]), LIMITS).status == "ok"


def test_a_zygote_whose_grader_is_killed_while_it_preloads_ends_at_once(tmp_path):
    """The grader dies (SIGKILL) seconds before its zygote is ready. The zygote must end then,
    not finish its imports: those write caches (matplotlib's, IPython's) into its scratch folder,
    HOME, and would re-create it after the next grader has swept it away, as a folder with no
    owner file that no sweep removes. The zygote's last act of preloading is to bind its socket,
    so a socket in the folder says it went on."""
    import subprocess
    import sys
    import time
    script = (
        "from graders.sandbox.zygote import Zygote\n"
        "z = Zygote(isolate=False).start()\n"
        "print(z.process.pid, z.dir, flush=True)\n"
        "import time; time.sleep(600)\n")
    root = Path(__file__).resolve().parents[2]
    grader = subprocess.Popen([sys.executable, "-c", script], cwd=root, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "TMPDIR": str(tmp_path)})
    pid, folder = grader.stdout.readline().split()
    grader.kill()
    grader.wait()

    def running():
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False
    deadline = time.monotonic() + 120
    while running() and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert not running(), "the orphaned zygote still runs two minutes later"
        assert "zygote.sock" not in os.listdir(folder), "the orphaned zygote finished preloading"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_owned_scratch_is_removed_on_the_way_out_and_swept_after_a_kill(tmp_path, monkeypatch):
    """The gate's, the build's and the registration's scratch courses: gone when the block ends
    (an error included), and the folder of one killed inside the block goes with the next one."""
    from graders.sandbox.tempdirs import owned_scratch
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    try:
        with owned_scratch(PREFIX) as inside:
            assert owner_of(inside).split(".")[0] == str(os.getpid())
            raise KeyError("a failing gate")
    except KeyError:
        pass
    assert not os.path.exists(inside)
    dead = _folder_of_a_killed_owner(tmp_path)
    with owned_scratch(PREFIX) as again:
        assert not dead.exists() and os.path.isdir(again)
    assert os.listdir(tmp_path) == []


def test_each_sandboxs_folder_is_removed_after_its_answer(tmp_path):
    """The monitor removes its sandbox's private folder after it has sent the grader the answer
    (so the answer comes sooner), but it does remove it: none is left once the monitors are gone."""
    import time
    from graders.sandbox.zygote import Limits, Zygote
    with Zygote(preload=(), isolate=False) as zygote:
        scratch = Path(zygote.dir, "scratch")
        used = []
        for i in range(3):
            run = zygote.run({"cells": [{"index": 0, "source": "import os\nhere = os.getcwd()\n"
                                                              "open('made-here', 'w').write('x')"},
                                        {"index": 1, "source": "pass", "test": "t", "keys": ["here"]}],
                              "env": {}, "files": {}}, Limits(cell_seconds=20, notebook_seconds=60))
            assert run.status == "ok" and not run.cells[0]["raised"], run
            used.append(Path(run.cells[1]["answers"]["here"]["str"]))
        # each ran in a folder of its own in the scratch, under the name looked for below
        assert len(set(used)) == 3 and all(u.parent == scratch and u.name.startswith("chapter-sandbox-")
                                            for u in used), used
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(p.name.startswith("chapter-sandbox-") for p in scratch.iterdir()):
            time.sleep(0.05)
        assert not [p.name for p in scratch.iterdir() if p.name.startswith("chapter-sandbox-")]
        assert not any(u.exists() for u in used)


def test_a_zygote_that_cannot_start_says_why_and_leaves_no_folder(tmp_path, monkeypatch):
    """Its last words (its log) reach the grader; before, reading them after the clean-up raised a
    TypeError that hid them."""
    import pytest
    from graders.sandbox import zygote as zygote_module
    broken = tmp_path / "broken_worker.py"
    broken.write_text("import sys\nsys.stderr.write('the worker could not start: boom-1234\\n')\nsys.exit(3)\n")
    monkeypatch.setattr(zygote_module, "WORKER", broken)
    zygote = zygote_module.Zygote(isolate=False, start_timeout=30)
    with pytest.raises(zygote_module.SandboxUnavailable, match="boom-1234"):
        zygote.start().wait_ready()
    assert zygote.dir is None and zygote.process is None
