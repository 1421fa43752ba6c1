"""tds-c1-stability-picture: what to picture. Gradient descent on one quadratic at four rates.

The picture (the 1-D core of Cohen et al., "Gradient Descent on Neural Networks Typically Occurs
at the Edge of Stability", ICLR 2021, §2): on L(x) = ½ a x², each step multiplies x by 1 - η a, so
the iterates x_t = (1 - η a)^t x_0 fall into three regimes, read off η a alone:
- 0 < η a < 1: x shrinks without changing sign (monotone);
- 1 < η a < 2: x flips sign every step and still shrinks (oscillating);
- η a > 2: x flips sign and grows (diverging), which is where a sharpness above 2/η puts a run.
The checks are the numbers the figure is drawn from: each rate's trajectory x_0 .. x_T, its
regime (0 monotone, 1 oscillating, 2 diverging), and the distance |x_T| it ends at.
"""
from __future__ import annotations

import math

from graders.numeric import Numbers
from graders.problem import Mistake, Problem

MONOTONE, OSCILLATING, DIVERGING = 0, 1, 2


def _read(q):
    a, x0, steps = float(q["curvature"]), float(q["x0"]), int(q["steps"])
    lrs = [float(r) for r in q["lrs"]]
    if not (a > 0 and x0 != 0 and 1 <= steps <= 200) or not lrs or any(not r > 0 for r in lrs):
        raise ValueError("need a positive curvature, a nonzero start, 1..200 steps and positive rates")
    if any(math.isclose(r * a, k) for r in lrs for k in (1.0, 2.0)):
        raise ValueError("keep every rate off the regime boundaries η a = 1 and η a = 2")
    return a, x0, steps, lrs


def regime(lr, a, edges=(1.0, 2.0)):
    h = lr * a
    return MONOTONE if h < edges[0] else OSCILLATING if h < edges[1] else DIVERGING


def _answers(q, *, sign=-1, edges=(1.0, 2.0), extra_step=0):
    a, x0, steps, lrs = _read(q)
    trajectories = [[x0 * (1 + sign * lr * a) ** t for t in range(steps + 1 + extra_step)] for lr in lrs]
    return {"trajectories": [[x for x in path] for path in trajectories],
            "regimes": [regime(lr, a, edges) for lr in lrs],
            "final_distances": [abs(path[-1]) for path in trajectories]}


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    return {k: v for k, v in wrong.items() if v != right[k]}


class _Trajectories(Numbers):
    """A list of trajectories: each a list of floats, compared entry by entry."""

    def judge(self, ref, ans):
        from graders.feedback import FAIL, INVALID, PASS, Outcome
        if not isinstance(ans, (list, tuple)) or len(ans) != len(ref):
            return Outcome(INVALID if not isinstance(ans, (list, tuple)) else FAIL,
                           f"should be a list of {len(ref)} trajectories, one per rate.")
        for i, (r, a) in enumerate(zip(ref, ans)):
            outcome = Numbers.judge(self, r, a)
            if not outcome.passed:
                return Outcome(outcome.status, f"trajectory {i}: {outcome.reason}")
        return Outcome(PASS)


class StabilityPictureConcept(Problem):
    id = "tds-c1-stability-picture"
    title = "Gradient descent on one quadratic: monotone, oscillating, diverging"
    strand = "concept"
    kind = "concept"
    assignment = "tds-concept"
    # One curvature each, four rates: one per regime and one near the edge (η a just under or over 2).
    variants = {
        "A": {"curvature": 100.0, "lrs": [0.005, 0.015, 0.019, 0.021], "x0": 1.0, "steps": 12},
        "B": {"curvature": 20.0, "lrs": [0.02, 0.07, 0.098, 0.11], "x0": 0.5, "steps": 15},
        "C": {"curvature": 4.0, "lrs": [0.1, 0.4, 0.55, 0.45], "x0": 2.0, "steps": 10},
        "D": {"curvature": 250.0, "lrs": [0.0016, 0.006, 0.0079, 0.0082], "x0": 1.0, "steps": 14},
    }
    checks = {"trajectories": _Trajectories(rtol=1e-9, atol=1e-12, points=2.0),
              "regimes": Numbers(exact=True), "final_distances": Numbers(rtol=1e-9, atol=1e-12)}
    cells = {"check_trajectories": ("trajectories",), "check_regimes": ("regimes", "final_distances")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("ascent-sign", "the step went uphill: gradient descent subtracts η a x, so x_{t+1} = (1 - η a) x_t.",
                lambda q: _changed(q, sign=1),
                instant="the gradient descent step on the quadratic."),
        Mistake("diverges-past-one-over-a",
                "η a between 1 and 2 makes the iterate oscillate, but it still shrinks; it diverges only past "
                "η a = 2.", lambda q: _changed(q, edges=(1.0, 1.0)),
                instant="the boundary between oscillating and diverging."),
        Mistake("one-step-too-many",
                "the trajectory should hold x_0 .. x_T, T + 1 values; this one has one step more.",
                lambda q: _changed(q, extra_step=1),
                instant="which iterates the trajectory holds, from its first entry to its last."),
    )


PROBLEM = StabilityPictureConcept()
