# %% [markdown]
# # b11-evaluation · Evaluation
#
# *Chapter II.8 Training at Scale · basics · term 11 of 11*
#
# **Evaluation** scores the model on **held-out** text, text it was never trained on. For a
# language model the score is the **mean negative log-likelihood per token**, $\bar\ell$,
# in nats (natural log; `torch.nn.functional.cross_entropy` computes exactly this). Three
# other numbers are the same measurement in other units:
# - **perplexity** $= e^{\bar\ell}$: the model is as unsure as a uniform choice among
#   that many tokens;
# - **bits per token** $= \bar\ell / \ln 2$;
# - **bits per byte** $= \dfrac{L_T}{L_B}\,\dfrac{\bar\ell}{\ln 2}$, with $L_T$ and $L_B$
#   the eval text's length in tokens and in UTF-8 bytes (Gao et al., *The Pile*, 2020, §3.1).
#   Perplexity and bits per token depend on the tokenizer, and bits per byte does not, so
#   it is the fair way to compare models with different vocabularies.
#
# The **held-out loss** is not the **training loss**. The training loss is measured on
# the very batches the model learns from. The gap (held-out minus training) shows how far
# the model has fitted its particular training text. It is near zero when a large corpus
# is seen once, and it grows when a small corpus is repeated for many epochs.

# %%
import math

import torch
import torch.nn.functional as F

torch.manual_seed(0)
targets = torch.randint(0, 50, (12,))   # 12 positions, a vocabulary of 50
logits = torch.randn(12, 50)
logits[torch.arange(12), targets] += 3.0  # a model that leans toward the right token
mean_nats = F.cross_entropy(logits, targets).item()
by_hand = -torch.log_softmax(logits, dim=-1)[torch.arange(12), targets].mean().item()
print(f"mean NLL {mean_nats:.6f} nats (by hand {by_hand:.6f})")
print(f"perplexity {math.exp(mean_nats):.3f}   bits per token {mean_nats / math.log(2):.4f}")
print(f"a uniform guess over 50 tokens: perplexity 50, loss ln 50 = {math.log(50):.4f} nats")

# %% [markdown]
# ## Your variant
#
# Your eval harness reports the **summed** NLL over the held-out text (`heldout_nll_sum`,
# nats), its length in `tokens` and in `bytes`, and the training loss logged at the same
# point (`train_loss`, mean nats per token).

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {
    "A": {"heldout_nll_sum": 163_930.338, "tokens": 111_540, "bytes": 111_540,
          "train_loss": 1.2479},
    "B": {"heldout_nll_sum": 124_475.668, "tokens": 36_059, "bytes": 111_540,
          "train_loss": 2.8740},
    "C": {"heldout_nll_sum": 49_747_173.0, "tokens": 29_335_000, "bytes": 100_000_000,
          "train_loss": 1.6902},
    "D": {"heldout_nll_sum": 11_264_638.38, "tokens": 4_434_897, "bytes": 18_626_567,
          "train_loss": 2.56},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"basics:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# The runs: **A** nanoGPT's character-level Shakespeare model, whose README prints its best
# validation loss (your `mean_nll` should reproduce it), on the 111,540 validation
# characters, one byte and one token each. **B** the same Shakespeare validation text under GPT-2's BPE (36,059 tokens), scored
# by a fine-tuned GPT-2. **C** a 100 MB shard of the Pile test set under GPT-2's tokenizer
# (the Pile paper's 0.29335 tokens per byte), at the loss that gives GPT-3 davinci's bits per
# byte as the Pile paper's table prints it. **D** OpenWebText's validation split (4,434,897
# tokens) scored by the released GPT-2 XL, whose train and val losses nanoGPT's README lists.
# The byte count in D is an estimate. The training losses of A to C are illustrative.
#
# Compute, for your variant:
# - `mean_nll`: the held-out mean NLL per token, in nats;
# - `perplexity`, `bits_per_token`, `bits_per_byte`;
# - `loss_gap`: held-out loss minus training loss, in nats (it may be negative). Take it from
#   your own unrounded `mean_nll`: a gap can be small beside the two losses, and it is checked
#   to a relative 1e-3.

# %% nbgrader={"grade": false, "grade_id": "answer_metrics", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
mean_nll = params["heldout_nll_sum"] / params["tokens"]
perplexity = math.exp(mean_nll)
bits_per_token = mean_nll / math.log(2)
bits_per_byte = params["tokens"] / params["bytes"] * bits_per_token
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_metrics", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the numbers are checked when your notebook is graded.
for name in ("mean_nll", "perplexity", "bits_per_token", "bits_per_byte"):
    assert name in globals(), f"{name} is not defined yet"
    assert isinstance(globals()[name], numbers.Real), f"{name} should be a number"
assert perplexity >= 1, "a perplexity is at least 1"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("b11-evaluation", "check_metrics", globals())
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "answer_gap", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
loss_gap = mean_nll - params["train_loss"]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_gap", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the number is checked when your notebook is graded.
assert "loss_gap" in globals(), "loss_gap is not defined yet"
assert isinstance(loss_gap, numbers.Real), "loss_gap should be a number of nats"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("b11-evaluation", "check_gap", globals())
### END HIDDEN TESTS

# %% [markdown]
# Read your numbers (not graded). Is your gap the sign of a model that memorised its
# training text, or of one that saw each token once? Compare the bits per byte of A and
# B: the BPE model wins per byte even though its loss per token is far higher. This is why
# per-token figures cannot be compared across tokenizers.
