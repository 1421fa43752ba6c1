"""b11-evaluation: mean NLL, perplexity, bits per token and per byte, held-out versus training loss.

The term. Evaluation measures the model on held-out text it was not trained on. A language
model's eval loss is the mean negative log-likelihood per token, in nats (natural log, as
torch.nn.functional.cross_entropy computes it). From it:
- perplexity = exp(mean NLL);
- bits per token = mean NLL / ln 2;
- bits per byte = (tokens / bytes) * mean NLL / ln 2 (Gao et al. 2020, "The Pile", section
  3.1, with L_T / L_B the eval text's length in tokens over its length in UTF-8 bytes). Bits
  per byte does not depend on the tokenizer, so it compares models with different ones.
The gap between the held-out loss and the training loss (held-out minus training) measures
how much the model has fitted its particular training text: near 0 for a single pass over a
large corpus, large when a small corpus is repeated for many epochs.

Variants (the eval harness reports summed NLL over the eval text):
- A: nanoGPT's character-level Shakespeare model (karpathy/nanoGPT README: "the best
  validation loss is 1.4697"); the validation split is the last 10% of the 1,115,394
  characters of tiny Shakespeare, 111,540 characters, one byte and one token each. The
  training loss at that point is illustrative (the README prints none).
- B: tiny Shakespeare with GPT-2's BPE (nanoGPT data/shakespeare/prepare.py: "val.bin has
  36,059 tokens", the same 111,540 bytes), a fine-tuned GPT-2; both losses illustrative.
- C: a 100,000,000-byte shard of the Pile test set under GPT-2's tokenizer, at the Pile
  paper's 0.29335 tokens per byte; the held-out loss is the one that gives GPT-3 davinci's
  printed 0.7177 bits per byte; the training loss is illustrative.
- D: OpenWebText validation (nanoGPT data/openwebtext/prepare.py: "val has ~4M tokens
  (4,434,897)"), scored by the released GPT-2 XL: nanoGPT README baselines, "train loss 2.56,
  val loss 2.54". The byte count is an estimate (about 4.2 bytes per token).
"""
from __future__ import annotations

import math

from graders.numeric import Number
from graders.problem import Mistake, Problem

LN2 = math.log(2.0)


def _read(q):
    out = []
    for name in ("heldout_nll_sum", "tokens", "bytes", "train_loss"):
        value = q[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number")
        out.append(float(value))
    total, tokens, nbytes, train = out
    if total < 0 or train < 0 or tokens <= 0 or nbytes <= 0:
        raise ValueError("losses are non-negative; tokens and bytes are positive")
    return total, tokens, nbytes, train


def _answers(q, *, per=None, log_base=None):
    total, tokens, nbytes, train = _read(q)
    mean = total / (per(tokens, nbytes) if per else tokens)
    to_bits = 1.0 / LN2 if log_base is None else log_base
    return {
        "mean_nll": mean,
        "perplexity": math.exp(mean),
        "bits_per_token": mean * to_bits,
        "bits_per_byte": tokens / nbytes * mean * to_bits,
        "loss_gap": mean - train,
    }


class EvaluationProblem(Problem):
    id = "b11-evaluation"
    title = "Evaluation"
    strand = "basics"
    kind = "basics"
    assignment = "basics"
    variants = {
        "A": {"heldout_nll_sum": 163_930.338, "tokens": 111_540, "bytes": 111_540,
              "train_loss": 1.2479},
        "B": {"heldout_nll_sum": 124_475.668, "tokens": 36_059, "bytes": 111_540,
              "train_loss": 2.8740},
        "C": {"heldout_nll_sum": 49_747_173.0, "tokens": 29_335_000, "bytes": 100_000_000,
              "train_loss": 1.6902},
        "D": {"heldout_nll_sum": 11_264_638.38, "tokens": 4_434_897, "bytes": 18_626_567,
              "train_loss": 2.56},
    }
    checks = {
        "mean_nll": Number(rtol=1e-6),
        "perplexity": Number(rtol=1e-5),
        "bits_per_token": Number(rtol=1e-5),
        "bits_per_byte": Number(rtol=1e-5),
        "loss_gap": Number(rtol=1e-3),
    }
    cells = {
        "check_metrics": ("mean_nll", "perplexity", "bits_per_token", "bits_per_byte"),
        "check_gap": ("loss_gap",),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake(
            "mean-over-bytes",
            "the summed loss was divided by the number of bytes; the mean NLL is per token, "
            "and bytes enter only in the conversion to bits per byte.",
            # a character-level model has one token per byte: no other count to average over
            lambda q: {} if _read(q)[1] == _read(q)[2]
            else _answers(q, per=lambda tokens, nbytes: nbytes),
            instant="what the mean NLL is a mean of.",
        ),
        Mistake(
            "nats-not-bits",
            "these are nats, not bits: the loss uses the natural log, so divide by ln 2 to "
            "count bits.",
            lambda q: {k: v for k, v in _answers(q, log_base=1.0).items()
                       if k in ("bits_per_token", "bits_per_byte")},
            instant="the unit of information the loss is measured in.",
        ),
        Mistake(
            "perplexity-base-2",
            "perplexity was taken as 2 to the power of the loss; the loss is in nats, so "
            "perplexity is e to that power (or 2 to the bits per token).",
            lambda q: {"perplexity": 2.0 ** _answers(q)["mean_nll"]},
            instant="the logarithm's base behind perplexity.",
        ),
        Mistake(
            "ratio-inverted",
            "the token/byte ratio is upside down: bits per byte multiplies the bits per token "
            "by tokens/bytes, which is below 1 for a subword tokenizer.",
            # one token per byte: the ratio is one whichever way up it is taken
            lambda q: {} if _read(q)[1] == _read(q)[2]
            else {"bits_per_byte": _read(q)[2] / _read(q)[1] * _answers(q)["bits_per_token"]},
            instant="how bits per token become bits per byte.",
        ),
        Mistake(
            "gap-sign",
            "the gap has the wrong sign; take the held-out loss minus the training loss, "
            "positive when the model does better on its training text.",
            lambda q: {"loss_gap": -_answers(q)["loss_gap"]},
            instant="how the generalisation gap is defined.",
        ),
    )


PROBLEM = EvaluationProblem()
