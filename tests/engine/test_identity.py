"""Every grade is its own student's: a forged `--student` is refused at every door.

Real unix accounts play the students. `nbgrader submit` writes the inbound folder as the
login that runs it; here the instructor's warm nbgrader submits, and the folder is then given
to the login that would have made it (ownership is all the guard reads, and a student cannot
give a folder away). Doors: plain `nbgrader collect` in the course, `chapter autograde`,
`chapter report`; `chapter serve` is in test_serve.py. Also: the copy follows no link, reads
no FIFO and takes no file of someone else's; the course warns when others can reach it.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from graders.engine import exchange
from graders.engine.course_dir import exchange_root
from graders.engine.shared import some
from tests.conftest import login_for, unix_users
from tests.engine.test_serve import ASSIGNMENT, COURSE_ID, NB, Course
from tests.warm_nbgrader import nbgrader

pytestmark = pytest.mark.slow

ALICE, MALLORY = login_for("alice"), login_for("mallory")


@pytest.fixture(scope="module")
def users():
    with unix_users(ALICE, MALLORY) as uids:
        yield uids


def chown_tree(path: Path, uid: int) -> None:
    for here, dirs, files in os.walk(path):
        for name in [here] + [os.path.join(here, n) for n in dirs + files]:
            os.lchown(name, uid, -1)


def submit_as(course: Course, uid: int, claimed: str, how: str) -> str:
    """`nbgrader submit --student=claimed` of a `how` notebook, made by the login `uid`."""
    inbound = exchange_root(course.root) / COURSE_ID / "inbound"
    before = set(os.listdir(inbound)) if inbound.exists() else set()
    course.submit(claimed, how)
    (folder,) = set(os.listdir(inbound)) - before
    chown_tree(inbound / folder, uid)
    return folder


@pytest.fixture(scope="module")
def forged(users, tmp_path_factory):
    course = Course(tmp_path_factory.mktemp("identity") / "course")
    own = submit_as(course, users[ALICE], ALICE, "correct")
    forgery = submit_as(course, users[MALLORY], ALICE, "blank")      # later: nbgrader would take it
    collect = nbgrader("collect", ASSIGNMENT, cwd=course.root)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    graded = subprocess.run([sys.executable, "-m", "graders.cli", "autograde", ASSIGNMENT, "--course",
                             str(course.root)], env=env, capture_output=True, text=True, timeout=600)
    return {"course": course, "own": own, "forgery": forgery, "collect": collect, "graded": graded}


def test_plain_collect_takes_the_students_own_and_sets_the_forgery_aside(forged):
    course, inbound = forged["course"], exchange_root(forged["course"].root) / COURSE_ID / "inbound"
    collected = course.root / "submitted" / ALICE / ASSIGNMENT / "timestamp.txt"
    assert collected.read_text() == (inbound / forged["own"] / "timestamp.txt").read_text()
    (entry,) = exchange.read_set_aside(course.root, ASSIGNMENT)
    assert entry.folder == forged["forgery"] and entry.claimed == ALICE and MALLORY in entry.why


def test_autograde_grades_the_students_own_and_names_the_forgery(forged):
    from nbgrader.api import Gradebook
    graded, course = forged["graded"], forged["course"]
    assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-2000:]
    assert f"SET ASIDE {forged['forgery']}" in graded.stdout and MALLORY in graded.stdout
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gb:
        assert gb.find_submission(ASSIGNMENT, ALICE).score == 4.0
        assert [s.id for s in gb.students] == [ALICE]          # no grade for the forger's claim elsewhere


def test_the_report_lists_the_forgery(forged):
    from graders.course.report import build_report
    written = build_report(forged["course"].root, ASSIGNMENT)
    assert forged["forgery"] in written.text and "set aside" in written.text
    assert forged["forgery"] in written.html.read_text()


def test_the_course_folders_are_the_instructors_alone(forged, users):
    root = forged["course"].root
    for name in ("submitted", "autograded", ".chapter"):
        assert (root / name).stat().st_mode & 0o077 == 0, name
    assert (root / "gradebook.db").stat().st_mode & 0o077 == 0
    # as the student: nothing of the course can be listed or read, even with the folder above open
    os.chmod(root, 0o755)
    try:
        for target in ("submitted", "gradebook.db", ".chapter/set-aside"):
            seen = subprocess.run(["runuser", "-u", MALLORY, "--", "cat" if "." in target and "/" not in target
                                   else "ls", str(root / target)], capture_output=True, text=True)
            assert seen.returncode != 0, (target, seen.stdout)
    finally:
        os.chmod(root, 0o700)


def as_account(uid: int, work) -> str:
    """Run `work()` in a forked child that has become the account `uid`; what it wrote on stderr."""
    import pwd
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            sys.stderr = os.fdopen(write, "w")     # pytest holds sys.stderr: the child writes to the pipe
            os.setgid(pwd.getpwuid(uid).pw_gid)
            os.setuid(uid)
            work()
        except BaseException:  # noqa: BLE001 - said on the pipe, for the test to show
            import traceback
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as stream:
        said = stream.read()
    os.waitpid(pid, 0)
    return said


def test_a_private_folder_the_instructor_cannot_close_is_named(users):
    """submitted/ left open and root's (a root service's, say): the instructor's command cannot close
    it, and says so once, naming it, rather than leaving it open to mallory in silence. Its own
    autograded/ it closes; a closed folder, or an open one behind a closed one, is not worth a word."""
    course = Path(tempfile.mkdtemp(prefix="chapter-closing-", dir="/tmp"))
    try:
        for name, owner in (("submitted", 0), ("autograded", users[ALICE]), ("feedback", 0)):
            (course / name).mkdir()
            os.chmod(course / name, 0o755)
            os.chown(course / name, owner, owner)
        os.chmod(course / "feedback", 0o700)
        os.chown(course, users[ALICE], users[ALICE])
        os.chmod(course, 0o755)
        said = as_account(users[ALICE], lambda: [exchange.close_course(course) for _ in range(2)])
        # the accounts it names are the first few of those that reach it (mallory among them); which
        # are first depends on the machine's other accounts, a hub test's among them
        reaching = [name for name in exchange.others_reaching(course / "submitted") if name != ALICE]
        assert MALLORY in reaching, reaching
        assert said.count(f"chmod 700 {course / 'submitted'}") == 1 and some(reaching, most=3) in said, said
        assert f"{course / 'autograded'} " not in said and f"{course / 'feedback'} " not in said, said
        assert os.stat(course / "autograded").st_mode & 0o777 == 0o700
        assert os.stat(course / "submitted").st_mode & 0o777 == 0o755
        os.chmod(course, 0o700)      # the course itself closed: what is inside is out of others' reach
        said = as_account(users[ALICE], lambda: exchange.close_course(course))
        assert "submitted" not in said, said
    finally:
        shutil.rmtree(course)


def test_an_open_course_is_warned_about_once(users, capsys):
    folder = Path(tempfile.mkdtemp(prefix="chapter-open-", dir="/tmp"))
    try:
        os.chmod(folder, 0o755)
        reaching = exchange.others_reaching(folder)
        assert ALICE in reaching and some(reaching, most=3) in exchange.open_to_others(folder), reaching
        exchange.close_course(folder)
        exchange.close_course(folder)
        assert capsys.readouterr().err.count(f"chmod 700 {folder}") == 1
        os.chmod(folder, 0o700)
        assert exchange.open_to_others(folder) == ""
    finally:
        os.rmdir(folder)


def test_the_copy_follows_no_link_reads_no_fifo_and_takes_nobody_elses_file(users, tmp_path):
    src, dest = tmp_path / "inbound", tmp_path / "submitted"
    (src / "data").mkdir(parents=True)
    (src / "w1-memory.ipynb").write_text("{}")
    secret = tmp_path / "gradebook.db"
    secret.write_text("every grade")
    (src / "data" / "grades.db").symlink_to(secret)
    os.mkfifo(src / "pipe")
    (src / "planted.txt").write_text("not hers")
    chown_tree(src, users[ALICE])
    os.lchown(src / "planted.txt", users[MALLORY], -1)
    done = []
    worker = threading.Thread(target=lambda: done.append(exchange.safe_copy(str(src), str(dest),
                                                                            owner=users[ALICE])), daemon=True)
    worker.start()
    worker.join(20)
    assert done, "the copy blocked (on the FIFO?)"
    copied = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file() or p.is_symlink())
    assert copied == ["w1-memory.ipynb"], copied
    left = json.dumps(done[0])
    assert "grades.db" in left and "pipe" in left and "planted.txt" in left and MALLORY in left
    # when it was last written: what was copied, not what was left out (planted.txt, changed last)
    assert done[0].changed == max(os.stat(p).st_ctime for p in (src, src / "data", src / "w1-memory.ipynb"))
    assert os.lstat(src / "planted.txt").st_ctime >= done[0].changed


def test_a_tree_too_long_to_place_and_a_file_gone_while_nbgrader_looks_are_left_out(tmp_path, monkeypatch):
    """17 folders of 250-character names (inside MAX_DEPTH) make a path past the system's limit, and a
    file removed while nbgrader's ignore rule reads its size by path makes the rule raise: each is
    left out with a line, and the rest of the submission is copied. Either stopped the whole collect."""
    from nbgrader.utils import ignore_patterns
    src, dest = tmp_path / "inbound", tmp_path / "submitted"
    src.mkdir()
    (src / "w1-memory.ipynb").write_text("{}")
    (src / "vanishing.txt").write_text("here, then gone")
    fd = os.open(src, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(17):
        os.mkdir("x" * 250, dir_fd=fd)
        inner = os.open("x" * 250, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
    real = os.path.getsize

    def size(path):
        if str(path).endswith("vanishing.txt"):
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real(path)
    monkeypatch.setattr(os.path, "getsize", size)
    left = exchange.safe_copy(str(src), str(dest), ignore_patterns(max_file_size=100_000))
    monkeypatch.undo()
    assert (dest / "w1-memory.ipynb").read_text() == "{}"
    assert not (dest / "vanishing.txt").exists()
    assert any("cannot be placed (File name too long)" in line for line in left), left
    assert all(len(line) < 300 for line in left), left


def test_a_folder_its_writer_removes_while_collect_looks_is_passed_over_not_set_aside(tmp_path, monkeypatch):
    """A student creating and removing their own folders in a loop: one gone between two looks of
    collect was a FileNotFoundError that stopped the whole collect, and one gone before the first
    look was set aside for good as 'cannot be read'. It is passed over; the others are collected."""
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config
    inbound = tmp_path / "inbound"
    stamp = "2026-03-01 10:00:00.000000 UTC"
    for name in (f"ann+hw1+{stamp}+a", f"bo+hw1+{stamp}+b", f"cy+hw1+{stamp}+c"):
        (inbound / name).mkdir(parents=True)
    coursedir = CourseDirectory(root=str(tmp_path))
    coursedir.assignment_id = "hw1"
    app = exchange.CheckedCollect(coursedir=coursedir, config=Config())
    app.inbound_path, app.duedate = str(inbound), None
    real = exchange.admission

    def removed_meanwhile(folder, claimed, enrolled=None, info=None):
        if claimed == "ann":                   # gone after the first look
            found = real(folder, claimed, enrolled, info)
            os.rmdir(folder)
            return found
        if claimed == "bo":                    # gone before it
            os.rmdir(folder)
        return real(folder, claimed, enrolled, info)
    monkeypatch.setattr(exchange, "admission", removed_meanwhile)
    assert [r["username"] for r in app.records()] == ["cy"]
    assert exchange.read_set_aside(tmp_path, "hw1") == []
    # a folder that cannot be looked at once, and can the next time: refused, on the first look
    monkeypatch.undo()
    real_lstat, looks = os.lstat, []

    def once_unreadable(path, *args, **kwargs):
        if str(path).endswith("+c") and not looks:
            looks.append(path)
            raise PermissionError(13, "Permission denied")
        return real_lstat(path, *args, **kwargs)
    monkeypatch.setattr(os, "lstat", once_unreadable)
    why = exchange.admission(inbound / f"cy+hw1+{stamp}+c", "cy", enrolled=lambda login: "")
    monkeypatch.undo()
    assert why == ("the submission cannot be read (Permission denied)", "")


def test_a_submission_that_fails_to_copy_is_named_and_the_others_are_collected(tmp_path, caplog):
    import logging
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config
    inbound = tmp_path / "inbound"
    stamp = "2026-03-01 10:00:00.000000 UTC"
    for name in (f"ann+hw1+{stamp}+a", f"bo+hw1+{stamp}+b"):
        (inbound / name).mkdir(parents=True)
        (inbound / name / "hw1.ipynb").write_text("{}")
    coursedir = CourseDirectory(root=str(tmp_path))
    coursedir.assignment_id = "hw1"
    app = exchange.CheckedCollect(coursedir=coursedir, config=Config(), log=logging.getLogger("collect"))
    app.inbound_path, app.duedate = str(inbound), None
    real = app.copy_one

    def copy_one(src, dest, owner):
        if "ann+" in src:
            raise OSError(36, "File name too long")
        return real(src, dest, owner)
    app.copy_one = copy_one
    app.src_records = app.choose(app.records())
    with caplog.at_level(logging.INFO, "collect"):
        app.copy_files()
    assert (tmp_path / "submitted" / "bo" / "hw1" / "hw1.ipynb").exists()
    assert f"NOT COLLECTED ann: ann+hw1+{stamp}+a (OSError: [Errno 36] File name too long)" in caplog.text


@pytest.mark.parametrize("swap", ["link", "folder"])
def test_a_folder_swapped_between_a_look_and_a_read_copies_nobody_elses_file(users, tmp_path, monkeypatch, swap):
    """The student owns the folders of their submission: right after the copy looks at their own
    d/answer.txt, they swap d for a link to a classmate's folder, or for the classmate's folder
    itself (inbound has no sticky bit). The copy reads through the folder it holds open, so it
    copies their own file or nothing, never the classmate's."""
    src, dest, theirs = tmp_path / "inbound", tmp_path / "submitted", tmp_path / "classmate"
    (src / "d").mkdir(parents=True)
    (src / "d" / "answer.txt").write_text("mallory's own")
    theirs.mkdir()
    (theirs / "answer.txt").write_text("alice's solution")
    chown_tree(src, users[MALLORY])
    chown_tree(theirs, users[ALICE])
    swapped = []

    def then_swap(real):
        """`real` (os.stat or os.lstat), then, right after the first look at answer.txt, the swap."""
        def looked(path, *args, **kwargs):
            found = real(path, *args, **kwargs)
            if str(path).endswith("answer.txt") and not swapped:
                swapped.append(path)
                os.rename(src / "d", tmp_path / "d-away")
                if swap == "link":
                    os.symlink(theirs, src / "d")
                else:
                    os.rename(theirs, src / "d")
            return found
        return looked

    monkeypatch.setattr(os, "stat", then_swap(os.stat))
    monkeypatch.setattr(os, "lstat", then_swap(os.lstat))
    left = exchange.safe_copy(str(src), str(dest), owner=users[MALLORY])
    monkeypatch.undo()
    assert swapped, "the swap happened"
    read = {str(p.relative_to(dest)): p.read_text() for p in dest.rglob("*") if p.is_file()}
    assert "alice's solution" not in read.values(), (read, left)
    assert read in ({"d/answer.txt": "mallory's own"}, {}), (read, left)


def test_a_forgery_takes_the_forgers_turn_not_the_named_students(users, tmp_path):
    """`chapter serve` queues a submission in the turn of the login that wrote it: a flood of
    folders naming alice waits behind mallory's own work, never ahead of alice's."""
    forged, own, mine = tmp_path / f"{ALICE}+worked+t+1", tmp_path / f"{ALICE}+worked+t+2", tmp_path / "x+worked+t+3"
    for folder in (forged, own, mine):
        folder.mkdir()
    os.lchown(forged, users[MALLORY], -1)
    os.lchown(own, users[ALICE], -1)
    assert exchange.submitter(forged, ALICE) == MALLORY
    assert exchange.submitter(own, ALICE) == ALICE
    assert exchange.submitter(mine, "x") == "x"            # the instructor's own account: the name it gives
    assert exchange.submitter(tmp_path / "gone", ALICE) == ALICE


def nest(folder: Path, depth: int, uid: int) -> None:
    """`depth` folders one inside the next in `folder`, owned by `uid` (as a student's shell loop
    makes them; no recursion, which is what such a tree defeats)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.fchown(inner, uid, -1)
            os.close(fd)
            fd = inner
        with os.fdopen(os.open("deepest.txt", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd), "w") as fh:
            fh.write("at the bottom")
    finally:
        os.close(fd)


def test_a_submission_nested_too_deep_or_named_in_bytes_stops_no_one(users, tmp_path):
    """A student's inbound folder with 1,500 folders one inside the next, and a file whose name is
    not UTF-8: collect takes her notebook, leaves the depths out with a word, and goes on to the
    next student; chapter autograde then grades both."""
    from nbgrader.api import Gradebook
    course = Course(tmp_path / "course")
    inbound = exchange_root(course.root) / COURSE_ID / "inbound"
    deep = submit_as(course, users[MALLORY], MALLORY, "correct")
    try:
        nest(inbound / deep, 1500, users[MALLORY])
        with open(os.fsencode(inbound / deep) + b"/\xff-notes.txt", "wb") as fh:
            fh.write(b"not UTF-8, the name")
        os.lchown(os.fsencode(inbound / deep) + b"/\xff-notes.txt", users[MALLORY], -1)
        submit_as(course, users[ALICE], ALICE, "correct")
        collected = nbgrader("collect", ASSIGNMENT, cwd=course.root)
        said = collected.stdout + collected.stderr
        for login in (ALICE, MALLORY):
            assert (course.root / "submitted" / login / ASSIGNMENT / f"{NB}.ipynb").is_file(), said
        assert f"nested more than {exchange.MAX_DEPTH} deep" in said, said
        kept = course.root / "submitted" / MALLORY / ASSIGNMENT
        assert (kept / ("d/" * exchange.MAX_DEPTH)).is_dir() and not (kept / ("d/" * (exchange.MAX_DEPTH + 1))).exists()
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        graded = subprocess.run([sys.executable, "-m", "graders.cli", "autograde", ASSIGNMENT, "--course",
                                 str(course.root)], env=env, capture_output=True, text=True, timeout=600)
        assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-2000:]
        with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gb:
            assert {s: gb.find_submission(ASSIGNMENT, s).score for s in (ALICE, MALLORY)} == {ALICE: 4.0, MALLORY: 4.0}
    finally:      # pytest's own clean-up recurses, and would stop at the depths
        subprocess.run(["rm", "-rf", str(inbound / deep)], check=False)


def test_a_folder_claiming_a_name_in_bytes_is_set_aside_and_stops_no_command(users, tmp_path):
    """mallory files a submission under a student name in bytes that are not UTF-8: collect sets
    it aside, and collect, autograde and report (on a strictly UTF-8 terminal) all finish, alice
    graded and the refused folder named."""
    import shutil
    from nbgrader.api import Gradebook
    course = Course(tmp_path / "course")
    inbound = exchange_root(course.root) / COURSE_ID / "inbound"
    own = submit_as(course, users[ALICE], ALICE, "correct")
    claimed = os.fsencode(inbound) + b"/\xff" + os.fsencode(own)[len(ALICE):]
    shutil.copytree(inbound / own, os.fsdecode(claimed))
    chown_tree(Path(os.fsdecode(claimed)), users[MALLORY])
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "PYTHONIOENCODING": "utf-8:strict"}
    runs = [nbgrader("collect", ASSIGNMENT, cwd=course.root)]
    for command in (["autograde", ASSIGNMENT], ["report", ASSIGNMENT]):
        runs.append(subprocess.run([sys.executable, "-m", "graders.cli", *command, "--course", str(course.root)],
                                   env=env, capture_output=True, text=True, errors="backslashreplace", timeout=600))
        assert runs[-1].returncode == 0, runs[-1].stdout[-2000:] + runs[-1].stderr[-2000:]
    (entry,) = exchange.read_set_aside(course.root, ASSIGNMENT)
    assert os.fsencode(entry.folder) == os.path.basename(claimed) and MALLORY in entry.why
    assert "SET ASIDE \\xff" in runs[1].stdout, runs[1].stdout
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gb:
        assert [(s.id, gb.find_submission(ASSIGNMENT, s.id).score) for s in gb.students] == [(ALICE, 4.0)]
    page = (course.root / "reports" / ASSIGNMENT / "report.html").read_bytes().decode("utf-8")
    assert "\\xff" in page


def test_a_root_service_leaves_the_instructors_course_the_instructors(users, tmp_path):
    """`chapter serve` runs as root on a hub (its sandbox needs it); what it writes in the
    instructor's course is given back to the course's owner, links left alone."""
    course = tmp_path / "course"
    (course / "submitted" / ALICE / ASSIGNMENT).mkdir(parents=True)
    (course / "submitted" / ALICE / ASSIGNMENT / "timestamp.txt").write_text("x")
    (course / ".chapter" / "serve").mkdir(parents=True)
    (course / "gradebook.db").write_text("")
    outside = tmp_path / "outside"
    outside.write_text("root's")
    (course / "submitted" / "link").symlink_to(outside)
    os.chown(course, users[ALICE], users[ALICE])         # alice stands in for the instructor here
    exchange.close_course(course, f"sqlite:///{course / 'gradebook.db'}")
    for path in [course / "submitted", course / "submitted" / ALICE / ASSIGNMENT / "timestamp.txt",
                 course / ".chapter" / "serve", course / "gradebook.db", course / "submitted" / "link"]:
        assert os.lstat(path).st_uid == users[ALICE], path
    assert outside.stat().st_uid == 0                    # the link's target is not the course's
    assert (course / "submitted").stat().st_mode & 0o777 == 0o700


def test_a_refusal_reads_no_link_or_fifo_for_its_secret(tmp_path, monkeypatch):
    """The refusal page is named from the student's submission_secret.txt: a link (to the
    gradebook) or a FIFO there is refused at once, never followed or waited on."""
    from graders.engine import serve
    from graders.engine.times import read_small
    (tmp_path / "secret").write_text("s" * 32)
    (tmp_path / "link").symlink_to(tmp_path / "secret")
    os.mkfifo(tmp_path / "fifo")
    assert read_small(tmp_path / "secret", 4096, strip=False) == "s" * 32
    done = []
    worker = threading.Thread(target=lambda: done.append([read_small(tmp_path / n, 4096) for n in ("link", "fifo")]),
                              daemon=True)
    worker.start()
    worker.join(10)
    assert done == [[None, None]]
    # and the refusal itself, with each in the submission's folder
    from traitlets.config import Config
    config = Config()
    config.Exchange.root = str(tmp_path / "exchange")
    config.CourseDirectory.course_id = "course"
    for kind in ("link", "fifo"):
        folder = f"maria+worked+2026-03-01 11:00:00.000000 UTC+{kind}"
        source = tmp_path / "exchange" / "course" / "inbound" / folder
        source.mkdir(parents=True)
        if kind == "link":
            (source / "submission_secret.txt").symlink_to(tmp_path / "secret")
        else:
            os.mkfifo(source / "submission_secret.txt")
        outcome = []

        def refuse():
            try:
                serve.release_refusal(config, tmp_path, "worked", folder, "refused", {"w1-memory": None})
                outcome.append("written")
            except ValueError as error:
                outcome.append(str(error))

        worker = threading.Thread(target=refuse, daemon=True)
        worker.start()
        worker.join(10)
        assert outcome == ["the submission's secret is not a regular file"], (kind, outcome)
        feedback = tmp_path / "exchange" / "course" / "feedback"
        assert not feedback.exists() or not any(feedback.iterdir()), kind


# -- enrolment: several courses on one hub ---------------------------------------------------------
class StubHub:
    """The hub's API as the course's side asks it (GET /users/<name>): `groups` {login: [group]};
    a login it does not list is one it does not know (404). Only `token` may ask."""

    def __init__(self, groups: dict, token: str):
        import http.server
        from urllib.parse import unquote
        outer = self

        class Answer(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                login = unquote(self.path.rsplit("/", 1)[-1])
                if self.headers.get("Authorization") != f"token {token}":
                    status, body = 403, {}
                elif not self.path.startswith("/hub/api/users/") or login not in groups:
                    status, body = 404, {}
                else:
                    status, body = 200, {"name": login, "groups": groups[login]}
                outer.asked.append(login)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass
        self.asked = []
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hub/api"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_a_login_the_hub_does_not_enrol_is_set_aside_by_collect_and_serve(users, tmp_path, monkeypatch):
    """With `c.CheckedCollect.hub_enrolment`, the course asks the hub (nbgrader's rule: the groups
    nbgrader-<course>, formgrade-<course>) and takes no work from a login it does not enrol, however
    that login's own nbgrader was configured: plain collect leaves it in inbound and ledgers it,
    chapter serve's admission refuses it. A hub that cannot be asked stops the collect."""
    from graders.engine import serve
    from traitlets.config import Config
    course = Course(tmp_path / "course", policy="c.CheckedCollect.hub_enrolment = True")
    own = submit_as(course, users[ALICE], ALICE, "correct")
    outsider = submit_as(course, users[MALLORY], MALLORY, "correct")
    hub = StubHub({ALICE: [f"nbgrader-{COURSE_ID}"], MALLORY: ["nbgrader-another-course", f"formgrade-{COURSE_ID}x"]},
                  token="t0ken")
    try:
        monkeypatch.setenv("JUPYTERHUB_API_URL", hub.url)
        monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "t0ken")
        collected = nbgrader("collect", ASSIGNMENT, cwd=course.root)
        assert sorted(os.listdir(course.root / "submitted")) == [ALICE], collected.stdout + collected.stderr
        (entry,) = exchange.read_set_aside(course.root, ASSIGNMENT)
        assert entry.folder == outsider and entry.claimed == MALLORY
        assert f"not enrolled in {COURSE_ID}" in entry.why
        assert set(hub.asked) == {ALICE, MALLORY}

        service = serve.Service(course.root, [ASSIGNMENT])
        service._prepare()
        def admitted(student, folder):   # serve's admission, with the enrolment check its config gives it
            return exchange.admission(service.inbound / folder, student, service.enrolled)
        assert admitted(ALICE, own) == ("", "")
        forged, outside = admitted(MALLORY, outsider)
        assert forged == "" and f"the login {MALLORY} is not enrolled in {COURSE_ID}" in outside

        # nothing to ask with: nothing is taken, and the instructor is told why
        monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "someone else's")
        with pytest.raises(exchange.EnrolmentUnknown, match="answered 403"):
            admitted(ALICE, own)
        monkeypatch.delenv("JUPYTERHUB_API_TOKEN")
        with pytest.raises(RuntimeError, match="cannot tell who is enrolled"):
            nbgrader("collect", "--update", ASSIGNMENT, cwd=course.root)
    finally:
        hub.close()
    # a course that does not ask (the default) takes the work of any login of the machine
    assert exchange.enrolment(Config(), COURSE_ID) is None


def test_a_hub_answer_that_is_not_the_hubs_json_leaves_enrolment_unknown(monkeypatch):
    """A proxy's error page answered with 200, or JSON of another shape: nothing is taken, and the
    instructor is told (a ValueError stopped collect and chapter serve)."""
    import requests
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "token")
    monkeypatch.setenv("JUPYTERHUB_API_URL", "http://127.0.0.1:9/hub/api")
    for body in (b"<html>502 Bad Gateway</html>", b"[1, 2]", b'{"groups": "nbgrader-course"}'):
        answer = requests.models.Response()
        answer.status_code, answer._content = 200, body
        monkeypatch.setattr(requests, "get", lambda *args, answer=answer, **kwargs: answer)
        with pytest.raises(exchange.EnrolmentUnknown, match="did not show"):
            exchange.hub_courses("ann")
