"""A pool of forked grading processes in which every task has a deadline.

`concurrent.futures.ProcessPoolExecutor` cannot stop one task: a submission
whose grading never returns would hold its worker, and the batch, forever.
Here each worker is a forked child that takes one task at a time over a pipe;
the parent watches every task's clock and, past its deadline, kills that one
worker, reports the task as timed out and forks a fresh worker in its place.
The other workers, and their warm caches, carry on.

A worker dies with the process that forked it (PR_SET_PDEATHSIG): a grading
process killed outright leaves no orphan to finish, and record, a grading whose
sandboxes went with it.

Workers are forked from the grading process, which is trusted: requests and
results travel pickled, as they do in ProcessPoolExecutor. A result larger
than `max_result_bytes` is refused, so a runaway result cannot fill this
process's memory.
"""
from __future__ import annotations

import os
import pickle
import signal
import time
from dataclasses import dataclass
from multiprocessing.connection import Pipe, wait

MAX_RESULT_BYTES = 1 << 30


def _die_with(parent: int) -> None:
    """Have the kernel kill this process when `parent` dies (or now, if it already has)."""
    from graders.sandbox.linux import PR_SET_PDEATHSIG, prctl
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


@dataclass
class _Worker:
    pid: int
    conn: object
    task: object = None          # the argument of the task it is running, or None when idle
    deadline: float = 0.0
    started: float = 0.0


class LocalPool:
    """`workers` forked processes running `run(task)`; see `results`."""

    def __init__(self, workers: int, run, init=None, max_result_bytes: int = MAX_RESULT_BYTES):
        self.size, self.run, self.init = max(1, int(workers)), run, init
        self.max_result_bytes = max_result_bytes
        self.workers: list[_Worker] = []

    # ---------------------------------------------------------------- workers
    def _spawn(self) -> _Worker:
        parent, child = Pipe(duplex=True)
        me = os.getpid()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                _die_with(me)
                parent.close()
                for other in self.workers:
                    other.conn.close()
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                if self.init is not None:
                    self.init()
                self._serve(child)
            except BaseException:  # noqa: BLE001 - never return into the parent's code
                code = 1
            finally:
                os._exit(code)
        child.close()
        worker = _Worker(pid, parent)
        self.workers.append(worker)
        return worker

    def _serve(self, conn) -> None:
        while True:
            try:
                task = pickle.loads(conn.recv_bytes())
            except (EOFError, OSError):
                return
            try:
                reply = ("ok", self.run(task))
            except Exception as exc:  # noqa: BLE001 - reported to the parent, the worker lives on
                reply = ("error", f"{type(exc).__name__}: {exc}"[:500])
            conn.send_bytes(pickle.dumps(reply))

    def _kill(self, worker: _Worker) -> None:
        try:
            os.kill(worker.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(worker.pid, 0)
        except ChildProcessError:
            pass
        worker.conn.close()
        self.workers.remove(worker)

    def close(self) -> None:
        """Kill every worker (a task still running is abandoned)."""
        for worker in list(self.workers):
            self._kill(worker)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---------------------------------------------------------------- tasks
    def has_room(self) -> bool:
        return len(self.workers) < self.size or any(w.task is None for w in self.workers)

    def running(self) -> int:
        return sum(w.task is not None for w in self.workers)

    def start(self, task, payload, seconds: float) -> list:
        """Hand `payload` to an idle (or new) worker as `task`; returns any event it caused."""
        worker = next((w for w in self.workers if w.task is None), None) or self._spawn()
        try:
            worker.conn.send_bytes(pickle.dumps(payload))
        except OSError:
            self._kill(worker)
            return [(task, "died", "the grading worker could not be reached", 0.0)]
        worker.task, worker.started = task, time.monotonic()
        worker.deadline = worker.started + seconds
        return []

    def wait(self, timeout: float | None = None) -> list:
        """Events (task, kind, value, seconds) of tasks that ended within `timeout` (None: until one does)."""
        busy = [w for w in self.workers if w.task is not None]
        if not busy:
            return []
        left = min(w.deadline for w in busy) - time.monotonic()
        if timeout is not None:
            left = min(left, timeout)
        ready = wait([w.conn for w in busy], timeout=max(0.0, left))
        now, events = time.monotonic(), []
        for worker in busy:
            task, took = worker.task, now - worker.started
            if worker.conn in ready:
                try:
                    kind, value = pickle.loads(worker.conn.recv_bytes(self.max_result_bytes))
                except (EOFError, OSError) as exc:
                    self._kill(worker)
                    why = ("the grading worker died" if isinstance(exc, EOFError)
                           else f"the result was larger than {self.max_result_bytes} bytes")
                    events.append((task, "died" if isinstance(exc, EOFError) else "error", why, took))
                    continue
                worker.task = None
                events.append((task, kind, value, took))
            elif now >= worker.deadline:
                self._kill(worker)
                events.append((task, "timeout", f"grading took longer than {worker.deadline - worker.started:g} s",
                               took))
        return events

    def results(self, tasks, seconds: float, request=lambda task: task):
        """Run every task; yield (task, kind, value, seconds) as each ends, in any order.

        kind is "ok" (value: what `run` returned), "error" (value: the exception, as
        text), "timeout" (the task ran past `seconds` and its worker was killed) or
        "died" (its worker died under it). `request(task)` is what is sent to the
        worker, computed only when the task starts (so it may carry fresh state).
        A worker that has ended its task is handed the next one before the ended task
        is yielded: it grades while the caller records (tens of ms a submission).
        """
        queue = list(tasks)
        queue.reverse()
        events = []
        while queue or self.running() or events:
            while queue and self.has_room():
                task = queue.pop()
                events += self.start(task, request(task), seconds)
            yield from events
            events = self.wait()   # [] when nothing runs


# ==================================================================== a grading run on this machine
def grade_locally(run, zygote, todo: list) -> None:
    """Grade `todo` (students of the GradingRun `run`) in `run.workers` forked processes, each
    submission under its task time limit, with the warm `zygote`.

    A submission past its limit has its worker killed and is reported, never retried (it
    would only stall again); a worker that dies, or a sandbox that cannot be reached, is an
    infrastructure fault, retried twice. A dying zygote is restarted between rounds.
    """
    import functools

    from nbgrader.api import Gradebook

    from graders.engine import task
    from graders.engine.grading import task_seconds
    course = run.course
    attempts = {s: 0 for s in todo}
    queue = list(todo)
    seconds = task_seconds(course, run.limits)
    while queue:
        close = [zygote.process.stdin.fileno(), zygote.process.stdout.fileno()]
        retry = []
        pool = LocalPool(min(run.workers, len(queue)), _grade_request,
                         init=functools.partial(task.init_worker, close, course=course, limits=run.limits))
        with pool, Gradebook(course.db_url, course.course_id) as gb:
            socket_path = zygote.socket_path
            for student, kind, value, _took in pool.results(queue, seconds,
                                                           request=lambda s: (s, socket_path, run.keys[s])):
                if kind == "ok":
                    kind, value = value
                if kind == "ok":
                    run.accept(gb, value)
                    run.finished()
                elif kind in ("timeout", "not_graded"):
                    run.not_graded(student, value)
                else:
                    attempts[student] += 1
                    if attempts[student] < 3:
                        retry.append(student)
                    else:
                        run.not_graded(student, value)
        if retry and not zygote.alive():
            zygote.close()
            zygote.start().wait_ready()
        queue = retry


def _grade_request(request) -> tuple:
    """In a pool worker: grade one (student, socket path, key) with the course it was started with."""
    from graders.engine import task
    student, socket_path, key = request
    return task.grade_one(task.worker("course"), student, socket_path, task.worker("limits"), key)
