"""One submission graded: its notebooks run in the sandbox, and each test cell judged here, bounded."""
from __future__ import annotations

import contextlib
import functools
import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

from graders.bounded import BoundedChild, Timeout, run_bounded
from graders.engine import feedback as say
from graders.engine.blame import first_sandbox_fault
from graders.engine.course_dir import Course, fit_files
from graders.engine.shared import silent_log
from graders.unicode import shown_name
from graders.engine.sanitize import nbgrader_meta, unique, sanitize, strip_hidden
from graders.engine.snapshot import why_broken, read_submission
from graders.engine.time_limits import for_notebook
from graders.sandbox.zygote import Limits, run_job, socket_for


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
    flags: list = field(default_factory=list)      # why cells wait for a person (graders.engine.blame)
    notebook: str | None = None                    # the autograded .ipynb text

    @property
    def technical_zero(self) -> bool:
        """Scored 0 for something other than wrong mathematics (an error, a timeout, tampering...);
        a notebook flagged for a person (`flags`) is not scored yet."""
        return self.score == 0 and self.max_score > 0 and bool(self.reasons or self.notes) and not self.flags


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
    wall = float(limits.notebook_seconds) * max(1.0, float(limits.wall_factor))
    return len(course.notebooks) * (wall + 30.0) + cells * GRADE_SECONDS + 60.0


def warm_references(course: Course, student: str, after: "SubmissionResult | None" = None) -> None:
    """Compute this student's references here, in a long-lived process; `after` a grade, the
    declared mistakes of the items where a check failed.

    Both depend on the variant only (trusted inputs), and grading each cell runs in a fresh
    bounded child: what is remembered here (some references and mistakes train a model) the
    children inherit instead of recomputing. Mistakes are only needed to name a failed
    check, so they are computed once the first failure in a variant shows that they are
    (and not at all in a run whose only use is its grades).
    """
    from graders.feedback import FAIL
    from graders.variants import variant_for
    if after is not None and course.grades_only:   # no later student will need them
        return
    failed = None
    if after is not None:
        failed = {nb.name for nb in after.notebooks
                  if any(v.get("status") == FAIL for cell in nb.checks.values() for v in cell.values())}
    for name in course.notebooks:
        if failed is not None and name not in failed:
            continue
        if not (course.submission_dir(student) / f"{name}.ipynb").exists():   # not submitted: not graded against a reference
            continue
        problem = _problem(name)
        if problem is None:
            continue
        params = problem.variants.get(variant_for(student, problem.assignment or course.assignment))
        if params is None:
            continue
        with contextlib.suppress(Exception):   # a failure here shows again, bounded, when grading
            if failed is None:
                problem.reference(params)
            else:
                problem.mistaken(params)


def grade_submission(course: Course, student: str, socket_path: str, limits: Limits,
                     key: str = "") -> SubmissionResult:
    """Grade one student's submission (all notebooks of the assignment)."""
    result = SubmissionResult(student, key)
    folder = course.submission_dir(student)
    graded = {}
    with SharedGrading(course, student) as shared:
        # the notebooks that need no torch first: early in a run, they need not wait for the
        # zygote that imports it (the order they are graded in changes nothing else)
        for name in sorted(course.notebooks, key=lambda name: course.notebooks[name].later):
            own = for_notebook(limits, course.time_limits.get(name))
            graded[name] = grade_notebook(course, course.notebooks[name], student, folder / f"{name}.ipynb",
                                          socket_path, own, shared=shared)
    result.notebooks = [graded[name] for name in course.notebooks]
    return result


def grade_notebook(course, instructor, student, path, socket_path, limits, shared=None) -> NotebookResult:
    points = sum(float(c.max_score) for c in instructor.grade_cells)
    out = NotebookResult(instructor.name, max_score=points)
    if not path.exists() and not path.is_symlink():
        found, why = handed_in_instead(course, path.parent, instructor.name)
        if found is None:
            out.status = "missing"
            out.grades = {c.name: 0.0 for c in instructor.grade_cells}
            out.reasons.append(why)
            return out
        out.notes.append(say.graded_instead(shown_name(found.relative_to(path.parent)), instructor.name))
        path = found
    try:
        nb = read_submission(path)
        foreign = other_notebook(nb, instructor, course)
        if foreign:
            return broken(out, instructor, course, foreign)
        nb, notes = sanitize(nb, instructor, course.assignment, student,
                             course.begin_hidden, course.end_hidden)
        out.notes += notes
    except Exception as exc:  # noqa: BLE001 - any unreadable notebook scores 0 with its reason
        return broken(out, instructor, course, why_broken(exc))
    try:
        job, tests = build_job(course, instructor, nb, student)
    except Exception as exc:  # noqa: BLE001 - a grader bug must not stop the batch
        return broken(out, instructor, course, say.grader_failed("prepare", exc))
    job["files"].setdefault(f"{instructor.name}.ipynb", str(path))   # the student's own file, where a kernel has it
    job["files"], left_out = fit_files(job["files"], limits)
    out.notes += left_out
    run = run_job(socket_for(socket_path, job), job, limits)   # SandboxUnavailable propagates: not the student's fault
    out.run = {"status": run.status, "detail": run.detail, "seconds": run.seconds, "leftovers": run.leftovers,
               "cpu_seconds": run.usage.get("cpu_seconds"), "limit_seconds": limits.notebook_seconds}
    out.layers = {"monitor": run.monitor_layers, "sandbox": run.layers}
    try:
        grade_cells(course, instructor, nb, student, run, tests, out, shared=shared)
    except Exception as exc:  # noqa: BLE001
        out.notes, out.notebook = [], None
        return broken(out, instructor, course, say.grader_failed("grade", exc))
    return out


_COPY_MARK = re.compile(r"(?: \(\d+\)| ?- ?copy\d*| copy(?: \d+)?)$", re.IGNORECASE)
MAX_LOOKED_AT = 200          # entries of a submission looked at for a notebook handed in under another name


def handed_in_instead(course: Course, folder: Path, name: str) -> tuple[Path | None, str]:
    """The notebook a student handed in for `name` under another name or one folder down
    (`w1-memory (1).ipynb`, `w1-memory-Copy1.ipynb`, `worked/w1-memory.ipynb`), when there is
    exactly one; else (None, what the instructor and the student are told)."""
    expected = set(course.notebooks)
    others, matches, seen = [], [], 0
    for here, dirs, files in os.walk(folder):
        depth = len(Path(here).relative_to(folder).parts)
        dirs[:] = sorted(d for d in dirs if d != ".ipynb_checkpoints" and depth < 3)
        for file in sorted(files):
            seen += 1
            if seen > MAX_LOOKED_AT:
                break
            path = Path(here) / file
            if not file.endswith(".ipynb") or path.is_symlink() or not path.is_file():
                continue
            stem = file[:-len(".ipynb")]
            if depth == 0 and stem in expected:
                continue
            (matches if _COPY_MARK.sub("", stem) == name else others).append(path)
        if seen > MAX_LOOKED_AT:
            break
    if len(matches) == 1:
        return matches[0], ""
    handed = matches + others
    if not handed:
        return None, say.NOT_SUBMITTED
    shown = ", ".join(f"`{shown_name(p.relative_to(folder))}`" + (f" (a notebook of assignment {a})" if a else "")
                      for p in handed[:5] for a in [_other_assignment(course, p.stem)])
    return None, say.submitted_under_other_names(name, shown, len(matches) > 1)


def _other_assignment(course: Course, stem: str) -> str:
    """The other assignment that has a notebook `stem` ("" when none has): the problem library's
    word for a chapter's item, else the course's release/ folder."""
    from graders import problems
    with contextlib.suppress(Exception):
        if problems.known(stem) and problems.get(stem).assignment not in ("", course.assignment):
            return problems.get(stem).assignment
    release = Path(course.root) / "release"
    try:
        for assignment in sorted(os.listdir(release)):
            if assignment != course.assignment and (release / assignment / f"{stem}.ipynb").is_file():
                return assignment
    except OSError:
        pass
    return ""


_TITLE = re.compile(r"^#\s+([A-Za-z0-9][\w.-]*)\s+·")


def other_notebook(nb, instructor, course: Course) -> str:
    """Why `nb` is another notebook handed in under this one's name ("" when it is not known to be).

    A notebook is this one when any of the instructor's locked cells is in it as released.
    When none is and its first heading (`# e03-adam · ...`) names another item, it is that
    item's notebook; else it is graded as this one (an emptied notebook, edited cells)."""
    locked = {c.source.strip() for c in instructor.source_cells if c.locked and (c.source or "").strip()}
    if not locked:
        return ""
    cells = [c for c in nb.get("cells", []) if isinstance(c, dict) and isinstance(c.get("source"), (str, list))]
    sources = {("".join(c["source"]) if isinstance(c["source"], list) else c["source"]).strip() for c in cells}
    if locked & sources:
        return ""
    for cell in cells:
        if cell.get("cell_type") == "markdown":
            text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            title = _TITLE.match(text.strip())
            if title and title.group(1) != instructor.name:
                other = title.group(1)
                return say.another_notebook(instructor.name, other, _other_assignment(course, other))
            break
    return ""      # not named: graded as this notebook, its missing cells re-added (and said)


def broken(out: NotebookResult, instructor, course, reason: str) -> NotebookResult:
    """0 for every cell, and a notebook that says why, for generate_feedback."""
    from nbgrader.preprocessors import OverwriteCells
    out.status = "broken"
    out.reasons.append(reason)
    out.grades = {c.name: 0.0 for c in instructor.grade_cells}
    maker = OverwriteCells(log=silent_log)
    manual = {c.name for c in instructor.solution_cells}
    cells = [nbformat.v4.new_markdown_cell(say.broken_notebook(reason))]
    for grade in instructor.grade_cells:
        source = instructor.source(grade.name)
        if source is None:
            continue
        cell = maker.missing_cell_transform(source, grade.max_score, is_solution=grade.name in manual)
        cell.source = strip_hidden(cell.source, course.begin_hidden, course.end_hidden)
        if cell.cell_type == "code":
            cell.outputs = [new_output("stream", name="stdout", text=say.not_graded(reason) + "\n"),
                            new_output("execute_result", data={"text/plain": "0.0"}, execution_count=None)]
        cell["id"] = grade.name if _CELL_ID.fullmatch(grade.name) else f"autograded-{len(cells)}"
        cells.append(cell)
    nb = nbformat.v4.new_notebook(cells=cells)
    if instructor.kernelspec:
        nb.metadata["kernelspec"] = json.loads(instructor.kernelspec)
    out.notebook = write_notebook(nb)
    out.feedback = [say.broken_feedback(reason)]
    return out


def _problem(name):
    from graders import problems
    try:
        return problems.get(name)
    except KeyError:
        return None


def build_job(course, instructor, nb, student):
    """The cells the sandbox runs (hidden tests removed) and, per test cell, what to read back."""
    from graders.variants import variant_for
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
        meta = nbgrader_meta(cell) or {}
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
    if course.grades_only:   # no figure decides a grade: build each one, but skip its PNG
        job["figures"] = "drawn"
    meta = {"problem": problem, "params": params, "variant": variant, "tests": info}
    return job, meta


def extra_files(course: Course, student: str) -> dict:
    """Non-notebook files the notebook may read, as nbgrader would copy them: submission, then source."""
    from graders.engine.shared import find_all_files
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


def grade_cells(course, instructor, nb, student, run, meta, out: NotebookResult, shared=None):
    """Scores from the sandbox's data, the autograded notebook, feedback and reasons
    (the hidden-test cells in `shared`, the submission's grading child, when given)."""
    from nbgrader import utils
    problem, params, variant, tests = meta["problem"], meta["params"], meta["variant"], meta["tests"]
    out.variant = variant
    stopped = _stop_reason(run)
    count, judged = 0, {}
    for index, cell in enumerate(nb.cells):
        message = run.cells.get(index) if cell.cell_type == "code" else None
        if cell.cell_type == "code":
            cell.outputs = clean_outputs(message.get("outputs") if message else None)
            if message is not None:
                count += 1
                cell.execution_count = count
        meta_cell = nbgrader_meta(cell) or {}
        name = meta_cell.get("grade_id")
        if index in tests:
            cell.source = strip_hidden(cell.source, course.begin_hidden, course.end_hidden)
            before = len(out.reasons)
            judgement = prepare_test_cell(tests[index], message, problem, params, variant, stopped, out, cell)
            judged[index] = (name, judgement, out.reasons[before:])   # its reasons keep their place
            del out.reasons[before:]
            out.grades[name] = None          # keeps the cells' order in the grades; scored below
        elif name is not None and utils.is_grade(cell):
            auto, _ = utils.determine_grade(cell)     # manual cells: 0 if untouched, else left to formgrader
            out.grades[name] = auto
        if name is not None and (utils.is_solution(cell) or utils.is_task(cell)):
            unchanged = meta_cell.get("checksum") == utils.compute_checksum(cell) and not utils.is_task(cell)
            out.comments[name] = "No response." if unchanged else None
    instant = course.instant
    grade_together(problem, params, [j for _, j, _ in judged.values() if isinstance(j, Pending)],
                   instant=instant, shared=shared)
    fault = first_sandbox_fault(run, course.source_dir)
    for index, (name, judgement, reasons) in judged.items():
        cell = nb.cells[index]
        out.reasons += reasons
        if isinstance(judgement, Pending):
            judgement = finish_test_cell(judgement, problem, params, variant, out, instant=instant)
        score, lines = judgement
        if fault and index >= fault[0] and score is not None and score < float(tests[index]["points"]):
            # it may have lost its points to the sandbox, not to the student: a person decides
            score, lines = None, lines + [say.not_graded_yet(fault[0] + 1, fault[1])]
            out.flags = unique(out.flags + [say.waits_for_a_person(fault[0] + 1, fault[1])])
            out.checks.pop(name, None)    # no evidence of a mistake for the class report
        out.grades[name] = score
        out.feedback += lines
        cell.outputs.append(new_output("stream", name="stdout", text="\n".join(lines) + "\n"))
        if score is not None:
            cell.outputs.append(new_output("execute_result", data={"text/plain": repr(float(score))},
                                           execution_count=cell.execution_count))
    errors = []
    for index, message in sorted(run.cells.items()):
        if index in tests or not isinstance(message, dict) or message.get("raised") is not True:
            continue
        if message.get("timeout") is True:
            errors.append(say.cell_interrupted(index + 1))
        else:
            errors.append(say.cell_raised(index + 1, str(message.get("ename") or "an error")))
    out.reasons = unique(([stopped] if stopped else []) + errors + out.reasons)
    if run.anomaly:
        out.notes.append(run.anomaly)
    if run.leftovers:
        out.notes.append(say.processes_left(run.leftovers))
    out.score = float(sum(s for s in out.grades.values() if s))
    if out.notes:
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(say.autograder_notes(out.notes)))
    limit_outputs(nb, course)
    out.notebook = write_notebook(nb)


_CELL_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def write_notebook(nb) -> str:
    """nbformat text, with a cell id for every cell (re-added cells come without one).

    nbformat's own writer, without the schema check `nbformat.writes` runs first: that check
    only logs (it never refuses a notebook) and cost about a millisecond a notebook; the
    student's notebook was checked in full when it was read, and nbgrader checks this text
    again when it reads it."""
    nb.nbformat, nb.nbformat_minor = 4, max(5, int(nb.get("nbformat_minor") or 0))
    seen = set()
    for i, cell in enumerate(nb.cells):
        if not isinstance(cell.get("id"), str) or cell["id"] in seen or not _CELL_ID.fullmatch(cell["id"]):
            cell["id"] = f"autograded-{i}"
        seen.add(cell["id"])
    return nbformat.v4.writes_json(nb)


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
            return say.ended_its_own_process(where)
        return say.REPORTING_TAMPERED
    return say.stopped(run.status, where, run.detail)


GRADE_SECONDS = 30.0            # one hidden-test cell's grading, outside the sandbox
GRADE_MEMORY_BYTES = 2 << 30    # on top of what the grading process already maps
GRADE_RESULT_BYTES = 4 << 20


@dataclass
class Pending:
    """A hidden-test cell whose answers are read and wait for `problem.grade`."""
    test: dict
    answers: dict
    raised: list
    result: dict | None = None      # graded already (with the notebook's other cells, in one child)


def prepare_test_cell(test, message, problem, params, variant, stopped, out: NotebookResult, cell=None):
    """A hidden-test cell's answers (Pending), or its (points, lines) when there is nothing to grade."""
    points, name, keys = float(test["points"]), test["name"], test["keys"]
    if message is None:
        reason = stopped or say.NOT_REACHED
        out.reasons.append(reason)
        return 0.0, [say.not_graded(reason)]
    if test.get("inside") or problem is None or not keys:
        return judged_inside(test, message, cell, out)
    if params is None:
        reason = say.no_variant(variant)
        out.reasons.append(reason)
        return 0.0, [say.not_graded(reason)]
    answers = message.get("answers")
    if message.get("raised") is not False and not isinstance(answers, dict):
        ename = str(message.get("ename") or "an error")[:80]
        out.reasons.append(say.cell_reason("checks raised", name, ename))
        return 0.0, [say.checks_raised(ename, points)]
    answers = answers if isinstance(answers, dict) else {}
    if answers.get("__timeout__"):
        out.reasons.append(say.cell_reason("answers timed out", name))
        return 0.0, [say.ANSWERS_NEVER_RETURNED]
    answers = {k: answers[k] for k in keys if k in answers}
    raised = []
    if message.get("raised") is not False:
        # The visible checks stopped on one answer: each answer is still graded on its own,
        # so one wrong type never costs the others in the cell their points.
        ename = str(message.get("ename") or "an error")[:80]
        raised = [say.visible_checks_raised(ename)]
    return Pending(test, answers, raised)


def finish_test_cell(pending: Pending, problem, params, variant, out: NotebookResult, instant: bool = False):
    """(points, feedback lines) of a Pending cell: its result from the shared child if it has one,
    else `problem.grade` in a bounded child of its own. A cell holding an answer the grader could
    not decide gets no points (None) and is flagged: it waits for a person in formgrader."""
    test, keys = pending.test, pending.test["keys"]
    points, name = float(test["points"]), test["name"]
    result = pending.result
    if result is None:
        try:
            result = grade_bounded(problem, params, pending.answers, keys, instant=instant)
        except Timeout:
            out.reasons.append(say.cell_reason("grading too long", name, f"{GRADE_SECONDS:g} s"))
            return 0.0, [say.grading_took_too_long(GRADE_SECONDS)]
        except Exception as exc:  # noqa: BLE001 - never let one answer stop the batch
            out.reasons.append(say.cell_reason("not gradable", name, str(exc)[:120] or type(exc).__name__))
            return 0.0, [say.CELL_NOT_GRADABLE]
    from graders.evidence import check_verdicts
    verdicts = result["checks"]   # plain data from the bounded child; kept in the gradebook as evidence
    out.checks[name] = check_verdicts({k: v["status"] for k, v in verdicts.items()},
                                      {k: v["mistake"] for k, v in verdicts.items()}, keys)
    undecided = [k for k in keys if verdicts.get(k, {}).get("status") == "undecided"]
    if undecided:
        # neither proved right nor shown wrong: not a 0, a person decides (formgrader)
        out.flags.append(say.undecided_for_a_person(name, undecided))
        return None, ([say.cell_waits(variant, points)] + pending.raised + result["feedback"]
                      + [say.undecided_waits(undecided)])
    score = max(0.0, min(float(result["score"]), points, float(result["max_score"])))
    lines = [say.cell_score(variant, score, points)] + pending.raised + result["feedback"]
    return score, lines


def _grade(problem, params, answers, keys, instant):
    """`problem.grade` as plain data, with the comparisons it decided (run in a bounded child)."""
    from graders import symbolic
    mark = symbolic.decided_count()
    r = problem.grade(params, answers, keys=keys)
    lines = instant_lines(problem, r) if instant else r.feedback
    return {"score": float(r.score), "max_score": float(r.max_score),
            "feedback": [str(line)[:2000] for line in lines],
            "checks": {str(k): {"status": str(o.status), "mistake": r.mistakes.get(k)}
                       for k, o in r.outcomes.items()},
            "decided": symbolic.decided_since(mark)}


def grade_bounded(problem, params, answers, keys, seconds: float | None = None, instant: bool = False) -> dict:
    """`problem.grade` in a forked child under a time, memory and size bound, as JSON data.

    Reading and comparing a hostile answer must never hold the batch: the child is
    killed past `seconds` (Timeout). Comparisons it decided come back with its result,
    so the next student's copy of the same expression is decided at once. With
    `instant`, the feedback names each failed check and any matching declared mistake,
    and nothing more: no direction, length or value that repeated attempts could bisect.
    """
    from graders import symbolic
    result = run_bounded(_grade, problem, params, answers, keys, instant, timeout=seconds or GRADE_SECONDS,
                         memory_bytes=GRADE_MEMORY_BYTES, max_output=GRADE_RESULT_BYTES)
    symbolic.remember(result.pop("decided", ()))
    return result


def grade_together(problem, params, pending: list, instant: bool = False, shared=None) -> None:
    """Grade a notebook's Pending cells one after another in a single bounded child, with the
    bounds of one cell (time, memory, size) for all of them, and set each one's result.

    It saves a fork per cell; with `shared` (SharedGrading), the child is the submission's,
    which grades its notebooks one after another, and saves a fork per notebook too. A cell
    whose grading raised there, and every cell when the child as a whole fails (past its time,
    out of memory, too large), keeps no result and is graded again in a child of its own
    (`finish_test_cell`), so it is judged, and fails, exactly as alone.
    """
    variant = shared.variant_of(problem, params) if shared is not None else None
    if len(pending) < (1 if variant is not None else 2):
        return
    from graders import symbolic
    with contextlib.suppress(Exception):   # trusted (the variant's), remembered here and inherited by
        problem.reference(params)          # the child; a failure shows again there, bounded
    cells, results = [[cell.answers, cell.test["keys"]] for cell in pending], None
    try:
        if variant is not None:
            with contextlib.suppress(TypeError, ValueError):   # not plain data: a child of its own
                results = shared.grade(problem, variant, cells, instant)
        if results is None:
            results = run_bounded(_grade_cells, problem, params, cells, instant, timeout=GRADE_SECONDS,
                                  memory_bytes=GRADE_MEMORY_BYTES, max_output=GRADE_RESULT_BYTES)
    except Exception:  # noqa: BLE001 - Timeout, TooLarge, the child died: each cell alone instead
        return
    if not isinstance(results, list) or len(results) != len(pending):
        return
    for cell, result in zip(pending, results):
        if isinstance(result, dict):
            symbolic.remember(result.pop("decided", ()))
            cell.result = result


def _grade_cells(problem, params, cells, instant) -> list:
    """`_grade` of each (answers, keys) in turn (in a bounded child); None where it raised."""
    results = []
    for answers, keys in cells:
        try:
            results.append(_grade(problem, params, answers, keys, instant))
        except Exception:  # noqa: BLE001 - graded again alone, which reports it
            results.append(None)
    return results


def _serve_grading(request) -> list:
    """A request to the submission's grading child (SharedGrading.grade), answered there."""
    problem = _problem(request["problem"])
    return _grade_cells(problem, problem.variants[request["variant"]], request["cells"], request["instant"])


class SharedGrading:
    """The one bounded child that grades a submission's hidden-test cells, notebook after notebook.

    Forking the grading process (sympy, the problems, often torch) costs more than most of
    the grading it bounds; a submission pays it once instead of once per notebook. Each
    notebook's request keeps the bounds a child of its own had (GRADE_SECONDS, the memory
    cap over what the process maps at the fork, GRADE_RESULT_BYTES); past one, the child is
    killed (the next notebook gets a fresh one) and that notebook's cells are graded alone.
    Only the course's registered problems, with one of their own variants, go through it:
    the child finds them by name, so a request is plain data. It lives in the submission
    (one student: what one answer leaves in it only that student's other notebooks meet,
    each graded as alone), and is killed and reaped when the submission is graded.
    """

    def __init__(self, course, student: str):
        self.course, self.student = course, student
        self.child = BoundedChild(_serve_grading, memory_bytes=GRADE_MEMORY_BYTES, max_output=GRADE_RESULT_BYTES)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.child.close()
        return False

    @staticmethod
    def variant_of(problem, params):
        """The name of `params` among the registered `problem`'s variants (None: not one of them)."""
        if problem is None or _problem(getattr(problem, "id", None)) is not problem:
            return None
        return next((name for name, p in problem.variants.items() if p is params), None)

    def grade(self, problem, variant: str, cells: list, instant: bool) -> list:
        if self.child.pid is None:    # every notebook's reference, here, for the child to inherit
            warm_references(self.course, self.student)
        return self.child.ask({"problem": problem.id, "variant": variant, "cells": cells, "instant": instant},
                              timeout=GRADE_SECONDS)


def instant_lines(problem, result) -> list[str]:
    """Feedback for instant grading: which checks failed and, where a declared mistake matched,
    its instant text (the idea it misses; never its released text, which may give the way back
    to the answer: graders.giveaway)."""
    from graders.feedback import FAIL, INSTANT_LEAD, Outcome, line
    said = {m.name: m.instant for m in problem.mistakes if m.instant}
    lines = []
    for key, outcome in result.outcomes.items():
        if outcome.status == FAIL:
            outcome = Outcome(FAIL, say.INSTANT_FAIL)
        lines.append(line(key, outcome, said.get(result.mistakes.get(key)), lead=INSTANT_LEAD))
    return lines


def judged_inside(test, message, cell, out: NotebookResult):
    """nbgrader's own verdict on a test cell that ran whole in the sandbox: its outputs decide."""
    from nbgrader import utils
    points, name = float(test["points"]), test["name"]
    out.inside.append(name)
    outputs = list(cell.outputs) if cell is not None else []
    if message.get("raised") is not False and not any(o.get("output_type") == "error" for o in outputs):
        outputs.append(new_output("error", ename=str(message.get("ename") or "Error")[:200], evalue="", traceback=[]))
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
    return score, [say.judged_inside(score, points)]


def new_output(kind: str, data: dict | None = None, **fields):
    """An nbformat v4 output, as `nbformat.v4.new_output` builds it, without its schema check.

    nbformat checks each output it builds against its schema (jsonschema, ~0.4 ms an output,
    about half of the trusted comparison's own time); every caller here passes only values of
    the schema's types (`clean_outputs` checks the sandbox's; the rest are the grader's own
    strings), so the check could only pass. The notebook as a whole is still validated on read.
    """
    output = nbformat.NotebookNode(output_type=kind)
    if kind == "stream":
        output.name, output.text = "stdout", ""
    elif kind in ("display_data", "execute_result"):
        output.metadata, output.data = nbformat.NotebookNode(), nbformat.NotebookNode()
        if kind == "execute_result":
            output.execution_count = None
    elif kind == "error":
        output.ename, output.evalue, output.traceback = "NotImplementedError", "", []
    output.update(fields)
    if data is not None:
        output.data = data     # a NotebookNode turns a dict into one
    return output


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
                    outputs.append(new_output("stream", name=name, text=text))
            elif kind == "error":
                tb = item.get("traceback")
                tb = [str(t)[:5000] for t in tb[:200]] if isinstance(tb, list) else []
                outputs.append(new_output("error", ename=str(item.get("ename", ""))[:200],
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
                    count = count if isinstance(count, int) else None
                    if isinstance(count, bool) or (count is not None and count < 0):
                        continue    # the schema's prompt number is an integer >= 0: dropped, as nbformat would
                    outputs.append(new_output(kind, data=bundle, execution_count=count))
                else:
                    outputs.append(new_output(kind, data=bundle))
        except Exception:  # noqa: BLE001 - drop what nbformat will not take
            continue
    return outputs


def limit_outputs(nb, course: Course) -> None:
    _output_limiter(course.max_lines, course.max_traceback).preprocess(nb, {})


@functools.lru_cache(maxsize=8)
def _output_limiter(max_lines: int, max_traceback: int):
    """nbgrader's LimitOutput for these limits, built once (it keeps nothing between notebooks)."""
    from nbgrader.preprocessors import LimitOutput
    return LimitOutput(log=silent_log, max_lines=max_lines, max_traceback=max_traceback)
