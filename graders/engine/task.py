"""Grading one submission in a worker: the one function the local pool, the Dask cluster and
`chapter serve` all run, and the one initialiser of their forked workers.

Every worker does the same four steps (`grade_one`): warm the student's references in the
long-lived worker, grade, turn a sandbox that cannot be reached into an infrastructure fault
("infra": retried, never the student's 0), and, once graded, warm the declared mistakes the
next student of that variant may need. What differs is only how the grading is bounded
(`grade_bounded`, on a cluster worker) and what follows it (`then`, the service's recording).
"""
from __future__ import annotations

import contextlib
import os

from graders.engine import grading
from graders.engine.grading import SubmissionResult
from graders.sandbox.zygote import SandboxUnavailable

_WORKER: dict = {}      # what init_worker was given, in this worker process


class NotGraded(Exception):
    """The submission's grading was stopped (past its time limit) or failed: reported, not retried."""


def init_worker(close_fds, **state) -> None:
    """Start a forked worker: close the descriptors it must not hold (the zygote's pipes: a worker
    that held them would keep a dead zygote looking alive), and keep `state` for `worker`."""
    for fd in close_fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    _WORKER.clear()
    _WORKER.update(state)


def worker(name: str):
    """What `init_worker` was given as `name` in this worker."""
    return _WORKER[name]


def grade_one(course, student: str, socket_path: str, limits, key: str, grade=None, then=None) -> tuple:
    """Grade one submission in this worker: ("ok", what `then(result)` gives, else the result),
    ("infra", why) when the sandbox could not be reached, or ("not_graded", why).

    `grade` is how (`grading.grade_submission` unless given, e.g. `grade_bounded`); `then(result)`
    returns (kind, value) itself and runs before the mistakes are warmed (the service records
    and releases the student's feedback first).
    """
    grading.warm_references(course, student)
    try:
        result = (grade or grading.grade_submission)(course, student, socket_path, limits, key)
    except SandboxUnavailable as exc:
        return "infra", str(exc)
    except NotGraded as exc:
        return "not_graded", str(exc)
    kind, value = then(result) if then is not None else ("ok", result)
    if kind == "ok":
        with contextlib.suppress(Exception):   # only a cache for later students
            grading.warm_references(course, student, after=result)
    return kind, value


def grade_bounded(course, student: str, socket_path: str, limits, key: str = "", started=None) -> SubmissionResult:
    """`grading.grade_submission` in a forked child under the task's time limit (for cluster
    workers, which have no pool watching them); `started(pid)` is told the child's pid.

    Raises NotGraded past the limit or when the child fails, SandboxUnavailable when the
    sandbox could not be reached (Dask then retries the task elsewhere); never hangs.
    """
    from graders import symbolic
    from graders.bounded import Timeout, run_bounded

    def work():
        mark = symbolic.decided_count()
        try:
            result = grading.grade_submission(course, student, socket_path, limits, key)
        except SandboxUnavailable as exc:
            return {"infra": str(exc)}
        return {"result": result.to_json(), "decided": symbolic.decided_since(mark)}

    seconds = grading.task_seconds(course, limits)
    try:
        out = run_bounded(work, timeout=seconds, memory_bytes=8 << 30, max_output=1 << 30, started=started)
    except Timeout:
        raise NotGraded(f"grading took longer than {seconds:g} s and was stopped") from None
    except RuntimeError as exc:
        raise NotGraded(f"grading failed: {exc}"[:300]) from None
    if "infra" in out:
        raise SandboxUnavailable(out["infra"])
    symbolic.remember(out.pop("decided", ()))
    return SubmissionResult.from_json(out["result"])
