# %% [markdown]
# # tds-e4-modular-fourier · What a grokked network computes for addition modulo p
#
# *Module TDS Training Dynamics & Scaling · mathematics · exercise*
#
# tds-b4-grokking taught you to read grokking off a training log: the training accuracy reaches
# one long before the held-out accuracy does. That item deliberately left open *what* the network
# has learned once it generalises. For one task the answer is known in full. Nanda, Chan,
# Lieberum, Smith and Steinhardt (*Progress measures for grokking via mechanistic
# interpretability*, ICLR 2023) trained a one-layer transformer on $a + b \bmod p$ with
# $p = 113$, showing it 30% of the $p^2$ possible pairs, with AdamW and strong weight decay. It fits
# the training pairs early, and only thousands of epochs later does it answer the held-out pairs.
# They then read the trained weights and found a compact algorithm, which they call the
# *Fourier multiplication algorithm* (their §3.1), and checked it by ablations in the Fourier
# basis. This exercise has you derive that algorithm's output, evaluate it for your variant, and
# count what it needs against what a memorised table needs.
#
# ## The idea: addition modulo p is a rotation
#
# Put the residues $0, 1, \dots, p-1$ around a circle, residue $x$ at the angle $w x$. Adding $b$ to
# $a$ is then turning the circle by $b$ steps, and the sum wraps around at $p$ by itself, with no
# carry and no comparison: that is exactly the arithmetic modulo $p$, provided the circle closes
# after $p$ steps. So the step angle cannot be arbitrary; it must be a whole number of full turns
# divided over $p$ residues. Each whole number $k$ of turns gives one allowed frequency $w_k$, and
# a network is free to use several at once.
#
# The trained network embeds each input token as the cosine and the sine of $w_k a$ for a handful
# of *key frequencies*. In the mainline run of Nanda et al. the embedding has six non-zero
# frequencies, of which five are used by the rest of the network: $k \in \{14, 35, 41, 42, 52\}$
# (§4.1 and Fig. 3). Which frequencies a run picks is an accident of its initialisation: another
# seed, or another modulus, picks a different handful. Only your variant's set matters here, and
# variants C and D use invented sets for other moduli (the paper does not print frequencies for
# them).
#
# ## The derivation's route
#
# The attention layer brings $\cos(w_k a)$, $\sin(w_k a)$, $\cos(w_k b)$ and $\sin(w_k b)$ into
# the same position. The multi-layer perceptron (MLP) then forms products of them, and the angle-addition
# identities, $\cos(x+y) = \cos x \cos y - \sin x \sin y$ and
# $\sin(x+y) = \sin x \cos y + \cos x \sin y$, turn those products into the cosine and the sine of
# $w_k$ times the sum. The network never represents $a + b$ as a number: it holds the point on
# the circle where the sum lands, which is all that the modulus needs.
#
# The last step is the read-out. The unembedding is a linear map from the MLP's output to one
# logit per candidate answer $c$. Questions to settle on paper before you write any code:
# - Which pair of weights for candidate $c$, multiplied with the cosine and the sine of
#   $w_k(a+b)$ and added, gives a function of $a + b$ and $c$ alone? Which identity names it?
# - For which $c$ is every frequency's term at its largest at once, and why is there exactly one
#   such $c$ among $0, \dots, p-1$ when $p$ is prime?
# - Summing the terms of all key frequencies with equal weight, what is the logit as an
#   expression in $a$, $b$ and $c$?
#
# ## Why several frequencies, when one would do
#
# With $p$ prime, a single nonzero frequency already puts its maximum on the right answer only:
# $w_k d$ is a whole number of turns only when $d$ is a multiple of $p$. But the softmax and the
# cross-entropy loss do not reward being right by a hair. A single frequency leaves the nearest
# wrong candidates almost as high as the right one, because a cosine is flat near its peak. With
# several frequencies, the wrong candidates' terms point in different directions and partly
# cancel, while at the right answer they all agree. The sum's margin between the right logit and
# the best wrong one is what the loss keeps pushing up, and a few frequencies buy a wide margin.
# You will see the margin in your own logits.
#
# If $p$ were not prime the picture would break for some frequencies: a $k$ sharing a factor with
# $p$ turns the circle fully in fewer than $p$ steps, so it cannot tell apart candidates that
# differ by that shorter period. This is one reason the grokking literature works with prime
# moduli.
#
# ## Memorising against computing
#
# Before it generalises, the network has a cheaper-looking option: store an answer for every
# training pair. A complete lookup table holds one entry for each *ordered* pair $(a, b)$, and
# that number grows with the square of the modulus. The Fourier circuit instead stores, for each
# key frequency and each residue, the cosine and the sine it reads, and it reuses them for all
# pairs. Its size grows only linearly in the modulus. Counting both for your variant shows why a
# regulariser that penalises weight norms, as weight decay does, favours the circuit once it
# exists.
#
# Two cautions about that count. First, it counts the numbers an algorithm needs, not the
# network's parameters: the transformer of Nanda et al. (width 128, four heads, an MLP of width
# 512) keeps all its weights throughout, and the circuit is a low-dimensional pattern inside them.
# Second, a widely repeated summary says that the network "suddenly discovers" the algorithm at the
# moment of grokking. The paper's progress measures say otherwise. Their *restricted loss* (the
# loss with everything but the key frequencies ablated) and *excluded loss* (with only the key
# frequencies ablated) show the circuit forming gradually while the test loss stays high, and the
# test accuracy jumps during a final *cleanup* phase, when weight decay removes the memorising
# components that were drowning the circuit's answer. They split training into memorisation,
# circuit formation and cleanup; the abrupt part is the last, not the learning of the algorithm.
#
# ## When the picture fails
#
# The exercise uses exact cosines with equal weights. The real network's logits only approximate
# this: each frequency carries its own weight, the MLP's products come from ReLU neurons rather
# than exact multiplication, and some residual noise remains. The argmax survives because the
# margin is wide; the logit values you compute are an idealisation. The analysis is also specific
# to this task. For other group operations related circuits have been found, but nothing here says
# that large language models compute anything in a Fourier basis.

# %% [markdown]
# ## Worked example: one identity, one repeat (not your variant)
#
# Two checks of the ingredients, on numbers no variant uses: the angle-addition identity at two
# arbitrary angles, and a cosine on the residues of 7 that makes two whole turns, compared with one
# that does not make a whole number of turns. The code does not compute any logit.

# %%
import math

import sympy

ex_x, ex_y = 0.4, 1.3
print("identity holds:", math.isclose(math.cos(ex_x + ex_y),
                                      math.cos(ex_x) * math.cos(ex_y) - math.sin(ex_x) * math.sin(ex_y)))
ex_modulus = 7
whole = [round(math.cos(2 * math.pi * 2 * x / ex_modulus), 3) for x in range(2 * ex_modulus)]
partial = [round(math.cos(2.5 * x / ex_modulus), 3) for x in range(2 * ex_modulus)]
print("two whole turns:", whole)
print("not a whole turn:", partial)

# %% [markdown]
# The first list repeats after seven residues, so residue $x$ and residue $x + 7$ land on the same
# point of the circle, as arithmetic modulo 7 requires. The second does not repeat, so it would
# treat $x$ and $x + 7$ as different numbers.

# %% [markdown]
# ## Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id. On
# JupyterHub that is your hub user name; on your own machine start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab`. Editing this cell does not change what you are
# graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {'A': {'p': 113, 'freqs': [14, 35, 41, 42, 52], 'a': 37, 'b': 58, 'cs': [95, 96, 18, 0]},
 'B': {'p': 113, 'freqs': [14, 35, 41, 42, 52], 'a': 90, 'b': 61, 'cs': [38, 37, 75, 112]},
 'C': {'p': 97, 'freqs': [8, 21, 33], 'a': 20, 'b': 45, 'cs': [65, 64, 32, 1]},
 'D': {'p': 59, 'freqs': [5, 17, 22, 29], 'a': 40, 'b': 33, 'cs': [14, 15, 45, 30]}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-exercises:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ### Derive it
#
# With `a_, b_, c_ = sympy.symbols("a b c")` (the trailing underscore keeps them apart from your
# variant's numbers), give
# - `logit_expr`: the logit for candidate `c`, summed over your variant's key frequencies `freqs`
#   with weight one each, as an expression in `a`, `b` and `c` with your variant's `p` put in.
#   Write it as a sum of cosines of a single argument each, using `sympy.cos` and `sympy.pi`.

# %% nbgrader={"grade": false, "grade_id": "answer_expression", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
a_, b_, c_ = sympy.symbols("a b c")
logit_expr = sum(sympy.cos(2 * sympy.pi * k * (a_ + b_ - c_) / params["p"]) for k in params["freqs"])
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expression", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the value is checked when your notebook is graded.
assert isinstance(logit_expr, sympy.Basic), "logit_expr should be a sympy expression"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-e4-modular-fourier", "check_expression", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Compute it
#
# For your variant's `p`, `freqs`, `a`, `b` and candidates `cs`:
# - `logits`: the logit of each candidate in `cs`, in that order (a list of floats);
# - `answer`: the candidate among $0, \dots, p-1$ with the largest logit (an int);
# - `table_entries`: how many entries a lookup table needs to hold the answer for every ordered pair $(a, b)$ (an int);
# - `fourier_numbers`: how many numbers the circuit stores: the cosine and the sine of each key frequency at each residue (an int).
#
# Look at your `logits`: how wide is the margin between the right answer and the others?

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def _logit(c):
    return sum(math.cos(2 * math.pi * k * (params["a"] + params["b"] - c) / params["p"]) for k in params["freqs"])


logits = [_logit(c) for c in params["cs"]]
answer = max(range(params["p"]), key=_logit)
table_entries = params["p"] ** 2
fourier_numbers = 2 * len(params["freqs"]) * params["p"]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
assert isinstance(logits, list) and len(logits) == len(params["cs"]), "one logit per candidate in cs"
assert isinstance(answer, numbers.Integral), "answer is a residue: an int"
assert isinstance(table_entries, numbers.Integral), "table_entries is a count: an int"
assert isinstance(fourier_numbers, numbers.Integral), "fourier_numbers is a count: an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-e4-modular-fourier", "check_numbers", globals())
### END HIDDEN TESTS
