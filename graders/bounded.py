"""Run a function with a wall-clock, memory and output bound, in a forked child.

Symbolic simplification can run for minutes on a hostile expression, and any
step of grading a hostile answer may try to. The child is forked from the
grading process (so sympy and the problems are already imported and the fork
costs milliseconds), computes, and sends back a JSON result. If it takes too
long, or its answer grows past `max_output`, it is killed and the caller is
told so. Its address space is capped at what the parent already maps plus
`memory_bytes`, so a child forked from a large process is not starved at birth, and never
above the cap it inherited: a bounded call made inside another (a comparison inside a
problem's grading) keeps the outer bound instead of failing to raise it.
"""
import json
import os
import resource
import select
import signal
import time

MEMORY_LIMIT_BYTES = 2 * 1024**3
MAX_OUTPUT_BYTES = 1 << 20


class Timeout(Exception):
    """The bounded call did not finish in time."""


class TooLarge(RuntimeError):
    """The bounded call's answer was larger than allowed."""


def _mapped_bytes() -> int:
    try:
        with open("/proc/self/status") as fh:
            for row in fh:
                if row.startswith("VmSize:"):
                    return int(row.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_bounded(fn, *args, timeout: float = 3.0, memory_bytes: int = MEMORY_LIMIT_BYTES,
                max_output: int = MAX_OUTPUT_BYTES, started=None):
    """Return `fn(*args)` (which must be JSON-serialisable), or raise Timeout / TooLarge / RuntimeError.
    `started(pid)`, if given, is called with the child's pid once it runs (so that it can be stopped)."""
    if not hasattr(os, "fork"):  # pragma: no cover - not on this platform
        return fn(*args)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, write, and leave without cleanup handlers
        status = 0
        try:
            os.close(read_fd)
            cap = _mapped_bytes() + int(memory_bytes)
            _, hard = resource.getrlimit(resource.RLIMIT_AS)
            if hard != resource.RLIM_INFINITY:   # inside another bounded call: its cap is the ceiling
                cap = min(cap, hard)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
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
    if started is not None:
        started(pid)
    chunks, size, deadline = [], 0, time.monotonic() + timeout
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
                size += len(chunk)
                if size > max_output:
                    raise TooLarge(f"the answer was larger than {max_output} bytes")
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
