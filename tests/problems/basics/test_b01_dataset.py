"""b01-dataset: tokens from bytes against the printed tables, and the grade against mistakes and bad input."""
import math

import pytest

from graders import problems

P = problems.get("b01-dataset")

# Printed token counts for the variants' sources, with the unit of their last digit.
# Dolma (Soldaini et al. 2024), Table 1: Wikipedia + Wikibooks 16.2 GB -> 4.3B Llama tokens.
# OLMo (Groeneveld et al. 2024), Table 2: the same Dolma bytes in GPT-NeoX tokens:
#   GitHub 1,043 GB -> 342B, Reddit 339 GB -> 80B.
# nanoGPT data/shakespeare/readme.md: train.bin 301,966 + val.bin 36,059 GPT-2 tokens.
PRINTED_TOKENS = {
    "A": (4.3e9, 0.1e9),
    "B": (342e9, 1e9),
    "C": (80e9, 1e9),
    "D": (301_966 + 36_059, 1),
}


@pytest.mark.parametrize("label", "ABCD")
def test_tokens_match_the_printed_tables(label):
    printed, unit = PRINTED_TOKENS[label]
    got = P.solve(P.variants[label])["dataset_tokens"]
    # the variant's rate is quoted to 3 significant figures, so allow that rounding as well
    assert abs(got - printed) <= unit / 2 + 0.002 * printed, (label, got, printed)


def test_shakespeare_sequences_from_the_exact_token_count():
    # with the readme's exact 338,025 tokens, 1024-token sequences number 338025 // 1024
    assert P.solve(P.variants["D"])["sequences"] == (301_966 + 36_059) // 1024


def test_the_same_bytes_are_fewer_tokens_with_the_larger_vocabulary():
    # Dolma Table 1 vs OLMo Table 2, whole corpus: 11,519 GB is 3,059B Llama tokens but
    # 2,668B GPT-NeoX tokens; Project Gutenberg 20.4 GB is 6.0B vs 5.2B.
    base = {"dataset_bytes": 11_519e9, "documents": 4_367_000_000, "T": 2048}
    llama = P.solve({**base, "bytes_per_token": 11_519 / 3_059})["dataset_tokens"]
    neox = P.solve({**base, "bytes_per_token": 11_519 / 2_668})["dataset_tokens"]
    assert llama == pytest.approx(3_059e9, rel=1e-9) and neox == pytest.approx(2_668e9, rel=1e-9)
    gutenberg = {"dataset_bytes": 20.4e9, "documents": 56_000, "T": 4096}
    assert P.solve({**gutenberg, "bytes_per_token": 3.40})["dataset_tokens"] == pytest.approx(6.0e9, rel=0.01)
    assert P.solve({**gutenberg, "bytes_per_token": 3.92})["dataset_tokens"] == pytest.approx(5.2e9, rel=0.01)


def test_packing_rounds_down_and_documents_share_sequences():
    r = P.solve({"dataset_bytes": 10_000, "bytes_per_token": 2.0, "documents": 50, "T": 64})
    assert r["dataset_tokens"] == 5000 and r["sequences"] == 78 and r["mean_document_tokens"] == 100
    # Reddit's documents are far shorter than a sequence: about 10 share each one
    c = P.solve(P.variants["C"])
    assert c["mean_document_tokens"] < P.variants["C"]["T"] / 9


@pytest.mark.parametrize("bad", [
    {"dataset_bytes": -1}, {"bytes_per_token": 0}, {"T": 10.5}, {"documents": "many"},
    {"bytes_per_token": float("nan")},
])
def test_invalid_parameters_raise(bad):
    with pytest.raises(ValueError):
        P.solve({**P.variants["A"], **bad})


# --- the grade ---------------------------------------------------------------------------

def test_interface():
    assert (P.strand, P.kind, P.assignment) == ("basics", "basics", "basics")


def test_variants_differ():
    answers = [P.solve(q) for q in P.variants.values()]
    for key in P.checks:
        assert len({a[key] for a in answers}) == 4, key


def test_padding_differs_from_packing_by_an_order_of_magnitude_for_reddit():
    q = P.variants["C"]
    padded = next(m for m in P.mistakes if m.name == "one-document-per-sequence").wrong(q)
    assert padded["sequences"] > 9 * P.solve(q)["sequences"]


def test_feedback_never_shows_the_reference():
    q = P.variants["B"]
    ref = P.solve(q)
    r = P.grade(q, {"dataset_tokens": 1.0, "sequences": 1, "mean_document_tokens": 1.0})
    text = " ".join(r.feedback)
    assert str(ref["sequences"]) not in text and f"{ref['sequences']:,}" not in text
    assert f"{ref['dataset_tokens']:.3g}" not in text


@pytest.mark.parametrize("bad", [None, "4.3e9", float("nan"), math.inf, [1, 2], {"str": "x"}, True])
def test_bad_answers_score_zero_without_raising(bad):
    q = P.variants["A"]
    answers = {**P.solve(q), "dataset_tokens": bad}
    r = P.grade(q, answers)
    assert not r.outcomes["dataset_tokens"].passed
    assert r.score == r.max_score - 1


def test_missing_keys_and_non_dict_score_zero():
    q = P.variants["D"]
    answers = P.solve(q)
    del answers["sequences"]
    r = P.grade(q, answers)
    assert r.score == r.max_score - 1 and "missing" in " ".join(r.feedback)
    assert P.grade(q, "not a dict").score == 0
    # a fractional sequence count is not a count
    assert not P.grade(q, {**P.solve(q), "sequences": 330.5}).outcomes["sequences"].passed
