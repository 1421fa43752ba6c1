"""Benchmark: the author's loop, `chapter check <id>` and a cold full gate, against plain nbgrader.

    .venv/bin/python bench/author_bench.py check w1-memory [--plain] [--baseline /path/to/other/checkout]
    .venv/bin/python bench/author_bench.py gate [--plain] [--baseline /path/to/other/checkout]

Each step runs in a fresh interpreter (its imports count, as they do for the author) on a
scratch copy of the course's files, so the course's own `.chapter/` cache is neither used nor
touched:
  check  what `chapter check <id>` does (its refresh included: the item's drift regenerated,
         its solution and blank graded again);
  gate   what `chapter gate` (or a first `chapter status`) does with no `.chapter/` cache:
         every chapter's drift and every item's verdict.
Each step runs twice: as the author types it (`chapter check <id>`, `chapter gate`), whose
wall time is held against the target, and again with its phases timed.
The child times its phases (imports, the drift check, importing the problems, the declared
mistakes, preparing the scratch course, waiting for the engine's zygote, the engine's grading)
and the parent prints them with the whole wall time. Phases that ran beside the main thread
are listed apart: the zygote's start, and what the gate's helper process did (the drift
check and the declared mistakes, while the engine grades).

With --plain, the same steps are done the plain nbgrader way in the same run and the ratios are
printed: the drift check as `nbgrader generate_assignment` and `generate_solution` processes
(for `check`, of the one notebook, `--notebook <id>`; for `gate`, of every assignment, as the
gate did before), and, for `check`, the grading as `nbgrader autograde` of the same five
submissions (the published solution in each variant, and the blank release). The gate's
grading is not repeated with plain nbgrader (it takes many minutes).

With --baseline DIR, the same step is also run with the grading library of another checkout
(for example the main branch before this change), on the same scratch copy.

It is not part of the test suite: it takes minutes.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COURSE_FILES = ("nbgrader_config.py", "chapters.toml", "contracts.toml")
COURSE_FOLDERS = ("source", "release", "solutions")


def course_copy(into: Path) -> Path:
    """The course's own files (no cache, gradebook or exchange) in `into`."""
    into.mkdir(parents=True)
    for name in COURSE_FILES:
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, into / name)
    for name in COURSE_FOLDERS:
        shutil.copytree(ROOT / name, into / name, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    return into


# --- the child: one step, its phases timed ------------------------------------------------------
PHASES = {  # module attribute -> the phase it is counted in
    ("graders.course.gate", "build_reasons"): "drift check (release/, solutions/ vs nbgrader)",
    ("graders.problems", "_registry"): "importing the problems",
    ("graders.course.gate", "mistake_reasons"): "declared mistakes (trusted)",
    ("graders.course.gate", "references_of"): "references, once, before the helpers fork (trusted)",
    ("graders.course.verify", "prepare"): "scratch course for grading",
    ("graders.engine.warm", "shared_zygote"): "waiting for the engine's zygote",
    ("graders.engine.autograde", "autograde"): "engine: grading the submissions",
}


def child(step: str, course: Path, item: str | None) -> None:
    started = float(os.environ["AUTHOR_BENCH_T0"])
    import importlib
    t = time.time()
    from graders.course import commands
    from graders.course import contract
    from graders.course import gate as gate_module  # noqa: F401  (imported for its attributes)
    modules = {module: importlib.import_module(module) for module, _ in PHASES}
    times = {"interpreter start": t - started,
             "imports (graders, nbgrader, jupytext, the engine)": time.time() - t}
    background = {}
    main_pid, helper_log = os.getpid(), course / ".bench-helper-times.jsonl"
    for (module, name), label in PHASES.items():
        mod = modules[module]
        if not hasattr(mod, name):
            continue
        original = getattr(mod, name)

        def timed(*args, __original=original, __label=label, **kwargs):
            t0 = time.monotonic()
            try:
                return __original(*args, **kwargs)
            finally:
                spent = time.monotonic() - t0
                if os.getpid() != main_pid:   # the gate's helper process, forked from this one
                    with open(helper_log, "a") as log:
                        log.write(json.dumps([__label, spent]) + "\n")
                elif threading.current_thread() is threading.main_thread():
                    times[__label] = times.get(__label, 0.0) + spent
                else:   # the zygote warming up while the main thread works
                    background[__label] = background.get(__label, 0.0) + spent
        if hasattr(original, "cache_clear"):      # keep the registry's cache working
            timed = _cached_wrapper(original, label, times)
        setattr(mod, name, timed)
    chapters = contract.load_chapters(course)
    if item:
        chapters = [c for c in chapters if any(nb.endswith("/" + item) for nb in c.notebooks)]
    t = time.monotonic()
    import io
    said = io.StringIO()
    with said:
        stdout, sys.stdout = sys.stdout, said
        try:
            code = 0
            for chapter in chapters:
                code |= commands.run_gate(course, chapter, only=[item] if item else None,
                                          refresh=step == "check", verbose=True)
        finally:
            sys.stdout = stdout
        # what the gate said, but for the per-item lines of --verbose: why it refused, if it did
        lines = [line for line in said.getvalue().splitlines() if ": solution " not in line]
    times["gate (all of it)"] = time.monotonic() - t
    if helper_log.exists():   # what the helper did meanwhile, on the other core
        for line in helper_log.read_text().splitlines():
            label, spent = json.loads(line)
            background[f"helper: {label}"] = background.get(f"helper: {label}", 0.0) + spent
        helper_log.unlink()
    print(json.dumps({"code": code, "times": times, "background": background, "said": lines[-40:]}))


def _cached_wrapper(original, label, times):
    def timed(*args, **kwargs):
        t0 = time.monotonic()
        try:
            return original(*args, **kwargs)
        finally:
            if threading.current_thread() is threading.main_thread():
                times[label] = times.get(label, 0.0) + time.monotonic() - t0
    timed.cache_clear = original.cache_clear
    return timed


def command_wall(step: str, course: Path, item: str | None, library: Path) -> tuple[float, int]:
    """The step as the author types it (`chapter check <id>`, or `chapter gate` of every chapter),
    in a fresh interpreter on the course copy with no `.chapter/` cache: (wall seconds, exit code)."""
    shutil.rmtree(course / ".chapter", ignore_errors=True)
    argv = ["check", item] if step == "check" else ["gate"]
    env = {**os.environ, "PYTHONPATH": str(library)}
    t = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "graders.cli", *argv, "--course", str(course)], env=env,
                          capture_output=True, text=True, cwd=course)
    wall = time.monotonic() - t
    if done.returncode != 0:
        print(done.stdout[-3000:] + done.stderr[-3000:])
    shutil.rmtree(course / ".chapter", ignore_errors=True)
    return wall, done.returncode


def run_step(step: str, course: Path, item: str | None, library: Path) -> dict:
    """Run the step in a fresh interpreter with `library` on the path; its wall time and phases."""
    env = {**os.environ, "PYTHONPATH": str(library), "AUTHOR_BENCH_T0": repr(time.time())}
    t = time.monotonic()
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "_child", step, str(course),
                           item or ""], env=env, capture_output=True, text=True, cwd=course)
    wall = time.monotonic() - t
    if done.returncode != 0:
        raise SystemExit(f"the {step} step failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["wall"] = wall
    return result


# --- plain nbgrader, the same steps -----------------------------------------------------------------
def plain_drift(course: Path, item: str | None) -> float:
    """`nbgrader generate_assignment` and `generate_solution` processes, in a scratch course made
    from the .pct.py sources, for the one notebook or (gate) every assignment."""
    sys.path.insert(0, str(ROOT))
    from graders.course.build import course_with_pct, sync_sources
    from graders.engine.scratch import assignments, make_course, nbgrader
    t = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="author-bench-plain-") as tmp:
        if item:
            assignment = next(p.parent.name for p in (course / "source").glob(f"*/{item}.pct.py"))
            scratch = make_course(course, Path(tmp), only=[assignment])
            for pct in (course / "source" / assignment).glob("*.pct.py"):
                shutil.copy(pct, scratch / "source" / assignment / pct.name)
            sync_sources(scratch, write=True)
            for command in ("generate_assignment", "generate_solution"):
                nbgrader(command, assignment, "--force", f"--notebook={item}", cwd=scratch)
        else:
            scratch = make_course(course, Path(tmp))
            sync_sources(course_with_pct(course, scratch), write=True)
            for assignment in assignments(scratch):
                for command in ("generate_assignment", "generate_solution"):
                    nbgrader(command, assignment, "--force", cwd=scratch)
    return time.monotonic() - t


def plain_grading(course: Path, item: str) -> float:
    """`nbgrader autograde` of the item's published solution in each variant and its blank release,
    in a scratch course whose assignment `nbgrader generate_assignment` generated."""
    sys.path.insert(0, str(ROOT))
    from graders import problems, variants
    from graders.engine.scratch import make_course, nbgrader
    assignment = next(p.parent.name for p in (course / "source").glob(f"*/{item}.ipynb"))
    t = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="author-bench-plain-") as tmp:
        scratch = make_course(course, Path(tmp), only=[assignment])
        nbgrader("generate_assignment", assignment, "--force", f"--notebook={item}", cwd=scratch)
        students = {variants.student_for(label, assignment, prefix="gate"): course / "solutions"
                    for label in problems.get(item).variants}
        students["gate-blank"] = course / "release"
        for student, folder in students.items():
            target = scratch / "submitted" / student / assignment
            target.mkdir(parents=True)
            shutil.copy(folder / assignment / f"{item}.ipynb", target / f"{item}.ipynb")
        nbgrader("autograde", assignment, "--force", cwd=scratch)
    return time.monotonic() - t


# --- the report -------------------------------------------------------------------------------------
def show(title: str, result: dict) -> None:
    print(f"{title}: {result['wall']:.1f} s wall (exit {result['code']})")
    if result["code"] != 0:
        for line in result.get("said", []):
            print(f"  | {line}")
    for label, seconds in result["times"].items():
        print(f"  {label:<52} {seconds:7.1f} s")
    for label, seconds in result["background"].items():
        print(f"  {'(background) ' + label:<52} {seconds:7.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("step", choices=("check", "gate"))
    parser.add_argument("item", nargs="?", default="w1-memory")
    parser.add_argument("--plain", action="store_true", help="also the same step with plain nbgrader")
    parser.add_argument("--baseline", type=Path, help="another checkout whose graders/ to run as well")
    args = parser.parse_args()
    item = args.item if args.step == "check" else None
    target = 10.0 if args.step == "check" else 120.0
    with tempfile.TemporaryDirectory(prefix="author-bench-") as tmp:
        course = course_copy(Path(tmp) / "course")
        what = f"chapter check {item}" if item else "cold full gate (no .chapter cache)"
        print(f"{what}, on a copy of {ROOT}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
        wall, code = command_wall(args.step, course, item, ROOT)
        typed = f"chapter check {item}" if item else "chapter gate"
        print(f"`{typed}` as typed: {wall:.1f} s wall (exit {code})")
        print(f"  target: under {target:g} s: {'met' if wall < target and code == 0 else 'NOT met'}")
        ours = run_step(args.step, course, item, ROOT)
        show("the same step, its phases timed (run again, cold)", ours)
        if args.baseline:
            shutil.rmtree(course / ".chapter", ignore_errors=True)
            base = run_step(args.step, course, item, args.baseline.resolve())
            show(f"baseline {args.baseline}", base)
            print(f"  baseline / this checkout: {base['wall'] / ours['wall']:.1f}x")
        if args.plain:
            drift = ours["times"].get("drift check (release/, solutions/ vs nbgrader)") or \
                ours["background"].get("helper: drift check (release/, solutions/ vs nbgrader)", 0.0)
            plain = plain_drift(course, item)
            print(f"plain nbgrader generate_assignment + generate_solution processes: {plain:.1f} s; "
                  f"the in-process drift check {drift:.1f} s; ratio {plain / max(drift, 1e-9):.1f}x")
            if item:
                graded = sum(ours["times"].get(PHASES[key], 0.0) for key in
                             (("graders.course.verify", "prepare"), ("graders.engine.warm", "shared_zygote"),
                              ("graders.engine.autograde", "autograde")))
                plain = plain_grading(course, item)
                print(f"plain nbgrader generate_assignment + autograde of the same 5 submissions: {plain:.1f} s; "
                      f"the gate's grading {graded:.1f} s; ratio {plain / max(graded, 1e-9):.1f}x")
        print(f"load at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_child":
        child(sys.argv[2], Path(sys.argv[3]), sys.argv[4] or None)
    else:
        main()
