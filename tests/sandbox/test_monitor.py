"""The monitor's relay on its own: no sandbox, a plain forked child as the notebook's process."""
from __future__ import annotations

import os
import socket
import time
from types import SimpleNamespace

import pytest

from graders.sandbox import worker

LIMITS = {"notebook_seconds": 30, "output_bytes": 1 << 20, "line_bytes": 1 << 16}


def _notebook_process(output: bytes, exiting_for: float):
    """A child that writes `output`, closes its end, and takes `exiting_for` seconds to exit."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        os.write(write_fd, output)
        os.close(write_fd)
        time.sleep(exiting_for)
        os._exit(0)
    os.close(write_fd)
    return pid, read_fd


def test_the_relay_ends_when_the_sandbox_exits_not_after_a_fixed_pause(monkeypatch):
    """Once every writer closed the pipe, the relay waits on the sandbox's pidfd, which wakes as
    it exits: no fixed pause (it cost every notebook 10 ms of tear-down), and every line relayed."""
    if not hasattr(os, "pidfd_open"):
        pytest.skip("no pidfd here: the relay polls instead")
    slept = []
    clock = SimpleNamespace(monotonic=time.monotonic, sleep=lambda s: slept.append(s) or time.sleep(s))
    monkeypatch.setattr(worker.monitor, "time", clock)
    grader, conn = socket.socketpair()
    pid, read_fd = _notebook_process(b'{"type": "done"}\n', exiting_for=0.05)
    try:
        status, _, pending, total = worker.monitor.relay(conn, read_fd, pid, LIMITS, time.monotonic())
    finally:
        os.close(read_fd)
        os.waitpid(pid, 0)
    assert status == "ok" and pending == b"" and total == 17
    assert grader.recv(1 << 16) == b'S {"type": "done"}\n'
    assert slept == [], "the relay paused for a fixed time instead of waiting on the pidfd"
    grader.close()
    conn.close()


def test_what_outlives_the_sandbox_is_killed_and_counted():
    """After the sandbox, the monitor kills what is left of it (a process reparented to it, as its
    subreaper, or one still running under the sandbox's uid) and counts it. It used to raise
    NameError on the first such process, so the run ended with no usage and no verdict.
    A forked stand-in monitor runs kill_all, so that it sees only its own children."""
    report_read, report_write = os.pipe()
    monitor = os.fork()
    if monitor == 0:
        code = 70
        try:
            os.close(report_read)
            sandbox = os.fork()
            if sandbox == 0:
                os._exit(0)
            left = os.fork()
            if left == 0:
                time.sleep(60)
                os._exit(0)
            counted = worker.monitor.kill_all(sandbox, None)
            os.write(report_write, f"{counted} {int(worker.linux.alive(left))}".encode())
            code = 0
        finally:
            os._exit(code)
    os.close(report_write)
    try:
        _, status = os.waitpid(monitor, 0)
        said = os.read(report_read, 100).decode()
    finally:
        os.close(report_read)
    assert os.waitstatus_to_exitcode(status) == 0 and said == "1 0", said
