"""tds-b4-grokking: reading a grokking run's log, the fit and the generalisation far apart.

The term. Grokking (Power, Burda, Edwards, Babuschkin and Misra, "Grokking: Generalization
Beyond Overfitting on Small Algorithmic Datasets", 2022, arXiv 2201.02177) is generalisation that
arrives long after the training set is fitted: on small modular-arithmetic tables the training
accuracy reaches ~100% within about 10^3 optimisation steps while the validation accuracy stays
near chance until about 10^5 steps, and reaches ~100% only near 10^6 (their Fig. 1, with a
log-scaled step axis: "it takes close to 10^6 steps for validation accuracy to reach that level, and
we see very little evidence of any generalization until 10^5 steps"). The word names that delay.

The computed check, on a logged run (steps at which the log was written, training and validation
accuracy there; the logs are made up, shaped like Fig. 1 but with shorter delays, of 100 to
256 times against its thousand): `fit_step` (the first logged step whose
training accuracy is at least `threshold`), `generalise_step` (the same for validation accuracy),
and `delay_factor` (generalise_step / fit_step, how many times longer generalisation took).
"""
from __future__ import annotations

from graders.numeric import Count, Number
from graders.problem import Mistake, Problem


def _read(q):
    steps, train, val = list(q["steps"]), [float(a) for a in q["train_acc"]], [float(a) for a in q["val_acc"]]
    threshold = float(q["threshold"])
    if not steps or not len(steps) == len(train) == len(val) or steps != sorted(steps) or steps[0] < 1:
        raise ValueError("steps, train_acc and val_acc must be equally long, with increasing steps >= 1")
    return steps, train, val, threshold


def _first(steps, accs, threshold, strict=False, index=False):
    for i, (s, a) in enumerate(zip(steps, accs)):
        if (a > threshold if strict else a >= threshold):
            return i if index else s
    raise ValueError("the log never reaches the threshold")


def _answers(q, *, strict=False, index=False, difference=False):
    steps, train, val, threshold = _read(q)
    fit = _first(steps, train, threshold, strict, index)
    gen = _first(steps, val, threshold, strict, index)
    return {"fit_step": fit, "generalise_step": gen,
            "delay_factor": (gen - fit) if difference else gen / max(fit, 1)}


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    return {k: v for k, v in wrong.items() if v != right[k]}


class GrokkingBasics(Problem):
    id = "tds-b4-grokking"
    title = "Grokking: the fit and the generalisation, read from a log"
    strand = "basics"
    kind = "basics"
    assignment = "tds-basics"
    # Logs at roughly log-spaced steps; the chance level of a mod-97 table is about 0.01.
    variants = {
        "A": {"steps": [10, 30, 100, 300, 1000, 3000, 10000, 30000, 100000, 300000],
              "train_acc": [0.02, 0.1, 0.45, 0.93, 0.99, 1.0, 1.0, 1.0, 1.0, 1.0],
              "val_acc": [0.01, 0.01, 0.01, 0.01, 0.02, 0.02, 0.05, 0.41, 0.99, 1.0], "threshold": 0.99},
        "B": {"steps": [20, 50, 200, 500, 2000, 5000, 20000, 50000, 200000],
              "train_acc": [0.05, 0.3, 0.97, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
              "val_acc": [0.01, 0.01, 0.01, 0.02, 0.03, 0.2, 0.95, 0.99, 1.0], "threshold": 0.95},
        "C": {"steps": [100, 300, 1000, 3000, 10000, 30000, 100000, 300000, 1000000],
              "train_acc": [0.01, 0.2, 0.85, 0.9, 0.98, 1.0, 1.0, 1.0, 1.0],
              "val_acc": [0.01, 0.01, 0.01, 0.01, 0.02, 0.04, 0.3, 0.9, 0.97], "threshold": 0.9},
        "D": {"steps": [10, 40, 160, 640, 2560, 10240, 40960, 163840],
              "train_acc": [0.1, 0.6, 0.995, 1.0, 1.0, 1.0, 1.0, 1.0],
              "val_acc": [0.01, 0.01, 0.01, 0.01, 0.01, 0.3, 0.995, 1.0], "threshold": 0.995},
    }
    checks = {"fit_step": Count(), "generalise_step": Count(), "delay_factor": Number(rtol=1e-6)}
    cells = {"check_grokking": ("fit_step", "generalise_step", "delay_factor")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("log-index-not-step",
                "these are positions in the log, not optimisation steps; report the step at which the "
                "accuracy was logged.",
                lambda q: _changed(q, index=True),
                instant="what the step column of the log records."),
        Mistake("threshold-excluded",
                "a logged accuracy equal to the threshold already reaches it ('at least', not 'above').",
                lambda q: _changed(q, strict=True),
                instant="the exact wording of the threshold condition."),
        Mistake("delay-as-difference",
                "the delay was given as a difference of steps; the question asks how many times longer "
                "generalisation took, generalise_step / fit_step.",
                lambda q: _changed(q, difference=True),
                instant="how the question defines the delay."),
    )


PROBLEM = GrokkingBasics()
