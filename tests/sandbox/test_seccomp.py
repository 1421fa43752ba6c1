"""The seccomp allowlist's pure parts: the list itself, and `build` run against a recording libseccomp."""
import errno

import pytest

from graders.sandbox import linux, seccomp

NUMBERS = {name: i for i, name in enumerate(seccomp.ALLOW + ["clone", "clone3"])}
NUMBERS.pop("open")   # as on aarch64: a name this architecture has no syscall for


class FakeLib:
    """Stands in for libseccomp: resolves names from NUMBERS and records each rule."""

    def __init__(self, refuse=None):
        self.rules, self.released, self.refuse = [], [], refuse

    def seccomp_init(self, action):
        self.default = action
        return 1

    def seccomp_syscall_resolve_name(self, name):
        return NUMBERS.get(name.decode(), -1)

    def seccomp_rule_add_array(self, ctx, action, number, count, array):
        if number == self.refuse:
            return -errno.EINVAL
        self.rules.append((action, number, [(a.arg, a.op, a.datum_a) for a in array[:count]]))
        return 0

    def seccomp_release(self, ctx):
        self.released.append(ctx)


@pytest.mark.parametrize("name", ["mount", "umount2", "pivot_root", "unshare", "setns", "ptrace", "bpf",
                                  "keyctl", "init_module", "kexec_load", "reboot", "chroot", "setuid",
                                  "process_vm_readv", "userfaultfd", "perf_event_open", "clone", "clone3"])
def test_dangerous_calls_are_not_in_the_list(name):
    assert name not in seccomp.ALLOW


def test_the_default_action_is_eperm():
    lib = FakeLib()
    seccomp.build(lib)
    assert lib.default == seccomp.act_errno(errno.EPERM) == 0x00050000 | errno.EPERM


def test_every_known_name_is_allowed_and_clone_only_without_namespaces():
    lib = FakeLib()
    seccomp.build(lib)
    allowed = {number for action, number, args in lib.rules if action == seccomp.ACT_ALLOW and not args}
    assert allowed == {NUMBERS[n] for n in seccomp.ALLOW if n in NUMBERS}   # `open` skipped, no error
    (clone,) = [r for r in lib.rules if r[1] == NUMBERS["clone"]]
    assert clone == (seccomp.ACT_ALLOW, NUMBERS["clone"], [(0, seccomp.SCMP_CMP_MASKED_EQ, seccomp.CLONE_NAMESPACES)])
    (clone3,) = [r for r in lib.rules if r[1] == NUMBERS["clone3"]]
    assert clone3[0] == seccomp.act_errno(errno.ENOSYS)   # so that libc falls back to clone, which is checked


def test_the_namespace_mask_holds_every_namespace_flag():
    newns, newcgroup, newuts, newipc, newuser, newpid, newnet = (0x00020000, 0x02000000, 0x04000000, 0x08000000,
                                                                 0x10000000, 0x20000000, 0x40000000)
    assert seccomp.CLONE_NAMESPACES == newns | newcgroup | newuts | newipc | newuser | newpid | newnet


def test_a_refused_rule_releases_the_context_and_says_which():
    lib = FakeLib(refuse=NUMBERS["read"])
    with pytest.raises(OSError, match="seccomp rule for read"):
        seccomp.build(lib)
    assert lib.released == [1]


def test_the_exported_program_loaded_by_itself_refuses_what_the_list_leaves_out():
    """The zygote compiles the allowlist to BPF once (`export`); each sandbox loads those instructions
    (`linux.load_seccomp`) instead of compiling them again. In a child: unshare is refused, getppid still runs."""
    import ctypes
    import os
    try:
        lib = seccomp.library()
    except OSError:
        pytest.skip("no libseccomp here")
    ctx = seccomp.build(lib)
    try:
        program = seccomp.export(lib, ctx)
    finally:
        lib.seccomp_release(ctx)
    assert len(program) % 8 == 0 and len(program) > 8 * 100
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            linux.load_seccomp(program)
            libc = ctypes.CDLL(None, use_errno=True)
            refused = libc.unshare(0) == -1 and ctypes.get_errno() == errno.EPERM
            os.write(write, f"{int(refused)} {os.getppid()}".encode())
        finally:
            os._exit(0)
    os.close(write)
    said = os.read(read, 100).decode().split()
    os.close(read)
    os.waitpid(pid, 0)
    assert said == ["1", str(os.getpid())], said
