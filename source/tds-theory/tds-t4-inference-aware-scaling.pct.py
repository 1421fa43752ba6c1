# %% [markdown]
# # tds-t4-inference-aware-scaling · Why over-trained models are rational
#
# *Module TDS Training Dynamics & Scaling · theory*
#
# Chinchilla (Hoffmann et al., 2022) answered one question: for a fixed *training* budget, how should
# the compute be split between parameters and tokens? II.8 teaches that answer in e09-chinchilla and
# tabulates it in p7-chinchilla-table; this notebook does not repeat it. Here the question changes.
# A model that is deployed is run forward on every token it serves, and a popular model serves far
# more tokens than it was trained on. Once that cost is counted, the best model for a given quality
# is smaller than Chinchilla's and is trained on many more tokens per parameter. That is why LLaMA-2 7B
# saw two trillion tokens, and why later open models trained small networks far past the
# Chinchilla ratio: not a mistake, but the solution of a different optimisation problem.
#
# ## 1. The problem Sardana et al. solve
#
# Sardana, Portes, Doubov and Frankle (2023; ICML 2024), *Beyond Chinchilla-Optimal*, keep
# Chinchilla's parametric loss, $L(N, D) = E + A/N^\alpha + B/D^\beta$, and Chinchilla's estimate of
# training compute, about six FLOPs per parameter per training token (a forward and a backward pass).
# To that they add inference: about two FLOPs per parameter per token served (a forward pass only),
# over a lifetime demand of $D_{\text{inf}}$ tokens. The quality the product needs is a target
# loss $\ell$. The problem is then
#
# - **minimise** the lifetime compute, training plus inference, over the model size $N$ and the
#   training tokens $D$,
# - **subject to** $L(N, D) = \ell$.
#
# The constraint is a curve in the $(N, D)$ plane, the *iso-loss curve*: every model size above a
# minimum can reach $\ell$ if it is given enough tokens, and the smaller the model, the more tokens
# it needs, without bound as $N$ approaches the size whose parameter term alone uses up the gap
# between $\ell$ and $E$. Along that curve, training compute has a minimum (that is the
# Chinchilla-optimal pair for the loss), while inference compute simply grows with $N$. Adding a term
# that grows with $N$ to a curve with a minimum moves the minimum towards smaller $N$, and on the
# iso-loss curve a smaller $N$ means a larger $D$.
#
# ## 2. The route to the optimality condition
#
# Use a Lagrange multiplier for the loss constraint, or equivalently say that at the optimum no small
# move along the iso-loss curve can lower the cost. A move along the curve trades parameters for
# tokens at the rate at which they lower the loss; the cost of the move is how much each costs in
# FLOPs. So at the optimum, the ratio of the two *marginal costs* (the derivatives of the lifetime
# compute with respect to $N$ and to $D$) equals the ratio of the two *marginal losses* (the
# derivatives of $L$ with respect to $N$ and to $D$).
#
# Write that condition out with the derivatives of the power laws, and notice that the inference
# demand appears in only one of the marginal costs. Solving for it gives the demand at which a given
# pair $(N, D)$ is the best way to reach its own loss: part 5a asks for it. Check your expression by
# setting the demand to zero: what remains must be Chinchilla's compute-optimal condition, the one
# e09-chinchilla derives.
#
# There is no closed form for the optimal pair at a given demand, because the iso-loss constraint
# and the condition together mix the exponents $\alpha$ and $\beta$. Sardana et al. solve it
# numerically (they use Newton's method); you can do the same with a one-dimensional search,
# because along the iso-loss curve the cost depends on $N$ alone. Work on $\log N$: the interesting
# sizes span several orders of magnitude.
#
# ## 3. Which fit? A number that is widely quoted wrongly
#
# Hoffmann et al.'s equation (10) prints $E = 1.69$, $A = 406.4$, $B = 410.7$, $\alpha = 0.34$,
# $\beta = 0.28$. The exponents there are rounded, and the rounding matters: Sardana et al. work
# with $\alpha = 0.336$ and $\beta = 0.283$, one more digit than equation (10) prints, and only with
# those do their headline numbers come out. Their Figure 1 says that a developer who would train a Chinchilla-optimal 13B
# model and expects two trillion tokens of demand should instead train a 7B model on more data, and
# save about $1.7 \times 10^{22}$ FLOPs, 17% of the lifetime total. With the rounded exponents the
# same calculation gives a model of about 8B and a saving of about 10%. The tests of this item check
# that the unrounded values reproduce the figure.
#
# Besiroglu et al. (2024, *Chinchilla Scaling: A replication attempt*) point out that the values in
# the body of Hoffmann et al.'s paper are rounded from those in its TeX source ($\alpha = 0.3392$,
# $\beta = 0.2849$, $E = 1.6934$), in a way that biases what the law predicts. They also went further: they
# reconstructed Hoffmann et al.'s data from the plots, refitted the same law, and found that the
# published fit did not describe the data well and that its confidence intervals were implausibly
# narrow. Their refit, $E = 1.8172$, $A = 482.01$, $B = 2085.43$, $\alpha = 0.3478$, $\beta = 0.3658$,
# agrees with Hoffmann et al.'s other two approaches, including the roughly twenty tokens per
# parameter that the original Approach 3 fit does *not* give. The popular "twenty tokens per
# parameter" rule therefore belongs to Approaches 1 and 2 and to the refit, not to equation (10).
# Your variant states which fit it uses; use that one and nothing else.
#
# ## 4. When the answer should not be trusted
#
# - **Extrapolation in tokens per parameter.** The fitted law was measured at modest ratios. Sardana
#   et al. trained 47 models at up to 10,000 tokens per parameter and found that loss keeps falling,
#   but that a law fitted only at typical ratios overstates what extra tokens buy at extreme ones. An
#   optimum that asks for thousands of tokens per parameter is a direction, not a recipe.
# - **FLOPs are not dollars.** Inference runs at a lower utilisation than training (decoding small
#   batches is memory-bound), and it is often served on different hardware at a different price.
#   Sardana et al. also solve a version priced in money that accounts for those differences; the
#   FLOP-count answer graded here is the simpler of the two.
# - **Demand is a forecast.** The optimum moves with the demand, and the demand is guessed before
#   training. A model that turns out to be less popular than planned was over-trained for nothing.
# - **Quality is not only loss.** Two models at the same loss need not be equally good at every task,
#   and the data may run out before the optimal token count is reached.
# - **It is a statement about total compute.** Over-training costs more *training* compute than the
#   Chinchilla-optimal pair at the same loss; what falls is the lifetime total. A claim that a smaller
#   model trained longer is "cheaper to train" at equal quality is wrong.

# %% [markdown]
# ## 5. An iso-loss curve (not your variant)
#
# The cell below draws, for the loss 2.2 under Sardana et al.'s fit, the tokens each model size needs
# to reach that loss, and the training compute that pair costs. Find the minimum of the training
# compute by eye, then picture what a term growing in proportion to $N$ does to it.

# %%
import math

import matplotlib.pyplot as plt
import sympy

example_fit = {"E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.336, "beta": 0.283}
example_loss = 2.2
smallest = (example_fit["A"] / (example_loss - example_fit["E"])) ** (1 / example_fit["alpha"])
sizes = [smallest * 10 ** (0.02 * k) for k in range(1, 150)]
tokens = [(example_fit["B"] / (example_loss - example_fit["E"] - example_fit["A"] / n ** example_fit["alpha"]))
          ** (1 / example_fit["beta"]) for n in sizes]
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
left.loglog(sizes, tokens)
left.set(xlabel="parameters N", ylabel="training tokens D", title=f"iso-loss curve, loss {example_loss}")
right.loglog(sizes, [6 * n * d for n, d in zip(sizes, tokens)])
right.set(xlabel="parameters N", ylabel="training FLOPs", title="training compute along it")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 6. Your variant

# %% [markdown]
# Run the next cell. It works out which variant you are graded on from your student id. On
# JupyterHub that is your hub user name; on your own machine start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab`. Editing this cell does not change what you are
# graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {'A': {'fit': {'A': 406.4, 'B': 410.7, 'E': 1.69, 'alpha': 0.336, 'beta': 0.283},
       'inference_tokens': 1000000000000.0,
       'target_loss': 2.1},
 'B': {'fit': {'A': 406.4, 'B': 410.7, 'E': 1.69, 'alpha': 0.336, 'beta': 0.283},
       'inference_tokens': 10000000000000.0,
       'target_loss': 1.95},
 'C': {'fit': {'A': 482.01, 'B': 2085.43, 'E': 1.8172, 'alpha': 0.3478, 'beta': 0.3658},
       'inference_tokens': 5000000000000.0,
       'target_loss': 2.05},
 'D': {'fit': {'A': 406.4, 'B': 410.7, 'E': 1.69, 'alpha': 0.336, 'beta': 0.283},
       'inference_tokens': 10000000000000.0,
       'target_loss': 2.3}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-theory:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ### 6a. Derive it
#
# With `N, D = sympy.symbols("N D", positive=True)`, give `dinf_expr`: the lifetime inference demand
# (in tokens) at which the pair $(N, D)$ minimises training plus inference compute among all pairs
# reaching the same loss, under your variant's `fit` (put its coefficients in as numbers).

# %% nbgrader={"grade": false, "grade_id": "answer_expression", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
N, D = sympy.symbols("N D", positive=True)
_f = params["fit"]
dinf_expr = 3 * (_f["alpha"] * _f["A"] * D ** (_f["beta"] + 1) / (_f["beta"] * _f["B"] * N ** _f["alpha"]) - D)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expression", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
assert isinstance(dinf_expr, sympy.Basic), "dinf_expr should be a sympy expression in N and D"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-t4-inference-aware-scaling", "check_expression", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 6b. Compute it
#
# For your variant's `fit`, `target_loss` and `inference_tokens` (floats, to 0.1% relative):
# - `chinchilla_N`, `chinchilla_D`: the pair that reaches the target loss with the least training
#   compute;
# - `optimal_N`, `optimal_D`: the pair that reaches it with the least training plus inference compute;
# - `compute_saving`: the fraction of the Chinchilla pair's lifetime compute (training it and serving
#   the demand with it) that the optimal pair saves.

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def _tokens(n):
    gap = params["target_loss"] - _f["E"] - _f["A"] / n ** _f["alpha"]
    return (_f["B"] / gap) ** (1 / _f["beta"]) if gap > 0 else math.inf


def _best(demand):
    lo = math.log((_f["A"] / (params["target_loss"] - _f["E"])) ** (1 / _f["alpha"])) + 1e-9
    hi = lo + math.log(1e4)
    g = (math.sqrt(5) - 1) / 2
    cost = lambda x: 6 * math.exp(x) * _tokens(math.exp(x)) + 2 * math.exp(x) * demand  # noqa: E731
    for _ in range(300):
        c, d = hi - g * (hi - lo), lo + g * (hi - lo)
        hi, lo = (d, lo) if cost(c) < cost(d) else (hi, c)
    n = math.exp((lo + hi) / 2)
    return n, _tokens(n)


chinchilla_N, chinchilla_D = _best(0.0)
optimal_N, optimal_D = _best(params["inference_tokens"])
_lifetime = lambda n, d: 6 * n * d + 2 * n * params["inference_tokens"]  # noqa: E731
compute_saving = 1 - _lifetime(optimal_N, optimal_D) / _lifetime(chinchilla_N, chinchilla_D)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
for _name in ("chinchilla_N", "chinchilla_D", "optimal_N", "optimal_D", "compute_saving"):
    assert isinstance(globals()[_name], numbers.Real), f"{_name} should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-t4-inference-aware-scaling", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# Not graded: how many tokens per parameter does your optimal pair use, and how does that compare
# with the ratio at which the fit itself was measured (section 4)? Put your own pair into
# `dinf_expr`: does it give back your variant's demand?
