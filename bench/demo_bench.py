"""`make demo` after set-up, timed step by step, against the same class done the plain nbgrader way.

    python bench/demo_bench.py [--no-build]

1. `chapter build --check`, as `make demo` runs it (skipped with --no-build).
2. `chapter demo` in its own interpreter, as `make demo` runs it, with the seconds of each step
   (graders.course.demo.run's clock): nbgrader's exchange steps in-process, `chapter autograde`, feedback.
3. The same class in a fresh course the plain nbgrader way: one `nbgrader` command per step
   (generate_assignment, release_assignment, fetch_assignment and submit for each student,
   collect, autograde, generate_feedback), each its own interpreter, timed.

Prints each step's seconds, the ratio plain / demo per step and in total, and whether the
45 s target for `make demo` after set-up is met.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BIN = Path(sys.executable).parent
TARGET = 45.0

DEMO_CHILD = """
import json, sys
from pathlib import Path
from graders.course import demo
clock = {}
demo.run(Path(sys.argv[1]), root=Path(sys.argv[2]), clock=clock)   # as `chapter demo` runs it
Path(sys.argv[3]).write_text(json.dumps(clock))
"""


def timed(argv, cwd, env=None) -> float:
    started = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, argv))} failed:\n{(done.stdout + done.stderr)[-3000:]}")
    return time.monotonic() - started


def plain_nbgrader(course: Path) -> dict[str, float]:
    """The demo's class with one `nbgrader` interpreter per step and nbgrader's own autograde."""
    from graders.course import demo
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    nb = [str(BIN / "nbgrader")]
    exchange = [f"--Exchange.root={course / 'exchange'}", f"--CourseDirectory.course_id={demo.COURSE_ID}"]
    (course / "source" / demo.ASSIGNMENT).mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", course)
    shutil.copy(ROOT / "source" / demo.ASSIGNMENT / f"{demo.NOTEBOOK}.ipynb", course / "source" / demo.ASSIGNMENT)
    steps: dict[str, float] = {}

    def step(name, *args, cwd=course, extra=()):
        steps[name] = steps.get(name, 0.0) + timed([*nb, name, demo.ASSIGNMENT, *args, *extra], cwd, env)

    step("generate_assignment", "--force")
    step("release_assignment", "--force")
    for student, how in demo.CLASS.items():
        home = course / "students" / student
        home.mkdir(parents=True)
        step("fetch_assignment", cwd=home, extra=exchange)
        demo.fill(home / demo.ASSIGNMENT / f"{demo.NOTEBOOK}.ipynb", how, ROOT)
        step("submit", f"--student={student}", cwd=home, extra=exchange)
    step("collect")
    step("autograde", "--force")
    step("generate_feedback", "--force")
    return steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-build", action="store_true", help="skip `chapter build --check`")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    with tempfile.TemporaryDirectory(prefix="demo-bench-") as tmp:
        tmp = Path(tmp)
        build = None if args.no_build else timed([str(BIN / "chapter"), "build", "--check"], ROOT, env)
        clock_file = tmp / "clock.json"
        demo_total = timed([sys.executable, "-c", DEMO_CHILD, str(tmp / "demo"), str(ROOT), str(clock_file)],
                           ROOT, env)
        clock = json.loads(clock_file.read_text())
        plain = plain_nbgrader(tmp / "plain")

    print(f"{'step':<22} {'chapter demo':>12} {'plain nbgrader':>15} {'plain/demo':>11}")
    for name in ["course", "generate_assignment", "release_assignment", "fetch_assignment", "submit",
                 "collect", "autograde", "generate_feedback", "report", "status"]:
        ours, theirs = clock.get(name), plain.get(name)
        label = "autograde (engine)" if name == "autograde" else name
        ratio = f"{theirs / ours:10.1f}x" if ours and theirs else ""
        print(f"{label:<22} {ours if ours is not None else float('nan'):>11.1f}s "
              f"{'' if theirs is None else f'{theirs:14.1f}s'} {ratio:>11}")
    startup = demo_total - sum(clock.values())
    print(f"{'interpreter + imports':<22} {startup:>11.1f}s")
    plain_total = sum(plain.values())
    shared = [k for k in plain if k in clock]
    ours_shared = sum(clock[k] for k in shared)
    print(f"\nsteps both do ({', '.join(shared)}): demo {ours_shared:.1f} s, plain nbgrader {plain_total:.1f} s, "
          f"ratio {plain_total / ours_shared:.1f}x")
    print(f"exchange alone (generate, release, fetch, submit, collect, feedback): demo "
          f"{ours_shared - clock['autograde']:.1f} s, plain nbgrader {plain_total - plain['autograde']:.1f} s")
    print(f"chapter demo: {demo_total:.1f} s in its own interpreter (with report and status)")
    if build is not None:
        total = build + demo_total
        print(f"chapter build --check: {build:.1f} s")
        print(f"make demo after set-up: {total:.1f} s (target {TARGET:.0f} s: "
              f"{'met' if total < TARGET else 'NOT met'})")
    else:
        print(f"make demo after set-up: not measured (--no-build); the demo part alone is {demo_total:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
