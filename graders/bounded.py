"""Run a function with a wall-clock and memory bound, in a forked child.

Symbolic simplification can run for minutes on a hostile expression. The child
is forked from the grading process (so sympy is already imported and the fork
costs milliseconds), computes, and sends back a small JSON result. If it takes
too long it is killed and the caller is told so.
"""
import json
import os
import resource
import select
import signal
import time

MEMORY_LIMIT_BYTES = 2 * 1024**3


class Timeout(Exception):
    """The bounded call did not finish in time."""


def run_bounded(fn, *args, timeout: float = 3.0):
    """Return `fn(*args)` (which must be JSON-serialisable), or raise Timeout."""
    if not hasattr(os, "fork"):  # pragma: no cover - not on this platform
        return fn(*args)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, write, and leave without cleanup handlers
        status = 0
        try:
            os.close(read_fd)
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
            try:
                payload = {"ok": fn(*args)}
            except MemoryError:
                payload = {"error": "ran out of memory"}
            except Exception as exc:  # noqa: BLE001 - reported to the parent
                payload = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            data = json.dumps(payload).encode()
            view = memoryview(data)
            while view:
                view = view[os.write(write_fd, view):]
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(write_fd)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout(f"no answer within {timeout:g} s")
            ready, _, _ = select.select([read_fd], [], [], left)
            if ready:
                chunk = os.read(read_fd, 65536)
                if not chunk:
                    break
                chunks.append(chunk)
    finally:
        os.close(read_fd)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
    try:
        payload = json.loads(b"".join(chunks) or b"{}")
    except ValueError:
        payload = {}
    if "ok" in payload:
        return payload["ok"]
    raise RuntimeError(payload.get("error", "the bounded computation died"))
