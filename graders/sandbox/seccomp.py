"""The sandbox's seccomp filter: an allowlist by syscall name, compiled by libseccomp.

Standard library only, importing nothing from `graders`: the sandbox zygote
loads this file by path (as it loads `transport.py`). libseccomp itself is
Debian's ``libseccomp2`` (installed by ``.ci/run``), reached through ctypes;
it resolves each name to the number of the machine's architecture (x86_64
or aarch64 here), so no syscall number is typed by hand.

Everything not named below fails with EPERM: new namespaces, mounts, tracing
or reading other processes (ptrace, process_vm_*, pidfd_getfd, kcmp,
process_madvise), kernel modules, kexec, bpf, perf, keyrings, io_uring,
userfaultfd, device nodes (mknod), I/O ports (iopl, ioperm), the clock
(settimeofday, clock_settime, adjtimex), personality, setuid and friends.
`clone` is allowed only without namespace flags; `clone3`, whose flags sit in
a struct the filter cannot read, fails with ENOSYS so that the C library
falls back to `clone`.
"""
import ctypes
import ctypes.util
import errno
import os

# What CPython, numpy, torch (CPU), sympy, matplotlib and IPython use to run a notebook.
ALLOW = """
read write readv writev pread64 pwrite64 preadv pwritev preadv2 pwritev2 lseek
open openat openat2 creat close close_range dup dup2 dup3 pipe pipe2 fcntl ioctl flock
stat fstat lstat newfstatat statx statfs fstatfs access faccessat faccessat2
readlink readlinkat getdents getdents64 getcwd chdir fchdir umask
mkdir mkdirat rmdir unlink unlinkat rename renameat renameat2 link linkat symlink symlinkat
chmod fchmod fchmodat fchmodat2 chown fchown lchown fchownat utime utimes utimensat futimesat
truncate ftruncate fallocate fsync fdatasync sync_file_range fadvise64 readahead
sendfile copy_file_range splice tee
getxattr lgetxattr fgetxattr listxattr llistxattr flistxattr
select pselect6 poll ppoll epoll_create epoll_create1 epoll_ctl epoll_wait epoll_pwait epoll_pwait2
eventfd eventfd2 signalfd signalfd4 timerfd_create timerfd_settime timerfd_gettime
inotify_init inotify_init1 inotify_add_watch inotify_rm_watch memfd_create
mmap munmap mprotect mremap madvise brk msync mincore mlock mlock2 munlock membarrier get_mempolicy
fork vfork execve execveat exit exit_group wait4 waitid
kill tkill tgkill rt_sigaction rt_sigprocmask rt_sigreturn rt_sigsuspend rt_sigpending
rt_sigtimedwait rt_sigqueueinfo rt_tgsigqueueinfo sigaltstack pause restart_syscall
nanosleep clock_nanosleep clock_gettime clock_getres gettimeofday time
alarm getitimer setitimer timer_create timer_settime timer_gettime timer_getoverrun timer_delete
getpid getppid gettid getuid geteuid getgid getegid getgroups getresuid getresgid
getpgid getpgrp getsid setpgid setsid set_tid_address set_robust_list get_robust_list
futex futex_waitv futex_wake futex_wait futex_requeue rseq
sched_yield sched_getaffinity sched_setaffinity sched_getparam sched_getscheduler
sched_get_priority_max sched_get_priority_min sched_getattr sched_rr_get_interval
getpriority setpriority getrlimit setrlimit prlimit64 getrusage times sysinfo uname getcpu
arch_prctl prctl capget getrandom pidfd_open pidfd_send_signal ioprio_get
socket socketpair connect bind listen accept accept4 getsockname getpeername
sendto recvfrom sendmsg recvmsg sendmmsg recvmmsg shutdown setsockopt getsockopt
shmget shmat shmdt shmctl semget semop semtimedop semctl msgget msgsnd msgrcv msgctl
""".split()

CLONE_NAMESPACES = 0x7E020000   # NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
ACT_ALLOW = 0x7FFF0000
SCMP_CMP_MASKED_EQ = 7


def act_errno(code):
    return 0x00050000 | (code & 0xFFFF)


class ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


def library(path=None):
    """libseccomp, or OSError naming what to install."""
    name = path or ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError as exc:
        raise OSError(errno.ENOENT, f"libseccomp is not installed ({exc}); apt-get install libseccomp2") from None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                           ctypes.c_uint, ctypes.POINTER(ArgCmp)]
    return lib


def build(lib, allow=ALLOW, arches=()):
    """A libseccomp filter context holding the allowlist (not yet loaded).

    For this machine's architecture, or for exactly `arches` (libseccomp's tokens, e.g.
    0xC00000B7 for aarch64), to export or inspect a filter for another machine.
    """
    ctx = lib.seccomp_init(act_errno(errno.EPERM))
    if not ctx:
        raise OSError(errno.ENOMEM, "seccomp_init failed")
    try:
        if arches:
            lib.seccomp_arch_add.argtypes = lib.seccomp_arch_remove.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
            lib.seccomp_arch_native.restype = ctypes.c_uint32
            native = lib.seccomp_arch_native()
            for token in arches:
                if token != native and lib.seccomp_arch_add(ctx, token) < 0:
                    raise OSError(errno.EINVAL, f"libseccomp cannot build for architecture {token:#x}")
            if native not in arches:
                lib.seccomp_arch_remove(ctx, native)
        for name in allow:
            number = lib.seccomp_syscall_resolve_name(name.encode())
            if number < 0:      # not a syscall of this architecture (open on aarch64, say)
                continue
            _rule(lib, ctx, ACT_ALLOW, number, name)
        clone = lib.seccomp_syscall_resolve_name(b"clone")
        _rule(lib, ctx, ACT_ALLOW, clone, "clone", [ArgCmp(0, SCMP_CMP_MASKED_EQ, CLONE_NAMESPACES, 0)])
        clone3 = lib.seccomp_syscall_resolve_name(b"clone3")
        if clone3 >= 0:
            _rule(lib, ctx, act_errno(errno.ENOSYS), clone3, "clone3")
    except BaseException:
        lib.seccomp_release(ctx)
        raise
    return ctx


def _rule(lib, ctx, action, number, name, args=()):
    array = (ArgCmp * max(1, len(args)))(*args)
    result = lib.seccomp_rule_add_array(ctx, action, number, len(args), array)
    if result < 0:
        raise OSError(-result, f"seccomp rule for {name}: {errno.errorcode.get(-result, result)}")


def export(lib, ctx):
    """The filter compiled once to raw BPF (struct sock_filter[], 8 bytes each).

    libseccomp's seccomp_load compiles the context again at every call (~0.9 ms measured here,
    each sandbox); `linux.load_seccomp` hands these same instructions, made by the same compiler,
    to the kernel.
    """
    fd = os.memfd_create("chapter-seccomp")
    try:
        lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
        result = lib.seccomp_export_bpf(ctx, fd)
        if result < 0:
            raise OSError(-result, f"seccomp_export_bpf: {errno.errorcode.get(-result, result)}")
        size = os.lseek(fd, 0, os.SEEK_END)
        program = os.pread(fd, size, 0)
    finally:
        os.close(fd)
    if not program or len(program) % 8 or len(program) // 8 > 4096:
        raise OSError(errno.EINVAL, f"seccomp_export_bpf gave {len(program)} bytes, not a BPF program")
    return program


def install(path=None):
    """Load the allowlist into this process (and every child it starts from now on)."""
    lib = library(path)
    ctx = build(lib)
    try:
        result = lib.seccomp_load(ctx)   # sets no_new_privs first (libseccomp's default)
        if result < 0:
            raise OSError(-result, f"seccomp_load: {errno.errorcode.get(-result, result)}")
    finally:
        lib.seccomp_release(ctx)
    return len(ALLOW) + 2
