"""A synthetic class for the similarity table: honest students who each write their own code, and planted copies.

Every student answers three notebooks (five in the benchmark), each with a code cell (`answer_code`) and a
symbolic cell (`answer_expr`). An honest student's code is built from the task's
usual pieces (the same idioms everyone uses), with names of their own, their own
order of independent lines, and a few lines of their own (checks, prints, rounding,
tolerances with constants they chose). Their symbolic answers are mostly right, in
one of several equivalent forms, or one of the few usual wrong ones.

A copier takes another student's cells, renames every name of theirs, reorders the
independent lines, rewrites the comments, and writes the source's (rare, wrong)
expression in another but equal form. `class_answers` returns the Answers the
similarity module compares; `write_course` lays the same class out as a course folder.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

from graders.course.similarity import Answers
from graders.variants import variant_for

ASSIGNMENT = "simclass"
NOTEBOOKS = ["n1-batching", "n2-decay", "n3-clipping"]          # the tests' class
ALL_NOTEBOOKS = NOTEBOOKS + ["n4-warmup", "n5-checkpoint"]      # the benchmark's
WORDS = ["total", "count", "steps", "size", "val", "result", "tmp", "n", "acc", "chunk", "per", "rounds",
         "micro", "tokens", "seq", "grad", "norm", "scale", "factor", "rate", "lam", "decay", "limit", "cap"]
TEMPLATE = "# YOUR CODE HERE\nraise NotImplementedError()"

# the task's usual pieces: (function, body lines) with {f} {a} {b} {c} {r} names; everyone uses one of these
CORE = {
    "n1-batching": [
        "def {f}({a}, {b}, {c}):\n    {r} = {b} * {c}\n    if {a} % {r}:\n        raise ValueError('not divisible')\n"
        "    return {a} // {r}",
        "def {f}({a}, {b}, {c}):\n    {r} = {c} * {b}\n    assert {a} % {r} == 0\n    return {a} // {r}",
        "def {f}({a}, {b}, {c}):\n    if {a} % ({b} * {c}) != 0:\n        raise ValueError({a})\n"
        "    return int({a} / ({b} * {c}))",
    ],
    "n2-decay": [
        "def {f}({a}, {b}, {c}):\n    return {a} - {b} * {c} * {a}",
        "def {f}({a}, {b}, {c}):\n    {r} = 1 - {b} * {c}\n    return {a} * {r}",
        "def {f}({a}, {b}, {c}):\n    {a} = {a} * (1 - {c} * {b})\n    return {a}",
    ],
    "n3-clipping": [
        "def {f}({a}, {b}, {c}):\n    {r} = sum(x * x for x in {a}) ** 0.5\n    if {r} > {b}:\n"
        "        return [x * {b} / {r} for x in {a}]\n    return list({a})",
        "def {f}({a}, {b}, {c}):\n    {r} = math.sqrt(sum(x ** 2 for x in {a}))\n    {c} = min(1.0, {b} / ({r} + 1e-6))\n"
        "    return [x * {c} for x in {a}]",
        "def {f}({a}, {b}, {c}):\n    {r} = 0.0\n    for x in {a}:\n        {r} += x * x\n    {r} = {r} ** 0.5\n"
        "    return [x * min(1, {b} / {r}) for x in {a}]",
    ],
    "n4-warmup": [
        "def {f}({a}, {b}, {c}):\n    if {a} < {c}:\n        return {b} * ({a} + 1) / {c}\n    return {b}",
        "def {f}({a}, {b}, {c}):\n    {r} = min(1.0, ({a} + 1) / {c})\n    return {b} * {r}",
        "def {f}({a}, {b}, {c}):\n    return {b} if {a} >= {c} else {b} * ({a} + 1) / {c}",
    ],
    "n5-checkpoint": [
        "def {f}({a}, {b}, {c}):\n    {r} = {a} * {b}\n    return {r} + 2 * {r} * {c}",
        "def {f}({a}, {b}, {c}):\n    return {a} * {b} * (1 + 2 * {c})",
        "def {f}({a}, {b}, {c}):\n    {r} = 0\n    for part in ({b}, 2 * {b} * {c}):\n        {r} += {a} * part\n"
        "    return {r}",
    ],
}
# lines of a student's own, with constants they choose
OWN = [
    "{x} = round({y} * {k1}, {d})",
    "print('{w1} {w2}:', {y}, {x})",
    "assert {y} > {k2}, '{w1} too small'",
    "{x} = {y} if {y} < {k3} else {k3} - {k2}",
    "{x} = [{y} * i + {k2} for i in range({d})]",
    "{x} = {k1} * {y} ** {d} - {k3}",
    "{x} = max({y}, {k2}) / ({k3} + {k1})",
    "for i in range({d}):\n    {y} = {y} * {k1} + {k2}",
]
RIGHT = {"n1-batching": ["B / (b * P)", "B / b / P", "(B / P) / b", "B * (b * P) ** -1", "B / (P * b)"],
         "n2-decay": ["theta * (1 - lr * lam)", "theta - lr * lam * theta", "theta - theta * lam * lr"],
         "n3-clipping": ["c / sqrt(g1**2 + g2**2)", "c / (g1*g1 + g2*g2) ** 0.5", "c * (g1**2 + g2**2) ** -0.5"],
         "n4-warmup": ["eta * t / W", "t * eta / W", "eta / W * t"],
         "n5-checkpoint": ["4 * N * (1 + 2)", "12 * N", "4*N + 8*N"]}
USUAL_WRONG = {"n1-batching": ["B * b / P", "B / b", "b * P / B"],
               "n2-decay": ["theta * (1 - lr)", "theta - lam * theta", "theta * lr * lam"],
               "n3-clipping": ["c / (g1**2 + g2**2)", "c * sqrt(g1**2 + g2**2)", "sqrt(g1**2 + g2**2) / c"],
               "n4-warmup": ["eta * W / t", "eta * t", "eta / t"],
               "n5-checkpoint": ["4 * N", "8 * N", "2 * N * 4 + N"]}
# the planted pairs' shared mistakes, each written two equal ways
RARE_WRONG = [{"n1-batching": ("(B - b) / (b * P)", "B / (P * b) - 1 / P"),
               "n2-decay": ("theta * (1 - lr * lam) ** 2", "theta * (1 - lr*lam) * (1 - lam*lr)"),
               "n3-clipping": ("c / sqrt(g1**2 + g2)", "c * (g2 + g1*g1) ** -0.5"),
               "n4-warmup": ("eta * (t - 1) / W", "eta*t/W - eta/W"),
               "n5-checkpoint": ("4 * N * 3 + 2", "2 + 12*N")},
              {"n1-batching": ("B / (b * P + 1)", "B / (1 + P*b)"),
               "n2-decay": ("theta * (1 - lr) * (1 - lam)", "theta - theta*lr - theta*lam + theta*lr*lam"),
               "n3-clipping": ("c * g1 / sqrt(g1**2 + g2**2)", "g1 * c * (g1*g1 + g2*g2) ** -0.5"),
               "n4-warmup": ("eta * t / (W + 1)", "t * eta / (1 + W)"),
               "n5-checkpoint": ("4 * N * 2 + 4", "8 * N + 4")}]
TARGET = "answer"


def _names(rng: random.Random, count: int) -> list[str]:
    picked = rng.sample(WORDS, count)
    return [f"{w}{rng.choice(['', '_', '_s', '2', '_v'])}" for w in picked]


def honest(rng: random.Random, notebook: str) -> dict:
    """A student's own plan for one notebook's code cell: the pieces, the names, their order."""
    f, a, b, c, r, x, y = _names(rng, 7)
    core = rng.choice(CORE[notebook])
    own = []
    for line in rng.sample(OWN, rng.randint(2, 4)):
        own.append(line.format(x="{x%d}" % len(own), y="{y}", k1=round(rng.uniform(0.1, 9.9), rng.randint(1, 3)),
                               k2=rng.randint(1, 999), k3=rng.randint(2, 5000), d=rng.randint(2, 9),
                               w1=rng.choice(WORDS), w2=rng.choice(WORDS)))
    names = {"f": f, "a": a, "b": b, "c": c, "r": r, "y": y}
    names.update({f"x{i}": n for i, n in enumerate(_names(rng, len(own)))})
    setup = ["{y} = %d" % rng.randint(2, 400)]
    return {"core": core, "setup": setup, "own": own, "names": names,
            "call": "{x_out} = {f}({y}, 2, 3)", "comment": rng.choice(["# my solution", "# step by step", ""])}


def render(plan: dict) -> str:
    names = dict(plan["names"], x_out=plan["names"].get("out", plan["names"]["f"] + "_out"))
    lines = [plan["comment"]] if plan["comment"] else []
    lines += [plan["core"]] + plan["setup"] + plan["own"] + [plan["call"]]
    return "\n".join(line.format(**names) if "{" in line else line for line in lines) + "\n"


def copied(rng: random.Random, plan: dict) -> dict:
    """The copier's cell: the source's plan with every name renamed, the independent lines reordered."""
    fresh = _names(rng, len(plan["names"]) + 2)
    taken = set(plan["names"].values())
    fresh = [n + "_c" if n in taken else n for n in fresh]
    names = dict(zip(plan["names"], fresh))
    own = list(plan["own"])
    rng.shuffle(own)
    own.reverse()
    return dict(plan, names=names, own=own, comment="# worked this out myself")


def expression_cell(expr: str, helper: bool, rng: random.Random) -> str:
    if helper and "(b * P)" in expr:
        return f"per_round = b * P\n{TARGET} = {expr.replace('(b * P)', 'per_round')}\n"
    return f"{TARGET} = {expr}\n"


def class_answers(students: int = 30, copies: tuple = ((0, 7), (12, 25)), seed: int = 1,
                  wrong_share: float = 0.2, notebooks: list = NOTEBOOKS) -> tuple[Answers, list]:
    """The class of `students` (ids s000...), with student j copying student i for each (i, j) in `copies`.

    Returns the Answers and the copied pairs as (a, b) id tuples, sorted."""
    rng = random.Random(seed)
    ids = [f"s{i:03d}" for i in range(students)]
    answers = Answers(ASSIGNMENT)
    for nb in notebooks:
        answers.templates[(nb, "answer_code")] = TEMPLATE
        answers.templates[(nb, "answer_expr")] = TEMPLATE
    plans = {}
    for i, sid in enumerate(ids):
        cells = answers.cells[sid] = {}
        for nb in notebooks:
            answers.variants[(sid, nb)] = variant_for(sid, nb)
            plans[(sid, nb)] = plan = honest(rng, nb)
            cells[(nb, "answer_code")] = render(plan)
            pool = USUAL_WRONG[nb] if rng.random() < wrong_share else RIGHT[nb]
            cells[(nb, "answer_expr")] = expression_cell(rng.choice(pool), rng.random() < 0.3, rng)
    pairs = []
    for number, (source, copier) in enumerate(copies):
        s, c = ids[source], ids[copier]
        for nb in notebooks:
            answers.cells[c][(nb, "answer_code")] = render(copied(rng, plans[(s, nb)]))
            first, second = RARE_WRONG[number % len(RARE_WRONG)][nb]
            answers.cells[s][(nb, "answer_expr")] = expression_cell(first, True, rng)
            answers.cells[c][(nb, "answer_expr")] = expression_cell(second, False, rng)
        pairs.append((min(s, c), max(s, c)))
    return answers, sorted(pairs)


def _notebook(cells: dict) -> dict:
    out = []
    for grade_id, source in cells.items():
        out.append({"cell_type": "markdown", "metadata": {}, "source": f"Answer {grade_id} below."})
        out.append({"cell_type": "code", "execution_count": None, "outputs": [], "source": source.splitlines(True),
                    "metadata": {"nbgrader": {"grade": False, "grade_id": grade_id, "locked": False,
                                              "schema_version": 3, "solution": True, "task": False}}})
    return {"cells": out, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def write_course(root: Path, answers: Answers) -> Path:
    """The class as a course folder nbgrader's default layout reads: release/ and submitted/<student>/."""
    release = root / "release" / answers.assignment
    release.mkdir(parents=True)
    notebooks = sorted({n for n, _ in answers.templates})
    for nb in notebooks:
        cells = {g: s for (n, g), s in answers.templates.items() if n == nb}
        (release / f"{nb}.ipynb").write_text(json.dumps(_notebook(cells)))
    for student, cells in answers.cells.items():
        folder = root / "submitted" / student / answers.assignment
        folder.mkdir(parents=True)
        for nb in notebooks:
            mine = {g: s for (n, g), s in cells.items() if n == nb}
            (folder / f"{nb}.ipynb").write_text(json.dumps(_notebook(mine)))
    (root / "nbgrader_config.py").write_text(
        "c = get_config()\nc.CourseDirectory.course_id = 'simclass'\n")
    return root
