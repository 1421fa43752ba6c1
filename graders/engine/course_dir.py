"""The course as grading sees it: its config, the assignment's instructor notebooks, the limits, the submissions."""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace

import nbformat

from graders.engine import feedback as say
from graders.sandbox.zygote import Limits, names_later


MAX_NOTEBOOK_BYTES = 50 << 20
# a released notebook has tens of cells; reading, checking and writing back one of 600,000 short
# cells (42 MB) held a worker for half a minute, and one of 10,000 takes about a second
MAX_NOTEBOOK_CELLS = 10_000
# and its cells' text and code (outputs aside): a released notebook holds tens of thousands of
# characters. A page of formgrader or feedback is made in time linear in them (html_filters,
# course/pages.py), but mistune's own worst markdown takes about 15 s for 500,000 characters
MAX_NOTEBOOK_SOURCE = 1_000_000


@dataclass
class InstructorNotebook:
    """What the gradebook says about one notebook (a snapshot; no database needed after)."""
    name: str
    kernelspec: str | None
    source_cells: list            # SimpleNamespace(name, cell_type, locked, checksum, source), in order
    grade_cells: list             # SimpleNamespace(name, max_score, cell_type)
    solution_cells: list          # SimpleNamespace(name)
    task_cells: list              # SimpleNamespace(name, max_score)
    later: bool = False           # its released code names torch: graded after the others (grade_submission)

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
    grades_only: bool = False     # the gate's runs: figures drawn, not rasterized; no mistakes kept for later
    time_limits: dict = field(default_factory=dict)   # name -> the notebook's CPU seconds (time_limits.py)

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


def exchange_root(root: Path, config=None) -> Path:
    """The exchange the course at `root` releases into and collects from (nbgrader's default
    when its config names none)."""
    config = config if config is not None else load_config(Path(root))
    return Path(config.Exchange.get("root", "/srv/nbgrader/exchange"))


def course_directory(root: Path, config=None):
    """nbgrader's CourseDirectory of the course at `root`, as its nbgrader_config.py says (the
    folder itself is the course's root unless the config names another)."""
    from nbgrader.coursedir import CourseDirectory
    config = config if config is not None else load_config(Path(root))
    coursedir = CourseDirectory(config=config)
    if not config.CourseDirectory.get("root"):
        coursedir.root = str(root)
    return coursedir


def load_course(root: Path, assignment: str, config=None) -> Course:
    from nbgrader.api import Gradebook, MissingEntry
    root = Path(root).resolve()
    config = config if config is not None else load_config(root)
    coursedir = course_directory(root, config)
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
            released = _released(coursedir, assignment, nb.name)
            cells = _in_release_order(released, cells)
            notebooks[nb.name] = InstructorNotebook(
                name=nb.name, kernelspec=nb.kernelspec, source_cells=cells,
                grade_cells=[SimpleNamespace(name=c.name, max_score=float(c.max_score), cell_type=c.cell_type)
                             for c in nb.grade_cells],
                solution_cells=[SimpleNamespace(name=c.name) for c in nb.solution_cells],
                task_cells=[SimpleNamespace(name=c.name, max_score=float(c.max_score)) for c in nb.task_cells],
                later=released is not None and names_later(c.source for c in released.cells if c.cell_type == "code"))
    limit_output = config.LimitOutput
    hidden = config.ClearHiddenTests
    from graders.engine.time_limits import TimePolicy, notebook_limits
    time_limits = notebook_limits(root, assignment, notebooks, TimePolicy.from_config(config))
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
        time_limits=time_limits,
    )


def _registered_from_release(gb, root: Path, coursedir, assignment: str):
    """The assignment, registered from the committed release/ when the gradebook lacks it."""
    from graders.engine.scratch import register_release
    if not (Path(coursedir.format_path(coursedir.release_directory, ".", assignment))).is_dir():
        raise SystemExit(f"no assignment {assignment!r} in the gradebook and no release of it; "
                         f"run `nbgrader generate_assignment {assignment}` first")
    gb.db.rollback()   # end this session's read, so that nbgrader's process may write
    print(register_release(root, assignment, coursedir.db_url, coursedir.course_id), flush=True)
    return gb.find_assignment(assignment)


def _released(coursedir, assignment, notebook):
    """The released notebook (the instructor's own file), or None when there is none."""
    path = Path(coursedir.format_path(coursedir.release_directory, ".", assignment)) / f"{notebook}.ipynb"
    try:
        return nbformat.read(path, as_version=4)
    except Exception:  # noqa: BLE001 - no release folder
        return None


def _in_release_order(released, cells):
    """Source cells in the order the `released` notebook has them (the gradebook keeps no order)."""
    if released is None:
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
            notes.append(say.file_left_out(rel, size))
            continue
        kept[rel] = path
        total += size
    return kept, notes


def discover(course: Course) -> list[str]:
    """Student ids with a submission of the assignment (directory names, never notebook content).

    Every name counts, a dot-named one included (a glob would skip it in silence)."""
    template = Path(course.submitted.format(student="\0"))
    parts = template.parts
    at = next(i for i, part in enumerate(parts) if "\0" in part)
    head, rest = Path(*parts[:at]), parts[at + 1:]
    prefix, suffix = parts[at].split("\0", 1)
    students = []
    try:
        names = sorted(os.listdir(head))
    except OSError:
        return students
    for name in names:
        if not (name.startswith(prefix) and name.endswith(suffix)) or len(name) < len(prefix) + len(suffix):
            continue
        student = name[len(prefix):len(name) - len(suffix)]
        path = head / name / Path(*rest) if rest else head / name
        if student and student not in course.excluded_students and path.is_dir() and not path.is_symlink() \
                and not (head / name).is_symlink():
            students.append(student)
    return students
