"""b03-epoch: one pass over the data, and a fractional number of them.

An epoch is one pass over every packed sequence of the dataset. Each pass is cut
into batches of B sequences and the partial last batch is dropped (drop_last),
so an epoch has floor(S / B) steps, S = floor(dataset_tokens / T). A run of
`epochs` = e passes, e fractional, takes the same fraction of the next pass's
full batches; a step is never fractional, so

    total_steps = floor(e · floor(S / B)),   tokens_seen = total_steps · B · T.

Sources for the variants:
- A and D, Galactica (Taylor et al. 2022): Table 1 "Total dataset size = 106
  billion tokens"; Table 5: context 2048, batch 2.0M tokens for GAL 120B and
  1.0M for GAL 1.3B (read as 1024 and 512 sequences of 2048); section 5.1: "We
  train the models for 450 billion tokens, or approximately 4.25 epochs".
- B, Pythia on the deduplicated Pile (EleutherAI/pythia README: "~= 1.5 epochs
  on the deduped Pile (which contains 207B tokens in 1 epoch)"), 1024 sequences
  of 2048 tokens per step. The run itself was 143,000 steps, 1.45 epochs.
- C, nanoGPT's character-level Shakespeare (data/shakespeare_char/readme.md:
  train.bin has 1,003,854 tokens; config/train_shakespeare_char.py: batch_size
  64, block_size 256, max_iters 5000, i.e. 5000·64·256 tokens = 81.6 epochs).
"""
import math

from graders.numeric import Count
from graders.problem import Mistake, Problem


def _whole(q, name):
    value = q[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value != int(value) or value < 1:
        raise ValueError(f"{name} must be a whole number >= 1, not {value!r}")
    return int(value)


def _epochs(q):
    value = q["epochs"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value <= 0:
        raise ValueError(f"epochs must be a positive number, not {value!r}")
    return float(value)


def _answers(q, *, keep_partial=False, drop_once=False, whole_epochs=False, round_up=False,
             batch_in_tokens=False):
    dataset_tokens, T, B = _whole(q, "dataset_tokens"), _whole(q, "T"), _whole(q, "B")
    e = _epochs(q)
    sequences = dataset_tokens // T
    if batch_in_tokens:                       # B read as tokens per step
        per_epoch = dataset_tokens // B
    elif keep_partial:
        per_epoch = -(-sequences // B)
    else:
        per_epoch = sequences // B
    if drop_once:
        total = math.floor(e * sequences / B)
    elif whole_epochs:
        total = math.floor(e) * per_epoch
    elif round_up:
        total = math.ceil(e * per_epoch)
    else:
        total = math.floor(e * per_epoch)
    return {
        "sequences": sequences,
        "steps_per_epoch": per_epoch,
        "total_steps": total,
        "tokens_seen": total * B * T,
    }


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    return {k: v for k, v in wrong.items() if v != right[k]}


class EpochProblem(Problem):
    id = "b03-epoch"
    title = "Epoch: steps in a fractional number of passes"
    strand = "basics"
    kind = "basics"
    assignment = "basics"
    symbols = ()
    variants = {
        "A": {"dataset_tokens": 106_000_000_000, "T": 2048, "B": 1024, "epochs": 4.25},  # GAL 120B
        "B": {"dataset_tokens": 207_000_000_000, "T": 2048, "B": 1024, "epochs": 1.5},   # Pythia dedup
        "C": {"dataset_tokens": 1_003_854, "T": 256, "B": 64, "epochs": 81.6},           # shakespeare_char
        "D": {"dataset_tokens": 106_000_000_000, "T": 2048, "B": 512, "epochs": 4.25},   # GAL 1.3B
    }
    checks = {
        "sequences": Count(),
        "steps_per_epoch": Count(),
        "total_steps": Count(),
        "tokens_seen": Count(),
    }
    cells = {
        "check_numbers": ("sequences", "steps_per_epoch", "total_steps", "tokens_seen"),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake(
            "kept-the-partial-batch",
            "the partial last batch of each pass was counted as a step; it is dropped, so an epoch "
            "has floor(S / B) steps.",
            lambda q: _changed(q, keep_partial=True),
            instant="the partial batch at the end of each epoch.",
        ),
        Mistake(
            "dropped-only-once",
            "the partial batch was dropped once for the whole run; every pass drops its own, so "
            "multiply the steps of one epoch by the number of epochs.",
            lambda q: _changed(q, drop_once=True),
            instant="which passes have a partial batch of their own.",
        ),
        Mistake(
            "whole-epochs-only",
            "the fractional part of the epoch count was left out; the run also takes that fraction "
            "of the next pass's steps.",
            lambda q: _changed(q, whole_epochs=True),
            instant="the fractional part of the epoch count.",
        ),
        Mistake(
            "rounded-the-fraction-up",
            "the fractional epoch was rounded up to a whole step; a step needs a full batch, so "
            "round e·(steps per epoch) down.",
            lambda q: _changed(q, round_up=True),
            instant="the full batch that every step needs.",
        ),
        Mistake(
            "batch-read-as-tokens",
            "B was treated as tokens per step; it counts sequences of T tokens, so one step takes "
            "B·T tokens.",
            lambda q: _changed(q, batch_in_tokens=True),
            instant="the unit in which B counts the batch.",
        ),
    )


PROBLEM = EpochProblem()
