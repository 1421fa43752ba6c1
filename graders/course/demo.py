"""The demo: a small class goes through the real nbgrader exchange, end to end.

In a fresh course folder it releases the `worked` assignment (holding `w1-memory`),
lets three students fetch it (each sees their own variant), fills it in as a
correct, a wrong and a blank student would, submits through the exchange,
collects, grades with `chapter autograde` (the sandboxed engine, with its progress
bar and summary), generates feedback, and prints the grade table, each student's
feedback page, the class report and the chapter status where the gate's verdicts
are current. The nbgrader steps run in this process through nbgrader's own API and
exchange classes (as formgrader and the lab extension drive them), on the course's
nbgrader_config.py for the instructor and on the exchange's settings alone for a
student.
"""
from __future__ import annotations

import logging
import shutil
import sys
import time
from pathlib import Path

import nbformat

from graders.engine.scratch import alembic_head_in_process
from graders.course.contract import course_root, load_chapters
from graders.course.status import chapter_status, render
from graders.variants import variant_for

ASSIGNMENT, NOTEBOOK = "worked", "w1-memory"
# Right expression, wrong numbers: the student forgot the fp32 master copy (K - 4).
WRONG_NUMBERS = ("bytes_per_param = 2 + 2 + (params['K'] - 4)\n"
                 "total_bytes = bytes_per_param * params['N']\n"
                 "per_device_bytes = float(per_device_expr.subs({N: params['N'], P: params['P'], "
                 "K: params['K'] - 4}))\n")
COURSE_ID = "training-at-scale"   # as nbgrader_config.py names it
CLASS = {"ada": "correct", "grace": "wrong", "alan": "blank"}


def _answer_cells(nb):
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("solution")}


def fill(notebook: Path, how: str, root: Path) -> None:
    """Write a student's answers into their fetched copy of the notebook."""
    if how == "blank":
        return
    nb = nbformat.read(notebook, as_version=4)
    solution = _answer_cells(nbformat.read(root / "solutions" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", 4))
    for grade_id, cell in _answer_cells(nb).items():
        wrong = how == "wrong" and grade_id == "answer_numbers"
        cell.source = WRONG_NUMBERS if wrong else solution[grade_id].source
    nbformat.write(nb, notebook)


def _quiet_log() -> logging.Logger:
    """nbgrader's log for the demo's steps: kept (each step's is shown if it fails), never printed."""
    log = logging.getLogger("chapter.demo.nbgrader")
    log.propagate = False
    log.setLevel(logging.INFO)
    if not log.handlers:
        log.addHandler(logging.NullHandler())
    return log


def _step(what: str, outcome: dict) -> None:
    """An nbgrader step's outcome (nbgrader.utils.capture_log's dict): raise with its log if it failed."""
    if not outcome.get("success"):
        tail = "\n".join((outcome.get("log", "") + outcome.get("error", "")).splitlines()[-15:])
        raise RuntimeError(f"nbgrader {what} failed:\n{tail}")


def instructor(course: Path):
    """nbgrader's own API (as formgrader drives it) on the course's nbgrader_config.py."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    # the demo's class is one account on one machine: its exchange stays in the demo's folder
    config.Exchange.root = str(course / "exchange")
    return NbGraderAPI(config=config, log=_quiet_log())


def as_student(home: Path, student: str, step: str) -> None:
    """One student's `nbgrader fetch_assignment` or `nbgrader submit --student=<student>`, run in
    their own folder `home` with only the exchange's settings (a student has no course config)."""
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange import ExchangeFactory
    from nbgrader.utils import capture_log
    from traitlets.config import Config
    config = Config()
    config.Exchange.root = str(home.parents[1] / "exchange")
    config.Exchange.assignment_dir = str(home)
    config.CourseDirectory.course_id = COURSE_ID
    config.CourseDirectory.root = str(home)
    log = _quiet_log()
    coursedir = CourseDirectory(config=config, log=log)
    coursedir.assignment_id, coursedir.student_id = ASSIGNMENT, student
    factory = ExchangeFactory(config=config, log=log)
    kind = factory.FetchAssignment if step == "fetch_assignment" else factory.Submit
    _step(f"{step} {ASSIGNMENT} ({student})",
          capture_log(kind(coursedir=coursedir, authenticator=Authenticator(config=config, log=log),
                           config=config, log=log)))


def cached_status(root: Path) -> list[str]:
    """`chapter status` for each chapter whose every item has a current verdict in .chapter/;
    for the others, one line saying how to get it (on a fresh copy the gate has not yet run,
    and the demo does not run it)."""
    from graders.course.gate import current_verdicts
    shown = []
    for chapter in load_chapters(root):
        reports = current_verdicts(root, chapter.notebooks)
        if len(reports) == len(chapter.notebooks):
            shown.append(render(chapter_status(root, chapter, reports), root))
        else:
            shown.append(f"{chapter.id} {chapter.title}: {len(chapter.notebooks) - len(reports)} of "
                         f"{len(chapter.notebooks)} items have no current verdict (the gate has not checked "
                         "them since they changed); `chapter status` checks them, minutes when cold, and "
                         "shows the chapter against its contract")
    return shown


def run(where: Path | None = None, root: Path | None = None, site: bool = False,
        clock: dict | None = None) -> dict[str, tuple[float, float]]:
    """The demo, in `where` (default: demo-course/ in the course). `clock`, when given, receives
    the seconds each step took (bench/demo_bench.py prints them)."""
    root = root or course_root()
    course = (where or root / "demo-course").resolve()
    clock = {} if clock is None else clock
    tick = [time.monotonic()]

    def took(step):
        now = time.monotonic()
        clock[step] = clock.get(step, 0.0) + now - tick[0]
        tick[0] = now

    shutil.rmtree(course, ignore_errors=True)
    # the course's config and the one notebook the class works on, released as the `worked` assignment
    (course / "source" / ASSIGNMENT).mkdir(parents=True)
    # closed to the machine's other accounts, as a course folder should be: its source/ holds the
    # solutions (its students are simulated here, through the exchange inside it)
    course.chmod(0o700)
    shutil.copy(root / "nbgrader_config.py", course / "nbgrader_config.py")
    shutil.copy(root / "source" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", course / "source" / ASSIGNMENT)
    api = instructor(course)
    took("course")

    print(f"== instructor: nbgrader generate_assignment and release_assignment '{ASSIGNMENT}' in {course}")
    with alembic_head_in_process():     # the step that creates the course's gradebook
        _step("generate_assignment", api.generate_assignment(ASSIGNMENT, force=True))
    took("generate_assignment")
    _step("release_assignment", api.release_assignment(ASSIGNMENT))
    took("release_assignment")

    for student, how in CLASS.items():
        home = course / "students" / student
        home.mkdir(parents=True)
        as_student(home, student, "fetch_assignment")
        took("fetch_assignment")
        fill(home / ASSIGNMENT / f"{NOTEBOOK}.ipynb", how, root)
        as_student(home, student, "submit")
        took("submit")
        print(f"== student {student}: nbgrader fetch_assignment, variant {variant_for(student, ASSIGNMENT)}, "
              f"nbgrader submit of a {how} {NOTEBOOK}")

    print("== instructor: nbgrader collect")
    _step("collect", api.collect(ASSIGNMENT))
    took("collect")
    print(f"== instructor: chapter autograde {ASSIGNMENT} (each notebook in its sandbox, keeping each "
          "check's evidence)")
    sys.stdout.flush()
    from graders.engine.autograde import autograde
    autograde(course, ASSIGNMENT)    # as `chapter autograde` runs it: progress bar on stderr, summary here
    took("autograde")
    print("== instructor: nbgrader generate_feedback")
    _step("generate_feedback", api.generate_feedback(ASSIGNMENT, force=True))
    took("generate_feedback")

    from nbgrader.api import Gradebook
    table = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student in CLASS:
            nb = gb.find_submission_notebook(NOTEBOOK, ASSIGNMENT, student)
            table[student] = (nb.score, nb.max_score)
    print()
    print(f"{'student':<8} {'variant':<8} {'submitted':<10} {NOTEBOOK:>10}")
    for student, (score, max_score) in table.items():
        print(f"{student:<8} {variant_for(student, ASSIGNMENT):<8} {CLASS[student]:<10} "
              f"{score:>6g}/{max_score:g}")
    print("\nfeedback, one page per student (open it in a browser):")
    for student in CLASS:
        print(f"  {course / 'feedback' / student / ASSIGNMENT / (NOTEBOOK + '.html')}")
    from graders.course.report import build_report
    print(f"\nwhat the class got wrong: {build_report(course, ASSIGNMENT).html} "
          f"(`chapter report {ASSIGNMENT} --course {course}`)")
    took("report")
    print()
    print("\n\n".join(cached_status(root)))
    took("status")
    if site:
        from graders.course.site import render_site
        print(f"\n== solutions site for {NOTEBOOK}, each variant executed")
        for line in render_site(root, course / "site", items=[NOTEBOOK]):
            print(f"site: {line}")
        print(f"solutions site: {course / 'site' / 'index.html'} "
              f"(the whole chapter: `chapter site`, written to site/)")
        took("site")
    else:
        print(f"\nsolutions site (not made by the demo: it executes every variant): `chapter site --only {NOTEBOOK}` "
              f"writes {root / 'site' / 'index.html'}; `chapter site` does the whole chapter")
    return table


def main() -> int:
    run(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else None, site=True)
    return 0
