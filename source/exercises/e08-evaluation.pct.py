# %% [markdown]
# # e08-evaluation · Perplexity, bits per byte, and the error bar of an eval loss
#
# *Chapter II.8 Training at Scale · mathematics · exercise 8 of 10*
#
# An eval loss is one number printed at the end of a long run, and three questions
# decide whether it means anything: in which unit is it (nats per token, or something
# that survives a change of tokenizer), how was it averaged, and how uncertain is it?
# This exercise answers all three, and starts with the one piece of numerical care that
# every cross-entropy needs: a log-sum-exp that does not overflow.
#
# Apparatus: log-sum-exp (0.NU.02); estimators, bias and variance (0.ST.01).
# Source for bits per byte: Gao et al., *The Pile: An 800GB Dataset of Diverse Text for
# Language Modeling* (2020), §3.1.

# %% [markdown]
# ## 1. From logits to a loss, without overflow
#
# A language model's loss on one token is $\ell = \log \sum_j e^{x_j} - x_y$ for logits
# $x$ and target $y$. The sum of exponentials is the trap: in float64, `exp` overflows
# just above 709, and in fp16 already above about 11.1. Logits in the thousands are not exotic
# (a diverging run, a temperature close to 0), and a naive implementation then returns
# `inf` or `nan`. The cure is an identity: for any constant $m$,
#
# $$\log \sum_j e^{x_j} = m + \log \sum_j e^{x_j - m},$$
#
# and with $m = \max_j x_j$ every exponent is at most 0, so nothing overflows, and the
# largest term is exactly 1, so the sum cannot underflow to 0 either.
#
# ## 2. Three ways to report the same loss
#
# Let $\ell$ be the mean negative log-likelihood per token in nats, over an eval set of
# $L_T$ tokens and $L_B$ UTF-8 bytes.
#
# - **Perplexity** is $e^{\ell}$: the number of equally likely tokens the model is, on
#   average, choosing among. It is exp of the mean loss, not the mean of per-sequence
#   perplexities.
# - **Bits per byte.** Per-token numbers cannot be compared across tokenizers: a
#   tokenizer with longer tokens has fewer, harder tokens. The Pile paper removes the
#   tokenizer by converting to bits and dividing by bytes: $\text{BPB} =
#   \frac{L_T}{L_B}\log_2(e^{\ell}) = \frac{L_T}{L_B}\cdot\frac{\ell}{\ln 2}$. The paper
#   gives $L_T/L_B = 0.29335$ for the GPT-2 tokenizer on the Pile, and reports zero-shot
#   Pile BPB of 1.2253 for GPT-2 small and 0.7177 for GPT-3 davinci; with that ratio,
#   0.7177 BPB is about 1.70 nats per GPT-2 token.
# - A caution on names: many "bits per character" results on enwik8 are bits per
#   **byte**, since that data set is defined in bytes (the authors of adaptive-span
#   said so when asked, facebookresearch/adaptive-span issue #17). For English text the
#   two differ by well under 1%, for other scripts by much more.
#
# ## 3. The error bar
#
# An eval set of $n$ sequences gives $n$ per-sequence losses $\ell_1, \dots, \ell_n$.
# When every sequence has the same number of tokens, $\ell$ is their mean. The tokens
# inside one sequence share a document, a topic and a style, so they are far from
# independent; the sequences are the independent draws. The standard error of $\ell$ is
# therefore
#
# $$\text{SE} = \frac{s}{\sqrt{n}}, \qquad s^2 = \frac{1}{n-1}\sum_i (\ell_i - \ell)^2,$$
#
# and an interval $\ell \pm z\,\text{SE}$ has half-width $z s/\sqrt{n}$. Dividing $s$ by the
# square root of the number of **tokens** instead makes the error bar look $\sqrt{T}$ times
# smaller than it is, which is how a 0.01-nat "improvement" gets reported that is noise.
# (Miller, *Adding Error Bars to Evals*, 2024, argues for exactly this kind of standard
# error, clustered when the items are not independent.)

# %% [markdown]
# ## 4. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student
# id. On JupyterHub that is your hub user name; working on your own machine, start
# Jupyter with `JUPYTERHUB_USER=<your course id> jupyter lab` so that you see the same
# variant the grader uses. Editing this cell does not change what you are graded on.
#
# Your variant is an eval set: the mean loss of each sequence (`seq_nll`, nats per
# token; every sequence has the same length), the set's total `tokens` and UTF-8
# `bytes`, and the confidence multiplier `z` and half-width `halfwidth` (nats) you want
# for the error bar. The per-sequence losses are illustrative, shaped like real ones.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import sympy as sp

L_T, L_B, ell, z, sigma, Delta_ell = sp.symbols("L_T L_B ell z sigma Delta_ell", positive=True)

VARIANTS = {
    "A": {
        "seq_nll": [2.7731, 3.5687, 3.474, 2.6118, 2.7946, 2.8707, 3.007, 2.6598, 3.2698, 2.3978,
                    3.6354, 3.0145, 3.2603, 2.6244, 2.6606, 2.9889, 3.2651, 2.8861, 2.8846, 3.3769,
                    2.4648, 2.5008, 2.8578, 2.6615, 1.9266, 2.3705, 2.9525, 2.3114, 2.2734, 3.4045,
                    3.1545, 3.136],
        "tokens": 32768, "bytes": 111703, "z": 1.96, "halfwidth": 0.02,
    },
    "B": {
        "seq_nll": [2.1579, 2.8975, 2.6198, 2.388, 2.8877, 1.3287, 1.9861, 1.6932, 2.3056, 2.9204,
                    2.0944, 2.4872, 0.7982, 2.2331, 1.3516, 2.9795, 2.5424, 2.9407, 2.1854, 2.2199,
                    2.5941, 2.0222, 2.0025, 1.8733, 1.8797, 2.0713, 1.8625, 1.857, 2.7558, 1.0535,
                    2.2657, 1.7615, 1.7006, 1.3325, 1.9804, 2.0602, 2.1036, 1.5537, 2.2823, 3.0534],
        "tokens": 81920, "bytes": 274439, "z": 2.576, "halfwidth": 0.025,
    },
    "C": {
        "seq_nll": [2.4519, 0.5776, 1.8986, 1.6365, 2.0423, 1.757, 2.342, 1.7548, 1.615, 1.8939,
                    1.834, 1.69, 1.674, 1.9024, 1.8748, 1.4766, 1.6972, 1.1956, 2.1668, 1.5218,
                    2.5067, 1.7675, 2.3575, 2.1411, 1.874, 2.0636, 1.5264, 2.0233, 1.1081, 2.134,
                    2.0629, 1.9793, 1.6377, 1.3225, 1.5746, 2.3428],
        "tokens": 147456, "bytes": 546133, "z": 1.645, "halfwidth": 0.005,
    },
    "D": {
        "seq_nll": [0.7185, 0.5796, 0.4755, 0.3181, 0.6436, 0.7581, 0.6703, 0.685, 0.793, 0.5056,
                    0.9265, 0.5947, 0.6825, 0.9598, 0.6153, 0.7465, 0.5834, 0.6466, 0.4428, 0.618,
                    0.9223, 0.6573, 0.6044, 0.65, 0.7858, 0.6566, 0.6934, 0.4764, 0.7169, 0.5589,
                    0.7679, 0.6529, 0.6172, 0.7349, 0.5169, 0.8164, 0.6082, 0.7289, 0.5703, 0.8961],
        "tokens": 327680, "bytes": 327680, "z": 1.96, "halfwidth": 0.01,
    },
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"exercises:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {len(params['seq_nll'])} sequences, "
      f"{params['tokens']} tokens, {params['bytes']} bytes, z = {params['z']}, halfwidth = {params['halfwidth']}")

# %% [markdown]
# ### 4a. Implement a stable log-sum-exp
#
# Write `logsumexp(x)` for a 1-D list (or array) of logits, returning a float, without
# calling a library log-sum-exp (`torch.logsumexp`, `scipy.special.logsumexp`,
# `np.logaddexp.reduce`). The hidden tests call it on logits around $+10^4$ and $-10^4$,
# where the naive formula fails, and compare with `torch.logsumexp`.

# %% nbgrader={"grade": false, "grade_id": "answer_function", "locked": false, "schema_version": 3, "solution": true, "task": false}
import numpy as np


def logsumexp(x):
    """log(sum(exp(x))) for a 1-D sequence of logits, without overflow or underflow."""
    ### BEGIN SOLUTION
    values = np.asarray(x, dtype=np.float64)
    m = float(np.max(values))
    return m + float(np.log(np.sum(np.exp(values - m))))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_function", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the hidden tests compare your function with torch.logsumexp on large logits.
_v = logsumexp([0.0, 0.0])
assert np.isscalar(_v), "logsumexp should return a single number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e08-evaluation", "check_function", globals())
### END HIDDEN TESTS

# %% [markdown]
# Try it yourself against torch and against the naive formula (not graded). The naive
# one's `inf` is what a loss of `nan` looks like one layer further down.

# %%
import torch

try:
    _x = [10000.0, 10001.5, 9998.2]
    with np.errstate(over="ignore"):
        _naive = float(np.log(np.sum(np.exp(np.asarray(_x)))))
    print(f"naive: {_naive}   yours: {logsumexp(_x):.6f}   torch: "
          f"{float(torch.logsumexp(torch.tensor(_x, dtype=torch.float64), 0)):.6f}")
except NotImplementedError:
    print("Write logsumexp above first.")

# %% [markdown]
# ### 4b. Derive
#
# - `bpb_expr`: bits per byte as a sympy expression in `L_T`, `L_B` and `ell` (the mean
#   loss per token in nats).
# - `sequences_expr`: the number of sequences $n$ (before rounding up) for which the
#   interval $\ell \pm z\,\text{SE}$ has half-width $\Delta_\ell$ (your `halfwidth`), in `z`,
#   `sigma` (the per-sequence standard deviation) and `Delta_ell`.
#
# The symbols are defined in the setup cell.

# %% nbgrader={"grade": false, "grade_id": "answer_expr", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
bpb_expr = (L_T / L_B) * ell / sp.log(2)
n_ = sp.Symbol("n", positive=True)
sequences_expr = sp.solve(sp.Eq(z * sigma / sp.sqrt(n_), Delta_ell), n_)[0]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expr", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the mathematics is checked when your notebook is graded.
assert isinstance(bpb_expr, sp.Expr), "bpb_expr should be a sympy expression"
assert {x.name for x in bpb_expr.free_symbols} <= {x.name for x in (L_T, L_B, ell)}, "bpb_expr uses only L_T, L_B and ell"
assert isinstance(sequences_expr, sp.Expr), "sequences_expr should be a sympy expression"
assert {x.name for x in sequences_expr.free_symbols} <= {x.name for x in (z, sigma, Delta_ell)}, "sequences_expr uses only z, sigma and Delta_ell"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e08-evaluation", "check_expr", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4c. Compute
#
# For your variant:
# - `mean_nll`: the eval loss $\ell$, nats per token;
# - `perplexity`;
# - `bits_per_byte`;
# - `standard_error`: the standard error of `mean_nll`, per sequence, with the sample
#   standard deviation;
# - `sequences_needed`: the smallest whole number of sequences that brings the half-width
#   $z\,\text{SE}$ down to `halfwidth`, taking your sample's $s$ as the spread (an int).

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
import math

### BEGIN SOLUTION
_losses = np.asarray(params["seq_nll"], dtype=np.float64)
_n = len(_losses)
mean_nll = float(_losses.mean())
perplexity = math.exp(mean_nll)
bits_per_byte = float(bpb_expr.subs({L_T: params["tokens"], L_B: params["bytes"], ell: mean_nll}))
_s = float(_losses.std(ddof=1))
standard_error = _s / math.sqrt(_n)
sequences_needed = math.ceil(float(sequences_expr.subs({z: params["z"], sigma: _s, Delta_ell: params["halfwidth"]})))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
import numbers

for _name in ("mean_nll", "perplexity", "bits_per_byte", "standard_error"):
    assert _name in globals(), f"assign {_name} = ... in the answer cell"
    assert isinstance(globals()[_name], numbers.Real), f"{_name} should be a number"
assert isinstance(sequences_needed, numbers.Integral), "sequences_needed is a count: an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e08-evaluation", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4d. Look at it
#
# Left: the per-sequence losses, their mean, and the interval $\pm z\,\text{SE}$ you
# computed; the spread of single sequences is wide, and the interval is what averaging
# buys. Right: the half-width against the number of sequences, with your target.

# %%
import matplotlib.pyplot as plt

try:
    _m, _se, _need = mean_nll, standard_error, sequences_needed
except NameError:
    print("Compute the numbers above first.")
else:
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
    ax1.hist(params["seq_nll"], bins=12, color="C0", alpha=0.7)
    ax1.axvline(_m, color="C3", label="mean")
    ax1.axvspan(_m - params["z"] * _se, _m + params["z"] * _se,
                color="C3", alpha=0.2, label=f"± {params['z']} SE")
    ax1.set_xlabel("per-sequence loss (nats per token)")
    ax1.set_ylabel("sequences")
    ax1.legend()
    _ns = np.logspace(1, np.log10(max(10 * _need, 100)), 200)
    _sd = _se * math.sqrt(len(params["seq_nll"]))
    ax2.loglog(_ns, params["z"] * _sd / np.sqrt(_ns), label="half-width")
    ax2.axhline(params["halfwidth"], color="grey", ls=":", label="target")
    ax2.axvline(_need, color="C3", ls="--", label="sequences needed")
    ax2.set_xlabel("sequences in the eval set")
    ax2.set_ylabel("half-width (nats)")
    ax2.legend()
    fig.tight_layout()
    plt.show()

# %% [markdown]
# ### 4e. Read your numbers
#
# How many tokens does `sequences_needed` amount to at your sequence length? If you
# had used the token-level standard error instead, how many sequences would you have
# thought were enough, and how wide would the true interval have been for that many?
# (Not graded: a sentence for yourself.)

# %% [markdown]
# *Your answer, for yourself (not graded): double-click this cell and write it here.*
