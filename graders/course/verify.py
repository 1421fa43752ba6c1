"""Run notebooks through the grader students face, and say what they scored.

Both graders start the same way: a scratch course, the assignment generated
into its own gradebook, each notebook placed in
`submitted/<student>/<assignment>/`, and the scores read back from the
gradebook afterwards.
- `autograde` is the grader students face: `chapter autograde`
  (`graders.engine.autograde`), which runs the cells in a sandbox and grades outside it.
  The gate and `chapter status` call it, so what counts is what a student's
  submission would get.
- `autograde_nbgrader` is plain `nbgrader autograde` with the course's
  configuration (hidden tests in the student's kernel); kept for the tests that
  both agree on honest submissions (the benchmarks run the `nbgrader` command itself).
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from graders.engine.scratch import make_course, nbgrader, nbgrader_inprocess


@dataclass
class NotebookScore:
    score: float
    max_score: float
    feedback: list[str] = field(default_factory=list)   # what the graded test cells printed
    raised: list[str] = field(default_factory=list)     # "cell N: Error" for every code cell that raised
    waiting: list[str] = field(default_factory=list)    # test cells left for a person (not decided)
    cpu_seconds: float | None = None   # the notebook's CPU time in the sandbox (chapter autograde only)


def prepare(root: Path, scratch: Path, assignment: str, submissions: dict[str, dict[str, Path]]) -> Path:
    """A scratch course with the assignment generated and the submissions in place."""
    course = make_course(root, scratch, only=[assignment])
    # only the notebooks submitted: the engine grades (and computes references for) every
    # notebook of the gradebook's assignment, and a notebook's score does not depend on the others
    wanted = sorted({notebook_id for notebooks in submissions.values() for notebook_id in notebooks})
    every = sorted(p.name.removesuffix(".ipynb") for p in (course / "source" / assignment).glob("*.ipynb"))
    for notebook in (["*"] if wanted == every else wanted):
        nbgrader_inprocess("generate_assignment", assignment, course, notebook=notebook)
    for student, notebooks in submissions.items():
        folder = course / "submitted" / student / assignment
        folder.mkdir(parents=True, exist_ok=True)
        for notebook_id, path in notebooks.items():
            shutil.copy(path, folder / f"{notebook_id}.ipynb")
    return course


def autograde_nbgrader(root: Path, scratch: Path, assignment: str,
                       submissions: dict[str, dict[str, Path]]) -> dict[str, dict[str, NotebookScore]]:
    """Grade `{student: {notebook_id: path}}` for one assignment with plain nbgrader."""
    course = prepare(root, scratch, assignment, submissions)
    nbgrader("autograde", assignment, "--force", cwd=course)
    return read_scores(course, assignment, submissions)


def warm_engine() -> None:
    """Start the engine's zygote now, without waiting for it, so that it imports its libraries
    while this process does other work (the gate checks drift and imports the problems
    meanwhile); `autograde_sandboxed` waits for it, and reports it if it failed to start."""
    from graders.engine.warm import start_zygote
    start_zygote()


def autograde_sandboxed(root: Path, scratch: Path, assignment: str,
                        submissions: dict[str, dict[str, Path]]) -> dict[str, dict[str, NotebookScore]]:
    """Grade `{student: {notebook_id: path}}` for one assignment with `chapter autograde`."""
    from graders.engine.autograde import autograde as engine
    from graders.engine.warm import shared_zygote
    course = prepare(root, scratch, assignment, submissions)
    # only the grades are read back: figures are built but not rasterized (see graders.engine.autograde)
    report = engine(course, assignment, progress=False, out=None, zygote=shared_zygote(), grades_only=True)
    scores = read_scores(course, assignment, submissions)
    for student, result in report.results.items():
        for nb in result.notebooks:
            if nb.name in scores.get(student, {}):
                scores[student][nb.name].cpu_seconds = nb.run.get("cpu_seconds")
    return scores


def read_scores(course: Path, assignment: str, submissions) -> dict[str, dict[str, NotebookScore]]:
    from nbgrader import utils
    from nbgrader.api import Gradebook
    scores: dict[str, dict[str, NotebookScore]] = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student, notebooks in submissions.items():
            for notebook_id in notebooks:
                nb = gb.find_submission_notebook(notebook_id, assignment, student)
                graded = course / "autograded" / student / assignment / f"{notebook_id}.ipynb"
                # Only what the autograder decides: task cells and prose answers wait
                # for a person in formgrader and are no part of the gate's verdict.
                auto = [g for g in nb.grades if not g.needs_manual_grade]
                cells = nbformat.read(graded, as_version=4).cells if graded.exists() else []
                # a test cell waiting too is one the grader could not decide (or blamed on the sandbox)
                tests = {c.metadata["nbgrader"]["grade_id"] for c in cells
                         if c.cell_type == "code" and utils.is_grade(c) and not utils.is_solution(c)}
                scores.setdefault(student, {})[notebook_id] = NotebookScore(
                    sum(g.auto_score or 0.0 for g in auto), sum(g.max_score for g in auto),
                    feedback_lines(cells), raised_cells(cells),
                    sorted(g.name for g in nb.grades if g.needs_manual_grade and g.name in tests))
    return scores


def feedback_lines(cells) -> list[str]:
    """What every graded test cell of an autograded notebook's `cells` printed or displayed as text."""
    lines = []
    for cell in cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            for output in cell.get("outputs", []):
                if output.get("output_type") == "stream":
                    lines += output.get("text", "").splitlines()
                elif output.get("output_type") == "display_data":
                    lines += str(output.get("data", {}).get("text/plain", "")).splitlines()
                elif output.get("output_type") == "error":
                    lines.append(f"{output.get('ename')}: {output.get('evalue')}")
    return lines


def raised_cells(cells) -> list[str]:
    """"cell N: ename" for every code cell of an autograded notebook's `cells` that ended in an
    error, as Validate would report it (a graded test cell whose visible checks raised among them)."""
    found = []
    for number, cell in enumerate(cells, 1):
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if output.get("output_type") == "error":
                found.append(f"cell {number}: {output.get('ename')}")
    return found


def autograde(root: Path, scratch: Path, assignment: str, submissions):
    """The grader students face: `chapter autograde` (sandboxed; graded outside the student's kernel)."""
    return autograde_sandboxed(root, scratch, assignment, submissions)
