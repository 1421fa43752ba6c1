"""What a hidden test cell calls under `nbgrader autograde`.

A hidden test is one line, ``judge("w1-memory", "check_numbers", globals())``.
It gathers the cell's answers from the notebook as plain data (the same
`transport` encoding a sandboxed grader uses), grades them with the problem's
`grade` for the graded student's variant, prints one feedback line per check,
and returns the points earned, which nbgrader records as partial credit.
"""
from __future__ import annotations

import contextlib
import io
import os
import sys
import warnings

from graders import problems, transport
from graders.feedback import UNDECIDED, UNDECIDED_MIME, cell_waits, undecided_waits
from graders.variants import variant_for

STUDENT_ENV = "CHAPTER_GRADED_STUDENT"   # set by the nbgrader step that knows whose notebook it runs


@contextlib.contextmanager
def quiet():
    """Send everything written to stderr (Python or C level) nowhere, and mute warnings."""
    sys.stderr.flush()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def gather(problem, params, keys, namespace) -> dict:
    """The answers for `keys` as plain data; absent names are left out."""
    probes = problem.probes(params)
    answers = {}
    for key in keys:
        if key in probes:
            probe = probes[key]
            function = namespace.get(probe.function)
            if not callable(function):
                continue
            outputs = []
            for args in probe.calls:
                try:
                    outputs.append(transport.encode(function(*args)))
                except Exception as exc:  # noqa: BLE001 - the student's function failed
                    outputs.append({"error": f"raised {type(exc).__name__}"})
            answers[key] = outputs
        elif key in namespace:
            answers[key] = transport.encode(namespace[key])
    return answers


def judge(problem_id: str, cell: str, namespace: dict) -> float:
    """Grade one hidden-test cell; print its feedback and return its points."""
    with quiet():
        problem = problems.get(problem_id)
        student = os.environ.get(STUDENT_ENV)
        if student:
            variant = variant_for(student, problem.assignment)
            params = problem.variants[variant]
            keys = problem.cells[cell]
            result = problem.grade(params, gather(problem, params, keys, namespace), keys=keys)
    if not student:
        print("The hidden tests run when the notebook is graded.")
        return 0.0
    undecided = [key for key, outcome in result.outcomes.items() if outcome.status == UNDECIDED]
    if undecided:   # the whole cell waits for a person, as under `chapter autograde`
        print(cell_waits(variant, result.max_score))
    else:
        print(f"Variant {variant}: {result.score:g} of {result.max_score:g} points in this cell")
    for text in result.feedback:
        print(text)
    if undecided:
        _leave_for_a_person(undecided)
    return float(result.score)


def _leave_for_a_person(keys) -> None:
    """Say so, in an output that marks the cell for the course's SaveAutoGrades: nbgrader gives a
    test cell a score from its outputs alone, and has no way for a cell to say "not decided"."""
    from IPython import get_ipython
    from IPython.display import display
    if get_ipython() is None:   # called outside a kernel: the sentence alone
        print(undecided_waits(keys))
        return
    display({"text/plain": undecided_waits(keys), UNDECIDED_MIME: {"checks": list(keys)}}, raw=True)
