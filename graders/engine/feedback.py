"""What the engine says to a student (and, for NOT GRADED, to the instructor), in one place.

Every sentence a graded notebook or a feedback page shows about how a submission was graded
(its cells' feedback, the autograder's notes, chapter serve's refusals), and the reason the run's
summary gives for a student NOT GRADED, is written here, as a constant or a function of what
varies, so the wording can be read, and changed, side by side. The mathematics' own feedback
(what a check found) is each problem's, through `graders.feedback`; these are the engine's
sentences around it. The wording is the one students and instructors have seen so far (tests
look for it).
"""
from __future__ import annotations

import html

from graders.engine.shared import some
from graders.unicode import shown_name
# the library's sentence: the hidden tests print it too, under plain nbgrader (graders.notebook)
from graders.feedback import cell_waits, undecided_waits  # noqa: F401

# ------------------------------------------------------------------ a test cell's lines
CELL_NOT_GRADABLE = "✗ this cell could not be graded; your instructor has been told"
ANSWERS_NEVER_RETURNED = "✗ reading your answers took too long (a function or object that does not return)"
NOT_REACHED = "the notebook did not reach this cell"
# instant feedback on a failed check: no direction, length or value (graders.giveaway)
INSTANT_FAIL = "does not match your variant."
NBGRADER_WAY = ("judged as nbgrader judges it: the cell ran whole, hidden tests included, inside the "
                "notebook's own process (it has no checks outside the sandbox)")


def not_graded(reason: str) -> str:
    """A cell scored 0 without being graded, and why."""
    return f"✗ not graded: {reason}"


def cell_score(variant: str, score: float, points: float) -> str:
    """The first line of a graded test cell's feedback."""
    return f"Variant {variant}: {score:g} of {points:g} points in this cell"


def checks_raised(ename: str, points: float) -> str:
    """The cell's checks raised before any answer could be read. `ename` is the sandbox's word,
    the name of a class the student's code may have made: shown, never printed raw."""
    return f"✗ the checks in this cell raised {shown_name(ename)}, so it scores 0 of {points:g}"


def visible_checks_raised(ename: str) -> str:
    """The visible checks stopped on one answer; the others are graded all the same."""
    return f"✗ the visible checks in this cell raised {shown_name(ename)}; each answer below is graded on its own"


def grading_took_too_long(seconds: float) -> str:
    return (f"✗ grading your answers took longer than {seconds:g} s (an answer too large "
            "or too complicated to check), so this cell scores 0; your instructor has been told")


def judged_inside(score: float, points: float) -> str:
    """A test cell with no checks outside the sandbox, judged by its outputs as nbgrader does."""
    mark = "✓" if score == points else "✗"
    return f"{mark} {score:g} of {points:g} points in this cell, {NBGRADER_WAY}"


def not_graded_yet(cell: int, why: str) -> str:
    """A cell that may have lost its points to the sandbox: a person grades it (graders.engine.blame)."""
    return (f"? not graded yet: cell {cell} failed in the grading sandbox ({why}), which a Jupyter kernel "
            "may not have done; your instructor will grade this cell")


# ------------------------------------------------------------------ a notebook
# ---- why a notebook or a cell lost its points for a reason that is not mathematics (the
# summary's and the feedback's "reasons")
def grader_failed(step: str, exc: BaseException) -> str:
    """The grader itself failed to `step` ("prepare", "grade") the notebook."""
    return f"the grader could not {step} this notebook ({exc!r:.200})"


def waits_for_a_person(cell: int, why: str) -> str:
    return f"cell {cell}: {why}; its test cells from there wait in formgrader"


def undecided_for_a_person(cell_name: str, keys) -> str:
    return (f"{cell_name}: {some(list(keys))} neither proved equal to the reference nor refuted "
            "in the grader's time; the cell waits in formgrader")


def cell_interrupted(cell: int) -> str:
    return f"cell {cell} ran past its time limit and was interrupted"


def cell_raised(cell: int, ename: str) -> str:
    return f"cell {cell} raised {shown_name(ename[:80])}"


def stopped(status: str, where: str, detail: str) -> str:
    """Why a notebook's run ended before its last cell; `where` is " (in cell N)" or empty."""
    return {
        "timeout": f"the notebook was stopped{where}: {detail or 'it ran past its time limit'}",
        "flood": f"the notebook was stopped{where}: {detail or 'it wrote too much output'}",
        "crashed": f"the notebook stopped{where}: {detail or 'the grading process died'}",
    }.get(status, f"the notebook could not be run{where}: {detail or status}")


def ended_its_own_process(where: str) -> str:
    return f"the notebook ended its own process{where} (os._exit or similar), so later cells never ran"


REPORTING_TAMPERED = ("the notebook interfered with the sandbox's reporting (for instance by patching "
                      "builtins), so its answers could not be read back")


def no_variant(variant: str) -> str:
    return f"this problem has no variant {variant} to grade"


# why a hidden-test cell's answers could not be judged, by kind; `detail` fills in the rest
CELL_REASONS = {
    "checks raised": "the checks in cell {name!r} raised {detail}",
    "answers timed out": "reading the answers of cell {name!r} timed out",
    "grading too long": "grading cell {name!r} took longer than {detail}",
    "not gradable": "cell {name!r} could not be graded ({detail})",
}


def cell_reason(kind: str, name: str, detail: str = "") -> str:
    return CELL_REASONS[kind].format(name=name, detail=shown_name(detail))


def graded_instead(found: str, name: str) -> str:
    return f"graded from `{found}`, handed in instead of `{name}.ipynb`"


NOT_SUBMITTED = "the notebook was not submitted"


def submitted_under_other_names(name: str, shown: str, several: bool) -> str:
    """`shown`: the submission's notebooks, listed; `several`: more than one could be this one."""
    return (f"{NOT_SUBMITTED} under its name `{name}.ipynb`; the submission holds {shown}"
            + (" (more than one could be it: hand in one, named as released)" if several else ""))


def another_notebook(name: str, other: str, assignment: str) -> str:
    where = f" (assignment {assignment})" if assignment else ""
    return (f"this is not {name}: it is the notebook of {other}{where}, handed in as `{name}.ipynb`, "
            "so it was not graded")


def processes_left(count: int) -> str:
    return f"{count} process(es) the notebook started were still running at the end and were killed"


def broken_notebook(reason: str) -> str:
    """The markdown cell heading a notebook that could not be graded at all."""
    return f"**This notebook could not be graded:** {reason}. Every cell scores 0."


def broken_feedback(reason: str) -> str:
    return f"✗ {reason}"


def autograder_notes(notes: list) -> str:
    """The markdown cell listing what the grader repaired or noticed in a notebook."""
    return "**Autograder notes:**\n\n" + "\n".join(f"- {n}" for n in notes)


# The notes themselves: what grading repaired in a submission, or left out of it, before grading
# it (graders.engine.sanitize, course_dir.fit_files). Each names a cell by its nbgrader id.
MALFORMED_CELL_DROPPED = "a malformed cell was dropped"
MALFORMED_METADATA = "a cell with malformed nbgrader metadata is graded as ordinary code"


def points_restored(name: str) -> str:
    return f"the points of cell {name!r} had been changed; the original value was restored"


def metadata_restored(name: str) -> str:
    return f"the nbgrader metadata of cell {name!r} had been changed; it was restored"


def not_in_assignment(names: list[str]) -> str:
    if len(names) == 1:
        return f"the cell {names[0]!r} is not part of this assignment; it runs as ordinary code"
    return (f"the cells {some([repr(name) for name in names])} are not part of this assignment; "
            "they run as ordinary code")


def cell_put_back(name: str) -> str:
    return f"the cell {name!r} was missing from the submission; it was put back"


def cells_repeated(names: list[str]) -> str:
    return f"cells appear more than once ({some(names)}); only the last copy of each is graded"


def locked_cell_restored(name: str) -> str:
    return f"the locked cell {name!r} had been edited; the original was restored"


def cell_type_restored(name: str) -> str:
    return f"the type of cell {name!r} had been changed; it was restored"


def file_left_out(name: str, size: int) -> str:
    return (f"the submitted file {name!r} ({size / (1 << 20):.0f} MiB) was too large to give the notebook "
            "and was left out")


# Why a submitted notebook could not be read at all (graders.engine.snapshot): each begins "the "
NOT_A_FILE = "the submitted notebook is a link or not a regular file"
NOT_UTF8 = "the notebook is not UTF-8 text"
NESTED_TOO_DEEPLY = "the notebook's JSON is nested too deeply to be read (the file is damaged)"
NOT_JSON = "the notebook is not valid JSON (the file is damaged)"
NOT_A_NOTEBOOKS_SHAPE = "the notebook is JSON but does not have a notebook's shape"
NO_LIST_OF_CELLS = "the notebook has no list of cells"


def too_large(most_bytes: int) -> str:
    return f"the notebook is larger than {most_bytes >> 20} MB"


def too_many_cells(cells: int, most: int) -> str:
    return f"the notebook has {cells:,} cells, more than the {most:,} a notebook may have"


def too_much_text(characters: int, most: int) -> str:
    return f"the notebook's cells hold {characters:,} characters, more than the {most:,} a notebook may have"


def unreadable(ename: str) -> str:
    return f"the notebook could not be read as an nbgrader notebook ({ename})"


# What in the sandbox, not in the student's work, may have caused a cell's error
# (graders.engine.blame): the cells from there on wait for a person
SANDBOX_CAUSES = {
    "EPERM": "a system call the sandbox does not allow (EPERM)",
    "ENOSYS": "a system call the sandbox does not allow (ENOSYS)",
    "EROFS": "a write outside the notebook's folder, which the sandbox keeps read-only",
    "pty": "a pseudo-terminal, which the sandbox does not have",
}


def module_did_not_import(module: str, shipped: bool) -> str:
    if shipped:
        return f"the module {module!r}, which the assignment ships beside the notebook, did not import"
    return f"the installed module {module!r} did not import"


def could_not_be_recorded(exc: BaseException) -> str:
    """The NOT GRADED reason of a student whose grading could not be written to the gradebook."""
    return f"could not be recorded ({type(exc).__name__}: {exc})"[:300]


# ------------------------------------------------------------------ chapter serve's refusals
REFUSAL = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Not graded</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 2em auto; line-height: 1.5">
<h1 style="font-size: 1.4em">This submission of {assignment} was not graded</h1>
<p>{why}</p>
<p>Your earlier graded submission, if you have one, still stands.</p>
</body></html>
"""


def refusal_page(assignment: str, why: str) -> str:
    """The feedback page of a submission `chapter serve` did not grade (both texts escaped)."""
    return REFUSAL.format(assignment=html.escape(str(assignment)), why=html.escape(str(why)))


def forged(student: str) -> str:
    return (f"This submission names the student {student}, but another login submitted it. "
            "A submission is only ever graded as the login that submits it.")


def not_enrolled(course_id: str) -> str:
    return f"You are not enrolled in the course {course_id}, so this submission was not graded."


def attempts_used(attempts: int, assignment: str) -> str:
    return f"You have used all {attempts} graded attempts for {assignment}, so this submission was not graded."


def too_soon(interval: float, wait: float) -> str:
    """Sooner than `interval` seconds after the last graded attempt; `wait` seconds are left."""
    return (f"Graded attempts must be at least {interval:g} s apart; this one came "
            f"{interval - wait:.0f} s after your last, so it was not graded. "
            f"Submit again in {wait:.0f} s.")


# ------------------------------------------------------------------ the instructor's summary
def not_graded_line(student: str, why: str) -> str:
    """A student with no grade in the run's summary (never a 0)."""
    return f"NOT GRADED {student}: {why}"
