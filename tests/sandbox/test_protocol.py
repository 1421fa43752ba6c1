"""The written contract between the grader and the zygote (graders/sandbox/protocol.py): the setup
is typed and checked, and a monitor message outside the format is refused with its reason."""
import json

import pytest

from graders.sandbox.protocol import MAX_MESSAGE_BYTES, SandboxConfig, conforms

START = {"type": "start", "monitor": 4242, "sandbox": 4243, "uid": 2_100_000_000,
         "layers": {"pid_namespace": True, "control_group": "memory v2", "uid": 2_100_000_000,
                    "ipc_namespace_error": "refused"}}
USAGE = {"type": "usage", "memory_peak": 1 << 20, "memory_limit": None, "oom_kills": 0, "cpu_seconds": 0.25,
         "fork_at": 10.5, "setup_seconds": 0.02, "end_at": 11.0}
END = {"type": "end", "status": "ok", "detail": "", "exit": 0, "leftovers": 0, "seconds": 0.5}


@pytest.mark.parametrize("message", [START, USAGE, END, {**START, "sandbox": None, "uid": None},
                                     {**END, "status": "unavailable", "exit": None}])
def test_the_monitors_messages_conform(message):
    assert conforms(message) == ""


@pytest.mark.parametrize("message, reason", [
    ({**END, "grade": 100}, "end: unknown keys grade"),
    ({**END, "status": "passed"}, "end: status is not one of ok"),
    ({**END, "leftovers": -1}, "end: leftovers is not a count"),
    ({**END, "leftovers": True}, "end: leftovers is not a count"),
    ({**END, "seconds": "0.5"}, "end: seconds is not a number of seconds"),
    ({**END, "detail": "x" * 2001}, "end: detail is not a string of at most 2,000 characters"),
    ({"type": "end", "detail": ""}, "end: missing status"),
    ({**START, "monitor": 1}, "start: monitor is not a pid above 1"),
    ({**START, "layers": {"seccomp": [1, 2]}}, "start: layers is not an object of at most 64 layers"),
    ({**START, "layers": {f"l{i}": True for i in range(65)}}, "start: layers is not an object"),
    ({**USAGE, "cpu_seconds": float("nan")}, "not plain JSON data"),
    ({**USAGE, "cpu_seconds": "1"}, "usage: cpu_seconds is not a number or null"),
    ({"type": "grade", "score": 1}, "unknown type 'grade'"),
    ([END], "not a JSON object"),
    ({**START, "layers": {"x": "y" * 1500 for _ in range(1)} | {f"k{i}": "z" * 1500 for i in range(50)}},
     f"more than {MAX_MESSAGE_BYTES}"),
])
def test_a_message_outside_the_format_is_refused_with_its_reason(message, reason):
    assert reason in conforms(message)


def config(**change):
    base = {"socket": "/tmp/z/zygote.sock", "scratch": "/tmp/z/scratch", "mount_root": "/tmp/z/root",
            "transport": "/g/transport.py", "seccomp": "/g/seccomp.py", "cgroups": "/g/cgroups.py",
            "lease_dir": "/run/leases", "uid_base": 2_100_000_000, "site": ["/venv/site-packages"],
            "preload": ["IPython"], "binds": ["/usr"], "isolate": True, "allow_degraded": False,
            "python_world_readable": True, "fail_layers": []}
    return {**base, **change}


def test_the_config_goes_through_json_unchanged():
    made = SandboxConfig.from_json(config())
    assert SandboxConfig.from_json(json.loads(made.to_json())) == made
    assert made.uid_count == 1 << 16 and made.drop_uid is True


@pytest.mark.parametrize("change, reason", [
    ({"run_as_root": True}, "unknown keys: run_as_root"),
    ({"uid_base": "0"}, "uid_base is str, not int"),
    ({"uid_base": True}, "uid_base is bool, not int"),
    ({"isolate": 1}, "isolate is int, not bool"),
    ({"binds": ["/usr", 3]}, "binds holds a value that is not a string"),
])
def test_a_config_outside_the_format_is_refused(change, reason):
    with pytest.raises(ValueError, match=reason):
        SandboxConfig.from_json(config(**change))


def test_a_missing_key_is_refused():
    data = config()
    del data["socket"]
    with pytest.raises(ValueError, match="incomplete"):
        SandboxConfig.from_json(data)
    with pytest.raises(ValueError, match="not a JSON object"):
        SandboxConfig.from_json([data])


def test_the_grader_does_not_trust_a_monitor_message_outside_the_format():
    from graders.sandbox.zygote import Run, _take

    run = Run(expected=frozenset({0}))
    assert _take(run, b"M " + json.dumps(START).encode()) is True
    _take(run, b"M " + json.dumps({**END, "status": "ok", "seconds": -3}).encode())
    assert not run.done and run.status == "error" and run.seconds == 0.0   # never read
    _take(run, b"M " + json.dumps({**USAGE, "cpu_seconds": "all"}).encode())
    assert run.usage == {}
    assert run.ignored == 2
    assert "the monitor's message was refused: end: seconds is not a number of seconds" in run.anomaly
    assert "usage: cpu_seconds is not a number or null" in run.anomaly
    _take(run, b"M " + json.dumps(END).encode())
    assert run.done and run.status == "ok" and run.seconds == 0.5


def _monitor_saying(tmp_path, *messages):
    """A stand-in zygote at a socket of tmp_path: its monitor sends `messages`, then hangs up."""
    import socket
    import threading
    path = str(tmp_path / f"zygote-{len(messages)}.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)

    def answer():
        conn, _ = server.accept()
        conn.recv(1 << 16)
        for message in messages:
            conn.sendall(b"M " + json.dumps(message).encode() + b"\n")
        conn.close()
        server.close()
    threading.Thread(target=answer, daemon=True).start()
    return path


def test_a_monitor_that_ends_before_its_account_leaves_the_run_ungraded(tmp_path):
    """The monitor is trusted: if it ends (killed, or its own fault) before it says how the run
    ended, the run is the machine's failure (retried, then not graded), never a grade."""
    from graders.sandbox.zygote import Limits, SandboxUnavailable, run_job
    job = {"cells": [{"index": 0, "source": "x = 1"}], "env": {}}
    with pytest.raises(SandboxUnavailable, match="before it reported how the run ended"):
        run_job(_monitor_saying(tmp_path, START, USAGE), job, Limits(notebook_seconds=5))
    run = run_job(_monitor_saying(tmp_path, START, USAGE, END), job, Limits(notebook_seconds=5))
    assert run.done and run.status == "ok"
