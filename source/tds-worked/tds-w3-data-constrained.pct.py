# %% [markdown]
# # tds-w3-data-constrained · What a repeated token is worth
#
# *Module TDS Training Dynamics & Scaling · mathematics · worked problem*
#
# The compute-optimal recipes of the Chinchilla paper (II.8 e09-chinchilla, and tds-w2 in this
# module) assume that every training token is new. For the largest runs that assumption has
# stopped holding: a compute budget that asks for tens of trillions of tokens meets a web that,
# after filtering and deduplication, offers fewer good ones. A lab with a fixed corpus then has
# two choices: train a larger model on one pass, or train the model it wanted for several
# passes over the same text. The second choice raises an old question with a new weight: how
# much is a token worth the second, fifth or twentieth time the model sees it?
#
# Muennighoff et al. (*Scaling Data-Constrained Language Models*, NeurIPS 2023, arXiv 2305.16264)
# answered it with more than four hundred training runs, up to 9B parameters and 900B tokens, in
# which the number of unique tokens was held fixed while the number of passes grew. This problem
# derives their answer, the **effective data** of a repeated corpus, and computes it for a real
# corpus and budget. Apparatus: the exponential function and its inverse, the logarithm.

# %% [markdown]
# ## 1. The idea, and the derivation
#
# **Notation.** A run sees $U_D$ unique tokens. It makes $1 + R_D$ passes over them, so $R_D$ is
# the number of **repetitions** beyond the first pass, and the total number of tokens trained on
# is $D = U_D(1 + R_D)$. We want $D'$, the number of fresh tokens that would have done the same
# good: the quantity that should stand in the Chinchilla loss in place of $D$.
#
# **The assumption.** The paper posits that each repetition is worth a fixed fraction of the one
# before it. The first pass is worth its full $U_D$. The first repetition is worth
# $U_D\,\delta$, the second $U_D\,\delta^2$, and so on, with $0 < \delta < 1$. This is the simplest
# law with the two properties the runs show: early repetitions are nearly as good as new data,
# and late ones are worth almost nothing. Write $\delta = e^{-1/R_D^*}$ so that the single fitted
# constant $R_D^*$ has the units of repetitions.
#
# **Summing it.** The value of $R_D$ repetitions is a geometric sum,
# $U_D(\delta + \delta^2 + \dots + \delta^{R_D})$. The paper replaces the sum by its continuous
# version, which is what allows a fractional number of passes (4.25 epochs, say): a pass made at
# "repetition time" $r$ is worth $U_D e^{-r/R_D^*}$ per unit of $r$, and integrating from $0$ to
# $R_D$ gives
#
# $$D' = U_D + U_D R_D^*\left(1 - e^{-R_D/R_D^*}\right).$$
#
# This is the paper's eq. (5). Three readings of it are worth more than the formula.
#
# - **Few repetitions are nearly free.** For $R_D \ll R_D^*$ the bracket is close to
#   $R_D/R_D^*$, so $D' \approx U_D(1 + R_D) = D$: a few passes act like new data.
# - **There is a ceiling.** As $R_D \to \infty$, $D' \to U_D(1 + R_D^*)$. No amount of
#   repetition makes a corpus worth more than $1 + R_D^*$ times itself.
# - **The marginal pass.** Differentiate with respect to $R_D$: one more pass, made after $R_D$
#   repetitions, adds $U_D e^{-R_D/R_D^*}$ of value, against $U_D$ for a pass of new text. Its
#   relative worth falls by a factor $e$ every $R_D^*$ repetitions.
#
# The same form serves parameters. A model larger than the data can use is treated as having
# $U_N$ useful parameters and $R_N$ "repeated" ones, with its own constant $R_N^*$ (eq. 6). The
# fitted values printed in §3.1 are $R_D^* = 15.4$ and $R_N^* = 5.3$: excess parameters lose
# their value about three times as fast as repeated data. The authors' repository
# (huggingface/datablations, README, "Parametric Fit") lists the unrounded fit, with
# $R_D^* \approx 15.388$ and $R_N^* \approx 5.310$. Keep the two constants apart: they
# answer different questions.
#
# **What "four epochs are fine" means.** The finding most often quoted from the paper is that up
# to about four epochs, repeated data is almost as good as unique data. In effective data, four
# passes ($R_D = 3$) are worth somewhat less than four unique passes: a few percent of the value
# is gone (you will compute how much). The claim is about the *loss*: the loss depends on $D'$ through a power
# $D'^{-\beta}$ with $\beta$ near one third, which shrinks a small relative loss of data into a
# smaller relative change of the reducible loss, inside the noise between training seeds. The
# paper's own Fig. 5 shows the loss penalty growing past that point, with returns dwindling
# towards sixteen epochs and beyond. The widely repeated shorthand "up to four epochs is as good
# as new data" is therefore only approximately true, and only of the loss.
#
# **When it fails.** The law was fitted on two web corpora (C4 and OSCAR) with models up to 9B
# parameters, on the English text of 2022. It does not know about data quality: a small, clean,
# deliberately written corpus may tolerate more passes, and a corpus with many near-duplicates
# has already been "repeated" before training begins. It also assumes that the training recipe
# stays fixed; stronger regularisation, such as heavier weight decay or dropout, changes how
# quickly repetition hurts. At extreme repetition (hundreds of epochs) the runs of the paper
# overfit and the loss rises, which the saturating form cannot describe at all.

# %% [markdown]
# ## 2. Worked example (not your variant)
#
# A team has a 50B-token domain corpus and a budget that allows 150B tokens of training: three
# passes. We compute the effective data, the fraction of the budget's value lost to repetition,
# how many passes it would take to reach the value of 300B fresh tokens, and (in place of your
# half-value question) the pass at which one more pass is worth only **a quarter** of new data.

# %%
import math

import numpy as np
import sympy

U_ex, R_STAR_D, R_STAR_N = 50e9, 15.4, 5.3

passes = 3
R = passes - 1                                   # repetitions beyond the first pass
D_eff = U_ex + U_ex * R_STAR_D * (1 - math.exp(-R / R_STAR_D))
lost = 1 - D_eff / (U_ex * passes)
print(f"{passes} passes over 50B: effective {D_eff / 1e9:.1f}B tokens; value lost {lost:.2%}")

# the marginal pass is worth exp(-R/R*) of a fresh one; a quarter at R = R* ln 4
quarter_passes = 1 + R_STAR_D * math.log(4)
print(f"one more pass is worth a quarter of new data after {quarter_passes:.2f} passes")

# passes needed to reach a target: invert D' = U + U R* (1 - exp(-R/R*))
target = 300e9
R_needed = -R_STAR_D * math.log(1 - (target / U_ex - 1) / R_STAR_D)
print(f"to be worth {target / 1e9:.0f}B fresh tokens: {1 + R_needed:.2f} passes "
      f"(ceiling of this corpus: {U_ex * (1 + R_STAR_D) / 1e9:.0f}B)")

# %% [markdown]
# Three passes lose about 4% of their value: close to free. The quarter-value point comes after
# about 22 passes; the target of 300B is reachable (the corpus's ceiling is 820B) but costs more
# passes than the six that fresh data would need. As an expression in the total tokens $D$ (with
# $R_D = D/U_D - 1$), the example's effective data is:

# %%
D = sympy.Symbol("D", positive=True)
U_s, Rs = sympy.Integer(50 * 10**9), sympy.Rational(77, 5)
print(sympy.simplify(U_s + U_s * Rs * (1 - sympy.exp(-(D / U_s - 1) / Rs))))

# %%
import matplotlib.pyplot as plt

epochs_grid = np.linspace(1, 60, 300)
value = [1 + R_STAR_D * (1 - math.exp(-(e - 1) / R_STAR_D)) for e in epochs_grid]
plt.figure(figsize=(7, 3.5))
plt.plot(epochs_grid, epochs_grid, "k:", label="repeats worth new data")
plt.plot(epochs_grid, value, label="effective passes, R*_D = 15.4")
plt.axhline(1 + R_STAR_D, color="grey", ls="--", label="ceiling 1 + R*_D")
plt.xlabel("passes over the corpus")
plt.ylabel("effective passes (D' / U_D)")
plt.legend()
plt.title("The value of repeated data saturates")
plt.show()

# %% [markdown]
# ## 3. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id. On
# JupyterHub that is your hub user name; on your own machine start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab`. Editing this cell does not change what you are
# graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {'A': {'unique_tokens': 100e9, 'epochs': [1, 4, 14, 40], 'target_effective': 1.4e12,
       'r_star_data': 15.4, 'r_star_params': 5.3},
 'B': {'unique_tokens': 25e9, 'epochs': [4, 7.12, 9.68, 20], 'target_effective': 178e9,
       'r_star_data': 15.4, 'r_star_params': 5.3},
 'C': {'unique_tokens': 106e9, 'epochs': [1, 2, 4.25, 10], 'target_effective': 1e12,
       'r_star_data': 15.4, 'r_star_params': 5.3},
 'D': {'unique_tokens': 7e9, 'epochs': [2, 8, 16, 100], 'target_effective': 50e9,
       'r_star_data': 15.4, 'r_star_params': 5.3}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-worked:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# Your parameters: `unique_tokens` ($U_D$), `epochs` (a list of total pass counts over the
# corpus, each at least 1), `target_effective` (an amount of fresh-token value, in tokens), and
# the two fitted constants `r_star_data` ($R_D^*$) and `r_star_params` ($R_N^*$). The variants
# are real: a Chinchilla-sized budget of 1.4T tokens on a 100B-token corpus; the 25B-token runs
# of the paper's own Fig. 1; Galactica's 106B-token scientific corpus, trained for 4.25 epochs;
# and phi-1's roughly 7B tokens of code and textbook text, trained for about eight passes.
#
# ### 3a. Derive it
#
# With `D = sympy.Symbol("D", positive=True)`, give `effective_data_expr`: the effective data
# $D'$ as a sympy expression in the **total** number of training tokens `D`, with your variant's
# $U_D$ and the right one of the two fitted constants as numbers, each as `params` gives it (the
# variants use the paper's rounded constants, not the repository's unrounded ones above).

# %% nbgrader={"grade": false, "grade_id": "answer_expression", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
D = sympy.Symbol("D", positive=True)
U_v = sympy.nsimplify(params["unique_tokens"])
R_v = sympy.nsimplify(params["r_star_data"])
effective_data_expr = U_v + U_v * R_v * (1 - sympy.exp(-(D / U_v - 1) / R_v))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expression", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the value is checked when your notebook is graded.
assert isinstance(effective_data_expr, sympy.Basic), "effective_data_expr should be a sympy expression in D"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-w3-data-constrained", "check_expression", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 3b. Compute it
#
# - `effective_tokens`: $D'$ in tokens at each of your `epochs`, in order (a list of floats);
# - `value_lost`: at each of your `epochs`, the fraction of the trained tokens' face value that
#   repetition loses, $1 - D'/D$ (a list of floats);
# - `half_value_epochs`: the total number of passes at which **one more** pass is worth half a
#   pass of new data (a float; fractional passes are allowed);
# - `epochs_for_target`: the total number of passes over your corpus needed for $D'$ to reach
#   your `target_effective` (a float).

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
U, R_star = params["unique_tokens"], params["r_star_data"]


def effective_tokens_at(passes):
    return U + U * R_star * (1 - math.exp(-(passes - 1) / R_star))


effective_tokens = [effective_tokens_at(e) for e in params["epochs"]]
value_lost = [1 - effective_tokens_at(e) / (U * e) for e in params["epochs"]]
half_value_epochs = 1 + R_star * math.log(2)
epochs_for_target = 1 - R_star * math.log(1 - (params["target_effective"] / U - 1) / R_star)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
for _name in ("effective_tokens", "value_lost"):
    assert isinstance(globals()[_name], list) and len(globals()[_name]) == len(params["epochs"]), \
        f"{_name}: one number per epoch count"
for _name in ("half_value_epochs", "epochs_for_target"):
    assert isinstance(globals()[_name], numbers.Real), f"{_name} should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-w3-data-constrained", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# Look at your numbers (not graded). How does the value lost at four passes compare with the
# loss-level claim that four epochs are "almost free"? How far is your target from the ceiling
# $U_D(1 + R_D^*)$, and what would a lab do instead of a hundred passes: find more text, use
# another language or code (the paper finds code worth adding), or spend the compute on a
# larger model? For the excess-parameter side of the same law, and why a data-constrained run
# should also be a smaller model than Chinchilla's rule gives, see §3.2 of the paper; for the
# unconstrained allocation itself, II.8 e09-chinchilla and tds-w2-chinchilla-refit.
