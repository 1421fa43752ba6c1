"""The demo: a small class goes through the real nbgrader exchange, end to end.

In a fresh course folder it releases the `worked` assignment, lets three
students fetch it (each sees their own variant), fills in `w1-memory` as a
correct, a wrong and a blank student would, submits through the exchange,
collects, autogrades (with the sandboxed engine, which keeps each check's
evidence), generates feedback, and prints the grade table, the path of the
class report and the chapter status.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import nbformat

from graders.engine.scratch import make_course, nbgrader
from graders.course.contract import course_root, load_chapters
from graders.course.status import chapter_status, render
from graders.variants import variant_for

ASSIGNMENT, NOTEBOOK = "worked", "w1-memory"
# Right expression, wrong numbers: the student forgot the fp32 master copy (K - 4).
WRONG_NUMBERS = ("bytes_per_param = 2 + 2 + (params['K'] - 4)\n"
                 "total_bytes = bytes_per_param * params['N']\n"
                 "per_device_bytes = float(per_device_expr.subs({N: params['N'], P: params['P'], "
                 "K: params['K'] - 4}))\n")
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


def run(where: Path | None = None, root: Path | None = None,
        site: bool = False) -> dict[str, tuple[float, float]]:
    root = root or course_root()
    course = where or root / "demo-course"
    shutil.rmtree(course, ignore_errors=True)
    make_course(root, course, only=[ASSIGNMENT])
    exchange = ["--Exchange.root=" + str(course / "exchange"), "--CourseDirectory.course_id=training-at-scale"]

    print(f"== instructor: generate and release '{ASSIGNMENT}' in {course}")
    nbgrader("generate_assignment", ASSIGNMENT, "--force", cwd=course)
    nbgrader("release_assignment", ASSIGNMENT, "--force", cwd=course)

    for student, how in CLASS.items():
        home = course / "students" / student
        home.mkdir(parents=True)
        os.environ["JUPYTERHUB_USER"] = student
        nbgrader("fetch_assignment", ASSIGNMENT, *exchange, cwd=home)
        fill(home / ASSIGNMENT / f"{NOTEBOOK}.ipynb", how, root)
        nbgrader("submit", ASSIGNMENT, f"--student={student}", *exchange, cwd=home)
        print(f"== student {student}: variant {variant_for(student, ASSIGNMENT)}, submits a {how} {NOTEBOOK}")
    os.environ.pop("JUPYTERHUB_USER", None)

    print("== instructor: collect, autograde (sandboxed, keeping each check's evidence), generate feedback")
    nbgrader("collect", ASSIGNMENT, cwd=course)
    from graders.engine.autograde import autograde
    autograde(course, ASSIGNMENT, force=True, progress=False, out=None)
    nbgrader("generate_feedback", ASSIGNMENT, "--force", cwd=course)

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
    print(f"\nfeedback for each student: {course / 'feedback'}/<student>/{ASSIGNMENT}/{NOTEBOOK}.html\n")
    from graders.course.report import build_report
    print(f"what the class got wrong: {build_report(course, ASSIGNMENT).html} "
          f"(`chapter report {ASSIGNMENT} --course {course}`)\n")
    for chapter in load_chapters(root):
        print(render(chapter_status(root, chapter), root))
    if site:
        from graders.course.site import render_site
        print(f"\n== solutions site for {NOTEBOOK}, each variant executed")
        for line in render_site(root, course / "site", items=[NOTEBOOK]):
            print(f"site: {line}")
        print(f"solutions site: {course / 'site' / 'index.html'} "
              f"(the whole chapter: `chapter site`, written to site/)")
    else:
        print(f"\nsolutions site: `chapter site --only {NOTEBOOK}` writes site/index.html "
              f"(`chapter site` for the whole chapter)")
    return table


def main() -> int:
    run(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else None, site=True)
    return 0
