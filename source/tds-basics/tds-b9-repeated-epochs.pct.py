# %% [markdown]
# # tds-b9-repeated-epochs · When the unique data run out
#
# *Module TDS Training Dynamics & Scaling · basics · term 9 of 11*
#
# **Epochs and repetitions.** A corpus holds $U$ unique tokens; a training run sees $D$ tokens in
# all. The run makes $D/U$ **epochs** (passes over the corpus). Muennighoff et al. (2023,
# *Scaling Data-Constrained Language Models*, NeurIPS) count the **repetitions** $R$ as the
# passes beyond the first,
#
# $$R = \frac{D}{U} - 1,$$
#
# so a single pass has $R = 0$: every token was new when it was seen. A run of four epochs has
# three repetitions. The distinction matters because their findings are stated in both
# languages, and the two differ by exactly one pass.

# %% [markdown]
# ## Why anyone repeats data
#
# The compute-optimal recipe of Hoffmann et al. (2022; tds-b11 and II.8's e09-chinchilla) asks
# for parameters and tokens to grow together, about twenty tokens per parameter. Follow it
# upwards and the token budgets soon exceed the supply of good text: the deduplicated,
# quality-filtered web is large but finite, and for most languages other than English, and for
# specialised domains such as scientific papers or code in a niche language, it is small. A team
# that wants a model of a given size has three choices: train a smaller model, train on worse
# data, or go over the good data more than once. Before 2023 most large language models trained
# for about one epoch, and repetition was widely believed to cause memorisation and to waste
# compute.
#
# Muennighoff et al. trained about 400 models, from tens of millions to 9 billion parameters and
# on up to 900 billion tokens, on subsets of C4 of controlled size, repeating each subset as
# often as the budget required. Their abstract states the central result: with a fixed compute
# budget and a fixed amount of unique data, "training with up to 4 epochs of repeated data
# yields negligible changes to loss compared to having unique data". Beyond that, each further
# pass is worth less than the one before, and far out (they trained models for many tens of
# epochs) the value of adding compute through more repetition "eventually decays to zero". They
# fitted a law in which repeated tokens count as a smaller number of effective fresh tokens;
# this module's worked problem tds-w3 derives and computes with it, so here it stays in words.
#
# The finding also has a second half that is easy to miss: when data are constrained, the
# compute-optimal model is smaller and trains for more epochs than the unconstrained recipe
# would suggest, and excess parameters lose value the same way excess repetitions do. And they
# found that filling the gap with code, or relaxing quality filters, helps about as much as
# some extra repetitions of the good data.

# %% [markdown]
# ## Reading a data budget
#
# A planning question therefore starts with two divisions. How many epochs does the budget
# imply? And how many tokens can be seen before passing four epochs, the point up to which a
# repeated token is worth almost as much as a new one? Galactica (Taylor et al. 2022) is the
# best-known large run that went there on purpose: its 120B model saw 450 billion tokens of a
# 106-billion-token scientific corpus, "approximately 4.25 epochs" in the paper's words (§5.1), and
# validation and benchmark performance kept improving with the repeated tokens; the 120B model
# showed the first signs of overfitting only at the start of its fifth epoch, where it was
# stopped.
#
# Three cautions. First, "four epochs" means four passes, not four repetitions: a budget of four
# repetitions is a fifth pass, already outside the range the paper calls nearly free. Second, the
# finding is about the *average* token of a corpus repeated uniformly. Real mixtures repeat their
# sources unequally (GPT-3 went over its Wikipedia slice several times while seeing less than half
# of its filtered Common Crawl, Brown et al. 2020, Table 2.2), so the epoch count of the mixture
# as a whole hides sources that are repeated much more. Third, the result was measured on
# validation loss for models up to a few billion parameters; a widely quoted reading, that
# "repeating data up to four times is free", stretches it. The paper says negligible, for a fixed
# compute budget, for the loss; downstream behaviour such as verbatim memorisation can change
# earlier.

# %% [markdown]
# ## Worked example (not your variant)
#
# A made-up 60B-token corpus and three planned budgets.

# %%
ex_unique = 60e9
for ex_budget in (60e9, 150e9, 600e9):
    ex_epochs = ex_budget / ex_unique
    print(f"{ex_budget / 1e9:>5.0f}B tokens: {ex_epochs:5.2f} epochs, {ex_epochs - 1:5.2f} repetitions")
print(f"at most {4 * ex_unique / 1e9:.0f}B tokens within four epochs")

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

VARIANTS = {'A': {'unique_tokens': 106000000000.0,
       'budgets': [212000000000.0, 450000000000.0, 1400000000000.0]},
 'B': {'unique_tokens': 3000000000.0, 'budgets': [9000000000.0, 30000000000.0, 60000000000.0]},
 'C': {'unique_tokens': 45000000000.0, 'budgets': [90000000000.0, 180000000000.0, 720000000000.0]},
 'D': {'unique_tokens': 20000000000.0, 'budgets': [40000000000.0, 140000000000.0, 1000000000000.0]}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-basics:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# Your variant is a corpus of `unique_tokens` and a list of training `budgets` (tokens seen).
# Compute
# - `epochs`: the number of epochs of each budget, in order (a list of floats);
# - `repetitions`: the repetitions $R$ of each budget, in order (a list of floats);
# - `four_epoch_budget`: the most tokens a run on this corpus can see without going past four
#   epochs (a float, in tokens).

# %% nbgrader={"grade": false, "grade_id": "answer_epochs", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
epochs = [d / params["unique_tokens"] for d in params["budgets"]]
repetitions = [e - 1 for e in epochs]
four_epoch_budget = 4 * params["unique_tokens"]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_epochs", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
for _name in ("epochs", "repetitions"):
    assert isinstance(globals()[_name], list) and len(globals()[_name]) == len(params["budgets"]), \
        f"{_name} should be a list with one number per budget"
assert isinstance(four_epoch_budget, numbers.Real), "four_epoch_budget should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-b9-repeated-epochs", "check_epochs", globals())
### END HIDDEN TESTS
