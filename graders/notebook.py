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
    print(f"Variant {variant}: {result.score:g} of {result.max_score:g} points in this cell")
    for text in result.feedback:
        print(text)
    return float(result.score)
