"""Benchmark: from a submission landing in the exchange to its feedback being fetchable.

    .venv/bin/python bench/serve_bench.py [--repeats 20] [--students 40] [--plain-students 40] [--junk 50000]

Four runs, each on a scratch course with the `worked` assignment released, each timed from
the moment a submission's folder is complete in the exchange's inbound (as `nbgrader submit`
leaves it: the files, then timestamp.txt, then submission_secret.txt) until the feedback page
that *Fetch Feedback* looks for exists in the exchange:

  single   one student and one notebook (w1-memory), submitted `--repeats` times, one at a
           time, to a running `chapter serve`: p50 and p95;
  burst    `--students` students submitting the whole assignment (5 notebooks) within 10 s:
           p50, p95 and the last, against `chapter autograde` grading the same submissions
           after collecting them (the batch way);
  plain    the same burst beside plain nbgrader, collecting, autograding, generating and
           releasing feedback after each submission, one after the other (the only way to
           give feedback on arrival with nbgrader alone), for `--plain-students` students.

  junk     `--junk` folders in inbound that never become complete (one login can make them):
           the service's own CPU share over 20 s idle, then `--repeats` single submissions
           beside them (p50, p95), with and without the junk.

Submissions are written straight into inbound, as `nbgrader submit` writes them, so the
times do not include a student's own nbgrader process. It is not part of the test suite.
"""
from __future__ import annotations

import argparse
import base64
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graders.engine.scratch import make_course, nbgrader  # noqa: E402
from graders.engine.course_dir import exchange_root  # noqa: E402

ASSIGNMENT, COURSE_ID = "worked", "training-at-scale"


def course_with(folder: Path, notebooks: list[str] | None) -> Path:
    course = make_course(ROOT, folder, only=[ASSIGNMENT])
    if notebooks is not None:
        for path in (course / "source" / ASSIGNMENT).glob("*.ipynb"):
            if path.stem not in notebooks:
                path.unlink()
    nbgrader("generate_assignment", ASSIGNMENT, "--force", cwd=course)
    nbgrader("release_assignment", ASSIGNMENT, "--force", cwd=course)
    return course


def land(course: Path, student: str, notebooks: list[str]) -> tuple[str, float]:
    """Write one submission into inbound as `nbgrader submit` does; (its secret, when it was complete)."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    name = f"{student}+{ASSIGNMENT}+{stamp}+{base64.urlsafe_b64encode(os.urandom(9)).decode()}"
    inbound = exchange_root(course) / COURSE_ID / "inbound"
    inbound.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=course))
    for nb in notebooks:
        shutil.copy(ROOT / "solutions" / ASSIGNMENT / f"{nb}.ipynb", staging / f"{nb}.ipynb")
    (staging / "timestamp.txt").write_text(stamp)
    secret = secrets.token_hex(64)
    (staging / "submission_secret.txt").write_text(secret)
    os.rename(staging, inbound / name)
    return secret, time.monotonic()


def feedback_path(course: Path, secret: str, notebook: str) -> Path:
    from nbgrader.utils import notebook_hash
    return exchange_root(course) / COURSE_ID / "feedback" / f"{notebook_hash(secret=secret, notebook_id=notebook)}.html"


def wait_all(course: Path, pending: dict, timeout: float = 1800.0) -> dict:
    """{label: seconds from landing to every notebook's feedback existing}."""
    done, deadline = {}, time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        for label, (secret, notebooks, landed) in list(pending.items()):
            if all(feedback_path(course, secret, nb).exists() for nb in notebooks):
                done[label] = time.monotonic() - landed
                del pending[label]
        time.sleep(0.02)
    if pending:
        raise SystemExit(f"no feedback within {timeout} s for {sorted(pending)}")
    return done


def serving(course: Path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    log = open(course / "serve.log", "w")
    process = subprocess.Popen([sys.executable, "-m", "graders.cli", "serve", ASSIGNMENT, "--course", str(course)],
                               env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while "grading" not in (course / "serve.log").read_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    return process, log


def stop(process, log):
    process.terminate()
    process.wait(timeout=120)
    log.close()


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(q / 100 * (len(values) - 1))))]


def single(repeats: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        course = course_with(Path(tmp) / "course", ["w1-memory"])
        process, log = serving(course)
        try:
            times = []
            for i in range(repeats):
                secret, landed = land(course, "maria", ["w1-memory"])
                times += wait_all(course, {i: (secret, ["w1-memory"], landed)}).values()
            return times
        finally:
            stop(process, log)


def own_cpu(pid: int) -> float:
    """CPU seconds (user and system) of process `pid` itself."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def junk(folders: int, repeats: int, idle: float = 20.0) -> tuple[float, list[float]]:
    """(the service's CPU share while idle, single-submission times) with `folders` never-complete
    folders of one login in inbound."""
    with tempfile.TemporaryDirectory() as tmp:
        course = course_with(Path(tmp) / "course", ["w1-memory"])
        inbound = exchange_root(course) / COURSE_ID / "inbound"
        inbound.mkdir(parents=True, exist_ok=True)
        handle = os.open(inbound, os.O_RDONLY)
        try:
            for i in range(folders):
                os.mkdir(f"mallory+{ASSIGNMENT}+2026-01-01 00:00:00.000000 UTC+{i}", dir_fd=handle)
        finally:
            os.close(handle)
        process, log = serving(course)
        try:
            time.sleep(2.0)
            before, started = own_cpu(process.pid), time.monotonic()
            time.sleep(idle)
            share = (own_cpu(process.pid) - before) / (time.monotonic() - started)
            times = []
            for i in range(repeats):
                secret, landed = land(course, "maria", ["w1-memory"])
                times += wait_all(course, {i: (secret, ["w1-memory"], landed)}).values()
            return share, times
        finally:
            stop(process, log)


def notebooks_of_worked() -> list[str]:
    return sorted(p.stem for p in (ROOT / "solutions" / ASSIGNMENT).glob("*.ipynb"))


def burst(students: int, notebooks: list[str] | None = None, window: float = 10.0,
          batch: bool = True) -> tuple[list[float], float, float | None]:
    """`students` submissions of `notebooks` (default: all of `worked`) spread over `window` s:
    (latencies, last feedback after the first landing, chapter autograde's wall time, or None
    without `batch`)."""
    notebooks = notebooks or notebooks_of_worked()
    with tempfile.TemporaryDirectory() as tmp:
        course = course_with(Path(tmp) / "course", None if notebooks == notebooks_of_worked() else notebooks)
        process, log = serving(course)
        try:
            pending, first = {}, None
            for i in range(students):
                secret, landed = land(course, f"student{i:03d}", notebooks)
                first = first or landed
                pending[i] = (secret, notebooks, landed)
                time.sleep(window / students)
            done = wait_all(course, dict(pending))
            last = max(pending[i][2] + done[i] for i in done) - first
        finally:
            stop(process, log)
        if not batch:
            return list(done.values()), last, None
        nbgrader("collect", ASSIGNMENT, "--update", cwd=course)
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "graders.cli", "autograde", ASSIGNMENT, "--course", str(course),
                        "--force", "--no-progress"], env={**os.environ, "PYTHONPATH": str(ROOT)},
                       check=True, capture_output=True)
        batch = time.monotonic() - started
    return list(done.values()), last, batch


def plain(students: int, notebooks: list[str] | None = None) -> float:
    """Plain nbgrader, after each submission: collect, autograde, generate and release feedback."""
    notebooks = notebooks or notebooks_of_worked()
    with tempfile.TemporaryDirectory() as tmp:
        course = course_with(Path(tmp) / "course", None if notebooks == notebooks_of_worked() else notebooks)
        first = None
        for i in range(students):
            _, landed = land(course, f"student{i:03d}", notebooks)
            first = first or landed
        for i in range(students):
            student = f"student{i:03d}"
            nbgrader("collect", ASSIGNMENT, f"--student={student}", "--update", cwd=course)
            nbgrader("autograde", ASSIGNMENT, f"--student={student}", "--force", cwd=course)
            nbgrader("generate_feedback", ASSIGNMENT, f"--student={student}", "--force", cwd=course)
            nbgrader("release_feedback", ASSIGNMENT, f"--student={student}", cwd=course)
        return time.monotonic() - first


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--plain-students", type=int, default=40)
    parser.add_argument("--junk", type=int, default=50_000, help="never-complete folders in the junk run")
    parser.add_argument("--skip", nargs="*", default=[], choices=["single", "burst", "plain", "junk"])
    args = parser.parse_args()
    if "junk" not in args.skip:
        for folders in (0, args.junk):
            share, times = junk(folders, args.repeats)
            print(f"junk: {folders} never-complete folders in inbound: the idle service used {100 * share:.0f} % "
                  f"of a core; {len(times)} submissions of w1-memory beside them: p50 {percentile(times, 50):.2f} s, "
                  f"p95 {percentile(times, 95):.2f} s")
    if "single" not in args.skip:
        times = single(args.repeats)
        print(f"single: {len(times)} submissions of w1-memory: p50 {percentile(times, 50):.2f} s, "
              f"p95 {percentile(times, 95):.2f} s (target p95 < 3 s), mean {statistics.mean(times):.2f} s")
    last = None
    if "burst" not in args.skip:
        times, last, batch = burst(args.students)
        print(f"burst: {args.students} students x 5 notebooks within 10 s: p50 {percentile(times, 50):.1f} s, "
              f"p95 {percentile(times, 95):.1f} s, last feedback {last:.1f} s after the first landing")
        print(f"burst: chapter autograde of the same {args.students * 5} notebooks: {batch:.1f} s; "
              f"last feedback / batch = {last / batch:.2f} (target <= 1.3)")
    if "plain" not in args.skip:
        seconds = plain(args.plain_students)
        print(f"plain: nbgrader collect + autograde + feedback after each of {args.plain_students} "
              f"submissions: last feedback {seconds:.1f} s after the first landing")
        if last is not None:
            # plain nbgrader handles the submissions one after another, so its time grows linearly
            scaled = seconds * args.students / args.plain_students
            how = "" if args.plain_students == args.students else \
                f" (plain's time scaled linearly from {args.plain_students} to {args.students} students: {scaled:.0f} s)"
            print(f"plain / chapter serve (last feedback): {scaled / last:.1f}x{how}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
