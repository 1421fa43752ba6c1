"""The isolation layers a sandbox puts itself under before any student code exists, in order.

Standard library only, nothing from `graders`; loaded by path (as `_sandbox_layers`) by
`worker.py`. The order is data: `LAYERS`, each layer with its name and its function, walked by
`isolate`; the first one that fails stops the run (no student code runs) unless the grader
asked for a degraded mode. The monitor's own layers, applied before it forks the sandbox, are
`MONITOR_LAYERS`. The summary's "isolation in effect" line takes its names from both lists
(`in_effect`, from each layer's `label`), in the order they are applied.

The seccomp allowlist (graders/sandbox/seccomp.py) and the control groups
(graders/sandbox/cgroups.py) are loaded by file path, as the transport is.
"""
import errno
import json
import os
import resource
import signal
import socket
import time
from collections import namedtuple

from _sandbox_linux import (CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWUTS, MNT_DETACH,
                            MS_BIND, MS_NODEV, MS_NOEXEC, MS_NOSUID, MS_PRIVATE, MS_RDONLY, MS_REC, MS_REMOUNT,
                            PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS, PR_SET_PDEATHSIG, load_seccomp, mount, own_vm_size,
                            pivot_root, prctl, sethostname, umount, unshare)

WORK = "/home/student"   # the notebook's working directory inside the sandbox

# The seccomp allowlist (graders/sandbox/seccomp.py) and the control groups (graders/sandbox/cgroups.py) are
# loaded by file path, as the transport is: standard library only, nothing from `graders`.
SECCOMP = None      # the module


SECCOMP_LIB = None  # libseccomp, opened in the zygote


SECCOMP_CTX = None  # the compiled allowlist, built once in the zygote and loaded by each sandbox
SECCOMP_BPF = None  # the same, as the kernel's BPF instructions (loaded without compiling it again)


ZYGOTE_ID = None    # the first zygote's pid: its sandboxes' and its second zygote's groups are named by it
CGROUPS = None


CGROUP_PLAN = {}


def _load_by_path(name, path):
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prepare_layers(config):
    """In the zygote: open libseccomp, compile the allowlist, find the control groups."""
    global SECCOMP, SECCOMP_LIB, SECCOMP_CTX, SECCOMP_BPF, CGROUPS, CGROUP_PLAN
    probe = {}
    if config.isolate:
        try:
            SECCOMP = _load_by_path("_sandbox_seccomp", config.seccomp)
            SECCOMP_LIB = SECCOMP.library()
            SECCOMP_CTX = SECCOMP.build(SECCOMP_LIB)
            probe["seccomp"] = True
            try:
                SECCOMP_BPF = SECCOMP.export(SECCOMP_LIB, SECCOMP_CTX)
            except OSError as exc:      # each sandbox then compiles it again (seccomp_load)
                probe["seccomp_export_error"] = str(exc)
        except OSError as exc:
            probe["seccomp"], probe["seccomp_error"] = False, str(exc)
    try:
        CGROUPS = _load_by_path("_sandbox_cgroups", config.cgroups)
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
    if SECCOMP_BPF is not None:
        return load_seccomp(SECCOMP_BPF)
    result = SECCOMP_LIB.seccomp_load(SECCOMP_CTX)
    if result < 0:
        raise OSError(-result, f"seccomp_load: {os.strerror(-result)}")


def simulated(config, layer):
    """Test hook (set by the trusted grader, never by a job): pretend `layer` cannot be applied."""
    if layer in config.fail_layers:
        raise OSError(errno.EPERM, f"{layer} refused (simulated failure)")


def probe_isolation(config):
    """Which namespaces this machine lets us create (tried in a throwaway child)."""
    if not config.isolate:
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


def build_root(job, config, uid, layers, strict=False):
    """A fresh root made of read-only binds, with private /tmp, /dev/shm and working folder
    (`WORK`); pivot into it.

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
            simulated(config, name)
            unshare(flag)
            layers[name] = True
        except OSError as exc:
            soft(name, exc)
    if layers.get("uts_namespace"):
        try:
            sethostname("sandbox")
        except OSError:
            pass
    if layers.get("network_namespace"):
        loopback_up(layers)
    root = config.mount_root
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=755")
    # private writable places first, so that a bind below one of them stays visible
    for name in ("tmp", WORK.strip("/")):
        target = root + "/" + name
        os.makedirs(target, exist_ok=True)
        mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV,
              f"size={int(job['limits']['tmp_bytes'])},mode=1777")
    _make_etc(root, uid)
    _make_dev(root, job["limits"])
    for path in config.binds:
        _bind(path, root)
    _copy_files(job.get("files", {}), root + WORK, uid)
    os.makedirs(root + "/proc", exist_ok=True)
    os.makedirs(root + "/.old", exist_ok=True)
    try:
        number = SECCOMP_LIB.seccomp_syscall_resolve_name(b"pivot_root") if SECCOMP_LIB else None
        pivot_root(root, root + "/.old", number)
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
        simulated(config, "read_only_root")
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
    """The per-process rlimits, under the control group's per-notebook limits (seccomp alone comes after)."""
    vsz = own_vm_size()
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



# ----------------------------------------------------------------------------- the order, as data
class Setup:
    """What the layers of one sandbox work on: its job, the zygote's config, and their account."""

    def __init__(self, job, config, uid, isolate, strict, scratch, group):
        self.job, self.config, self.uid, self.isolate, self.strict = job, config, uid, isolate, strict
        self.scratch, self.group, self.work = scratch, group, None
        self.layers, self.failed, self.times = {}, [], {"sandbox_at": time.monotonic()}


def _join_group(setup):
    return setup.group.join() or CGROUPS.describe(setup.group.plan)


def _private_root(setup):
    setup.work = build_root(setup.job, setup.config, setup.uid, setup.layers, setup.strict)


def _working_folder(setup):
    """Not a layer: where the cells run when there is no private root (isolation off or degraded)."""
    if setup.work is None and setup.uid != os.geteuid() and not setup.config.python_world_readable:
        setup.uid = os.geteuid()   # without a private root, an unprivileged uid could not read Python
        setup.layers["uid_kept"] = "the Python installation is not readable by an unprivileged user"
    if setup.work is None:
        setup.work = setup.scratch
        _copy_files(setup.job.get("files", {}), setup.work, setup.uid)
    setup.times["root_at"] = time.monotonic()


def _drop_uid(setup):
    return drop_privileges(setup.uid, setup.layers, setup.strict)


def _rlimits(setup):
    return apply_limits(setup.job["limits"])


def _seccomp(setup):
    return seccomp_filter()


Layer = namedtuple("Layer", "name function when label parts", defaults=(None, ()))
Layer.__doc__ = """One step of `isolate`. `when`: "always", "isolate" (only with isolation on) or "group"
(only with a control group); `label`: its name in the summary when in force (None: not a layer, a
step that reports nothing); `parts`: the names of the parts it reports beside its own."""

# The sandbox's layers, in the order they are applied (each before any student code).
LAYERS = [
    Layer("control_group", _join_group, "group", "control group"),
    Layer("mount_namespace", _private_root, "isolate", "mount namespace",
          ("network_namespace", "ipc_namespace", "uts_namespace", "pivot_root", "read_only_root")),
    Layer("working_folder", _working_folder, "always"),
    Layer("uid", _drop_uid, "always", "uid", ("no_new_privs",)),
    Layer("rlimits", _rlimits, "always", "rlimits"),
    Layer("seccomp", _seccomp, "isolate", "seccomp allowlist"),
]


def _subreaper(setup):
    prctl(PR_SET_CHILD_SUBREAPER, 1)


def _pid_namespace(setup):
    unshare(CLONE_NEWPID)


def _make_group(setup):
    """The notebook's control group, made by the monitor (the sandbox joins it: `_join_group`)."""
    if "error" in CGROUP_PLAN:
        raise OSError(errno.ENOTSUP, CGROUP_PLAN["error"])
    group = CGROUPS.Group(CGROUP_PLAN, f"{CGROUPS.PREFIX}{ZYGOTE_ID or os.getppid()}-{os.getpid()}")
    limits = setup.job["limits"]
    group.create(int(limits["memory_bytes"]), int(limits["processes"]))
    setup.group = group
    return CGROUPS.describe(CGROUP_PLAN)


# The monitor's own, applied in this order before it forks the sandbox (graders/sandbox/monitor.py):
# all of them are tried, and with `strict` any failure refuses the run before a sandbox exists.
MONITOR_LAYERS = [
    Layer("subreaper", _subreaper, "always", "subreaper sweep"),
    Layer("pid_namespace", _pid_namespace, "isolate", "pid namespace"),
    Layer("control_group", _make_group, "always", "control group"),
]


def apply(setup, layer):
    """Apply one layer where it applies; False (and its failure recorded) when it could not be."""
    if layer.when == "isolate" and not setup.isolate or layer.when == "group" and setup.group is None:
        return True
    if layer.label is None:
        layer.function(setup)
        return True
    try:
        simulated(setup.config, layer.name)
        value = layer.function(setup)
        setup.layers[layer.name] = True if value is None else value
        return True
    except (OSError, ValueError) as exc:
        setup.layers[layer.name + "_error"] = str(exc)
        setup.failed.append(f"{layer.name.replace('_', ' ')}: {exc}")
        return False


def isolate(setup):
    """Apply `LAYERS` in order; return True when every one that applies is in force (or skipped in
    degraded mode). With `setup.strict`, the first that fails stops the walk: False, no student code.
    A layer left half-applied (its "<name>_entered" set) stops it in degraded mode too."""
    for layer in LAYERS:
        if not apply(setup, layer) and (setup.strict or setup.layers.get(layer.name + "_entered")):
            return False
    return True


def in_effect(layers):
    """The summary's names of the layers `layers` (one sandbox's merged account) has in force, in the
    declared order, then those that failed."""
    names, seen = [], set()
    for layer in MONITOR_LAYERS + LAYERS:
        if layer.label is None or layer.name in seen:
            continue
        seen.add(layer.name)
        value = layers.get(layer.name)
        if layer.name == "uid":
            if isinstance(value, int) and not isinstance(value, bool):
                names.append(f"uid {value}" + (" (root!)" if value == 0 else ""))
        elif isinstance(value, str) and value:
            names.append(f"{layer.label} ({value})")
        elif value is True:
            names.append(layer.label)
        names += [part.replace("_", " ") for part in layer.parts if layers.get(part) is True]
    missing = sorted(key[:-len("_error")].replace("_", " ") for key in layers if key.endswith("_error"))
    if missing:
        names.append("NOT in force (degraded mode): " + ", ".join(missing))
    return names
