# %% [markdown]
# # e09-chinchilla · Splitting a compute budget between parameters and tokens
#
# *Chapter II.8 Training at Scale · mathematics · exercise 9 of 10*
#
# A training budget of $C$ FLOPs can buy a large model trained briefly or a small model
# trained long. Hoffmann et al. (*Training Compute-Optimal Large Language Models*, 2022,
# arXiv 2203.15556) fitted a loss surface over hundreds of runs and minimised it under the
# cost $C = 6ND$. This exercise derives their closed form, computes it for your variant, and
# checks the widely repeated "20 tokens per parameter" against what the paper actually prints.
#
# Notation: $N$ parameters, $D$ training tokens, $C$ training FLOPs; $A_N$ and $B_D$ the fitted
# coefficients of the parameter and data terms (the paper's $A$ and $B$: in this chapter $B$ is
# the batch size). A suffix on a number is a unit: 70B parameters, 1.4T tokens. The loss model
# (Hoffmann §3.3, eq. 2) is
#
# $$L(N, D) = E + \frac{A_N}{N^{\alpha}} + \frac{B_D}{D^{\beta}} .$$
#
# The paper calls the two coefficients $A$ and $B$. In this chapter $B$ is the batch size and $A$
# the activation values of b09, so here the coefficient of the parameter term is $A_N$ and that of
# the data term $B_D$. Your parameters keep the paper's keys: `params["A"]` is $A_N$ and
# `params["B"]` is $B_D$. Neither appears in your expression, only in your numbers.

# %% [markdown]
# ## 1. Where the optimum sits
#
# Fix $C$. Every choice of $N$ fixes $D = C/(6N)$, so the loss becomes a function of $N$ alone:
# the first reducible term falls as $N$ grows, the second rises, because each extra parameter
# costs tokens. Setting the derivative with respect to $N$ to zero gives a balance condition
# worth remembering:
#
# $$\alpha \,\frac{A_N}{N^{\alpha}} \;=\; \beta \,\frac{B_D}{D^{\beta}} ,$$
#
# i.e. at the optimum the two reducible terms stand in the ratio $\beta : \alpha$. Solving it for $N$
# is a one-line power law in $C/6$; the paper writes the result as its eq. (4),
# $N_{opt} = G\,(C/6)^{a}$ and $D_{opt} = G^{-1}(C/6)^{b}$, with a prefactor $G$ and exponents
# $a + b = 1$ built from $A_N, B_D, \alpha, \beta$. You will derive $G$ and $a$ yourself below, with sympy.
#
# Two things follow without any numbers. The constant $E$ moves the loss but not the allocation.
# And the ratio $D_{opt}/N_{opt}$ is constant across budgets **only** if $\alpha = \beta$; otherwise
# it drifts as a power of $C$, so "tokens per parameter" is not a property of a law, only of a
# law at one budget.

# %% [markdown]
# ## 2. What the paper prints, and what it does not
#
# The constants in the paper's Appendix D.2, eq. (10), are $E = 1.69$, $A_N = 406.4$, $B_D = 410.7$,
# $\alpha = 0.34$, $\beta = 0.28$. Three facts about them are easy to check and rarely mentioned:
#
# 1. **They do not give 20 tokens per parameter.** At the Gopher budget ($C = 5.76\times10^{23}$
#    FLOPs, the "1 Gopher unit" row of Table 3) the printed constants put the optimum near
#    $N \approx 32$B and $D \approx 3.0$T, about **93 tokens per parameter**.
# 2. **They are rounded, and the rounding matters.** Besiroglu et al. (*Chinchilla Scaling: A
#    replication attempt*, 2024, arXiv 2404.10102) report the unrounded values from the paper's TeX
#    source: $E = 1.6934$, $\alpha = 0.3392$, $\beta = 0.2849$ (same $A_N$, $B_D$). With them the Gopher-budget
#    optimum is $\approx 40$B parameters and $\approx 59$ tokens per parameter: this is the "40B" of the
#    paper's Fig. 4 caption, and its exponent $a = 0.4565$ is the $0.46$ of Table 2 (the rounded
#    constants give $a = 0.28/0.62 = 0.4516$, which would print as 0.45).
# 3. **The "20" comes from elsewhere.** Table 3 lists Approach 1 (minimum over training curves), whose
#    rows sit at 20 to 22 tokens per parameter (1B → 20.2B tokens; 10B → 205.1B), and Chinchilla itself
#    was trained at 70B parameters on 1.4T tokens. The parametric fit (Approach 3) is the paper's
#    outlier: §3.4 notes that it favours smaller models than the other two approaches at large
#    budgets, and §4 brackets the Gopher-budget optimum between the two answers, 40B and 70B.
#
# Table A3 (Appendix D.3) prints the Approach 3 projections. The TeX-source constants reproduce
# them to within about 2–20%; the rounded ones miss by a factor of 1.6 to 2:
#
# | model size | Table A3, Approach 3 (as printed) | TeX-source constants | eq. (10) as printed |
# |---|---|---|---|
# | 67B | 1.71e24 FLOPs, 4.1T tokens | 1.75e24, 4.4T | 2.9e24, 7.3T |
# | 175B | **1.26e24** FLOPs, 12.0T tokens | 1.44e25, 13.7T | 2.4e25, 23T |
# | 1T | 5.65e26 FLOPs, 94.1T tokens | 6.5e26, 109T | 1.2e27, 193T |
#
# The 175B row is printed with a typo: $6 \times 175\text{B} \times 12.0\text{T} = 1.26\times10^{25}$, ten
# times the FLOPs shown. The main text has its own mismatch: it says a 175B model needs
# $4.41\times10^{24}$ FLOPs and over 4.2T tokens, while Table 3 lists $3.85\times10^{24}$ and 3.7T.
#
# Besiroglu et al. refitted the parametric law to data they reconstructed from the paper's plots and
# found $E = 1.8172$, $A_N = 482.01$, $B_D = 2085.43$, $\alpha = 0.3478$, $\beta = 0.3658$. Their fit has $\beta > \alpha$,
# gives $a \approx 0.51$ in line with Approaches 1 and 2, and about **18 tokens per parameter** at the
# Gopher budget. They trace the discrepancy to the rounding above and to an optimiser that stopped
# before convergence.
#
# The figure below minimises each law numerically on a grid (no closed form used), so you can
# see all of this before you derive anything.

# %%
import matplotlib
import matplotlib.pyplot as plt
import numpy as np

LAWS = {
    "eq. (10) as printed": (1.69, 406.4, 410.7, 0.34, 0.28),
    "TeX-source constants": (1.6934, 406.4, 410.7, 0.3392, 0.2849),
    "Besiroglu et al. refit": (1.8172, 482.01, 2085.43, 0.3478, 0.3658),
}
GOPHER_BUDGET = 5.76e23
n_grid = np.logspace(8, 14, 6001)


def isoflop_loss(n, c, e, a, b, alpha, beta):
    return e + a / n**alpha + b / (c / (6 * n))**beta


fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
for name, law in LAWS.items():
    losses = isoflop_loss(n_grid, GOPHER_BUDGET, *law)
    best = n_grid[np.argmin(losses)]
    left.plot(n_grid, losses, label=f"{name}: min at {best / 1e9:.0f}B")
    left.plot(best, losses.min(), "o", color=left.lines[-1].get_color())
    budgets = np.logspace(19, 29, 41)
    n_best = np.array([n_grid[np.argmin(isoflop_loss(n_grid, c, *law))] for c in budgets])
    right.plot(budgets, budgets / (6 * n_best) / n_best, label=name)
left.axvline(np.sqrt(GOPHER_BUDGET / 120), color="gray", ls=":", label="D = 20N")
left.set(xscale="log", xlim=(5e9, 5e11), ylim=(1.90, 2.05), xlabel="N (parameters)", ylabel="L(N, C/6N)",
         title="IsoFLOP slice at the Gopher budget")
left.legend(fontsize=8)
table3 = {4e8: 8.0e9, 1e9: 20.2e9, 1e10: 205.1e9, 6.7e10: 1.5e12, 1.75e11: 3.7e12, 2.8e11: 5.9e12,
          5.2e11: 11.0e12, 1e12: 21.2e12, 1e13: 216.2e12}
right.plot([6 * n * d for n, d in table3.items()], [d / n for n, d in table3.items()], "k^",
           label="Table 3 (Approach 1)")
approach3 = {4e8: 9.2e9, 1e9: 27.1e9, 1e10: 410.1e9, 6.7e10: 4.1e12, 1.75e11: 12.0e12, 2.8e11: 20.1e12,
             5.2e11: 43.5e12, 1e12: 94.1e12, 1e13: 1425.5e12}   # Table A3, plotted at C = 6ND
right.plot([6 * n * d for n, d in approach3.items()], [d / n for n, d in approach3.items()], "ks",
           mfc="none", label="Table A3 (Approach 3)")
right.axhline(20, color="gray", ls=":")
right.set(xscale="log", yscale="log", xlabel="C (FLOPs)", ylabel="tokens per parameter at the optimum",
          title="D_opt / N_opt against the budget")
right.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
right.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
right.set_yticks([10, 20, 50, 100, 200])
right.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 3. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id. On
# JupyterHub that is your hub user name; working on your own machine, start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab` so that you see the same variant the grader
# uses. Editing this cell does not change what you are graded on.
#
# The variants are real budgets (Llama 2 70B: $6 \times 70\text{B} \times 2\text{T}$; GPT-3 175B:
# $3.14\times10^{23}$, Brown et al. 2020 Table D.1; Llama 3 405B: $3.8\times10^{25}$; and the
# $10^{21}$-FLOP comparison of Hoffmann App. D.4) paired with one of the three constant sets above.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import sympy as sp

C = sp.symbols("C", positive=True)

VARIANTS = {
    "A": {"C": 8.4e23, "E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28},
    "B": {"C": 3.14e23, "E": 1.6934, "A": 406.4, "B": 410.7, "alpha": 0.3392, "beta": 0.2849},
    "C": {"C": 3.8e25, "E": 1.8172, "A": 482.01, "B": 2085.43, "alpha": 0.3478, "beta": 0.3658},
    "D": {"C": 1e21, "E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"exercises:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ### 3a. Derive
#
# With sympy, minimise $L(N, C/(6N))$ over $N$ and write `n_opt_expr`: the compute-optimal parameter
# count as an expression in the symbol `C` only, with **your variant's** constants substituted
# (so it contains floating-point numbers, e.g. something like `0.6*C**0.45`). Keep the full
# precision of the constants; do not round them.
#
# Hint: make your own positive symbols for $N$, $\alpha$, $\beta$, $A_N$, $B_D$, $E$, solve
# $\partial L/\partial N = 0$, then substitute `params`.

# %% nbgrader={"grade": false, "grade_id": "answer_expr", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
N_, alpha_, beta_, A_, B_, E_ = sp.symbols("N alpha beta A_N B_D E", positive=True)
loss_at_fixed_C = E_ + A_ / N_**alpha_ + B_ / (C / (6 * N_))**beta_
stationary = sp.solve(sp.diff(loss_at_fixed_C, N_), N_)
n_general = stationary[0]
constants = {E_: params["E"], A_: params["A"], B_: params["B"], alpha_: params["alpha"], beta_: params["beta"]}
n_opt_expr = sp.simplify(n_general.subs(constants))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expr", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the mathematics is checked when your notebook is graded.
assert isinstance(n_opt_expr, sp.Expr), "n_opt_expr should be a sympy expression"
assert {s.name for s in n_opt_expr.free_symbols} <= {"C"}, "use only the symbol C (the constants are numbers)"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e09-chinchilla", "check_expr", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 3b. Compute
#
# For your variant's budget `params["C"]`, compute:
# - `n_opt`: the compute-optimal parameter count;
# - `d_opt`: the compute-optimal number of training tokens ($C = 6ND$);
# - `tokens_per_param`: $D_{opt}/N_{opt}$;
# - `loss_opt`: the fitted loss $L(N_{opt}, D_{opt})$ in nats per token.
#
# Plain Python floats, please.

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
n_opt = float(n_opt_expr.subs(C, params["C"]))
d_opt = params["C"] / (6 * n_opt)
tokens_per_param = d_opt / n_opt
loss_opt = params["E"] + params["A"] / n_opt**params["alpha"] + params["B"] / d_opt**params["beta"]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the numbers are checked when your notebook is graded.
for name in ("n_opt", "d_opt", "tokens_per_param", "loss_opt"):
    assert isinstance(globals()[name], numbers.Real), f"{name} should be a plain number"
    assert globals()[name] > 0, f"{name} should be positive"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e09-chinchilla", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 3c. Read your number
#
# Compare your `tokens_per_param` with 20. Which of the three constant sets is your variant using,
# and would the model you computed have been trained on more or fewer tokens than the rule of thumb
# suggests? How much higher is the loss if you train at $D = 20N$ instead, at the same $C$?
# (Not graded: a sentence for yourself. The last question is one line of code.)

# %% [markdown]
# *Your answer, for yourself (not graded): double-click this cell and write it here.*

# %%
# Your one line of code (not graded):
