"""tds-e4-modular-fourier: the circuit a grokked transformer uses for addition modulo p.

Source: Nanda, Chan, Lieberum, Smith and Steinhardt, "Progress measures for grokking via
mechanistic interpretability" (ICLR 2023), §3.1 ("The Fourier multiplication algorithm") and §4.
A one-layer transformer trained on a + b mod p (p = 113, 30% of the pairs) embeds each input as
cos(w_k a), sin(w_k a) for a few key frequencies w_k = 2πk/p, forms cos(w_k(a+b)) and sin(w_k(a+b))
with the product identities, and its logit for a candidate c is, up to a per-frequency weight,
Σ_k cos(w_k(a + b - c)), largest at c = (a + b) mod p. Their mainline run's key frequencies are
k ∈ {14, 35, 41, 42, 52} (§4.1, Fig. 3: five of the six non-zero frequencies in the embedding).

Here every frequency has weight one. Answers, for the variant's p, key frequencies, a, b and the
candidates `cs`: `logit_expr` (the logit as an expression in a, b, c), `logits` (its value at each
candidate), `answer` (the argmax over all c in 0..p-1), `table_entries` (one stored answer per
ordered pair (a, b): p²) and `fourier_numbers` (the cosine and the sine of w_k x for every key
frequency and residue x: 2Kp).
"""
from __future__ import annotations

import math

import sympy

from graders.numeric import Count, Numbers
from graders.problem import Mistake, Problem
from graders.symbolic import Expr, symbols_for

SYMBOLS = ("a", "b", "c")


def _read(q):
    p, freqs = int(q["p"]), [int(k) for k in q["freqs"]]
    a, b, cs = int(q["a"]), int(q["b"]), [int(c) for c in q["cs"]]
    if p < 3 or not freqs or any(not 0 < k < p for k in freqs) or len(set(freqs)) != len(freqs):
        raise ValueError("need p >= 3 and distinct key frequencies between 1 and p - 1")
    if not (0 <= a < p and 0 <= b < p) or not cs or any(not 0 <= c < p for c in cs):
        raise ValueError("a, b and the candidates must be residues modulo p")
    return p, freqs, a, b, cs


def _answers(q, *, sign=-1, turn=2 * math.pi, reduce=True, per_frequency=2):
    """`sign` is the sign of c inside the cosine, `turn` the angle of one full period (2π),
    `reduce` whether the argmax is taken modulo p, `per_frequency` how many numbers per residue."""
    p, freqs, a, b, cs = _read(q)

    def logit(c):
        return sum(math.cos(turn * k * (a + b + sign * c) / p) for k in freqs)

    every = [logit(c) for c in range(p)]
    best = max(range(p), key=lambda c: every[c])
    s = symbols_for(SYMBOLS)
    pi_turn = 2 * sympy.pi if turn == 2 * math.pi else sympy.Float(turn)
    return {
        "logit_expr": sympy.Add(*[sympy.cos(pi_turn * k * (s["a"] + s["b"] + sign * s["c"]) / p) for k in freqs]),
        "logits": [logit(c) for c in cs],
        "answer": best if reduce else a + b,
        "table_entries": p * p,
        "fourier_numbers": per_frequency * len(freqs) * p,
    }


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    out = {}
    for key, value in wrong.items():
        same = value == right[key] if key != "logit_expr" else sympy.srepr(value) == sympy.srepr(right[key])
        if not same:
            out[key] = value
    return out


class ModularFourierExercise(Problem):
    id = "tds-e4-modular-fourier"
    title = "The Fourier circuit of a grokked network: logits for addition modulo p"
    strand = "mathematics"
    kind = "exercise"
    assignment = "tds-exercises"
    symbols = SYMBOLS
    # A and B: Nanda et al.'s mainline run, p = 113 with its printed key frequencies {14, 35, 41, 42, 52}
    # (§4.1, Fig. 3); B has a + b >= p, so the modulus matters. C and D are illustrative: p = 97 is
    # the modulus of Power et al. 2022, p = 59 a smaller prime, and their frequency sets are invented
    # (a run with another seed or modulus picks its own few frequencies; the paper does not print them).
    variants = {
        "A": {"p": 113, "freqs": [14, 35, 41, 42, 52], "a": 37, "b": 58, "cs": [95, 96, 18, 0]},
        "B": {"p": 113, "freqs": [14, 35, 41, 42, 52], "a": 90, "b": 61, "cs": [38, 37, 75, 112]},
        "C": {"p": 97, "freqs": [8, 21, 33], "a": 20, "b": 45, "cs": [65, 64, 32, 1]},
        "D": {"p": 59, "freqs": [5, 17, 22, 29], "a": 40, "b": 33, "cs": [14, 15, 45, 30]},
    }
    checks = {
        "logit_expr": Expr(symbols=SYMBOLS, rtol=1e-6, ranges=(("a", (0, 112)), ("b", (0, 112)), ("c", (0, 112)))),
        "logits": Numbers(rtol=1e-6, atol=1e-9),
        "answer": Count(),
        "table_entries": Count(),
        "fourier_numbers": Count(),
    }
    cells = {"check_expression": ("logit_expr",),
             "check_numbers": ("logits", "answer", "table_entries", "fourier_numbers")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("rotation-by-plus-c",
                "the read-out rotated by +c: cos(w_k(a + b + c)) peaks where c = -(a + b) mod p. The "
                "unembedding pairs cos(w_k(a+b)) with cos(w_k c) and sin(w_k(a+b)) with sin(w_k c), and "
                "cos x cos y + sin x sin y = cos(x - y), so the logit is Σ_k cos(w_k(a + b - c)).",
                lambda q: _changed(q, sign=1),
                instant="which candidate the read-out makes every cosine agree on."),
        Mistake("frequency-without-full-turn",
                "w_k was taken as k/p; a frequency of the group Z_p must make a whole number of turns "
                "over p steps, w_k = 2πk/p, or the cosine does not repeat with period p.",
                lambda q: _changed(q, turn=1.0),
                instant="what makes a cosine on the residues repeat with the modulus."),
        Mistake("sum-not-reduced",
                "a + b was given without reducing it modulo p; candidates run from 0 to p - 1, and the "
                "cosines peak at (a + b) mod p.",
                lambda q: _changed(q, reduce=False),
                instant="which residue the largest logit sits on."),
        Mistake("cosines-only",
                "only the cosines were counted; the product identity cos(x + y) = cos x cos y - sin x sin y "
                "needs the sines as well, so each key frequency stores both, 2Kp numbers.",
                lambda q: _changed(q, per_frequency=1),
                instant="what the angle-addition identity needs from each input."),
    )


PROBLEM = ModularFourierExercise()
