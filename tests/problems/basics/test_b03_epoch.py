"""b03-epoch: steps in fractional epochs against printed runs, and the grade against mistakes and bad input."""
import math

import pytest

from graders import problems

P = problems.get("b03-epoch")


def test_galactica_450b_tokens_is_4_25_epochs():
    # Taylor et al. 2022, Table 1: "Total dataset size = 106 billion tokens"; §5.1: "We train
    # the models for 450 billion tokens, or approximately 4.25 epochs"; Table 5: 2.0M-token
    # batches for GAL 120B, 1.0M for GAL 1.3B, context 2048.
    for label in ("A", "D"):
        r = P.solve(P.variants[label])
        assert r["tokens_seen"] == pytest.approx(450e9, rel=0.005)      # "450 billion"
        assert r["tokens_seen"] < 4.25 * 106e9                           # drops cost tokens


def test_pythia_readme_epochs_are_rounded():
    # EleutherAI/pythia README: 299,892,736,000 tokens "~= 1.5 epochs on the deduped Pile (which
    # contains 207B tokens in 1 epoch)"; the run was 143,000 steps of 1024 x 2048 tokens.
    r = P.solve(P.variants["B"])
    run_epochs = 143_000 / r["steps_per_epoch"]
    assert round(run_epochs, 1) == 1.4 and round(run_epochs) == 1      # really 1.45, not 1.5
    assert 143_000 * 1024 * 2048 == 299_892_736_000
    assert r["total_steps"] > 143_000                                   # "1.5" taken literally


def test_shakespeare_char_5000_iterations():
    # nanoGPT data/shakespeare_char/readme.md: train.bin has 1,003,854 tokens;
    # config/train_shakespeare_char.py: batch_size 64, block_size 256, max_iters 5000.
    # 1,003,854 // 256 = 3921 sequences: 61 full batches and 17 sequences left over.
    r = P.solve(P.variants["C"])
    assert (r["sequences"], r["steps_per_epoch"]) == (3921, 61)
    assert 5000 * 64 * 256 / 1_003_854 == pytest.approx(P.variants["C"]["epochs"], abs=0.05)
    # nanoGPT samples batches at random rather than in passes, so its 5000 iterations are
    # more than 81.6 epochs of drop-last passes would give
    assert r["total_steps"] < 5000


def test_tinyllama_run_is_slightly_more_than_three_epochs():
    # jzhang38/TinyLlama: ~950B tokens, 1024 x 2048 per step, max_step = 715256 * 2.
    r = P.solve({"dataset_tokens": 950_000_000_000, "T": 2048, "B": 1024, "epochs": 3})
    assert 3 < 715_256 * 2 / r["steps_per_epoch"] < 3.2


def test_the_brief_example_two_and_a_half_epochs():
    # 1000 sequences of 10 tokens, B = 64: 15 full batches per pass (40 dropped), and
    # 2.5 passes are floor(37.5) = 37 steps
    r = P.solve({"dataset_tokens": 10_005, "T": 10, "B": 64, "epochs": 2.5})
    assert (r["sequences"], r["steps_per_epoch"], r["total_steps"]) == (1000, 15, 37)
    assert r["tokens_seen"] == 37 * 640


@pytest.mark.parametrize("bad", [{"epochs": 0}, {"epochs": float("inf")}, {"B": 0},
                                 {"T": 2.5}, {"dataset_tokens": "1e9"}, {"epochs": True}])
def test_invalid_parameters_raise(bad):
    with pytest.raises(ValueError):
        P.solve({**P.variants["A"], **bad})


# --- the grade ---------------------------------------------------------------------------

def test_interface():
    assert (P.strand, P.kind, P.assignment) == ("basics", "basics", "basics")


def test_variants_differ():
    answers = [P.solve(q) for q in P.variants.values()]
    assert len({a["total_steps"] for a in answers}) == 4
    assert len({a["tokens_seen"] for a in answers}) == 4


def test_dropping_once_differs_from_dropping_every_pass():
    q = P.variants["C"]
    once = math.floor(q["epochs"] * (q["dataset_tokens"] // q["T"]) / q["B"])
    assert once != P.solve(q)["total_steps"]


@pytest.mark.parametrize("bad", [None, "214812", float("nan"), [1], {"str": "x"}, False, 1.5])
def test_bad_answers_score_zero_without_raising(bad):
    q = P.variants["D"]
    r = P.grade(q, {**P.solve(q), "total_steps": bad})
    assert not r.outcomes["total_steps"].passed
    assert r.score == r.max_score - 1


def test_missing_key_and_non_dict_score_zero():
    q = P.variants["A"]
    answers = P.solve(q)
    del answers["tokens_seen"]
    r = P.grade(q, answers)
    assert r.score == r.max_score - 1 and "missing" in " ".join(r.feedback)
    assert P.grade(q, None).score == 0
