# %% [markdown]
# # tds-e10-test-set-resolution · When a finite test set reads a smooth model as zero
#
# *Module TDS Training Dynamics & Scaling · mathematics · exercise*
#
# tds-e2-metric-artefacts showed one way an abrupt curve can come from a smooth model: score a
# per-token loss that falls as a power law with an all-or-nothing metric, and the score sits near
# zero for decades of model size before it climbs. Schaeffer, Miranda and Koyejo (*Are Emergent
# Abilities of Large Language Models a Mirage?*, NeurIPS 2023) name a second, quieter way, which
# works even when the metric is fine: **resolution**. A test set of $n$ examples can only report
# scores in steps of $1/n$. A model whose true exact match lies far below one step scores exactly
# zero, and a curve of exact zeros followed by a rise looks like something switching on.
#
# This exercise makes the argument quantitative for the model of tds-e2 (its $c$, $\alpha$ and
# answer length $L$): how big must the model be before a given test set can tell it from zero, and
# how big must the test set be to see a given model? Then it asks, in prose, what is left of
# "emergence" once both critiques have been made.

# %% [markdown]
# ## 1. The measurement as a sum of trials
#
# Keep tds-e2's assumptions: the per-token cross-entropy is $(N/c)^{\alpha}$ with $\alpha<0$, the
# tokens of an answer are right or wrong independently, and an answer counts only when all $L$
# of its tokens are right. Write $EM(N)$ for the resulting expected exact match of a model with
# $N$ parameters; you derived it in tds-e2, and you will need it again here.
#
# A test set is $n$ questions drawn independently from the task. Each question is a trial that
# the model passes with probability $EM(N)$, so the number of questions it gets exactly right is
# a binomial count, and the score the benchmark prints is that count divided by $n$. Two facts
# follow, and both matter:
#
# - The printed score is a multiple of $1/n$. Anything between zero and the first step is
#   invisible: the benchmark can say "zero" or "one question right", nothing in between.
# - Whether it says zero is a matter of chance, governed by the probability that *every* one of the
#   $n$ trials fails. That probability, not the expected score, decides whether a small model
#   is reported as having "no ability".
#
# The second point is where people slip. A model whose expected score equals one step, one
# correct answer expected in $n$, still scores zero a large part of the time: an expected count
# of one is not a guarantee of seeing one. The honest question is: at what model size does the
# chance of a false zero drop below a tolerance $\delta$ that you choose (5% or 1%, say)?

# %% [markdown]
# ## 2. What Schaeffer et al. did with it
#
# Schaeffer et al. list insufficient resolution among the ways an analysis can manufacture
# emergence (§2): with too few test examples, the accuracy of every small model is estimated as
# zero, and the curve has nowhere to go but up. Their prediction in §3 is that emergence should
# fade "with better statistics", and they test it on GPT-3-family models for arithmetic tasks by
# generating many more test problems than the original benchmarks held. With the extra data the
# small models' accuracies come out small but measurably above zero, and the curve in model size
# looks much less like a switch. The same models, scored by the same metric, only with a finer
# ruler.
#
# Notice what the argument needs and what it does not. It needs nothing about the metric being
# nonlinear; it applies to any score that is an average over examples. It needs nothing about the
# model either: a step function in $N$ and a smooth curve would both read as zero below the
# first step. What it shows is that a curve of zeros is *no evidence* of absence; it cannot by
# itself show that the underlying curve is smooth. That needs the better measurement.

# %% [markdown]
# ## 3. What survives the critique
#
# Wei et al. (*Emergent Abilities of Large Language Models*, TMLR 2022) defined an ability as
# emergent if it is not present in smaller models but is present in larger ones, so that it
# cannot be predicted by extrapolating the smaller models' performance. Schaeffer et al.'s two
# arguments, the metric and the resolution, explain many of the curves that fit that definition:
# they show the jumps *could* come from smooth improvement plus measurement, and for the arithmetic
# tasks they re-scored, they largely do. They do not show that every reported jump is an artefact,
# and Schaeffer et al. say as much.
#
# Three things remain, and a careful reader keeps them apart:
#
# - **The jump is real for the user.** If you need the whole answer right (a program that
#   compiles, a sum that is correct), exact match is the metric you care about, and it does rise
#   steeply with scale. The critique changes the *explanation*, and with it the *predictability*,
#   not the existence of a steep rise in the quantity that matters.
# - **Some tasks stay abrupt under continuous metrics.** Du et al. (*Understanding Emergent
#   Abilities of Language Models from the Loss Perspective*, NeurIPS 2024) trained models of many
#   sizes and report that downstream performance tracks the *pre-training loss* rather than the
#   size, and that on several benchmarks performance stays at chance until the loss falls below a
#   threshold, then rises, even when scored by continuous metrics. On this view emergence is a
#   threshold in loss, not in parameters, and it is not removed by changing the metric. Their
#   evidence is for their models and tasks; it is a counterweight, not a verdict.
# - **Independence is an assumption.** The $p^L$ model treats an answer's tokens as independent
#   coin flips. Real errors are correlated (one wrong carry ruins every later digit), and a model
#   that learns a procedure can move from mostly wrong to mostly right faster than any smooth
#   per-token curve predicts. tds-p4-metric-artefacts measures how well it holds on a real model.
#
# The defensible summary is narrow: an abrupt curve on a small test set, scored by exact match,
# is weak evidence of an abrupt change in the model; a smooth curve in a continuous metric on a
# large test set is strong evidence against one; and some abilities have survived the second test.

# %% [markdown]
# ## 4. How much data is enough
#
# The same reasoning runs the other way. Before declaring that a 100M-parameter model "cannot do"
# a task, ask how many test questions it would take for its expected score to show up with
# chance of a false zero no worse than $\delta$. You will find that for long answers and small
# models the answer is absurd, far more questions than any benchmark holds, which is exactly why
# the zeros in published tables say so little. A per-token metric, or the log-probability of the
# correct answer, reaches the same resolution with far fewer questions, because it measures every
# token of every answer instead of one bit per question.

# %% [markdown]
# ## Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id. On
# JupyterHub that is your hub user name; on your own machine start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab`. Editing this cell does not change what you are
# graded on.
#
# Your parameters: the power law of tds-e2 (`c`, `alpha`, answer length `length`), a test set of
# `n_test` questions, a tolerance `delta` for a false zero, and a model size `target_size`.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {'A': {'c': 3000000000.0,
       'alpha': -0.5,
       'length': 5,
       'n_test': 500,
       'delta': 0.05,
       'target_size': 1000000000.0},
 'B': {'c': 10000000000.0,
       'alpha': -0.3,
       'length': 10,
       'n_test': 1000,
       'delta': 0.05,
       'target_size': 10000000000.0},
 'C': {'c': 500000000.0,
       'alpha': -0.4,
       'length': 3,
       'n_test': 200,
       'delta': 0.05,
       'target_size': 30000000.0},
 'D': {'c': 2000000000.0,
       'alpha': -0.6,
       'length': 12,
       'n_test': 2000,
       'delta': 0.01,
       'target_size': 2000000000.0}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-exercises:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ### 1. Derive it
#
# With `N, n = sympy.symbols("N n", positive=True)`, give `zero_probability_expr`: the probability
# that a test set of `n` independent questions reports an exact match of exactly zero for a model
# of `N` parameters, with your variant's $c$, $\alpha$ and $L$ (`length`) as numbers.

# %% nbgrader={"grade": false, "grade_id": "answer_expression", "locked": false, "schema_version": 3, "solution": true, "task": false}
import math

import sympy

### BEGIN SOLUTION
N, n = sympy.symbols("N n", positive=True)
em = sympy.exp(-params["length"] * (N / params["c"]) ** params["alpha"])   # tds-e2's exact match
zero_probability_expr = (1 - em) ** n
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expression", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the mathematics is checked when your notebook is graded.
assert isinstance(zero_probability_expr, sympy.Basic), "zero_probability_expr should be a sympy expression"
assert {s.name for s in zero_probability_expr.free_symbols} <= {"N", "n"}, "use only the symbols N and n"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-e10-test-set-resolution", "check_expression", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 2. Compute it
#
# For your variant:
# - `smallest_score`: the smallest nonzero exact match your test set of `n_test` questions can
#   report (a float);
# - `resolvable_size`: the smallest model size $N$ (parameters, a float) at which the chance that
#   the test set reports exactly zero is at most `delta`;
# - `test_size_needed`: the smallest number of questions (an int) at which a model of
#   `target_size` parameters is reported as exactly zero with chance at most `delta`.
#
# Work in logarithms: the probabilities involved are tiny, and `math.log1p` keeps $\ln(1-x)$
# accurate when $x$ is small.

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
c, alpha, length = params["c"], params["alpha"], params["length"]
n_test, delta = params["n_test"], params["delta"]
smallest_score = 1 / n_test
# (1 - EM)^n <= delta  <=>  EM >= 1 - delta^(1/n)  <=>  length (N/c)^alpha <= -ln(1 - delta^(1/n))
level = -math.log1p(-delta ** (1 / n_test)) / length
resolvable_size = c * level ** (1 / alpha)
em_target = math.exp(-length * (params["target_size"] / c) ** alpha)
test_size_needed = math.ceil(math.log(delta) / math.log1p(-em_target))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
for _name in ("smallest_score", "resolvable_size"):
    assert isinstance(globals()[_name], numbers.Real), f"{_name} should be a number"
assert isinstance(test_size_needed, numbers.Integral), "test_size_needed is a count of questions: an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-e10-test-set-resolution", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 5. Read what you found (not graded)
#
# - Compare your `resolvable_size` with the size at which tds-e2's exact match reaches one half.
#   Over how many decades of $N$ does your test set report an exact zero for a model whose
#   per-token accuracy is improving all along?
# - Your `test_size_needed` is a number of *questions*. How many does the largest benchmark you
#   know hold? What would a table of exact-match scores at `target_size` look like on it?
# - Resolution is a property of the measurement, not of the model. Which of the three points of
#   section 3 would still stand if every benchmark had a million questions?
