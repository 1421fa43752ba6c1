"""The contract between the trusted grader and the sandbox's zygote, written down.

Standard library only and nothing from `graders`: the grader imports it as
`graders.sandbox.protocol`, the zygote (`worker.py`, run as ``python -I -S``) loads it by path.

1. The setup: one JSON line the grader writes on the zygote's stdin when it starts it,
   `SandboxConfig` below (every key, its type and its meaning; a key it does not name, or a
   value of the wrong type, is refused by `SandboxConfig.from_json`, and the zygote does not start).

2. The monitor's messages: lines ``M <json object>`` the monitor writes on the job's socket.
   The monitor runs no student code, so these are the grader's trusted account of the run,
   and `conforms` is checked on each before the grader reads it. In the order sent:

   ``start``   once, before any student code (or in place of it, when isolation failed)
       type      "start"
       monitor   int > 1           the monitor's pid (its session: killed as a group if the
                                   grader gives up on the run)
       sandbox   int > 1 or null   the sandbox's pid (null: no sandbox was forked)
       uid       int >= 0 or null  the uid the sandbox runs as (null: none, as above)
       layers    object            the isolation layers in force, by name (graders/sandbox/layers.py:
                                   LAYERS and MONITOR_LAYERS): true, a string (a control group's
                                   description), an int (the uid) or, under "<name>_error" and
                                   "<name>_detail", a string saying why not; at most 64 keys

   ``usage``   once, after the sandbox is dead; every value a number or null
       type             "usage"
       memory_peak      bytes the notebook's control group used at the most
       memory_limit     its limit, bytes
       oom_kills        processes the kernel killed for memory
       pids_refused     forks refused at the process limit
       cpu_seconds      CPU time of all its processes
       fork_at, ready_at, sandbox_at, root_at, isolated_at, end_at
                        time.monotonic() on the zygote's machine at each step of the run
       setup_seconds    from the fork to the sandbox's report on its layers

   ``end``     last
       type       "end"
       status     one of STATUSES (ok | timeout | crashed | flood | memory | gone | unavailable | error)
       detail     str, at most 2,000 characters: why, for the instructor
       exit       int or null      the sandbox's exit code (negative: the signal that killed it)
       leftovers  int >= 0         processes still alive after the sandbox ended, killed
       seconds    number >= 0      wall-clock seconds of the run

   Every message is a JSON object of at most MAX_MESSAGE_BYTES once encoded; a key not named
   here, a value of another type, or a longer message is refused with its reason.

The sandbox's own lines (``S <json>``: isolation, begin, cell, done) are the student's process
speaking: untrusted, read only as data by `graders.sandbox.zygote._take`.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields

MAX_MESSAGE_BYTES = 64 << 10
STATUSES = ("ok", "timeout", "crashed", "flood", "memory", "gone", "unavailable", "error")


@dataclass
class SandboxConfig:
    """The zygote's setup, sent once as JSON on its stdin."""
    socket: str                  # the UNIX socket the zygote listens on (one connection a notebook)
    scratch: str                 # the zygote's HOME and the parent of each sandbox's private folder
    mount_root: str              # an empty folder, where each sandbox builds its fresh root
    transport: str               # path of graders/transport.py (the answer encoder), loaded by path
    seccomp: str                 # path of graders/sandbox/seccomp.py
    cgroups: str                 # path of graders/sandbox/cgroups.py
    lease_dir: str               # where sandbox uids are leased machine-wide (one flocked file a uid)
    uid_base: int                # the first sandbox uid; slots count up from it
    site: list = field(default_factory=list)      # site-packages folders appended to sys.path
    preload: list = field(default_factory=list)   # modules imported once in the zygote
    binds: list = field(default_factory=list)     # host paths bound read-only into each sandbox
    isolate: bool = True                 # namespaces and seccomp (False: tests and degraded machines)
    allow_degraded: bool = False         # run a notebook without a layer that cannot be applied
    python_world_readable: bool = True   # can an unprivileged uid read the Python installation?
    fail_layers: list = field(default_factory=list)   # tests only: layers to treat as refused
    uid_count: int = 1 << 16             # how many uids may be leased from uid_base
    drop_uid: bool = True                # as root, run each sandbox under a leased uid
    later: list = field(default_factory=list)    # modules (torch's) a second zygote imports: see light_socket
    light_socket: str = ""               # with `later`: the zygote serves notebooks here as soon as it
    #   has imported `preload`, and forks a second zygote that imports `later` and then serves `socket`

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, data) -> "SandboxConfig":
        """The config in `data` (a dict), checked: an unknown key, a missing one or a wrong type
        raises ValueError saying which."""
        if not isinstance(data, dict):
            raise ValueError("the sandbox config is not a JSON object")
        known = {f.name: f for f in fields(cls)}
        extra = sorted(set(data) - set(known))
        if extra:
            raise ValueError(f"the sandbox config has unknown keys: {', '.join(map(str, extra))}")
        for name, value in data.items():
            wanted = _TYPES[known[name].type]
            if not isinstance(value, wanted) or wanted is int and isinstance(value, bool):
                raise ValueError(f"the sandbox config's {name} is {type(value).__name__}, "
                                 f"not {known[name].type}")
            if wanted is list and not all(isinstance(item, str) for item in value):
                raise ValueError(f"the sandbox config's {name} holds a value that is not a string")
        try:
            return cls(**data)
        except TypeError as exc:   # a required key is missing
            raise ValueError(f"the sandbox config is incomplete: {exc}") from None


_TYPES = {"str": str, "int": int, "bool": bool, "list": list}

_NUMBER = (int, float)
_MESSAGES = {
    "start": {"monitor": "pid", "sandbox": "pid?", "uid": "uid?", "layers": "layers"},
    "usage": {key: "number?" for key in ("memory_peak", "memory_limit", "oom_kills", "pids_refused",
                                         "cpu_seconds", "fork_at", "ready_at", "sandbox_at", "root_at",
                                         "isolated_at", "end_at", "setup_seconds")},
    "end": {"status": "status", "detail": "text", "exit": "int?", "leftovers": "count", "seconds": "seconds"},
}
_REQUIRED = {"start": ("monitor", "layers"), "usage": (), "end": ("status",)}


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value) -> bool:
    return isinstance(value, _NUMBER) and not isinstance(value, bool) and value == value \
        and abs(value) != float("inf")


def _layer_value(value) -> bool:
    return isinstance(value, (bool, str)) and len(str(value)) <= 2000 or _is_int(value)


_CHECKS = {
    "pid": lambda v: _is_int(v) and v > 1,
    "pid?": lambda v: v is None or _is_int(v) and v > 1,
    "uid?": lambda v: v is None or _is_int(v) and v >= 0,
    "int?": lambda v: v is None or _is_int(v),
    "count": lambda v: _is_int(v) and v >= 0,
    "number?": lambda v: v is None or _number(v),
    "seconds": lambda v: _number(v) and v >= 0,
    "status": lambda v: v in STATUSES,
    "text": lambda v: isinstance(v, str) and len(v) <= 2000,
    "layers": lambda v: isinstance(v, dict) and len(v) <= 64
    and all(isinstance(k, str) and len(k) <= 64 and _layer_value(x) for k, x in v.items()),
}
_SAYS = {"pid": "a pid above 1", "pid?": "a pid above 1 or null", "uid?": "a uid or null",
         "int?": "an integer or null", "count": "a count", "number?": "a number or null",
         "seconds": "a number of seconds", "status": "one of " + ", ".join(STATUSES),
         "text": "a string of at most 2,000 characters",
         "layers": "an object of at most 64 layers, each true, a string or an integer"}


def conforms(message) -> str:
    """Why the monitor's `message` is outside the format above, or "" when it conforms."""
    if not isinstance(message, dict):
        return "not a JSON object"
    kind = message.get("type")
    if kind not in _MESSAGES:
        return f"unknown type {str(kind)[:40]!r}"
    try:
        size = len(json.dumps(message, allow_nan=False))
    except (TypeError, ValueError):
        return "not plain JSON data"
    if size > MAX_MESSAGE_BYTES:
        return f"{size} bytes, more than {MAX_MESSAGE_BYTES}"
    spec = _MESSAGES[kind]
    extra = sorted(set(message) - set(spec) - {"type"})
    if extra:
        return f"{kind}: unknown keys {', '.join(k[:40] for k in extra[:5])}"
    missing = [key for key in _REQUIRED[kind] if key not in message]
    if missing:
        return f"{kind}: missing {', '.join(missing)}"
    for key, rule in spec.items():
        if key in message and not _CHECKS[rule](message[key]):
            return f"{kind}: {key} is not {_SAYS[rule]}"
    return ""
