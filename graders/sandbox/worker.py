"""The sandbox side of `chapter autograde`: a warm zygote that runs students' cells.

This file is NOT part of the `graders` package at run time. The trusted
grader starts it by path, as ``python -I -S worker.py``, with a
sys.path made of the standard library and site-packages only, so that
`graders` (and with it every reference solution) cannot be imported from
here. It imports nothing from `graders`; the one piece it shares, the answer
encoder (`graders/transport.py`, standard library only), is loaded by file
path under another module name before any student code runs.

Three kinds of process live here:

zygote   imports numpy, sympy, torch, matplotlib and IPython once, then waits
         on a UNIX socket. Each connection is one notebook: it forks a monitor.
monitor  (trusted, runs no student code) starts a session, becomes a child
         subreaper, unshares a PID namespace and forks the sandbox. It relays
         the sandbox's output lines to the grader (capped), enforces the
         notebook's limits (CPU time of its control group, with a wall-clock
         backstop; memory), then kills the control group, the namespace and
         the process group, sweeps up any leftover process, removes the group
         and reports how it ended and what the notebook used.
sandbox  PID 1 of its namespace, and the only member of its own control group
         (memory including tmpfs, process count, CPU share; killed as a whole).
         It unshares mount, network, IPC and UTS namespaces, builds a fresh root
         (tmpfs, read-only binds of the interpreter and libraries, nothing else),
         pivots into it, drops to an unprivileged uid leased for the run, with
         no_new_privs, applies rlimits and a seccomp allowlist (graders/sandbox/seccomp.py),
         and runs the cells in an IPython shell. At each graded test cell it runs
         the cell's visible part and then sends that cell's answers as plain
         data. It never sees hidden tests, references or the gradebook.

What leaves the sandbox is data: one JSON object per line, prefixed "S " by
the monitor; the monitor's own lines are prefixed "M ". The sandbox's account
of its layers goes to the monitor on a separate pipe, closed before any
student code runs. A layer that cannot be applied stops the run before student
code (the grader reports the notebook as not graded), unless the grader asked
for a degraded mode, in which case it is skipped and reported.
"""
import ctypes
import ctypes.util
import errno
import gc
import json
import os
import platform
import resource
import select
import signal
import socket
import sys
import time

# ----------------------------------------------------------------------------- linux
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(platform.machine())

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.unshare.argtypes = [ctypes.c_int]
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_libc.sethostname.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


def _check(result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def unshare(flags):
    _check(_libc.unshare(flags), "unshare")


def mount(source, target, fstype, flags, data=None):
    enc = lambda s: s.encode() if isinstance(s, str) else s  # noqa: E731
    _check(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def umount(target, flags=0):
    _check(_libc.umount2(target.encode(), flags), f"umount {target}")


def prctl(option, arg2=0):
    _check(_libc.prctl(option, arg2, 0, 0, 0), f"prctl {option}")


def pivot_root(new_root, put_old):
    number = SECCOMP_LIB.seccomp_syscall_resolve_name(b"pivot_root") if SECCOMP_LIB else SYS_PIVOT_ROOT
    if number is None or number < 0:
        raise OSError(errno.ENOSYS, "pivot_root: unknown syscall number on this machine")
    _check(_libc.syscall(number, new_root.encode(), put_old.encode()), "pivot_root")


# ----------------------------------------------------------------------------- layers
# The seccomp allowlist (graders/sandbox/seccomp.py) and the control groups (graders/sandbox/cgroups.py) are
# loaded by file path, as the transport is: standard library only, nothing from `graders`.
SECCOMP = None      # the module
SECCOMP_LIB = None  # libseccomp, opened in the zygote
SECCOMP_CTX = None  # the compiled allowlist, built once in the zygote and loaded by each sandbox
CGROUPS = None
CGROUP_PLAN = {}


class LayerFailed(Exception):
    """An isolation layer could not be applied and degraded mode is off: run no student code."""


def _load_by_path(name, path):
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prepare_layers(config):
    """In the zygote: open libseccomp, compile the allowlist, find the control groups."""
    global SECCOMP, SECCOMP_LIB, SECCOMP_CTX, CGROUPS, CGROUP_PLAN
    probe = {}
    if config.get("isolate", True):
        try:
            SECCOMP = _load_by_path("_sandbox_seccomp", config["seccomp"])
            SECCOMP_LIB = SECCOMP.library()
            SECCOMP_CTX = SECCOMP.build(SECCOMP_LIB)
            probe["seccomp"] = True
        except OSError as exc:
            probe["seccomp"], probe["seccomp_error"] = False, str(exc)
    try:
        CGROUPS = _load_by_path("_sandbox_cgroups", config["cgroups"])
        CGROUP_PLAN = CGROUPS.detect()
        probe["control_group"] = "error" not in CGROUP_PLAN
        probe["control_group_detail"] = CGROUPS.describe(CGROUP_PLAN)
        if probe["control_group"]:
            CGROUPS.sweep(CGROUP_PLAN)      # groups of dead monitors, from an earlier zygote
    except OSError as exc:
        CGROUP_PLAN = {"error": str(exc)}
        probe["control_group"], probe["control_group_detail"] = False, str(exc)
    return probe


def seccomp_filter():
    """Load the allowlist compiled in the zygote into this process (needs no_new_privs)."""
    if SECCOMP_CTX is None:
        raise OSError(errno.ENOSYS, "no seccomp filter could be built (libseccomp missing?)")
    result = SECCOMP_LIB.seccomp_load(SECCOMP_CTX)
    if result < 0:
        raise OSError(-result, f"seccomp_load: {os.strerror(-result)}")


# ----------------------------------------------------------------------------- output
class Capture:
    """The outputs of one cell, as nbformat-shaped dicts, with a byte budget."""

    def __init__(self, limit):
        self.outputs, self.used, self.limit, self.truncated = [], 0, limit, False

    def _take(self, text):
        room = self.limit - self.used
        if room <= 0:
            self.truncated = True
            return ""
        if len(text) > room:
            self.truncated = True
            text = text[:room]
        self.used += len(text)
        return text

    def stream(self, name, text):
        text = self._take(str(text))
        if not text:
            return
        last = self.outputs[-1] if self.outputs else None
        if last and last["output_type"] == "stream" and last["name"] == name:
            last["text"] += text
        else:
            self.outputs.append({"output_type": "stream", "name": name, "text": text})

    def rich(self, kind, data, count=None):
        bundle = {}
        for mime, value in (data or {}).items():
            if mime not in RICH_MIMES:
                continue
            if isinstance(value, (list, tuple)):
                value = "".join(str(v) for v in value)
            elif isinstance(value, bytes):
                continue
            value = str(value)
            if mime != "text/plain" and len(value) > self.limit - self.used:
                self.truncated = True   # an image cut short is no image: leave it out
                continue
            value = self._take(value)
            if value:
                bundle[mime] = value
        if not bundle:
            return
        output = {"output_type": kind, "data": bundle, "metadata": {}}
        if kind == "execute_result":
            output["execution_count"] = count
        self.outputs.append(output)

    def error(self, ename, evalue, traceback):
        lines = [self._take(str(line)) for line in list(traceback or [])[:200]]
        self.outputs.append({"output_type": "error", "ename": str(ename)[:200],
                             "evalue": self._take(str(evalue)[:2000]), "traceback": lines})

    def clear(self):
        self.outputs = []


WORK = "/home/student"   # the notebook's working directory inside the sandbox
RICH_MIMES = ("text/plain", "image/png", "image/jpeg", "text/latex")
CURRENT = Capture(0)


class Stream:
    """sys.stdout / sys.stderr inside the sandbox: text goes to the current cell."""
    encoding, errors = "utf-8", "replace"

    def __init__(self, name):
        self.name = name

    def write(self, text):
        CURRENT.stream(self.name, text)
        return len(text) if isinstance(text, str) else 0

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        pass

    def isatty(self):
        return False

    def writable(self):
        return True

    def readable(self):
        return False

    def fileno(self):
        import io
        raise io.UnsupportedOperation("fileno")


class CellTimeout(BaseException):
    """The cell ran past its time limit (like nbgrader's CellTimeoutError).

    A BaseException, as KeyboardInterrupt is, so that `except Exception` in the
    student's code (or in the answer encoder) does not swallow it.
    """


# ----------------------------------------------------------------------------- zygote
SHELL = None
ENCODE = None
LAYER_PROBE = {}


def preload(config):
    """Everything a child needs, imported once, before any student code exists."""
    global SHELL, ENCODE
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
        os.environ[var] = "1"
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    os.environ.setdefault("MPLCONFIGDIR", config["scratch"])
    os.environ["IPYTHONDIR"] = os.path.join(config["scratch"], "ipython")
    import importlib.util
    spec = importlib.util.spec_from_file_location("_sandbox_transport", config["transport"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ENCODE = module.encode
    LAYER_PROBE.update(prepare_layers(config))
    for name in config.get("preload", ()):
        try:
            __import__(name)
        except Exception as exc:  # noqa: BLE001 - a missing optional library is not fatal
            sys.stderr.write(f"sandbox zygote: could not preload {name}: {exc}\n")
    try:
        import torch
        torch.set_num_threads(1)
    except Exception:  # noqa: BLE001
        pass
    SHELL = make_shell()
    try:
        SHELL.run_line_magic("matplotlib", "inline")
    except Exception as exc:  # noqa: BLE001
        sys.stderr.write(f"sandbox zygote: no inline matplotlib: {exc}\n")
    warm_up()


def warm_up():
    """Touch the lazily imported parts every notebook uses, so children need not (for the
    libraries preloaded: a zygote started for notebooks that never import torch skips it)."""
    SHELL.logger  # noqa: B018 - a lazy import inside IPython's run_cell
    for source in ("1/0", "def f(:"):
        try:
            compile(source, "<warm-up>", "exec") if ":" in source else eval(source)
        except Exception:  # noqa: BLE001 - format one traceback of each kind, once
            SHELL.InteractiveTB.structured_traceback(*sys.exc_info())
            SHELL.SyntaxTB.structured_traceback(*sys.exc_info())
    try:
        sympy = sys.modules["sympy"]
        n, p = sympy.symbols("N P", positive=True)
        expr = 4 * n + 12 * n / p
        ENCODE(expr)
        float(expr.subs({n: 1, p: 2}))
        # the first simplify and solve import their helpers (sympy.physics among them): ~0.25 s
        sympy.simplify(expr / n)
        sympy.solve(sympy.Eq(expr, 1), n)
        SHELL.display_formatter.format(expr)
        SHELL.display_formatter.format([1.5, "x"])
    except Exception:  # noqa: BLE001
        pass
    try:
        numpy, torch = sys.modules["numpy"], sys.modules["torch"]
        ENCODE(numpy.arange(3) * 2.0)
        ENCODE(torch.ones(2) * 2)
        state = torch.random.get_rng_state()
        exec(WARM_UP_TORCH, {})
        torch.random.set_rng_state(state)
    except Exception:  # noqa: BLE001
        pass
    try:
        plt = sys.modules["matplotlib.pyplot"]
        namespace = {}
        exec(WARM_UP_PLOT, namespace)
        SHELL.display_formatter.format(namespace["fig"])   # render once through the inline backend
        plt.close("all")
    except Exception:  # noqa: BLE001
        pass
    import linecache
    linecache.clearcache()


# First calls that cost a second or more in a fresh interpreter (lazy imports inside torch and
# matplotlib: optimizers, autograd, fonts, mathtext); paid once here instead of in every child.
WARM_UP_TORCH = """
import torch, torch.utils.checkpoint
w = torch.nn.Parameter(torch.zeros(8, dtype=torch.float64)); w.grad = torch.ones(8, dtype=torch.float64)
torch.nn.utils.clip_grad_norm_([w], 1.0)
for opt in (torch.optim.AdamW([w], lr=1e-3, weight_decay=0.1), torch.optim.Adam([w], lr=1e-3),
            torch.optim.SGD([w], lr=0.1, momentum=0.9)):
    opt.step(); opt.zero_grad()
sched = torch.optim.lr_scheduler.LambdaLR(torch.optim.SGD([w], lr=0.1), lambda step: 1.0); sched.step()
layer = torch.nn.Linear(4, 4)
layer(torch.ones(2, 4)).pow(2).sum().backward()
torch.ones(3).to(torch.float16); torch.ones(3).to(torch.bfloat16); torch.finfo(torch.float16)
try:
    torch.amp.GradScaler("cpu")
except Exception:
    pass
"""
WARM_UP_PLOT = """
import matplotlib.pyplot as plt
fig, (a, b) = plt.subplots(1, 2, figsize=(6, 3))
a.bar(["x", "y"], [1, 2], label="bars"); a.axhline(1.5, ls="--"); a.set_title("$x^2$ and $\\eta$")
b.plot([1, 2, 3], [1, 4, 9], marker="o"); b.set_yscale("log"); b.set_xlabel("step"); b.legend(["y"])
b.scatter([1, 2], [2, 3]); b.text(1, 2, "label"); fig.tight_layout()
"""


def make_shell():
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    class Hook(DisplayHook):
        def start_displayhook(self):
            self._bundle = None

        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            self._bundle = format_dict

        def finish_displayhook(self):
            if self._bundle:
                CURRENT.rich("execute_result", self._bundle, self.shell.execution_count)
            self._bundle = None

    class Publisher(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            CURRENT.rich("display_data", data)

        def clear_output(self, wait=False):
            CURRENT.clear()

    class Shell(InteractiveShell):
        displayhook_class = Hook
        display_pub_class = Publisher

        def _showtraceback(self, etype, evalue, stb):
            CURRENT.error(getattr(etype, "__name__", "Error"), evalue, stb)

        def enable_gui(self, gui=None):
            pass

        def system_piped(self, cmd):
            """`!cmd` as a kernel runs it, through pipes: IPython's own runs it on a pseudo-terminal,
            and the sandbox has none. Its output is the cell's, under the cell's bounds."""
            import subprocess
            if cmd.rstrip().endswith("&"):
                raise OSError("Background processes not supported.")
            done = subprocess.run(self.var_expand(cmd, depth=1), shell=True, executable="/bin/sh",
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, check=False)
            sys.stdout.write(done.stdout.decode("utf-8", "replace"))
            self.user_ns["_exit_code"] = done.returncode
            if self.system_raise_on_error and done.returncode != 0:
                raise subprocess.CalledProcessError(done.returncode, cmd)

        system = system_piped

    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "NoColor"
    config.InteractiveShell.autocall = 0
    return Shell.instance(config=config)


def zygote(config):
    """Serve one notebook per connection until the grader closes our stdin."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(config["socket"])
    os.chmod(config["socket"], 0o600)
    listener.listen(64)
    probe = probe_isolation(config)
    probe.update(LAYER_PROBE)
    gc.collect()
    gc.freeze()  # keep children from touching (and so copying) the preloaded heap
    status = open("/proc/self/status").read()
    vsz = int(status.split("VmSize:")[1].split()[0]) * 1024
    sys.stdout.write(json.dumps({"type": "ready", "pid": os.getpid(), "vsz": vsz, "isolation": probe}) + "\n")
    sys.stdout.flush()
    busy = {}  # monitor pids still running
    while True:
        try:
            ready, _, _ = select.select([listener, sys.stdin], [], [], 0.5)
        except InterruptedError:
            continue
        _reap(busy)
        if sys.stdin in ready and not sys.stdin.buffer.read1(1 << 16):
            break  # the grader went away: stop
        if listener in ready:
            conn, _ = listener.accept()
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    listener.close()
                    code = monitor(conn, config)
                finally:
                    os._exit(code)
            busy[pid] = True
            conn.close()
    listener.close()
    for pid in list(busy):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    if CGROUPS is not None and "error" not in CGROUP_PLAN:
        CGROUPS.sweep(CGROUP_PLAN, os.getpid(), only_orphans=False)
    return 0


def _reap(busy):
    while busy:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            busy.clear()
            return
        if pid == 0:
            return
        busy.pop(pid, None)
        _drop_group(pid)


def _drop_group(monitor_pid):
    """A monitor has ended: if it was killed before removing its control group, do it here."""
    if CGROUPS is None or "error" in CGROUP_PLAN:
        return
    group = CGROUPS.Group(CGROUP_PLAN, f"{CGROUPS.PREFIX}{os.getpid()}-{monitor_pid}")
    group.kill()
    group.remove()


def probe_isolation(config):
    """Which namespaces this machine lets us create (tried in a throwaway child)."""
    if not config.get("isolate", True):
        return {"namespaces": False, "reason": "isolation switched off by the grader"}
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        result = {"namespaces": True}
        try:
            unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)
            mount(None, "/", None, MS_REC | MS_PRIVATE)
        except OSError as exc:
            result = {"namespaces": False, "reason": str(exc)}
        os.write(write_fd, json.dumps(result).encode())
        os._exit(0)
    os.close(write_fd)
    data = os.read(read_fd, 4096)
    os.close(read_fd)
    os.waitpid(pid, 0)
    try:
        return json.loads(data)
    except ValueError:
        return {"namespaces": False, "reason": "the probe child died"}


# ----------------------------------------------------------------------------- monitor
def _send(conn, tag, obj):
    try:
        conn.sendall(tag + json.dumps(obj).encode() + b"\n")
    except OSError:
        pass


def _read_job(conn, limit):
    data, deadline = b"", time.monotonic() + 30
    conn.settimeout(30)
    while b"\n" not in data:
        chunk = conn.recv(1 << 20)
        if not chunk or len(data) > limit or time.monotonic() > deadline:
            raise ValueError("no job")
        data += chunk
    return json.loads(data.split(b"\n", 1)[0])


def lease_uid(config):
    """A uid no other sandbox on this machine is using, held (by flock) until this process exits.

    Several graders may run at once (a gate and an autograde, say), each with its
    own zygote; the uid is what the leftover sweep kills by, so it must be unique
    machine-wide, not merely within one zygote.
    """
    import fcntl
    folder = config["lease_dir"]
    os.makedirs(folder, mode=0o700, exist_ok=True)
    for slot in range(int(config.get("uid_count", 1 << 16))):
        fd = os.open(os.path.join(folder, str(slot)), os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        return config["uid_base"] + slot, fd
    raise OSError(errno.EAGAIN, "no free sandbox uid")


def monitor(conn, config):
    os.setsid()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    try:
        job = _read_job(conn, 256 << 20)
    except (ValueError, OSError):
        return 1
    limits = job["limits"]
    isolate = config.get("isolate", True) and job.get("isolate", True)
    strict = isolate and not config.get("allow_degraded", False)
    layers = {"pid_namespace": False, "subreaper": False}
    fork_at = time.monotonic()
    failed = []
    try:
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        layers["subreaper"] = True
    except OSError as exc:
        failed.append(f"subreaper: {exc}")
    if isolate:
        try:
            _simulated(config, "pid_namespace")
            unshare(CLONE_NEWPID)
            layers["pid_namespace"] = True
        except OSError as exc:
            layers["pid_namespace_error"] = str(exc)
            failed.append(f"pid namespace: {exc}")
    group = None
    try:
        _simulated(config, "control_group")
        if "error" in CGROUP_PLAN:
            raise OSError(errno.ENOTSUP, CGROUP_PLAN["error"])
        group = CGROUPS.Group(CGROUP_PLAN, f"{CGROUPS.PREFIX}{os.getppid()}-{os.getpid()}")
        group.create(int(limits["memory_bytes"]), int(limits["processes"]))
        layers["control_group"] = CGROUPS.describe(CGROUP_PLAN)
    except OSError as exc:
        group = None
        layers["control_group_error"] = str(exc)
        failed.append(f"control group: {exc}")
    if failed and strict:
        return refuse(conn, layers, failed)
    uid, lease = (lease_uid(config) if os.geteuid() == 0 and config.get("drop_uid", True)
                  else (os.geteuid(), None))
    import shutil
    import tempfile
    scratch = tempfile.mkdtemp(prefix="chapter-sandbox-", dir=config["scratch"])
    if os.geteuid() == 0:
        os.chown(scratch, uid, uid)
    read_fd, write_fd = os.pipe()
    setup_read, setup_write = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            conn.close()
            os.close(read_fd)
            os.close(setup_read)
            if lease is not None:
                os.close(lease)
            code = sandbox(job, config, write_fd, setup_write, uid, isolate, strict, scratch, group)
        except BaseException:  # noqa: BLE001 - never run the monitor's code in the child
            code = 71
        finally:
            os._exit(code)
    os.close(write_fd)
    os.close(setup_write)
    report = read_setup(setup_read, started + 30.0)
    ready_at = time.monotonic()
    os.close(setup_read)
    layers.update(report.get("layers") or {})
    times = {"fork_at": fork_at, "ready_at": ready_at, "setup_seconds": round(ready_at - started, 4)}
    times.update(report.get("times") or {})
    _send(conn, b"M ", {"type": "start", "monitor": os.getpid(), "sandbox": pid, "uid": uid, "layers": layers})
    if report.get("ok") is not True:
        # a layer failed (or setup died): no student code ran; the grader retries, then says NOT GRADED
        status = "unavailable"
        detail = "isolation failed, so no student code was run: " + "; ".join(
            str(f)[:200] for f in (report.get("failed") or ["the sandbox died while isolating itself"]))
        pending, used = b"", 0
    else:
        status, detail, pending, used = relay(conn, read_fd, pid, limits, started, group)
    if group is not None:
        group.kill()
    leftovers = kill_all(pid, uid if uid != os.geteuid() else None)
    exit_code = _reap_sandbox(pid)
    usage = group.usage() if group is not None else {}
    if status == "ok":
        drain(conn, read_fd, pending, int(limits["output_bytes"]) - used)
    os.close(read_fd)
    shutil.rmtree(scratch, ignore_errors=True)
    if group is not None and usage.get("oom_kills") and status in ("ok", "memory"):
        status, detail = "crashed", (f"its processes together used more than the notebook's "
                                     f"{_gib(limits['memory_bytes'])} memory limit, so it was stopped")
    elif status == "ok" and exit_code != 0:
        status, detail = "crashed", _describe_exit(exit_code)
    if group is not None and not group.remove():
        detail = (detail + "; " if detail else "") + "its control group could not be removed"
    times["end_at"] = time.monotonic()
    _send(conn, b"M ", {"type": "usage", **usage, **times})
    _send(conn, b"M ", {"type": "end", "status": status, "detail": detail, "exit": exit_code,
                        "leftovers": leftovers, "seconds": round(time.monotonic() - started, 3)})
    conn.close()
    return 0


def _gib(n):
    n = int(n)
    return f"{n / (1 << 30):g} GiB" if n >= 1 << 30 else f"{n / (1 << 20):g} MiB"


def _simulated(config, layer):
    """Test hook (set by the trusted grader, never by a job): pretend `layer` cannot be applied."""
    if layer in config.get("fail_layers", ()):
        raise OSError(errno.EPERM, f"{layer} refused (simulated failure)")


def refuse(conn, layers, failed):
    """Report a run that never started a sandbox, because the monitor could not isolate it."""
    _send(conn, b"M ", {"type": "start", "monitor": os.getpid(), "sandbox": None, "uid": None, "layers": layers})
    _send(conn, b"M ", {"type": "end", "status": "unavailable", "exit": None, "leftovers": 0, "seconds": 0,
                        "detail": "isolation failed, so no student code was run: " + "; ".join(failed)[:600]})
    conn.close()
    return 0


def read_setup(fd, deadline):
    """The sandbox's one report on its layers, written before any student code and then closed."""
    data = b""
    while len(data) < 1 << 16:
        left = deadline - time.monotonic()
        if left <= 0:
            return {"ok": False, "failed": ["the sandbox took too long to isolate itself"]}
        try:
            ready, _, _ = select.select([fd], [], [], left)
        except InterruptedError:
            continue
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        data += chunk
    try:
        report = json.loads(data)
    except ValueError:
        return {"ok": False}
    return report if isinstance(report, dict) else {"ok": False}


_EXIT = {}


def _describe_exit(code):
    if code is None:
        return "the sandbox vanished"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the grading process was killed by {name}"
    return f"the grading process exited with code {code} before finishing"


def relay(conn, read_fd, pid, limits, started, group=None):
    """Forward the sandbox's lines until it exits, times out, floods or runs out of memory.

    With a control group whose CPU time can be read, the notebook's limit counts the
    CPU time of all its processes (so a busy neighbour cannot use up an honest
    notebook's time), and the wall clock is only a generous backstop.
    """
    seconds = float(limits["notebook_seconds"])
    cpu_limited = group is not None and group.cpu_seconds() is not None
    wall = seconds * float(limits.get("wall_factor", 3.0)) if cpu_limited else seconds
    deadline = started + wall
    budget, line_cap = int(limits["output_bytes"]), int(limits["line_bytes"])
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    pending, total = b"", 0
    tick = 0.1 if group is not None else 0.2
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            how = f" (the {wall:g} s wall-clock backstop)" if cpu_limited else ""
            return "timeout", f"the notebook ran past its {seconds:g} s limit{how}", pending, total
        if group is not None:
            if group.oom_kills():
                return "memory", "", pending, total
            used = group.cpu_seconds() if cpu_limited else None
            if used is not None and used > seconds:
                return ("timeout", f"the notebook ran past its {seconds:g} s limit (CPU time of all its "
                        "processes)", pending, total)
        watch = [read_fd, conn] + ([pidfd] if pidfd is not None else [])
        try:
            ready, _, _ = select.select(watch, [], [], min(left, tick if group is not None or pidfd is None
                                                           else left))
        except InterruptedError:
            continue
        if conn in ready and _grader_gone(conn):
            return "gone", "the grading process went away", pending, total
        if pidfd is not None and pidfd in ready or pidfd is None and _exited(pid):
            if pidfd is not None:
                os.close(pidfd)
            return "ok", "", pending, total
        if read_fd in ready:
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                # every writer closed the pipe: wait for the sandbox itself
                time.sleep(0.01)
                if pidfd is not None:
                    select.select([pidfd], [], [], max(0.0, min(tick, deadline - time.monotonic())))
                continue
            total += len(chunk)
            if total > budget:
                return "flood", f"the notebook wrote more than {budget} bytes of output", b"", total
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line:
                    conn.sendall(b"S " + line + b"\n")
            if len(pending) > line_cap:
                return "flood", "the notebook wrote an over-long line of output", b"", total


def _grader_gone(conn):
    """The grader sends nothing after the job: a readable connection is one it closed (or junk,
    read and dropped)."""
    try:
        return not conn.recv(1 << 16, socket.MSG_DONTWAIT)
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return True


def _exited(pid):
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    if done:
        _EXIT[pid] = os.waitstatus_to_exitcode(status)
        return True
    return False


def drain(conn, read_fd, data, room):
    """After every writer is dead: forward complete lines still in the pipe."""
    os.set_blocking(read_fd, False)
    while len(data) <= room:
        try:
            chunk = os.read(read_fd, 1 << 16)
        except (BlockingIOError, OSError):
            break
        if not chunk:
            break
        data += chunk
    for line in data.split(b"\n")[:-1]:
        if line:
            conn.sendall(b"S " + line + b"\n")


def _children_of(pid):
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if int(fields[1]) == pid:
            kids.append(int(entry))
    return kids


def _owned_by(uid):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    found.append(int(entry))
            except OSError:
                continue
    return found


def kill_all(pid, uid):
    """Kill the sandbox, its session and every descendant; count what was still alive."""
    me = os.getpid()
    leftovers = set()
    for _ in range(50):
        victims = set(_children_of(me))
        if uid is not None:
            victims |= set(_owned_by(uid))
        victims.discard(pid)
        alive = [p for p in victims if _alive(p)]
        leftovers |= set(alive)
        for target in (pid, *alive):
            for kill in (os.killpg, os.kill):
                try:
                    kill(target, signal.SIGKILL)
                except OSError:
                    pass
        _reap_orphans(pid)
        if not alive:
            break
        time.sleep(0.01)
    return len(leftovers)


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
        return stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3] != b"Z"
    except OSError:
        return False


def _reap_orphans(keep):
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid == keep:
            _EXIT[pid] = os.waitstatus_to_exitcode(status)


def _reap_sandbox(pid):
    if pid in _EXIT and _EXIT[pid] is not None:
        return _EXIT[pid]
    try:
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status)
    except ChildProcessError:
        return _EXIT.get(pid)


# ----------------------------------------------------------------------------- sandbox
def sandbox(job, config, out_fd, setup_fd, uid, isolate, strict, scratch, group):
    """Isolate this process, run the notebook's cells, report, exit.

    Every layer is applied before any student code exists. Their account goes to the
    monitor once, on `setup_fd`, which is then closed. With `strict` (the default
    unless the grader allows a degraded mode), the first layer that fails stops
    here: the monitor reports the notebook as not graded and no student code runs.
    """
    os.setsid()
    try:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass
    limits = job["limits"]
    layers, failed, times = {}, [], {"sandbox_at": time.monotonic()}

    def layer(name, apply):
        try:
            _simulated(config, name)
            value = apply()
            layers[name] = True if value is None else value
            return True
        except (OSError, ValueError) as exc:
            layers[name + "_error"] = str(exc)
            failed.append(f"{name.replace('_', ' ')}: {exc}")
            if strict:
                raise LayerFailed() from None
            return False

    work = None
    try:
        if group is not None:
            layer("control_group", lambda: group.join() or CGROUPS.describe(group.plan))
        if isolate:
            def root():
                nonlocal work
                work = build_root(job, config, uid, layers, strict)
            if not layer("mount_namespace", root) and layers.get("mount_namespace_entered"):
                raise LayerFailed()   # half-built mounts: run no student code in them
        if work is None and uid != os.geteuid() and not config.get("python_world_readable", True):
            uid = os.geteuid()   # without a private root, an unprivileged uid could not read Python
            layers["uid_kept"] = "the Python installation is not readable by an unprivileged user"
        if work is None:
            work = scratch
            _copy_files(job.get("files", {}), work, uid)
        times["root_at"] = time.monotonic()
        layer("uid", lambda: drop_privileges(uid, layers, strict))
        layer("rlimits", lambda: apply_limits(limits))
        if isolate:
            layer("seccomp", seccomp_filter)
    except LayerFailed:
        _report_setup(setup_fd, {"ok": False, "failed": failed, "layers": layers})
        return 0
    times["isolated_at"] = time.monotonic()
    _report_setup(setup_fd, {"ok": True, "layers": layers, "times": times})
    quiet_fds(out_fd)
    os.chdir(work)
    environment(job, work)
    sys.path.insert(0, work)   # as a kernel has its notebook's folder: modules shipped beside it import
    emit = Emitter(out_fd)
    emit({"type": "isolation", "layers": layers})
    run_cells(job, limits, emit)
    emit({"type": "done"})
    return 0


def _report_setup(fd, report):
    data = json.dumps(report, default=str).encode()
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        pass
    os.close(fd)


def loopback_up(layers):
    """Bring up `lo` in the sandbox's own network namespace (it starts down).

    The namespace holds nothing but its loopback, so this reaches no other host: it lets a
    notebook's processes talk to each other on 127.0.0.1, as torch.distributed's gloo
    backend needs. Done while the process still has CAP_NET_ADMIN, before the uid drop.
    """
    import fcntl
    import struct
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            request = struct.pack("16sH14x", b"lo", 0)
            flags = struct.unpack("16sH14x", fcntl.ioctl(probe, siocgifflags, request))[1]
            fcntl.ioctl(probe, siocsifflags, struct.pack("16sH14x", b"lo", flags | iff_up))
        layers["loopback"] = True
    except OSError as exc:
        layers["loopback_detail"] = str(exc)


def build_root(job, config, uid, layers, strict=False):
    """A fresh root made of read-only binds, with private /tmp and /work; pivot into it.

    With `strict`, any part that fails raises (the caller then runs no student code);
    otherwise a part Linux refuses is skipped and recorded in `layers`.
    """
    def soft(name, exc):
        layers[name + "_error"] = str(exc)
        if strict:
            raise OSError(exc.errno, f"{name.replace('_', ' ')}: {exc.strerror or exc}")

    unshare(CLONE_NEWNS)
    layers["mount_namespace_entered"] = True
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    for flag, name in ((CLONE_NEWNET, "network_namespace"), (CLONE_NEWIPC, "ipc_namespace"),
                       (CLONE_NEWUTS, "uts_namespace")):
        try:
            _simulated(config, name)
            unshare(flag)
            layers[name] = True
        except OSError as exc:
            soft(name, exc)
    if layers.get("uts_namespace"):
        _libc.sethostname(b"sandbox", 7)
    if layers.get("network_namespace"):
        loopback_up(layers)
    root = config["mount_root"]
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=755")
    # private writable places first, so that a bind below one of them stays visible
    for name in ("tmp", WORK.strip("/")):
        target = root + "/" + name
        os.makedirs(target, exist_ok=True)
        mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV,
              f"size={int(job['limits']['tmp_bytes'])},mode=1777")
    _make_etc(root, uid)
    _make_dev(root, job["limits"])
    for path in config["binds"]:
        _bind(path, root)
    _copy_files(job.get("files", {}), root + WORK, uid)
    os.makedirs(root + "/proc", exist_ok=True)
    os.makedirs(root + "/.old", exist_ok=True)
    try:
        pivot_root(root, root + "/.old")
        os.chdir("/")
        umount("/.old", MNT_DETACH)
        os.rmdir("/.old")
        layers["pivot_root"] = True
    except OSError as exc:
        soft("pivot_root", exc)
        os.chroot(root)
        os.chdir("/")
        layers["chroot"] = True
    try:
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2")
    except OSError as exc:
        soft("proc", exc)
    try:
        _simulated(config, "read_only_root")
        mount(None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
        layers["read_only_root"] = True
    except OSError as exc:
        soft("read_only_root", exc)
    return WORK


def _bind(path, root):
    target = root + path
    if os.path.islink(path):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.lexists(target):
            os.symlink(os.readlink(path), target)
        return
    if not os.path.exists(path):
        return
    if os.path.isdir(path):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    mount(path, target, None, MS_BIND | MS_REC)
    mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID)


def _make_etc(root, uid):
    etc = root + "/etc"
    os.makedirs(etc, exist_ok=True)
    files = {
        "passwd": f"root:x:0:0:root:/root:/bin/sh\nstudent:x:{uid}:{uid}:student:/tmp:/bin/sh\n",
        "group": f"root:x:0:\nstudent:x:{uid}:\n",
        "hosts": "127.0.0.1 localhost\n::1 localhost\n",
        "hostname": "sandbox\n",
    }
    for name, text in files.items():
        with open(f"{etc}/{name}", "w") as fh:
            fh.write(text)
    for name in ("ld.so.cache", "ld.so.conf", "localtime", "nsswitch.conf", "alternatives"):
        if os.path.exists("/etc/" + name) and not os.path.exists(f"{etc}/{name}"):
            _bind("/etc/" + name, root)


def _make_dev(root, limits):
    dev = root + "/dev"
    os.makedirs(dev, exist_ok=True)
    mount("tmpfs", dev, "tmpfs", MS_NOSUID, "size=64k,mode=755")
    for name in ("null", "zero", "full", "random", "urandom"):
        open(f"{dev}/{name}", "a").close()
        mount(f"/dev/{name}", f"{dev}/{name}", None, MS_BIND)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{dev}/{name}")
    os.makedirs(dev + "/shm")
    mount("tmpfs", dev + "/shm", "tmpfs", MS_NOSUID | MS_NODEV,
          f"size={int(limits['tmp_bytes'])},mode=1777")


def _copy_files(files, dest, uid):
    total = 0
    for rel, src in sorted(files.items()):
        rel = os.path.normpath(rel)
        if rel.startswith("..") or os.path.isabs(rel):
            continue
        target = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        try:
            with open(src, "rb") as fh:
                data = fh.read(64 << 20)
        except OSError:
            continue
        total += len(data)
        if total > 256 << 20:
            break
        with open(target, "wb") as fh:
            fh.write(data)
        if os.geteuid() == 0:
            os.chown(target, uid, uid)



def drop_privileges(uid, layers, strict=False):
    """Become the leased unprivileged uid, with no_new_privs; return the uid now in force."""
    if os.geteuid() == 0 and uid != 0:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    if strict and (os.geteuid() == 0 or os.getuid() == 0):
        raise OSError(errno.EPERM, "the sandbox would still run as root")
    try:
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        layers["no_new_privs"] = True
    except OSError:
        if strict:
            raise
    try:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # cleared by the credential change
    except OSError:
        pass
    return os.geteuid()


def apply_limits(limits):
    """The per-process rlimits: the last layer, under the control group's per-notebook limits."""
    status = open("/proc/self/status").read() if os.path.exists("/proc/self/status") else ""
    vsz = int(status.split("VmSize:")[1].split()[0]) * 1024 if "VmSize:" in status else 0
    wanted = {
        resource.RLIMIT_AS: vsz + int(limits["memory_bytes"]),
        resource.RLIMIT_NPROC: int(limits["processes"]),
        resource.RLIMIT_FSIZE: int(limits["file_bytes"]),
        resource.RLIMIT_NOFILE: 256,
        resource.RLIMIT_CORE: 0,
        resource.RLIMIT_CPU: int(limits["notebook_seconds"]) + 5,
    }
    for which, value in wanted.items():
        resource.setrlimit(which, (value, value))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an over-size write raises, it does not kill
    return True


def quiet_fds(keep):
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    os.closerange(3, keep)
    os.closerange(keep + 1, 4096)


def environment(job, work):
    keep = {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                      "NUMEXPR_NUM_THREADS", "MPLBACKEND") if k in os.environ}
    os.environ.clear()
    os.environ.update(keep)
    os.environ.update({
        "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
        "MPLCONFIGDIR": "/tmp/.matplotlib", "IPYTHONDIR": "/tmp/.ipython", "PWD": work,
        "NBGRADER_EXECUTION": "autograde",
    })
    os.environ.update({str(k): str(v) for k, v in job.get("env", {}).items()})
    import tempfile
    tempfile.tempdir = None


class Emitter:
    """Writes one JSON line per message with json's C encoder, bound before student code runs,
    so that patching json, isinstance or os.write later does not change what is sent."""

    def __init__(self, fd):
        from json import encoder
        self.fd, self.write, self.join = fd, os.write, "".join
        self.make = encoder.c_make_encoder or None
        self.basestring = encoder.encode_basestring_ascii
        self.fallback = json.dumps

    def _encode(self, obj):
        if self.make is None:
            return self.fallback(obj, allow_nan=False, default=str)
        iterencode = self.make({}, str, self.basestring, None, ": ", ", ", False, False, False)
        return self.join(iterencode(obj, 0))

    def __call__(self, obj):
        try:
            data = memoryview((self._encode(obj) + "\n").encode())
        except (ValueError, TypeError, RecursionError):
            data = memoryview(b'{"type": "unencodable"}\n')
        try:
            while data:
                data = data[self.write(self.fd, data):]
        except OSError:
            pass


def _alarm(signum, frame):
    _disarm()   # one interrupt per cell: the other timer must not give a cell that swallowed it a second one
    raise CellTimeout("the cell ran past its time limit")


WALL_FACTOR = 3.0


def _arm(seconds):
    """The cell's limit in this process's own CPU time, with a generous wall-clock backstop:
    time a busy neighbour takes from the machine is not charged to this notebook."""
    signal.setitimer(signal.ITIMER_PROF, seconds)
    signal.setitimer(signal.ITIMER_REAL, seconds * WALL_FACTOR)


def _disarm():
    signal.setitimer(signal.ITIMER_PROF, 0)
    signal.setitimer(signal.ITIMER_REAL, 0)


def run_cells(job, limits, emit):
    global CURRENT, WALL_FACTOR
    signal.signal(signal.SIGALRM, _alarm)
    signal.signal(signal.SIGPROF, _alarm)
    WALL_FACTOR = float(limits.get("wall_factor", 3.0))
    stdout, stderr = Stream("stdout"), Stream("stderr")
    sys.stdout, sys.stderr = stdout, stderr
    sys.stdin = open(os.devnull)
    shell = SHELL
    if job.get("figures") == "drawn":
        figures_drawn_only(shell)
    seconds = float(limits["cell_seconds"])
    for cell in job["cells"]:
        CURRENT = Capture(int(limits["cell_output_bytes"]))
        emit({"type": "begin", "index": cell["index"]})
        raised, ename, timed_out = False, "", False
        started = time.monotonic()
        try:
            _arm(seconds)
            sys.stdout, sys.stderr = stdout, stderr
            result = shell.run_cell(cell["source"], store_history=True, silent=False)
            _disarm()
            error = result.error_before_exec or result.error_in_exec
            if error is not None:
                raised, ename = True, type(error).__name__
                timed_out = isinstance(error, CellTimeout)
        except BaseException as exc:  # noqa: BLE001 - the student's code may raise anything
            _disarm()
            raised, ename, timed_out = True, type(exc).__name__, isinstance(exc, CellTimeout)
            CURRENT.error(ename, "the cell could not be run to the end", [])
        message = {"type": "cell", "index": cell["index"], "raised": raised, "ename": ename,
                   "timeout": timed_out, "seconds": round(time.monotonic() - started, 4), "started_at": started}
        if cell.get("test") and not timed_out:   # a failed visible check still leaves the answers to grade
            read_at = time.monotonic()
            message["answers"] = snapshot(cell, shell, seconds)
            message["answer_seconds"] = round(time.monotonic() - read_at, 4)
        sys.stdout, sys.stderr = stdout, stderr
        message["outputs"] = CURRENT.outputs
        message["truncated"] = CURRENT.truncated
        emit(message)


def figures_drawn_only(shell):
    """Build every figure, but display it as text instead of rasterizing it to PNG (a run whose
    only use is its grades: the gate's). Nothing a cell computes changes; only the image is left out."""
    try:
        from matplotlib.figure import Figure
    except Exception:  # noqa: BLE001 - no matplotlib: no figures to leave out
        return
    for mime in ("image/png", "image/jpeg", "image/svg+xml", "application/pdf"):
        formatter = shell.display_formatter.formatters.get(mime)
        if formatter is not None:
            formatter.pop(Figure, None)


def snapshot(cell, shell, seconds):
    """The cell's answers as plain data (the same rule as graders.notebook.gather)."""
    answers = {}
    try:
        _arm(seconds)
        namespace = shell.user_ns
        probes = cell.get("probes", {})
        for key in cell.get("keys", []):
            try:
                if key in probes:
                    function = namespace.get(probes[key]["function"])
                    if not callable(function):
                        continue
                    outputs = []
                    for args in probes[key]["calls"]:
                        try:
                            outputs.append(ENCODE(function(*args)))
                        except Exception as exc:  # noqa: BLE001 - the student's function failed
                            outputs.append({"error": f"raised {type(exc).__name__}"})
                    answers[key] = outputs
                elif key in namespace:
                    answers[key] = ENCODE(namespace[key])
            except BaseException as exc:  # noqa: BLE001
                if isinstance(exc, CellTimeout):
                    raise
                answers[key] = {"error": f"could not be read ({type(exc).__name__})"}
        _disarm()
    except BaseException:  # noqa: BLE001 - a timeout while reading answers
        _disarm()
        answers["__timeout__"] = True
    return answers


def leave_when_orphaned():
    """While the zygote preloads (seconds), a thread that ends it at once if the grader goes away
    (our stdin closes): otherwise the imports would go on and write their caches into the scratch
    folder (HOME) after the grader, or the next one, has removed it. Call the result to stop it
    before the zygote forks anything."""
    import threading
    wake, woken = os.pipe()          # stop() writes here, so the thread ends without waiting on a timeout

    def watch():
        while True:
            try:
                ready, _, _ = select.select([0, wake], [], [])
                if wake in ready:
                    return
                if not os.read(0, 1 << 16):
                    os._exit(0)
            except InterruptedError:
                continue
            except OSError:
                os._exit(0)

    thread = threading.Thread(target=watch, name="orphan-watch", daemon=True)
    thread.start()

    def stop():
        os.write(woken, b"x")
        thread.join()
        os.close(wake)
        os.close(woken)
    return stop


def main():
    config = json.loads(sys.stdin.buffer.readline())
    stop_watching = leave_when_orphaned()
    for path in config.get("site", ()):
        if path not in sys.path:
            sys.path.append(path)
    preload(config)
    stop_watching()
    return zygote(config)


if __name__ == "__main__":
    sys.exit(main())
