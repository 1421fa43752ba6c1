"""The exchange as the instructor's side reads it: every folder a student puts there is hostile input.

Four guards, used by plain `nbgrader collect` (through `CheckedCollect`, named in the
course's `nbgrader_config.py` as `c.ExchangeFactory.collect`), by `chapter serve` and by
`chapter autograde`:

- **Identity.** `nbgrader submit --student=alice` lets any login file a submission under
  any name. The inbound folder is created by the submitting process, so its owner is the
  login that submitted it, and a student cannot give a folder to somebody else. A
  submission is accepted as `alice`'s only when the login `alice` owns it, or when the
  instructor's own account does (a course on one machine, where every file is the
  instructor's). Anything else is set aside: never collected, graded or served as the
  student it names, and written to the course's set-aside ledger, which `chapter
  autograde`, `chapter serve` and `chapter report` show the instructor.
- **Copying.** The copy follows no link and reads only regular files owned by the
  submitter (a link to the gradebook, a FIFO that would block a read forever, or a file
  of someone else's is left out and named), within nbgrader's size limits. It walks by
  open folder descriptors, so a folder swapped while it runs cannot lead it elsewhere.
- **Enrolment.** On a hub that serves several courses, every login may write into every
  course's inbound (nbgrader makes it 0733), and nbgrader's JupyterHubAuthPlugin refuses
  another course's fetch and submit only in the student's own process, which the student
  can reconfigure. With `c.CheckedCollect.hub_enrolment = True` the instructor's side asks
  the hub, with the same rule (the groups `nbgrader-<course>` and `formgrade-<course>`),
  and sets aside a submission from a login that is not enrolled.
- **Time.** The time a student's side wrote (folder name, `timestamp.txt`) is parsed
  without trusting it: anything that does not parse, or lies outside a plausible range,
  is refused for that student with a reason, and the submission is graded with no
  usable time (flagged, never given a late penalty by accident). A time that parses but
  is earlier than the files it came with were written (their change time, which no
  student can set back) is kept in the ledger of retimed submissions, and the submission
  is graded as handed in when its files were written.
"""
from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import shutil
import stat
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from nbgrader.exchange.default.collect import ExchangeCollect
from traitlets import Bool

from graders.engine import ledger
from graders.engine.shared import some
from graders.unicode import shown_name
from graders.engine.times import (MAX_DEPTH, MAX_ENTRIES, Retimed, folder_written, naive_utc, read_retimed,
                                  read_small, read_timestamp, retimed_path, submission_time, submitted_at,
                                  trusted_moment, written_after)

LEDGER = Path(".chapter") / "set-aside"


# ============================================================================ identity
def login_of(uid: int) -> str:
    import pwd
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def refusal(info: os.stat_result, claimed: str) -> str:
    """Why the inbound folder whose lstat is `info` may not be taken as `claimed`'s submission ("" when
    it may)."""
    if not stat.S_ISDIR(info.st_mode):
        return "the submission is a link or not a folder"
    if info.st_uid == os.geteuid():        # the instructor's own account: a course on one machine
        return ""
    login = login_of(info.st_uid)
    if login == claimed:
        return ""
    return f"it claims to be {shown_name(claimed)}'s submission, but the login {login} submitted it"


class EnrolmentUnknown(RuntimeError):
    """The hub could not say whether a login is enrolled: nothing is taken meanwhile."""


def submitter(folder: Path, claimed: str) -> str:
    """Whose turn an inbound submission takes: the login that wrote the folder, so that forgeries
    naming alice wait in the forger's own turn, never ahead of alice's own; the name it claims
    when the instructor's own account wrote it (a course on one machine)."""
    try:
        uid = os.lstat(folder).st_uid
    except OSError:
        return claimed
    return claimed if uid == os.geteuid() else login_of(uid)


def hub_courses(login: str) -> set[str]:
    """The courses the hub enrols `login` in, by nbgrader's JupyterHubAuthPlugin's rule (its
    groups `nbgrader-<course>` and `formgrade-<course>`), asked with this process's hub token
    ($JUPYTERHUB_API_URL, $JUPYTERHUB_API_TOKEN: the hub sets both for its services and users'
    servers), which needs the scope read:users:groups. A login the hub does not know, or may
    not show, is enrolled nowhere."""
    import requests
    from urllib.parse import quote
    token, url = os.environ.get("JUPYTERHUB_API_TOKEN"), os.environ.get("JUPYTERHUB_API_URL")
    if not token or not url:
        raise EnrolmentUnknown("JUPYTERHUB_API_TOKEN and JUPYTERHUB_API_URL are not set: run it where the hub "
                               "starts it (a hub service, or a terminal of formgrader's JupyterLab)")
    try:
        answer = requests.get(f"{url.rstrip('/')}/users/{quote(login, safe='')}",
                              headers={"Authorization": f"token {token}"}, timeout=10)
    except requests.RequestException as exc:
        raise EnrolmentUnknown(f"the hub at {url} did not answer ({exc.__class__.__name__})") from None
    if answer.status_code == 404:
        return set()
    if answer.status_code != 200:
        raise EnrolmentUnknown(f"the hub answered {answer.status_code} for the user {login} "
                               "(the token needs the scope read:users:groups)")
    try:
        shown = answer.json()
    except ValueError:          # a proxy's error page, say: not the hub's answer
        shown = None
    groups = shown.get("groups") if isinstance(shown, dict) else None
    if not isinstance(groups, list):
        raise EnrolmentUnknown(f"the hub did not show {login}'s groups (the token needs read:users:groups)")
    return {g.split("-", 1)[1] for g in groups if isinstance(g, str)
            and g.startswith(("nbgrader-", "formgrade-")) and g.split("-", 1)[1]}


def enrolment(config, course_id: str):
    """The course's check of a login's enrolment, `login -> why not ('' when enrolled)`, or None
    when the course takes work from any login of the machine (the default: one machine)."""
    section = config.get("CheckedCollect", {}) if config is not None else {}
    if not section.get("hub_enrolment", False):
        return None

    def why_not(login: str) -> str:
        if course_id in hub_courses(login):
            return ""
        return f"the login {login} is not enrolled in {course_id} (not in the hub's group nbgrader-{course_id})"
    return why_not


def look(folder) -> tuple[os.stat_result | None, str]:
    """The inbound `folder`'s lstat, taken once (a second look may find it gone, or another), or
    (None, why it cannot be read). FileNotFoundError when it is gone."""
    try:
        return os.lstat(folder), ""
    except FileNotFoundError:
        raise
    except OSError as exc:
        return None, f"the submission cannot be read ({exc.strerror})"


def admission(folder: Path, claimed: str, enrolled=None, info: os.stat_result | None = None) -> tuple[str, str]:
    """(why the inbound `folder` is another login's than `claimed`, why `claimed` is not enrolled
    in the course by `enrolled`, the course's `enrolment` check): both "" when it may be taken.
    `info`: the folder's lstat, when the caller has looked (and goes on with what it saw). The
    instructor's own folders are taken as they are; EnrolmentUnknown when the hub cannot say;
    FileNotFoundError when the folder is gone."""
    if info is None:
        info, why = look(folder)
        if info is None:
            return why, ""
    forged = refusal(info, claimed)
    if forged or enrolled is None or info.st_uid == os.geteuid():
        return forged, ""
    return "", enrolled(claimed)


@dataclass
class SetAside:
    folder: str            # the inbound folder's name
    claimed: str           # the student it names
    why: str
    seen: float            # when the instructor's side first refused it


def ledger_path(root: Path, assignment: str) -> Path:
    return Path(root) / LEDGER / f"{assignment}.jsonl"


def set_aside(root: Path, assignment: str, folder: str, claimed: str, why: str) -> bool:
    """Keep a refused submission in the ledger; True when it is new there. The ledger is JSON
    lines, each appended in one write."""
    path = ledger_path(root, assignment)
    if folder in ledger.entries(path, SetAside) or folder in _legacy_ledger(root, assignment):
        return False
    private_folder(path.parent)
    ledger.append(path, SetAside(folder, claimed, why, time.time()))
    return True


_legacies: dict = {}     # old ledger path -> ((dev, inode, size, mtime), {folder: SetAside}) in this process


def _legacy_ledger(root: Path, assignment: str) -> dict:
    """A ledger written before the ledger was JSON lines: one JSON list, `<assignment>.json`, by
    folder. Nothing writes that form now, so it is read once a process, not once a forged folder."""
    path = Path(root) / LEDGER / f"{assignment}.json"
    try:
        info = os.stat(path)
    except OSError:
        return {}
    key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    if _legacies.get(path, (None,))[0] != key:
        try:
            entries = {e.folder: e for e in (SetAside(**e) for e in json.loads(path.read_text()))}
        except (OSError, ValueError, TypeError):
            entries = {}
        _legacies[path] = (key, entries)
    return _legacies[path][1]


def read_set_aside(root: Path, assignment: str) -> list[SetAside]:
    entries = dict(_legacy_ledger(root, assignment))
    for folder, entry in ledger.entries(ledger_path(root, assignment), SetAside).items():
        entries.setdefault(folder, entry)
    return list(entries.values())


def set_aside_lines(root: Path, assignment: str, most: int | None = None) -> list[str]:
    """The ledger as the summaries print it: one line a refused submission, in the order they were
    refused; with `most`, the first `most` and a line counting the rest (anyone can make thousands)."""
    entries = sorted(read_set_aside(root, assignment), key=lambda e: e.seen)
    lines = [f"SET ASIDE {shown_name(e.folder)}: {shown_name(e.why)}; not collected, graded or served as "
             f"{shown_name(e.claimed)}" for e in entries[:most]]
    if most is not None and len(entries) > most:
        lines.append(f"SET ASIDE: {len(entries) - most} more, listed by `chapter serve --history` and "
                     "`chapter report`")
    return lines


def retimed_line(entry: Retimed) -> str:
    moment = entry.moment()
    written = shown_name(str(entry.written)) if moment is None else f"{naive_utc(moment):%Y-%m-%d %H:%M:%S} UTC"
    if not entry.claimed:
        said = f"is missing or empty; its files were written at {written}"
    elif submission_time(entry.claimed)[0] is None:
        said = f"says {shown_name(entry.claimed)}, not a usable time; its files were written at {written}"
    else:
        said = f"says {shown_name(entry.claimed)}, but its files were written at {written}"
    return f"RETIMED {shown_name(entry.student)}: the timestamp.txt of {shown_name(entry.folder)} {said}; " \
        "graded as handed in then"


def retimed_lines(root: Path, assignment: str) -> list[str]:
    """The retimed submissions as the summaries print them, one line each."""
    return [retimed_line(e) for e in sorted(read_retimed(root, assignment), key=lambda e: e.seen)]


# ============================================================================ copying
def holds(copy: Path, folder: Path) -> bool:
    """Whether `copy` (in submitted/) is a copy of the inbound `folder`: the same
    submission_secret.txt, which `nbgrader submit` writes anew for each submission. Its times
    cannot tell: a student's folder name and timestamp.txt may give two different ones."""
    secret = read_small(copy / "submission_secret.txt", 1024)
    return secret is not None and secret == read_small(folder / "submission_secret.txt", 1024)


class Copied(list):
    """What a copy left out, one line each; and `changed`, the latest change time (st_ctime) of
    what it copied: when the submission was last written, which its writer cannot set back."""
    changed: float = 0.0


def safe_copy(src: str, dest: str, ignore=None, max_bytes: int | None = None,
              owner: int | None = None) -> Copied:
    """Copy the folder `src` to `dest` following no link; what was left out, one line each.

    Only folders and regular files are copied, and with `owner` only those that uid owns (`src`
    itself included); `ignore(dir, names)` is nbgrader's ignore callable. Past `max_bytes` or
    MAX_ENTRIES the rest is left out, and so is a folder nested more than MAX_DEPTH deep.

    The walk holds each folder open and reaches what is in it through that descriptor, never by
    its path again: the student owns the folders and may swap one for a link, or for another's
    folder, between a look and a read. What is opened is checked once more (its own fstat: the
    same file that was looked at, its kind and its owner), so a swap costs the file, never
    copies another's.
    """
    left_out, total, count = Copied(), 0, 0
    folder_flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK
    file_flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK

    def same(opened, seen) -> bool:
        return ((opened.st_dev, opened.st_ino) == (seen.st_dev, seen.st_ino)
                and stat.S_IFMT(opened.st_mode) == stat.S_IFMT(seen.st_mode)
                and (owner is None or opened.st_uid == owner))

    def ignored(here: str, names: list[str]) -> set:
        """nbgrader's rule (globs, and each file's size, which it reads by path): a file removed
        while it looks fails it, so it is asked again name by name, and a name it fails on is left
        out (it is gone, or going)."""
        if ignore is None:
            return set()
        try:
            return set(ignore(here, names))
        except OSError:
            out = set()
            for name in names:
                try:
                    out.update(ignore(here, [name]))
                except OSError:
                    out.add(name)
            return out

    def walk(folder: int, here: str, there: str, rel: str, depth: int = 0):
        nonlocal total, count
        try:
            os.makedirs(there, exist_ok=True)
        except OSError as exc:    # a path past the system's limit, say: a folder of long names, deep
            left_out.append(f"{rel[:160] + '…' if len(rel) > 160 else rel or '.'}: cannot be placed ({exc.strerror})")
            return
        try:
            names = sorted(os.listdir(folder))
        except OSError as exc:
            left_out.append(f"{rel or '.'}: not readable ({exc.strerror})")
            return
        skipped = ignored(here, names)
        for name in names:
            if name in skipped:
                continue
            inner = shown_name(os.path.join(rel, name))
            count += 1
            if count > MAX_ENTRIES:
                left_out.append(f"{inner}: more than {MAX_ENTRIES} files")
                return
            try:
                info = os.stat(name, dir_fd=folder, follow_symlinks=False)
            except OSError:
                continue
            if owner is not None and info.st_uid != owner:
                left_out.append(f"{inner}: owned by {login_of(info.st_uid)}, not by the submitter")
            elif stat.S_ISDIR(info.st_mode) and depth >= MAX_DEPTH:
                left_out.append(f"{inner}: folders nested more than {MAX_DEPTH} deep")
            elif stat.S_ISDIR(info.st_mode):
                try:
                    inside = os.open(name, folder_flags, dir_fd=folder)
                except OSError as exc:
                    left_out.append(f"{inner}: not readable ({exc.strerror})")
                    continue
                try:
                    opened = os.fstat(inside)
                    if same(opened, info):
                        left_out.changed = max(left_out.changed, opened.st_ctime)
                        walk(inside, os.path.join(here, name), os.path.join(there, name), inner, depth + 1)
                    else:
                        left_out.append(f"{inner}: changed while it was copied")
                finally:
                    os.close(inside)
            elif not stat.S_ISREG(info.st_mode):
                left_out.append(f"{inner}: a link or a special file")
            elif max_bytes is not None and total + info.st_size > max_bytes:
                left_out.append(f"{inner}: past the submission's size limit")
            else:
                try:
                    fd = os.open(name, file_flags, dir_fd=folder)
                except OSError as exc:
                    left_out.append(f"{inner}: not readable ({exc.strerror})")
                    continue
                with os.fdopen(fd, "rb") as fh:
                    opened = os.fstat(fd)
                    if not same(opened, info):
                        left_out.append(f"{inner}: changed while it was copied")
                        continue
                    left_out.changed = max(left_out.changed, opened.st_ctime)
                    try:
                        with open(os.path.join(there, name), "wb") as out:
                            copied = 0
                            while copied <= info.st_size:
                                chunk = fh.read(1 << 20)
                                if not chunk:
                                    break
                                out.write(chunk)
                                copied += len(chunk)
                        os.utime(os.path.join(there, name), ns=(info.st_atime_ns, info.st_mtime_ns))
                    except OSError as exc:   # its path past the system's limit, say; or unreadable
                        with contextlib.suppress(OSError):
                            os.unlink(os.path.join(there, name))
                        left_out.append(f"{inner}: cannot be copied ({exc.strerror})")
                        continue
                total += copied

    try:
        top = os.open(src, folder_flags)
    except OSError as exc:
        os.makedirs(dest, exist_ok=True)
        return Copied([f".: not readable ({exc.strerror})"])
    try:
        here = os.fstat(top)
        if owner is not None and here.st_uid != owner:
            os.makedirs(dest, exist_ok=True)
            return Copied([f".: owned by {login_of(here.st_uid)}, not by the submitter"])
        left_out.changed = here.st_ctime
        walk(top, src, dest, "")
    finally:
        os.close(top)
    return left_out


_warned: set = set()      # what this process has warned about (once each)


def private_folder(path) -> Path:
    """The folder `path`, made when missing (with its parents) and closed to everyone but the
    instructor: the course's working state, its ledgers and every student's grade go in one."""
    path = Path(path)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    close_folder(path)
    return path


def close_folder(path, mode: int = 0o700) -> bool:
    """The instructor's alone: no other user may list, enter or read it. False when this account
    cannot close it (it is another's); when other accounts can then still reach it, that is said
    on stderr, once a process for each path, naming it and who can close it."""
    try:
        os.chmod(path, mode)
        return True
    except FileNotFoundError:
        return False
    except OSError as exc:
        others = others_reaching(path)
        if others and str(path) not in _warned:
            _warned.add(str(path))
            print(f"WARNING: {path} is open to other accounts of this machine ({some(others, most=3)}) and this "
                  f"account cannot close it ({exc.strerror}); its owner or root can: chmod {mode:o} {path}",
                  file=sys.stderr, flush=True)
        return False


PRIVATE = ("submitted", "autograded", "feedback", ".chapter", "reports")


def close_course(root: Path, db_url: str = "") -> None:
    """Make the course's working state the instructor's alone, and warn (on stderr, once a
    process) when other accounts on this machine can still reach the course folder itself
    (its source/ holds the solutions)."""
    root = Path(root)
    for name in PRIVATE:
        if (root / name).is_dir() and not (root / name).is_symlink():
            close_folder(root / name)
            give_back(root, root / name)
    if db_url.startswith("sqlite:///"):
        db = Path(db_url[len("sqlite:///"):])
        for path in (db, db.with_name(db.name + "-journal"), db.with_name(db.name + "-wal")):
            if path.is_file() and not path.is_symlink():
                close_folder(path, 0o600)
                give_back(root, path)
    if str(root) in _warned:        # the account lookup is done once, not on every attempt
        return
    warning = open_to_others(root)
    if warning:
        _warned.add(str(root))
        print(f"WARNING: {warning}", file=sys.stderr, flush=True)


def _someone_elses(folder: Path):
    """`folder`'s stat when this process is root and the folder belongs to another account."""
    if os.geteuid() != 0:
        return None
    try:
        owner = os.stat(folder)
    except OSError:
        return None
    return owner if owner.st_uid != 0 else None


def give_back(root: Path, path: Path) -> None:
    """Root grading in another's course (`chapter serve` as a hub service needs root for its
    sandbox) leaves `path`, and all under it, owned by the course folder's owner, so that the
    instructor's formgrader and nbgrader commands can still write what it wrote. No link is
    followed; nothing is done unless this process is root and the course is someone else's."""
    owner = _someone_elses(root)
    if owner is None:
        return

    def mend(name: str) -> None:
        try:
            info = os.lstat(name)
            if (info.st_uid, info.st_gid) != (owner.st_uid, owner.st_gid):
                os.lchown(name, owner.st_uid, owner.st_gid)
        except OSError:
            pass
    mend(str(path))
    if Path(path).is_dir() and not Path(path).is_symlink():
        for here, dirs, files in os.walk(path):
            for name in dirs + files:
                mend(os.path.join(here, name))


@contextlib.contextmanager
def as_owner_of(folder: Path):
    """Run the block with the effective ids of `folder`'s owner, when this process is root and
    the folder is someone else's: nbgrader's exchange refuses to write into a folder its process
    does not own, so a root `chapter serve` releases feedback as the instructor who released the
    assignment (and the instructor's own Release Feedback keeps working beside it)."""
    owner = _someone_elses(folder)
    if owner is None:
        yield
        return
    # real and effective ids both (nbgrader's ownership check reads the real uid); the saved
    # ids stay root's, so that the process can take root back afterwards
    os.setresgid(owner.st_gid, owner.st_gid, 0)
    os.setresuid(owner.st_uid, owner.st_uid, 0)
    try:
        yield
    finally:
        os.setresuid(0, 0, 0)
        os.setresgid(0, 0, 0)


def other_accounts(*but: int) -> list[str]:
    """The login accounts of this machine other than those with uids `but` (uid 1000 and up,
    with a shell)."""
    import pwd
    return sorted(p.pw_name for p in pwd.getpwall()
                  if p.pw_uid >= 1000 and p.pw_uid not in (*but, 65534)
                  and not p.pw_shell.endswith(("nologin", "false")))


def others_reaching(path) -> list[str]:
    """The accounts of this machine, other than its owner and this process's, that can list or
    read `path`: none when it is closed to them, or a folder on its way is."""
    path = Path(path).resolve()
    try:
        info = os.stat(path)
        if not info.st_mode & 0o005:
            return []
        for parent in path.parents:
            if not os.stat(parent).st_mode & 0o001:
                return []
    except OSError:
        return []
    return other_accounts(info.st_uid, os.geteuid())


def open_to_others(root: Path) -> str:
    """Why other accounts can read the course folder ("" when they cannot, or there are none)."""
    root = Path(root).resolve()
    others = others_reaching(root)
    if not others:
        return ""
    return (f"the course folder {root} is open to the other accounts of this machine ({some(others, most=3)}): they "
            f"can read its solutions (source/) and anything not yet closed. Close it: chmod 700 {root}")


# ============================================================================ nbgrader's collect
class CheckedCollect(ExchangeCollect):
    """nbgrader's collect, for a class of hostile logins.

    - a submission another login filed in a student's name is set aside (ledger), and the
      student's own latest submission is collected instead;
    - a folder name whose time does not parse is taken with the folder's own change time
      (and the submission's `timestamp.txt` decides its lateness, checked when it is graded),
      where nbgrader would stop the whole collect;
    - with `hub_enrolment`, a submission from a login the hub does not enrol in the course is
      set aside too;
    - dot-named students are collected (nbgrader's glob skips them);
    - the copy follows no link and reads no special file (nbgrader's would copy a link's
      target, or block forever on a FIFO);
    - `submitted/` is the instructor's alone.
    """

    hub_enrolment = Bool(False, help=(
        "Take submissions only from logins the hub enrols in the course (its groups nbgrader-<course> "
        "and formgrade-<course>, asked with $JUPYTERHUB_API_TOKEN); others are set aside. For a hub "
        "serving several courses, where every login can write into every course's inbound.")).tag(config=True)
    trust_student_time = Bool(False, help=(
        "Take each submission's timestamp.txt as it is, as nbgrader does, even when its files were written "
        "later. Only for an exchange whose files were copied, restored or had their owner or modes changed "
        "after the students submitted: that resets the change times the check reads.")).tag(config=True)

    def init_src(self):
        if self.coursedir.course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        self.course_path = os.path.join(self.root, self.coursedir.course_id)
        self.inbound_path = os.path.join(self.course_path, "inbound")
        if not os.path.isdir(self.inbound_path):
            self.fail(f"Course not found: {self.inbound_path}")
        from nbgrader.api import Gradebook, MissingEntry
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            try:
                self.duedate = gb.find_assignment(self.coursedir.assignment_id).duedate
                if self.duedate is not None and self.duedate.tzinfo is not None:
                    self.duedate = naive_utc(self.duedate)
            except MissingEntry:
                self.duedate = None
        self.src_records = self.choose(self.records(only=self.coursedir.student_id or "*"))

    def records(self, only: str = "*", folders: list[str] | None = None) -> list[dict]:
        """Every acceptable inbound submission of the assignment (set-aside ones are ledgered)."""
        assignment = self.coursedir.assignment_id
        root = Path(self.coursedir.root)
        if folders is None:
            try:
                folders = sorted(os.listdir(self.inbound_path))
            except OSError as exc:
                self.fail(f"cannot list {self.inbound_path}: {exc.strerror}")
        found = []
        enrolled = enrolment(self.config, self.coursedir.course_id)
        for name in folders:
            parts = name.rsplit("+", 3)
            if len(parts) < 3 or parts[1] != assignment or not parts[0] or not fnmatch.fnmatchcase(parts[0], only):
                continue
            path = os.path.join(self.inbound_path, name)
            try:        # one look: the owner admitted is the owner the copy holds the folder to
                info, why = look(path)
                if info is not None:
                    why = "".join(admission(Path(path), parts[0], enrolled, info))
            except FileNotFoundError:      # removed by its writer meanwhile: nothing to collect
                continue
            except EnrolmentUnknown as exc:
                self.fail(f"cannot tell who is enrolled in {self.coursedir.course_id}: {exc}")
            if why:
                if set_aside(root, assignment, name, parts[0], why):
                    self.log.warning("set aside %s: %s", shown_name(name), why)
                continue
            if not os.path.lexists(path):  # removed by its writer since: nothing to collect
                continue
            changed = folder_written(Path(path)) or info.st_ctime
            claimed, _ = submission_time(parts[2])
            if claimed is None:       # the student's clock said nothing usable: when it was written
                moment = datetime.fromtimestamp(changed, timezone.utc)
            else:                     # nor a time before the folder was written
                moment = claimed if self.trust_student_time else trusted_moment(claimed, changed)
            found.append({"username": parts[0], "filename": name, "timestamp": naive_utc(moment),
                          "claimed": claimed and naive_utc(claimed), "owner": info.st_uid})
        return found

    def choose(self, records: list[dict]) -> list[dict]:
        """Each student's latest submission; with before_duedate, their latest on time if any. By
        when each was handed in: the time in its name, unless the folder was written later than
        that (times.trusted_moment), so a late submission named as on time is not taken as one."""
        latest = {}
        for rec in sorted(records, key=lambda r: r["timestamp"]):
            prior = latest.get(rec["username"])
            if self.before_duedate and self.duedate is not None and rec["timestamp"] > self.duedate \
                    and prior is not None and prior["timestamp"] <= self.duedate:
                continue
            latest[rec["username"]] = rec
        return list(latest.values())

    def copy_files(self):
        """Each chosen submission into submitted/<student>/<assignment>/, as nbgrader's collect
        decides (new, newer with --update, or the on-time one with --before-duedate)."""
        submitted = Path(self.coursedir.root) / self.coursedir.submitted_directory
        submitted.mkdir(parents=True, exist_ok=True)
        close_course(Path(self.coursedir.root), self.coursedir.db_url)
        assignment = self.coursedir.assignment_id
        if not self.src_records:
            self.log.warning(f"No submissions of '{assignment}' for course '{self.coursedir.course_id}' to collect")
        for rec in self.src_records:
            student = rec["username"]
            dest = self.coursedir.format_path(self.coursedir.submitted_directory, student, assignment)
            if os.path.isdir(dest) and holds(Path(dest), Path(self.inbound_path) / rec["filename"]):
                self.log.info(f"No newer submission to collect: {shown_name(student)} {assignment}")
                continue
            if os.path.isdir(dest):
                said = read_timestamp(Path(dest))
                existing = submission_time(said)[0]         # as its student named it: the same submission?
                handed_in = submitted_at(self.coursedir.root, assignment, student, said)[0]   # as graded
                fresher = self.update and (handed_in is None or rec["timestamp"] > naive_utc(handed_in))
                other = self.before_duedate and (existing and naive_utc(existing)) != rec["claimed"]
                if not (fresher or other):
                    self.log.info(f"No newer submission to collect: {shown_name(student)} {assignment}")
                    continue
                shutil.rmtree(dest)
                self.log.info(f"Updating submission: {shown_name(student)} {assignment}")
            else:
                self.log.info(f"Collecting submission: {shown_name(student)} {assignment}")
            try:
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                self.copy_one(os.path.join(self.inbound_path, rec["filename"]), dest, rec["owner"])
            except Exception as exc:  # noqa: BLE001 - one student's submission never stops the collect
                self.log.error("NOT COLLECTED %s: %s (%s: %s); the other students are collected",
                               shown_name(student), shown_name(rec["filename"]), type(exc).__name__,
                               shown_name(str(exc))[:300])

    def copy_one(self, src, dest, owner) -> str:
        """One submission into `dest`; what the instructor is told about its time, or ""."""
        from nbgrader.utils import ignore_patterns
        ignore = ignore_patterns(exclude=self.coursedir.ignore, include=self.coursedir.include,
                                 max_file_size=self.coursedir.max_file_size, log=self.log)
        left_out = safe_copy(src, dest, ignore, max_bytes=1000 * self.coursedir.max_dir_size,
                             owner=None if owner == os.geteuid() else owner)
        for line in left_out:
            self.log.warning("%s: left out %s", shown_name(os.path.basename(src)), line)
        return self.check_time(os.path.basename(src), Path(dest), left_out.changed)

    def check_time(self, folder: str, dest: Path, changed: float) -> str:
        """timestamp.txt is the student's to write: one that says the submission was handed in
        before its files were written, or that is missing, empty or not a usable time, is kept in
        the course's ledger of retimed submissions, and the submission is graded as handed in when
        its files were written (their change time, which no student can set back). The copy keeps
        the student's file as it is: nbgrader's feedback is keyed by it. Returns what it logs, or
        "" for a time that stands."""
        if self.trust_student_time or not changed:
            return ""
        text = read_timestamp(dest)
        claimed, _ = submission_time(text)
        if claimed is None:     # none, or none that can be used: when the files were written is what is known
            written = datetime.fromtimestamp(changed, timezone.utc)
        else:
            written = written_after(claimed, changed)
        if written is None:
            return ""
        student, assignment = folder.rsplit("+", 3)[0], self.coursedir.assignment_id
        path = retimed_path(self.coursedir.root, assignment)
        entry = ledger.entries(path, Retimed).get(folder)
        if entry is None:
            private_folder(path.parent)
            entry = Retimed(folder, student, text or "", written.isoformat(), time.time())
            ledger.append(path, entry)
        line = retimed_line(entry)
        self.log.warning("%s", line)
        return line
