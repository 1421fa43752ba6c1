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


def _cap_memory(memory_bytes: int) -> None:
    """In a child: cap its address space at what it maps now plus `memory_bytes` (never above
    the cap it inherited: inside another bounded call, that call's cap is the ceiling)."""
    cap = _mapped_bytes() + int(memory_bytes)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def _answer(fn, *args) -> dict:
    """{"ok": fn(*args)}, or {"error": why} (in a child, for its parent)."""
    try:
        return {"ok": fn(*args)}
    except MemoryError:
        return {"error": "ran out of memory"}
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        return {"error": f"{type(exc).__name__}: {exc}"[:300]}


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
            _cap_memory(memory_bytes)
            data = json.dumps(_answer(fn, *args)).encode()
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


class BoundedChild:
    """One forked child that answers many requests in turn, each under run_bounded's bounds.

    For a caller that would otherwise fork once per request from the same large process
    (grading a submission's notebooks one after another): the fork, which costs more the
    more the process maps, is paid once. `handler(request)` runs in the child (inherited
    at the fork, started at the first `ask`); requests and answers are JSON. Each answer
    must come within `timeout` seconds and `max_output` bytes, and the child's address
    space is capped at the fork as run_bounded caps it. Past a bound, or when the child
    died, the child is killed and `ask` raises as run_bounded would (Timeout, TooLarge,
    RuntimeError); the next `ask` starts a fresh child. `close()` kills and reaps it; a
    child whose parent died reads the end of its requests and leaves.
    """

    def __init__(self, handler, memory_bytes: int = MEMORY_LIMIT_BYTES, max_output: int = MAX_OUTPUT_BYTES):
        self.handler, self.memory_bytes, self.max_output = handler, memory_bytes, max_output
        self.pid = None
        self.forks = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _start(self) -> None:
        down_read, down_write = os.pipe()
        up_read, up_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: answer each request until the parent closes its end
            status = 0
            try:
                os.close(down_write)
                os.close(up_read)
                _cap_memory(self.memory_bytes)
                while True:
                    request = _read_frame(down_read)
                    if request is None:
                        break
                    try:
                        payload = _answer(self.handler, json.loads(request))
                    except ValueError:
                        payload = {"error": "the request was not JSON"}
                    _write_frame(up_write, json.dumps(payload).encode())
            except BaseException:
                status = 1
            finally:
                os._exit(status)
        os.close(down_read)
        os.close(up_write)
        self.pid, self.to_child, self.from_child = pid, down_write, up_read
        self.forks += 1

    def ask(self, request, timeout: float = 3.0):
        """The child's answer to `request` (JSON data), or Timeout / TooLarge / RuntimeError."""
        data = json.dumps(request).encode()   # TypeError/ValueError: not JSON; the child lives on
        if self.pid is None:
            self._start()
        try:
            _write_frame(self.to_child, data)
            deadline = time.monotonic() + timeout
            header = self._read(8, deadline)
            size = int.from_bytes(header, "big")
            if size > self.max_output:
                raise TooLarge(f"the answer was larger than {self.max_output} bytes")
            payload = json.loads(self._read(size, deadline) or b"{}")
        except BaseException:
            self.close()
            raise
        if "ok" in payload:
            return payload["ok"]
        raise RuntimeError(payload.get("error", "the bounded computation died"))

    def _read(self, count: int, deadline: float) -> bytes:
        data = b""
        while len(data) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout("no answer in time")
            ready, _, _ = select.select([self.from_child], [], [], left)
            if ready:
                chunk = os.read(self.from_child, min(count - len(data), 1 << 20))
                if not chunk:
                    raise RuntimeError("the bounded computation died")
                data += chunk
        return data

    def close(self) -> None:
        if self.pid is None:
            return
        for fd in (self.to_child, self.from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
        self.pid = None


def _write_frame(fd: int, data: bytes) -> None:
    view = memoryview(len(data).to_bytes(8, "big") + data)
    while view:
        view = view[os.write(fd, view):]


def _read_frame(fd: int):
    """One length-prefixed frame (bytes), or None at the end of the stream."""
    header = _read_exactly(fd, 8)
    if header is None:
        return None
    return _read_exactly(fd, int.from_bytes(header, "big"))


def _read_exactly(fd: int, count: int):
    data = b""
    while len(data) < count:
        chunk = os.read(fd, min(count - len(data), 1 << 20))
        if not chunk:
            return None
        data += chunk
    return data
