"""e08-evaluation: the reference against the Pile paper's BPB and against independent statistics."""
import ast
import math
from pathlib import Path

import mpmath
import numpy as np
import pytest
import sympy

from graders import problems
from graders.notebook import gather

P = problems.get("e08-evaluation")
ROOT = Path(__file__).resolve().parents[3]

# Gao et al. 2020, "The Pile", §3.1: BPB = (L_T/L_B) * loss / ln 2, with L_T/L_B = 0.29335
# tokens per byte for the GPT-2 tokenizer on the Pile; zero-shot Pile test BPB of the GPT-2
# and GPT-3 families as the paper prints them (4 decimals).
PILE_TOKENS_PER_BYTE = 0.29335
PILE_BPB = {"GPT-2 small": 1.2253, "GPT-2 medium": 1.0928, "GPT-2 large": 1.0828,
            "GPT-2 XL": 1.0468, "GPT-3 ada": 0.9631, "GPT-3 babbage": 0.8718,
            "GPT-3 curie": 0.7980, "GPT-3 davinci": 0.7177}
PRINTED_ROUNDING = 0.00005   # half a unit in the 4th decimal


def eval_set(loss, n=8, T=1024, tokens_per_byte=PILE_TOKENS_PER_BYTE, **extra):
    tokens = n * T
    q = {"seq_nll": [loss] * n, "tokens": tokens, "bytes": tokens / tokens_per_byte,
         "z": 1.96, "halfwidth": 0.01}
    q.update(extra)
    return q


def test_interface():
    assert P.kind == "exercise" and P.assignment == "exercises" and P.strand == "mathematics"
    for key in ("mean_nll", "perplexity", "bits_per_byte", "standard_error", "sequences_needed"):
        assert key in P.checks
    assert any(k.endswith("_expr") for k in P.checks)


@pytest.mark.parametrize("model", sorted(PILE_BPB))
def test_bpb_reproduces_the_pile_papers_numbers(model):
    # The per-token loss (nats) a GPT-2-tokenized model must have for the printed BPB,
    # converted with the paper's own ratio; solve must give the printed BPB back.
    bpb = PILE_BPB[model]
    loss = bpb * math.log(2) / PILE_TOKENS_PER_BYTE
    out = P.solve(eval_set(loss))
    assert out["bits_per_byte"] == pytest.approx(bpb, abs=PRINTED_ROUNDING)
    # and the bpb_expr gives the same number
    s = {str(x): x for x in out["bpb_expr"].free_symbols}
    value = out["bpb_expr"].subs({s["L_T"]: PILE_TOKENS_PER_BYTE, s["L_B"]: 1, s["ell"]: loss})
    assert float(value) == pytest.approx(bpb, abs=PRINTED_ROUNDING)


def test_same_tokenizer_bpb_ratio_is_loss_ratio_and_davinci_loss():
    # GPT-2 and GPT-3 share a tokenizer, so their BPB ratio is their per-token loss ratio;
    # davinci's 0.7177 BPB is about 1.696 nats per token with the paper's ratio.
    small = P.solve(eval_set(2.895))["bits_per_byte"]
    davinci = P.solve(eval_set(1.6958))["bits_per_byte"]
    assert small / davinci == pytest.approx(2.895 / 1.6958, rel=1e-12)
    assert davinci == pytest.approx(0.7177, abs=PRINTED_ROUNDING)


def test_byte_level_bpb_is_bits_per_token():
    out = P.solve(eval_set(0.7, tokens_per_byte=1.0))
    assert out["bits_per_byte"] == pytest.approx(0.7 / math.log(2), rel=1e-12)


@pytest.mark.parametrize("label", "ABCD")
def test_statistics_against_numpy(label):
    q = P.variants[label]
    x = np.asarray(q["seq_nll"], dtype=np.float64)
    out = P.solve(q)
    assert out["mean_nll"] == pytest.approx(float(x.mean()), rel=1e-12)
    assert out["perplexity"] == pytest.approx(float(np.exp(x.mean())), rel=1e-12)
    s = float(x.std(ddof=1))
    assert out["standard_error"] == pytest.approx(s / math.sqrt(len(x)), rel=1e-12)
    n = out["sequences_needed"]
    assert isinstance(n, int)
    assert q["z"] * s / math.sqrt(n) <= q["halfwidth"] < q["z"] * s / math.sqrt(n - 1)   # smallest such n
    # far from a rounding edge, so that students' float arithmetic cannot flip the count
    frac = (q["z"] * s / q["halfwidth"]) ** 2 % 1
    assert 0.05 < frac < 0.95


def test_variants_differ():
    outs = [P.solve(q) for q in P.variants.values()]
    for key in ("mean_nll", "bits_per_byte", "standard_error", "sequences_needed"):
        assert len({round(o[key], 6) for o in outs}) == 4


def test_logsumexp_reference_against_high_precision():
    mpmath.mp.dps = 50
    calls = P.probes(P.variants["A"])["logsumexp_probe"].calls
    ref = P.solve(P.variants["A"])["logsumexp_probe"]
    centers = [np.mean(x) for (x,) in calls]
    assert max(centers) > 5e3 and min(centers) < -5e3           # logits around +-1e4 are probed
    for (x,), r in zip(calls, ref):
        exact = mpmath.log(mpmath.fsum(mpmath.exp(mpmath.mpf(v)) for v in x))
        assert r == pytest.approx(float(exact), rel=1e-14, abs=1e-12)
    with np.errstate(over="ignore"):
        assert not np.isfinite(np.log(np.sum(np.exp(np.asarray(calls[0][0])))))  # naive fails


def test_every_mistake_loses_points_with_its_feedback():
    for mistake in P.mistakes:
        hit = False
        for q in P.variants.values():
            answers = dict(P.solve(q))
            answers.update(mistake.wrong(q))
            result = P.grade(q, answers)
            if result.score < result.max_score:
                assert any(mistake.feedback in line for line in result.feedback), (mistake.name, result.feedback)
                hit = True
        assert hit, mistake.name


def test_token_level_error_is_named():
    q = P.variants["A"]
    s = float(np.std(q["seq_nll"], ddof=1))
    result = P.grade(q, {"standard_error": s / math.sqrt(q["tokens"])}, keys=("standard_error",))
    assert result.score == 0 and "independent sample" in result.feedback[0]


def test_gathered_student_functions():
    q = P.variants["B"]
    keys = ("logsumexp_probe",)

    def stable(x):
        m = max(x)
        return m + math.log(sum(math.exp(v - m) for v in x))

    def naive(x):
        return math.log(sum(math.exp(v) for v in x))      # OverflowError at 1e4

    def naive_numpy(x):
        with np.errstate(all="ignore"):
            return float(np.log(np.sum(np.exp(np.asarray(x)))))   # inf or -inf

    ok = P.grade(q, gather(P, q, keys, {"logsumexp": stable}), keys=keys)
    assert ok.full_marks, ok.feedback
    for fn in (naive, naive_numpy):
        bad = P.grade(q, gather(P, q, keys, {"logsumexp": fn}), keys=keys)
        assert bad.score == 0


@pytest.mark.parametrize("bad", [
    {},
    {"mean_nll": "2.9", "perplexity": float("nan"), "bits_per_byte": float("inf"),
     "standard_error": None, "sequences_needed": 1632.5, "bpb_expr": "L_T*ell/(L_B*log(2))",
     "sequences_expr": 3, "logsumexp_probe": "x"},
    {"mean_nll": [2.9], "perplexity": True, "bits_per_byte": {"str": "1.2"},
     "standard_error": [0.07], "sequences_needed": "1632",
     "bpb_expr": sympy.Symbol("T") * sympy.Symbol("ell"),
     "sequences_expr": (sympy.Symbol("z") * sympy.Symbol("s") / sympy.Symbol("h")) ** 2,
     "logsumexp_probe": [{"float": "inf"}] * 5},
    {"sequences_expr": (sympy.Symbol("z", positive=True) * sympy.Symbol("sigma", positive=True)
                        / sympy.Symbol("h", positive=True)) ** 2},   # the old letter h, now w4's width
])
def test_bad_answers_score_zero_without_raising(bad):
    q = P.variants["C"]
    result = P.grade(q, bad)
    assert result.score == 0
    assert len(result.feedback) == len(P.checks)


def test_solve_rejects_nonsense_parameters():
    base = dict(P.variants["D"])
    for change in ({"seq_nll": [0.5]}, {"seq_nll": [0.5, float("nan")]}, {"bytes": 0},
                   {"halfwidth": 0.0}, {"z": -1.0}):
        with pytest.raises(ValueError):
            P.solve(dict(base, **change))


def test_notebook_variants_are_the_problems():
    text = (ROOT / "source/exercises/e08-evaluation.pct.py").read_text()
    start = text.index("VARIANTS = {")
    node = ast.parse(text[start:text.index("\nSTUDENT", start)])
    assert ast.literal_eval(node.body[0].value) == P.variants
