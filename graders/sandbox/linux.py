"""The Linux calls the sandbox makes (unshare, mount, pivot_root, prctl) and the /proc it reads.

Standard library only, and nothing from `graders`: the zygote (`worker.py`, run as
``python -I -S``) loads this file by path as `_sandbox_linux`; the trusted side imports it as
`graders.sandbox.linux` too (`identity`, and `prctl` for the grading pool's workers). The parsing is kept apart from the reading
(`stat_fields`, `vm_size`), so that it can be tested on text without a /proc.
"""
import ctypes
import ctypes.util
import errno
import os
import platform

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


def prctl(option, arg2=0, arg3=0):
    _check(_libc.prctl(option, arg2, arg3, 0, 0), f"prctl {option}")


PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2


class SockFprog(ctypes.Structure):
    """The kernel's struct sock_fprog: a BPF program's length (instructions) and address."""
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def load_seccomp(program):
    """Load a seccomp filter given as raw BPF (struct sock_filter[], 8 bytes each, as libseccomp's
    seccomp_export_bpf writes it) into this process, as libseccomp's seccomp_load does:
    no_new_privs first, then the filter (mode FILTER, no flags). OSError when the kernel refuses it."""
    code = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.addressof(code))
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog))


def sethostname(name):
    _check(_libc.sethostname(name.encode(), len(name.encode())), "sethostname")


def pivot_root(new_root, put_old, number=None):
    """`number`: the syscall's number as libseccomp resolves it, where it is open; else this file's table."""
    number = SYS_PIVOT_ROOT if number is None else number
    if number is None or number < 0:
        raise OSError(errno.ENOSYS, "pivot_root: unknown syscall number on this machine")
    _check(_libc.syscall(number, new_root.encode(), put_old.encode()), "pivot_root")


# ----------------------------------------------------------------------------- /proc
def stat_fields(stat):
    """The fields of a /proc/<pid>/stat line after the command name, as bytes: [0] is the state,
    [1] the parent pid, [19] the start time. The name may hold spaces and ')', so it is cut at the
    last ')'. Raises ValueError on a line that has no ')'."""
    end = stat.rfind(b")")
    if end < 0:
        raise ValueError("not a /proc stat line")
    return stat[end + 2:].split()


def _stat(pid):
    with open(f"/proc/{pid}/stat", "rb") as fh:
        return stat_fields(fh.read())


def identity(pid):
    """`pid` and its start time (clock ticks since boot), which no later process with the same pid
    shares; None when it does not run."""
    try:
        return f"{pid}.{int(_stat(pid)[19])}"
    except (OSError, ValueError, IndexError):
        return None


def alive(pid):
    """Does `pid` run (a zombie does not)?"""
    try:
        return _stat(pid)[0] != b"Z"
    except (OSError, ValueError, IndexError):
        return False


def _pids():
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


# the kernel lists each thread's children in /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN);
# without it, every process's parent is read instead (a cost that grows with the machine's processes)
CHILDREN_FILE = os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def children_of(pid):
    """The processes whose parent is `pid` (a zombie among them)."""
    if not CHILDREN_FILE:
        return _children_by_scan(pid)
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []   # no such process: no children
    kids = []
    for tid in threads:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                kids += [int(child) for child in fh.read().split()]
        except OSError:
            continue   # the thread has ended (its children are its process's other threads')
    return kids


def _children_by_scan(pid):
    kids = []
    for child in _pids():
        try:
            if int(_stat(child)[1]) == pid:
                kids.append(child)
        except (OSError, ValueError, IndexError):
            continue
    return kids


def owned_by(uid):
    found = []
    for pid in _pids():
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                found.append(pid)
        except OSError:
            continue
    return found


def vm_size(status):
    """The VmSize of a /proc/<pid>/status text, in bytes (0 when it has none)."""
    for line in status.splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def own_vm_size():
    try:
        with open("/proc/self/status") as fh:
            return vm_size(fh.read())
    except OSError:
        return 0


MADV_COLLAPSE = 25          # Linux 6.1+: back a range with huge pages now (refused with EINVAL before)
HUGE = 2 << 20              # x86-64's and aarch64's (4 KiB pages) huge page size


def collapsible(maps):
    """The whole huge pages inside the private, writable, anonymous mappings (and the heap) of a
    /proc/<pid>/maps text: [(start, end)], each aligned to HUGE."""
    ranges = []
    for line in maps.splitlines():
        fields = line.split()
        if len(fields) < 5 or "-" not in fields[0]:
            continue
        name = fields[5] if len(fields) > 5 else ""
        if fields[1][1] != "w" or fields[1][3] != "p" or name not in ("", "[heap]"):
            continue
        low, high = (int(x, 16) for x in fields[0].split("-"))
        start, end = -(-low // HUGE) * HUGE, high // HUGE * HUGE
        if end > start:
            ranges.append((start, end))
    return ranges


def collapse_heap():
    """Back the zygote's preloaded heap with huge pages, where the kernel can; the bytes collapsed.

    Forking copies a page-table entry for every anonymous page and exiting drops it: with some
    250 MiB preloaded, that is milliseconds on each monitor's and each sandbox's fork and exit.
    A huge page is one entry for 512 pages. Only MADV_COLLAPSE (not MADV_HUGEPAGE, which the
    sandbox would inherit): a notebook's own new memory stays in ordinary pages, and its
    copy-on-write of a shared huge page copies only the 4 KiB page it writes.
    """
    try:
        with open("/proc/self/maps") as fh:
            ranges = collapsible(fh.read())
    except OSError:
        return 0
    _libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    done = 0
    for start, end in ranges:
        if _libc.madvise(start, end - start, MADV_COLLAPSE) == 0:
            done += end - start
    return done
