# %% [markdown]
# # tds-e8-critical-batch-of-loss · The critical batch grows as the loss falls
#
# *Module TDS Training Dynamics & Scaling · mathematics · exercise*
#
# II.8 teaches what the critical batch size is and how to measure it: e10-noise-scale derives the
# gradient noise scale from two measured gradient norms, t3-critical-batch works through the
# trade-off between optimisation steps and training examples that makes one batch size
# "critical", and p8-noise-scale measures the noise scale on a small torch model. This exercise
# asks a different question, one those items only mention: **how does the critical batch change
# over a run?** A batch that is wasteful at the start of training can be too small at the end,
# and the law that describes this is one of the least quoted and most useful fits in Kaplan et
# al.'s *Scaling Laws for Neural Language Models* (2020).
#
# Notation, as in the rest of the course: $B$ a batch in sequences, $T$ the tokens per
# sequence (the context), $L$ the per-token test loss in nats. Kaplan et al. count batches in
# **tokens**, so a batch of $B$ sequences is $B\,T$ tokens in their units.

# %% [markdown]
# ## 1. What was measured
#
# McCandlish, Kaplan, Amodei et al. (*An Empirical Model of Large-Batch Training*, 2018) model the
# cost of reaching a fixed loss at batch size $B$: the number of optimisation steps $S$ falls as
# the batch grows, the number of training examples $E = B\,S$ rises, and the two are tied by one
# hyperbola (t3-critical-batch derives it). Its two asymptotes are $S_{min}$, the fewest steps any
# batch can reach the loss in, and $E_{min}$, the fewest examples. Their ratio,
# $B_{crit} = E_{min}/S_{min}$, is the critical batch: below it, doubling the batch nearly halves
# the steps at almost no cost in data; above it, the steps barely fall and the data bill grows
# almost in proportion to the batch.
#
# Kaplan et al. (§5.1) ran language models at many batch sizes, read off $S$ and $E$ for a range
# of *target* losses, and fitted the hyperbola at each target. Two findings came out. First, the
# critical batch at a given loss hardly depends on the size of the model: a small model and a
# large one, when they are at the same loss, want about the same batch. Second, it depends
# strongly on that loss, and the dependence is a clean power law over the losses their runs
# covered. The critical batch is therefore a property of *where the run is*, not of *which model
# is running*.
#
# The loss in that fit is the test loss on WebText2, in nats per token with GPT-2's byte-pair
# tokenizer, and the batch is in tokens. Both units matter: a loss in bits, or a batch in sequences,
# puts you on a different curve.

# %% [markdown]
# ## 2. The convention in which the law is written
#
# Every law in Kaplan et al. is written in one shape: the loss as a power of a ratio,
#
# $$L(X) = \left(\frac{X_c}{X}\right)^{\alpha_X},$$
#
# with $X$ the model size ($N_c = 8.8\times 10^{13}$ parameters, $\alpha_N = 0.076$), the data
# ($D_c = 5.4\times10^{13}$ tokens, $\alpha_D = 0.095$), the compute, or the steps. The critical
# batch fits the same mould, with a scale $B_*$ (in tokens) and an exponent $\alpha_B$:
#
# $$L = \left(\frac{B_*}{B_{crit}}\right)^{\alpha_B}.$$
#
# Their table of fitted constants prints $B_* = 2.1\times 10^8$ tokens and $\alpha_B = 0.21$; the
# equation in §5.1 (eq. 5.3) rounds the scale to about $2\times10^8$. Both roundings appear in the
# variants below.
#
# Read the convention with care. It is *not* a claim that a bigger batch buys a lower loss: it
# relates two things measured at the same moment, the loss a run has reached and the batch that
# is critical there. Your first task is to turn it round so that it gives the critical batch at a
# loss, and then to use it in both directions.

# %% [markdown]
# ## 3. Why the critical batch grows
#
# The noise scale of e10-noise-scale, $B_{simple} = \operatorname{tr}\Sigma / |G|^2$, is the
# batch at which the noise in a mini-batch gradient is about as large as the gradient itself.
# McCandlish et al. found that it **grows as the loss falls** over a training run (their abstract
# and §3), and that it depends on the model size mainly through the loss the model has reached,
# which is the same pattern Kaplan et al. later saw in the critical batch.
#
# The picture behind it: early in training the per-example gradients agree. The model is wrong
# about common, easy things, every example says so, and a handful of examples give a good
# estimate of the direction to move. Later the easy structure has been learned; what is left is
# rarer and subtler, the true gradient $|G|$ is small, and individual examples point in many
# different directions whose spread $\operatorname{tr}\Sigma$ has not shrunk by as much. A good
# estimate of the mean now needs many more examples, which is what a wider critical batch means.
#
# Practice took note. GPT-3 (Brown et al. 2020, Appendix B) ramped its batch up from a small value
# over the first few billion tokens instead of starting at the full batch, and Merrill et al.
# (*Critical Batch Size Revisited*, 2025) measure the critical batch of OLMo runs directly, find it
# near zero at initialisation, rising quickly and then levelling off, and use a batch-size warmup
# to train with 43% fewer gradient steps at no loss in quality.

# %% [markdown]
# ## 4. Where the law stops
#
# - **It is a fit over a window.** Kaplan et al.'s critical-batch measurements (their Fig. 10)
#   run from high losses early in training down to about three nats; the law is measured
#   there. Using it at the losses of much larger models (two nats
#   and below) is an extrapolation, and the further you go, the less it is worth.
# - **The loss has a floor.** Written in the convention above, the critical batch grows without
#   bound only as the loss goes to zero, but no model reaches zero: natural text has an
#   irreducible entropy (the $E$ of Hoffmann et al.'s law, e09-chinchilla). Near that floor the
#   remaining, reducible part of the loss is what governs the gradient noise, and a law in the
#   total loss cannot see it.
# - **Units are part of the law.** The loss is in nats per GPT-2 token on WebText2 and $B_*$ is
#   in tokens. A different tokenizer changes both the loss per token and the number of tokens in
#   a batch; a loss in bits needs converting first; quoting $B_*$ in sequences silently divides
#   every batch by the context length.
# - **Model size is not the whole story.** Zhang et al. (*How Does Critical Batch Size Scale in
#   Pre-training?*, 2024) fit the critical batch against model and data size separately and
#   find it scales mainly with the amount of data, not with the model. That does not contradict
#   a law in the loss, since more data is also a lower loss, but it warns against reading "the
#   critical batch depends only on the loss" as a law of nature.
# - **A widely repeated slip.** The exponent is often quoted as "0.21" and applied to the loss
#   directly, as if the critical batch were the loss to the power of minus 0.21. That reading
#   makes the critical batch almost constant over a run; the law Kaplan et al. fitted makes it
#   change a great deal. Part 2 of the exercise shows by how much.

# %% [markdown]
# ## Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id. On
# JupyterHub that is your hub user name; on your own machine start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab`. Editing this cell does not change what you are
# graded on.
#
# Your parameters: `b_star` ($B_*$, tokens) and `alpha_b` ($\alpha_B$); `losses`, a list of
# losses in nats per token; a training batch of `batch_sequences` sequences of `context` tokens;
# and a run whose loss falls from `start_loss` to `end_loss`.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {'A': {'b_star': 210000000.0,
       'alpha_b': 0.21,
       'losses': [6.0, 5.0, 4.0, 3.5, 3.0],
       'batch_sequences': 512,
       'context': 1024,
       'start_loss': 4.5,
       'end_loss': 3.0},
 'B': {'b_star': 200000000.0,
       'alpha_b': 0.21,
       'losses': [4.0, 3.0, 2.5, 2.2, 2.0],
       'batch_sequences': 1536,
       'context': 2048,
       'start_loss': 3.2,
       'end_loss': 2.0},
 'C': {'b_star': 210000000.0,
       'alpha_b': 0.21,
       'losses': [5.5, 4.5, 3.8, 3.3],
       'batch_sequences': 512,
       'context': 2048,
       'start_loss': 5.0,
       'end_loss': 3.3},
 'D': {'b_star': 200000000.0,
       'alpha_b': 0.21,
       'losses': [4.2, 3.6, 3.0, 2.6, 2.3],
       'batch_sequences': 1024,
       'context': 2048,
       'start_loss': 3.6,
       'end_loss': 2.3}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-exercises:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ### 1. Derive it
#
# With `loss = sympy.symbols("loss", positive=True)`, give `b_crit_expr`: the critical batch in
# tokens as an expression in `loss`, with your variant's $B_*$ and $\alpha_B$ as numbers. Solve
# the convention of section 2 for $B_{crit}$; do not look the answer up.

# %% nbgrader={"grade": false, "grade_id": "answer_expression", "locked": false, "schema_version": 3, "solution": true, "task": false}
import sympy

### BEGIN SOLUTION
loss = sympy.symbols("loss", positive=True)
# L = (B*/B_crit)^alpha_B  <=>  B*/B_crit = L^(1/alpha_B)
b_crit_expr = params["b_star"] * loss ** (-1 / params["alpha_b"])
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expression", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
assert isinstance(b_crit_expr, sympy.Basic), "b_crit_expr should be a sympy expression in loss"
assert {s.name for s in b_crit_expr.free_symbols} <= {"loss"}, "use only the symbol loss"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-e8-critical-batch-of-loss", "check_expression", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 2. Compute it
#
# As plain floats:
# - `b_crit_at_losses`: the critical batch, in tokens, at each of your variant's `losses` (a list);
# - `critical_loss`: the loss (nats per token) at which your variant's training batch is the
#   critical batch. Count the batch in the unit $B_*$ is counted in;
# - `growth_factor`: the critical batch at `end_loss` divided by the critical batch at
#   `start_loss`, the factor by which the batch worth using grows over the run.

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
b_crit_at_losses = [float(b_crit_expr.subs(loss, x)) for x in params["losses"]]
batch_tokens = params["batch_sequences"] * params["context"]
critical_loss = (params["b_star"] / batch_tokens) ** params["alpha_b"]
growth_factor = float(b_crit_expr.subs(loss, params["end_loss"]) / b_crit_expr.subs(loss, params["start_loss"]))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
assert isinstance(b_crit_at_losses, list) and len(b_crit_at_losses) == len(params["losses"]), \
    "b_crit_at_losses should be a list with one number per loss"
for _name in ("critical_loss", "growth_factor"):
    assert isinstance(globals()[_name], numbers.Real), f"{_name} should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-e8-critical-batch-of-loss", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 3. Read what you found (not graded)
#
# - Your training batch is critical at one loss. Before the run reaches it, is the batch wider or
#   narrower than the critical batch, and what does that cost, steps or data? After it?
# - Compare your `growth_factor` with what the slip of section 4 (the exponent applied to the
#   loss directly) would predict for the same run. Which would justify ramping the batch during
#   training?
# - A run that keeps one batch throughout wastes data early or steps late. Sketch a batch
#   schedule that stays near the critical batch, and say which measurement of e10-noise-scale or
#   p8-noise-scale you would take during training to steer it, rather than trusting a law fitted
#   on someone else's dataset.
