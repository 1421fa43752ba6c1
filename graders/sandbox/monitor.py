"""The monitor: the trusted process between one sandbox and the grader. It runs no student code.

Standard library only, nothing from `graders`; loaded by path (as `_sandbox_monitor`) by
`worker.py`. Forked by the zygote for each connection, it starts a session, becomes a child
subreaper, unshares a PID namespace, makes the notebook's control group and forks the sandbox
(`sandbox`). It relays the sandbox's output lines to the grader (capped), enforces the notebook's
limits, then kills and sweeps everything the notebook left and reports how it ended. What it sends
the grader ("M " lines: start, usage, end) is written down in graders/sandbox/protocol.py.
"""
import errno
import json
import os
import select
import signal
import socket
import time

import _sandbox_cells as cells
import _sandbox_layers as isolation
from _sandbox_linux import PR_SET_PDEATHSIG, alive, children_of, owned_by, prctl

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
    folder = config.lease_dir
    os.makedirs(folder, mode=0o700, exist_ok=True)
    for slot in range(config.uid_count):
        fd = os.open(os.path.join(folder, str(slot)), os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        return config.uid_base + slot, fd
    raise OSError(errno.EAGAIN, "no free sandbox uid")


def monitor(conn, config):
    os.setsid()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    try:
        job = _read_job(conn, 256 << 20)
    except (ValueError, OSError):
        return 1
    limits = job["limits"]
    isolate = config.isolate and job.get("isolate", True)
    strict = isolate and not config.allow_degraded
    fork_at = time.monotonic()
    setup = isolation.Setup(job, config, None, isolate, strict, None, None)
    setup.layers.update({"pid_namespace": False, "subreaper": False})
    for layer in isolation.MONITOR_LAYERS:   # every one is tried: the refusal names all that failed
        isolation.apply(setup, layer)
    layers, failed, group = setup.layers, setup.failed, setup.group
    if failed and strict:
        return refuse(conn, layers, failed)
    uid, lease = (lease_uid(config) if os.geteuid() == 0 and config.drop_uid
                  else (os.geteuid(), None))
    import shutil
    import tempfile
    scratch = tempfile.mkdtemp(prefix="chapter-sandbox-", dir=config.scratch)
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
            code = sandbox(isolation.Setup(job, config, uid, isolate, strict, scratch, group), write_fd, setup_write)
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
    shutil.rmtree(scratch, ignore_errors=True)   # after the answer: every process that could write here is dead
    return 0


def _gib(n):
    n = int(n)
    return f"{n / (1 << 30):g} GiB" if n >= 1 << 30 else f"{n / (1 << 20):g} MiB"


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
                # every writer closed the pipe: wait for the sandbox itself (on its pidfd, which
                # wakes the moment it exits; without one, poll, so as not to spin on the EOF)
                if pidfd is not None:
                    select.select([pidfd], [], [], max(0.0, min(tick, deadline - time.monotonic())))
                else:
                    time.sleep(0.01)
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






def kill_all(pid, uid):
    """Kill the sandbox, its session and every descendant; count what was still alive."""
    me = os.getpid()
    leftovers = set()
    for _ in range(50):
        victims = set(children_of(me))
        if uid is not None:
            victims |= set(owned_by(uid))
        victims.discard(pid)
        living = [p for p in victims if alive(p)]
        leftovers |= set(living)
        for target in (pid, *living):
            for kill in (os.killpg, os.kill):
                try:
                    kill(target, signal.SIGKILL)
                except OSError:
                    pass
        _reap_orphans(pid)
        if not living:
            break
        time.sleep(0.01)
    return len(leftovers)




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


def sandbox(setup, out_fd, setup_fd):
    """Isolate this process (`layers.LAYERS`, in order), run the notebook's cells, report, exit.

    Every layer is applied before any student code exists. Their account goes to the
    monitor once, on `setup_fd`, which is then closed. With `setup.strict` (the default
    unless the grader allows a degraded mode), the first layer that fails stops
    here: the monitor reports the notebook as not graded and no student code runs.
    """
    os.setsid()
    try:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass
    if not isolation.isolate(setup):
        _report_setup(setup_fd, {"ok": False, "failed": setup.failed, "layers": setup.layers})
        return 0
    setup.times["isolated_at"] = time.monotonic()
    _report_setup(setup_fd, {"ok": True, "layers": setup.layers, "times": setup.times})
    cells.run_notebook(setup.job, out_fd, setup.work, setup.layers)
    return 0


def _report_setup(fd, report):
    data = json.dumps(report, default=str).encode()
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        pass
    os.close(fd)

