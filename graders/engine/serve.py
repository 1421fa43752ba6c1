"""`chapter serve ASSIGNMENT [...]`: grade each submission as it lands in nbgrader's exchange.

A long-running instructor-side process. It watches the exchange's inbound
folder (watchfiles, or polling with `poll=True` for network filesystems),
and for each new, complete submission of an assignment it serves:

1. applies the attempt policy (`c.ChapterServe.*` in nbgrader_config.py): a
   submission past the number of graded attempts, or sooner than the minimum
   interval after the last graded one, is not graded and gets feedback saying so;
2. collects it as the course's `nbgrader collect` does, one student at a time,
   restricted to that folder: `exchange.CheckedCollect`, nbgrader's collect with the
   course's guards (whose folder it is, what may be copied, who is enrolled);
3. grades it on the warm engine: one zygote for the life of the service, the
   same sandbox, limits and trusted grading as `chapter autograde`, with
   instant feedback (no direction, length or value);
4. records it in the gradebook (SQLite or PostgreSQL), keeping the attempt that
   counts (`counts = "last"` before the deadline, or `"best"`) and nbgrader's
   late penalties;
5. generates and releases that student's feedback with nbgrader's own apps, so
   *Fetch Feedback* in the Assignment List shows it seconds later.

Every attempt is journaled under `.chapter/serve/<assignment>/`, written before
and after grading: a service restarted after a crash or a kill picks up every
submission that arrived meanwhile and grades none twice. Students are served
round-robin, so one student's burst of resubmissions never delays another's first.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import time
from collections import OrderedDict, deque
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from graders.engine import course_dir
from graders.engine import exchange
from graders.engine import feedback
from graders.engine.html_filters import bounded
from graders.engine.times import folder_written, read_small, trusted_moment
from graders.engine import grading
from graders.engine.journal import Journal, fingerprint, student_file, submission_key
from graders.engine import record_io
from graders.engine import shared
from graders.engine import signals
from graders.engine import summary
from graders.engine import task
from graders.unicode import shown_name
from graders.engine.run import GradingRun, late_penalties
from graders.engine import autograde as ag

SERVE_JOURNAL = Path(".chapter") / "serve"
COUNTS = ("last", "best")


# ============================================================================ policy
@dataclass
class Policy:
    """What `c.ChapterServe` says in nbgrader_config.py."""
    attempts: int | None = None      # graded attempts per student and assignment (None: no limit)
    min_interval: float = 0.0        # seconds between graded attempts
    counts: str = "last"             # "last": the last before the deadline; "best": the highest score

    @classmethod
    def from_config(cls, config) -> "Policy":
        section = config.get("ChapterServe", {}) if config is not None else {}
        policy = cls()
        if section.get("attempts") is not None:
            policy.attempts = int(section["attempts"])
        if section.get("min_interval") is not None:
            policy.min_interval = float(section["min_interval"])
        if section.get("counts") is not None:
            policy.counts = str(section["counts"])
        if policy.counts not in COUNTS:
            raise SystemExit(f"c.ChapterServe.counts must be one of {', '.join(COUNTS)}, not {policy.counts!r}")
        if policy.attempts is not None and policy.attempts < 1:
            raise SystemExit("c.ChapterServe.attempts must be at least 1 (or None for no limit)")
        return policy


# ============================================================================ the attempt journal
@dataclass
class Attempt:
    folder: str                      # the inbound folder's name: unique per submission
    timestamp: str                   # when the student submitted (nbgrader's timestamp)
    state: str = "queued"            # grading | graded | refused | failed
    arrived: float = 0.0
    finished: float = 0.0
    score: float | None = None
    max_score: float | None = None
    why: str = ""
    written: float = 0.0             # times.folder_written when admitted (0: unknown, or trust_student_time)


class AttemptJournal:
    """One JSON file per (assignment, student): the attempts, in arrival order; written atomically."""

    def __init__(self, root: Path, assignment: str):
        self.dir = Path(root) / SERVE_JOURNAL / assignment
        self.assignment = assignment

    def _path(self, student: str) -> Path:
        return student_file(self.dir, student)

    def result_path(self, student: str, folder: str) -> Path:
        # the folder's name is a student's choice, in whatever bytes the file system holds
        return self.dir / "results" / f"{hashlib.sha256(os.fsencode(student + '/' + folder)).hexdigest()[:24]}.json"

    def load(self, student: str) -> list[Attempt]:
        try:
            data = json.loads(self._path(student).read_text())
        except (OSError, ValueError):
            return []
        return [Attempt(**a) for a in data.get("attempts", [])] if data.get("student") == student else []

    def save(self, student: str, attempts: list[Attempt]) -> None:
        data = json.dumps({"student": student, "assignment": self.assignment,
                           "attempts": [asdict(a) for a in attempts]})
        shared.atomic_write(self._path(student), data.encode())

    def students(self) -> list[str]:
        found = []
        for path in sorted(self.dir.glob("*.json")):
            with contextlib.suppress(OSError, ValueError):
                found.append(json.loads(path.read_text())["student"])
        return found


def history(root: Path, assignment: str) -> list[tuple[str, Attempt]]:
    """Every attempt of every student, for the instructor (`chapter serve --history`)."""
    journal = AttemptJournal(root, assignment)
    return [(student, a) for student in journal.students() for a in journal.load(student)]


def counted(attempts: list[Attempt], policy: Policy, duedate) -> Attempt | None:
    """The graded attempt whose grade stands."""
    graded = [a for a in attempts if a.state == "graded"]
    if not graded:
        return None
    if policy.counts == "best":
        return max(graded, key=lambda a: (a.score or 0.0, a.timestamp))
    if duedate is not None:
        on_time = [a for a in graded if (moment := _handed_in(a)) is not None and moment <= duedate]
        if on_time:
            return on_time[-1]
    return graded[-1]


def _parse_time(text: str):
    """The student's time as nbgrader keeps it (UTC, no zone), or None when it is unusable."""
    moment, _ = exchange.submission_time(text)
    return None if moment is None else exchange.naive_utc(moment)


def _handed_in(attempt: Attempt):
    """The attempt's time as its grade is recorded (UTC, no zone), or None when it has none."""
    moment, _ = handed_in_at(attempt)
    return None if moment is None else exchange.naive_utc(moment)


def handed_in_at(attempt: Attempt):
    """(when the attempt was handed in, or None; why not): the student's time, or when its folder was
    last written if that is later by more than times.WRITING_SLACK (as collect retimes it)."""
    moment, why = exchange.submission_time(attempt.timestamp)
    return (None if moment is None else trusted_moment(moment, attempt.written)), why


# ============================================================================ the exchange
def inbound_path(coursedir, exchange_root: str) -> Path:
    return Path(exchange_root) / coursedir.course_id / "inbound"


def complete_submissions(inbound: Path, assignments: set[str],
                         known: set = frozenset()) -> list[tuple[str, str, str, str]]:
    """(folder, student, assignment, timestamp) of every submission nbgrader has finished writing,
    but those whose (assignment, folder) is `known`: looked at once, not on every pass of the loop.

    `nbgrader submit` copies the files, then writes timestamp.txt and, last,
    submission_secret.txt: a folder without both is still being written.
    """
    found = []
    try:        # looked at through its descriptor: no path built per folder (anyone may make thousands)
        handle = os.open(inbound, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return found
    try:
        with os.scandir(handle) as listing:
            entries = sorted(listing, key=lambda e: e.name)
        for entry in entries:
            parts = entry.name.rsplit("+", 3)
            if len(parts) < 3 or not entry.is_dir(follow_symlinks=False):
                continue
            student, assignment, timestamp = parts[0], parts[1], parts[2]
            if assignment not in assignments or not student or (assignment, entry.name) in known:
                continue
            try:
                if os.stat(entry.name + "/submission_secret.txt", dir_fd=handle).st_size < 16:
                    continue
                os.stat(entry.name + "/timestamp.txt", dir_fd=handle)
            except OSError:
                continue
            found.append((entry.name, student, assignment, timestamp))
    except OSError:
        pass
    finally:
        os.close(handle)
    return found


def collect_one(config, root: Path, assignment: str, student: str, folder: str) -> str:
    """Copy one inbound submission to submitted/<student>/<assignment>/, as the course's collect
    does (exchange.CheckedCollect: its owner checked, no link followed); what the instructor is
    told about its time, or ""."""
    from nbgrader.coursedir import CourseDirectory
    coursedir = CourseDirectory(config=config, root=str(root))
    coursedir.assignment_id, coursedir.student_id = assignment, student
    app = exchange.CheckedCollect(coursedir=coursedir, config=config, log=shared.silent_log)
    app.inbound_path = str(inbound_path(coursedir, app.root))
    records = app.records(folders=[folder])
    if not records or records[0]["username"] != student:
        why = [e.why for e in exchange.read_set_aside(root, assignment) if e.folder == folder]
        if not why and not os.path.lexists(os.path.join(app.inbound_path, folder)):
            raise RuntimeError(GONE)
        raise RuntimeError("the submission was set aside: " + "; ".join(why))
    dest = coursedir.format_path(coursedir.submitted_directory, student, assignment)
    if os.path.isdir(dest):
        shutil.rmtree(dest)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    exchange.close_folder(Path(root) / coursedir.submitted_directory)
    return app.copy_one(os.path.join(app.inbound_path, folder), dest, records[0]["owner"])


def release_refusal(config, root: Path, assignment: str, folder: str, why: str, notebooks) -> None:
    """Feedback for a submission that was not graded, where *Fetch Feedback* looks for it: one
    page for each of the assignment's `notebooks` (names without `.ipynb`), as graded feedback
    has. The files the student put in the folder choose nothing, however many they are."""
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange.default.release_feedback import ExchangeReleaseFeedback
    from nbgrader.utils import notebook_hash
    coursedir = CourseDirectory(config=config, root=str(root))
    coursedir.assignment_id = assignment
    app = ExchangeReleaseFeedback(coursedir=coursedir, config=config, log=shared.silent_log)
    source = Path(app.root) / coursedir.course_id / "inbound" / folder
    secret = read_small(source / "submission_secret.txt", 4096, strip=False)
    if secret is None:
        raise ValueError("the submission's secret is not a regular file")
    page = feedback.refusal_page(assignment, why)
    with exchange.as_owner_of(exchange_course(config, coursedir)):   # written as the exchange's owner
        app.init_dest()                   # the exchange's feedback folder, made as nbgrader makes it
        for notebook in sorted(notebooks):
            target = Path(app.dest_path) / f"{notebook_hash(secret=secret, notebook_id=notebook)}.html"
            shared.atomic_write(target, page.encode(), 0o644)


# ============================================================================ the service
GONE = "the submission was removed from the exchange before it was collected"
LOOK_SHARE = 0.2     # at most this share of the service's time goes to looking at inbound
LOOK_GAP = 0.2       # seconds between two looks while it grades (a worker frees up in seconds)


@dataclass
class _Job:
    student: str
    assignment: str
    folder: str
    timestamp: str


@dataclass
class Service:
    """The grading service; `run()` until `stop()` (or SIGTERM/SIGINT from the command line)."""
    root: Path
    assignments: list
    workers: int | None = None
    poll: bool = False
    isolate: bool = True
    out: object = None
    # (assignment, student) -> that student's own due date or None, with refresh() -> problem or
    # None: the course's deadlines.toml (graders.course.deadlines.OwnDueDates). Without it, or
    # for an assignment it gives no date, the gradebook's due date counts.
    own_due: object = None
    _stopping: bool = field(default=False, init=False)
    _due_problem: str | None = field(default=None, init=False)
    # c.CheckedCollect.trust_student_time: the exchange's change times say nothing (it was copied
    # or restored), so attempts go by the times the students give, as collect's do
    trust_student_time: bool = field(default=False, init=False)

    def stop(self) -> None:
        self._stopping = True

    def say(self, text: str) -> None:
        if self.out is not None:
            print(shown_name(text), file=self.out, flush=True)    # no student's name starts a line or hides one

    # -------------------------------------------------------------- set-up
    def _prepare(self):
        from nbgrader.coursedir import CourseDirectory
        self.root = Path(self.root).resolve()
        # the feedback's pages in linear time, whatever the course's own config says
        self.config = bounded(course_dir.load_config(self.root))
        self.policy = Policy.from_config(self.config)
        self.coursedir = CourseDirectory(config=self.config, root=str(self.root))
        exchange_root = self.config.Exchange.get("root", "/srv/nbgrader/exchange")
        self.inbound = inbound_path(self.coursedir, exchange_root)
        exchange.close_course(self.root, self.coursedir.db_url)
        self.enrolled = exchange.enrolment(self.config, self.coursedir.course_id)
        self.trust_student_time = bool(self.config.get("CheckedCollect", {}).get("trust_student_time", False))
        self.limits = course_dir.limits_from(self.config)
        late = late_penalties(self.config)
        self.runs = {}       # assignment -> its GradingRun, which the service's workers inherit
        for assignment in self.assignments:
            course = course_dir.load_course(self.root, assignment, self.config)
            course_dir.check_data_files(course, self.limits)
            course = replace(course, instant=True)
            self.runs[assignment] = GradingRun(course, self.limits, Journal(course), summary.Report(assignment),
                                               late=late, isolate=self.isolate)
        self.bases = {a: fingerprint(r.course, self.limits) for a, r in self.runs.items()}
        self.journals = {a: AttemptJournal(self.root, a) for a in self.assignments}
        self.duedates = {}
        from nbgrader.api import Gradebook
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            for assignment in self.assignments:
                self.duedates[assignment] = gb.find_assignment(assignment).duedate

    def _known(self) -> set[tuple[str, str]]:
        """(assignment, folder) of every attempt the journal holds, whatever its state, and of every
        submission set aside."""
        known = set()
        for assignment, journal in self.journals.items():
            for student in journal.students():
                known |= {(assignment, a.folder) for a in journal.load(student)}
            known |= {(assignment, e.folder) for e in exchange.read_set_aside(self.root, assignment)}
        return known

    # -------------------------------------------------------------- the loop
    def run(self) -> None:
        from nbgrader.api import Gradebook

        from graders import problems
        from graders.engine.local_pool import LocalPool
        from graders.sandbox.zygote import Zygote
        self._prepare()
        zygote = Zygote(isolate=self.isolate, secrets=[self.root]).start()
        problems.ids()      # imported once, while the zygote warms up: every worker inherits them
        try:
            zygote.wait_ready()
            for warning in summary.isolation_warnings(zygote):
                self.say(f"warning: {warning}")
            self.say(f"chapter serve: grading {', '.join(self.assignments)} as submissions arrive in "
                     f"{self.inbound} (stop with Ctrl-C or SIGTERM)")
            queues: OrderedDict[str, deque] = OrderedDict()   # whose turn (the writer) -> waiting jobs, in order
            known = self._known()
            self._requeue_unfinished(queues)
            busy: dict[str, _Job] = {}
            close = [zygote.process.stdin.fileno(), zygote.process.stdout.fileno()]
            pool = LocalPool(self.workers or ag.default_workers(), _serve_task,
                             init=functools.partial(task.init_worker, close, runs=self.runs, config=self.config,
                                                    root=self.root))
            next_look = 0.0
            with pool, Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb, \
                    self._changes() as changes:
                while not self._stopping:
                    if time.monotonic() >= next_look:
                        next_look = self._look(known, queues, busy)
                    self._dispatch(queues, busy, pool, zygote)
                    for event in pool.wait(timeout=0.05 if busy else 0):
                        self._finish(gb, event, busy)
                    if not busy and not any(queues.values()):
                        self._wait_until(next_look)
                        next(changes)           # sleep until the inbound folder changes (or a second)
        finally:
            zygote.close()

    def _look(self, known, queues, busy) -> float:
        """Queue the complete submissions inbound holds that are not `known`; return when to look
        again. Inbound is every student's to fill: folders that never become complete are looked
        at again on each look, so looking is kept to a share of the service's time (LOOK_SHARE),
        and while it grades, to one look in LOOK_GAP seconds."""
        started = time.monotonic()
        for folder, student, assignment, timestamp in complete_submissions(
                self.inbound, set(self.assignments), known):
            known.add((assignment, folder))
            # in the turn of the login that wrote it: a flood of forgeries naming
            # another student waits behind the forger's own work, not the student's
            turn = exchange.submitter(self.inbound / folder, student)
            queues.setdefault(turn, deque()).append(_Job(student, assignment, folder, timestamp))
        now = time.monotonic()
        return now + max(LOOK_GAP if busy else 0.0, (now - started) * (1 - LOOK_SHARE) / LOOK_SHARE)

    def _wait_until(self, moment: float) -> None:
        """Sleep until time.monotonic() reaches `moment`, or the service is stopped (within 0.5 s)."""
        while not self._stopping and time.monotonic() < moment:
            time.sleep(min(0.5, max(0.0, moment - time.monotonic())))

    @contextlib.contextmanager
    def _changes(self):
        """An iterator that returns when inbound changes, or after at most a second.

        Inbound is every student's to write: a name the watcher cannot report (bytes that are not
        UTF-8, which watchfiles refuses with an error) must not stop the service, so the watcher's
        failure turns it to polling inbound, and says so once."""
        def polling(seconds):
            while True:
                time.sleep(seconds)
                yield

        def ticks():
            if self.poll or not self.inbound.is_dir():
                yield from polling(0.25 if self.poll else 1.0)
            import threading

            import watchfiles
            stop = threading.Event()
            try:
                for _ in watchfiles.watch(self.inbound, stop_event=stop, rust_timeout=1000,
                                          yield_on_timeout=True, debounce=50, step=20, recursive=True):
                    yield
            except Exception as exc:  # noqa: BLE001 - any failure of the watcher: poll instead
                self.say(f"watching {self.inbound} stopped ({type(exc).__name__}: {str(exc)[:200]!r}); "
                         "polling it every 0.25 s instead")
            finally:
                stop.set()
            yield from polling(0.25)
        gen = ticks()
        try:
            yield gen
        finally:
            gen.close()

    def _requeue_unfinished(self, queues) -> None:
        """Attempts a killed service left queued or half-graded are done again, once."""
        for assignment, journal in self.journals.items():
            for student in journal.students():
                for attempt in journal.load(student):
                    if attempt.state in ("queued", "grading"):
                        queues.setdefault(student, deque()).append(
                            _Job(student, assignment, attempt.folder, attempt.timestamp))

    def _dispatch(self, queues, busy, pool, zygote) -> None:
        """Start the next job of each waiting student, in turn: one job per student at a time."""
        for student in list(queues):
            if not pool.has_room():
                return
            if student in busy or not queues[student]:
                continue
            job = queues[student].popleft()
            queues.move_to_end(student)       # round-robin: this student goes to the back
            if not queues[student]:
                del queues[student]
            try:
                refused = self._admit(job)
            except Exception as exc:  # noqa: BLE001 - one student's submission never stops the service
                self._set(job, state="failed", why=f"could not be admitted: {exc}"[:300])
                self.say(f"{job.student} {job.assignment}: NOT GRADED (could not be admitted: {str(exc)[:200]})")
                continue
            if refused:
                continue
            try:
                retimed = collect_one(self.config, self.root, job.assignment, job.student, job.folder)
            except Exception as exc:  # noqa: BLE001 - a broken submission is that student's alone
                self._set(job, state="failed", why=f"could not be collected: {exc}"[:300])
                self.say(f"{job.student} {job.assignment}: could not be collected ({exc})")
                continue
            if retimed:
                self.say(retimed)
            course = self.runs[job.assignment].course
            key = submission_key(course, job.student, self.bases[job.assignment])
            busy[job.student] = job
            seconds = grading.task_seconds(course, self.limits) + 120.0   # and the feedback
            for event in pool.start(job.student, (job.assignment, job.student, zygote.socket_path, key),
                                    seconds):
                self._finish(None, event, busy)

    def _admit(self, job: _Job) -> bool:
        """Apply the attempt policy; True when the submission is refused (and told so)."""
        journal = self.journals[job.assignment]
        try:
            forged, outsider = exchange.admission(self.inbound / job.folder, job.student, self.enrolled)
        except FileNotFoundError:       # its writer removed it meanwhile: nothing to take or set aside
            self._set(job, state="failed", why=GONE, finished=time.time())   # if queued before a restart
            self.say(f"{job.student} {job.assignment}: not graded ({GONE})")
            self._give_back()
            return True
        except exchange.EnrolmentUnknown as exc:   # nothing is taken until the hub can say
            attempts, mine = self._attempt(job)
            mine.state, mine.why, mine.finished = "failed", f"enrolment unknown: {exc}"[:300], time.time()
            journal.save(job.student, attempts)
            self.say(f"{job.student} {job.assignment}: NOT GRADED (cannot tell who is enrolled: {exc})")
            self._give_back()
            return True
        if forged or outsider:
            # kept in the set-aside ledger, a line each, and never in the journal of the student it
            # names: a flood of forgeries naming alice neither rewrites her history nor grows it
            if exchange.set_aside(self.root, job.assignment, job.folder, job.student, forged or outsider):
                self.say(f"SET ASIDE {job.folder}: {forged or outsider}; not collected, graded or "
                         f"served as {job.student}")
            why = feedback.forged(job.student) if forged else feedback.not_enrolled(self.coursedir.course_id)
            self._tell_refused(job, why)
            self._give_back()
            return True
        attempts, mine = self._attempt(job)
        if mine.state == "grading":      # a restart: it was admitted before
            journal.save(job.student, attempts)
            return False
        graded = [a for a in attempts if a.state in ("graded", "grading") and a is not mine]
        why = ""
        if self.policy.attempts is not None and len(graded) >= self.policy.attempts:
            why = feedback.attempts_used(self.policy.attempts, job.assignment)
        elif graded and self.policy.min_interval > 0:
            wait = self.policy.min_interval - _apart(mine, graded[-1])
            if wait > 0:
                why = feedback.too_soon(self.policy.min_interval, wait)
        if why:
            mine.state, mine.why, mine.finished = "refused", why, time.time()
            journal.save(job.student, attempts)
            untold = self._tell_refused(job, why)
            if untold:              # kept in the history
                mine.why = f"{why} {untold}"[:600]
                journal.save(job.student, attempts)
            self._give_back()   # the ledger and journal stay the instructor's
            return True
        mine.state = "grading"
        journal.save(job.student, attempts)
        return False

    def _attempt(self, job: _Job) -> tuple[list[Attempt], Attempt]:
        """The student's attempts, with this job's (new when the journal does not hold it yet)."""
        attempts = self.journals[job.assignment].load(job.student)
        mine = next((a for a in attempts if a.folder == job.folder), None)
        if mine is None:
            written = 0.0 if self.trust_student_time else folder_written(self.inbound / job.folder)
            mine = Attempt(job.folder, job.timestamp, arrived=time.time(), written=written)
            attempts.append(mine)
        return attempts, mine

    def _tell_refused(self, job: _Job, why: str) -> str:
        """Say it, and release the refusal where its writer's Fetch Feedback looks; "" once
        released, else why the student was not told."""
        self.say(f"{job.student} {job.assignment}: not graded ({why.split(',')[0]})")
        try:
            release_refusal(self.config, self.root, job.assignment, job.folder, why,
                            self.runs[job.assignment].course.notebooks)
        except Exception as exc:  # noqa: BLE001 - said; the service goes on
            self.say(f"{job.student} {job.assignment}: the refusal could not be released ({exc})")
            return f"The student was not told: {exc}"
        return ""

    def _give_back(self) -> None:
        """What this service wrote in the course stays the instructor's (closed, and given back to
        the course folder's owner); its releases in the exchange are made as the exchange's owner."""
        exchange.close_course(self.root, self.coursedir.db_url)

    def _set(self, job: _Job, **changes) -> list[Attempt]:
        """Change the job's attempt in its student's journal (written only when it holds the attempt)."""
        journal = self.journals[job.assignment]
        attempts = journal.load(job.student)
        mine = next((a for a in attempts if a.folder == job.folder), None)
        if mine is not None:
            for name, value in changes.items():
                setattr(mine, name, value)
            journal.save(job.student, attempts)
        return attempts

    def _finish(self, gb, event, busy) -> None:
        student, kind, value, took = event
        job = busy.pop(student, None)
        if job is None:
            return
        if kind == "ok":
            kind, value = value
        if kind != "ok":
            self._set(job, state="failed", why=str(value)[:300], finished=time.time())
            self._give_back()
            self.say(f"{student} {job.assignment}: NOT GRADED ({value})")
            return
        result, feedback_error = value
        score = sum(nb.score for nb in result.notebooks)
        most = sum(nb.max_score for nb in result.notebooks)
        journal = self.journals[job.assignment]
        shared.atomic_write(journal.result_path(student, job.folder), json.dumps(result.to_json()).encode())
        attempts = self._set(job, state="graded", score=score, max_score=most, finished=time.time(),
                             why=feedback_error or "")
        stands = counted(attempts, self.policy, self._due(job.assignment, student))
        if stands is not None and stands.folder != job.folder:
            self._restore(gb, job, stands)
        self._give_back()   # what it wrote stays the instructor's
        self.say(f"{student} {job.assignment}: {score:g}/{most:g} in {took:.1f} s"
                 + (f" (the attempt of {stands.timestamp} stands)" if stands and stands.folder != job.folder else "")
                 + (f"; feedback failed: {feedback_error}" if feedback_error else ""))

    def _due(self, assignment: str, student: str):
        """The student's own due date: deadlines.toml's (extension included), else the gradebook's."""
        if self.own_due is not None:
            problem = self.own_due.refresh()
            if problem != self._due_problem and problem:
                self.say(f"deadlines.toml NOT APPLIED: {problem}; attempts count by its last good version "
                         "until it is fixed")
            self._due_problem = problem
            own = self.own_due(assignment, student)
            if own is not None:
                return own
        return self.duedates[assignment]

    def _restore(self, gb, job: _Job, stands: Attempt) -> None:
        """Put the attempt that counts back in the gradebook and autograded/ (the feedback is released)."""
        path = self.journals[job.assignment].result_path(job.student, stands.folder)
        try:
            result = grading.SubmissionResult.from_json(json.loads(path.read_text()))
        except (OSError, ValueError):
            return
        run = self.runs[job.assignment]
        # its own time, by which it was counted: submitted/ now holds the newest attempt's timestamp.txt
        with signals.uninterrupted(), recording(self.root):
            record_io.record(gb, run.course, result, run.late, handed_in=handed_in_at(stands))
            record_io.write_autograded(run.course, result)


def _apart(later: Attempt, earlier: Attempt) -> float:
    """Seconds between two attempts: by when their folders were written (which no student can set
    back or ahead; a student's own times, up to an hour ahead, would buy attempts); for attempts
    kept before that was recorded, by the students' times, or by their arrival when either time is
    unusable."""
    if later.written and earlier.written:
        return later.written - earlier.written
    a, b = _parse_time(later.timestamp), _parse_time(earlier.timestamp)
    if a is None or b is None:
        return later.arrived - earlier.arrived
    return (a - b).total_seconds()


# ============================================================================ in a worker
def _serve_task(request):
    """Grade one submission, record it, and generate and release its feedback (in a pool worker
    started by `task.init_worker` with the service's runs)."""
    assignment, student, socket_path, key = request
    run = replace(task.worker("runs")[assignment], report=summary.Report(assignment))   # a report of its own
    grade = None
    entry = run.journal.get(student, key)
    if entry is not None and entry["state"] == "recorded":   # graded before a restart: not again
        grade = functools.partial(_graded_before, grading.SubmissionResult.from_json(entry["result"]))
    return task.grade_one(run.course, student, socket_path, run.limits, key, grade=grade,
                          then=functools.partial(_keep_and_release, run))


def _graded_before(result, *_):
    return result


def _keep_and_release(run: GradingRun, result) -> tuple:
    """Record one graded submission, then generate and release its feedback: ("ok", (result, why
    the feedback failed or "")), or ("failed", why it could not be recorded)."""
    from nbgrader.api import Gradebook
    course, student = run.course, result.student
    config, root = task.worker("config"), task.worker("root")
    with recording(root), Gradebook(course.db_url, course.course_id) as gb:
        run.accept(gb, result)
    if student in run.report.failed:
        return "failed", run.report.failed[student]
    return "ok", (result, release_feedback(config, root, course.assignment, student))


@contextlib.contextmanager
def recording(root: Path):
    """One writer of the gradebook and the feedback at a time, among the service's processes."""
    import fcntl
    path = Path(root) / SERVE_JOURNAL / "record.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def release_feedback(config, root: Path, assignment: str, student: str) -> str:
    """nbgrader's generate_feedback and release_feedback for one student; '' or what went wrong."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    coursedir = CourseDirectory(config=config, root=str(root))
    api = NbGraderAPI(coursedir=coursedir, config=config)

    def release():
        exchange.close_course(root, coursedir.db_url)        # readable by the exchange's owner
        with exchange.as_owner_of(exchange_course(config, coursedir)):
            return api.release_feedback(assignment, student_id=student)
    for outcome in (lambda: api.generate_feedback(assignment, student_id=student, force=True), release):
        outcome = outcome()
        if not outcome.get("success"):
            return (outcome.get("error") or outcome.get("log") or "failed").strip().splitlines()[-1][:300]
    return ""


def exchange_course(config, coursedir) -> Path:
    """The course's folder in the exchange (its owner released the assignment)."""
    return inbound_path(coursedir, config.Exchange.get("root", "/srv/nbgrader/exchange")).parent
