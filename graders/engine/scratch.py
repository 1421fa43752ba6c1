"""Scratch courses: a copy of a course's config and source, nbgrader run in it, and a committed
release registered into a gradebook that lacks it (`release/` is committed, so a plain
`nbgrader generate_assignment` skips it).
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from graders.sandbox.tempdirs import owned_scratch


def nbgrader(*args: str, cwd: Path, quiet: bool = True) -> subprocess.CompletedProcess:
    """Run one nbgrader command in the course directory `cwd`."""
    bin_dir = Path(sys.executable).parent
    result = subprocess.run([str(bin_dir / "nbgrader"), *args], cwd=cwd, env=nbgrader_env(),
                            capture_output=True, text=True)
    return checked(result, args)


def nbgrader_env() -> dict:
    """This process's environment, with this Python's scripts first on PATH (nbgrader's kernels)."""
    bin_dir = Path(sys.executable).parent
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


def checked(result: subprocess.CompletedProcess, args) -> subprocess.CompletedProcess:
    """`result`, or a RuntimeError with the end of its output if the command failed."""
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-15:])
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{tail}")
    return result


def assignments(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "source").iterdir() if p.is_dir() and not p.name.startswith("."))


def copy_config(root: Path, into: Path) -> None:
    """The files nbgrader's converters read in a course, besides its notebooks: nbgrader_config.py,
    and deadlines.toml when there is one (the release's due-date header, the late penalties)."""
    shutil.copy(root / "nbgrader_config.py", into / "nbgrader_config.py")
    if (root / "deadlines.toml").exists():
        shutil.copy(root / "deadlines.toml", into / "deadlines.toml")


def make_course(root: Path, into: Path, only: list[str] | None = None) -> Path:
    """A scratch copy of the course (config and source) in `into`, with its own gradebook."""
    into.mkdir(parents=True, exist_ok=True)
    copy_config(root, into)
    for assignment in only or assignments(root):
        shutil.copytree(root / "source" / assignment, into / "source" / assignment,
                        ignore=shutil.ignore_patterns("*.pct.py", ".ipynb_checkpoints", "__pycache__"))
    return into


def differences(made: Path, committed: Path, label: str) -> list[str]:
    made_files = {p.relative_to(made) for p in made.rglob("*") if p.is_file()} if made.exists() else set()
    kept = {p.relative_to(committed) for p in committed.rglob("*") if p.is_file()} if committed.exists() else set()
    reasons = []
    for rel in sorted(made_files | kept):
        if rel not in kept:
            reasons.append(f"{label}/{rel} is missing: run `chapter build`")
        elif rel not in made_files:
            reasons.append(f"{label}/{rel} has no source: run `chapter build`")
        elif (made / rel).read_bytes() != (committed / rel).read_bytes():
            reasons.append(f"{label}/{rel} is out of date with source/: run `chapter build`")
    return reasons


CONVERTERS = {"generate_assignment": "GenerateAssignment", "generate_solution": "GenerateSolution"}


def nbgrader_inprocess(command: str, assignment: str, course: Path, notebook: str = "*",
                       files_only: bool = False) -> None:
    """`nbgrader <command> <assignment> --force [--notebook <notebook>]` run in `course`, in this process.

    The configuration is the one nbgrader's command line loads there: `nbgrader_config.py` from
    Jupyter's config path, then the course's own file (which wins), so every setting of the
    course (its solution folder, ClearHiddenTests, the preprocessors) applies as it would.
    The converter is nbgrader's own, started the way `NbGraderAPI.generate_assignment` starts it.
    With `files_only` (the drift check and `chapter build`, which read the generated files and throw
    the scratch gradebook away), `SaveCells` is left out: it only records the cells in the gradebook, and
    changes nothing in the notebook (a third of the drift check's time).
    """
    import nbgrader.converters as converters
    from nbgrader.preprocessors import SaveCells
    from nbgrader.utils import capture_log

    coursedir = nbgrader_coursedir(course)
    coursedir.assignment_id, coursedir.notebook_id = assignment, notebook
    converter = getattr(converters, CONVERTERS[command])(coursedir=coursedir, parent=coursedir.parent)
    converter.force = True
    if files_only:
        converter.preprocessors = [p for p in converter.preprocessors   # a class, or its name in the config
                                   if p is not SaveCells and p != "nbgrader.preprocessors.SaveCells"]
    open_gradebook(coursedir.db_url, coursedir.course_id)
    result = capture_log(converter)
    if not result["success"]:
        tail = "\n".join((result.get("log", "") + result.get("error", "")).splitlines()[-15:])
        raise RuntimeError(f"nbgrader {command} {assignment} --notebook {notebook} failed:\n{tail}")


@functools.lru_cache(maxsize=1)
def alembic_head() -> str:
    """The revision `alembic heads` prints first for nbgrader's migrations, read with alembic's
    own library in this process."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import _temp_alembic_ini
    with _temp_alembic_ini("sqlite:////tmp/gradebook.db") as ini:
        return ScriptDirectory.from_config(Config(ini)).get_current_head()


def alembic_head_in_process():
    """While it lasts, nbgrader stamps a new gradebook with `alembic_head()`, read in this process,
    instead of starting `alembic heads` for it (a new interpreter that costs seconds on a busy machine)."""
    from unittest import mock
    return mock.patch("nbgrader.api.get_alembic_version", alembic_head)


def open_gradebook(db_url: str, course_id: str) -> None:
    """Create the gradebook if it does not exist, as nbgrader's Gradebook does, with the schema
    revision read in this process."""
    from nbgrader.api import Gradebook
    with alembic_head_in_process():
        Gradebook(db_url, course_id).close()


def nbgrader_coursedir(course: Path):
    """nbgrader's CourseDirectory for `course`, under an application holding the configuration
    nbgrader's command line loads when run there (Jupyter's config path, then the course's file)."""
    import logging

    from nbgrader.apps.baseapp import NbGrader
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Application
    app = NbGrader(log_level=logging.ERROR)
    Application.load_config_file(app, app.config_file_name, path=[str(course), *app.config_file_paths])
    coursedir = CourseDirectory(parent=app)
    if "root" not in app.config.CourseDirectory:   # the command line's default: the folder it runs in
        coursedir.root = str(course)
    return coursedir


def register_release(root: Path, assignment: str, db_url: str, course_id: str) -> str:
    """Put a committed release's assignment into a gradebook that lacks it; the line that says so.

    `release/` is committed, so `nbgrader generate_assignment` skips it and records nothing.
    nbgrader's own GenerateAssignment converter runs instead (in this process, as the command
    runs it: `nbgrader_inprocess`) in a scratch copy of the course's config and source, writing
    the real gradebook; its release must equal the committed one byte for
    byte, or the assignment is taken out again and the grading refused, naming what differs.
    """
    from nbgrader.api import Gradebook
    with owned_scratch("chapter-register-") as tmp:
        course = make_course(root, Path(tmp), only=[assignment])
        with (course / "nbgrader_config.py").open("a") as config:   # the real gradebook, kept out of argv
            config.write(f"\nc.CourseDirectory.db_url = {db_url!r}\n")
        nbgrader_inprocess("generate_assignment", assignment, course)
        drift = differences(course / "release" / assignment, root / "release" / assignment,
                             f"release/{assignment}")
    if drift:
        with Gradebook(db_url, course_id) as gb:
            gb.remove_assignment(assignment)
        raise SystemExit(f"no assignment {assignment!r} in the gradebook, and the committed release does "
                         f"not match source/{assignment}:\n  " + "\n  ".join(drift))
    return (f"gradebook: registered {assignment!r} from source/{assignment} "
            f"(its release matches the committed release/{assignment})")
