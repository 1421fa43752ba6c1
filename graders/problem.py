"""A graded item: its parameters, reference solution, checks and declared mistakes.

Each problem module in `graders.problems` defines one subclass of `Problem`
and an instance named PROBLEM. The notebook `source/<assignment>/<id>.ipynb`
holds the teaching; the class holds everything the grade depends on.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass
from typing import Callable

from graders import transport
from graders.feedback import FAIL, INVALID, Outcome, Result, line


@dataclass(frozen=True)
class Mistake:
    """A common mistake: the answers it produces and the two texts it earns.

    `feedback` is released after the deadline and may explain the slip in full; `instant` is
    what `chapter serve` shows at once: the idea the mistake misses, never a direction, a
    factor, a unit conversion, a value or a formula (graders.giveaway states the policy and
    holds the words it refuses; the gate enforces it)."""
    name: str
    feedback: str
    wrong: Callable[[dict], dict]   # params -> {key: the wrong answer this mistake gives}
    instant: str = ""


@dataclass(frozen=True)
class Probe:
    """A student function called on hidden inputs; its outputs are the answer."""
    function: str
    calls: list            # one list of JSON-able arguments per call


@contextlib.contextmanager
def one_torch_thread():
    """Run torch on one intra-op thread, then restore the setting.

    References that train or step a model run in the grading processes, which fork
    workers; a process that forks after torch has started its OpenMP pool leaves the
    children deadlocked on their first parallel op. The tensors are tiny, so extra
    threads only add overhead, and the results do not depend on them.
    """
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def seed_for(params: dict, salt: str) -> int:
    """A deterministic seed from the parameters (so hidden inputs differ per variant)."""
    text = json.dumps(params, sort_keys=True, default=str) + salt
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


class Problem:
    id: str = ""
    title: str = ""
    strand: str = "mathematics"
    kind: str = "exercise"       # "worked" | "exercise" | "basics" | ...
    assignment: str = ""         # the nbgrader assignment holding the notebook
    symbols: tuple[str, ...] = ()
    variants: dict[str, dict] = {}
    checks: dict = {}            # answer key -> check (numeric.Number, symbolic.Expr, ...)
    cells: dict[str, tuple[str, ...]] = {}   # hidden-test cell grade_id -> its keys
    mistakes: tuple[Mistake, ...] = ()

    # --- to be written by each problem -------------------------------------
    def solve(self, params: dict) -> dict:
        """The reference answers for `params`, keyed like the answers."""
        raise NotImplementedError

    def probes(self, params: dict) -> dict[str, Probe]:
        """Student functions to call on hidden inputs, by answer key (none by default)."""
        return {}

    def breakdown(self, params: dict) -> list[str]:
        """Why this configuration could not really run, by the item's own account (a checkpoint
        interval shorter than one checkpoint write, say); empty when it could. The gate refuses
        a variant with any."""
        return []

    # --- shared ---------------------------------------------------------------
    MEMO_ENTRIES = 16    # variants remembered per problem (an item has four)

    def _memo(self, kind: tuple, params: dict, compute):
        """`compute(params)`, remembered per parameter set: references and declared mistakes
        depend on the (trusted) variant only, and some train a model. What is remembered
        before a fork (the engine's workers, the bounded grading child) the child reuses."""
        memo = self.__dict__.setdefault("_memos", {}).setdefault(kind, {})
        key = json.dumps(params, sort_keys=True, default=repr)
        if key not in memo:
            if len(memo) >= self.MEMO_ENTRIES:
                memo.pop(next(iter(memo)))
            memo[key] = compute(params)
        return memo[key]

    def reference(self, params: dict) -> dict:
        """`solve(params)`, computed once per variant (a new dict each call: the values are shared)."""
        solve = self.solve   # keyed by the function too: a test may replace it
        return dict(self._memo(("solve", getattr(solve, "__func__", solve)), params, solve))

    def mistaken(self, params: dict) -> list[tuple[Mistake, dict]]:
        """Each declared mistake with the answers it gives for `params`, computed once per variant."""
        return [(m, dict(wrong)) for m, wrong in
                self._memo(("mistakes", self.mistakes), params, lambda q: [(m, m.wrong(q)) for m in self.mistakes])]

    def points(self, keys=None) -> float:
        return float(sum(self.checks[k].points for k in (keys or self.checks)))

    def grade(self, params: dict, answers: dict, keys=None) -> Result:
        """Score `answers` for `params`; never raises on a bad answer.

        `keys` restricts grading to some answer keys (one hidden-test cell).
        """
        keys = list(keys or self.checks)
        if not isinstance(answers, dict):
            answers = {}
        reference = self.reference(params)
        result = Result(max_score=self.points(keys))
        wrong_answers = None
        for key in keys:
            check = self.checks[key]
            if key not in answers:
                outcome = Outcome(INVALID, f"is missing; assign `{key} = ...` in an answer cell.")
            else:
                try:
                    outcome = check.judge(reference[key], transport.encode(answers[key]))
                except Exception as exc:  # noqa: BLE001 - a bad answer must never crash grading
                    outcome = Outcome(INVALID, f"could not be checked ({type(exc).__name__}).")
            hint = None
            if outcome.status == FAIL:
                if wrong_answers is None:
                    wrong_answers = self.mistaken(params)
                matched = self._diagnose(key, check, answers[key], wrong_answers)
                if matched is not None:
                    hint = matched.feedback
                    result.mistakes[key] = matched.name
            if outcome.passed:
                result.score += check.points
            result.outcomes[key] = outcome
            result.feedback.append(line(key, outcome, hint))
        return result

    @staticmethod
    def _diagnose(key, check, answer, wrong_answers):
        for mistake, wrong in wrong_answers:
            if key in wrong:
                try:
                    if check.judge(wrong[key], transport.encode(answer)).passed:
                        return mistake
                except Exception:  # noqa: BLE001
                    continue
        return None

    def __repr__(self) -> str:
        return f"<Problem {self.id}: {self.title}>"
