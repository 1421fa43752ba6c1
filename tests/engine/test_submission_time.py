"""When a submission was handed in is not the student's to say.

`nbgrader submit` writes the time it started into the folder's name and into `timestamp.txt`,
and the student owns both: nbgrader's collect takes them as they are, so a late student can
write an on-time one. The files' change time is set by the kernel when they are written, and no
student can set it back. Here alice submits after the due date, then writes a time before it into
her folder's name and her timestamp.txt, as a real login would; plain `nbgrader collect` and
`chapter autograde` grade her as handed in when her files were written, say so, and the report
names it. Her feedback can still be fetched: her own timestamp.txt is kept as she wrote it.
"""
from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from graders.engine.course_dir import exchange_root
from tests.conftest import login_for, unix_users
from tests.engine.test_identity import as_account, chown_tree
from tests.engine.test_serve import ASSIGNMENT, COURSE_ID, Course
from tests.warm_nbgrader import nbgrader

pytestmark = pytest.mark.slow

ALICE = login_for("alice")
REPO = Path(__file__).resolve().parents[2]


def chapter(*args, cwd):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "graders.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def backdated(tmp_path_factory):
    now = datetime.now(timezone.utc)
    due, claimed = now - timedelta(hours=1), now - timedelta(hours=2)
    course = Course(tmp_path_factory.mktemp("backdated") / "course")
    (course.root / "deadlines.toml").write_text(
        f'[penalty]\nper = "day"\nkind = "fraction"\namount = 0.25\ncap = 0.5\n\n'
        f'[due]\n{ASSIGNMENT} = {due:%Y-%m-%dT%H:%M:%SZ}\n')
    applied = chapter("deadlines", "--course", str(course.root), cwd=course.root)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    inbound = exchange_root(course.root) / COURSE_ID / "inbound"
    with unix_users(ALICE) as uids:
        course.submit(ALICE, "correct")
        (folder,) = os.listdir(inbound)
        chown_tree(inbound / folder, uids[ALICE])
        # as alice: a time an hour before the due date, in her timestamp.txt and her folder's name
        said = f"{claimed:%Y-%m-%d %H:%M:%S.%f} UTC"
        name, _, secret = folder.rsplit("+", 2)
        backdated = f"{name}+{said}+{secret}"
        held = os.open(inbound, os.O_RDONLY | os.O_DIRECTORY)    # the test's folders above are root's

        def rewrite():
            fd = os.open(f"{folder}/timestamp.txt", os.O_WRONLY | os.O_TRUNC, dir_fd=held)
            os.write(fd, said.encode())
            os.close(fd)
            os.rename(folder, backdated, src_dir_fd=held, dst_dir_fd=held)
        try:
            assert as_account(uids[ALICE], rewrite) == ""
        finally:
            os.close(held)
        assert (inbound / backdated / "timestamp.txt").read_text() == said
        collect = nbgrader("collect", ASSIGNMENT, cwd=course.root)
        graded = chapter("autograde", ASSIGNMENT, "--course", str(course.root), cwd=course.root)
        report = chapter("report", ASSIGNMENT, "--course", str(course.root), cwd=course.root)
    return {"course": course, "said": said, "folder": backdated, "now": now, "due": due,
            "collect": collect, "graded": graded, "report": report}


def test_a_backdated_submission_is_graded_as_handed_in_when_it_was_written(backdated):
    from nbgrader.api import Gradebook
    course, graded = backdated["course"], backdated["graded"]
    assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-2000:]
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gb:
        submission = gb.find_submission(ASSIGNMENT, ALICE)
        handed_in = submission.timestamp.replace(tzinfo=timezone.utc)
        assert abs(handed_in - backdated["now"]) < timedelta(minutes=5), (handed_in, backdated["now"])
        assert submission.total_seconds_late > 3000
        assert float(submission.score) == 4.0 and float(submission.late_submission_penalty) == 1.0   # a day begun: a quarter
    # her own timestamp.txt is kept as she wrote it: nbgrader's feedback is keyed by it
    kept = course.root / "submitted" / ALICE / ASSIGNMENT / "timestamp.txt"
    assert kept.read_text().strip() == backdated["said"]


def test_the_instructor_is_told_at_collect_in_the_summary_and_in_the_report(backdated):
    said, folder = backdated["said"], backdated["folder"]
    collect = backdated["collect"].stdout + backdated["collect"].stderr
    assert f"RETIMED {ALICE}" in collect and said in collect, collect[-2000:]
    summary = backdated["graded"].stdout
    assert f"RETIMED {ALICE}: the timestamp.txt of {folder} says {said}" in summary, summary[-2000:]
    assert "graded as handed in then" in summary
    report = backdated["report"]
    assert report.returncode == 0, report.stdout[-2000:] + report.stderr[-2000:]
    row = next((line for line in report.stdout.splitlines() if ALICE in line and "timestamp.txt" in line), "")
    assert f"timestamp.txt said {said[:16]}; files written later" in row, report.stdout[-3000:]
    assert f"{backdated['now']:%Y-%m-%d %H:%M}" in row or f"{backdated['now'] + timedelta(minutes=1):%Y-%m-%d %H:%M}" in row


def test_chapter_serve_takes_the_same_time_and_says_it(tmp_path):
    """`chapter serve` collects each submission with the course's collect, one at a time: the
    same time, and the line the service prints."""
    from traitlets.config import Config

    from graders.engine import serve
    from graders.engine.times import handed_in
    config = Config()
    config.Exchange.root = str(tmp_path / "exchange")
    config.CourseDirectory.course_id = "course"
    said = "2026-01-01 10:00:00.000000 UTC"
    folder = f"ann+{ASSIGNMENT}+{said}+x"
    inbound = tmp_path / "exchange" / "course" / "inbound" / folder
    inbound.mkdir(parents=True)
    (inbound / "w1-memory.ipynb").write_text("{}")
    (inbound / "timestamp.txt").write_text(said)
    written = os.stat(inbound / "timestamp.txt").st_ctime
    line = serve.collect_one(config, tmp_path / "course", ASSIGNMENT, "ann", folder)
    assert line.startswith(f"RETIMED ann: the timestamp.txt of {folder} says {said}"), line
    assert abs(handed_in(tmp_path / "course", ASSIGNMENT, "ann", said).timestamp() - written) < 5
    assert (tmp_path / "course" / "submitted" / "ann" / ASSIGNMENT / "timestamp.txt").read_text() == said


def _inbound(tmp_path, folders, monkeypatch):
    """Inbound folders of hw1, each with when it was written (times.folder_written, as collect reads it)."""
    from graders.engine import exchange
    inbound = tmp_path / "inbound"
    written = {}
    for name, moment in folders.items():
        (inbound / name).mkdir(parents=True)
        written[str(inbound / name)] = moment.timestamp()
    monkeypatch.setattr(exchange, "folder_written", lambda path: written[str(path)])
    return inbound


def _collector(tmp_path, inbound, due, **traits):
    """CheckedCollect of hw1 from `inbound`, due at `due`, with these CheckedCollect traits."""
    import logging

    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    from graders.engine import exchange
    config = Config()
    for trait, value in traits.items():
        setattr(config.CheckedCollect, trait, value)
    coursedir = CourseDirectory(root=str(tmp_path), config=config)
    coursedir.assignment_id = "hw1"
    app = exchange.CheckedCollect(coursedir=coursedir, config=config, log=logging.getLogger("collect"))
    app.inbound_path, app.duedate = str(inbound), exchange.naive_utc(due)
    return app


def _collected(app, copy_one) -> list[str]:
    """The inbound folders one run of `app` copies, each with `copy_one(src, dest)`."""
    copied = []
    app.copy_one = lambda src, dest, owner: copied.append(os.path.basename(src)) or copy_one(src, dest)
    app.src_records = app.choose(app.records())
    app.copy_files()
    return copied


def _chosen(tmp_path, inbound, due, **traits) -> list[str]:
    app = _collector(tmp_path, inbound, due, **traits)
    return sorted(record["filename"] for record in app.choose(app.records()))


def _named(student, moment, secret):
    return f"{student}+hw1+{moment:%Y-%m-%d %H:%M:%S.%f} UTC+{secret}"


def test_collect_chooses_by_when_a_submission_was_written_not_by_the_time_in_its_name(tmp_path, monkeypatch):
    """ann handed in on time, then a day late, and named the late folder as on time. With
    --before-duedate, collect takes the one that was on time; without, her latest, the late one.
    bo's honest late submission after an on-time one is chosen as nbgrader would."""
    due = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
    on_time = _named("ann", due - timedelta(hours=2), "a")
    backdated = _named("ann", due - timedelta(hours=1), "b")
    bo_early, bo_late = _named("bo", due - timedelta(hours=3), "c"), _named("bo", due + timedelta(hours=5), "d")
    inbound = _inbound(tmp_path, {on_time: due - timedelta(hours=2) + timedelta(seconds=4),
                                  backdated: due + timedelta(days=1),
                                  bo_early: due - timedelta(hours=3) + timedelta(seconds=2),
                                  bo_late: due + timedelta(hours=5, seconds=3)}, monkeypatch)
    assert _chosen(tmp_path, inbound, due, before_duedate=True) == [on_time, bo_early]
    assert _chosen(tmp_path, inbound, due) == [backdated, bo_late]
    # an exchange restored from a copy: its change times say nothing, and nbgrader's rule is kept
    assert _chosen(tmp_path, inbound, due, before_duedate=True, trust_student_time=True) == [backdated, bo_early]


def test_collect_holds_the_copy_to_the_owner_it_admitted(tmp_path, monkeypatch):
    """Collect admitted a folder by one look at its owner and recorded the owner from a second: a
    folder swapped for another login's between the two was then copied as that login's (the copy
    checks the folder it opens against the recorded owner). Now the owner the copy is held to is
    the one the admitting look saw."""
    from graders.engine import exchange
    due = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
    name = _named("ann", due - timedelta(hours=1), "a")
    inbound = _inbound(tmp_path, {name: due - timedelta(hours=1)}, monkeypatch)
    real, looks = os.lstat, []

    def lstat(path, *args, **kwargs):
        info = real(path, *args, **kwargs)
        if os.path.basename(path) != name:
            return info
        looks.append(path)
        if len(looks) == 1:
            return info                        # the look that admits it: the instructor's own folder
        fields = list(info)
        fields[4] = 54321                      # any later look: another login's folder
        return os.stat_result(fields)
    monkeypatch.setattr(os, "lstat", lstat)
    records = _collector(tmp_path, inbound, due).records()
    assert [r["owner"] for r in records] == [os.geteuid()], looks


def test_collect_of_a_retimed_submission_is_not_repeated_and_a_later_one_is_taken(tmp_path, monkeypatch):
    """With --update, a backdated submission collected once (and retimed) is not collected again on
    each run; a submission written after it is taken, though its name gives an earlier time still."""
    import shutil

    from graders.engine import exchange
    due = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
    first, later = _named("ann", due - timedelta(hours=1), "a"), _named("ann", due - timedelta(hours=2), "b")
    written = {first: due + timedelta(days=1)}
    inbound = _inbound(tmp_path, written, monkeypatch)
    monkeypatch.setattr(exchange, "folder_written", lambda path: written[Path(path).name].timestamp())

    def collect() -> list[str]:
        app = _collector(tmp_path, inbound, due, update=True)

        def copy_one(src, dest):       # as safe_copy would, with the folder's change time
            shutil.copytree(src, dest)
            return app.check_time(os.path.basename(src), Path(dest), written[os.path.basename(src)].timestamp())
        return _collected(app, copy_one)

    (inbound / first / "timestamp.txt").write_text(first.split("+")[2])
    assert collect() == [first]
    assert collect() == []
    (inbound / later).mkdir()
    (inbound / later / "timestamp.txt").write_text(later.split("+")[2])
    written[later] = due + timedelta(days=2)
    assert collect() == [later]


@pytest.mark.parametrize("trait", ["update", "before_duedate"])
def test_a_submission_already_collected_is_known_by_its_secret_not_by_its_times(tmp_path, monkeypatch, trait):
    """Its folder's name and its timestamp.txt give two different times: collect compared the two
    and copied the same submission again on every run. The same submission_secret.txt says it is
    the one submitted/ holds; a new submission (a new secret) is still taken."""
    import shutil
    due = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
    name = _named("ann", due - timedelta(hours=1), "a")
    inbound = _inbound(tmp_path, {name: due - timedelta(hours=2)}, monkeypatch)
    (inbound / name / "timestamp.txt").write_text(f"{due - timedelta(hours=2):%Y-%m-%d %H:%M:%S.%f} UTC")
    (inbound / name / "submission_secret.txt").write_text("a" * 32)

    def collect() -> list[str]:
        return _collected(_collector(tmp_path, inbound, due, **{trait: True}), shutil.copytree)
    assert collect() == [name]
    assert collect() == []
    (inbound / name / "submission_secret.txt").write_text("b" * 32)     # another submission in its place
    assert collect() == [name]
