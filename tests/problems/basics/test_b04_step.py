"""b04-step: steps, micro-steps and tokens against printed checkpoints, and the grade."""
import pytest
import sympy

from graders import problems

P = problems.get("b04-step")


def test_pythia_tokens_seen_and_checkpoint_spacing():
    # EleutherAI/pythia README: "Each model saw 299,892,736,000 ~= 299.9B tokens during
    # training, and 143 checkpoints ... are saved every 2,097,152,000 ~= 2B tokens".
    assert P.solve(P.variants["A"])["tokens_seen"] == 299_892_736_000
    assert P.solve({**P.variants["A"], "steps": 1000})["tokens_seen"] == 2_097_152_000
    # models/12B/pythia-12b.yml: gradient_accumulation_steps 2 -> 2 micro-steps per step
    assert P.solve({**P.variants["A"], "steps": 1})["micro_steps"] == 2


@pytest.mark.parametrize("steps, printed_tokens, unit", [
    (240_000, 503e9, 1e9),      # TinyLlama-1.1B-intermediate-step-240k-503b
    (480_000, 1e12, 0.1e12),    # TinyLlama-1.1B-intermediate-step-480k-1T
    (715_000, 1.5e12, 0.1e12),  # TinyLlama-1.1B-intermediate-step-715k-1.5T
    (1_431_000, 3e12, 0.1e12),  # TinyLlama-1.1B-intermediate-step-1431k-3T
])
def test_tinyllama_checkpoint_names(steps, printed_tokens, unit):
    # jzhang38/TinyLlama README release table: checkpoint names carry step and tokens.
    got = P.solve({**P.variants["B"], "steps": steps})["tokens_seen"]
    assert abs(got - printed_tokens) <= unit / 2


def test_tinyllama_logs_iters_as_micro_steps():
    # pretrain/tinyllama.py: batch_size = global_batch_size // num_of_devices = 512 // 8 = 64,
    # gradient_accumulation_steps = batch_size // micro_batch_size = 8; "iter" counts
    # micro-steps and "step" optimiser steps, so iter = 8 * step.
    assert P.solve({**P.variants["B"], "steps": 5000})["micro_steps"] == 8 * 5000


def test_build_nanogpt_max_steps_is_about_ten_billion_tokens():
    # build-nanogpt train_gpt2.py: "max_steps = 19073 # 19,073 steps is ~1 epoch, if data is
    # 10B tokens and batch size 0.5M tokens"
    r = P.solve(P.variants["D"])
    assert r["tokens_seen"] == pytest.approx(10e9, rel=1e-3) and r["micro_steps"] == 19_073


def test_nanogpt_gpt2_config_comment_rounds_to_300b():
    # nanoGPT config/train_gpt2.py: 12 x 1024 x 5 x 8 = 491,520 tokens per iteration and
    # max_iters = 600000 with the comment "this makes total number of tokens be 300B".
    r = P.solve({"B": 480, "T": 1024, "micro_batch": 12, "P": 8, "steps": 600_000})
    assert r["tokens_seen"] == 600_000 * 491_520
    assert r["tokens_seen"] == pytest.approx(300e9, rel=0.02) and r["tokens_seen"] < 300e9
    assert r["micro_steps"] == 600_000 * 5


@pytest.mark.parametrize("bad", [{"micro_batch": 3}, {"P": 0}, {"steps": -5}, {"T": 1.5},
                                 {"B": None}])
def test_invalid_parameters_raise(bad):
    with pytest.raises(ValueError):
        P.solve({**P.variants["C"], **bad})


# --- the grade ---------------------------------------------------------------------------

def test_interface():
    assert (P.strand, P.kind, P.assignment) == ("basics", "basics", "basics")
    assert any(k.endswith("_expr") for k in P.checks)


def test_variants_differ():
    answers = [P.solve(q) for q in P.variants.values()]
    assert len({a["micro_steps"] for a in answers}) == 4
    assert len({a["tokens_seen"] for a in answers}) == 4


def test_expression_forms():
    q = P.variants["A"]
    k, B, b, Pd = sympy.symbols("k B b P", positive=True)
    answers = P.solve(q)
    answers["micro_steps_expr"] = (k / b) * B * Pd**-1
    assert P.grade(q, answers, keys=["micro_steps_expr"]).full_marks
    # equal to the reference wherever P = 1, but not the same expression
    answers["micro_steps_expr"] = k * B / b
    assert not P.grade(q, answers, keys=["micro_steps_expr"]).full_marks
    answers["micro_steps_expr"] = k * B / (sympy.Symbol("micro") * Pd)
    r = P.grade(q, answers, keys=["micro_steps_expr"])
    assert r.score == 0 and "micro" in " ".join(r.feedback)


@pytest.mark.parametrize("bad", [None, "286000", float("nan"), [286000], {"str": "x"}, True, 2.5])
def test_bad_answers_score_zero_without_raising(bad):
    q = P.variants["A"]
    r = P.grade(q, {**P.solve(q), "micro_steps": bad})
    assert not r.outcomes["micro_steps"].passed
    assert r.score == r.max_score - 1


def test_missing_key_and_non_dict_score_zero():
    q = P.variants["B"]
    answers = P.solve(q)
    del answers["micro_steps_expr"]
    r = P.grade(q, answers)
    assert r.score == r.max_score - 1 and "missing" in " ".join(r.feedback)
    assert P.grade(q, 42).score == 0
