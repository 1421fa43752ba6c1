"""Whether this machine lets a test make the namespaces a sandbox needs."""
import os

from graders.sandbox import linux


def namespaces_permitted() -> bool:
    """Can this process create the namespaces a sandbox needs? (tried in a throwaway child)"""
    pid = os.fork()
    if pid == 0:
        try:
            linux.unshare(linux.CLONE_NEWPID | linux.CLONE_NEWNS | linux.CLONE_NEWNET)
            os._exit(0)
        except BaseException:  # noqa: BLE001
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0
