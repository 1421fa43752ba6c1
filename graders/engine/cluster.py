"""`chapter autograde ASSIGNMENT --scheduler ADDRESS`: the same grading, as tasks on a Dask cluster.

Each submission is one task. The task carries everything it needs: the
instructor's snapshot of the assignment (`Course`, read from the gradebook by
this process), the submission's files as bytes, and the assignment's extra
source files. A worker therefore needs the course's Python environment (the
same `graders` code) but neither the course folder nor the gradebook:

- `SandboxPlugin` starts one warm sandbox zygote per worker process, exactly
  the one the local engine uses, so the student's cells run with the same
  namespaces, rlimits, time limits and output caps on every worker.
- `grade_task` writes the submission into a private staging folder, grades it
  with `task.grade_one` (as the local pool does, bounded by `task.grade_bounded`) and returns the result as plain JSON data.
  It refuses to grade with grader code that differs from this process's, since
  the grades would then depend on which worker took the task.

This process keeps the trusted, stateful part: it decides which submissions
need grading (the journal), and it alone writes each result - journal,
gradebook, autograded folder - when its future completes. A worker killed
mid-task loses only its attempt: the scheduler gives the task to another
worker, and since results are written here, once per student, a retried task
cannot be counted twice.
"""
from __future__ import annotations

import base64
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

from graders.digest import code_digest
from graders.engine.course_dir import MAX_NOTEBOOK_BYTES, Course
from graders.engine import task
from graders.engine.grading import SubmissionResult
from graders.engine.summary import isolation_warnings
from graders.sandbox.tempdirs import owned_tempdir
from graders.sandbox.zygote import Limits, SandboxUnavailable, Zygote

PLUGIN = "chapter-sandbox"
RETRIES = 2                  # a task that raises is tried this many more times
IN_FLIGHT_PER_WORKER = 3
MAX_FILE_BYTES = MAX_NOTEBOOK_BYTES


class GraderMismatch(RuntimeError):
    """The worker's `graders` code is not the code this process grades with."""


# ============================================================================ shipping files
def pack(folder: Path) -> dict:
    """A folder's files as data: {relative path: {"data": base64} | {"link": target} | {"size": n}}.

    Links are shipped as links (never followed: a link could point at the gradebook),
    and a file larger than the notebook limit is shipped as its size only, so that the
    worker refuses it for the same reason the local engine does.
    """
    files = {}
    if not folder.is_dir():
        return files
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            files[rel] = {"link": os.readlink(path)}
        elif path.is_file():
            size = path.stat().st_size
            files[rel] = {"size": size} if size > MAX_FILE_BYTES else \
                {"data": base64.b64encode(path.read_bytes()).decode("ascii")}
    return files


def unpack(files: dict, folder: Path) -> None:
    """Recreate `pack`'s output under `folder`; paths that would leave it are refused."""
    folder.mkdir(parents=True, exist_ok=True)
    base = folder.resolve()
    for rel, entry in files.items():
        target = (folder / rel)
        if Path(rel).is_absolute() or ".." in Path(rel).parts or \
                not target.resolve().parent.is_relative_to(base):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if "link" in entry:
            os.symlink(str(entry["link"]), target)
        elif "size" in entry:
            with open(target, "wb") as fh:      # sparse: the size is all the check reads
                fh.truncate(int(entry["size"]))
        else:
            target.write_bytes(base64.b64decode(entry["data"]))


def source_files(course: Course) -> dict:
    """The assignment's non-notebook source files (data a notebook may read)."""
    from nbgrader.utils import find_all_files
    base = Path(course.source_dir)
    if not base.is_dir():
        return {}
    keep = {os.path.relpath(p, base) for p in find_all_files(str(base), course.ignore + ["*.ipynb"])}
    return {rel: entry for rel, entry in pack(base).items() if rel in keep}


# ============================================================================ on the workers
try:
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError:  # pragma: no cover - the cluster extra is not installed
    WorkerPlugin = object


class SandboxPlugin(WorkerPlugin):
    """One warm sandbox zygote per Dask worker, started with the worker and closed with it.

    Registered once per grader version and isolation setting (its name carries both), and
    idempotently: a later run finds the workers' zygotes warm instead of restarting them.
    """

    idempotent = True

    def __init__(self, isolate: bool = True, digest: str = "", allow_degraded: bool = False):
        self.isolate = isolate
        self.allow_degraded = allow_degraded
        mode = ("isolated" if isolate else "open") + ("-degraded" if allow_degraded else "")
        self.name = f"{PLUGIN}-{mode}-{digest[:16]}"
        self.zygote = None
        self.staging = None
        self.running = {}    # task key -> pid of the child grading it

    def setup(self, worker=None):
        self.staging = owned_tempdir("chapter-staging-")
        os.chmod(self.staging, stat.S_IRWXU)
        # the staging folder holds other students' submissions: the sandbox must never see it
        self.zygote = Zygote(isolate=self.isolate, secrets=[self.staging],
                             allow_degraded=self.allow_degraded).start()

    def teardown(self, worker=None):
        if self.zygote is not None:
            self.zygote.close()
        if self.staging:
            shutil.rmtree(self.staging, ignore_errors=True)

    def ready(self) -> Zygote:
        if self.zygote is None:
            self.setup()
        if not self.zygote.alive():      # it died (killed, out of memory): start a fresh one
            self.zygote.close()
            self.zygote.start()
        return self.zygote.wait_ready()


def _plugin(name: str, worker=None) -> SandboxPlugin:
    if worker is None:
        from distributed import get_worker
        worker = get_worker()
    plugin = worker.plugins.get(name)
    if plugin is None:
        raise SandboxUnavailable("this worker has no sandbox plugin registered")
    return plugin


def grade_task(course: Course, student: str, key: str, limits: Limits, files: dict, sources: dict,
               digest: str, plugin: str = PLUGIN) -> dict:
    """Grade one submission on a worker, within its task time limit.

    Returns {"result": `SubmissionResult.to_json()`} or {"not_graded": why}.
    """
    if digest != code_digest():
        raise GraderMismatch("this worker's graders code differs from the grading process's; "
                             "install the same version of the course on every worker")
    from distributed import get_worker
    plugin = _plugin(plugin)
    zygote = plugin.ready()
    current, running = get_worker().get_current_task(), plugin.running
    with tempfile.TemporaryDirectory(dir=plugin.staging) as tmp:
        unpack(files, Path(tmp, "submitted", "s"))
        unpack(sources, Path(tmp, "source"))
        here = replace(course, submitted=os.path.join(tmp, "submitted", "s"),
                       source_dir=os.path.join(tmp, "source"))
        bounded = partial(task.grade_bounded, started=lambda pid: running.__setitem__(current, pid))
        try:
            kind, value = task.grade_one(here, student, zygote.socket_path, limits, key, grade=bounded)
        finally:
            running.pop(current, None)
    if kind == "infra":   # not the student's fault: the task fails, and Dask retries it elsewhere
        raise SandboxUnavailable(value)
    if kind != "ok":
        return {"not_graded": value}
    return {"result": value.to_json()}


def abandon(keys: list, name: str, dask_worker) -> int:
    """Stop this worker's gradings of the tasks `keys` (their grading process has stopped): kill
    each one's grading child, whose sandbox then dies with its connection. Returns how many."""
    plugin = dask_worker.plugins.get(name)
    running = plugin.running if plugin is not None else {}
    stopped = 0
    for key in keys:
        pid = running.get(key)
        if pid is not None:
            try:
                os.kill(pid, signal.SIGKILL)
                stopped += 1
            except ProcessLookupError:
                pass
    return stopped


def worker_isolation(name: str, dask_worker) -> dict:
    """What the sandbox on this worker can do (namespaces or not), for the grading process's report."""
    zygote = _plugin(name, dask_worker).ready()
    return {"isolation": zygote.isolation, "warnings": isolation_warnings(zygote)}


# ============================================================================ in the grading process
def connect(address: str):
    try:
        from distributed import Client
    except ImportError:
        raise SystemExit("--scheduler needs Dask's distributed scheduler: pip install '.[cluster]'") from None
    try:
        return Client(address, timeout="30s")
    except OSError as exc:
        raise SystemExit(f"no Dask scheduler answers at {address}: {exc}") from None


def grade_on_cluster(run, todo: list) -> None:
    """Grade `todo` (students of the GradingRun `run`) as one task per student on the cluster at
    `run.scheduler`; record each result once, here."""
    from distributed import as_completed
    course, report, keys = run.course, run.report, run.keys
    with connect(run.scheduler) as client:
        digest, sources = code_digest(), source_files(course)
        plugin = SandboxPlugin(isolate=run.isolate, digest=digest, allow_degraded=run.allow_degraded)
        client.register_plugin(plugin, name=plugin.name)
        report.workers = run.workers = len(client.scheduler_info(n_workers=-1)["workers"])
        for info in client.run(worker_isolation, plugin.name).values():
            report.isolation = report.isolation or info["isolation"]
            for warning in info["warnings"]:
                if warning not in report.warnings:
                    report.warnings.append(warning)
        waiting, pending = list(reversed(todo)), {}

        def submit():
            """The next submission as a task; its files are read only now, not the whole class at once."""
            student = waiting.pop()
            future = client.submit(grade_task, course, student, keys[student], run.limits,
                                   pack(course.submission_dir(student)), sources, digest, plugin.name,
                                   key=f"autograde-{course.assignment}-{keys[student][:16]}-{student}",
                                   retries=RETRIES, pure=False)
            pending[future] = student
            return future

        # a few tasks per worker in flight: enough to keep every worker busy, while the class's
        # files (thousands of submissions) never sit in this process's or the scheduler's memory
        window = max(8, IN_FLIGHT_PER_WORKER * report.workers)
        running = as_completed([submit() for _ in range(min(window, len(waiting)))])
        try:
            _collect(run, running, waiting, pending, submit)
        except BaseException:
            # stopped (SIGTERM, SIGINT) or failed: cancel what is queued, stop what is running
            client.cancel(list(pending))
            _abandon_on_workers(client, [f.key for f in pending], plugin.name)
            raise


def _abandon_on_workers(client, keys: list, name: str, seconds: float = 15.0) -> None:
    import concurrent.futures
    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        pool.submit(client.run, abandon, keys, name).result(timeout=seconds)
    except Exception:  # noqa: BLE001 - a worker that cannot be reached: its sandboxes stop at their limits
        pass
    finally:
        pool.shutdown(wait=False)


def _collect(run, running, waiting, pending, submit) -> None:
    """Record each result as it comes, keeping the window of tasks in flight full."""
    from nbgrader.api import Gradebook
    with Gradebook(run.course.db_url, run.course.course_id) as gb:
        for future in running:
            if waiting:
                running.add(submit())
            student = pending.pop(future)
            try:
                answer = future.result()
                if "not_graded" in answer:
                    run.not_graded(student, answer["not_graded"])
                    future.release()
                    continue
                result = SubmissionResult.from_json(answer["result"])
            except Exception as exc:  # noqa: BLE001 - a lost task must not stop the class
                run.not_graded(student, _why_failed(exc))
            else:
                if student not in run.report.results:    # one result per student, written once
                    run.accept(gb, result)
                run.finished()
            future.release()


def _why_failed(exc: BaseException) -> str:
    name = type(exc).__name__
    if name == "KilledWorker":
        return "every worker that tried this submission died (it was retried, then given up)"
    if isinstance(exc, GraderMismatch):
        return str(exc)
    return f"{name}: {str(exc)[:300]}"


# ============================================================================ a cluster on this machine
class LoopbackCluster:
    """`dask scheduler` and N `dask worker` processes (one thread each, with nannies) on 127.0.0.1.

    What the tests and the benchmark grade on: the same commands a deployment runs
    on its own machines, here bound to loopback. `address` is the scheduler's.
    """

    def __init__(self, folder: Path, workers: int = 2, start_timeout: float = 120.0):
        from distributed import Client
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.file = self.folder / "scheduler.json"
        self.file.unlink(missing_ok=True)      # a stale file would name a scheduler long gone
        self.procs = []
        dask = str(Path(sys.executable).parent / "dask")
        self._spawn([dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", str(self.file)], "scheduler")
        deadline = time.monotonic() + start_timeout
        while not self.file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        for i in range(workers):
            self._spawn([dask, "worker", "--scheduler-file", str(self.file), "--host", "127.0.0.1",
                         "--nthreads", "1", "--no-dashboard", "--name", f"worker-{i}"], f"worker-{i}")
        self.client = Client(scheduler_file=str(self.file), timeout=f"{start_timeout:.0f}s",
                             set_as_default=False)
        self.client.wait_for_workers(workers, timeout=start_timeout)
        self.address = self.client.scheduler.address

    def _spawn(self, argv, name):
        with open(self.folder / f"{name}.log", "wb") as log:
            self.procs.append(subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True))

    def close(self):
        """Stop the workers, then the scheduler, as a deployment's service manager would: SIGTERM to
        each command, whose nanny then closes its worker, so that the worker's plugins tear down
        (zygote closed, staging folder removed). A signal to the whole process group would also
        reach the worker itself, which then dies without its teardown. Whatever is left after
        20 s is killed, group and all."""
        self.client.close()
        for batch in (self.procs[1:], self.procs[:1]):
            for proc in batch:
                try:
                    proc.send_signal(signal.SIGTERM)
                except OSError:
                    pass
            for proc in batch:
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    pass
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
