"""The sandbox side of `chapter autograde`: a warm zygote that runs students' cells.

This file is NOT part of the `graders` package at run time. The trusted
grader starts it by path, as ``python -I -S worker.py``, with a
sys.path made of the standard library and site-packages only, so that
`graders` (and with it every reference solution) cannot be imported from
here. It imports nothing from `graders`, and neither do the files it loads by
path beside it (`load`), one per job:

linux.py    the Linux calls (unshare, mount, pivot_root, prctl) and the /proc it reads
layers.py   the isolation layers, in order (`LAYERS`), applied before any student code
monitor.py  the trusted monitor of one notebook, and the sandbox process it forks
cells.py    the warm IPython shell and the running of the cells

The one piece shared with the grader, the answer encoder (`graders/transport.py`,
standard library only), is loaded by file path under another module name before
any student code runs.

Three kinds of process live here:

zygote   imports the libraries the course's notebooks use (numpy, sympy, torch, matplotlib:
         those listed in its config) and IPython once, then waits on a UNIX socket. Each
         connection is one notebook: it forks a monitor. With torch in its list, it reports
         ready without it and serves the notebooks that never name torch on a second socket;
         a second zygote, forked from it then, imports torch and serves the first socket.
monitor  (trusted, runs no student code) starts a session, becomes a child
         subreaper, unshares a PID namespace and forks the sandbox. It relays
         the sandbox's output lines to the grader (capped), enforces the
         notebook's limits (CPU time of its control group, with a wall-clock
         backstop; memory), then kills the control group, the namespace and
         the process group, sweeps up any leftover process, removes the group
         and reports how it ended and what the notebook used.
sandbox  PID 1 of its namespace, and the only member of its own control group
         (memory including tmpfs, process count, CPU share; killed as a whole).
         It applies `layers.LAYERS` in order: it joins its control group, unshares
         mount, network, IPC and UTS namespaces, builds a fresh root (tmpfs, read-only
         binds of the interpreter and libraries, nothing else), pivots into it, drops to
         an unprivileged uid leased for the run, with no_new_privs, applies rlimits and a
         seccomp allowlist (graders/sandbox/seccomp.py), and runs the cells in an IPython
         shell. At each graded test cell it runs the cell's visible part and then sends
         that cell's answers as plain data. It never sees references or the gradebook,
         nor the hidden tests of a cell the course's checks grade (a test cell no check
         knows, as in a plain nbgrader course, runs whole, as nbgrader runs it).

What leaves the sandbox is data: one JSON object per line, prefixed "S " by
the monitor; the monitor's own lines are prefixed "M " (graders/sandbox/protocol.py
writes them down). The sandbox's account of its layers goes to the monitor on a
separate pipe, closed before any student code runs. A layer that cannot be applied
stops the run before student code (the grader reports the notebook as not graded),
unless the grader asked for a degraded mode, in which case it is skipped and reported.
"""
import gc
import importlib.util
import json
import os
import select
import signal
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name, path=None):
    """The sandbox file `name` (beside this one, or at `path`), loaded by path once as `_sandbox_<name>`.
    The files import each other under those names, so they are loaded in order: linux first."""
    key = "_sandbox_" + name
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, path or os.path.join(HERE, name + ".py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[key]
            raise
    return sys.modules[key]


linux = load("linux")
layers = load("layers")
cells = load("cells")
monitor = load("monitor")
protocol = load("protocol")
LAYER_PROBE = {}


def _listen(path):
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(64)
    return listener


def zygote(config):
    """Serve one notebook per connection until the grader closes our stdin.

    With `config.later` (torch's modules, seconds to import), the zygote says it is ready once it
    has `config.preload`, and serves notebooks that need none of `later` on `config.light_socket`
    at once. It forks a second zygote, which imports `later` and then serves `config.socket`
    (connections wait there until it does). Both apply the same layers (the second is a copy of
    the first), and name their sandboxes' control groups by the first one's pid. If the second
    dies, the first stops too, so the grader sees one zygote, alive or not; when the first stops,
    it reaps the second (`_stop_second`)."""
    layers.ZYGOTE_ID = os.getpid()
    listener = _listen(config.socket)
    light = _listen(config.light_socket) if config.light_socket else None
    probe = layers.probe_isolation(config)
    probe.update(LAYER_PROBE)
    _freeze()
    vsz = linux.own_vm_size()
    sys.stdout.write(json.dumps({"type": "ready", "pid": os.getpid(), "vsz": vsz, "isolation": probe}) + "\n")
    sys.stdout.flush()
    if light is None:
        linux.collapse_heap()   # after "ready" (it takes ~50 ms): each fork and exit then costs less
        return serve(listener, config)
    serving_read, serving_write = os.pipe()   # the second says here that it serves
    second = os.fork()
    if second == 0:
        code = 1
        try:
            light.close()
            os.close(serving_read)
            gc.disable()
            cells.preload_later(config)
            _freeze()
            linux.collapse_heap()
            os.write(serving_write, b"s")
            os.close(serving_write)
            code = serve(listener, config, sweep=False)   # the first zygote, and the grader, sweep the groups
        except BaseException:  # noqa: BLE001 - say why in the zygote's log; the first zygote then stops
            import traceback
            traceback.print_exc()
        finally:
            os._exit(code)
    listener.close()
    os.close(serving_write)
    linux.collapse_heap()
    return serve(light, config, second=second, second_serving=serving_read)


def _freeze():
    gc.collect()
    gc.freeze()  # keep children from touching (and so copying) the preloaded heap
    gc.enable()  # off while preloading (main): every fork from here on collects as usual


def serve(listener, config, second=None, sweep=True, second_serving=None):
    """Fork a monitor for each connection on `listener` until our stdin closes (or, in the first
    of two zygotes, until the `second` one has died; `second_serving` is readable once it serves)."""
    busy = {}  # monitor pids still running
    while True:
        try:
            ready, _, _ = select.select([listener, sys.stdin], [], [], 0.5)
        except InterruptedError:
            continue
        if _reap(busy, second):
            sys.stderr.write("sandbox zygote: the second zygote (the one with torch) died; stopping\n")
            break
        if sys.stdin in ready and not sys.stdin.buffer.read1(1 << 16):
            break  # the grader went away: stop
        if listener in ready:
            conn, _ = listener.accept()
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    listener.close()
                    code = monitor.monitor(conn, config)
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
    if second is not None:
        _stop_second(second, second_serving)
    if sweep and layers.CGROUPS is not None and "error" not in layers.CGROUP_PLAN:
        layers.CGROUPS.sweep(layers.CGROUP_PLAN, layers.ZYGOTE_ID, only_orphans=False)
    return 0


def _reap(busy, second=None):
    """Reap ended monitors (and remove a group one left); True if the `second` zygote has ended."""
    while busy or second is not None:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            busy.clear()
            return second is not None
        if pid == 0:
            return False
        if pid == second:
            return True
        if busy.pop(pid, None):
            _drop_group(pid)
    return False


def _stop_second(pid, serving_fd):
    """Reap the second zygote, so that it is never left behind us and its work (its sandboxes')
    is accounted to us. Once it serves, it stops when we do (it shares our stdin): it is given
    5 s. While it still imports torch, it has nothing to finish, and is killed at once."""
    serving = serving_fd is not None and bool(select.select([serving_fd], [], [], 0)[0])
    _wait_for(pid, 5.0 if serving else 0.0)


def _wait_for(pid, seconds):
    """Reap `pid`, killed if it has not ended within `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
        except ChildProcessError:
            return   # already reaped (it was the one that died first)
        if time.monotonic() > deadline:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
            return
        time.sleep(0.005)


def _drop_group(monitor_pid):
    """A monitor has ended: if it was killed before removing its control group, do it here."""
    cgroups, plan = layers.CGROUPS, layers.CGROUP_PLAN
    if cgroups is None or "error" in plan:
        return
    group = cgroups.Group(plan, f"{cgroups.PREFIX}{layers.ZYGOTE_ID}-{monitor_pid}")
    group.kill()
    group.remove()


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
    # The preload's imports make millions of objects and few cycles; the cyclic collector would
    # walk the growing heap over and over (~15% of the imports' time). It runs once, in zygote().
    gc.disable()
    config = protocol.SandboxConfig.from_json(json.loads(sys.stdin.buffer.readline()))
    stop_watching = leave_when_orphaned()
    for path in config.site:
        if path not in sys.path:
            sys.path.append(path)
    LAYER_PROBE.update(layers.prepare_layers(config))
    cells.preload(config)
    stop_watching()
    return zygote(config)


if __name__ == "__main__":
    sys.exit(main())
