# %% [markdown]
# # tds-p9-chinchilla-fit · Fitting the Chinchilla law, and how the published fit went wrong
#
# *Module TDS Training Dynamics & Scaling · practice · build it, break it, read the papers*
#
# II.8 uses the Chinchilla law as a finished product: e09-chinchilla derives the compute-optimal
# split of a budget between parameters and tokens from its five constants, and p7-chinchilla-table
# holds the fitted law against the paper's own Table 3. Neither asks where the five constants come
# from. This item does. You fit
#
# $$L(N, D) = E + \frac{A}{N^{\alpha}} + \frac{B}{D^{\beta}}$$
#
# to a table of training runs exactly the way Hoffmann et al. (*Training Compute-Optimal Large
# Language Models*, 2022, §3.3 and Appendix D.2) describe their "Approach 3", and then read the
# compute-optimal number of tokens per parameter off your own fit. Along the way you meet the two
# details that made the published constants wrong, as Besiroglu, Erdil, Barnett and You found two
# years later (*Chinchilla Scaling: A replication attempt*, 2024).

# %% [markdown]
# ## 1. Approach 3, step by step
#
# Each run $i$ of the table is a model of $N_i$ parameters trained on $D_i$ tokens, with final
# loss $L_i$ in nats per token. Hoffmann et al. do not fit $L$ directly. They reparametrise the
# three positive constants by their logarithms, $A = e^{a}$, $B = e^{b}$, $E = e^{e}$, so that the
# optimiser can move freely without ever making a constant negative, and they compare the
# *logarithm* of the predicted loss with the logarithm of the observed one. The predicted
# log-loss is a log-sum-exp of three terms:
#
# $$\log \hat L_i = \operatorname{LSE}\bigl(a - \alpha \log N_i,\; b - \beta \log D_i,\; e\bigr),$$
#
# which is just $\log(A N_i^{-\alpha} + B D_i^{-\beta} + E)$ written in a way that cannot overflow
# and stays accurate when one term dominates (`torch.logsumexp`). Working in logs makes the misfit
# *relative*: a run at loss 3.5 and one at loss 2.1 that are both 1% off count the same.
#
# The misfit of each run goes through the **Huber loss** with threshold $\delta$,
#
# $$\operatorname{Huber}_\delta(r) = \begin{cases} \tfrac12 r^2 & |r| \le \delta,\\
#   \delta\,(|r| - \tfrac12\delta) & |r| > \delta, \end{cases}$$
#
# quadratic for small residuals and linear for large ones, and the objective is the **sum** over
# runs. Hoffmann et al. use $\delta = 10^{-3}$. A linear tail means that a run whose loss is far
# off the law (a spike, an unstable run, a bug) pulls on the fit with a bounded force instead of
# one that grows with its error; with $\delta$ this small, almost every run is in the linear
# regime, and the fit behaves like a least-absolute-deviations fit, robust to a few outliers.
#
# The objective is not convex in $(a, b, e, \alpha, \beta)$, so Hoffmann et al. run L-BFGS from a
# grid of starting points ($\alpha, \beta \in \{0, 0.5, \dots, 2\}$,
# $e \in \{-1, -0.5, \dots, 1\}$, $a, b \in \{0, 5, \dots, 25\}$: 4,500 starts) and keep the best
# end point. Here the locked cell gives you four of those starts, enough on these tables, and an
# `lbfgs` helper with the optimiser settings fixed.

# %% [markdown]
# ## 2. The table
#
# Your table is synthetic but built like the real one. Hoffmann et al.'s Approach 2 trained, for
# each of several compute budgets $C$, a family of models of different sizes on $D = C/(6N)$
# tokens (an isoFLOP profile); `make_runs` lays out the same design, with sizes spread around the
# compute-optimal one on each profile. The losses come from Besiroglu et al.'s refitted law
# ($E = 1.8172$, $A = 482.01$, $B = 2085.43$, $\alpha = 0.3478$, $\beta = 0.3658$), multiplied by
# log-normal noise of the size seen between real runs, and a few runs have their loss spoiled by
# 8%, as an unstable run would. You know the truth; the question is how much of it a correct fit
# recovers from noisy data, and how much a wrong one loses.

# %% [markdown]
# ## 3. What went wrong in 2022
#
# Besiroglu et al. extracted the data points from the paper's figure and repeated Approach 3.
# Their fit disagreed with the published one ($E = 1.69$, $A = 406.4$, $B = 410.7$,
# $\alpha = 0.34$, $\beta = 0.28$) well beyond any sampling error, the published constants fitted
# the extracted points badly, and the published confidence intervals were so narrow they would
# have needed over 600,000 runs, against the fewer than 500 the paper trained. They identified two
# causes.
#
# - **The optimiser stopped before it converged.** An L-BFGS run ends when the gradient or the
#   change in the objective falls below an absolute tolerance. The scale of the objective decides
#   when that happens: an objective divided by a few hundred (an average over runs instead of a
#   sum, say) has gradients a few hundred times smaller and trips the tolerance far from the
#   minimum. Besiroglu et al. attribute the published fit to such a poor choice of loss scale.
# - **The printed numbers are rounded.** The body of the paper prints $\alpha = 0.34$ and
#   $\beta = 0.28$; the paper's TeX source holds $0.3392$ and $0.2849$. The difference looks
#   harmless, but the compute-optimal split depends on the exponents through
#   $\beta/(\alpha+\beta)$ and through a constant raised to $1/(\alpha+\beta)$, and two-decimal
#   rounding moves the predicted optimal model at a large budget by a noticeable fraction
#   (e09-chinchilla computes it both ways).
#
# With both repaired, Approach 3 agrees with Approaches 1 and 2: parameters and tokens should grow
# in roughly equal proportion, at about twenty tokens per parameter near Chinchilla's budget. The
# widely quoted "20 tokens per parameter" is thus a rounded summary of a fit, not a constant of
# nature; it drifts with the budget because $\alpha \ne \beta$, and it depends on the data and the
# tokenizer.

# %% [markdown]
# ## Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id (on your
# own machine start Jupyter with `JUPYTERHUB_USER=<your course id> jupyter lab`), and defines
# `make_runs`, `STARTS` and `lbfgs`. Editing this cell does not change what you are graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import numpy as np
import torch

torch.set_num_threads(1)   # tiny tensors: one thread is the fastest, and the run is reproducible

VARIANTS = {'A': {'seed': 11,
       'noise': 0.01,
       'spoiled': 4,
       'per_budget': 9,
       'compute': 5.76e+23,
       'budgets': [6e+18,
                   1e+19,
                   3e+19,
                   6e+19,
                   1e+20,
                   3e+20,
                   6e+20,
                   1e+21,
                   3e+21]},
 'B': {'seed': 22,
       'noise': 0.01,
       'spoiled': 3,
       'per_budget': 9,
       'compute': 3.8e+25,
       'budgets': [1e+18, 3e+18, 1e+19, 3e+19, 1e+20, 3e+20, 1e+21, 3e+21]},
 'C': {'seed': 13,
       'noise': 0.005,
       'spoiled': 5,
       'per_budget': 9,
       'compute': 1e+24,
       'budgets': [1e+19, 3e+19, 1e+20, 3e+20, 1e+21, 3e+21, 1e+22]},
 'D': {'seed': 24,
       'noise': 0.008,
       'spoiled': 2,
       'per_budget': 9,
       'compute': 1e+23,
       'budgets': [3e+18, 1e+19, 3e+19, 1e+20, 3e+20, 1e+21]}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-practice:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]


# chapter: include graders.problems.tds_practice.tds_p9_chinchilla_fit.make_runs


# chapter: include graders.problems.tds_practice.tds_p9_chinchilla_fit.starting_points


# chapter: include graders.problems.tds_practice.tds_p9_chinchilla_fit.lbfgs


STARTS = starting_points()
runs = make_runs(params)
print(f"Student {STUDENT}: variant {VARIANT}: {params}")
print(f"{len(runs)} runs; first: N = {runs[0, 0]:.3g}, D = {runs[0, 1]:.3g}, L = {runs[0, 2]:.4f}")

# %% [markdown]
# ## 1. Build it: the objective
#
# Write `huber_objective(theta, log_n, log_d, log_loss, delta)`: Hoffmann et al.'s objective of
# section 1, for `theta` $= (a, b, e, \alpha, \beta)$ and the natural logarithms of the runs'
# parameters, tokens and losses, as a float64 torch scalar that autograd can differentiate. It
# must accept torch tensors (the fit) and plain lists (the hidden tests); `torch.as_tensor(x,
# dtype=torch.float64)` turns either into a tensor without breaking the gradient.

# %% nbgrader={"grade": false, "grade_id": "answer_objective", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def huber_objective(theta, log_n, log_d, log_loss, delta):
    """Sum over runs of Huber_delta(LSE(a - alpha log N, b - beta log D, e) - log L)."""
    theta = torch.as_tensor(theta, dtype=torch.float64)
    log_n, log_d, log_loss = (torch.as_tensor(x, dtype=torch.float64) for x in (log_n, log_d, log_loss))
    a, b, e, alpha, beta = theta
    predicted = torch.logsumexp(torch.stack([a - alpha * log_n, b - beta * log_d, e.expand_as(log_n)]), dim=0)
    r = predicted - log_loss
    small = r.abs() <= delta
    return torch.where(small, 0.5 * r ** 2, delta * (r.abs() - 0.5 * delta)).sum()
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_objective", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
_v = huber_objective([6.0, 7.0, 0.6, 0.35, 0.35], [20.0, 21.0], [24.0, 25.0], [1.0, 0.9], 1e-3)
assert isinstance(_v, torch.Tensor) and _v.dim() == 0, "huber_objective returns a torch scalar"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p9-chinchilla-fit", "check_objective", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 2. Fit it, and use it
#
# With $\delta = 10^{-3}$ and the natural logarithms of the three columns of `runs`, minimise your
# objective from each start in `STARTS` with `lbfgs(objective_of_theta, start)` (it returns the
# final value and the final `theta` as a list) and keep the run with the lowest value. Then record:
# - `fitted_constants`: $[E, A, B]$ of your fit (a list of three floats);
# - `fitted_exponents`: $[\alpha, \beta]$ of your fit (a list of two floats);
# - `tokens_per_parameter`: $D_{opt}/N_{opt}$ at your variant's budget `compute` (FLOPs), from
#   your fitted constants and Hoffmann et al.'s eq. (4) with $C = 6ND$ (derived in
#   e09-chinchilla), as a float.

# %% nbgrader={"grade": false, "grade_id": "answer_fit", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
log_n, log_d, log_loss = (torch.tensor(np.log(runs[:, i]), dtype=torch.float64) for i in range(3))
best_value, best_theta = min((lbfgs(lambda th: huber_objective(th, log_n, log_d, log_loss, 1e-3), start)
                              for start in STARTS), key=lambda run: run[0])
a, b, e, alpha, beta = best_theta
E, A, B = float(np.exp(e)), float(np.exp(a)), float(np.exp(b))
fitted_constants = [E, A, B]
fitted_exponents = [alpha, beta]
G = (alpha * A / (beta * B)) ** (1 / (alpha + beta))
n_opt = G * (params["compute"] / 6) ** (beta / (alpha + beta))
d_opt = params["compute"] / (6 * n_opt)
tokens_per_parameter = d_opt / n_opt
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_fit", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
assert isinstance(fitted_constants, list) and len(fitted_constants) == 3, "fitted_constants is [E, A, B]"
assert isinstance(fitted_exponents, list) and len(fitted_exponents) == 2, "fitted_exponents is [alpha, beta]"
assert isinstance(tokens_per_parameter, numbers.Real), "tokens_per_parameter should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p9-chinchilla-fit", "check_fit", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 3. Look at it (not graded)
#
# Compare your fit with the law the table was drawn from, constant by constant. Which constants
# does the noise move most? (Think about which runs carry information about $E$: only those whose
# other two terms are small, at the largest $N$ and $D$ of the table.) Then compute the tokens per
# parameter that Hoffmann et al.'s printed constants give at your budget, and that Besiroglu et
# al.'s give: which does your fit side with?

# %%
try:
    print("fit:   E, A, B =", [round(x, 4) for x in fitted_constants], " alpha, beta =",
          [round(x, 4) for x in fitted_exponents], f" D/N = {tokens_per_parameter:.1f}")
    print("truth: E, A, B = [1.8172, 482.01, 2085.43]  alpha, beta = [0.3478, 0.3658]")
except NameError as exc:
    print(f"Fit first ({exc}).")

# %% [markdown]
# ## 4. Break it, and read the papers (not graded)
#
# - **Scale the objective.** Divide your objective by the number of runs (a mean instead of a sum)
#   and refit with `torch.optim.LBFGS`'s *default* tolerances instead of `lbfgs`'s tight ones. How
#   far from your fit does it stop? That is the failure Besiroglu et al. diagnose in the published
#   constants; the same optimiser, on an objective of a different scale, quits early.
# - **Square the residuals.** Replace the Huber loss by $\tfrac12 r^2$ and refit. The spoiled runs
#   now pull the fit with a force that grows with their error: watch $B$ and $\beta$ move.
# - **Fit the loss, not its logarithm.** The residual $\hat L - L$ weighs a run by its absolute
#   error, so the high-loss small models dominate the fit.
# - **Round the exponents** of your fit to two decimals and recompute the tokens per parameter;
#   compare with section 3's account of the printed constants.
# - **Ask for an interval.** Besiroglu et al. bootstrapped their fit (refitting on resampled
#   runs); with a few dozen noisy runs, how wide is the spread of your $\beta$? Would you trust a
#   reported interval of $\pm 0.001$?
