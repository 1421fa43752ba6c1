"""The Problem base: references and declared mistakes are computed once per variant."""
import subprocess
import sys
from pathlib import Path

from graders import numeric
from graders.problem import Mistake, Problem


class Counting(Problem):
    """A problem that counts how often its reference and its mistake are computed."""
    id = "counting"
    variants = {"A": {"n": 2}, "B": {"n": 3}}
    checks = {"double": numeric.Number(points=1), "square": numeric.Number(points=1)}

    def __init__(self):
        self.calls = {"solve": 0, "wrong": 0}
        self.mistakes = (Mistake("tripled", "tripled instead of doubling.", self._tripled),
                         Mistake("cubed", "cubed instead of squaring.", lambda q: {"square": q["n"] ** 3}))

    def solve(self, params):
        self.calls["solve"] += 1
        return {"double": 2 * params["n"], "square": params["n"] ** 2}

    def _tripled(self, params):
        self.calls["wrong"] += 1
        return {"double": 3 * params["n"]}


def test_the_reference_and_the_mistakes_are_computed_once_per_variant():
    p = Counting()
    for _ in range(3):
        for params in p.variants.values():
            right = p.grade(params, {"double": 2 * params["n"], "square": params["n"] ** 2})
            assert right.score == 2
            wrong = p.grade(params, {"double": 3 * params["n"], "square": params["n"] ** 2})
            assert wrong.score == 1 and wrong.mistakes == {"double": "tripled"}
    assert p.calls == {"solve": 2, "wrong": 2}


def test_a_correct_answer_computes_no_mistakes():
    p = Counting()
    assert p.grade({"n": 5}, {"double": 10, "square": 25}).score == 2
    assert p.calls["wrong"] == 0


def test_the_remembered_answers_are_copies_and_bounded():
    p = Counting()
    p.reference({"n": 2})["double"] = "spoilt"
    assert p.reference({"n": 2})["double"] == 4
    for n in range(Problem.MEMO_ENTRIES + 5):
        p.reference({"n": n})
    assert len(p._memos[("solve", Counting.solve)]) == Problem.MEMO_ENTRIES


def test_replacing_solve_or_the_mistakes_is_seen_at_once():
    p = Counting()
    assert p.reference({"n": 2})["double"] == 4
    p.solve = lambda q: {"double": 0, "square": 0}
    assert p.reference({"n": 2})["double"] == 0
    p.mistakes = p.mistakes[1:]
    assert [m.name for m, _ in p.mistaken({"n": 2})] == ["cubed"]


def test_getting_one_problem_imports_only_its_module():
    code = ("import sys; from graders import problems; problems.get('w1-memory'); "
            "print(sorted(m for m in sys.modules if m.startswith('graders.problems.') and m.count('.') == 3 and '.common.' not in m))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout
    assert out.strip() == "['graders.problems.worked.w1_memory']"
