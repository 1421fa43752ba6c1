"""The trusted side bounds everything it does with what leaves a sandbox: reading, grading, tasks.

Each test hands the grading process something hostile that it used to trust (a text that
stalls the reader, a grade that never returns, a task that never ends, a forged message
stream) and checks that only that part scores 0, with a reason, and that the rest goes on.
"""
from __future__ import annotations

import json
import os
import time
from types import SimpleNamespace

import pytest
import sympy

from graders.engine import course_dir
from graders import digest
from graders.engine import grading
from graders.engine import journal
from graders.engine import task
from graders.engine import sanitize
from graders import symbolic
from graders.engine.local_pool import LocalPool
from graders.sandbox.zygote import Limits, Run, _take
from tests.conftest import must_finish_within

from pathlib import Path
ROOT = Path(__file__).resolve().parents[2]


def score_test_cell(test, message, problem, params, variant, stopped, out, cell=None):
    """(points, feedback lines) for one hidden-test cell graded alone, as `grading.grade_cells`
    grades it: its answers read, then `problem.grade` and the course's full feedback."""
    pending = grading.prepare_test_cell(test, message, problem, params, variant, stopped, out, cell)
    if not isinstance(pending, grading.Pending):
        return pending
    return grading.finish_test_cell(pending, problem, params, variant, out)


# ---------------------------------------------------------------------- reading
HOSTILE = [
    "sqrt(Pow(Symbol('N'), Integer(123456789)))",          # evaluated, this never returned
    "sqrt(Pow(Integer(7), Integer(999999999)))",
    "Pow(Pow(Integer(10), Integer(10)), Pow(Integer(10), Integer(10)))",
    "exp(Pow(Integer(10), Integer(99999999)))",
    "Mul(Float('1.0e999999999', precision=53), Symbol('N'))",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_reading_does_no_arithmetic(text):
    """A text built to make evaluation explode is read as a tree, at once, or refused."""
    allowed = symbolic.symbols_for(["N"])
    with must_finish_within(5):
        try:
            expr = symbolic.from_srepr(text, allowed)
        except symbolic.ExpressionError:
            return
        assert isinstance(expr, sympy.Basic)
        assert sympy.srepr(expr)   # printing it back is as cheap as reading it


def test_reading_refuses_deep_nesting_and_long_numbers():
    """Depth and literal size are capped before anything is built."""
    allowed = symbolic.symbols_for(["N"])
    deep = "Symbol('N')"
    for _ in range(symbolic.MAX_DEPTH + 5):
        deep = f"exp({deep})"
    with pytest.raises(symbolic.ExpressionError, match="nested too deeply"):
        symbolic.from_srepr(deep, allowed)
    with pytest.raises(symbolic.ExpressionError, match="too long"):
        symbolic.from_srepr("Float('" + "9" * 100 + "')", allowed)
    with pytest.raises(symbolic.ExpressionError):
        symbolic.from_srepr("Pow(Symbol('N'))", allowed)      # wrong arity: a clear refusal, not a crash


def test_a_hostile_expression_scores_zero_in_bounded_time():
    """Grading the stalling text through a real problem: 0 for that check, within the bounds."""
    from graders import problems
    problem = problems.get("w1-memory")
    params = problem.variants["A"]
    with must_finish_within(int(grading.GRADE_SECONDS) + 10):
        result = grading.grade_bounded(problem, params, {"per_device_expr": {"sympy": HOSTILE[0]}},
                                  ["per_device_expr"])
    assert result["score"] == 0
    assert result["checks"]["per_device_expr"]["status"] in ("fail", "invalid", "undecided")


# ---------------------------------------------------------------------- grading
class Stalls:
    """A problem whose grading never returns (a stand-in for any unbounded step)."""
    cells = {"check": ("x",)}
    mistakes = ()

    def grade(self, params, answers, keys=None):
        while True:
            time.sleep(1)


def test_grading_past_its_bound_scores_zero_with_a_reason(monkeypatch):
    """`Problem.grade` past GRADE_SECONDS: the cell scores 0 with a reason; nothing waits longer."""
    monkeypatch.setattr(grading, "GRADE_SECONDS", 1.0)
    out = grading.NotebookResult("nb", max_score=2.0)
    test = {"name": "check", "keys": ["x"], "points": 2.0}
    message = {"raised": False, "answers": {"x": 1}}
    with must_finish_within(10):
        score, lines = score_test_cell(test, message, Stalls(), {}, "A", "", out)
    assert score == 0
    assert any("took longer" in r for r in out.reasons)
    assert any("longer than" in line for line in lines)


def test_comparisons_decided_in_a_child_are_remembered():
    """The bounded child's decided comparisons come back, so a class's repeats are decided once."""
    from graders import problems
    problem = problems.get("w1-memory")
    params = problem.variants["B"]
    answer = problem.solve(params)["per_device_expr"]
    symbolic._DECIDED.clear()
    result = grading.grade_bounded(problem, params, {"per_device_expr": answer}, ["per_device_expr"])
    assert result["score"] > 0
    assert symbolic.decided_count() >= 1


def test_one_wrong_type_costs_only_its_own_points():
    """The visible checks raised on one answer: the cell's other answers still earn their points."""
    from graders import problems
    problem = problems.get("w1-memory")
    params = problem.variants["A"]
    right = problem.solve(params)
    keys = list(problem.cells["check_numbers"])
    answers = {k: right[k] for k in keys}
    answers[keys[0]] = {"str": "sixteen"}
    out = grading.NotebookResult("w1-memory", max_score=4.0)
    test = {"name": "check_numbers", "keys": keys, "points": problem.points(keys)}
    message = {"raised": True, "ename": "AssertionError", "answers": answers}
    score, lines = score_test_cell(test, message, problem, params, "A", "", out)
    assert score == problem.points(keys) - problem.checks[keys[0]].points
    assert any("visible checks in this cell raised AssertionError" in line for line in lines)
    assert out.checks["check_numbers"][keys[0]]["status"] == "invalid"


# ---------------------------------------------------------------------- tasks
def _sleepy(task):
    if task == "stuck":
        time.sleep(3600)
    return task * 2


def test_a_task_past_its_limit_is_killed_and_the_rest_finish():
    """One task that never ends: its worker is killed and it is reported; the others all finish."""
    with must_finish_within(60), LocalPool(2, _sleepy) as pool:
        got = {task: (kind, value) for task, kind, value, _ in
               pool.results(["a", "stuck", "b", "c", "d"], seconds=3)}
        assert got["stuck"][0] == "timeout"
        assert {t: got[t] for t in "abcd"} == {t: ("ok", t * 2) for t in "abcd"}
        pids = [w.pid for w in pool.workers]
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)   # closed: reaped, nothing left behind


def _dies(task):
    if task == "die":
        os._exit(3)
    if task == "huge":
        return "x" * (1 << 21)
    return task


def test_a_dying_worker_or_oversized_result_fails_only_its_task():
    """A worker that dies, or a result over the size bound, fails that task alone."""
    with must_finish_within(60), LocalPool(2, _dies, max_result_bytes=1 << 20) as pool:
        got = {task: kind for task, kind, _, _ in pool.results(["a", "die", "huge", "b"], seconds=30)}
    assert got == {"a": "ok", "b": "ok", "die": "died", "huge": "error"}


# ---------------------------------------------------------------------- sandbox messages
def _line(obj) -> bytes:
    return b"S " + json.dumps(obj).encode()


def test_forged_messages_are_counted_and_ignored():
    """Unknown indices, repeats, results before a cell began, and junk: one note, no reasons."""
    run = Run(expected=frozenset({0, 2, 5}))
    _take(run, b'M {"type": "start", "monitor": 9, "sandbox": 10, "uid": 1, "layers": {}}')
    forged = [{"type": "cell", "index": 5, "raised": True, "ename": "Forged"}]          # before it began
    forged += [{"type": "cell", "index": i, "raised": True, "ename": "X"} for i in range(100, 20100)]
    forged += [{"type": "begin", "index": 0}, {"type": "cell", "index": 0, "raised": False},
               {"type": "cell", "index": 0, "raised": True, "ename": "Second"},         # a repeat
               {"type": "begin", "index": True}, {"type": "cell", "index": "2"},         # not ints
               {"type": "begin", "index": 2}, {"type": "cell", "index": 2, "raised": "yes"}]
    for message in forged:
        _take(run, _line(message))
    assert set(run.cells) == {0}
    assert run.cells[0]["raised"] is False
    assert run.ignored == len(forged) - 3   # kept: begin 0, its result, begin 2
    assert len(run.anomaly) < 300 and str(run.ignored) in run.anomaly


# ---------------------------------------------------------------------- tampering notes
def test_missing_flags_are_not_tampering():
    """nbgrader omits flags a cell does not have (no `task` key): that is no change."""
    nb, instructor = _one_cell_notebook({"grade": True, "solution": False, "locked": True,
                                         "grade_id": "check", "points": 1.0, "schema_version": 3})
    assert sanitize.restore_flags(nb, instructor) == []
    nb, instructor = _one_cell_notebook({"grade": False, "solution": False, "locked": True, "task": False,
                                         "grade_id": "check", "points": 1.0, "schema_version": 3})
    assert any("had been changed" in n for n in sanitize.restore_flags(nb, instructor))


def _one_cell_notebook(meta):
    import nbformat
    cell = nbformat.v4.new_code_cell("assert True")
    cell.metadata["nbgrader"] = dict(meta)
    nb = nbformat.v4.new_notebook(cells=[cell])
    instructor = course_dir.InstructorNotebook(
        name="nb", kernelspec=None,
        source_cells=[SimpleNamespace(name="check", cell_type="code", locked=True, checksum="", source="")],
        grade_cells=[SimpleNamespace(name="check", max_score=1.0, cell_type="code")],
        solution_cells=[], task_cells=[])
    return nb, instructor


# ---------------------------------------------------------------------- data files
def test_oversized_assignment_files_stop_before_grading(tmp_path):
    """An assignment whose data files cannot reach the sandbox is refused up front, with the fix."""
    source = tmp_path / "source" / "hw"
    source.mkdir(parents=True)
    with open(source / "data.bin", "wb") as fh:
        fh.truncate(course_dir.FILE_COPY_BYTES + 1)
    course = SimpleNamespace(source_dir=str(source), ignore=[], assignment="hw")
    with pytest.raises(SystemExit, match="data.bin.*larger than.*ChapterSandbox.tmp_bytes"):
        course_dir.check_data_files(course, Limits())
    (source / "data.bin").unlink()
    for i in range(3):
        with open(source / f"part{i}.bin", "wb") as fh:
            fh.truncate(50 << 20)
    with pytest.raises(SystemExit, match="take 150 MiB, more than"):
        course_dir.check_data_files(course, Limits())
    course_dir.check_data_files(course, Limits(tmp_bytes=512 << 20))   # room enough: no complaint


def test_oversized_submitted_files_are_left_out_with_a_note(tmp_path):
    """A student's own oversized file is not given to the sandbox; the notebook says why."""
    small, big = tmp_path / "small.csv", tmp_path / "big.bin"
    small.write_text("1,2\n")
    with open(big, "wb") as fh:
        fh.truncate(course_dir.FILE_COPY_BYTES + 1)
    kept, notes = course_dir.fit_files({"small.csv": str(small), "big.bin": str(big)}, Limits())
    assert kept == {"small.csv": str(small)}
    assert len(notes) == 1 and "big.bin" in notes[0]


# ---------------------------------------------------------------------- the journal's fingerprint
def test_fingerprint_covers_the_whole_library_and_versions(monkeypatch):
    """A change anywhere in graders/ (a module another problem imports), or a library's version, regrades."""
    course = SimpleNamespace(root="/nonexistent", notebooks={}, course_id="c", ignore=[], permissions=0o444,
                             begin_hidden="B", end_hidden="E", max_lines=1, max_traceback=1,
                             exclude_overwriting=[], excluded_students=[], grades_only=False,
                             time_limits={}, instant=False, source_dir=None)
    base = journal.fingerprint(course, Limits())
    monkeypatch.setattr(journal, "code_digest", lambda: "another library")
    assert journal.fingerprint(course, Limits()) != base
    monkeypatch.undo()
    monkeypatch.setattr(journal, "library_versions", lambda: {"sympy": "0.0"})
    assert journal.fingerprint(course, Limits()) != base
    monkeypatch.undo()
    assert journal.fingerprint(course, Limits(memory_bytes=1)) != base
    assert journal.fingerprint(course, Limits()) == base


def test_code_digest_reads_every_module_of_the_library(tmp_path, monkeypatch):
    """The digest the journal uses includes the modules in the library's subfolders, such as those
    several problems share (problems/common/, e.g. the loss scaling p1 and e05 use)."""
    shared = tmp_path / "problems" / "common" / "loss_scaling.py"
    shared.parent.mkdir(parents=True)
    (tmp_path / "symbolic.py").write_text("x = 1\n")
    shared.write_text("y = 2\n")
    monkeypatch.setattr(digest, "GRADER_FILES", tmp_path)
    seen = []
    for change in (lambda: None, lambda: shared.write_text("y = 3\n"),
                   lambda: (shared.parent / "new.py").write_text("")):
        change()
        digest.code_digest.cache_clear()
        seen.append(digest.code_digest())
    monkeypatch.undo()
    digest.code_digest.cache_clear()
    assert len(set(seen)) == 3, "a change in a subfolder, or a new module there, changes the digest"


def test_a_cluster_task_past_its_limit_is_reported_not_retried(monkeypatch):
    """On a Dask worker the task runs in a bounded child: past its limit the student is reported."""
    def never_returns(*args, **kwargs):
        time.sleep(3600)

    monkeypatch.setattr(grading, "grade_submission", never_returns)
    monkeypatch.setattr(grading, "task_seconds", lambda course, limits: 2.0)
    course = SimpleNamespace(notebooks={})
    with must_finish_within(30):
        kind, why = task.grade_one(course, "someone", "/nonexistent", Limits(), "", grade=task.grade_bounded)
    assert kind == "not_graded" and "longer than 2 s" in why


def test_code_digest_tells_a_file_name_from_its_contents(tmp_path, monkeypatch):
    """A library whose one file holds another's name and text is not the library of the two files."""
    one = {"a.py": b"x = 1\n", "b.py": b"y = 2\n"}
    two = {"a.py": b"x = 1\nb.pyy = 2\n"}          # unseparated, both read "a.pyx = 1\nb.pyy = 2\n"
    seen = []
    for files in (one, two):
        library = tmp_path / str(len(seen))
        library.mkdir()
        for name, text in files.items():
            (library / name).write_bytes(text)
        monkeypatch.setattr(digest, "GRADER_FILES", library)
        digest.code_digest.cache_clear()
        seen.append(digest.code_digest())
    monkeypatch.undo()
    digest.code_digest.cache_clear()
    assert seen[0] != seen[1]


def test_changing_an_imported_problem_module_regrades(tmp_path, monkeypatch):
    """p1 shares its loss-scaling code with e05: editing problems/common/loss_scaling.py changes the practice
    assignment's fingerprint."""
    import shutil
    library = tmp_path / "graders"
    shutil.copytree(digest.GRADER_FILES, library, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(digest, "GRADER_FILES", library)
    course = SimpleNamespace(root=str(tmp_path), notebooks={}, course_id="c", ignore=[], permissions=0o444,
                             begin_hidden="B", end_hidden="E", max_lines=1, max_traceback=1,
                             exclude_overwriting=[], excluded_students=[], grades_only=False,
                             time_limits={}, instant=False, source_dir=None)
    digest.code_digest.cache_clear()
    try:
        before = journal.fingerprint(course, Limits())
        module = library / "problems" / "common" / "loss_scaling.py"
        module.write_text(module.read_text() + "\n# a change to the shared loss-scaling code\n")
        digest.code_digest.cache_clear()
        assert journal.fingerprint(course, Limits()) != before
    finally:
        monkeypatch.undo()
        digest.code_digest.cache_clear()


def _cells_of(problem, params, wrong=()):
    """A Pending for each of the problem's hidden-test cells, with the reference's answers
    (those named in `wrong` replaced by a wrong number)."""
    right = problem.solve(params)
    pending = []
    for name, keys in problem.cells.items():
        answers = {k: ({"float": 12345.0} if k in wrong else right[k]) for k in keys}
        test = {"name": name, "keys": list(keys), "points": problem.points(keys)}
        pending.append(grading.prepare_test_cell(test, {"raised": False, "answers": answers},
                                                 problem, params, "A", "", grading.NotebookResult("x")))
    return pending


def _counting_forks(monkeypatch):
    calls = []
    real = grading.run_bounded

    def counted(*args, **kwargs):
        calls.append(args[0].__name__)
        return real(*args, **kwargs)
    monkeypatch.setattr(grading, "run_bounded", counted)
    return calls


def test_a_notebooks_cells_are_graded_in_one_child_exactly_as_alone(monkeypatch):
    """One fork grades all of a notebook's hidden-test cells, and each cell's score, feedback
    and evidence are what grading it alone gives."""
    from graders import problems
    problem = problems.get("w1-memory")
    params = problem.variants["C"]
    assert len(problem.cells) >= 2
    first_key = next(iter(problem.cells.values()))[0]
    calls = _counting_forks(monkeypatch)
    alone_out, alone = grading.NotebookResult("x"), []
    for cell in _cells_of(problem, params, wrong=[first_key]):
        alone.append(grading.finish_test_cell(cell, problem, params, "A", alone_out))
    assert len(calls) == len(problem.cells)
    calls.clear()
    together_out, pending = grading.NotebookResult("x"), _cells_of(problem, params, wrong=[first_key])
    grading.grade_together(problem, params, pending)
    together = [grading.finish_test_cell(cell, problem, params, "A", together_out) for cell in pending]
    assert calls == ["_grade_cells"], "a fork per cell instead of one for the notebook"
    assert together == alone and together_out.checks == alone_out.checks
    full = [problem.points(keys) for keys in problem.cells.values()]
    assert together[0][0] < full[0] and [s for s, _ in together[1:]] == full[1:]   # only the wrong answer cost


class StallsOnOneCell:
    """Grades at once, except the cell that holds key "slow", which never returns."""
    cells = {"quick": ("x",), "stuck": ("slow",)}
    mistakes = ()

    def grade(self, params, answers, keys=None):
        if "slow" in keys:
            while True:
                time.sleep(1)
        return SimpleNamespace(score=1.0, max_score=1.0, feedback=["✓ x"], outcomes={}, mistakes={})


def test_a_stalled_cell_in_the_shared_child_costs_only_its_own_points(monkeypatch):
    """The shared child runs past its bound: each cell is graded again alone, so the cell that
    stalls scores 0 with a reason and the other keeps its point."""
    monkeypatch.setattr(grading, "GRADE_SECONDS", 1.0)
    problem, out = StallsOnOneCell(), grading.NotebookResult("nb")
    pending = [grading.Pending({"name": name, "keys": list(keys), "points": 1.0}, {keys[0]: 1}, [])
               for name, keys in problem.cells.items()]
    calls = _counting_forks(monkeypatch)
    with must_finish_within(15):
        grading.grade_together(problem, {}, pending)
        scores = [grading.finish_test_cell(cell, problem, {}, "A", out)[0] for cell in pending]
    assert calls == ["_grade_cells", "_grade", "_grade"]
    assert scores == [1.0, 0.0]
    assert out.reasons == ["grading cell 'stuck' took longer than 1 s"]


def test_a_notebooks_reference_is_computed_once_here_not_in_every_child(monkeypatch):
    """grade_together computes the variant's reference in this process before it forks, so
    the next notebook's child inherits it instead of solving again (some references train a model)."""
    from graders import problems
    problem = problems.get("w1-memory")
    params = problem.variants["C"]
    pending, again = _cells_of(problem, params, wrong=[]), _cells_of(problem, params, wrong=[])
    monkeypatch.setattr(problem, "_memos", {}, raising=False)   # nothing remembered yet
    solved = []
    real = problem.solve
    monkeypatch.setattr(problem, "solve", lambda p: solved.append(1) or real(p))
    grading.grade_together(problem, params, pending)
    assert solved == [1], "the reference was not computed here: every child would solve it again"
    grading.grade_together(problem, params, again)
    assert solved == [1] and all(cell.result["score"] == cell.result["max_score"] for cell in pending)


def _as_sent(pending):
    """The cells' answers as the sandbox sends them: plain JSON data (graders.transport)."""
    from graders import transport
    for cell in pending:
        cell.answers = json.loads(json.dumps({k: transport.encode(v) for k, v in cell.answers.items()}))
    return pending


def test_a_submissions_notebooks_share_one_grading_child_and_get_what_alone_gives(monkeypatch):
    """With SharedGrading, two notebooks' cells are graded in one fork, and every cell's score,
    feedback and evidence are what grading it alone gives."""
    from graders import problems
    from graders.bounded import BoundedChild
    forks = []
    real_start = BoundedChild._start
    monkeypatch.setattr(BoundedChild, "_start", lambda self: forks.append(1) or real_start(self))
    calls = _counting_forks(monkeypatch)
    course = SimpleNamespace(notebooks={}, grades_only=False)
    together, alone = [], []
    with grading.SharedGrading(course, "someone") as shared:
        for name, variant in (("w1-memory", "C"), ("w2-compute", "A")):
            problem = problems.get(name)
            params = problem.variants[variant]
            first_key = next(iter(problem.cells.values()))[0]
            out, pending = grading.NotebookResult(name), _as_sent(_cells_of(problem, params, wrong=[first_key]))
            grading.grade_together(problem, params, pending, shared=shared)
            assert all(cell.result is not None for cell in pending)
            together.append(([grading.finish_test_cell(c, problem, params, variant, out) for c in pending],
                             out.checks))
            out = grading.NotebookResult(name)
            alone.append(([grading.finish_test_cell(c, problem, params, variant, out)
                           for c in _as_sent(_cells_of(problem, params, wrong=[first_key]))], out.checks))
        assert shared.child.pid is not None
    assert shared.child.pid is None, "the submission's grading child outlived it"
    assert all(score < full for (score, _), full in [(t[0][0], problem.points(next(iter(problem.cells.values()))))
                                                      for t, problem in zip(together, [problems.get("w1-memory"),
                                                                                       problems.get("w2-compute")])])
    assert forks == [1] and "_grade_cells" not in calls, "a fork per notebook instead of one per submission"
    assert together == alone


def test_a_shared_child_past_its_bound_costs_only_that_notebook(monkeypatch):
    """A notebook whose cells stall the submission's child: the child is killed, that notebook's
    cells are left to be graded alone, and the next notebook gets a fresh child that grades it."""
    from graders import problems
    monkeypatch.setattr(grading, "GRADE_SECONDS", 1.0)
    problem = problems.get("w1-memory")
    params = problem.variants["C"]
    real = grading._grade_cells

    def stalls_on_a_marked_answer(problem, params, cells, instant):
        if any(answers.get("__stall__") for answers, _ in cells):
            while True:
                time.sleep(1)
        return real(problem, params, cells, instant)
    monkeypatch.setattr(grading, "_grade_cells", stalls_on_a_marked_answer)
    with grading.SharedGrading(SimpleNamespace(notebooks={}, grades_only=False), "someone") as shared:
        hostile = _as_sent(_cells_of(problem, params, wrong=[]))
        hostile[0].answers["__stall__"] = True
        with must_finish_within(15):
            grading.grade_together(problem, params, hostile, shared=shared)
        assert all(cell.result is None for cell in hostile) and shared.child.pid is None
        honest = _as_sent(_cells_of(problem, params, wrong=[]))
        grading.grade_together(problem, params, honest, shared=shared)
        assert all(cell.result["score"] == cell.result["max_score"] for cell in honest)
        assert shared.child.forks == 2


def test_only_a_registered_problem_and_its_own_variant_go_to_the_shared_child():
    """The child finds a problem by name: anything else (a stand-in, a copy of a variant's
    parameters) is graded in a child of its own, as before."""
    from graders import problems
    problem = problems.get("w1-memory")
    assert grading.SharedGrading.variant_of(problem, problem.variants["C"]) == "C"
    assert grading.SharedGrading.variant_of(problem, dict(problem.variants["C"])) is None
    assert grading.SharedGrading.variant_of(StallsOnOneCell(), {}) is None


def test_a_submissions_notebooks_share_its_grading_child_and_no_other_submission_does(monkeypatch, tmp_path):
    """What one student's answers leave in the shared child only that student's other notebooks
    meet: grade_submission gives each submission its own, closed when it is graded."""
    seen = []

    def records(course, instructor, student, path, socket_path, limits, shared=None):
        seen.append((student, shared))
        return grading.NotebookResult(instructor)
    monkeypatch.setattr(grading, "grade_notebook", records)
    closed = []
    monkeypatch.setattr(grading.SharedGrading, "__exit__", lambda self, *exc: closed.append(self) or False)
    course = SimpleNamespace(notebooks={n: SimpleNamespace(name=n, later=False) for n in "ab"}, time_limits={},
                             submission_dir=lambda s: tmp_path / s)
    for student in ("s1", "s2"):
        grading.grade_submission(course, student, "socket", Limits())
    (_, first), (_, again), (_, other), (_, other_again) = seen
    assert first is again and other is other_again and first is not other
    assert first.student == "s1" and other.student == "s2" and closed == [first, other]


def test_a_submission_grades_its_torch_notebooks_last_and_reports_them_in_the_courses_order(monkeypatch, tmp_path):
    """Early in a run only the zygote without torch is ready: a submission's other notebooks go
    first, and the result still lists every notebook in the assignment's order."""
    order = []

    def records(course, instructor, student, path, socket_path, limits, shared=None):
        order.append(instructor.name)
        return grading.NotebookResult(instructor.name)
    monkeypatch.setattr(grading, "grade_notebook", records)
    later = {"a": True, "b": False, "c": True, "d": False}
    course = SimpleNamespace(notebooks={n: SimpleNamespace(name=n, later=later[n]) for n in "abcd"},
                             time_limits={}, submission_dir=lambda s: tmp_path / s)
    result = grading.grade_submission(course, "s1", "socket", Limits())
    assert order == ["b", "d", "a", "c"]
    assert [nb.name for nb in result.notebooks] == ["a", "b", "c", "d"]


def test_a_notebook_whose_released_code_names_torch_is_marked_later(tmp_path, monkeypatch):
    """`later` comes from the released notebook's code: w3-range imports torch, w1-memory does not."""
    import shutil
    from nbgrader import api
    monkeypatch.setattr(api, "get_alembic_version", lambda: "test")   # not read here; nbgrader runs `alembic` for it
    (tmp_path / "release" / "worked").mkdir(parents=True)
    with api.Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}", "default_course") as gb:
        gb.add_assignment("worked")
        for name in ("w1-memory", "w3-range"):
            gb.add_notebook(name, "worked")
            shutil.copy(ROOT / "release" / "worked" / f"{name}.ipynb", tmp_path / "release" / "worked")
    loaded = course_dir.load_course(tmp_path, "worked")
    assert {name: nb.later for name, nb in loaded.notebooks.items()} == {"w1-memory": False, "w3-range": True}
