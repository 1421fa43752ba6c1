# %% [markdown]
# # p7-chinchilla-table · The fitted law against the paper's own table
#
# *Chapter II.8 Training at Scale · practice · read the papers · 7 of 9*
#
# Hoffmann et al. (*Training Compute-Optimal Large Language Models*, 2022, arXiv 2203.15556)
# reach their headline answer three ways. Approach 1 takes, for every FLOP budget, the lowest
# loss any of their training curves reached; Approach 2 fits a parabola through each IsoFLOP
# slice; Approach 3 fits one formula to every run,
#
# $$L(N, D) = E + \frac{A_N}{N^{\alpha}} + \frac{B_D}{D^{\beta}}, \qquad C = 6ND .$$
#
# Notation as in e09: $N$ parameters, $D$ tokens, $C$ FLOPs, and $A_N$, $B_D$ the paper's
# coefficients $A$ and $B$ (the chapter keeps $B$ for the batch size).
#
# The paper's Table 3 prints the Approach 1 projections, and its caption says that "the estimates
# for Approach 2 & 3 are similar". In this notebook you test that sentence. You will write the
# allocation that the formula implies, evaluate it at the FLOP budgets Table 3 prints, and
# measure how far the two disagree, row by row.
#
# What you need from e09-chinchilla: minimising $L$ under $C = 6ND$ gives the paper's eq. (4),
# $N_{opt} = G\,(C/6)^{a}$, $D_{opt} = G^{-1}(C/6)^{b}$ with
# $G = \left(\frac{\alpha A_N}{\beta B_D}\right)^{1/(\alpha+\beta)}$, $a = \frac{\beta}{\alpha+\beta}$,
# $b = \frac{\alpha}{\alpha+\beta}$. As in e09, $A_N$ and $B_D$ are the paper's coefficients $A$ and $B$
# (the chapter keeps $B$ for the batch size); the function's arguments `A` and `B` keep the paper's names.

# %% [markdown]
# ## 1. What the paper prints
#
# **Table 3** (Approach 1), as printed: parameters, training FLOPs, FLOPs in units of Gopher's
# budget, training tokens.
#
# | parameters | FLOPs | Gopher units | tokens |
# |---|---|---|---|
# | 400M | 1.92e+19 | 1/29,968 | 8.0B |
# | 1B | 1.21e+20 | 1/4,761 | 20.2B |
# | 10B | 1.23e+22 | 1/46 | 205.1B |
# | 67B | 5.76e+23 | 1 | 1.5T |
# | 175B | 3.85e+24 | 6.7 | 3.7T |
# | 280B | 9.90e+24 | 17.2 | 5.9T |
# | 520B | 3.43e+25 | 59.5 | 11.0T |
# | 1T | 1.27e+26 | 221.3 | 21.2T |
# | 10T | 1.30e+28 | 22515.9 | 216.2T |
#
# Every row sits at 20 to 22 tokens per parameter: this table is where the "20 tokens per parameter"
# rule of thumb comes from. Three details are worth noticing before you compute anything.
#
# - The rows are meant to satisfy $C = 6ND$, and most do to the printed digits. The 67B row does
#   not: $6 \times 67\text{B} \times 1.5\text{T} = 6.03\times10^{23}$, about 5% more than the
#   $5.76\times10^{23}$ printed (1.5T is 1.43T rounded up).
# - The text beside the table gives other numbers for the same models: a 175B model "should be trained
#   with a compute budget of $4.41\times10^{24}$ FLOPs and on over 4.2 trillion tokens" (Table 3:
#   $3.85\times10^{24}$ and 3.7T), and a 280B model on 6.8T tokens (Table 3: 5.9T).
# - §3.4 concedes that the third approach "predicts even smaller models being optimal at larger compute
#   budgets", and Appendix D.3 (Table A3) prints its projections: for 67B, $1.71\times10^{24}$ FLOPs and
#   4.1T tokens, three times Table 3's budget.
#
# **The constants of Approach 3.** Appendix D.2, eq. (10) prints $E = 1.69$, $A_N = 406.4$, $B_D = 410.7$,
# $\alpha = 0.34$, $\beta = 0.28$. Those are rounded: the paper's TeX source has $E = 1.6934$,
# $\alpha = 0.3392$, $\beta = 0.2849$ (reported by Besiroglu et al., *Chinchilla Scaling: A replication
# attempt*, 2024, arXiv 2404.10102), and only those reproduce the paper's own "40B at the Gopher
# budget" (Fig. 4 caption) and $a = 0.46$ (Table 2). Besiroglu et al. also refitted the law to data
# they recovered from the paper's figures: $E = 1.8172$, $A_N = 482.01$, $B_D = 2085.43$,
# $\alpha = 0.3478$, $\beta = 0.3658$. Your variant uses one of the three sets.

# %% [markdown]
# ## 2. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id. On
# JupyterHub that is your hub user name; working on your own machine, start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab` so that you see the same variant the grader uses.
# Editing this cell does not change what you are graded on.
#
# Your variant holds a constant set (`E`, `A`, `B`, `alpha`, `beta`), some rows of Table 3 as
# printed (`rows`, each `[parameters, FLOPs, tokens]`), and a `factor`.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {
    "A": {"E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28,
          "rows": [[400e6, 1.92e19, 8.0e9], [10e9, 1.23e22, 205.1e9], [175e9, 3.85e24, 3.7e12],
                   [1e12, 1.27e26, 21.2e12], [10e12, 1.30e28, 216.2e12]],
          "factor": 2.0},
    "B": {"E": 1.6934, "A": 406.4, "B": 410.7, "alpha": 0.3392, "beta": 0.2849,
          "rows": [[1e9, 1.21e20, 20.2e9], [67e9, 5.76e23, 1.5e12], [280e9, 9.90e24, 5.9e12],
                   [1e12, 1.27e26, 21.2e12]],
          "factor": 1.5},
    "C": {"E": 1.8172, "A": 482.01, "B": 2085.43, "alpha": 0.3478, "beta": 0.3658,
          "rows": [[400e6, 1.92e19, 8.0e9], [10e9, 1.23e22, 205.1e9], [520e9, 3.43e25, 11.0e12],
                   [10e12, 1.30e28, 216.2e12]],
          "factor": 1.08},
    "D": {"E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28,
          "rows": [[1e9, 1.21e20, 20.2e9], [67e9, 5.76e23, 1.5e12], [280e9, 9.90e24, 5.9e12],
                   [520e9, 3.43e25, 11.0e12]],
          "factor": 2.5},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"practice:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}")
print(f"  constants: E={params['E']}, A={params['A']}, B={params['B']}, "
      f"alpha={params['alpha']}, beta={params['beta']}; factor {params['factor']}")
for _row in params["rows"]:
    print(f"  Table 3 row: N = {_row[0]:.3g}, C = {_row[1]:.3g} FLOPs, D = {_row[2]:.4g} tokens")

# %% [markdown]
# ## 3. Build it: the allocation the fit implies
#
# Write `compute_optimal(C, E, A, B, alpha, beta)` returning the pair `(n_opt, d_opt)`: the
# parameter count and token count that minimise $L(N, D)$ subject to $6ND = C$. Plain floats.
#
# The hidden tests call it on budgets from $10^{18}$ to $10^{27}$ FLOPs with constant sets you have
# not seen, and compare it with eq. (4) to a relative $10^{-5}$. Use eq. (4), or minimise numerically
# (a golden-section search on $\log N$ converges well past that tolerance): both are accepted, and
# the cell after the next one checks one against the other.

# %% nbgrader={"grade": false, "grade_id": "answer_function", "locked": false, "schema_version": 3, "solution": true, "task": false}
import math


def compute_optimal(C, E, A, B, alpha, beta):
    """(n_opt, d_opt) minimising E + A/N**alpha + B/D**beta subject to 6*N*D = C."""
    ### BEGIN SOLUTION
    G = (alpha * A / (beta * B)) ** (1.0 / (alpha + beta))
    a, b = beta / (alpha + beta), alpha / (alpha + beta)
    return G * (C / 6) ** a, (C / 6) ** b / G
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_function", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the hidden tests call compute_optimal on budgets and constants you have not seen.
import numbers

_out = compute_optimal(1e21, 1.69, 406.4, 410.7, 0.34, 0.28)
assert isinstance(_out, (tuple, list)) and len(_out) == 2, "return a pair (n_opt, d_opt)"
assert all(isinstance(_v, numbers.Real) and _v > 0 for _v in _out), "both entries are positive numbers"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p7-chinchilla-table", "check_function", globals())
### END HIDDEN TESTS

# %% [markdown]
# Check your function against a brute-force minimum before you trust it (not graded): along the
# IsoFLOP line $D = C/(6N)$ the loss is a function of $\log N$ with a single minimum, so a
# golden-section search finds it without any calculus.

# %%
def isoflop_minimum(C, E, A, B, alpha, beta, steps=200):
    """The N minimising L(N, C/(6N)), by golden-section search on log N."""
    def f(x):
        return E + A / math.exp(alpha * x) + B / (C / (6 * math.exp(x))) ** beta
    lo, hi = 0.0, math.log(C / 6)
    r = (math.sqrt(5) - 1) / 2
    for _ in range(steps):
        x1, x2 = hi - r * (hi - lo), lo + r * (hi - lo)
        lo, hi = (lo, x2) if f(x1) < f(x2) else (x1, hi)
    return math.exp((lo + hi) / 2)


try:
    _k = [params[name] for name in ("E", "A", "B", "alpha", "beta")]
    for _c in (1e19, 1e22, 1e25, 1e28):
        _n, _d = compute_optimal(_c, *_k)
        _brute = isoflop_minimum(_c, *_k)
        print(f"C = {_c:.0e}: yours N = {_n:.5g}, brute force N = {_brute:.5g}, "
              f"relative gap {abs(_n / _brute - 1):.1e}; 6ND/C = {6 * _n * _d / _c:.6f}")
except NotImplementedError:
    print("Write compute_optimal above first.")

# %% [markdown]
# ## 4. Read the table with it
#
# For each row of your variant, evaluate the fit at the row's printed FLOPs and compute, as lists in
# the order of `params["rows"]`:
#
# - `n_fit`, `d_fit`: the fit's $N_{opt}$ and $D_{opt}$ at the row's $C$;
# - `n_ratio`, `d_ratio`: the fit over the table, $N_{opt}/N_{\text{table}}$ and $D_{opt}/D_{\text{table}}$;
# - `flops_check`: the table's internal consistency, $C_{\text{table}}/(6 N_{\text{table}} D_{\text{table}})$.

# %% nbgrader={"grade": false, "grade_id": "answer_fit", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_constants = [params[name] for name in ("E", "A", "B", "alpha", "beta")]
_fits = [compute_optimal(c, *_constants) for _, c, _ in params["rows"]]
n_fit = [float(n) for n, _ in _fits]
d_fit = [float(d) for _, d in _fits]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_fit", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
for _name in ("n_fit", "d_fit"):
    assert _name in globals(), f"assign {_name} = ... in the answer cell above"
    assert isinstance(globals()[_name], list), f"{_name} should be a list"
    assert len(globals()[_name]) == len(params["rows"]), f"{_name} needs one entry per row"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p7-chinchilla-table", "check_fit", globals())
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "answer_ratios", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
n_ratio = [nf / n for nf, (n, _, _) in zip(n_fit, params["rows"])]
d_ratio = [df / d for df, (_, _, d) in zip(d_fit, params["rows"])]
flops_check = [c / (6 * n * d) for n, c, d in params["rows"]]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_ratios", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
for _name in ("n_ratio", "d_ratio", "flops_check"):
    assert _name in globals(), f"assign {_name} = ... in the answer cell above"
    assert isinstance(globals()[_name], list), f"{_name} should be a list"
    assert len(globals()[_name]) == len(params["rows"]), f"{_name} needs one entry per row"
    assert all(_v > 0 for _v in globals()[_name]), f"{_name} holds positive ratios"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p7-chinchilla-table", "check_ratios", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 5. Where they disagree
#
# A row **disagrees** when the fit's model size is off from the table's by more than your variant's
# `factor` in either direction: $N_{opt}/N_{\text{table}} > $ factor, or $< 1/$factor.
# Write `disagree_rows`, the 0-based indices (into `params["rows"]`) of the rows that disagree, in
# increasing order, as a list of ints (an empty list if none do).

# %% nbgrader={"grade": false, "grade_id": "answer_disagree", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_f = params["factor"]
disagree_rows = [i for i, r in enumerate(n_ratio) if r > _f or r < 1 / _f]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_disagree", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the list is checked when your notebook is graded.
assert isinstance(disagree_rows, list), "disagree_rows should be a list of row indices"
assert all(isinstance(_i, numbers.Integral) and 0 <= _i < len(params["rows"]) for _i in disagree_rows), \
    "each entry is a 0-based index into params['rows']"
assert disagree_rows == sorted(set(disagree_rows)), "list each index once, in increasing order"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p7-chinchilla-table", "check_disagree", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 6. Look at it
#
# All nine rows of Table 3 against the three constant sets: the fit's $N_{opt}$ over the table's $N$
# (left) and the tokens per parameter each implies (right). The shaded band is your variant's factor.
# A flat line at 1 would be the caption's "similar".

# %%
import matplotlib.pyplot as plt

TABLE3 = [[400e6, 1.92e19, 8.0e9], [1e9, 1.21e20, 20.2e9], [10e9, 1.23e22, 205.1e9],
          [67e9, 5.76e23, 1.5e12], [175e9, 3.85e24, 3.7e12], [280e9, 9.90e24, 5.9e12],
          [520e9, 3.43e25, 11.0e12], [1e12, 1.27e26, 21.2e12], [10e12, 1.30e28, 216.2e12]]
SETS = {
    "eq. (10) as printed": (1.69, 406.4, 410.7, 0.34, 0.28),
    "TeX-source constants": (1.6934, 406.4, 410.7, 0.3392, 0.2849),
    "Besiroglu et al. refit": (1.8172, 482.01, 2085.43, 0.3478, 0.3658),
}
try:
    _budgets = [c for _, c, _ in TABLE3]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for _name, _k in SETS.items():
        _pairs = [compute_optimal(c, *_k) for c in _budgets]
        ax1.plot(_budgets, [n / row[0] for (n, _), row in zip(_pairs, TABLE3)], "o-", label=_name)
        ax2.plot(_budgets, [d / n for n, d in _pairs], "o-", label=_name)
    ax2.plot(_budgets, [d / n for n, _, d in TABLE3], "k^", label="Table 3 (Approach 1)")
    _f = params["factor"]
    ax1.axhspan(1 / _f, _f, color="grey", alpha=0.15, label=f"within your factor {_f}")
    ax1.axhline(1.0, color="k", lw=0.8)
    ax1.set(xscale="log", yscale="log", xlabel="C (FLOPs, Table 3)", ylabel="N_opt(fit) / N(table)")
    ax2.set(xscale="log", yscale="log", xlabel="C (FLOPs, Table 3)", ylabel="tokens per parameter")
    ax1.legend(fontsize=8)
    ax2.legend(fontsize=8)
    fig.tight_layout()
    plt.show()
except NotImplementedError:
    print("Write compute_optimal above first.")

# %% [markdown]
# ## 7. Read your numbers
#
# Which way does the fit lean, towards smaller or larger models than Table 3, and does the lean grow
# with the budget? Is that what §3.4 says of the third approach? Would you call the two "similar", as
# the caption does? Then look at `flops_check`: which printed row is not internally consistent, and by
# how much? (Not graded: a few sentences for yourself. If your variant uses the refit, compare with a
# neighbour who has the printed constants.)

# %% [markdown]
# *Your answer, for yourself (not graded): double-click this cell and write it here.*
