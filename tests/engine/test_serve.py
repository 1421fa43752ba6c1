"""`chapter serve`: feedback seconds after a student submits, through nbgrader's own exchange.

The service runs as the instructor would run it (`python -m graders.cli serve worked`),
students fetch and submit with nbgrader's own commands, and the feedback they fetch is
read as they would read it. Also: the attempt policy, a kill in the middle of a burst,
broken and foreign submissions, and an instructor's `nbgrader collect` at the same time.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from graders.engine import serve
from graders.engine.scratch import make_course
from tests.warm_nbgrader import nbgrader
from graders.course.demo import fill
from tests.conftest import running
from graders.engine.course_dir import exchange_root

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ASSIGNMENT, NB = "worked", "w1-memory"
COURSE_ID = "training-at-scale"


class Course:
    """A scratch course with `worked/w1-memory` released into its own exchange."""

    def __init__(self, folder: Path, policy: str = ""):
        self.root = make_course(ROOT, folder, only=[ASSIGNMENT])
        for path in (self.root / "source" / ASSIGNMENT).iterdir():
            if path.name != f"{NB}.ipynb":
                path.unlink()
        with open(self.root / "nbgrader_config.py", "a") as fh:
            fh.write("\n" + policy + "\n")
        nbgrader("generate_assignment", ASSIGNMENT, "--force", cwd=self.root)
        nbgrader("release_assignment", ASSIGNMENT, "--force", cwd=self.root)
        self.service = None

    def student(self, name: str) -> Path:
        home = self.root / "students" / name
        if not home.exists():
            home.mkdir(parents=True)
            self.as_student(name, "fetch_assignment", ASSIGNMENT)
        return home

    def as_student(self, name, *args, exchange: Path | None = None):
        """nbgrader's student command `args`, on the course's exchange (or the one at `exchange`)."""
        home = self.root / "students" / name
        os.environ["JUPYTERHUB_USER"] = name
        try:   # each student's own submission cache, as on their own server (not the shared HOME's)
            return nbgrader(*args, f"--Exchange.root={exchange or exchange_root(self.root)}",
                            f"--CourseDirectory.course_id={COURSE_ID}", f"--Exchange.cache={home / '.nbgrader_cache'}",
                            cwd=home)
        finally:
            os.environ.pop("JUPYTERHUB_USER", None)

    def staging(self) -> Path:
        """An exchange of the course's own beside the real one, on the same file system: what is
        submitted there reaches no service until it is moved into the real inbound."""
        staged = self.root / "staging" / COURSE_ID
        if not staged.exists():
            (staged / "inbound").mkdir(parents=True)
            (staged / "outbound").symlink_to(exchange_root(self.root) / COURSE_ID / "outbound")
        return staged / "inbound"

    def arrive(self, staged: Path, uid: int, name: str | None = None) -> str:
        """`staged` (a submission folder in staging()) owned by `uid`, then moved into the real inbound
        whole, as `name` if given: the service never sees it owned by anyone else, as it would if it
        were made in inbound and handed to `uid` afterwards (it may grade it in between)."""
        from tests.engine.test_identity import chown_tree
        chown_tree(staged, uid)
        name = name or staged.name
        os.rename(staged, exchange_root(self.root) / COURSE_ID / "inbound" / name)
        return name

    def forge(self, claimed: str, how: str, uid: int, copies: int = 0) -> list[str]:
        """`nbgrader submit --student=claimed` of a `how` notebook made by the login `uid`, and
        `copies` more of that folder: each arrives in inbound already owned by `uid`."""
        staging = self.staging()
        self.fill(claimed, how)
        self.as_student(claimed, "submit", ASSIGNMENT, f"--student={claimed}", exchange=staging.parents[1])
        (made,) = [p for p in staging.iterdir() if p.name.startswith(f"{claimed}+")]
        names = [made.name] + [f"{made.name[:-4]}c{i:03d}" for i in range(copies)]
        for name in names[1:]:
            shutil.copytree(made, staging / name, symlinks=True)
        return [self.arrive(staging / name, uid) for name in names]

    def submit(self, name: str, how: str, then=None) -> None:
        """Submit the notebook filled `how`, after `then(path)` changes it further (if given)."""
        self.fill(name, how, then)
        self.as_student(name, "submit", ASSIGNMENT, f"--student={name}")

    def fill(self, name: str, how: str, then=None) -> None:
        """The student's fetched notebook, from the blank each time, filled `how` (then `then(path)`)."""
        fetched = self.student(name) / ASSIGNMENT / f"{NB}.ipynb"
        nbformat.write(nbformat.read(self.root / "release" / ASSIGNMENT / f"{NB}.ipynb", as_version=4), fetched)
        fill(fetched, how, ROOT)
        if then is not None:
            then(fetched)

    def feedback(self, name: str, after: int, timeout: float = 240.0) -> str:
        """The newest feedback the student can fetch, once there are more than `after` of them."""
        home = self.student(name)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                self.as_student(name, "fetch_feedback", ASSIGNMENT)
            except RuntimeError as exc:      # nothing released yet: nbgrader says so and fails
                if "not found" not in str(exc):
                    raise
            pages = sorted((home / ASSIGNMENT / "feedback").glob(f"*/{NB}.html"))
            if len(pages) > after:
                return pages[-1].read_text()
            time.sleep(0.5)
        raise AssertionError(f"no feedback for {name} within {timeout} s:\n{self.log()}")

    def start(self):
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.log_file = open(self.root / "serve.log", "w")
        self.service = subprocess.Popen(
            [sys.executable, "-m", "graders.cli", "serve", ASSIGNMENT, "--course", str(self.root), "-j", "2"],
            env=env, stdout=self.log_file, stderr=subprocess.STDOUT)
        return self.service

    def stop(self, how=signal.SIGTERM):
        self.service.send_signal(how)
        self.service.wait(timeout=120)
        self.log_file.close()

    def log(self) -> str:
        path = self.root / "serve.log"
        return path.read_text() if path.exists() else ""

    def attempts(self, name):
        return serve.AttemptJournal(self.root, ASSIGNMENT).load(name)

    def wait_for(self, condition, timeout=300.0, what="the service"):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return
            time.sleep(0.3)
        raise AssertionError(f"timed out waiting for {what}:\n{self.log()}")


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def visible_text(page: str) -> str:
    return re.sub(r"<[^>]+>", " ", page)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    # without the course's page filters: the service's feedback must be bounded all the same
    course = Course(tmp_path_factory.mktemp("serve"), policy="c.ChapterServe.attempts = 2\nc.HTMLExporter.filters = {}")
    course.start()
    yield course
    if course.service.poll() is None:
        course.stop()


def test_wrong_then_right_then_refused(served):
    """Submit wrong: the failed check, no direction; fix it: full marks; past the limit: a refusal."""
    from graders import problems
    served.submit("maria", "wrong")
    page = visible_text(served.feedback("maria", after=0))
    assert "per_device_bytes" in page and "✗" in page
    assert "too large" not in page and "too small" not in page
    assert "BEGIN HIDDEN TESTS" not in page and "judge(" not in page
    params = problems.get(NB).variants[serve_variant("maria")]
    for value in problems.get(NB).solve(params).values():
        if isinstance(value, (int, float)) and value > 100:
            assert f"{value:g}" not in page and str(value) not in page
    served.submit("maria", "correct")
    page = visible_text(served.feedback("maria", after=1))
    assert "3 of 3" in page and "1 of 1" in page and "✗" not in page, page[:3000]
    served.submit("maria", "correct")
    page = visible_text(served.feedback("maria", after=2))
    assert "was not graded" in page and "all 2 graded attempts" in page
    states = [a.state for a in served.attempts("maria")]
    assert states == ["graded", "graded", "refused"]
    out = subprocess.run([sys.executable, "-m", "graders.cli", "serve", ASSIGNMENT, "--course",
                          str(served.root), "--history"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.count("maria") == 3 and "refused" in out.stdout


def serve_variant(name):
    from graders.variants import variant_for
    return variant_for(name, ASSIGNMENT)


def test_bad_input_gets_a_clear_outcome(served):
    """A broken notebook is graded 0 with a reason; another assignment is left alone; others unaffected."""
    home = served.student("bob")
    (home / ASSIGNMENT / f"{NB}.ipynb").write_text("{ this is not a notebook")
    served.as_student("bob", "submit", ASSIGNMENT, "--student=bob")
    foreign = exchange_root(served.root) / COURSE_ID / "inbound" / "eve+practice+2026-01-01 00:00:00.000000 UTC+x"
    foreign.mkdir(parents=True)
    (foreign / "timestamp.txt").write_text("2026-01-01 00:00:00.000000 UTC")
    (foreign / "submission_secret.txt").write_text("0" * 128)
    served.submit("carol", "correct")
    page = visible_text(served.feedback("carol", after=0))
    assert "3 of 3" in page and "1 of 1" in page and "✗" not in page
    served.wait_for(lambda: [a.state for a in served.attempts("bob")] == ["graded"], what="bob's attempt")
    page = visible_text(served.feedback("bob", after=0))
    assert "could not be graded" in page or "not valid JSON" in page
    assert not serve.AttemptJournal(served.root, "practice").students()


def test_a_page_built_to_stall_nbconvert_is_made_in_moments(served):
    """A correct notebook with one markdown line of 500,000 `[`: nbconvert's own filter would
    search that line once per `[` (18 minutes); the service's feedback comes as for any other."""
    def stalling(path):
        nb = nbformat.read(path, as_version=4)
        nb.cells.append(nbformat.v4.new_markdown_cell("[" * 500_000))
        nbformat.write(nb, path)
    served.submit("hugo", "correct", then=stalling)
    page = served.feedback("hugo", after=0, timeout=120)
    assert "[" * 500_000 in page and "✗" not in visible_text(page)
    assert [a.score for a in served.attempts("hugo")] == [4.0]


def test_an_instructor_collect_beside_the_service(served):
    """`nbgrader collect` while the service grades: both finish, and no grade is lost."""
    served.submit("dan", "correct")
    nbgrader("collect", ASSIGNMENT, "--update", cwd=served.root)
    served.feedback("dan", after=0)
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{served.root / 'gradebook.db'}", COURSE_ID) as gb:
        assert gb.find_submission_notebook(NB, ASSIGNMENT, "dan").score == 4.0
        assert gb.find_submission_notebook(NB, ASSIGNMENT, "carol").score == 4.0


def test_a_forged_student_is_refused_and_the_students_own_grade_stands(served):
    """mallory's `nbgrader submit --student=vera`, and 30 copies of it: set aside in the ledger,
    told to mallory, never served as vera, and never written into vera's own history."""
    from nbgrader.api import Gradebook
    from graders.engine import exchange
    from tests.conftest import login_for, unix_users
    served.submit("vera", "correct")
    served.feedback("vera", after=0)
    journal = serve.AttemptJournal(served.root, ASSIGNMENT)._path("vera")
    history = journal.read_bytes()
    mallory = login_for("mallory")
    with unix_users(mallory) as uids:
        forgery, *copies = served.forge("vera", "blank", uids[mallory], copies=30)
        served.wait_for(lambda: len(exchange.read_set_aside(served.root, ASSIGNMENT)) == 31
                        and served.log().count(f"vera {ASSIGNMENT}: not graded (") >= 31,
                        what="the forgeries' refusals")
    assert [a.state for a in served.attempts("vera")] == ["graded"] and journal.read_bytes() == history
    assert f"SET ASIDE {forgery}" in served.log() and mallory in served.log()
    assert {e.folder for e in exchange.read_set_aside(served.root, ASSIGNMENT)} == {forgery, *copies}
    shown = subprocess.run([sys.executable, "-m", "graders.cli", "serve", ASSIGNMENT, "--course",
                            str(served.root), "--history"], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert f"SET ASIDE {forgery}" in shown.stdout and shown.stdout.count("vera ") >= 1, shown.stdout
    with Gradebook(f"sqlite:///{served.root / 'gradebook.db'}", COURSE_ID) as gb:
        assert gb.find_submission_notebook(NB, ASSIGNMENT, "vera").score == 4.0
    # what the forger fetches with her own secret: a refusal, never vera's feedback
    page = visible_text(served.feedback("vera", after=1))
    assert "was not graded" in page and "another login" in page and "✗" not in page and "3 of 3" not in page


def test_a_folder_named_in_bytes_stops_neither_the_service_nor_anyone_else(served):
    """A submission folder whose name ends in bytes that are not UTF-8 (any login can make one in
    inbound): the file watcher cannot report it, the service says so and polls instead, grades it,
    and the next student's feedback still comes."""
    from tests.conftest import login_for, unix_users
    served.submit("wes", "correct")
    served.feedback("wes", after=0)
    inbound = exchange_root(served.root) / COURSE_ID / "inbound"
    (own,) = [f for f in os.listdir(inbound) if f.startswith("wes+")]
    shutil.copytree(inbound / own, os.fsdecode(os.fsencode(inbound / own) + b"\xff\n"))
    served.wait_for(lambda: len(served.attempts("wes")) == 2, what="the folder named in bytes")
    # and mallory's folder claiming a student named in such bytes: set aside, nobody stopped
    mallory = login_for("mallory")
    claimed = os.fsdecode(b"\xfe" + os.fsencode(own)[len("wes"):])
    with unix_users(mallory) as uids:
        shutil.copytree(inbound / own, served.staging() / "claim", symlinks=True)
        served.arrive(served.staging() / "claim", uids[mallory], name=claimed)
        served.wait_for(lambda: "SET ASIDE \\xfe" in served.log(), what="the claim in bytes set aside")
    served.submit("xena", "correct")
    assert "3 of 3" in visible_text(served.feedback("xena", after=0))
    assert served.service.poll() is None and "polling it every 0.25 s instead" in served.log()
    served.wait_for(lambda: [a.state for a in served.attempts("wes")] == ["graded", "graded"],
                    what="its grading")


def test_a_burst_from_one_student_does_not_delay_another(tmp_path):
    """Twenty resubmissions from one student, then one from another: the other is served early."""
    course = Course(tmp_path / "burst")
    for _ in range(12):
        course.submit("flood", "correct")
    course.submit("quiet", "correct")
    course.start()
    try:
        course.feedback("quiet", after=0)
        graded = [a for a in course.attempts("flood") if a.state == "graded"]
        assert len(graded) < 12, "the quiet student waited for the whole burst"
    finally:
        course.stop()


def test_killed_mid_burst_every_submission_graded_once(tmp_path):
    """SIGKILL in the middle of a burst, restart: each submission graded exactly once, same grades."""
    course = Course(tmp_path / "kill")
    names = [f"s{i}" for i in range(6)]
    for i, name in enumerate(names):
        course.submit(name, "correct" if i % 2 == 0 else "wrong")
    course.start()
    course.wait_for(lambda: sum(a.state == "graded" for n in names for a in course.attempts(n)) >= 2,
                    what="the first grades")
    helpers = children(course.service.pid)
    assert helpers, "the service grades in child processes"
    course.stop(signal.SIGKILL)
    # nothing the killed service started lives on to finish (and record) a grading without it:
    # the kernel kills its workers with it, long before one could finish a notebook
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(running(pid) for pid in helpers):
        time.sleep(0.2)
    assert not [pid for pid in helpers if running(pid)], "a grading process outlived the killed service"
    course.start()
    try:
        course.wait_for(lambda: all([a.state for a in course.attempts(n)] == ["graded"] for n in names),
                        what="every submission")
    finally:
        course.stop()
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}", COURSE_ID) as gb:
        scores = {n: gb.find_submission_notebook(NB, ASSIGNMENT, n).score for n in names}
    for name in names:
        assert len(course.attempts(name)) == 1
    # an uninterrupted grading of the same submissions, by the engine in one batch
    from graders.engine import autograde as ag
    again = ag.autograde(course.root, ASSIGNMENT, workers=2, progress=False, out=None, force=True)
    assert {n: again.results[n].notebooks[0].score for n in names} == scores
    assert scores[names[0]] == 4.0 and scores[names[1]] < 4.0


def test_a_submission_recorded_before_a_kill_is_taken_from_the_journal_not_graded_again(tmp_path):
    """Killed after recording a grade but before marking the attempt graded: the restarted service
    takes the result its journal kept (its score marked here, so that a second grading would show)."""
    course = Course(tmp_path / "recorded")
    course.submit("s0", "wrong")
    course.start()
    try:
        course.feedback("s0", after=0)
        course.wait_for(lambda: [a.state for a in course.attempts("s0")] == ["graded"], what="the grade")
    finally:
        course.stop()
    (attempt,) = course.attempts("s0")
    assert attempt.score < 4.0
    attempts = serve.AttemptJournal(course.root, ASSIGNMENT)
    attempts.save("s0", [dataclasses.replace(attempt, state="grading", score=None, max_score=None)])
    (kept,) = (course.root / ".chapter" / "autograde" / ASSIGNMENT).glob("*.json")
    entry = json.loads(kept.read_text())
    assert entry["state"] == "recorded"
    entry["result"]["notebooks"][0]["score"] = 3.5            # no grading of a wrong notebook gives this
    kept.write_text(json.dumps(entry))
    course.start()
    try:
        course.wait_for(lambda: [a.state for a in course.attempts("s0")] == ["graded"], what="the restart")
    finally:
        course.stop()
    assert course.attempts("s0")[0].score == 3.5, course.log()


def test_a_pass_of_the_loop_looks_only_at_folders_it_has_not_seen(tmp_path, monkeypatch):
    """Anyone can make folders in inbound: one the service has seen costs a name in the listing on
    each pass, not a look inside (20,000 seen folders: 829 ms a pass before, 79 ms after)."""
    for name, files in (("ann+practice+t1+a", ("timestamp.txt", "submission_secret.txt")),
                        ("bo+practice+t2+b", ("timestamp.txt", "submission_secret.txt")),
                        ("cy+practice+t3+c", ("timestamp.txt",)),                # still being written
                        ("dee+other+t4+d", ("timestamp.txt", "submission_secret.txt"))):
        (tmp_path / name).mkdir()
        for file in files:
            (tmp_path / name / file).write_text("0" * 32)
    assert [f for f, *_ in serve.complete_submissions(tmp_path, {"practice"})] == \
        ["ann+practice+t1+a", "bo+practice+t2+b"]
    looked = []
    real = os.stat
    monkeypatch.setattr(os, "stat", lambda path, *a, **k: (looked.append(str(path).split("/")[0]), real(path, *a, **k))[1])
    found = serve.complete_submissions(tmp_path, {"practice"}, known={("practice", "ann+practice+t1+a")})
    monkeypatch.undo()
    assert [f for f, *_ in found] == ["bo+practice+t2+b"] and "bo+practice+t2+b" in looked, looked
    assert "ann+practice+t1+a" not in looked, looked


def test_looking_at_inbound_is_kept_to_a_share_of_the_services_time(tmp_path, monkeypatch):
    """Folders that never become complete are looked at again on every look: 50,000 of them, from
    one login, made each look take 0.55 s, and the service looked on every pass of its loop (every
    0.05 s while it graded). The next look now waits four times as long as this one took, and
    while the service grades, at least LOOK_GAP."""
    import io
    service = serve.Service(tmp_path, [ASSIGNMENT], out=io.StringIO())
    service.inbound = tmp_path
    (tmp_path / f"ann+{ASSIGNMENT}+t1+a").mkdir()
    for file in ("timestamp.txt", "submission_secret.txt"):
        (tmp_path / f"ann+{ASSIGNMENT}+t1+a" / file).write_text("0" * 32)
    known, queues = set(), {}
    before = time.monotonic()
    quick = service._look(known, queues, busy={})
    assert quick - before < 0.5                      # a class's inbound: looked at again at once when idle
    assert [(j.student, j.folder) for q in queues.values() for j in q] == [("ann", f"ann+{ASSIGNMENT}+t1+a")]
    assert (ASSIGNMENT, f"ann+{ASSIGNMENT}+t1+a") in known
    before = time.monotonic()
    assert service._look(known, queues, busy={"x": None}) - before >= serve.LOOK_GAP
    real = serve.complete_submissions

    def slow(*args, **kwargs):
        time.sleep(0.3)
        return real(*args, **kwargs)
    monkeypatch.setattr(serve, "complete_submissions", slow)
    started = time.monotonic()
    after = service._look(known, queues, busy={})
    took = time.monotonic() - started
    # the look took at least 0.3 s, so the next one is at least 0.3 / LOOK_SHARE after it began
    # (measured from before the call, whatever else the machine is doing)
    assert after - started >= 0.3 / serve.LOOK_SHARE, (after - started, took)
    # the wait for the next look heeds a stop (a huge inbound makes that wait long)
    import threading
    threading.Timer(0.2, service.stop).start()
    started = time.monotonic()
    service._wait_until(started + 30.0)
    assert time.monotonic() - started < 2.0


def test_policy_is_read_from_the_config():
    """c.ChapterServe.* in nbgrader_config.py: attempts, interval and which attempt counts."""
    from traitlets.config import Config
    config = Config()
    config.ChapterServe.attempts = 5
    config.ChapterServe.min_interval = 30
    config.ChapterServe.counts = "best"
    assert serve.Policy.from_config(config) == serve.Policy(5, 30.0, "best")
    config.ChapterServe.counts = "first"
    with pytest.raises(SystemExit, match="counts must be one of"):
        serve.Policy.from_config(config)


def test_which_attempt_counts():
    """"last" is the last before the deadline; "best" the highest score."""
    from datetime import datetime
    attempts = [serve.Attempt("a", "2026-03-01 10:00:00.000000 UTC", state="graded", score=3.0),
                serve.Attempt("b", "2026-03-02 10:00:00.000000 UTC", state="graded", score=1.0),
                serve.Attempt("c", "2026-03-04 10:00:00.000000 UTC", state="graded", score=2.0),
                serve.Attempt("d", "2026-03-05 10:00:00.000000 UTC", state="refused")]
    due = datetime(2026, 3, 3)
    assert serve.counted(attempts, serve.Policy(counts="last"), due).folder == "b"
    assert serve.counted(attempts, serve.Policy(counts="last"), None).folder == "c"
    assert serve.counted(attempts, serve.Policy(counts="best"), due).folder == "a"
    assert serve.counted(attempts[3:], serve.Policy(), due) is None


def test_a_students_own_times_buy_no_attempt_and_no_time():
    """The wait between attempts and the attempt that counts by the due date go by when each folder
    was written, not by the times the student gives (up to an hour ahead of ours is allowed)."""
    from datetime import datetime, timezone

    def at(text):
        return datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=timezone.utc).timestamp()
    first = serve.Attempt("a", "2026-03-01 10:00:00.000000 UTC", state="graded", score=1.0,
                          written=at("2026-03-01 10:00"))
    second = serve.Attempt("b", "2026-03-01 10:59:00.000000 UTC", state="graded", score=4.0,
                           written=at("2026-03-01 10:01"))     # a minute later, named an hour later
    assert serve._apart(second, first) == 60
    unknown = dataclasses.replace(second, written=0.0)        # kept before the time was recorded
    assert serve._apart(unknown, first) == 59 * 60
    late = serve.Attempt("c", "2026-03-02 23:00:00.000000 UTC", state="graded", score=4.0,
                         written=at("2026-03-04 09:00"))      # handed in after the due date, named before
    due = datetime(2026, 3, 3)
    assert serve.counted([first, late], serve.Policy(counts="last"), due).folder == "a"
    assert serve.counted([first, dataclasses.replace(late, written=at("2026-03-02 23:05"))],
                         serve.Policy(counts="last"), due).folder == "c"   # within the slack: its own time


def test_an_attempt_keeps_when_its_folder_was_written_unless_the_course_trusts_student_times(tmp_path):
    """As it is admitted, an attempt keeps its folder's change time, by which it is spaced and
    counted; with c.CheckedCollect.trust_student_time (an exchange copied or restored, whose change
    times say nothing) it keeps none, and the student's own times stand, as in collect."""
    import io
    service = serve.Service(tmp_path, [ASSIGNMENT], out=io.StringIO())
    service.inbound = tmp_path / "inbound"
    service.journals = {ASSIGNMENT: serve.AttemptJournal(tmp_path, ASSIGNMENT)}
    for folder in ("one", "two"):
        (service.inbound / folder).mkdir(parents=True)
    _, mine = service._attempt(serve._Job("maria", ASSIGNMENT, "one", "2026-03-01 10:00:00.000000 UTC"))
    assert mine.written == os.lstat(service.inbound / "one").st_ctime > 0
    service.trust_student_time = True
    _, trusted = service._attempt(serve._Job("maria", ASSIGNMENT, "two", "2026-03-01 11:00:00.000000 UTC"))
    assert trusted.written == 0.0


def test_the_attempt_that_stands_is_recorded_with_its_own_time_not_the_newest_ones(tmp_path, monkeypatch):
    """maria hands in on time, then after the due date. The on-time attempt stands and is put back
    in the gradebook with its own time: submitted/ then holds the late one's timestamp.txt, which
    gave her on-time grade a late penalty."""
    import io
    from datetime import datetime, timezone

    from graders.engine import record_io
    from graders.engine.grading import SubmissionResult
    service = serve.Service(tmp_path, [ASSIGNMENT], out=io.StringIO())
    service.root = tmp_path
    service.journals = {ASSIGNMENT: serve.AttemptJournal(tmp_path, ASSIGNMENT)}
    service.runs = {ASSIGNMENT: SimpleNamespace(course=None, late=None)}
    on_time = serve.Attempt("one", "2026-03-01 10:00:00.000000 UTC", state="graded", score=4.0,
                            written=datetime(2026, 3, 1, 10, 0, 2, tzinfo=timezone.utc).timestamp())
    late = serve.Attempt("two", "2026-03-04 09:00:00.000000 UTC", state="graded", score=1.0,
                         written=datetime(2026, 3, 4, 9, 0, 3, tzinfo=timezone.utc).timestamp())
    result = SubmissionResult(student="maria", key="k", notebooks=[])
    path = service.journals[ASSIGNMENT].result_path("maria", "one")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(result.to_json()))
    recorded = []
    monkeypatch.setattr(record_io, "record", lambda gb, course, result, late, **kw: recorded.append(kw))
    monkeypatch.setattr(record_io, "write_autograded", lambda course, result: None)
    stands = serve.counted([on_time, late], serve.Policy(counts="last"), datetime(2026, 3, 3))
    assert stands is on_time
    service._restore(None, serve._Job("maria", ASSIGNMENT, "two", late.timestamp), stands)
    assert recorded == [{"handed_in": (datetime(2026, 3, 1, 10, tzinfo=timezone.utc), "")}]
    backdated = dataclasses.replace(on_time, written=late.written)       # named on time, written late
    service._restore(None, serve._Job("maria", ASSIGNMENT, "two", late.timestamp), backdated)
    assert recorded[-1] == {"handed_in": (datetime(2026, 3, 4, 9, 0, 3, tzinfo=timezone.utc), "")}


def test_a_submission_removed_before_it_is_taken_or_a_failure_to_admit_it_stops_nothing(tmp_path, monkeypatch):
    """A folder its writer removes between the service's listing and its look is said and passed
    over (one queued before a restart is marked so); any other failure to admit one submission is
    that student's NOT GRADED line, and the next student is served."""
    import io
    from graders.engine import exchange
    service = serve.Service(tmp_path, [ASSIGNMENT], out=io.StringIO())
    service.root, service.inbound, service.enrolled = tmp_path, tmp_path / "inbound", None
    service.coursedir = SimpleNamespace(db_url="")
    service.journals = {ASSIGNMENT: serve.AttemptJournal(tmp_path, ASSIGNMENT)}
    service.journals[ASSIGNMENT].save("maria", [serve.Attempt("gone", "2026-03-01 10:00:00.000000 UTC")])
    assert service._admit(serve._Job("maria", ASSIGNMENT, "gone", "2026-03-01 10:00:00.000000 UTC")) is True
    assert service.journals[ASSIGNMENT].load("maria")[0].why == serve.GONE
    assert f"maria {ASSIGNMENT}: not graded ({serve.GONE})" in service.out.getvalue()
    # one never queued (a forger's, naming ann) leaves ann's journal as it was: none
    assert service._admit(serve._Job("ann", ASSIGNMENT, "gone2", "2026-03-01 10:00:00.000000 UTC")) is True
    assert service.journals[ASSIGNMENT].students() == ["maria"]
    with pytest.raises(RuntimeError, match=serve.GONE):
        serve.collect_one(None, tmp_path, ASSIGNMENT, "maria", "gone+folder")

    def broken(folder, claimed, enrolled=None):
        if claimed in ("maria", "ann"):
            raise PermissionError(13, "Permission denied")
        return "", ""
    monkeypatch.setattr(exchange, "admission", broken)
    taken = []
    monkeypatch.setattr(service, "_attempt", lambda job: ([], serve.Attempt(job.folder, job.timestamp)))
    monkeypatch.setattr(serve, "collect_one", lambda *args: taken.append(args[3]) or "")
    service.runs = {ASSIGNMENT: SimpleNamespace(course=None)}
    service.bases, service.limits, service.policy, service.config = {ASSIGNMENT: None}, None, serve.Policy(), None
    monkeypatch.setattr(serve, "submission_key", lambda *args: "key")
    monkeypatch.setattr(serve.grading, "task_seconds", lambda *args: 1.0)
    pool = SimpleNamespace(has_room=lambda: True, start=lambda *args: [])
    queues = {"maria": serve.deque([serve._Job("maria", ASSIGNMENT, "m", "t")]),
              "nico": serve.deque([serve._Job("nico", ASSIGNMENT, "n", "t")]),
              "ann": serve.deque([serve._Job("ann", ASSIGNMENT, "a", "t")])}
    service._dispatch(serve.OrderedDict(queues), {}, pool, SimpleNamespace(socket_path=""))
    assert taken == ["nico"], service.out.getvalue()
    assert "ann" not in service.journals[ASSIGNMENT].students()      # no journal made for her failure
    assert f"maria {ASSIGNMENT}: NOT GRADED (could not be admitted: [Errno 13] Permission denied)" \
        in service.out.getvalue()


def test_what_the_service_says_is_one_line_whatever_a_student_named_their_folder():
    import io
    service = serve.Service(Path("."), [ASSIGNMENT], out=io.StringIO())
    service.say(f"mallory\nalice {ASSIGNMENT}: 4/4\x1b[8m in 1.0 s")
    assert service.out.getvalue() == f"mallory\\x0aalice {ASSIGNMENT}: 4/4\\x1b[8m in 1.0 s\n"


def test_instant_feedback_names_the_check_but_no_direction():
    """Instant lines keep the failed check and the declared mistake; batch lines keep their hints."""
    from graders.engine import grading
    from graders import problems
    problem = problems.get(NB)
    params = problem.variants["A"]
    wrong = problem.mistakes[0].wrong(params)
    right = problem.solve(params)
    keys = list(problem.cells["check_numbers"])
    answers = {k: wrong.get(k, right[k]) for k in keys}
    answers[keys[-1]] = right[keys[-1]] * 1.5
    batch = grading.grade_bounded(problem, params, answers, keys)
    instant = grading.grade_bounded(problem, params, answers, keys, instant=True)
    assert batch["score"] == instant["score"] < problem.points(keys)
    text = "\n".join(instant["feedback"])
    assert "too large" not in text and "too small" not in text
    assert any("too large" in line or "too small" in line for line in batch["feedback"])
    assert json.dumps(instant["checks"]) == json.dumps(batch["checks"])


def test_a_refusal_that_cannot_be_released_is_said_and_kept(tmp_path, monkeypatch):
    """Past the limit, if the refusal page cannot reach the student, the service says so and the
    attempt's history keeps why: never a silent refusal."""
    import io
    service = serve.Service(tmp_path, [ASSIGNMENT], out=io.StringIO())
    service.root, service.config = tmp_path, None
    service.policy = serve.Policy(attempts=1)
    service.inbound = tmp_path / "inbound"
    service.coursedir = type("CourseDirectory", (), {"db_url": ""})()
    service.enrolled = None                             # a course on one machine: no roster to ask
    (service.inbound / "two").mkdir(parents=True)       # the instructor's own: not a forgery
    service.journals = {ASSIGNMENT: serve.AttemptJournal(tmp_path, ASSIGNMENT)}
    service.runs = {ASSIGNMENT: SimpleNamespace(course=SimpleNamespace(notebooks={NB: None}))}
    service.journals[ASSIGNMENT].save("maria", [serve.Attempt("one", "2026-03-01 10:00:00.000000 UTC",
                                                              state="graded", score=1.0)])

    def broken(*args):
        raise OSError("the exchange's feedback folder is read-only")
    monkeypatch.setattr(serve, "release_refusal", broken)
    job = serve._Job("maria", ASSIGNMENT, "two", "2026-03-01 11:00:00.000000 UTC")
    assert service._admit(job) is True
    refused = service.journals[ASSIGNMENT].load("maria")[-1]
    assert refused.state == "refused" and "was not told" in refused.why and "read-only" in refused.why
    assert "the refusal could not be released" in service.out.getvalue()


def test_a_refusal_writes_pages_for_the_assignment_not_for_the_students_files(tmp_path):
    """A refused submission holding 20,000 files named `*.ipynb`: the refusal writes one page for
    each of the assignment's notebooks, never one for each file the student chose to put there."""
    from traitlets.config import Config
    from nbgrader.utils import notebook_hash
    config = Config()
    config.Exchange.root = str(tmp_path / "exchange")
    config.CourseDirectory.course_id = COURSE_ID
    folder = "maria+worked+2026-03-01 11:00:00.000000 UTC+x"
    source = tmp_path / "exchange" / COURSE_ID / "inbound" / folder
    source.mkdir(parents=True)
    (source / "submission_secret.txt").write_text("s" * 32)
    for i in range(20_000):
        (source / f"junk{i}.ipynb").touch()
    (source / f"{NB}.ipynb").touch()
    serve.release_refusal(config, tmp_path, ASSIGNMENT, folder, "all 2 graded attempts are used", {NB: None})
    pages = os.listdir(tmp_path / "exchange" / COURSE_ID / "feedback")
    assert pages == [f"{notebook_hash(secret='s' * 32, notebook_id=NB)}.html"]
    assert "all 2 graded attempts" in (tmp_path / "exchange" / COURSE_ID / "feedback" / pages[0]).read_text()
