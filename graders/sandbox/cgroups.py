"""One control group per sandbox: memory (tmpfs included), process count, CPU share, kill as a whole.

Standard library only, and importing nothing from `graders`: the sandbox
zygote (`worker.py`, started as ``python -I -S``) loads this file by
path, as it loads `transport.py`; the trusted side imports it as
`graders.sandbox.cgroups` to sweep up groups a killed zygote left behind.

What the machine offers is detected, not assumed. Each controller is taken
from the unified (v2) hierarchy where it is enabled there and can be handed
down to child groups, else from its own v1 hierarchy:

==========  =============================================  ====================================
controller  cgroup v2                                      cgroup v1
==========  =============================================  ====================================
memory      memory.max, memory.swap.max = 0,               memory.limit_in_bytes,
            memory.oom.group; peak from memory.peak         memory.memsw.limit_in_bytes where
                                                           present; peak from max_usage_in_bytes
pids        pids.max                                       pids.max
cpu         cpu.weight (each sandbox one equal share)      cpu.shares
cpu time    cpu.stat usage_usec                            cpuacct.usage
kill        cgroup.kill                                    freezer: freeze, SIGKILL all, thaw
==========  =============================================  ====================================

A group is named ``chapter-sandbox-<zygote pid>-<monitor pid>``, made inside the
grader's own group in every hierarchy, so that whoever outlives a dead
zygote or monitor can find its groups, kill what is in them and remove them.
"""
import os
import signal
import time

PREFIX = "chapter-sandbox-"
REQUIRED = ("memory", "pids", "cpu")
SHARE_V1, WEIGHT_V2 = 1024, 100      # the default share: every sandbox gets the same


class CgroupError(OSError):
    pass


def _read(path, default=None):
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        if default is None:
            raise
        return default


def _write(path, value):
    with open(path, "w") as fh:
        fh.write(str(value))


def _mounts(mountinfo="/proc/self/mountinfo"):
    """[(mount point, root inside the hierarchy, 'cgroup' | 'cgroup2', super options)]"""
    found = []
    for line in _read(mountinfo, "").splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        unescape = lambda s: s.replace("\\040", " ")  # noqa: E731
        found.append((unescape(fields[4]), unescape(fields[3]), tail[0], tail[2].split(",")))
    return found


def _own_paths(proc_cgroup="/proc/self/cgroup"):
    """{controller or '' (v2): this process's group path}"""
    paths = {}
    for line in _read(proc_cgroup, "").splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            paths[name] = path
    return paths


def _join(mount, root, path):
    rel = os.path.relpath(path, root) if path.startswith(root) else path.lstrip("/")
    return os.path.normpath(os.path.join(mount, "" if rel == "." else rel))


def detect():
    """Where to make sandbox groups, per controller: {"memory": (version, parent dir), ...}.

    Also "kill" (cgroup v2's cgroup.kill, or the v1 freezer) and "cpuacct" when
    the group's CPU time can be read. Returns {"error": why} when a required
    controller cannot be had.
    """
    mounts, own = _mounts(), _own_paths()
    plan, notes = {}, []
    for mount, root, kind, options in mounts:
        if kind != "cgroup2":
            continue
        base = _join(mount, root, own.get("", "/"))
        enabled = set(_read(os.path.join(base, "cgroup.controllers"), "").split())
        delegated = set(_read(os.path.join(base, "cgroup.subtree_control"), "").split())
        for name in REQUIRED:
            if name in enabled and name not in delegated:
                try:
                    _write(os.path.join(base, "cgroup.subtree_control"), "+" + name)
                    delegated.add(name)
                except OSError as exc:   # a group holding processes cannot hand controllers down
                    notes.append(f"cgroup v2 {name} is not delegable from {base} ({exc.strerror})")
        for name in REQUIRED:
            if name in delegated:
                plan[name] = (2, base)
        if plan and os.path.exists(os.path.join(base, "cgroup.kill")):
            plan["kill"] = (2, base)
        if "cpu" in plan:
            plan["cpuacct"] = plan["cpu"]
        break
    for mount, root, kind, options in mounts:
        if kind != "cgroup":
            continue
        for name in ("memory", "pids", "cpu", "freezer", "cpuacct"):
            if name in options and name not in plan:
                base = _join(mount, root, own.get(name, "/"))
                if os.access(base, os.W_OK):
                    plan[name if name != "freezer" else "kill"] = (1, base)
    missing = [name for name in REQUIRED if name not in plan]
    if missing:
        return {"error": "no usable control group for " + ", ".join(missing)
                         + (" (" + "; ".join(notes) + ")" if notes else "")}
    return plan


def describe(plan):
    """A short text for the summary: which controller from which version."""
    if "error" in plan:
        return plan["error"]
    return ", ".join(f"{name} v{plan[name][0]}" for name in ("memory", "pids", "cpu", "kill", "cpuacct")
                     if name in plan)


class Group:
    """The control group of one sandbox, in every hierarchy the plan names."""

    def __init__(self, plan, name):
        self.plan, self.name = plan, name
        self.dirs = {}
        for what, (version, base) in plan.items():
            if what != "error":
                self.dirs[what] = (version, os.path.join(base, name))

    def _dir(self, what):
        return self.dirs[what][1] if what in self.dirs else None

    def create(self, memory_bytes, processes):
        """Make the group and set its limits; raise CgroupError if any limit cannot be set."""
        try:
            for path in sorted({d for _, d in self.dirs.values()}):
                os.makedirs(path, exist_ok=True)
            version, path = self.dirs["memory"]
            if version == 2:
                _write(f"{path}/memory.max", int(memory_bytes))
                if os.path.exists(f"{path}/memory.swap.max"):
                    _write(f"{path}/memory.swap.max", 0)
                if os.path.exists(f"{path}/memory.oom.group"):
                    _write(f"{path}/memory.oom.group", 1)
            else:
                _write(f"{path}/memory.limit_in_bytes", int(memory_bytes))
                if os.path.exists(f"{path}/memory.memsw.limit_in_bytes"):
                    _write(f"{path}/memory.memsw.limit_in_bytes", int(memory_bytes))
            _write(f"{self._dir('pids')}/pids.max", int(processes))
            version, path = self.dirs["cpu"]
            if version == 2:
                _write(f"{path}/cpu.weight", WEIGHT_V2)
            else:
                _write(f"{path}/cpu.shares", SHARE_V1)
        except OSError as exc:
            self.remove()
            raise CgroupError(exc.errno, f"control group {self.name}: {exc}") from None
        return self

    def join(self):
        """Move the calling process into the group (every hierarchy).

        A single-threaded process enters a v1 hierarchy through its `tasks` file, as its own thread
        ("0"): moving the only thread moves the whole process, and the kernel then skips its global
        threadgroup lock, whose first writer after a quiet spell waits for an RCU grace period
        (cgroup.procs: ~10 ms a sandbox measured here, `tasks`: ~0.5 ms). Otherwise cgroup.procs.
        """
        versions = {d: version for version, d in self.dirs.values()}
        single = _single_threaded()
        for path in sorted(versions):
            name = "tasks" if single and versions[path] == 1 else "cgroup.procs"
            try:
                _write(f"{path}/{name}", 0)
            except OSError as exc:
                raise CgroupError(exc.errno, f"joining control group {path}: {exc.strerror}") from None

    def pids(self):
        for what in ("kill", "pids", "memory"):
            path = self._dir(what)
            if path:
                text = _read(f"{path}/cgroup.procs", "")
                return [int(p) for p in text.split() if p.isdigit()]
        return []

    def kill(self, timeout=5.0):
        """Kill every process in the group at once; True when the group is empty."""
        deadline = time.monotonic() + timeout
        kill = self.dirs.get("kill")
        while time.monotonic() < deadline:
            members = self.pids()
            if not members:
                return True
            if kill and kill[0] == 2:
                try:
                    _write(f"{kill[1]}/cgroup.kill", 1)
                except OSError:
                    _kill_each(members)
            elif kill:
                _freeze_and_kill(kill[1], deadline)
            else:
                _kill_each(members)
            time.sleep(0.005)
        return not self.pids()

    def usage(self):
        """What the group used: peak memory, its limit, OOM kills, CPU seconds, refused forks."""
        out = {}
        version, path = self.dirs["memory"]
        if version == 2:
            out["memory_peak"] = _int(_read(f"{path}/memory.peak", ""))
            out["memory_limit"] = _int(_read(f"{path}/memory.max", ""))
            out["oom_kills"] = _field(_read(f"{path}/memory.events", ""), "oom_kill")
        else:
            out["memory_peak"] = _int(_read(f"{path}/memory.max_usage_in_bytes", ""))
            out["memory_limit"] = _int(_read(f"{path}/memory.limit_in_bytes", ""))
            out["oom_kills"] = _field(_read(f"{path}/memory.oom_control", ""), "oom_kill")
        out["pids_refused"] = _field(_read(f"{self._dir('pids')}/pids.events", ""), "max")
        out["cpu_seconds"] = self.cpu_seconds()
        return out

    def oom_kills(self):
        version, path = self.dirs["memory"]
        if version == 2:
            return _field(_read(f"{path}/memory.events", ""), "oom_kill") or 0
        return _field(_read(f"{path}/memory.oom_control", ""), "oom_kill") or 0

    def cpu_seconds(self):
        """CPU time of everything the group ran, or None where it cannot be read."""
        if "cpuacct" not in self.dirs:
            return None
        version, path = self.dirs["cpuacct"]
        if version == 2:
            usec = _field(_read(f"{path}/cpu.stat", ""), "usage_usec")
            return None if usec is None else usec / 1e6
        nsec = _int(_read(f"{path}/cpuacct.usage", ""))
        return None if nsec is None else nsec / 1e9

    def remove(self):
        """Remove the group's directories (deepest hierarchy first); True when all are gone."""
        gone = True
        for path in sorted({d for _, d in self.dirs.values()}, reverse=True):
            for _ in range(100):
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)   # the last process is still being torn down
            else:
                gone = False
        return gone


def _single_threaded(task_dir="/proc/self/task"):
    try:
        return len(os.listdir(task_dir)) == 1
    except OSError:
        return False


def _int(text):
    text = text.strip()
    return int(text) if text.isdigit() else None


def _field(text, key):
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return None


def _kill_each(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _freeze_and_kill(path, deadline):
    """v1: freeze the group so nothing can fork meanwhile, SIGKILL every task, thaw it."""
    try:
        _write(f"{path}/freezer.state", "FROZEN")
        while _read(f"{path}/freezer.state", "").strip() != "FROZEN" and time.monotonic() < deadline:
            time.sleep(0.002)
        _kill_each(int(p) for p in _read(f"{path}/tasks", "").split() if p.isdigit())
    finally:
        try:
            _write(f"{path}/freezer.state", "THAWED")
        except OSError:
            pass


def groups_of(plan, zygote=None):
    """Names of sandbox groups present in the plan's hierarchies (of one zygote, or all)."""
    names = set()
    for what, value in plan.items():
        if what == "error":
            continue
        try:
            entries = os.listdir(value[1])
        except OSError:
            continue
        for entry in entries:
            if entry.startswith(PREFIX) and (zygote is None or entry.startswith(f"{PREFIX}{zygote}-")):
                names.add(entry)
    return sorted(names)


def owner_alive(name):
    """Is the monitor that made group `name` still running (and a sandbox worker)?"""
    try:
        monitor = int(name[len(PREFIX):].split("-")[1])
        return b"sandbox/worker.py" in open(f"/proc/{monitor}/cmdline", "rb").read()
    except (OSError, ValueError, IndexError):
        return False


def sweep(plan, zygote=None, only_orphans=True):
    """Kill and remove sandbox groups: those of `zygote` (every one's when None).

    With `only_orphans`, a group whose monitor still runs is left to it.
    Returns the names that were removed.
    """
    removed = []
    if "error" in plan:
        return removed
    for name in groups_of(plan, zygote):
        if only_orphans and owner_alive(name):
            continue
        group = Group(plan, name)
        group.kill()
        if group.remove():
            removed.append(name)
    return removed


def monitor_of(name):
    try:
        return int(name[len(PREFIX):].split("-")[1])
    except (ValueError, IndexError):
        return None
