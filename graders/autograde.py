"""`chapter autograde ASSIGNMENT`: grade every submission outside the students' interpreters.

Plain `nbgrader autograde` runs a student's cells and the hidden tests in one
kernel, so the student's code can rewrite the tests, read the gradebook or
leave a process behind. Here the two are split:

- The student's cells run in a sandbox (`graders.sandbox`): a process forked
  from a warm zygote that cannot import `graders`, sees no course files, has no
  network and runs under rlimits. At each graded test cell it runs the cell's
  VISIBLE part (hidden tests removed) and sends back that cell's answer keys
  as plain data (JSON; sympy as srepr text).
- This process, which the student's code never touches, picks the variant
  from the submission's directory name (`variants.variant_for`), grades the
  answers with `Problem.grade`, and records the points in nbgrader's own
  gradebook, so that `nbgrader export`, `generate_feedback` and formgrader
  work unchanged. It also writes `autograded/<student>/<assignment>/<nb>.ipynb`
  with nbgrader-style outputs: each graded test cell prints its feedback lines
  and shows its points as its execute_result.

Per-cell semantics follow nbgrader's: cells run in order; a test cell whose
visible part raises scores 0; locked and test cells are overwritten with the
instructor's versions (nbgrader's own ClearOutput, DeduplicateIds and
OverwriteCells preprocessors, fed from a snapshot of the gradebook); missing
cells are re-added; manually graded cells are left to formgrader. Unlike
plain nbgrader, output on stderr (a warning) never zeroes a cell.

With `--scheduler`, the grading of each submission runs as a task on a Dask
cluster instead of a local process pool (`graders.cluster`); everything else
here, journal and gradebook included, is the same, and runs in this process.
The gradebook may be PostgreSQL: `record` then holds a per-student advisory
lock, so several graders can write one gradebook at once.

Every submission is journaled under `.chapter/autograde/<assignment>/`, keyed
by a hash of the submission, the instructor's notebooks and the grader, so a
re-run changes nothing and a run killed halfway resumes where it stopped.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace

import nbformat

from .bounded import Timeout, run_bounded
from .sandbox import Limits, SandboxUnavailable, Zygote, run_job

JOURNAL = Path(".chapter") / "autograde"
MAX_NOTEBOOK_BYTES = 50 << 20
GRADER_FILES = Path(__file__).resolve().parent
_quiet = logging.getLogger("chapter.autograde.nbgrader")
_quiet.addHandler(logging.NullHandler())
_quiet.propagate = False


# ============================================================================ the course
@dataclass
class InstructorNotebook:
    """What the gradebook says about one notebook (a snapshot; no database needed after)."""
    name: str
    kernelspec: str | None
    source_cells: list            # SimpleNamespace(name, cell_type, locked, checksum, source), in order
    grade_cells: list             # SimpleNamespace(name, max_score, cell_type)
    solution_cells: list          # SimpleNamespace(name)
    task_cells: list              # SimpleNamespace(name, max_score)

    def source(self, name):
        return next((c for c in self.source_cells if c.name == name), None)

    @property
    def autograded_tests(self) -> dict[str, float]:
        """grade_id -> points of the graded code cells that are not manual (the hidden-test cells)."""
        manual = {c.name for c in self.solution_cells}
        return {c.name: float(c.max_score) for c in self.grade_cells
                if c.name not in manual and c.cell_type == "code"}


@dataclass
class Course:
    root: str
    assignment: str
    db_url: str
    course_id: str
    submitted: str                # format with student
    autograded: str
    source_dir: str
    ignore: list
    notebooks: dict               # name -> InstructorNotebook
    permissions: int
    begin_hidden: str
    end_hidden: str
    max_lines: int
    max_traceback: int
    exclude_overwriting: list
    excluded_students: list
    instant: bool = False         # feedback for `chapter serve`: no direction, length or value

    def submission_dir(self, student: str) -> Path:
        return Path(self.submitted.format(student=student))

    def autograded_dir(self, student: str) -> Path:
        return Path(self.autograded.format(student=student))


def load_config(root: Path):
    """The course's nbgrader configuration (nbgrader_config.py in `root`), as nbgrader reads it."""
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader
    path = root / "nbgrader_config.py"
    if not path.exists():
        return Config()
    return PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()


def load_course(root: Path, assignment: str, config=None) -> Course:
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.coursedir import CourseDirectory
    root = Path(root).resolve()
    config = config if config is not None else load_config(root)
    coursedir = CourseDirectory(config=config)
    if not config.CourseDirectory.get("root"):
        coursedir.root = str(root)
    fmt = lambda step: coursedir.format_path(step, "{student}", assignment)  # noqa: E731
    notebooks = {}
    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        try:
            found = gb.find_assignment(assignment)
        except MissingEntry:
            found = _registered_from_release(gb, root, coursedir, assignment)
        for nb in sorted(found.notebooks, key=lambda n: n.name):
            cells = [SimpleNamespace(name=c.name, cell_type=c.cell_type, locked=bool(c.locked),
                                     checksum=c.checksum, source=c.source) for c in nb.source_cells]
            cells = _in_release_order(coursedir, assignment, nb.name, cells)
            notebooks[nb.name] = InstructorNotebook(
                name=nb.name, kernelspec=nb.kernelspec, source_cells=cells,
                grade_cells=[SimpleNamespace(name=c.name, max_score=float(c.max_score), cell_type=c.cell_type)
                             for c in nb.grade_cells],
                solution_cells=[SimpleNamespace(name=c.name) for c in nb.solution_cells],
                task_cells=[SimpleNamespace(name=c.name, max_score=float(c.max_score)) for c in nb.task_cells])
    limit_output = config.LimitOutput
    hidden = config.ClearHiddenTests
    return Course(
        root=str(root), assignment=assignment, db_url=coursedir.db_url, course_id=coursedir.course_id,
        submitted=fmt(coursedir.submitted_directory), autograded=fmt(coursedir.autograded_directory),
        source_dir=coursedir.format_path(coursedir.source_directory, ".", assignment),
        ignore=list(coursedir.ignore), notebooks=notebooks,
        permissions=int(str(config.BaseConverter.get("permissions", 664 if coursedir.groupshared else 444)), 8),
        begin_hidden=hidden.get("begin_test_delimeter", "BEGIN HIDDEN TESTS"),
        end_hidden=hidden.get("end_test_delimeter", "END HIDDEN TESTS"),
        max_lines=int(limit_output.get("max_lines", 1000)),
        max_traceback=int(limit_output.get("max_traceback", 100)),
        exclude_overwriting=list(config.Autograde.get("exclude_overwriting", {}).get(assignment, [])),
        excluded_students=[s for s in (coursedir.student_id_exclude or "").split(",") if s],
    )


def _registered_from_release(gb, root: Path, coursedir, assignment: str):
    """The assignment, registered from the committed release/ when the gradebook lacks it."""
    from .build import register_release
    if not (Path(coursedir.format_path(coursedir.release_directory, ".", assignment))).is_dir():
        raise SystemExit(f"no assignment {assignment!r} in the gradebook and no release of it; "
                         f"run `nbgrader generate_assignment {assignment}` first")
    gb.db.rollback()   # end this session's read, so that nbgrader's process may write
    print(register_release(root, assignment, coursedir.db_url, coursedir.course_id), flush=True)
    return gb.find_assignment(assignment)


def _in_release_order(coursedir, assignment, notebook, cells):
    """Source cells in the order the released notebook has them (the gradebook keeps no order)."""
    path = Path(coursedir.format_path(coursedir.release_directory, ".", assignment)) / f"{notebook}.ipynb"
    try:
        released = nbformat.read(path, as_version=4)
    except Exception:  # noqa: BLE001 - no release folder: keep the gradebook's order
        return cells
    order = {}
    for i, cell in enumerate(released.cells):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id is not None:
            order.setdefault(grade_id, i)
    return sorted(cells, key=lambda c: order.get(c.name, len(order)))


def limits_from(config, **overrides) -> Limits:
    limits = Limits()
    timeout = config.Execute.get("timeout") if config is not None else None
    if isinstance(timeout, (int, float)) and timeout > 0:
        limits.cell_seconds = float(timeout)
        limits.notebook_seconds = max(limits.notebook_seconds, 3 * float(timeout))
    # any sandbox limit may be set in nbgrader_config.py: c.ChapterSandbox.tmp_bytes = 512 << 20
    section = config.get("ChapterSandbox", {}) if config is not None else {}
    for key in asdict(limits):
        if key in section:
            setattr(limits, key, type(getattr(limits, key))(section[key]))
    for key, value in overrides.items():
        if value is not None:
            setattr(limits, key, value)
    return limits


FILE_COPY_BYTES = 64 << 20     # the largest data file the sandbox is given
WORK_HEADROOM = 16 << 20       # room left in the sandbox's working folder for the notebook's own files


def data_budget(limits: Limits) -> int:
    return max(0, int(limits.tmp_bytes) - WORK_HEADROOM)


def check_data_files(course: Course, limits: Limits) -> None:
    """Refuse, before any grading, an assignment whose own data files cannot reach the sandbox."""
    from nbgrader.utils import find_all_files
    base = Path(course.source_dir)
    if not base.is_dir():
        return
    sizes = {}
    for path in find_all_files(str(base), course.ignore + ["*.ipynb", "timestamp.txt"]):
        if os.path.isfile(path) and not os.path.islink(path):
            sizes[os.path.relpath(path, base)] = os.path.getsize(path)
    big = sorted(rel for rel, size in sizes.items() if size > FILE_COPY_BYTES)
    total = sum(sizes.values())
    if big or total > data_budget(limits):
        mib = lambda n: f"{n / (1 << 20):.0f} MiB"  # noqa: E731
        what = (f"{', '.join(f'{rel} ({mib(sizes[rel])})' for rel in big)} "
                f"{'is' if len(big) == 1 else 'are'} larger than the {mib(FILE_COPY_BYTES)} a sandbox is given"
                if big else
                f"its data files take {mib(total)}, more than the {mib(data_budget(limits))} of working space "
                f"a sandbox has (tmp_bytes {mib(int(limits.tmp_bytes))} less {mib(WORK_HEADROOM)} for the "
                "notebook's own files)")
        raise SystemExit(f"cannot grade {course.assignment}: {what}. Make the files smaller, or give each "
                         "sandbox more room in nbgrader_config.py, e.g. "
                         "c.ChapterSandbox.tmp_bytes = 1024 << 20 (memory is counted against it).")


def fit_files(files: dict, limits: Limits) -> tuple[dict, list[str]]:
    """The submission's data files that fit in the sandbox; a note for each one left out."""
    kept, notes, total = {}, [], 0
    for rel, path in sorted(files.items()):
        try:
            size = os.path.getsize(path)
        except OSError:
            continue
        if size > FILE_COPY_BYTES or total + size > data_budget(limits):
            notes.append(f"the submitted file {rel!r} ({size / (1 << 20):.0f} MiB) was too large to give the "
                         "notebook and was left out")
            continue
        kept[rel] = path
        total += size
    return kept, notes


def discover(course: Course) -> list[str]:
    """Student ids with a submission of the assignment (directory names, never notebook content)."""
    import glob
    pattern = Path(course.submitted.format(student="*"))
    students = []
    for path in sorted(glob.glob(str(pattern))):
        student = _student_of(course, Path(path))
        if student and student not in course.excluded_students and Path(path).is_dir() \
                and not Path(path).is_symlink():
            students.append(student)
    return students


def _student_of(course: Course, path: Path) -> str | None:
    template = Path(course.submitted.format(student="\0"))
    parts, got = template.parts, path.parts
    if len(parts) != len(got):
        return None
    for want, have in zip(parts, got):
        if "\0" in want:
            return have
        if want != have:
            return None
    return None


# ============================================================================ sanitizing
class _Snapshot:
    """Stands in for nbgrader's Gradebook inside its own preprocessors."""

    def __init__(self, notebook: InstructorNotebook):
        self.notebook = notebook

    def find_notebook(self, name, assignment):
        return self.notebook

    def find_source_cell(self, name, notebook, assignment):
        from nbgrader.api import MissingEntry
        cell = self.notebook.source(name)
        if cell is None:
            raise MissingEntry(name)
        return cell

    def find_graded_cell(self, name, notebook, assignment):
        from nbgrader.api import MissingEntry
        for cell in self.notebook.grade_cells + self.notebook.task_cells:
            if cell.name == name:
                return cell
        raise MissingEntry(name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _overwrite_cells_class():
    from nbgrader.preprocessors import NbGraderPreprocessor, OverwriteCells

    class SnapshotOverwriteCells(OverwriteCells):
        """nbgrader's OverwriteCells, reading the instructor's cells from a snapshot."""

        def preprocess(self, nb, resources):
            self.notebook_id = resources["nbgrader"]["notebook"]
            self.assignment_id = resources["nbgrader"]["assignment"]
            self.gradebook = resources["snapshot"]
            self.changes = resources.setdefault("changes", [])
            nb, resources = NbGraderPreprocessor.preprocess(self, nb, resources)
            if self.add_missing_cells:
                nb, resources = self.add_missing_task_cells(nb, resources)
            return nb, resources

        def report_change(self, name, attr, old, new):
            self.changes.append((name, attr))

    return SnapshotOverwriteCells


def _nbgrader_meta(cell):
    meta = cell.get("metadata", {}).get("nbgrader") if isinstance(cell.get("metadata"), dict) else None
    return meta if isinstance(meta, dict) else None


def normalize(nb) -> list[str]:
    """Make a hostile notebook structurally safe for nbgrader's preprocessors; say what was wrong."""
    notes = []
    if not isinstance(nb.get("cells"), list):
        raise ValueError("the notebook has no list of cells")
    if not isinstance(nb.get("metadata"), dict):
        nb["metadata"] = nbformat.NotebookNode()
    kept = []
    for cell in nb.cells:
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            notes.append("a malformed cell was dropped")
            continue
        if isinstance(cell.get("source"), list):
            cell["source"] = "".join(str(s) for s in cell["source"])
        if not isinstance(cell.get("source"), str):
            cell["source"] = ""
        if not isinstance(cell.get("metadata"), dict):
            cell["metadata"] = nbformat.NotebookNode()
        meta = cell.metadata.get("nbgrader")
        if meta is not None and not (isinstance(meta, dict) and isinstance(meta.get("grade_id"), str)
                                     and meta.get("grade_id")):
            del cell.metadata["nbgrader"]
            notes.append("a cell with malformed nbgrader metadata is graded as ordinary code")
        if cell.cell_type == "code":
            cell.setdefault("outputs", [])
            cell.setdefault("execution_count", None)
        kept.append(cell)
    nb.cells = kept
    return notes


def restore_flags(nb, instructor: InstructorNotebook) -> list[str]:
    """Give every known cell the instructor's nbgrader flags; strip unknown ones."""
    notes = []
    grade = {c.name: c for c in instructor.grade_cells}
    solution = {c.name for c in instructor.solution_cells}
    task = {c.name: c for c in instructor.task_cells}
    for cell in nb.cells:
        meta = _nbgrader_meta(cell)
        if meta is None:
            continue
        name = meta.get("grade_id")
        source = instructor.source(name)
        if source is None:
            del cell.metadata["nbgrader"]
            notes.append(f"the cell {name!r} is not part of this assignment; it runs as ordinary code")
            continue
        want = {"grade": name in grade, "solution": name in solution, "task": name in task,
                "locked": bool(source.locked), "grade_id": name, "schema_version": 3}
        if name in grade:
            want["points"] = float(grade[name].max_score)
        elif name in task:
            want["points"] = float(task[name].max_score)
        # nbgrader writes only the flags a cell has: a missing flag is False, not a change
        changed = any((bool(meta.get(k, False)) if isinstance(v, bool) else meta.get(k)) != v
                      for k, v in want.items() if k not in ("schema_version", "points"))
        if "points" in want and float(meta.get("points") or 0) != want["points"]:
            notes.append(f"the points of cell {name!r} had been changed; the original value was restored")
        elif changed:
            notes.append(f"the nbgrader metadata of cell {name!r} had been changed; it was restored")
        for key in ("grade", "solution", "task", "locked", "points"):
            meta.pop(key, None)
        meta.update(want)
    return notes


def readd_missing(nb, instructor: InstructorNotebook) -> list[str]:
    """Put back graded and locked cells the submission lost, after their predecessor (as nbgrader does)."""
    from nbgrader.preprocessors import OverwriteCells
    notes = []
    present = {m.get("grade_id") for m in map(_nbgrader_meta, nb.cells) if m}
    grade = {c.name: c for c in instructor.grade_cells}
    solution = {c.name for c in instructor.solution_cells}
    maker = OverwriteCells(log=_quiet)
    previous = None
    for source in instructor.source_cells:
        name = source.name
        if name in present or not (name in grade or source.locked):
            previous = name if name in present else previous
            continue
        if name in grade:
            cell = maker.missing_cell_transform(source, grade[name].max_score, is_solution=name in solution)
        else:
            cell = _missing_locked_cell(maker, source)
        position = 0
        if previous is not None:
            position = next(i for i, c in enumerate(nb.cells)
                            if (_nbgrader_meta(c) or {}).get("grade_id") == previous) + 1
        nb.cells.insert(position, cell)
        present.add(name)
        previous = name
        notes.append(f"the cell {name!r} was missing from the submission; it was put back")
    return notes


def _missing_locked_cell(maker, source):
    note = maker.missing_cell_notification.format(cell_id=source.name)
    cell = {"cell_type": source.cell_type, "source": note + source.source,
            "metadata": {"deletable": False, "editable": False,
                         "nbgrader": {"grade": False, "grade_id": source.name, "locked": True,
                                      "solution": False, "task": False, "schema_version": 3,
                                      "checksum": source.checksum}}}
    if source.cell_type == "code":
        cell["source"] = "# " + cell["source"]
        cell.update(execution_count=None, outputs=[])
    return nbformat.from_dict(cell)


def sanitize(nb, instructor: InstructorNotebook, assignment: str, student: str,
             begin: str = "BEGIN HIDDEN TESTS", end: str = "END HIDDEN TESTS"):
    """nbgrader's sanitizing step (autograde's first pass), fed from the snapshot; returns notes."""
    from nbgrader.preprocessors import CheckCellMetadata, ClearOutput, DeduplicateIds
    notes = normalize(nb)
    ids = [m["grade_id"] for m in map(_nbgrader_meta, nb.cells) if m]
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    if duplicated:
        notes.append(f"cells appear more than once ({', '.join(duplicated)}); only the last copy of each "
                     "is graded")
    resources = {"nbgrader": {"notebook": instructor.name, "assignment": assignment, "student": student,
                              "db_url": None}, "snapshot": _Snapshot(instructor)}
    nb, resources = ClearOutput(log=_quiet).preprocess(nb, resources)
    nb, resources = DeduplicateIds(log=_quiet).preprocess(nb, resources)
    notes += restore_flags(nb, instructor)
    if instructor.kernelspec:
        nb.metadata["kernelspec"] = json.loads(instructor.kernelspec)
    before = {m["grade_id"]: c.source for c in nb.cells if (m := _nbgrader_meta(c))}
    overwrite = _overwrite_cells_class()(log=_quiet, add_missing_cells=True)
    nb, resources = overwrite.preprocess(nb, resources)
    for name, attr in resources.get("changes", []):
        if attr == "checksum":
            original = instructor.source(name).source
            if before.get(name) not in (original, strip_hidden(original, begin, end)):
                notes.append(f"the locked cell {name!r} had been edited; the original was restored")
        elif attr == "cell_type":
            notes.append(f"the type of cell {name!r} had been changed; it was restored")
    notes += readd_missing(nb, instructor)
    CheckCellMetadata(log=_quiet).preprocess(nb, resources)
    return nb, _unique(notes)


def _unique(items):
    seen, out = set(), []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def strip_hidden(source: str, begin: str, end: str) -> str:
    """A test cell's visible part, by nbgrader's own ClearHiddenTests rule."""
    from nbgrader.preprocessors import ClearHiddenTests
    cell = nbformat.NotebookNode(cell_type="code", source=source, metadata={})
    try:
        ClearHiddenTests(log=_quiet, begin_test_delimeter=begin, end_test_delimeter=end) \
            ._remove_hidden_test_region(cell)
    except RuntimeError:   # unbalanced markers: keep nothing after the first BEGIN
        cell.source = source.split(begin)[0].rsplit("\n", 1)[0]
    return cell.source


# ============================================================================ grading
@dataclass
class NotebookResult:
    name: str
    status: str = "graded"          # graded | missing | broken | failed
    score: float = 0.0
    max_score: float = 0.0
    grades: dict = field(default_factory=dict)     # grade_id -> auto score (None: manual)
    comments: dict = field(default_factory=dict)   # grade_id -> auto comment
    reasons: list = field(default_factory=list)    # why points were lost for a non-mathematical reason
    notes: list = field(default_factory=list)      # what sanitizing repaired
    feedback: list = field(default_factory=list)
    variant: str = ""
    run: dict = field(default_factory=dict)
    layers: dict = field(default_factory=dict)
    checks: dict = field(default_factory=dict)     # grade_id -> {answer key: {"status", "mistake"}}
    inside: list = field(default_factory=list)     # grade_ids judged the nbgrader way, in the sandbox
    notebook: str | None = None                    # the autograded .ipynb text

    @property
    def technical_zero(self) -> bool:
        """Scored 0 for something other than wrong mathematics (an error, a timeout, tampering...)."""
        return self.score == 0 and self.max_score > 0 and bool(self.reasons or self.notes)


@dataclass
class SubmissionResult:
    student: str
    key: str
    notebooks: list = field(default_factory=list)

    def to_json(self) -> dict:
        return {"student": self.student, "key": self.key, "notebooks": [asdict(n) for n in self.notebooks]}

    @classmethod
    def from_json(cls, data) -> "SubmissionResult":
        return cls(data["student"], data["key"], [NotebookResult(**n) for n in data["notebooks"]])


def task_seconds(course: Course, limits: Limits) -> float:
    """How long one submission's grading may take in all: every notebook's run and its grading."""
    cells = sum(len(nb.autograded_tests) for nb in course.notebooks.values())
    # a notebook's limit counts its own CPU time; the wall clock may run wall_factor times longer
    wall = float(limits.notebook_seconds) * max(1.0, float(getattr(limits, "wall_factor", 1.0)))
    return len(course.notebooks) * (wall + 30.0) + cells * GRADE_SECONDS + 60.0


def warm_references(course: Course, student: str) -> None:
    """Compute this student's references and declared mistakes here, in a long-lived process.

    They depend on the variant only (trusted inputs), and grading each cell runs in a
    fresh bounded child: what is cached here (the practice items' reference runs) the
    children inherit instead of recomputing.
    """
    from .variants import variant_for
    for name in course.notebooks:
        problem = _problem(name)
        if problem is None:
            continue
        params = problem.variants.get(variant_for(student, problem.assignment or course.assignment))
        if params is None:
            continue
        with contextlib.suppress(Exception):   # a failure here shows again, bounded, when grading
            problem.solve(params)
            for mistake in problem.mistakes:
                mistake.wrong(params)


def grade_submission_bounded(course: Course, student: str, socket_path: str, limits: Limits,
                             key: str = "") -> dict:
    """`grade_submission` in a forked child with the task's time limit (for cluster workers).

    Returns {"result": SubmissionResult JSON} or {"not_graded": why}; never hangs.
    """
    from . import symbolic
    warm_references(course, student)

    def work():
        mark = symbolic.decided_count()
        try:
            result = grade_submission(course, student, socket_path, limits, key)
        except SandboxUnavailable as exc:
            return {"infra": str(exc)}
        return {"result": result.to_json(), "decided": symbolic.decided_since(mark)}

    seconds = task_seconds(course, limits)
    try:
        out = run_bounded(work, timeout=seconds, memory_bytes=8 << 30, max_output=1 << 30)
    except Timeout:
        return {"not_graded": f"grading took longer than {seconds:g} s and was stopped"}
    except RuntimeError as exc:
        return {"not_graded": f"grading failed: {exc}"[:300]}
    if "infra" in out:   # not the student's fault: the task fails, and Dask retries it elsewhere
        raise SandboxUnavailable(out["infra"])
    symbolic.remember(out.pop("decided", ()))
    return out


def grade_submission(course: Course, student: str, socket_path: str, limits: Limits,
                     key: str = "") -> SubmissionResult:
    """Grade one student's submission (all notebooks of the assignment)."""
    result = SubmissionResult(student, key)
    folder = course.submission_dir(student)
    for name, instructor in course.notebooks.items():
        path = folder / f"{name}.ipynb"
        result.notebooks.append(grade_notebook(course, instructor, student, path, socket_path, limits))
    return result


def grade_notebook(course, instructor, student, path, socket_path, limits) -> NotebookResult:
    points = sum(float(c.max_score) for c in instructor.grade_cells)
    out = NotebookResult(instructor.name, max_score=points)
    if not path.exists() and not path.is_symlink():
        out.status = "missing"
        out.grades = {c.name: 0.0 for c in instructor.grade_cells}
        out.reasons.append("the notebook was not submitted")
        return out
    try:
        nb = read_submission(path)
        nb, out.notes = sanitize(nb, instructor, course.assignment, student,
                                 course.begin_hidden, course.end_hidden)
    except Exception as exc:  # noqa: BLE001 - any unreadable notebook scores 0 with its reason
        return broken(out, instructor, course, _why_broken(exc))
    try:
        job, tests = build_job(course, instructor, nb, student)
    except Exception as exc:  # noqa: BLE001 - a grader bug must not stop the batch
        return broken(out, instructor, course, f"the grader could not prepare this notebook ({exc!r:.200})")
    job["files"], left_out = fit_files(job["files"], limits)
    out.notes += left_out
    run = run_job(socket_path, job, limits)   # SandboxUnavailable propagates: not the student's fault
    out.run = {"status": run.status, "detail": run.detail, "seconds": run.seconds, "leftovers": run.leftovers}
    out.layers = {"monitor": run.monitor_layers, "sandbox": run.layers}
    try:
        grade_cells(course, instructor, nb, student, run, tests, out)
    except Exception as exc:  # noqa: BLE001
        out.notes, out.notebook = [], None
        return broken(out, instructor, course, f"the grader could not grade this notebook ({exc!r:.200})")
    return out


def read_submission(path: Path):
    if path.is_symlink() or not path.is_file():
        raise ValueError("the submitted notebook is a link or not a regular file")
    if path.stat().st_size > MAX_NOTEBOOK_BYTES:
        raise ValueError(f"the notebook is larger than {MAX_NOTEBOOK_BYTES >> 20} MB")
    text = path.read_bytes().decode("utf-8")
    nb = nbformat.reads(text, as_version=4)
    return nb


def _why_broken(exc) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "the notebook is not UTF-8 text"
    if isinstance(exc, (json.JSONDecodeError,)) or "JSON" in type(exc).__name__ \
            or type(exc).__name__ == "NotJSONError":
        return "the notebook is not valid JSON (the file is damaged)"
    if isinstance(exc, ValueError) and str(exc).startswith("the "):
        return str(exc)
    return f"the notebook could not be read as an nbgrader notebook ({type(exc).__name__})"


def broken(out: NotebookResult, instructor, course, reason: str) -> NotebookResult:
    """0 for every cell, and a notebook that says why, for generate_feedback."""
    from nbgrader.preprocessors import OverwriteCells
    out.status = "broken"
    out.reasons.append(reason)
    out.grades = {c.name: 0.0 for c in instructor.grade_cells}
    maker = OverwriteCells(log=_quiet)
    manual = {c.name for c in instructor.solution_cells}
    cells = [nbformat.v4.new_markdown_cell(f"**This notebook could not be graded:** {reason}. "
                                           "Every cell scores 0.")]
    for grade in instructor.grade_cells:
        source = instructor.source(grade.name)
        if source is None:
            continue
        cell = maker.missing_cell_transform(source, grade.max_score, is_solution=grade.name in manual)
        cell.source = strip_hidden(cell.source, course.begin_hidden, course.end_hidden)
        if cell.cell_type == "code":
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"✗ not graded: {reason}\n"),
                            nbformat.v4.new_output("execute_result", data={"text/plain": "0.0"},
                                                   execution_count=None)]
        cell["id"] = grade.name if _CELL_ID.fullmatch(grade.name) else f"autograded-{len(cells)}"
        cells.append(cell)
    nb = nbformat.v4.new_notebook(cells=cells)
    if instructor.kernelspec:
        nb.metadata["kernelspec"] = json.loads(instructor.kernelspec)
    out.notebook = write_notebook(nb)
    out.feedback = [f"✗ {reason}"]
    return out


def _problem(name):
    from . import problems
    try:
        return problems.get(name)
    except KeyError:
        return None


def build_job(course, instructor, nb, student):
    """The cells the sandbox runs (hidden tests removed) and, per test cell, what to read back."""
    from .variants import variant_for
    problem = _problem(instructor.name)
    tests = instructor.autograded_tests
    params, variant = None, ""
    if problem is not None:
        variant = variant_for(student, problem.assignment or course.assignment)
        params = problem.variants.get(variant)
    cells, info = [], {}
    probes_all = {}
    if problem is not None and params is not None:
        try:
            probes_all = problem.probes(params)
        except Exception:  # noqa: BLE001
            probes_all = {}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        meta = _nbgrader_meta(cell) or {}
        name = meta.get("grade_id")
        entry = {"index": index, "source": cell.source}
        if name is not None and instructor.source(name) is not None:
            entry["source"] = strip_hidden(cell.source, course.begin_hidden, course.end_hidden)
        if name in tests:
            keys = list(problem.cells.get(name, ())) if problem is not None else []
            entry["test"] = name
            entry["keys"] = keys
            entry["probes"] = {k: {"function": probes_all[k].function, "calls": probes_all[k].calls}
                               for k in keys if k in probes_all}
            info[index] = {"name": name, "keys": keys, "points": tests[name], "inside": not keys}
            if not keys:
                # No checks outside the sandbox know this cell (any nbgrader notebook's plain
                # asserts): it is judged as nbgrader judges it, by running it whole, hidden
                # tests included, inside the student's process, and reading its outputs.
                entry["source"] = cell.source
        cells.append(entry)
    job = {"cells": cells, "env": {"JUPYTERHUB_USER": student},
           "files": extra_files(course, student)}
    meta = {"problem": problem, "params": params, "variant": variant, "tests": info}
    return job, meta


def extra_files(course: Course, student: str) -> dict:
    """Non-notebook files the notebook may read, as nbgrader would copy them: submission, then source."""
    from nbgrader.utils import find_all_files
    files = {}
    for base in (course.submission_dir(student), Path(course.source_dir)):
        if not base.is_dir():
            continue
        for path in find_all_files(str(base), course.ignore + ["*.ipynb", "timestamp.txt"]):
            rel = os.path.relpath(path, base)
            if base != course.submission_dir(student) and rel in course.exclude_overwriting:
                continue
            real = os.path.realpath(path)
            if os.path.islink(path) or not os.path.isfile(path) \
                    or not real.startswith(str(base.resolve()) + os.sep):
                continue   # a link could point at the gradebook or the source notebooks
            files[rel] = real
    return files


def grade_cells(course, instructor, nb, student, run, meta, out: NotebookResult):
    """Scores from the sandbox's data, the autograded notebook, feedback and reasons."""
    from nbgrader import utils
    problem, params, variant, tests = meta["problem"], meta["params"], meta["variant"], meta["tests"]
    out.variant = variant
    stopped = _stop_reason(run)
    count = 0
    for index, cell in enumerate(nb.cells):
        message = run.cells.get(index) if cell.cell_type == "code" else None
        if cell.cell_type == "code":
            cell.outputs = clean_outputs(message.get("outputs") if message else None)
            if message is not None:
                count += 1
                cell.execution_count = count
        meta_cell = _nbgrader_meta(cell) or {}
        name = meta_cell.get("grade_id")
        if index in tests:
            cell.source = strip_hidden(cell.source, course.begin_hidden, course.end_hidden)
            score, lines = score_test_cell(tests[index], message, problem, params, variant, stopped, out,
                                           cell, instant=getattr(course, "instant", False))
            out.grades[name] = score
            out.feedback += lines
            cell.outputs.append(nbformat.v4.new_output("stream", name="stdout", text="\n".join(lines) + "\n"))
            cell.outputs.append(nbformat.v4.new_output("execute_result", data={"text/plain": repr(float(score))},
                                                       execution_count=cell.execution_count))
        elif name is not None and utils.is_grade(cell):
            auto, _ = utils.determine_grade(cell)     # manual cells: 0 if untouched, else left to formgrader
            out.grades[name] = auto
        if name is not None and (utils.is_solution(cell) or utils.is_task(cell)):
            unchanged = meta_cell.get("checksum") == utils.compute_checksum(cell) and not utils.is_task(cell)
            out.comments[name] = "No response." if unchanged else None
    errors = []
    for index, message in sorted(run.cells.items()):
        if index in tests or not isinstance(message, dict) or message.get("raised") is not True:
            continue
        if message.get("timeout") is True:
            errors.append(f"cell {index + 1} ran past its time limit and was interrupted")
        else:
            errors.append(f"cell {index + 1} raised {str(message.get('ename') or 'an error')[:80]}")
    out.reasons = _unique(([stopped] if stopped else []) + errors + out.reasons)
    if run.anomaly:
        out.notes.append(run.anomaly)
    if run.leftovers:
        out.notes.append(f"{run.leftovers} process(es) the notebook started were still running at the end "
                         "and were killed")
    out.score = float(sum(s for s in out.grades.values() if s))
    if out.notes:
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(
            "**Autograder notes:**\n\n" + "\n".join(f"- {n}" for n in out.notes)))
    limit_outputs(nb, course)
    out.notebook = write_notebook(nb)


_CELL_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def write_notebook(nb) -> str:
    """nbformat text, with a cell id for every cell (re-added cells come without one)."""
    nb.nbformat, nb.nbformat_minor = 4, max(5, int(nb.get("nbformat_minor") or 0))
    seen = set()
    for i, cell in enumerate(nb.cells):
        if not isinstance(cell.get("id"), str) or cell["id"] in seen or not _CELL_ID.fullmatch(cell["id"]):
            cell["id"] = f"autograded-{i}"
        seen.add(cell["id"])
    return nbformat.writes(nb)


def _stop_reason(run) -> str:
    where = ""
    if run.begun:
        last = run.begun[-1]
        if last not in run.cells:
            where = f" (in cell {last + 1})"
    if run.status == "ok":
        if run.finished:
            return ""
        if where:
            return f"the notebook ended its own process{where} (os._exit or similar), so later cells never ran"
        return ("the notebook interfered with the sandbox's reporting (for instance by patching "
                "builtins), so its answers could not be read back")
    return {
        "timeout": f"the notebook was stopped{where}: {run.detail or 'it ran past its time limit'}",
        "flood": f"the notebook was stopped{where}: {run.detail or 'it wrote too much output'}",
        "crashed": f"the notebook stopped{where}: {run.detail or 'the grading process died'}",
    }.get(run.status, f"the notebook could not be run{where}: {run.detail or run.status}")


GRADE_SECONDS = 30.0            # one hidden-test cell's grading, outside the sandbox
GRADE_MEMORY_BYTES = 2 << 30    # on top of what the grading process already maps
GRADE_RESULT_BYTES = 4 << 20


def score_test_cell(test, message, problem, params, variant, stopped, out: NotebookResult, cell=None,
                    instant: bool = False):
    """(points, feedback lines) for one hidden-test cell."""
    points, name, keys = float(test["points"]), test["name"], test["keys"]
    if message is None:
        reason = stopped or "the notebook did not reach this cell"
        out.reasons.append(reason)
        return 0.0, [f"✗ not graded: {reason}"]
    if test.get("inside") or problem is None or not keys:
        return judged_inside(test, message, cell, out)
    if params is None:
        reason = f"this problem has no variant {variant} to grade"
        out.reasons.append(reason)
        return 0.0, [f"✗ not graded: {reason}"]
    answers = message.get("answers")
    if message.get("raised") is not False and not isinstance(answers, dict):
        ename = str(message.get("ename") or "an error")[:80]
        out.reasons.append(f"the checks in cell {name!r} raised {ename}")
        return 0.0, [f"✗ the checks in this cell raised {ename}, so it scores 0 of {points:g}"]
    answers = answers if isinstance(answers, dict) else {}
    if answers.get("__timeout__"):
        out.reasons.append(f"reading the answers of cell {name!r} timed out")
        return 0.0, ["✗ reading your answers took too long (a function or object that does not return)"]
    answers = {k: answers[k] for k in keys if k in answers}
    raised = []
    if message.get("raised") is not False:
        # The visible checks stopped on one answer: each answer is still graded on its own,
        # so one wrong type never costs the others in the cell their points.
        ename = str(message.get("ename") or "an error")[:80]
        raised = [f"✗ the visible checks in this cell raised {ename}; each answer below is graded "
                  "on its own"]
    try:
        result = grade_bounded(problem, params, answers, keys, instant=instant)
    except Timeout:
        out.reasons.append(f"grading cell {name!r} took longer than {GRADE_SECONDS:g} s")
        return 0.0, [f"✗ grading your answers took longer than {GRADE_SECONDS:g} s (an answer too large "
                     "or too complicated to check), so this cell scores 0; your instructor has been told"]
    except Exception as exc:  # noqa: BLE001 - never let one answer stop the batch
        out.reasons.append(f"cell {name!r} could not be graded ({str(exc)[:120] or type(exc).__name__})")
        return 0.0, ["✗ this cell could not be graded; your instructor has been told"]
    from .evidence import check_verdicts
    verdicts = result["checks"]   # plain data from the bounded child; kept in the gradebook as evidence
    out.checks[name] = check_verdicts({k: v["status"] for k, v in verdicts.items()},
                                      {k: v["mistake"] for k, v in verdicts.items()}, keys)
    score = max(0.0, min(float(result["score"]), points, float(result["max_score"])))
    lines = [f"Variant {variant}: {score:g} of {points:g} points in this cell"] + raised + result["feedback"]
    return score, lines


def grade_bounded(problem, params, answers, keys, seconds: float | None = None, instant: bool = False) -> dict:
    """`problem.grade` in a forked child under a time, memory and size bound, as JSON data.

    Reading and comparing a hostile answer must never hold the batch: the child is
    killed past `seconds` (Timeout). Comparisons it decided come back with its result,
    so the next student's copy of the same expression is decided at once. With
    `instant`, the feedback names each failed check and any matching declared mistake,
    and nothing more: no direction, length or value that repeated attempts could bisect.
    """
    from . import symbolic

    def work():
        mark = symbolic.decided_count()
        r = problem.grade(params, answers, keys=keys)
        lines = instant_lines(problem, r) if instant else r.feedback
        return {"score": float(r.score), "max_score": float(r.max_score),
                "feedback": [str(line)[:2000] for line in lines],
                "checks": {str(k): {"status": str(o.status), "mistake": r.mistakes.get(k)}
                           for k, o in r.outcomes.items()},
                "decided": symbolic.decided_since(mark)}

    result = run_bounded(work, timeout=seconds or GRADE_SECONDS, memory_bytes=GRADE_MEMORY_BYTES,
                         max_output=GRADE_RESULT_BYTES)
    symbolic.remember(result.pop("decided", ()))
    return result


def instant_lines(problem, result) -> list[str]:
    """Feedback for instant grading: which checks failed, and the declared mistake that matched."""
    from .feedback import FAIL, Outcome, line
    said = {m.name: m.feedback for m in problem.mistakes}
    lines = []
    for key, outcome in result.outcomes.items():
        if outcome.status == FAIL:
            outcome = Outcome(FAIL, "does not match your variant.")
        lines.append(line(key, outcome, said.get(result.mistakes.get(key))))
    return lines


def judged_inside(test, message, cell, out: NotebookResult):
    """nbgrader's own verdict on a test cell that ran whole in the sandbox: its outputs decide."""
    from nbgrader import utils
    points, name = float(test["points"]), test["name"]
    out.inside.append(name)
    outputs = list(cell.outputs) if cell is not None else []
    if message.get("raised") is not False and not any(o.get("output_type") == "error" for o in outputs):
        outputs.append(nbformat.v4.new_output("error", ename=str(message.get("ename") or "Error")[:200],
                                              evalue="", traceback=[]))
    for output in outputs:   # a traceback would show the hidden tests' source: keep its last line
        if output.get("output_type") == "error":
            output["traceback"] = [f"{output.get('ename', '')}: {output.get('evalue', '')}"]
    judged = nbformat.from_dict({"cell_type": "code", "source": "", "outputs": outputs,
                                 "metadata": {"nbgrader": {"grade": True, "solution": False, "locked": True,
                                                           "grade_id": name, "points": points}}})
    try:
        score, _ = utils.determine_grade(judged)
    except Exception:  # noqa: BLE001 - an output nbgrader cannot read scores as an error would
        score = 0.0
    if cell is not None:
        cell.outputs = outputs
    score = max(0.0, min(float(score or 0.0), points))
    how = ("judged as nbgrader judges it: the cell ran whole, hidden tests included, inside the "
           "notebook's own process (it has no checks outside the sandbox)")
    mark = "✓" if score == points else "✗"
    return score, [f"{mark} {score:g} of {points:g} points in this cell, {how}"]


_OUTPUT_KINDS = {"stream", "execute_result", "display_data", "error"}
_MIMES = ("text/plain", "image/png", "image/jpeg", "text/latex")


def clean_outputs(raw) -> list:
    """Untrusted outputs from the sandbox as valid nbformat outputs (plain text and images only)."""
    outputs = []
    if not isinstance(raw, list):
        return outputs
    for item in raw[:200]:
        if not isinstance(item, dict) or item.get("output_type") not in _OUTPUT_KINDS:
            continue
        kind = item["output_type"]
        try:
            if kind == "stream":
                name = item.get("name") if item.get("name") in ("stdout", "stderr") else "stdout"
                text = item.get("text")
                if isinstance(text, str) and text:
                    outputs.append(nbformat.v4.new_output("stream", name=name, text=text))
            elif kind == "error":
                tb = item.get("traceback")
                tb = [str(t)[:5000] for t in tb[:200]] if isinstance(tb, list) else []
                outputs.append(nbformat.v4.new_output("error", ename=str(item.get("ename", ""))[:200],
                                                      evalue=str(item.get("evalue", ""))[:2000], traceback=tb))
            else:
                data = item.get("data")
                if not isinstance(data, dict):
                    continue
                bundle = {m: data[m] for m in _MIMES if isinstance(data.get(m), str)}
                if not bundle:
                    continue
                if kind == "execute_result":
                    count = item.get("execution_count")
                    outputs.append(nbformat.v4.new_output(kind, data=bundle, execution_count=count
                                                          if isinstance(count, int) else None))
                else:
                    outputs.append(nbformat.v4.new_output(kind, data=bundle))
        except Exception:  # noqa: BLE001 - drop what nbformat will not take
            continue
    return outputs


def limit_outputs(nb, course: Course) -> None:
    from nbgrader.preprocessors import LimitOutput
    LimitOutput(log=_quiet, max_lines=course.max_lines, max_traceback=course.max_traceback) \
        .preprocess(nb, {})


# ============================================================================ recording
def record(gb, course: Course, result: SubmissionResult, late_plugin=None) -> None:
    """Write one submission's grades into nbgrader's gradebook (values are set, never added)."""
    import warnings
    with warnings.catch_warnings(), writer_lock(gb, course.course_id, result.student):
        warnings.simplefilter("ignore")   # SQLAlchemy's autoflush notes inside nbgrader's own API
        _record(gb, course, result, late_plugin)


@contextlib.contextmanager
def writer_lock(gb, course_id: str, student: str):
    """Let one grading process at a time write a given student's records.

    SQLite locks the whole file for every write. PostgreSQL lets writers run side
    by side, and nbgrader's update_or_create_* read, then insert: two graders
    recording the same new student (two assignments graded at once, or a rerun
    beside a run) would both insert and one would fail on the unique key. A
    session-level advisory lock per (course, student), held on its own connection
    across nbgrader's several commits, makes those steps atomic between graders.
    """
    engine = gb.db.get_bind()
    if engine.dialect.name != "postgresql":
        yield
        return
    from sqlalchemy import text
    key = int.from_bytes(hashlib.sha256(f"{course_id}\0{student}".encode()).digest()[:8], "big", signed=True)
    with engine.connect() as conn:
        conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": key})
        conn.commit()
        try:
            yield
        finally:
            gb.db.rollback()     # nothing uncommitted may outlive the lock
            conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})
            conn.commit()


def _record(gb, course: Course, result: SubmissionResult, late_plugin=None) -> None:
    from nbgrader.utils import parse_utc
    student, assignment = result.student, course.assignment
    gb.update_or_create_student(student)
    timestamp = _timestamp(course.submission_dir(student))
    if timestamp is not None:
        try:
            submission = gb.update_or_create_submission(assignment, student, timestamp=parse_utc(timestamp))
        except ValueError:
            submission = gb.update_or_create_submission(assignment, student)
    else:
        submission = gb.update_or_create_submission(assignment, student)
    from nbgrader.api import Grade
    for nb in result.notebooks:
        snb = gb.find_submission_notebook(nb.name, assignment, student)
        # read manual scores fresh and hold the rows, so a grade formgrader saves meanwhile is not
        # overwritten with a stale needs_manual_grade (SQLite ignores this and locks the file)
        gb.db.query(Grade).filter(Grade.notebook_id == snb.id).with_for_update() \
            .populate_existing().all()
        for grade in snb.grades:
            name = grade.cell.name
            if name not in nb.grades:
                continue
            grade.auto_score = nb.grades[name]
            if nb.status == "missing":
                grade.needs_manual_grade = False
            else:
                grade.needs_manual_grade = grade.manual_score is not None or grade.auto_score is None
        for comment in snb.comments:
            if comment.cell.name in nb.comments:
                comment.auto_comment = nb.comments[comment.cell.name]
    from .evidence import keep
    keep(gb.db, course.course_id, assignment, result)    # the class report's evidence, replaced
    gb.db.commit()
    if late_plugin is not None:
        for nb in result.notebooks:
            snb = gb.find_submission_notebook(nb.name, assignment, student)
            snb.late_submission_penalty = None
            if submission.total_seconds_late > 0:
                penalty = late_plugin.late_submission_penalty(student, snb.score, submission.total_seconds_late)
                if penalty is not None:
                    snb.late_submission_penalty = min(max(penalty, 0), snb.score)
        gb.db.commit()


def _timestamp(folder: Path):
    path = folder / "timestamp.txt"
    if path.is_file() and not path.is_symlink():
        text = path.read_text(errors="replace").strip()
        return text or None
    return None


def write_autograded(course: Course, result: SubmissionResult) -> None:
    """autograded/<student>/<assignment>/: the notebooks, and the other files nbgrader copies."""
    from nbgrader.utils import find_all_files
    dest = course.autograded_dir(result.student)
    dest.mkdir(parents=True, exist_ok=True)
    for base in (course.submission_dir(result.student), Path(course.source_dir)):
        if not base.is_dir():
            continue
        for path in find_all_files(str(base), course.ignore + ["*.ipynb"]):
            if os.path.islink(path):
                continue
            _atomic_write(dest / os.path.relpath(path, base), Path(path).read_bytes(), course.permissions)
    for nb in result.notebooks:
        target = dest / f"{nb.name}.ipynb"
        if nb.notebook is None:
            if target.exists():
                target.unlink()
            continue
        _atomic_write(target, nb.notebook.encode(), course.permissions)


def _atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
    if mode is not None:
        os.chmod(tmp, mode)
    os.replace(tmp, path)


# ============================================================================ journal
@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """A digest of the whole grading library (graders/**/*.py) as this process loaded it.

    The gate keys its cached verdicts on it, and a cluster worker grades only when its
    digest equals the grading process's. Read once per process.
    """
    digest = hashlib.sha256()
    for path in sorted(GRADER_FILES.rglob("*.py")):
        digest.update(str(path.relative_to(GRADER_FILES)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def library_versions() -> dict:
    """The versions of the libraries a grade depends on (the references compute with them)."""
    from importlib import metadata
    versions = {}
    for name in ("sympy", "numpy", "torch", "nbgrader", "nbformat", "mpmath"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def fingerprint(course: Course, limits: Limits) -> str:
    """Everything a grade depends on besides the submission.

    The whole grading library's code (a problem imports shared code, and may import
    another), the versions of the libraries it computes with, the course's
    configuration, the instructor's cells and the limits. Any change regrades.
    """
    digest = hashlib.sha256()
    digest.update(code_digest().encode())
    digest.update(json.dumps(library_versions(), sort_keys=True).encode())
    config = Path(course.root) / "nbgrader_config.py"
    if config.exists():
        digest.update(config.read_bytes())
    snapshot = {name: {
        "cells": [vars(c) for c in nb.source_cells], "grades": [vars(c) for c in nb.grade_cells],
        "solutions": [vars(c) for c in nb.solution_cells], "tasks": [vars(c) for c in nb.task_cells],
        "kernelspec": nb.kernelspec} for name, nb in course.notebooks.items()}
    digest.update(json.dumps(snapshot, sort_keys=True, default=str).encode())
    course_settings = {k: getattr(course, k) for k in (
        "course_id", "ignore", "permissions", "begin_hidden", "end_hidden", "max_lines", "max_traceback",
        "exclude_overwriting", "excluded_students")}
    digest.update(json.dumps(course_settings, sort_keys=True, default=str).encode())
    digest.update(json.dumps(asdict(limits), sort_keys=True).encode())
    digest.update(json.dumps({"grade_seconds": GRADE_SECONDS, "grade_memory": GRADE_MEMORY_BYTES}).encode())
    return digest.hexdigest()


def submission_key(course: Course, student: str, base: str) -> str:
    digest = hashlib.sha256(base.encode())
    digest.update(student.encode())
    folder = course.submission_dir(student)
    for path in sorted(p for p in folder.rglob("*") if p.is_file() or p.is_symlink()):
        digest.update(str(path.relative_to(folder)).encode())
        digest.update(b"L" + os.readlink(path).encode() if path.is_symlink() else path.read_bytes())
    return digest.hexdigest()


class Journal:
    """One file per student: {"key", "state": "graded" | "recorded", "result"}; written atomically."""

    def __init__(self, course: Course):
        self.dir = Path(course.root) / JOURNAL / course.assignment

    def path(self, student):
        return self.dir / f"{hashlib.sha256(student.encode()).hexdigest()[:16]}.json"

    def get(self, student, key):
        try:
            entry = json.loads(self.path(student).read_text())
        except (OSError, ValueError):
            return None
        if entry.get("key") != key or entry.get("result", {}).get("student") != student:
            return None
        return entry

    def put(self, result: SubmissionResult, state: str) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        data = json.dumps({"key": result.key, "state": state, "result": result.to_json()})
        _atomic_write(self.path(result.student), data.encode())


# ============================================================================ the run
@dataclass
class Report:
    assignment: str
    results: dict = field(default_factory=dict)       # student -> SubmissionResult
    reused: int = 0                                    # submissions taken from the journal
    failed: dict = field(default_factory=dict)         # student -> why it could not be graded
    seconds: float = 0.0
    workers: int = 0
    isolation: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)

    def technical_zeros(self):
        for student, result in sorted(self.results.items()):
            for nb in result.notebooks:
                if nb.technical_zero:
                    yield student, nb

    def summary(self) -> str:
        graded = len(self.results)
        notebooks = sum(len(r.notebooks) for r in self.results.values())
        rate = (graded - self.reused) / self.seconds if self.seconds else 0.0
        lines = [f"autograde {self.assignment}: {graded} submissions ({notebooks} notebooks) in "
                 f"{self.seconds:.1f} s with {self.workers} workers"
                 + (f", {rate:.2f} students/s" if rate else "")
                 + (f"; {self.reused} unchanged since the last run" if self.reused else "")]
        zeros = list(self.technical_zeros())
        if zeros:
            lines.append(f"scored 0 for a non-mathematical reason ({len(zeros)}):")
            width = max(len(s) for s, _ in zeros)
            for student, nb in zeros:
                lines.append(f"  {student:<{width}}  {nb.name}: {'; '.join((nb.reasons + nb.notes)[:2])}")
        inside = [(student, nb) for student, result in sorted(self.results.items())
                  for nb in result.notebooks if nb.inside]
        if inside:
            cells = sum(len(nb.inside) for _, nb in inside)
            names = sorted({nb.name for _, nb in inside})
            lines.append(f"judged inside the student's process, as plain nbgrader judges them: {cells} test "
                         f"cell(s) with no checks registered in graders.problems ({', '.join(names)[:200]}); "
                         "the student's code could have changed their outcome")
        for student, why in sorted(self.failed.items()):
            lines.append(f"NOT GRADED {student}: {why}")
        layers = self.layers_in_effect()
        if layers:
            lines.append(f"isolation in effect: {layers}")
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def layers_in_effect(self) -> str:
        """Every isolation layer one sandbox had in force, from the monitor's trusted account
        (namespaces, uid, seccomp, control group, rlimits), and those that were not."""
        for result in self.results.values():
            for nb in result.notebooks:
                monitor, sandbox = nb.layers.get("monitor") or {}, nb.layers.get("sandbox") or {}
                if not monitor and not sandbox:
                    continue
                layers = {**sandbox, **monitor}   # the monitor's copy wins: it was sent before student code
                names = [name.replace("_", " ") for name in
                         ("pid_namespace", "mount_namespace", "network_namespace", "ipc_namespace",
                          "uts_namespace", "pivot_root", "read_only_root", "no_new_privs")
                         if layers.get(name) is True]
                uid = layers.get("uid")
                if isinstance(uid, int) and not isinstance(uid, bool):
                    names.append(f"uid {uid}" + (" (root!)" if uid == 0 else ""))
                if layers.get("seccomp") is True:
                    names.append("seccomp allowlist")
                group = layers.get("control_group")
                if group:
                    names.append(f"control group ({group})" if isinstance(group, str) else "control group")
                if layers.get("rlimits") is True:
                    names.append("rlimits")
                if layers.get("subreaper"):
                    names.append("subreaper sweep")
                missing = sorted(key[:-len("_error")].replace("_", " ") for key in layers if key.endswith("_error"))
                if missing:
                    names.append("NOT in force (degraded mode): " + ", ".join(missing))
                return ", ".join(names)
        return ""


_WORKER = {}


def _init_worker(course, limits, close_fds):
    for fd in close_fds:
        try:
            os.close(fd)
        except OSError:
            pass
    _WORKER.update(course=course, limits=limits)


def _grade_task(request):
    student, socket_path, key = request
    course = _WORKER["course"]
    warm_references(course, student)
    try:
        return "ok", grade_submission(course, student, socket_path, _WORKER["limits"], key)
    except SandboxUnavailable as exc:
        return "infra", str(exc)


def isolation_warnings(zygote: Zygote) -> list[str]:
    probe = zygote.isolation
    warnings = []
    degraded = getattr(zygote, "allow_degraded", False)
    for layer, what in (("seccomp", "the seccomp allowlist"), ("control_group", "the per-notebook control group")):
        if layer in probe and not probe[layer]:
            why = probe.get(f"{layer}_error") or probe.get(f"{layer}_detail") or "unknown"
            warnings.append(f"{what} cannot be applied here ({why}): " +
                            ("notebooks run without it (degraded mode)" if degraded else
                             "every notebook will be reported NOT GRADED; chapter autograde --allow-degraded "
                             "runs them without it"))
    if probe.get("namespaces"):
        return warnings
    text = (f"namespaces are not available here ({probe.get('reason', 'unknown')}): student code runs "
            "WITHOUT filesystem, network and PID isolation; only rlimits, a private session, a private "
            "working directory and process sweeping apply")
    if os.geteuid() == 0 and not zygote.python_world_readable:
        text += ", and it keeps root's uid, since the Python installation is not readable by an " \
                "unprivileged user"
    if not degraded:
        text += " -- but degraded mode is off, so every notebook will be reported NOT GRADED " \
                "(chapter autograde --allow-degraded runs them anyway)"
    return warnings + [text + ". Run as root where unshare is permitted for full isolation."]


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


_SHARED = {}


def shared_zygote(isolate: bool = True) -> Zygote:
    """One warm zygote per grading process (the gate grades several assignments in a row)."""
    zygote = _SHARED.get(isolate)
    if zygote is None or not zygote.alive():
        zygote = _SHARED[isolate] = Zygote(isolate=isolate).start().wait_ready()
        import atexit
        atexit.register(zygote.close)
    return zygote


class Stopped(BaseException):
    """SIGTERM or SIGINT arrived: the run stops, cleanly, and the next one resumes."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


_STOP = {"critical": 0, "pending": None}


def _on_stop_signal(signum, frame):
    if _STOP["critical"]:
        _STOP["pending"] = signum      # finish recording this submission first
        return
    raise Stopped(signum)


@contextlib.contextmanager
def _uninterrupted():
    """A stop signal waits until the block ends, so the journal and gradebook stay consistent."""
    _STOP["critical"] += 1
    try:
        yield
    finally:
        _STOP["critical"] -= 1
        if not _STOP["critical"] and _STOP["pending"] is not None:
            signum, _STOP["pending"] = _STOP["pending"], None
            raise Stopped(signum)


@contextlib.contextmanager
def _stop_signals():
    """Turn SIGTERM and SIGINT into `Stopped` while grading (main thread only)."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {sig: signal.signal(sig, _on_stop_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def autograde(root, assignment: str, **options) -> Report:
    """Grade every submission of `assignment` in the course at `root`; see the module docstring.

    With `scheduler` (a Dask scheduler's address), each submission is graded as a task on
    that cluster's workers (`graders.cluster`); the journal, the gradebook and the
    autograded folder are still written here, once per submission.

    SIGTERM or SIGINT stops the run: sandboxes and workers are killed, scratch folders
    removed, every submission already graded stays recorded, and SystemExit(128 + signal)
    is raised; the next run resumes where this one stopped.
    """
    import signal
    try:
        with _stop_signals():
            return _autograde(root, assignment, **options)
    except Stopped as stop:
        name = signal.Signals(stop.signum).name
        print(f"autograde {assignment}: stopped by {name}; what was graded is recorded, and the next "
              "run resumes from there", file=sys.stderr)
        raise SystemExit(128 + stop.signum) from None


def _autograde(root, assignment: str, workers: int | None = None, limits: Limits | None = None,
               force: bool = False, progress: bool = True, isolate: bool = True, zygote: Zygote | None = None,
               students: list | None = None, out=sys.stdout, scheduler: str | None = None,
               allow_degraded: bool = False) -> Report:
    started = time.monotonic()
    root = Path(root).resolve()
    config = load_config(root)
    course = load_course(root, assignment, config)
    limits = limits or limits_from(config)
    workers = workers or default_workers()
    report = Report(assignment, workers=workers)
    everyone = discover(course)
    if students is not None:
        everyone = [s for s in everyone if s in students]
    check_data_files(course, limits)
    base = fingerprint(course, limits)
    journal = Journal(course)
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import AssignLatePenalties
    late = AssignLatePenalties(config=config, log=_quiet)
    late.init_plugin()
    todo, keys = [], {}
    with Gradebook(course.db_url, course.course_id) as gb:
        for student in everyone:
            keys[student] = key = submission_key(course, student, base)
            entry = None if force else journal.get(student, key)
            if entry is None:
                todo.append(student)
                continue
            # graded before (perhaps by a run killed halfway): re-apply what is not yet recorded
            result = SubmissionResult.from_json(entry["result"])
            if entry["state"] != "recorded" or not _artifacts_present(gb, course, result):
                record(gb, course, result, late.plugin_inst)
                write_autograded(course, result)
                journal.put(result, "recorded")
            report.results[student] = result
            report.reused += 1
    if todo and scheduler:
        from .cluster import grade_on_cluster
        bar = _progress(len(everyone), report.reused, assignment, progress)
        try:
            grade_on_cluster(scheduler, course, limits, todo, keys, journal, late.plugin_inst, report, bar,
                             isolate=isolate, allow_degraded=allow_degraded)
        finally:
            bar.close()
    elif todo:
        own_zygote = zygote is None
        if own_zygote:
            zygote = Zygote(isolate=isolate, secrets=[root], allow_degraded=allow_degraded).start()
        from . import problems
        problems.ids()   # import every problem while the zygote warms up: the workers inherit them
        try:
            report.isolation = zygote.isolation
            report.warnings += isolation_warnings(zygote)
            for warning in report.warnings:
                print(f"warning: {warning}", file=sys.stderr)
            bar = _progress(len(everyone), report.reused, assignment, progress)
            try:
                _run_pool(course, limits, zygote, todo, keys, workers, journal, late.plugin_inst, report, bar)
            finally:
                bar.close()
        finally:
            if own_zygote:
                zygote.close()
    report.seconds = time.monotonic() - started
    if out is not None:
        print(report.summary(), file=out)
    return report


def _artifacts_present(gb, course, result) -> bool:
    from nbgrader.api import MissingEntry
    try:
        gb.find_submission(course.assignment, result.student)
    except MissingEntry:
        return False
    folder = course.autograded_dir(result.student)
    return all((folder / f"{nb.name}.ipynb").exists() for nb in result.notebooks if nb.notebook is not None)


def _progress(total, done, assignment, enabled):
    from tqdm import tqdm
    tqdm.monitor_interval = 0
    return tqdm(total=total, initial=done, unit="student", desc=f"autograde {assignment}",
                disable=not enabled, file=sys.stderr, dynamic_ncols=True, smoothing=0.1)


def accept(gb, course, journal, late, report, result: SubmissionResult) -> None:
    """Keep one graded submission: journal it, record it in the gradebook, write its notebooks."""
    with _uninterrupted():
        journal.put(result, "graded")
        record(gb, course, result, late)
        write_autograded(course, result)
        journal.put(result, "recorded")
        report.results[result.student] = result


def _run_pool(course, limits, zygote, todo, keys, workers, journal, late, report, bar):
    """Grade `todo` in `workers` forked processes, each submission under its task time limit.

    A submission past its limit has its worker killed and is reported, never retried (it
    would only stall again); a worker that dies, or a sandbox that cannot be reached, is an
    infrastructure fault, retried twice. A dying zygote is restarted between rounds.
    """
    from nbgrader.api import Gradebook
    from .local_pool import LocalPool
    attempts = {s: 0 for s in todo}
    queue = list(todo)
    seconds = task_seconds(course, limits)
    while queue:
        close = [zygote.process.stdin.fileno(), zygote.process.stdout.fileno()]
        retry = []
        pool = LocalPool(min(workers, len(queue)), _grade_task,
                         init=functools.partial(_init_worker, course, limits, close))
        with pool, Gradebook(course.db_url, course.course_id) as gb:
            socket_path = zygote.socket_path
            for student, kind, value, _took in pool.results(queue, seconds,
                                                           request=lambda s: (s, socket_path, keys[s])):
                if kind == "ok":
                    kind, value = value
                if kind == "ok":
                    accept(gb, course, journal, late, report, value)
                    bar.update(1)
                    continue
                if kind == "timeout":
                    report.failed[student] = value
                    bar.update(1)
                    continue
                attempts[student] += 1
                if attempts[student] < 3:
                    retry.append(student)
                else:
                    report.failed[student] = value
                    bar.update(1)
        if retry and not zygote.alive():
            zygote.close()
            zygote.start().wait_ready()
        queue = retry
