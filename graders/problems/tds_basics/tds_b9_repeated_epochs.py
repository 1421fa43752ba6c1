"""tds-b9-repeated-epochs: epochs and repetitions when the unique data run out.

The term. A corpus holds U unique tokens; a run trains on D tokens. It makes D / U passes
(epochs) over the corpus, and each token is seen R = D / U - 1 times more than once: the
repetitions, counted the way Muennighoff et al. (2023, "Scaling Data-Constrained Language
Models", NeurIPS) count them (R = 0 for a single pass). Their finding, in words only (tds-w3
grades their effective-data law): with a fixed compute budget, up to about 4 epochs of repeated
data gave almost the same loss as unique data, and the value of further repetition decays
towards nothing.

Answers, for the variant's `unique_tokens` and run `budgets` (tokens seen): `epochs` and
`repetitions` (one per budget) and `four_epoch_budget`, the most tokens a run can see without
going past 4 epochs.
"""
from __future__ import annotations

import math

from graders.numeric import Number, Numbers
from graders.problem import Mistake, Problem


def _read(q):
    u = float(q["unique_tokens"])
    budgets = [float(d) for d in q["budgets"]]
    if not u > 0 or not budgets or any(not d > 0 for d in budgets):
        raise ValueError("unique_tokens and every budget must be positive")
    return u, budgets


def _answers(q, *, inverted=False, first_pass_counted=False, four_counts="epochs"):
    u, budgets = _read(q)
    epochs = [(u / d) if inverted else (d / u) for d in budgets]
    reps = [e if first_pass_counted else e - 1 for e in epochs]
    return {"epochs": epochs, "repetitions": reps,
            "four_epoch_budget": 4 * u if four_counts == "epochs" else 5 * u}


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    out = {key: wrong[key] for key in ("epochs", "repetitions")
           if any(not math.isclose(a, b, rel_tol=1e-9) for a, b in zip(wrong[key], right[key]))}
    if not math.isclose(wrong["four_epoch_budget"], right["four_epoch_budget"], rel_tol=1e-9):
        out["four_epoch_budget"] = wrong["four_epoch_budget"]
    return out


class RepeatedEpochsBasics(Problem):
    id = "tds-b9-repeated-epochs"
    title = "Repeated data: epochs, repetitions and the four-epoch budget"
    strand = "basics"
    kind = "basics"
    assignment = "tds-basics"
    # A Galactica's corpus (Taylor et al. 2022: 106B tokens; the 120B model saw 450B tokens, the
    # paper's 4.25 epochs); B English Wikipedia, about 3B tokens (the count in GPT-3's Table 2.2),
    # as the only corpus of a small model; C a corpus of 45B tokens for a 9B model, the largest
    # size Muennighoff et al. trained, whose Chinchilla budget is about 180B; D a 20B-token corpus
    # of a lower-resource language for a 7B model (140B tokens at 20 per parameter, 1T as Llama 1).
    # B, C and D are planning cases built on real sizes, not runs a paper reports.
    variants = {
        "A": {"unique_tokens": 106e9, "budgets": [212e9, 450e9, 1.4e12]},
        "B": {"unique_tokens": 3e9, "budgets": [9e9, 30e9, 60e9]},
        "C": {"unique_tokens": 45e9, "budgets": [90e9, 180e9, 720e9]},
        "D": {"unique_tokens": 20e9, "budgets": [40e9, 140e9, 1e12]},
    }
    checks = {"epochs": Numbers(rtol=1e-6), "repetitions": Numbers(rtol=1e-6), "four_epoch_budget": Number(rtol=1e-6)}
    cells = {"check_epochs": ("epochs", "repetitions", "four_epoch_budget")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("first-pass-counted",
                "the repetitions were given as D / U; the first pass over the corpus is not a repetition, so "
                "R = D / U - 1 (zero for a single epoch).",
                lambda q: _changed(q, first_pass_counted=True),
                instant="whether the first pass through the corpus counts as a repetition."),
        Mistake("ratio-inverted",
                "the epochs were taken as U / D; an epoch is one pass over the unique tokens, so the run makes "
                "D / U of them.",
                lambda q: _changed(q, inverted=True),
                instant="what one epoch is measured in."),
        Mistake("four-repetitions",
                "the budget allowed four repetitions, 5 U tokens; Muennighoff et al.'s finding is about four "
                "epochs, 4 U tokens (three repetitions).",
                lambda q: _changed(q, four_counts="repetitions"),
                instant="the difference between an epoch and a repetition in Muennighoff et al.'s finding."),
    )


PROBLEM = RepeatedEpochsBasics()
