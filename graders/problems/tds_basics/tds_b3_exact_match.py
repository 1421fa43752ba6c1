"""tds-b3-exact-match: an all-or-nothing metric over L tokens, and what it does to a smooth gain.

The term. An exact-match score counts an answer of L tokens as right only when every token is
right. If the model gets each token right with probability p, independently, the expected score
is p^L (Schaeffer, Miranda and Koyejo, "Are Emergent Abilities of Large Language Models a
Mirage?", NeurIPS 2023, §2: accuracy ~ p^L for a target of length L). A metric that gives
partial credit, such as the token edit distance, is instead linear in the per-token error:
L (1 - p) wrong tokens on average (same section).

Answers, for the variant's per-token accuracies `per_token` and answer length `length`:
`exact_match` (p^L for each p), `expected_token_errors` (L (1 - p) for each p), and
`per_token_needed` (the per-token accuracy at which the expected exact match reaches `target`,
target^(1/L)).
"""
from __future__ import annotations

from graders.numeric import Number, Numbers
from graders.problem import Mistake, Problem


def _read(q):
    length = q["length"]
    if isinstance(length, bool) or not isinstance(length, (int, float)) or length != int(length) or length < 1:
        raise ValueError(f"length must be a whole number >= 1, not {length!r}")
    ps = [float(p) for p in q["per_token"]]
    target = float(q["target"])
    if not ps or any(not 0 <= p <= 1 for p in ps) or not 0 < target < 1:
        raise ValueError("per_token must hold probabilities and target must lie strictly between 0 and 1")
    return int(length), ps, target


def _answers(q, *, score=None, needed=None):
    length, ps, target = _read(q)
    score = score or (lambda p, n: p ** n)
    return {
        "exact_match": [score(p, length) for p in ps],
        "expected_token_errors": [length * (1 - p) for p in ps],
        "per_token_needed": (needed or (lambda t, n: t ** (1 / n)))(target, length),
    }


def _only(keys, **kw):
    def wrong(q):
        right, bad = _answers(q), _answers(q, **kw)
        return {k: bad[k] for k in keys if bad[k] != right[k]}
    return wrong


class ExactMatchBasics(Problem):
    id = "tds-b3-exact-match"
    title = "Exact match: all L tokens right, or nothing"
    strand = "basics"
    kind = "basics"
    assignment = "tds-basics"
    # Answer lengths of the kind Schaeffer et al. discuss (multi-digit arithmetic, short phrases).
    variants = {
        "A": {"per_token": [0.5, 0.8, 0.9, 0.99], "length": 5, "target": 0.5},
        "B": {"per_token": [0.6, 0.85, 0.95, 0.999], "length": 10, "target": 0.9},
        "C": {"per_token": [0.7, 0.9, 0.97, 0.995], "length": 4, "target": 0.75},
        "D": {"per_token": [0.4, 0.75, 0.92, 0.98], "length": 8, "target": 0.6},
    }
    checks = {
        "exact_match": Numbers(rtol=1e-6),
        "expected_token_errors": Numbers(rtol=1e-6),
        "per_token_needed": Number(rtol=1e-6),
    }
    cells = {"check_exact_match": ("exact_match", "expected_token_errors", "per_token_needed")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("linear-in-length",
                "the score was taken as 1 - L (1 - p), as if errors only added up; exact match needs every "
                "token right, a product of L probabilities.",
                _only(("exact_match",), score=lambda p, n: 1 - n * (1 - p)),
                instant="how independent per-token successes combine into one sequence score."),
        Mistake("any-token-right",
                "1 - (1 - p)^L is the chance that at least one token is right; exact match asks that all are.",
                _only(("exact_match",), score=lambda p, n: 1 - (1 - p) ** n),
                instant="the event exact match counts."),
        Mistake("needed-as-power",
                "the needed per-token accuracy was computed as target^L; invert p^L = target, so p is the "
                "L-th root of the target.",
                _only(("per_token_needed",), needed=lambda t, n: t ** n),
                instant="solving the exact-match equation for the per-token accuracy."),
    )


PROBLEM = ExactMatchBasics()
