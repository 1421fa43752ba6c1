# %% [markdown]
# # b01-dataset · A dataset, counted in tokens
#
# *Chapter II.8 Training at Scale · basics · term 1 of 11*
#
# **Dataset.** For a language model, a dataset is a stream of **tokens**. It is stored as
# UTF-8 **bytes** in **documents**; a tokenizer maps the bytes to tokens at an average rate
# of $r$ bytes per token, and the tokens of all documents are **packed** end to end and cut
# into sequences of exactly $T$ tokens. Its size is therefore a property of the text *and*
# the tokenizer:
#
# $$D = \frac{\text{bytes}}{r}, \qquad \text{sequences} = \left\lfloor \frac{D}{T} \right\rfloor .$$
#
# A tail shorter than $T$ makes no sequence. Documents are not padded to a sequence each:
# a 200-token post and the start of the next one share a sequence, and a book spans many.

# %% [markdown]
# ## Worked example: Project Gutenberg in Dolma
#
# Dolma's Table 1 (Soldaini et al. 2024) lists Project Gutenberg as 20.4 GB of UTF-8 text
# in 0.056 million documents, and 6.0 billion tokens with the Llama tokenizer: $r = 20.4/6.0
# = 3.40$ bytes per token. Packed into Llama 2's 4096-token context:

# %%
example_bytes, example_documents, example_rate, example_T = 20.4e9, 56_000, 3.40, 4096
example_tokens = example_bytes / example_rate
example_sequences = int(example_tokens // example_T)
print(f"tokens: {example_tokens:,.0f}, sequences of {example_T}: {example_sequences:,}, "
      f"mean book: {example_tokens / example_documents:,.0f} tokens "
      f"= {example_tokens / example_documents / example_T:.1f} sequences")

# %% [markdown]
# **What the sources print.** The OLMo paper (Groeneveld et al. 2024, Table 2) counts the
# *same* Dolma bytes with the GPT-NeoX tokenizer: Gutenberg becomes 5.2B tokens ($r = 3.92$)
# and the whole corpus 2,668B tokens, against 3,059B Llama tokens in Dolma's own Table 1.
# "Three trillion tokens" is the Llama count of 11,519 GB; a token count without its
# tokenizer is not a size. Under the GPT-NeoX tokenizer code compresses worst of Dolma's
# sources (fewest bytes per token), and Reddit's posts compress better than code but worse
# than the corpus as a whole: variants B and C, whose token counts OLMo's Table 2 prints and
# you will compute. Dolma's "GB" are read here as $10^9$ bytes.
#
# ## Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id. On
# JupyterHub that is your hub user name; on your own machine, start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab` to see the variant the grader uses.
# Editing this cell does not change what you are graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {
    "A": {"dataset_bytes": 16_200_000_000, "documents": 6_200_000, "bytes_per_token": 3.77,
          "T": 4096},
    "B": {"dataset_bytes": 1_043_000_000_000, "documents": 210_000_000, "bytes_per_token": 3.05,
          "T": 2048},
    "C": {"dataset_bytes": 339_000_000_000, "documents": 377_000_000, "bytes_per_token": 4.24,
          "T": 2048},
    "D": {"dataset_bytes": 1_115_394, "documents": 1, "bytes_per_token": 3.30, "T": 1024},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"basics:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# The variants: **A** Dolma's Wikipedia + Wikibooks with the Llama tokenizer (Dolma Table 1);
# **B** Dolma's GitHub code and **C** its Reddit posts, both with the GPT-NeoX tokenizer
# (OLMo Table 2); **D** Tiny Shakespeare, one 1,115,394-byte file that nanoGPT's
# `data/shakespeare` turns into GPT-2 tokens (its `prepare.py` prints the exact count, which
# your estimate from the bytes should come close to).
#
# For your variant compute
# - `dataset_tokens`: the dataset's size in tokens (a float is fine: it is an estimate);
# - `sequences`: the number of packed sequences of length `T` (an int);
# - `mean_document_tokens`: tokens in an average document.

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
dataset_tokens = params["dataset_bytes"] / params["bytes_per_token"]
sequences = int(dataset_tokens // params["T"])
mean_document_tokens = dataset_tokens / params["documents"]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
import numbers

for _name in ("dataset_tokens", "sequences", "mean_document_tokens"):
    assert _name in globals(), f"assign {_name} = ... in the answer cell"
    assert isinstance(globals()[_name], numbers.Real), f"{_name} should be a number"
assert isinstance(sequences, numbers.Integral), "sequences is a count: make it an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("b01-dataset", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# Compare `mean_document_tokens` with `T`. When it is far below $T$, how many documents share
# one sequence, and how many sequences would padding each document to $T$ have cost? (Not
# graded.)
