"""Benchmark: 40 students on a real JupyterHub submit within 10 s; how soon each gets feedback.

    sudo .venv/bin/python bench/hub_bench.py [--students 40] [--window 10] [--plain-students 5]
    sudo .venv/bin/python bench/hub_bench.py --smoke        # 3 students, the hub alone: does it run?

As root (it creates unix users and runs the hub's setuid spawner); needs `make setup` (the
hub's proxy under .hub/). Three runs, each on the same work, one `worked` notebook (w1-memory,
answered correctly) per student:

  hub      `--students` real unix users (hb2-bench-NN, and hb2-bench-teacher who owns the
           course; all removed afterwards, whatever happens) on a real JupyterHub on loopback
           (tests/hub/machinery.py, as tests/hub runs it), the course's `chapter serve` a hub
           service. Each student's answered copy is put where `nbgrader fetch_assignment` leaves
           it; then each runs nbgrader's own `nbgrader submit`, as themselves, with what a
           terminal of their hub server has (their login, their own hub token, nbgrader's
           JupyterHubAuthPlugin), the starts spread evenly over `--window` seconds. A student's
           latency runs from the start of their submit to their feedback page being in the
           exchange where their `nbgrader fetch_feedback` finds it (named by the secret their
           submit wrote), broken into the submit command (until the submission is complete in
           inbound) and the rest (chapter serve noticing, collecting, grading, releasing). At the
           end every student runs `nbgrader fetch_feedback` once, to show the page is theirs.
  machine  the same burst on one machine, from bench/serve_bench.py: submissions written
           straight into inbound, `chapter serve` on a scratch course, no hub, no users, no
           submit command (its latency starts where the hub's "rest" does).
  plain    plain nbgrader on the same work, one machine: collect, autograde, generate and
           release feedback after each submission, one student after another (the only way to
           give feedback on arrival with nbgrader alone), for `--plain-students`, scaled
           linearly to `--students`.

It is not part of the test suite.
"""
from __future__ import annotations

import argparse
import os
import pwd
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import serve_bench  # noqa: E402
from graders.course.demo import fill  # noqa: E402
from tests.conftest import copy_course  # noqa: E402
from tests.hub.machinery import (PROXY, Hub, HubCourse, accounts, as_user, exists, python_paths,  # noqa: E402
                                 run, traversable)

COURSE_ID, ASSIGNMENT, NOTEBOOK = "training-at-scale", "worked", "w1-memory"
PREFIX = "hb2-bench-"


def answered_copy(hub: Hub, login: str) -> Path:
    """`login`'s copy of `worked`, answered correctly, where fetch_assignment leaves it (in their
    home, theirs); their home."""
    home = Path(pwd.getpwnam(login).pw_dir)
    folder = home / COURSE_ID / ASSIGNMENT
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "release" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", folder / f"{NOTEBOOK}.ipynb")
    fill(folder / f"{NOTEBOOK}.ipynb", "correct", ROOT)
    run("chown", "-R", f"{login}:{login}", str(home / COURSE_ID))
    return home


def inbound_secret(hub: Hub, login: str) -> tuple[str, float] | None:
    """The secret of `login`'s submission in inbound and when it was complete (wall clock), once
    nbgrader submit has written its submission_secret.txt."""
    uid = pwd.getpwnam(login).pw_uid
    for folder in (hub.exchange / COURSE_ID / "inbound").glob(f"{login}+{ASSIGNMENT}+*"):
        secret = folder / "submission_secret.txt"
        try:
            if folder.lstat().st_uid == uid and secret.stat().st_size >= 16:
                return secret.read_text(), secret.stat().st_mtime
        except OSError:
            pass
    return None


def hub_burst(hub: Hub, students: list[str], window: float, timeout: float = 1800.0) -> dict:
    """Every student submits, the starts spread over `window` s; {login: (start, complete in
    inbound, feedback there)} in wall-clock seconds."""
    from nbgrader.utils import notebook_hash
    envs = {login: hub.user_env(login) for login in students}     # their tokens, made beforehand
    homes = {login: Path(pwd.getpwnam(login).pw_dir) for login in students}
    started, procs, failed = {}, {}, []

    def submit(login):
        started[login] = time.time()
        result = as_user(login, "nbgrader", "submit", ASSIGNMENT, f"--course={COURSE_ID}", cwd=homes[login],
                         env=envs[login], check=False)
        if result.returncode:
            failed.append(f"{login}: {(result.stdout + result.stderr)[-500:]}")
    for i, login in enumerate(students):
        procs[login] = threading.Thread(target=submit, args=(login,))
        procs[login].start()
        time.sleep(window / len(students))
    times, deadline = {}, time.monotonic() + timeout
    feedback = hub.exchange / COURSE_ID / "feedback"
    landed = {}
    while len(times) < len(students) and time.monotonic() < deadline:
        now = time.time()
        for login in students:
            if login in times:
                continue
            if login not in landed:
                found = inbound_secret(hub, login)
                if found is None:
                    continue
                landed[login] = found
            secret, complete = landed[login]
            if (feedback / f"{notebook_hash(secret=secret, notebook_id=NOTEBOOK)}.html").exists():
                times[login] = (started[login], complete, now)
        if failed:
            raise SystemExit("nbgrader submit failed:\n" + "\n".join(failed))
        time.sleep(0.05)
    for thread in procs.values():
        thread.join()
    if len(times) < len(students):
        raise SystemExit(f"no feedback within {timeout:g} s for {sorted(set(students) - set(times))}\n"
                         + hub.log_text()[-3000:])
    return times


def fetched_by_each(hub: Hub, students: list[str]) -> int:
    """How many students' own `nbgrader fetch_feedback` brought their page home."""
    from concurrent.futures import ThreadPoolExecutor

    def fetch(login) -> bool:
        home = Path(pwd.getpwnam(login).pw_dir)
        as_user(login, "nbgrader", "fetch_feedback", ASSIGNMENT, f"--course={COURSE_ID}", cwd=home,
                env=hub.user_env(login), check=False)
        return bool(list((home / COURSE_ID / ASSIGNMENT / "feedback").glob(f"*/{NOTEBOOK}.html")))
    with ThreadPoolExecutor(4) as pool:
        return sum(pool.map(fetch, students))


def on_the_hub(students: int, window: float) -> tuple[dict, dict]:
    """The hub run: ({login: (start, complete, feedback)}, {phase: seconds} of its set-up)."""
    if os.geteuid() != 0:
        raise SystemExit("run it as root: it creates unix users and runs the hub's setuid spawner")
    if not os.access(PROXY, os.X_OK):
        raise SystemExit(f"no configurable-http-proxy at {PROXY}: run `make setup`")
    logins = [f"{PREFIX}{i:02d}" for i in range(students)] + [f"{PREFIX}teacher"]
    taken = [login for login in logins if exists(login)]
    if taken:
        raise SystemExit(f"unix users {', '.join(taken)} exist already; not touching them")
    phases = {}
    clock = time.monotonic()
    top = Path(tempfile.mkdtemp(prefix="chapter-hub-bench-"))
    top.chmod(0o755)
    hub = None
    try:
        with accounts(logins) as passwords, traversable(*python_paths()):
            users = {login: (login, passwords[login]) for login in logins[:-1]}
            users["instructor"] = (logins[-1], passwords[logins[-1]])
            phases["users"] = time.monotonic() - clock
            clock = time.monotonic()
            course = HubCourse(COURSE_ID, ASSIGNMENT, logins[:-1],
                               lambda folder: copy_course(folder, [f"{ASSIGNMENT}/{NOTEBOOK}"]), folder=top / "course")
            hub = Hub(top, users, [course])
            hub.start()
            as_user(hub.instructor, "nbgrader", "release_assignment", ASSIGNMENT, cwd=hub.course)
            for login in logins[:-1]:
                answered_copy(hub, login)
            ready = time.monotonic() + 600
            while "chapter serve: grading" not in hub.log_text():
                if time.monotonic() > ready:
                    raise SystemExit("chapter serve did not start:\n" + hub.log_text()[-3000:])
                time.sleep(0.5)
            phases["hub, course and chapter serve up"] = time.monotonic() - clock
            times = hub_burst(hub, logins[:-1], window)
            clock = time.monotonic()
            fetched = fetched_by_each(hub, logins[:-1])
            phases["every student's own fetch_feedback"] = time.monotonic() - clock
            if fetched != len(logins) - 1:
                raise SystemExit(f"only {fetched} of {len(logins) - 1} students fetched their feedback")
            return times, phases
    finally:
        if hub is not None:
            hub.stop()
        for login in logins:
            run("pkill", "-KILL", "-u", login, check=False)
        shutil.rmtree(top, ignore_errors=True)


def summary(label: str, values: list[float]) -> str:
    pct = serve_bench.percentile
    return (f"{label}: p50 {pct(values, 50):.1f} s, p95 {pct(values, 95):.1f} s, "
            f"max {max(values):.1f} s, mean {statistics.mean(values):.1f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--window", type=float, default=10.0, help="seconds over which the submits start")
    parser.add_argument("--plain-students", type=int, default=5)
    parser.add_argument("--skip", nargs="*", default=[], choices=["machine", "plain"])
    parser.add_argument("--smoke", action="store_true", help="3 students within 3 s, on the hub alone")
    args = parser.parse_args()
    if args.smoke:
        args.students, args.window, args.skip = 3, 3.0, ["machine", "plain"]
    # a SIGTERM (or the hub's users, killed) ends it through its clean-up, not around it
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)

    machine = None
    if "machine" not in args.skip:
        machine, last, _ = serve_bench.burst(args.students, [NOTEBOOK], args.window, batch=False)
        print(f"machine: {args.students} submissions of {NOTEBOOK} within {args.window:g} s, written into "
              f"inbound, chapter serve: {summary('from landing', machine)[len('from landing: '):]}; "
              f"last feedback {last:.1f} s after the first landing", flush=True)

    times, phases = on_the_hub(args.students, args.window)
    total = [f - s for s, _, f in times.values()]
    submit = [c - s for s, c, _ in times.values()]
    rest = [f - c for _, c, f in times.values()]
    first = min(s for s, _, _ in times.values())
    print(f"hub: {args.students} students, nbgrader submit as each, started within {args.window:g} s")
    print("  " + summary("submit -> feedback fetchable", total))
    print("  " + summary("  the submit command (until complete in inbound)", submit))
    print("  " + summary("  the rest (chapter serve: notice, collect, grade, release)", rest))
    print(f"  last feedback {max(f for _, _, f in times.values()) - first:.1f} s after the first submit started")
    print("  set-up: " + ", ".join(f"{k} {v:.1f} s" for k, v in phases.items()))
    if machine is not None:
        pct = serve_bench.percentile
        print(f"hub / machine: p50 {pct(total, 50) / pct(machine, 50):.2f}x, p95 {pct(total, 95) / pct(machine, 95):.2f}x "
              f"(submit -> feedback on the hub against landing -> feedback on one machine); "
              f"the rest alone: p50 {pct(rest, 50) / pct(machine, 50):.2f}x, p95 {pct(rest, 95) / pct(machine, 95):.2f}x")
    if "plain" not in args.skip:
        seconds = serve_bench.plain(args.plain_students, [NOTEBOOK])
        scaled = seconds * args.students / args.plain_students
        print(f"plain: nbgrader collect + autograde + feedback after each of {args.plain_students} submissions: "
              f"last feedback {seconds:.1f} s after the first landing; scaled to {args.students} students "
              f"{scaled:.0f} s, against the hub's last {max(f for _, _, f in times.values()) - first:.1f} s")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
