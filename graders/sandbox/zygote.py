"""The trusted side of the sandbox: start the warm zygote, run one notebook in it, read data back.

The zygote is `worker.py`, started by file path as ``python -I -S``
with a sys.path of the standard library and site-packages only: it cannot
import `graders`, and it never sees a reference. `Zygote.run` sends it one job
(the cells to run, and for each graded test cell the answer keys to read back;
a cell the course's checks grade comes stripped of its hidden tests, while a
test cell no check knows comes whole, as nbgrader would run it) and returns what came out:
per-cell outputs and answers, as untrusted plain data, plus the monitor's own
(trusted) account of how the run ended.
"""
from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from graders import unicode
from graders.sandbox.protocol import SandboxConfig, conforms
from graders.sandbox.tempdirs import owned_tempdir

HERE = Path(__file__).resolve().parent
WORKER = HERE / "worker.py"
TRANSPORT = HERE.parent / "transport.py"
SECCOMP = HERE / "seccomp.py"
CGROUPS = HERE / "cgroups.py"
# torch._dynamo (0.8 s) is what torch's optimizers and checkpointing import on their first call
PRELOAD = ("numpy", "sympy", "torch", "torch._dynamo", "matplotlib", "matplotlib.pyplot", "IPython")
UID_BASE = 2_100_000_000   # sandbox uids: one per concurrent notebook, owning nothing on the host
# uids are leased machine-wide (flock on one file per uid), since several graders may run at once
# matplotlib's font list (fonts found on the machine, ~0.15 s to build, longer with many fonts),
# kept between zygotes: each zygote's HOME and MPLCONFIGDIR is a fresh scratch folder
FONT_CACHE = "/var/cache/chapter-sandbox" if os.access("/var/cache", os.W_OK) else \
    os.path.join(os.path.expanduser("~"), ".cache", "chapter-sandbox")
FONT_LIST_BYTES = 8 << 20
LEASES = "/run/chapter-sandbox-uids" if os.access("/run", os.W_OK) else \
    os.path.join(tempfile.gettempdir(), "chapter-sandbox-uids")


@dataclass
class Limits:
    """What one notebook may use inside the sandbox."""
    cell_seconds: float = 60.0          # per cell (nbgrader's Execute.timeout): the cell is interrupted
    notebook_seconds: float = 300.0     # per notebook: the whole sandbox is killed
    memory_bytes: int = 3 << 30         # the notebook's memory, all its processes and tmpfs together (its
                                        # control group); also each process's address space on top of
                                        # the preloaded libraries (RLIMIT_AS)
    processes: int = 64                 # processes and threads: its control group's pids.max, RLIMIT_NPROC
    wall_factor: float = 3.0            # cell and notebook limits count CPU time; the wall clock stops a
                                        # run at this multiple of them (a sleeping or starved notebook)
    file_bytes: int = 64 << 20          # largest file it may write (RLIMIT_FSIZE)
    tmp_bytes: int = 128 << 20          # size of each private tmpfs (/tmp, the working folder, /dev/shm)
    output_bytes: int = 16 << 20        # everything it may send back
    line_bytes: int = 8 << 20           # one message
    cell_output_bytes: int = 256 << 10  # text kept from one cell's outputs

    def as_job(self) -> dict:
        return asdict(self)


class SandboxUnavailable(RuntimeError):
    """The zygote is not running, refused the job, or could not isolate the notebook (a layer
    failed, so no student code ran): an infrastructure fault, not the student's."""


@dataclass
class Run:
    """How one notebook's run went. `cells` and `layers` come from the sandbox: untrusted data."""
    status: str = "error"        # ok | timeout | crashed | flood | error (from the monitor)
    detail: str = ""
    seconds: float = 0.0
    leftovers: int = 0
    monitor_layers: dict = field(default_factory=dict)   # trusted: what the monitor applied
    layers: dict = field(default_factory=dict)           # reported by the sandbox before student code
    cells: dict = field(default_factory=dict)            # index -> cell message
    begun: list = field(default_factory=list)            # indices in the order they started
    usage: dict = field(default_factory=dict)            # trusted: the control group's account, timestamps
    done: bool = False                                   # the monitor reported the end
    finished: bool = False                               # the sandbox said it ran every cell
    expected: frozenset = frozenset()                    # the cell indices the job holds
    ignored: int = 0                                     # sandbox messages refused as malformed or forged
    refused: list = field(default_factory=list)          # why a monitor message was refused (protocol.conforms)

    @property
    def anomaly(self) -> str:
        """One note for the instructor when the sandbox sent messages that were ignored."""
        notebook = self.ignored - len(self.refused)
        notes = [f"the notebook sent {notebook} message(s) the grader did not expect (unknown cells, "
                 "repeats or malformed data); they were ignored"] if notebook > 0 else []
        return "; ".join(notes + self.refused[:3])


def sandbox_binds() -> list[str]:
    """The host paths a sandbox sees (read-only): system libraries and the Python installation."""
    paths = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"]
    paths += [sys.base_prefix, sys.prefix]
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        paths.append(sysconfig.get_paths()[key])
    keep = []
    for path in paths:   # a symlinked installation is seen at both its names: modules and caches use either
        for name in (os.path.abspath(path), os.path.realpath(path)):
            if os.path.lexists(name) and name not in keep:
                keep.append(name)
    # Binding a parent makes its children visible anyway: keep only the outermost.
    return [p for p in keep if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in keep)]


def _world_readable(path: str) -> bool:
    """Could a user with no privileges reach and read `path`?"""
    path = os.path.realpath(path)
    parts = Path(path).parts
    for i in range(1, len(parts) + 1):
        try:
            mode = os.stat(os.path.join(*parts[:i])).st_mode
        except OSError:
            return False
        if not mode & 0o005 and i < len(parts) or not mode & 0o004:
            return False
    return True


def site_dirs() -> list[str]:
    paths = sysconfig.get_paths()
    found = []
    for key in ("purelib", "platlib"):
        if paths[key] not in found:
            found.append(paths[key])
    return found


def check_hidden(paths: list[str], secrets: list[Path]) -> None:
    """Refuse to start if any secret (course root, graders) lies inside a bound path."""
    for secret in secrets:
        secret = str(Path(secret).resolve())
        for path in paths:
            real = os.path.realpath(path)
            if secret == real or secret.startswith(real.rstrip("/") + "/"):
                raise RuntimeError(f"the sandbox would see {secret} through {path}; "
                                   "keep the course outside the Python installation")


class Zygote:
    """A warm process that forks one isolated sandbox per notebook."""

    def __init__(self, isolate: bool = True, preload=PRELOAD, secrets=(), start_timeout: float = 180.0,
                 allow_degraded: bool = False, fail_layers=()):
        """`allow_degraded`: run a notebook even where an isolation layer cannot be applied
        (the layer is skipped and reported) instead of refusing it as not graded.
        `isolate=False` switches namespaces and seccomp off and implies it (for tests).
        `fail_layers` (tests only): names of layers to treat as failing, e.g. ("seccomp",)."""
        self.isolate = isolate
        self.allow_degraded = allow_degraded or not isolate
        self.fail_layers = list(fail_layers)
        self.preload = list(preload)
        self.secrets = [Path(s) for s in secrets] + [HERE]
        self.start_timeout = start_timeout
        self.process = None
        self.dir = None
        self.socket_path = None
        self.ready = {}
        self.log = None
        self.python_world_readable = True
        self.started_at = self.ready_at = None   # time.monotonic() of start() and of its ready line

    # -- lifecycle ---------------------------------------------------------------
    def start(self) -> "Zygote":
        binds = sandbox_binds()
        check_hidden(binds, self.secrets)
        self.python_world_readable = all(map(_world_readable, binds))
        self.dir = owned_tempdir("chapter-zygote-", room=len("/zygote.sock"))   # the longest socket's
        os.chmod(self.dir, 0o711)
        os.makedirs(os.path.join(self.dir, "root"))
        scratch = os.path.join(self.dir, "scratch")
        os.makedirs(scratch)
        os.chmod(scratch, 0o711)
        if any(m.split(".")[0] == "matplotlib" for m in self.preload):
            copy_font_list(FONT_CACHE, scratch)
        self.socket_path = os.path.join(self.dir, "zygote.sock")
        first, later = split_preload(self.preload)
        config = SandboxConfig(
            socket=self.socket_path, site=site_dirs(), preload=first, later=later,
            light_socket=os.path.join(self.dir, LIGHT_SOCKET) if later else "", transport=str(TRANSPORT),
            mount_root=os.path.join(self.dir, "root"), scratch=scratch, binds=binds, uid_base=UID_BASE,
            isolate=self.isolate, lease_dir=LEASES, python_world_readable=self.python_world_readable,
            seccomp=str(SECCOMP), cgroups=str(CGROUPS), allow_degraded=self.allow_degraded,
            fail_layers=self.fail_layers)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
               "HOME": scratch, "PYTHONHASHSEED": "0"}
        self.log = open(os.path.join(self.dir, "zygote.log"), "wb")
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.log, env=env, cwd=scratch, start_new_session=True)
        self.process.stdin.write(config.to_json().encode() + b"\n")
        self.process.stdin.flush()
        self.started_at, self.ready_at = time.monotonic(), None
        return self

    def wait_ready(self) -> "Zygote":
        """Block until the zygote has imported everything (start() returns before that)."""
        if self.ready:
            return self
        ready, _, _ = select.select([self.process.stdout], [], [], self.start_timeout)
        line = self.process.stdout.readline() if ready else b""
        try:
            self.ready = json.loads(line)
            self.ready_at = time.monotonic()
            # written by the zygote while it preloaded, before any student code ran
            copy_font_list(os.path.join(self.dir, "scratch"), FONT_CACHE)
        except ValueError:
            why = self.log_tail()        # before close(), which removes the folder the log is in
            self.close()
            raise SandboxUnavailable(f"the sandbox zygote did not start: {why}") from None
        return self

    def start_seconds(self) -> float | None:
        """How long the zygote took from start() to ready (its imports and warm-up); None before."""
        if self.started_at is None or self.ready_at is None:
            return None
        return self.ready_at - self.started_at

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self) -> str:
        try:
            return Path(self.dir, "zygote.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def close(self) -> None:
        zygote_pid = self.process.pid if self.process is not None else None
        if self.process is not None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except OSError:
                pass
            self.process.wait()
            self.process = None
        if zygote_pid is not None:
            sweep_groups(zygote_pid)
        self.ready = {}
        if self.log is not None:
            self.log.close()
            self.log = None
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self):
        return self.start().wait_ready()

    def __exit__(self, *exc):
        self.close()

    @property
    def isolation(self) -> dict:
        return self.wait_ready().ready.get("isolation", {})

    # -- one notebook ------------------------------------------------------------
    def run(self, job: dict, limits: Limits) -> Run:
        self.wait_ready()
        return run_job(socket_for(self.socket_path, job), job, limits)


# torch and its parts take seconds to import: a second zygote, forked from the first once that one
# is ready, imports them; the first serves at once the notebooks that never name them (LIGHT_SOCKET)
LATER = ("torch",)
LIGHT_SOCKET = "light.sock"


def split_preload(preload) -> tuple[list, list]:
    """(what the first zygote imports, what the second imports: LATER's modules)."""
    later = [m for m in preload if m.split(".")[0] in LATER]
    return [m for m in preload if m not in later], later


def socket_for(socket_path: str, job: dict) -> str:
    """Where to send `job`: the zygote's light socket if it has one and no cell of the job names
    a LATER library (then it starts at once, without waiting for torch's import), else
    `socket_path`. Only a matter of time: a cell that imports torch by another way imports it
    in its own sandbox, with the same answers."""
    light = os.path.join(os.path.dirname(socket_path), LIGHT_SOCKET)
    sources = [cell.get("source") if isinstance(cell, dict) else None for cell in job.get("cells", ())]
    if names_later(sources):
        return socket_path
    return light if os.path.exists(light) else socket_path


def names_later(sources) -> bool:
    """Does any of these cell sources name a LATER library (or is one not text)?"""
    return any(not isinstance(source, str) or any(name in source for name in LATER) for source in sources)


def copy_font_list(source: str, target: str) -> None:
    """Copy matplotlib's font list (`fontlist-v*.json`) from `source` to `target` where `target`
    has none, readable as matplotlib writes it (FONT_CACHE itself is this user's alone). Best
    effort: without it, matplotlib builds the list again."""
    try:
        names = [n for n in os.listdir(source) if n.startswith("fontlist-v") and n.endswith(".json")]
        if names:
            os.makedirs(target, mode=0o700, exist_ok=True)
    except OSError:
        return
    for name in names:
        if os.path.exists(os.path.join(target, name)):
            continue
        temporary = None
        try:
            with open(os.path.join(source, name), "rb") as src:
                data = src.read(FONT_LIST_BYTES + 1)
            if len(data) > FONT_LIST_BYTES:
                continue
            handle, temporary = tempfile.mkstemp(dir=target, prefix=".fontlist-")
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.chmod(temporary, 0o644)
            os.replace(temporary, os.path.join(target, name))
        except OSError:
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)


def sweep_groups(zygote_pid: int | None = None) -> list[str]:
    """Kill and remove the control groups a zygote's sandboxes left (after the zygote died, say),
    and the monitors still running for them."""
    from graders.sandbox import cgroups
    plan = cgroups.detect()
    if "error" in plan:
        return []
    for name in cgroups.groups_of(plan, zygote_pid):
        monitor = cgroups.monitor_of(name)
        if zygote_pid is not None and monitor and cgroups.owner_alive(name):
            try:
                os.killpg(monitor, signal.SIGKILL)   # its own session: it runs no student code
            except OSError:
                pass
    return cgroups.sweep(plan, zygote_pid, only_orphans=False)


def run_job(socket_path: str, job: dict, limits: Limits) -> Run:
    """Send `job` to the zygote at `socket_path` and collect the run (usable from any process)."""
    job = {**job, "limits": limits.as_job()}
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(socket_path)
        conn.sendall(json.dumps(job).encode() + b"\n")
    except OSError as exc:
        conn.close()
        raise SandboxUnavailable(f"the sandbox zygote is not reachable ({exc})") from None
    run = Run(expected=frozenset(c["index"] for c in job.get("cells", ()) if isinstance(c.get("index"), int)))
    # the monitor's own backstop is the notebook limit (CPU time) times wall_factor; wait past it
    deadline = time.monotonic() + float(limits.notebook_seconds) * max(1.0, float(limits.wall_factor)) + 30.0
    budget = int(limits.output_bytes) + (4 << 20)
    pending, total, started = b"", 0, False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                run.status, run.detail = "timeout", "the sandbox did not answer in time"
                break
            ready, _, _ = select.select([conn], [], [], left)
            if not ready:
                continue
            chunk = conn.recv(1 << 16)
            if not chunk:
                break
            total += len(chunk)
            if total > budget:
                run.status, run.detail = "flood", "the notebook sent back too much output"
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                started = _take(run, line) or started
            if len(pending) > limits.line_bytes + 16:
                run.status, run.detail = "flood", "the notebook sent back an over-long line"
                break
    finally:
        conn.close()
        if run.monitor_layers.get("monitor") and run.status in ("timeout", "flood") and not run.done:
            _kill(run.monitor_layers)
    if not started:
        raise SandboxUnavailable("the sandbox zygote did not start the job")
    if run.status == "unavailable":   # an isolation layer failed: no student code ran
        raise SandboxUnavailable(run.detail or "the sandbox could not isolate the notebook")
    if not run.done and run.status not in ("timeout", "flood"):
        # the trusted monitor ended (or was killed) before its account of the run: no verdict
        # to give the student, so the run is the machine's failure, retried, never a grade
        raise SandboxUnavailable("the sandbox's monitor ended before it reported how the run ended")
    return run


def _kill(start: dict) -> None:
    for target, how in ((start.get("sandbox"), os.kill), (start.get("monitor"), os.killpg)):
        if isinstance(target, int) and target > 1:
            try:
                how(target, signal.SIGKILL)
            except OSError:
                pass


def _take(run: Run, line: bytes) -> bool:
    """Record one line; return True when it is the monitor's start message."""
    tag, _, body = line.partition(b" ")
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return False
    if not isinstance(message, dict):
        return False
    if unicode.may_hold(body):     # a cell that printed a lone surrogate: nothing could write it later
        message = unicode.mend(message)
    kind = message.get("type")
    if tag == b"M":   # the monitor: trusted, once it keeps to the format graders/sandbox/protocol.py writes down
        reason = conforms(message)
        if reason:
            run.ignored += 1
            run.refused.append(f"the monitor's message was refused: {reason}")
            return False
        if kind == "start":
            run.monitor_layers = {k: message.get(k) for k in ("monitor", "sandbox", "uid")}
            run.monitor_layers.update(message.get("layers") or {})
            return True
        if kind == "end":
            run.done = True
            run.status = str(message.get("status", "error"))
            run.detail = str(message.get("detail", ""))[:500]
            run.seconds = float(message.get("seconds") or 0.0)
            run.leftovers = int(message.get("leftovers") or 0)
        elif kind == "usage":
            run.usage = {k: v for k, v in message.items() if k != "type" and isinstance(v, (int, float))}
        return False
    if tag != b"S":
        return False
    # The sandbox: untrusted. Only messages for cells of this job are kept, one "begin" and
    # one "cell" per cell, in order (a cell's result only after it began, and only while it is
    # the cell running); anything else is counted once and ignored, never turned into a reason.
    index = message.get("index")
    known = isinstance(index, int) and not isinstance(index, bool) and index in run.expected
    if kind == "isolation" and not run.layers and not run.begun:
        layers = message.get("layers")
        run.layers = layers if isinstance(layers, dict) else {}
    elif kind == "begin" and known and index not in run.begun and index not in run.cells \
            and (not run.begun or index > run.begun[-1]):
        run.begun.append(index)
    elif kind == "cell" and known and run.begun and run.begun[-1] == index and index not in run.cells \
            and isinstance(message.get("raised"), bool):
        run.cells[index] = message
    elif kind == "done" and not run.finished:
        run.finished = True
    else:
        run.ignored += 1
    return False
