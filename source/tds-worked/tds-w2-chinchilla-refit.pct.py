# %% [markdown]
# # tds-w2-chinchilla-refit · The Chinchilla correction, and its own correction
#
# *Module TDS Training Dynamics & Scaling · mathematics · worked problem*
#
# In 2022 Hoffmann et al. (*Training Compute-Optimal Large Language Models*, arXiv 2203.15556)
# showed that the large language models of the day were trained on far too few tokens for their
# size. Gopher, with 280B parameters, had seen 300B tokens; Chinchilla, a quarter of its size on
# four times the data and the same compute, beat it across the board. That was the **Chinchilla
# correction**, and its rule of thumb, about twenty training tokens per parameter, became the
# default of the field.
#
# The paper reached its answer three ways. Approaches 1 and 2 read the optimum directly off
# training curves and isoFLOP slices. Approach 3 fitted a smooth loss surface to all the runs
# and minimised it. Approaches 1 and 2 agree with each other and with the rule of twenty;
# Approach 3, the one with a formula everybody copies, does not. Two years later Besiroglu et al.
# (*Chinchilla Scaling: A replication attempt*, 2024, arXiv 2404.10102) reconstructed the data from
# the paper's figures, refitted the surface, and found constants that do agree. This problem
# derives the compute-optimal allocation from the fitted surface in general, then puts the two
# sets of constants side by side at the budgets of real training runs.
#
# II.8 already covers the pieces next to this one: **e09-chinchilla** derives the allocation for
# one budget and one constant set, and **p7-chinchilla-table** holds the law against the paper's
# own Table 3. Here the question is the disagreement itself: how large it is, how it grows with the
# budget, and what it costs.

# %% [markdown]
# ## 1. Derivation: the optimum of a fitted loss under a compute budget
#
# **The model.** Approach 3 (Hoffmann §3.3, eq. 2) writes the final loss of a model with $N$
# parameters trained on $D$ tokens as
#
# $$L(N, D) = E + \frac{A_N}{N^{\alpha}} + \frac{B_D}{D^{\beta}} .$$
#
# $E$ is the loss of a perfect model on this data (the entropy of text). The second term is what
# a finite model cannot represent; the third what a finite sample cannot teach. The paper calls the
# coefficients $A$ and $B$; in this module $B$ is a batch size, so here they are $A_N$ and $B_D$.
#
# **The budget.** Training costs about $6ND$ FLOPs (two for the forward pass and four for the
# backward pass, per parameter per token), so a budget $C$ ties the two together: $6ND = C$.
#
# **The Lagrange condition.** Minimise $L$ subject to $6ND = C$. With a multiplier $\lambda$,
# the two stationarity conditions are
# $\alpha A_N N^{-\alpha - 1} = 6\lambda D$ and $\beta B_D D^{-\beta - 1} = 6\lambda N$. Multiply the
# first by $N$, the second by $D$, and divide: the multiplier drops out and leaves
#
# $$\alpha\,\frac{A_N}{N^{\alpha}} = \beta\,\frac{B_D}{D^{\beta}} .$$
#
# At the optimum the two reducible terms stand in the fixed ratio $\beta : \alpha$. That is the one
# thing to remember; everything else is algebra.
#
# **Solving it.** Substitute $D = C/(6N)$ and collect powers of $N$:
# $N^{\alpha+\beta} = \frac{\alpha A_N}{\beta B_D}\,(C/6)^{\beta}$. Hence
#
# $$N_{opt} = G\,\Big(\frac{C}{6}\Big)^{\beta/(\alpha+\beta)}, \qquad
#   D_{opt} = \frac{1}{G}\Big(\frac{C}{6}\Big)^{\alpha/(\alpha+\beta)}, \qquad
#   G = \Big(\frac{\alpha A_N}{\beta B_D}\Big)^{1/(\alpha+\beta)} ,$$
#
# which is the paper's eq. (4). The exponents add to one, as they must, since $N_{opt}D_{opt} = C/6$.
# Dividing the two gives the tokens per parameter at the optimum: a constant, $G^{-2}$, times a
# power of $C/6$ whose exponent is $(\alpha - \beta)/(\alpha + \beta)$. You will write it out in 3a.
#
# **What the exponents say.** If $\alpha = \beta$, the tokens per parameter are the same at every
# budget, and the whole argument about "the right ratio" has one answer. If $\alpha > \beta$,
# the parameter term falls faster than the data term, the optimum leans towards data, and the ratio
# **grows** with the budget; if $\alpha < \beta$ it shrinks. A rule of thumb such as "twenty
# tokens per parameter" is therefore a statement about one budget of one law, not a law.

# %% [markdown]
# ## 2. Two sets of constants
#
# **As printed.** Hoffmann's Appendix D.2, eq. (10): $E = 1.69$, $A_N = 406.4$, $B_D = 410.7$,
# $\alpha = 0.34$, $\beta = 0.28$. Here $\alpha > \beta$, so the printed law sends each extra decade of
# compute mostly into data, and at budgets of the size of Gopher's it asks for something like
# ninety tokens per parameter, more than four times the paper's own headline. Its exponent
# $a = \beta/(\alpha+\beta) = 0.45$ also disagrees with the 0.50 and 0.49 of Approaches 1 and 2
# (Table 2, which prints 0.46 for this fit itself, from its unrounded constants).
#
# **Refitted.** Besiroglu et al. digitised the points of Hoffmann's Fig. 4, fitted the same
# surface with the same robust (Huber) loss, and obtained $E = 1.8172$, $A_N = 482.01$,
# $B_D = 2085.43$, $\alpha = 0.3478$, $\beta = 0.3658$. (The value of $E$ is often quoted rounded, as
# 1.82.) Now $\beta$ is slightly larger than $\alpha$, the exponent is $a = 0.5126$, and the
# tokens per parameter sit close to twenty and drift down slowly with the budget: the refit
# agrees with Approaches 1 and 2, and with Chinchilla itself.
#
# **Why they differ.** Besiroglu et al. give two causes. The printed constants are rounded
# versions of the ones in the paper's TeX source ($\alpha = 0.3392$, $\beta = 0.2849$, $E = 1.6934$), and
# with exponents this close together, rounding each to two digits moves the optimum a lot: a
# difference of 0.06 in the exponents becomes a large difference in $G$. The paper's optimiser
# also seems to have stopped before converging: it averaged rather than summed the Huber losses,
# which makes the objective so small that L-BFGS's stopping tolerance was met early. Their third
# point is statistical: Hoffmann's confidence intervals on $a$ are so narrow that they would need
# hundreds of thousands of runs, against the roughly four hundred the paper reports.
#
# **What is widely repeated, and wrong.** Two claims circulate. One is that the Chinchilla
# formula "gives twenty tokens per parameter": the printed Approach 3 constants do not; the twenty
# comes from Approaches 1 and 2 and from the Chinchilla run itself. The other is that Approach 3
# shows "parameters and data should scale equally": with the printed exponents they do not scale
# equally, which is exactly why the ratio grows with the budget. With the refit, both claims
# become approximately true.
#
# **When the whole method fails.** The surface was fitted on runs up to about 16B parameters and
# 500B tokens, on one data mixture, with cosine schedules whose length matched each run (see
# II.8 e02-schedules and p9-wsd-vs-cosine). Far outside that range, or with a different
# tokenizer, data mixture or schedule, the constants need not hold. The "optimum" also counts
# training compute only: a model that will serve billions of requests is better made smaller and
# trained longer than either law says, which is why Llama-style models sit far beyond twenty tokens
# per parameter. And the loss basin is very flat, so the two laws disagree much more about the
# allocation than about the loss it reaches: that is the last quantity you will compute.

# %% [markdown]
# ## 3. Worked example (not your variant): budgets of 1e22 and 3e24 FLOPs
#
# We evaluate both laws' optima, with the closed form and with a brute-force check on a grid, and
# the cost of following the printed law if the refit is right.

# %%
import numpy as np
import sympy

PRINTED = {"E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28}
REFIT = {"E": 1.8172, "A": 482.01, "B": 2085.43, "alpha": 0.3478, "beta": 0.3658}


def law_loss(n, d, k):
    return k["E"] + k["A"] / n ** k["alpha"] + k["B"] / d ** k["beta"]


def closed_form(c, k):
    g = (k["alpha"] * k["A"] / (k["beta"] * k["B"])) ** (1 / (k["alpha"] + k["beta"]))
    n = g * (c / 6) ** (k["beta"] / (k["alpha"] + k["beta"]))
    return n, c / (6 * n)


grid = np.logspace(7, 14, 70001)
for c in (1e22, 3e24):
    for name, k in (("printed", PRINTED), ("refit", REFIT)):
        n, d = closed_form(c, k)
        n_grid = grid[np.argmin(law_loss(grid, c / (6 * grid), k))]
        print(f"C = {c:.0e} {name:8s}: N = {n / 1e9:6.1f}B (grid {n_grid / 1e9:6.1f}B), "
              f"D = {d / 1e12:5.2f}T, {d / n:5.1f} tokens/parameter")
    n_p, _ = closed_form(c, PRINTED)
    n_r, d_r = closed_form(c, REFIT)
    cost = law_loss(n_p, c / (6 * n_p), REFIT) - law_loss(n_r, d_r, REFIT)
    print(f"   following the printed law costs {cost:.4f} nats under the refit\n")

# %% [markdown]
# The closed form and the grid agree. At both budgets the printed law asks for a model about half
# the size the refit asks for, or smaller, and several times as many tokens per parameter; yet
# the loss it costs is a few thousandths of a nat, because near its minimum the loss barely moves
# along the isoFLOP curve (II.8 e09-chinchilla draws that curve). A few thousandths of a nat is not
# nothing: under the refit it is what somewhere between a tenth and a third more compute would buy
# at these budgets, more at the larger one.
#
# The ratio as a sympy expression, for one constant set (numbers in place of $\alpha$, $\beta$,
# $A_N$, $B_D$), to see how it depends on $C$:

# %%
C = sympy.Symbol("C", positive=True)
k = REFIT
g = (k["alpha"] * k["A"] / (k["beta"] * k["B"])) ** (1 / (k["alpha"] + k["beta"]))
n_c = g * (C / 6) ** (k["beta"] / (k["alpha"] + k["beta"]))
print(sympy.simplify((C / 6) / n_c / n_c))

# %%
import matplotlib.pyplot as plt

budgets = np.logspace(20, 27, 50)
plt.figure(figsize=(7, 3.5))
for name, k in (("Hoffmann eq. (10), printed", PRINTED), ("Besiroglu et al. refit", REFIT)):
    ratios = [closed_form(c, k)[1] / closed_form(c, k)[0] for c in budgets]
    plt.plot(budgets, ratios, label=name)
plt.axhline(20, color="grey", ls=":", label="20 tokens/parameter (Approaches 1-2)")
plt.xscale("log")
plt.yscale("log")
plt.xlabel("training compute C (FLOPs)")
plt.ylabel("D_opt / N_opt")
plt.legend(fontsize=8)
plt.title("Tokens per parameter at the optimum")
plt.show()

# %% [markdown]
# ## 4. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id. On
# JupyterHub that is your hub user name; on your own machine start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab`. Editing this cell does not change what you are
# graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {
    "A": {"budgets": [3.15e23, 5.04e23, 1e25],
          "hoffmann": {"E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28},
          "refit": {"E": 1.8172, "A": 482.01, "B": 2085.43, "alpha": 0.3478, "beta": 0.3658}},
    "B": {"budgets": [5.88e23, 2.527e24, 1e26],
          "hoffmann": {"E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28},
          "refit": {"E": 1.8172, "A": 482.01, "B": 2085.43, "alpha": 0.3478, "beta": 0.3658}},
    "C": {"budgets": [8.4e22, 1.56e23, 6.3e24],
          "hoffmann": {"E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28},
          "refit": {"E": 1.8172, "A": 482.01, "B": 2085.43, "alpha": 0.3478, "beta": 0.3658}},
    "D": {"budgets": [1.89e23, 3.865e23, 7.2e23],
          "hoffmann": {"E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28},
          "refit": {"E": 1.8172, "A": 482.01, "B": 2085.43, "alpha": 0.3478, "beta": 0.3658}},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-worked:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# Your parameters: `budgets` (training FLOPs: $6ND$ of real runs, such as GPT-3, Gopher,
# Chinchilla, PaLM, OPT, BLOOM and Llama 2 and 3, or a regulatory threshold), and the two constant
# sets `hoffmann` (eq. 10 as printed) and `refit` (Besiroglu et al.), each with keys `E`, `A`
# ($A_N$), `B` ($B_D$), `alpha`, `beta`.
#
# ### 4a. Derive it
#
# With `C, alpha, beta, A_N, B_D = sympy.symbols("C alpha beta A_N B_D", positive=True)`, give
# `tokens_per_param_expr`: the compute-optimal tokens per parameter, $D_{opt}/N_{opt}$, as a sympy
# expression in those five symbols (no numbers from your variant).

# %% nbgrader={"grade": false, "grade_id": "answer_expression", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
C, alpha, beta, A_N, B_D = sympy.symbols("C alpha beta A_N B_D", positive=True)
G = (alpha * A_N / (beta * B_D)) ** (1 / (alpha + beta))
tokens_per_param_expr = ((C / 6) ** (alpha / (alpha + beta)) / G) / (G * (C / 6) ** (beta / (alpha + beta)))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expression", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the value is checked when your notebook is graded.
assert isinstance(tokens_per_param_expr, sympy.Basic), \
    "tokens_per_param_expr should be a sympy expression in C, alpha, beta, A_N, B_D"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-w2-chinchilla-refit", "check_expression", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4b. Compute the two allocations
#
# For each of your `budgets`, in order (lists of floats):
# - `n_opt_hoffmann`, `n_opt_refit`: the compute-optimal parameter count under each constant set;
# - `ratio_hoffmann`, `ratio_refit`: the tokens per parameter $D_{opt}/N_{opt}$ under each.

# %% nbgrader={"grade": false, "grade_id": "answer_allocations", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def optimum(c, k):
    g = (k["alpha"] * k["A"] / (k["beta"] * k["B"])) ** (1 / (k["alpha"] + k["beta"]))
    n = g * (c / 6) ** (k["beta"] / (k["alpha"] + k["beta"]))
    return n, c / (6 * n)


hoff = [optimum(c, params["hoffmann"]) for c in params["budgets"]]
refit = [optimum(c, params["refit"]) for c in params["budgets"]]
n_opt_hoffmann = [n for n, _ in hoff]
n_opt_refit = [n for n, _ in refit]
ratio_hoffmann = [d / n for n, d in hoff]
ratio_refit = [d / n for n, d in refit]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_allocations", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
for _name in ("n_opt_hoffmann", "n_opt_refit", "ratio_hoffmann", "ratio_refit"):
    assert isinstance(globals()[_name], list) and len(globals()[_name]) == len(params["budgets"]), \
        f"{_name}: one number per budget"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-w2-chinchilla-refit", "check_allocations", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4c. What the disagreement costs
#
# Suppose the refit is right. A lab that followed the printed constants trains $N$ = your
# `n_opt_hoffmann` on $D = C/(6N)$ tokens. `loss_penalty`: for each budget, the refit law's loss
# at that allocation minus the refit law's own minimum at the same budget (a list of floats, in
# nats).

# %% nbgrader={"grade": false, "grade_id": "answer_penalty", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def refit_loss(n, d):
    k = params["refit"]
    return k["E"] + k["A"] / n ** k["alpha"] + k["B"] / d ** k["beta"]


loss_penalty = [refit_loss(nh, c / (6 * nh)) - refit_loss(nr, dr)
                for c, nh, (nr, dr) in zip(params["budgets"], n_opt_hoffmann, refit)]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_penalty", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
assert isinstance(loss_penalty, list) and len(loss_penalty) == len(params["budgets"]), \
    "loss_penalty: one number per budget"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-w2-chinchilla-refit", "check_penalty", globals())
### END HIDDEN TESTS

# %% [markdown]
# Look at your numbers (not graded). Which of your budgets' real runs was closest to either
# optimum, and which was far from both? Does the printed law's ratio grow across your budgets while
# the refit's stays near twenty? And how large is a penalty of a few thousandths of a nat next to
# the spread between two training seeds? When data rather than compute runs out, the allocation
# changes again: see tds-w3-data-constrained.
