"""tds-e4-modular-fourier: the logits against the circuit built from embeddings, and the argmax
against modular addition itself."""
import math

import numpy as np
import sympy

from graders import problems

P = problems.get("tds-e4-modular-fourier")


def test_the_circuit_built_from_cos_and_sin_tables_gives_the_reference_logits():
    """Build the circuit as Nanda et al. 2023 §3.1 describe it: embed a and b as cos/sin of w_k x,
    form cos and sin of w_k(a+b) by the angle-addition identities, read out with cos/sin of w_k c."""
    for q in P.variants.values():
        r = P.solve(q)
        p, a, b = q["p"], q["a"], q["b"]
        w = 2 * np.pi * np.array(q["freqs"]) / p
        ca, sa, cb, sb = np.cos(w * a), np.sin(w * a), np.cos(w * b), np.sin(w * b)
        cab, sab = ca * cb - sa * sb, sa * cb + ca * sb
        c = np.arange(p)[:, None]
        logits = (cab * np.cos(w * c) + sab * np.sin(w * c)).sum(axis=1)
        assert np.allclose(logits[q["cs"]], r["logits"])
        assert int(np.argmax(logits)) == r["answer"] == (a + b) % p
        assert math.isclose(logits[r["answer"]], len(q["freqs"]))


def test_the_mainline_run_uses_the_printed_modulus_and_key_frequencies():
    """Nanda et al. 2023, §4.1 / Fig. 3: p = 113, and five key frequencies k in {14, 35, 41, 42, 52}."""
    for label in "AB":
        q = P.variants[label]
        assert q["p"] == 113 and q["freqs"] == [14, 35, 41, 42, 52]
    r = P.solve(P.variants["A"])
    assert r["table_entries"] == 113 * 113 == 12769 and r["fourier_numbers"] == 2 * 5 * 113


def test_argmax_is_modular_addition_for_every_pair_of_a_small_variant():
    q = dict(P.variants["D"])
    for a in range(q["p"]):
        for b in range(0, q["p"], 7):
            assert P.solve({**q, "a": a, "b": b})["answer"] == (a + b) % q["p"]


def test_the_expression_evaluates_to_the_logits():
    a, b, c = sympy.symbols("a b c", positive=True)
    for q in P.variants.values():
        r = P.solve(q)
        for cand, value in zip(q["cs"], r["logits"]):
            got = float(r["logit_expr"].subs({a: q["a"], b: q["b"], c: cand}))
            assert math.isclose(got, value, abs_tol=1e-9)
