# %% [markdown]
# # tds-p4-metric-artefacts · One model, two metrics
#
# *Module TDS Training Dynamics & Scaling · practice · build it, break it, read the papers*
#
# tds-e2-metric-artefacts derived, on paper, how an all-or-nothing metric turns steady progress
# into an apparent jump: if each token of an $L$-token answer is right with probability $p$,
# independently of the others, the whole answer is right with a probability that stays near zero
# while $p$ climbs and then shoots up. That derivation rests on a model of a model. Here you train
# a real one, on a CPU in a few seconds, and score **the same checkpoints** both ways.
#
# The claim under test is Schaeffer, Miranda and Koyejo's (*Are Emergent Abilities of Large
# Language Models a Mirage?*, NeurIPS 2023, §2): the abruptness of an "emergent" curve can come
# from the metric alone. If it does, then on our model
#
# - the per-token accuracy $p$ should rise smoothly with training,
# - the exact match should sit at zero for several checkpoints while $p$ is already well above
#   chance, then rise steeply, and
# - the exact match should be predicted, checkpoint by checkpoint, by the independence model built
#   from the measured $p$ alone.
#
# If the third point fails, the metric is not the whole story: the tokens' errors are correlated,
# and the jump carries information about the model that $p$ does not.

# %% [markdown]
# ## The task and the model
#
# The task is a stand-in for the digit tasks of Schaeffer et al. and Wei et al. (multi-digit
# arithmetic): the input is a string of `length` random digits, and the answer is another string
# of `length` digits, each obtained from one input digit by a fixed rule (answer digit $i$ is
# input digit $\pi(i)$ plus a fixed key $k_i$, modulo 10; $\pi$ and $k$ are drawn once from the
# variant's seed). A one-hidden-layer ReLU network reads the one-hot input and outputs ten logits
# for each answer position. It is trained by plain SGD on fresh random batches, and its logits on
# a held-out test set are kept at each checkpoint (a number of steps in `checkpoints`).
#
# The rule is deliberately simple, so that every answer digit depends on a different input digit
# and, for a perfect model, the positions have nothing to do with each other. That makes the
# independence model plausible *a priori*; the experiment measures how well it actually holds for
# a half-trained network, whose errors could still be shared through its hidden layer.
#
# The protocol, exactly (the grader runs the same one):
# - `logits, test_y = train_checkpoints(params)` (defined in the locked cell below);
# - the model's prediction at each position is the digit with the largest logit;
# - `p` at a checkpoint is the fraction of all test answer digits predicted right, over every
#   position of every example; exact match is the fraction of test examples with every digit right.

# %% [markdown]
# ## Two notions of "the probability of the right token"
#
# tds-e2 followed Schaeffer et al. in reading the per-token accuracy off the cross-entropy:
# $p = e^{-L_{CE}}$. That is a probability the model *assigns* to the right token (its geometric
# mean over the test set), not the rate at which the model's *prediction* is right. For a
# confident, well-trained model the two are close; for an unsure one they are not. A model that
# gives the right digit 30% of its probability mass and spreads the rest thinly over the other
# nine still predicts the right digit every time. Exact match is computed from predictions, so
# the $p$ that belongs in the independence model is the accuracy of predictions. The last cell
# lets you compare the two on your own run.

# %% [markdown]
# ## Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id (on your
# own machine start Jupyter with `JUPYTERHUB_USER=<your course id> jupyter lab`), and defines
# `make_task` and `train_checkpoints`. Editing this cell does not change what you are graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import torch

torch.set_num_threads(1)   # tiny tensors: one thread is the fastest, and the run is reproducible

VARIANTS = {'A': {'seed': 1,
       'length': 5,
       'width': 64,
       'lr': 0.5,
       'batch': 64,
       'n_test': 2000,
       'checkpoints': [10, 20, 40, 80, 160, 320]},
 'B': {'seed': 2,
       'length': 8,
       'width': 64,
       'lr': 0.5,
       'batch': 64,
       'n_test': 2000,
       'checkpoints': [20, 40, 80, 160, 320, 640]},
 'C': {'seed': 3,
       'length': 10,
       'width': 128,
       'lr': 0.5,
       'batch': 64,
       'n_test': 2000,
       'checkpoints': [20, 40, 80, 160, 320, 640]},
 'D': {'seed': 4,
       'length': 6,
       'width': 32,
       'lr': 0.6,
       'batch': 64,
       'n_test': 2000,
       'checkpoints': [20, 40, 80, 160, 320, 640]}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-practice:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]


# chapter: include graders.problems.tds_practice.tds_p4_metric_artefacts.make_task


# chapter: include graders.problems.tds_practice.tds_p4_metric_artefacts.train_checkpoints


print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ## 1. Build it: the two scores
#
# Write two functions of `predictions` and `targets`, each a table of digits with one row per
# example and one column per answer position (the hidden tests pass nested lists of ints; your
# run will pass tensors or lists, as you choose):
# - `token_accuracy(predictions, targets)`: the fraction of all entries where the prediction equals
#   the target, as a float;
# - `exact_match(predictions, targets)`: the fraction of rows in which every entry is right, as a
#   float.

# %% nbgrader={"grade": false, "grade_id": "answer_scores", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def token_accuracy(predictions, targets):
    """Fraction of answer tokens predicted right, over all positions of all examples."""
    right = torch.as_tensor(predictions) == torch.as_tensor(targets)
    return float(right.float().mean())


def exact_match(predictions, targets):
    """Fraction of examples whose every answer token is right."""
    right = torch.as_tensor(predictions) == torch.as_tensor(targets)
    return float(right.all(dim=1).float().mean())
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_scores", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
_t = token_accuracy([[1, 2], [3, 4]], [[1, 2], [3, 5]])
_e = exact_match([[1, 2], [3, 4]], [[1, 2], [3, 5]])
assert isinstance(_t, float) and isinstance(_e, float), "both scores are floats"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p4-metric-artefacts", "check_scores", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 2. Run it and measure
#
# Train once with `logits, test_y = train_checkpoints(params)`. Then, for each checkpoint in order,
# take the predicted digits and record (lists of floats, one entry per checkpoint):
# - `token_accuracies`: your `token_accuracy` of the predictions;
# - `exact_matches`: your `exact_match` of the predictions;
# - `independent_exact`: the exact match that independent tokens, each right with the measured
#   per-token accuracy, would give for answers of your variant's `length`.

# %% nbgrader={"grade": false, "grade_id": "answer_run", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
logits, test_y = train_checkpoints(params)
token_accuracies, exact_matches = [], []
for lg in logits:
    predictions = lg.argmax(dim=-1)
    token_accuracies.append(token_accuracy(predictions, test_y))
    exact_matches.append(exact_match(predictions, test_y))
independent_exact = [p ** params["length"] for p in token_accuracies]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_run", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
for _name in ("token_accuracies", "exact_matches", "independent_exact"):
    assert isinstance(globals()[_name], list) and len(globals()[_name]) == len(params["checkpoints"]), \
        f"{_name} should be a list with one number per checkpoint"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p4-metric-artefacts", "check_run", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 3. Look at it (not graded)
#
# Plot the three curves against the number of steps, on a log axis for the steps. Read off two
# things: over how many checkpoints is the exact match indistinguishable from zero while the
# per-token accuracy is already several times chance (one digit in ten)? And how far is the
# measured exact match from the independence prediction at its worst?

# %%
import matplotlib.pyplot as plt

try:
    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.plot(params["checkpoints"], token_accuracies, "o-", label="per-token accuracy p")
    ax.plot(params["checkpoints"], exact_matches, "s-", label="exact match (measured)")
    ax.plot(params["checkpoints"], independent_exact, "k:", label="independent tokens")
    ax.axhline(0.1, color="grey", ls="--", lw=0.8, label="chance per token")
    ax.set(xscale="log", xlabel="training steps", ylabel="score", ylim=(-0.02, 1.02),
           title=f"Variant {VARIANT}: one model, two metrics")
    ax.legend()
    plt.show()
except NameError as exc:
    print(f"Run the measurement first ({exc}).")

# %% [markdown]
# ## 4. Break it, and read the papers (not graded)
#
# **The other probability.** Compute, at each checkpoint, $e^{-L_{CE}}$ from the logits
# (`torch.nn.functional.cross_entropy` of the logits and targets, then the exponential) and put it
# beside your per-token accuracy. Early in training the model predicts the right digit far more
# often than the probability it gives that digit suggests. Feed $e^{-L_{CE}}$ into the
# independence model instead of $p$: how far off is the predicted exact match now? This is the
# gap between the paper model of tds-e2, which reads accuracy off the loss, and what a benchmark
# measures.
#
# **Correlated errors.** Change the rule so that answer digits share inputs: for instance, make
# digit $i$ the sum of input digits $i$ and $i+1$ modulo 10, or add the two halves of the input
# with carries, as in real multi-digit addition. A carry error ruins the digits after it, so errors
# cluster in the same examples. Does the measured exact match still follow the independence
# prediction, and on which side of it does it fall? Correlated errors make exact match *higher*
# than $p^L$ for the same $p$ when mistakes bunch up in a few examples, and lower when they spread
# out; either way the jump then says something about the model that $p$ does not.
#
# **Resolution.** Score the same checkpoints on the first 50 test examples only. Which of the
# early exact matches become exactly zero, and what would a reader of that table conclude?
# tds-e10-test-set-resolution works out how many examples it takes to see a small exact match at
# all.
#
# **What this does and does not show.** The run reproduces Schaeffer et al.'s mechanism on a model
# where its assumption (independent tokens) is close to true by construction. It does not show
# that every emergent curve in the literature arises this way; Wei et al. (2022) collected many,
# Schaeffer et al. explain a large share of them with metrics and resolution, and Du et al.
# (2024) report abilities that still appear only past a threshold in pre-training loss under
# continuous metrics. Training steps stand in for model size here, as they do in Du et al.'s
# loss-based view: what sets the score is how far the loss has fallen, however it got there.
