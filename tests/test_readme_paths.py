"""The README's instructor and student paths, run from a fresh copy of the course as written.

- The README read: its sections, steps, code blocks and commands, and the student's machine set up
  as "A student" says (`student_setup`). tests/test_readme_browser.py runs the instructor's and
  the student's paths with them, from a fresh copy, as written.
- The quick start's status block is what `chapter status` prints for the chapters as they are.
- The course is found from where the instructor stands, not from where `graders` lives.
- The verdict cache of a copied course is used by the copy.
- Every autograded notebook says, under its title, what Validate does not check.
- Plain `nbgrader autograde` + `generate_feedback` on an erroring submission show no hidden test.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from graders.course import contract, gate
from tests.conftest import copy_course
from graders.engine.course_dir import exchange_root

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
COURSE_ID = "training-at-scale"


# --- the README, read --------------------------------------------------------------------

def readme_section(title: str) -> str:
    """The text of one `### title` section of README.md."""
    text = (REPO / "README.md").read_text()
    start = text.index(f"### {title}\n")
    end = text.find("\n### ", start + 1)
    return text[start:end if end > 0 else None]


def steps(section: str) -> dict[int, str]:
    """A section's numbered steps: number -> the step's text, up to the next step."""
    found = list(re.finditer(r"^(\d+)\. ", section, re.MULTILINE))
    ends = [m.start() for m in found[1:]]
    if found:  # the last step ends at the next heading, not with the section's subsections
        heading = re.search(r"^#", section[found[-1].start():], re.MULTILINE)
        ends.append(found[-1].start() + heading.start() if heading else len(section))
    return {int(m[1]): section[m.start():end] for m, end in zip(found, ends)}


def blocks(text: str, language: str) -> list[str]:
    """The fenced code blocks of one language in `text`, dedented."""
    found = re.findall(rf"^( *)```{language}\n(.*?)^ *```", text, re.MULTILINE | re.DOTALL)
    return ["\n".join(line[len(indent):] for line in body.splitlines()) for indent, body in found]


def commands(text: str) -> list[str]:
    """The lines of the shell blocks in `text`, in order."""
    return [line for block in blocks(text, "sh") for line in block.splitlines() if line.strip()]


def fresh_course(into: Path) -> Path:
    """A fresh copy of the course holding w1-memory (config, chapters, source, release, solutions)."""
    into.mkdir(parents=True)
    return copy_course(into.resolve(), ["worked/w1-memory"])


def clean_env(**extra) -> dict:
    """This machine's environment without the course's or the hub's variables, the venv first."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("CHAPTER_ROOT", "CHAPTER_DB_URL", "JUPYTERHUB_USER", "JUPYTER_CONFIG_DIR")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONWARNINGS"] = "ignore"
    env.update(extra)
    return env


def run(line: str, cwd: Path, env: dict, timeout: int = 900) -> str:
    """One README command line, as a shell runs it; its output, after checking it succeeded."""
    done = subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    out = done.stdout + done.stderr
    assert done.returncode == 0, f"`{line}` in {cwd} failed:\n{out[-3000:]}"
    return out


def student_setup(course: Path, home: Path) -> tuple[dict, Path]:
    """The student's machine as README's "A student" steps 1-3 set it up; (env, the work folder)."""
    section = steps(readme_section("A student"))
    config = blocks(section[1], "python")
    assert len(config) == 1, "step 1 gives one nbgrader config"
    assert "/path/to/the/exchange" in config[0]
    (home / ".jupyter").mkdir(parents=True, exist_ok=True)
    (home / ".jupyter" / "nbgrader_config.py").write_text(
        config[0].replace("/path/to/the/exchange", str(exchange_root(course))))
    env = clean_env(HOME=str(home))
    for script in blocks(section[2], "sh"):
        run("set -e\n" + script, home, env)
    start = commands(section[3])
    assert len(start) == 1 and start[0].endswith("jupyter lab"), start
    for assignment in shlex.split(start[0])[:-2]:   # the VAR=value words before `jupyter lab`
        name, value = assignment.split("=", 1)
        env[name] = value
    work = home / "work"
    work.mkdir(exist_ok=True)
    return env, work


@pytest.mark.slow
def test_the_quick_starts_status_is_the_chapters_own():
    """The status block README's quick start shows is what `chapter status` prints for every chapter
    of chapters.toml when each item counts (the gate, CI's first step, holds every published
    chapter to that): levels, states, counts of items, concepts, flashcards and reading."""
    from graders.course.status import chapter_status, render
    text = (REPO / "README.md").read_text()
    after = text.index("followed by each student's feedback page")
    shown = blocks(text[after:], "")[0].strip()
    chapters = contract.load_chapters(REPO)
    assert [c.id for c in chapters if c.state != "published"] == [], "a draft's status depends on its gate"
    printed = []
    for chapter in chapters:
        reports = {nb.split("/")[-1]: gate.ItemReport(nb.split("/")[-1], nb, dict.fromkeys("ABCD", True))
                   for nb in chapter.notebooks}
        printed.append(render(chapter_status(REPO, chapter, reports), REPO))
    assert shown == "\n\n".join(printed)


def test_a_release_that_differs_from_source_is_not_registered(tmp_path):
    """`chapter autograde` registers the committed release only when nbgrader, run on source/,
    makes the same release; otherwise it refuses, names the file and records nothing."""
    course = copy_course(tmp_path, ["worked/w1-memory"])
    released = course / "release" / "worked" / "w1-memory.ipynb"
    nb = nbformat.read(released, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("released by hand"))
    nbformat.write(nb, released)
    (course / "submitted" / "bob" / "worked").mkdir(parents=True)
    shutil.copy(released, course / "submitted" / "bob" / "worked" / "w1-memory.ipynb")
    done = subprocess.run([str(BIN / "chapter"), "autograde", "worked", "--no-progress"], cwd=course,
                          env=clean_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode != 0
    assert "release/worked/w1-memory.ipynb is out of date with source/" in done.stdout + done.stderr
    from nbgrader.api import Gradebook, MissingEntry
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", COURSE_ID) as gb:
        with pytest.raises(MissingEntry):
            gb.find_assignment("worked")


# --- where the course is --------------------------------------------------------------------

def test_the_course_is_found_from_where_the_instructor_stands(tmp_path, monkeypatch):
    """The nearest folder above the current one holding both course files; an explicit --course
    wins over it; $CHAPTER_ROOT only where neither applies; a clear error when nothing is found."""
    copy, other = fresh_course(tmp_path / "copy"), fresh_course(tmp_path / "other")
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    monkeypatch.setenv("CHAPTER_ROOT", str(other))
    monkeypatch.chdir(copy / "source" / "worked")
    assert contract.course_root() == copy.resolve()              # the walk, over $CHAPTER_ROOT
    assert contract.course_root(str(other)) == other.resolve()   # an explicit --course, over the walk
    monkeypatch.chdir(nowhere)
    assert contract.course_root() == other.resolve()             # $CHAPTER_ROOT, where no walk finds one
    monkeypatch.delenv("CHAPTER_ROOT")
    with pytest.raises(contract.CourseNotFound, match="nbgrader_config.py and chapters.toml"):
        contract.course_root()
    with pytest.raises(contract.CourseNotFound, match="--course"):
        contract.course_root(str(nowhere))
    shutil.copy(REPO / "nbgrader_config.py", nowhere)        # a grading-only course, as `--course` may name
    assert contract.course_root(str(nowhere)) == nowhere.resolve()


def test_an_installed_grading_library_works_on_the_course_it_stands_in(tmp_path):
    """With `graders` installed elsewhere (as a non-editable install puts it), `chapter` run in a
    copy of the course reports that copy; run outside any course, it says what it looked for."""
    site = tmp_path / "site-packages"
    shutil.copytree(REPO / "graders", site / "graders", ignore=shutil.ignore_patterns("__pycache__"))
    copy = fresh_course(tmp_path / "copy")
    where = "from graders.course import contract; print(contract.course_root())"
    env = clean_env(PYTHONPATH=str(site))
    done = subprocess.run([sys.executable, "-c", where], cwd=copy / "source", env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(copy.resolve())
    lost = subprocess.run([sys.executable, "-m", "graders.cli", "status"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert lost.returncode == 2
    assert "no folder holding nbgrader_config.py and chapters.toml" in lost.stderr, lost.stderr


# --- the verdict cache, copied ---------------------------------------------------------------

@pytest.mark.slow
def test_a_copied_course_uses_its_copied_verdict_cache(tmp_path, monkeypatch, capsys):
    """`chapter gate` and `chapter status` in a copy of a course, made elsewhere with its .chapter/,
    run neither an item's gate nor the in-sync build check: the cache is keyed by content."""
    original = fresh_course(tmp_path / "original")
    from graders.cli import main
    monkeypatch.delenv("CHAPTER_ROOT", raising=False)
    monkeypatch.chdir(original)
    assert main(["gate"]) == 0, capsys.readouterr().out              # warms the original's cache
    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(original, copy)
    shutil.rmtree(original)                                          # nothing left to fall back on
    runs = []

    def counted(what):
        def ran(root, *args, **kwargs):
            runs.append((what, str(root)))
            raise AssertionError(f"{what} ran in {root}")
        return ran

    monkeypatch.setattr(gate, "evaluate", counted("an item's gate"))
    monkeypatch.setattr(gate, "build", counted("the build check"))
    monkeypatch.chdir(copy / "source")
    assert main(["gate"]) == 0, capsys.readouterr().out
    capsys.readouterr()
    assert main(["status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["chapters"][0]["strands"]["mathematics"]["have"] == 1
    assert runs == []


# --- what Validate says, and what the notebook says beside it ---------------------------------

def test_every_autograded_notebook_says_what_validate_does_not_check():
    """Under the title of every source and released notebook with autograded tests: the note that
    Validate's "Success!" covers the form only, and where to check the numbers."""
    from graders.course.build import VALIDATE_NOTE
    assert "Success! Your notebook passes all the tests." in VALIDATE_NOTE
    assert "where your\n> course offers instant feedback" in VALIDATE_NOTE.replace("Where", "where")
    checked = 0
    for folder in ("source", "release"):
        for path in sorted((REPO / folder).glob("*/*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            if not any(c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade") for c in nb.cells):
                continue
            assert nb.cells[1].get("id") == "validate-note", f"{path.relative_to(REPO)}: no note under the title"
            assert nb.cells[1].source == VALIDATE_NOTE
            checked += 1
    assert checked >= 2 * 30


# --- plain nbgrader: no hidden test in a traceback -----------------------------------------------

def test_a_traceback_loses_the_hidden_lines_and_keeps_the_visible_ones():
    """HiddenTestsOutOfTracebacks drops the hidden region's lines (and grader frames) only."""
    from graders.engine.nbgrader_hooks import GRADERS, HiddenTestsOutOfTracebacks
    source = ("assert x > 0, 'x should be positive'\n### BEGIN HIDDEN TESTS\n"
              "from graders.notebook import judge\njudge('w1-memory', 'check_expr', globals())\n"
              "### END HIDDEN TESTS")
    frame = ("\x1b[0;31mNameError\x1b[0m  Traceback\nCell In[4], line 1\n"
             "\x1b[0;32m----> 1\x1b[0m assert x > 0, 'x should be positive'\n"
             "\x1b[0;32m      2\x1b[0m ### BEGIN HIDDEN TESTS\n"
             "\x1b[0;32m      3\x1b[0m from graders.notebook import judge")
    grader_frame = f"File {GRADERS}notebook.py:12, in judge(item, check, names)"
    cell = nbformat.v4.new_code_cell(source, metadata={"nbgrader": {"grade": True, "grade_id": "t"}})
    cell.outputs = [nbformat.v4.new_output("error", ename="NameError", evalue="name 'x' is not defined",
                                           traceback=[frame, grader_frame, "NameError: name 'x' is not defined"])]
    cell, _ = HiddenTestsOutOfTracebacks().preprocess_cell(cell, {}, 0)
    shown = "\n".join(cell.outputs[0].traceback)
    assert "HIDDEN" not in shown and "judge" not in shown and "graders" not in shown
    assert "assert x > 0" in shown and "NameError: name 'x' is not defined" in shown
    assert cell.source == source


@pytest.mark.slow
def test_plain_nbgrader_feedback_on_an_erroring_submission_shows_no_hidden_test(tmp_path):
    """Real `nbgrader autograde` and `nbgrader generate_feedback` on a blank w1-memory, whose test
    cells raise: neither the autograded notebook's tracebacks nor the feedback quote a hidden test."""
    course = copy_course(tmp_path, ["worked/w1-memory"])
    env = clean_env()
    run("nbgrader generate_assignment worked --force", course, env)   # setting up, not the README path
    (course / "submitted" / "bob" / "worked").mkdir(parents=True)
    shutil.copy(course / "release" / "worked" / "w1-memory.ipynb", course / "submitted" / "bob" / "worked")
    run("nbgrader autograde worked", course, env)
    run("nbgrader generate_feedback worked", course, env)
    graded = nbformat.read(course / "autograded" / "bob" / "worked" / "w1-memory.ipynb", as_version=4)
    tracebacks = ["\n".join(o.traceback) for c in graded.cells if c.metadata.get("nbgrader", {}).get("grade")
                  for o in c.get("outputs", []) if o.output_type == "error"]
    assert tracebacks, "the blank submission's test cells raised nothing"
    assert any("per_device_expr" in t for t in tracebacks)          # the visible failing line stays
    feedback = (course / "feedback" / "bob" / "worked" / "w1-memory.html").read_text()
    for shown in tracebacks + [feedback]:
        for hidden in ("BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "judge(", "graders.notebook"):
            assert hidden not in shown, f"{hidden!r} is shown"
