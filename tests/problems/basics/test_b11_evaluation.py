"""b11-evaluation: conversions against the Pile paper and nanoGPT's printed losses, and the grader."""
import math

import pytest
import torch
import torch.nn.functional as F

from graders import problems
from graders.course.gate import mistake_reasons

P = problems.get("b11-evaluation")

# --- (a) primary sources ------------------------------------------------------------------------
# Gao et al. 2020, "The Pile", section 3.1: BPB = (L_T / L_B) * loss / ln 2, with L_T / L_B =
# 0.29335 for GPT-2's tokenizer on the Pile; Table (zero-shot Pile test BPB) prints GPT-3 davinci
# 0.7177 and GPT-2 XL 1.0468 (4 decimals).
PILE_TOKENS_PER_BYTE = 0.29335
PILE_BPB = {"GPT-2 XL": 1.0468, "GPT-3 davinci": 0.7177}
# karpathy/nanoGPT README: char-level Shakespeare "best validation loss is 1.4697"; baselines
# on OpenWebText, train / val loss: gpt2 3.11 / 3.12, gpt2-medium 2.85 / 2.84, gpt2-large
# 2.66 / 2.67, gpt2-xl 2.56 / 2.54. nanoGPT prepare.py: tiny Shakespeare is 1,115,394 chars,
# val 111,540 chars (char-level) or 36,059 GPT-2 tokens; OpenWebText val has 4,434,897 tokens.
NANOGPT_OWT = {"gpt2": (3.11, 3.12), "gpt2-medium": (2.85, 2.84), "gpt2-large": (2.66, 2.67),
               "gpt2-xl": (2.56, 2.54)}


def run(mean, tokens, nbytes, train):
    return P.solve({"heldout_nll_sum": mean * tokens, "tokens": tokens, "bytes": nbytes,
                    "train_loss": train})


@pytest.mark.parametrize("model", sorted(PILE_BPB))
def test_bits_per_byte_reproduce_the_pile_papers_figures(model):
    loss = PILE_BPB[model] * math.log(2) / PILE_TOKENS_PER_BYTE
    out = run(loss, 29_335_000, 100_000_000, loss)
    assert out["bits_per_byte"] == pytest.approx(PILE_BPB[model], abs=0.00005)


def test_variant_c_is_davincis_printed_bpb():
    assert P.solve(P.variants["C"])["bits_per_byte"] == pytest.approx(0.7177, abs=0.00005)


def test_variants_use_nanogpts_printed_figures():
    a, b, d = (P.variants[k] for k in "ABD")
    assert a["tokens"] == a["bytes"] == b["bytes"] == 1_115_394 - int(0.9 * 1_115_394) == 111_540
    assert P.solve(a)["mean_nll"] == pytest.approx(1.4697, abs=5e-5)
    assert b["tokens"] == 36_059 and d["tokens"] == 4_434_897
    train, val = NANOGPT_OWT["gpt2-xl"]
    assert d["train_loss"] == train and P.solve(d)["mean_nll"] == pytest.approx(val, abs=5e-5)


@pytest.mark.parametrize("model", sorted(NANOGPT_OWT))
def test_single_pass_models_have_gaps_within_a_few_hundredths(model):
    train, val = NANOGPT_OWT[model]
    out = run(val, 4_434_897, 18_626_567, train)
    assert abs(out["loss_gap"]) <= 0.02 + 1e-9
    assert out["perplexity"] == pytest.approx(math.exp(val))


def test_character_level_bits_per_byte_equal_bits_per_token():
    out = P.solve(P.variants["A"])
    assert out["bits_per_byte"] == out["bits_per_token"]


def test_mean_nll_is_torch_cross_entropy_and_perplexity_its_exponential():
    torch.manual_seed(0)
    logits, targets = torch.randn(500, 97, dtype=torch.float64), torch.randint(0, 97, (500,))
    total = F.cross_entropy(logits, targets, reduction="sum").item()
    out = P.solve({"heldout_nll_sum": total, "tokens": 500, "bytes": 1800, "train_loss": 0.0})
    mean = F.cross_entropy(logits, targets).item()
    assert out["mean_nll"] == pytest.approx(mean, rel=1e-12)
    assert out["perplexity"] == pytest.approx(math.exp(mean), rel=1e-12)
    assert out["bits_per_token"] == pytest.approx(mean / math.log(2), rel=1e-12)
    # a uniform model over V tokens has perplexity V
    uniform = P.solve({"heldout_nll_sum": 500 * math.log(97), "tokens": 500, "bytes": 1800,
                       "train_loss": 0.0})
    assert uniform["perplexity"] == pytest.approx(97)


def test_bad_parameters_are_refused():
    for change in ({"tokens": 0}, {"bytes": -5}, {"heldout_nll_sum": float("nan")},
                   {"train_loss": "2.5"}, {"heldout_nll_sum": -1.0}):
        with pytest.raises(ValueError):
            P.solve(dict(P.variants["A"], **change))


# --- (b) the grader -----------------------------------------------------------------------------

def test_interface():
    assert P.strand == "basics" and P.kind == "basics" and P.assignment == "basics"


def test_variants_differ():
    answers = [P.solve(q) for q in P.variants.values()]
    assert len({(a["perplexity"], a["bits_per_byte"], a["loss_gap"]) for a in answers}) == 4


def test_every_mistake_loses_points_and_is_named_wherever_it_is_wrong():
    assert mistake_reasons(P) == []


@pytest.mark.parametrize("answers", [
    {}, None, {"mean_nll": "1.47"}, {"perplexity": float("nan")}, {"bits_per_token": [2.1]},
    {"bits_per_byte": None}, {"loss_gap": True},
])
def test_bad_answers_score_zero_without_raising(answers):
    result = P.grade(P.variants["B"], answers)
    assert result.score == 0 and len(result.feedback) == len(P.checks)


def test_feedback_never_contains_the_reference_value():
    q = P.variants["B"]
    ref = P.solve(q)
    text = "\n".join(P.grade(q, {k: 1.0 for k in P.checks}).feedback)
    for value in ref.values():
        assert f"{value:.4g}" not in text and f"{value:g}" not in text
