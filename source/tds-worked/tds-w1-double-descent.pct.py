# %% [markdown]
# # tds-w1-double-descent · Why the test error peaks where the model starts to interpolate
#
# *Module TDS Training Dynamics & Scaling · mathematics · worked problem 1 of 1*
#
# The classical picture says that test error is U-shaped in model size: too few parameters
# underfit, too many overfit. Belkin et al. (PNAS 2019) found a second branch: past the
# *interpolation threshold* (tds-b2), where the model can fit every training example, the test
# error falls again. This problem derives the whole curve for a model small enough to solve
# exactly, then computes it for your variant. Apparatus: variance and covariance (0.PR.03).
#
# **The model** (Belkin, Hsu and Xu, *Two models of double descent for weak features*, SIAM J.
# Math. Data Sci. 2020, §2). Inputs $x \sim N(0, I_D)$, targets $y = x^\top\beta + \sigma\varepsilon$
# with $\varepsilon \sim N(0, 1)$. The learner sees $n$ examples but only the first $p$ of the $D$
# features, and fits them by minimum-norm least squares, $\hat\beta = X^{+}y$, with $X$ the
# $n \times p$ matrix of the used features. The signal is spread evenly: $|\beta|^2 = S$, so the
# used features carry $|\beta_p|^2 = Sp/D$ and the unused ones $|\beta_{rest}|^2 = S(D-p)/D$.
#
# We want the **risk**: the expected squared error $E[(y - x^\top\hat\beta)^2]$ on a fresh example.

# %% [markdown]
# ## 1. Derivation
#
# **What the learner cannot see is noise.** Split $y = X\beta_p + \eta$, where
# $\eta = X_{rest}\beta_{rest} + \sigma\varepsilon$. The unused features are independent of the
# used ones, so $\eta$ has independent entries of variance $\tau^2 = |\beta_{rest}|^2 + \sigma^2$,
# independent of $X$. On a fresh example the same split gives
#
# $$\text{risk} = E|\hat\beta - \beta_p|^2 + \tau^2 ,$$
#
# an estimation error plus a floor no fit can remove.
#
# **Below the threshold, $p \le n - 2$.** $X^\top X$ is invertible, $\hat\beta = \beta_p + (X^\top X)^{-1}X^\top\eta$,
# and $E|\hat\beta - \beta_p|^2 = \tau^2\, E\operatorname{tr}(X^\top X)^{-1}$. For a Gaussian
# $n \times p$ matrix, $X^\top X$ is Wishart and the mean of its inverse is $I_p/(n - p - 1)$, so
#
# $$\text{risk}_{under}(p) = \tau^2\Big(1 + \frac{p}{n - p - 1}\Big).$$
#
# **Above the threshold, $p \ge n + 2$.** Now $XX^\top$ is invertible and $X^{+} = X^\top(XX^\top)^{-1}$.
# $X^{+}X = \Pi$ is the projection onto the $n$-dimensional row space of $X$, so
# $\hat\beta - \beta_p = -(I - \Pi)\beta_p + X^{+}\eta$. The two parts are uncorrelated. The row space
# is a uniformly random $n$-dimensional subspace of $\mathbb{R}^p$ (rotational invariance), so
# $E|(I - \Pi)\beta_p|^2 = |\beta_p|^2(1 - n/p)$: this is the **bias**, what interpolation cannot
# recover. The variance is $\tau^2 E\operatorname{tr}(XX^\top)^{-1} = \tau^2\, n/(p - n - 1)$ (the same
# Wishart fact, with the roles of $n$ and $p$ exchanged). So
#
# $$\text{risk}_{over}(p) = |\beta_p|^2\Big(1 - \frac{n}{p}\Big) + \tau^2\Big(1 + \frac{n}{p - n - 1}\Big).$$
#
# **At the threshold**, $n - 1 \le p \le n + 1$, the expected trace is infinite: the smallest
# singular value of a nearly square Gaussian matrix is close to zero, and the fit divides by it.
# That is the peak. Away from it on the right, the variance term $n/(p - n - 1)$ falls as $p$ grows:
# more features than examples give the minimum-norm solution room to spread the noise thinly.

# %% [markdown]
# ## 2. Worked example (not your variant): n = 10, D = 40, S = 1, σ² = 0.2
#
# First the formulas, then the fit itself, simulated, to see that they agree.

# %%
import numpy as np
import sympy

ex = {"n": 10, "D": 40, "S": 1.0, "noise": 0.2}


def risk(p, n, D, S, noise):
    tau2 = S * (D - p) / D + noise
    if p <= n - 2:
        return tau2 * (1 + p / (n - p - 1))
    if p >= n + 2:
        return S * p / D * (1 - n / p) + tau2 * (1 + n / (p - n - 1))
    return float("inf")


def simulated_risk(p, n, D, S, noise, trials=3000, seed=0):
    rng = np.random.default_rng(seed)
    beta = np.full(D, np.sqrt(S / D))
    errors = []
    for _ in range(trials):
        X = rng.normal(size=(n, D))
        y = X @ beta + np.sqrt(noise) * rng.normal(size=n)
        beta_hat = np.linalg.pinv(X[:, :p]) @ y
        x = rng.normal(size=D)
        errors.append((x @ beta + np.sqrt(noise) * rng.normal() - x[:p] @ beta_hat) ** 2)
    return np.mean(errors)


for p in (2, 5, 20, 40):
    print(f"p = {p:2d}: formula {risk(p, **ex):.3f}   simulated {simulated_risk(p, **ex):.3f}")

# %% [markdown]
# The two agree to the Monte Carlo error (a few percent). Now the whole curve, and the two
# branches as expressions in $p$ and $n$ with this example's $D$, $S$ and $\sigma^2$ as numbers:

# %%
import matplotlib.pyplot as plt

p_, n_ = sympy.symbols("p n", positive=True)
tau2_ = ex["S"] * (ex["D"] - p_) / ex["D"] + sympy.Rational(1, 5)
print("under:", sympy.simplify(tau2_ * (1 + p_ / (n_ - p_ - 1))))
print("over :", sympy.simplify(ex["S"] * p_ / ex["D"] * (1 - n_ / p_) + tau2_ * (1 + n_ / (p_ - n_ - 1))))

ps = [p for p in range(1, ex["D"] + 1) if not ex["n"] - 1 <= p <= ex["n"] + 1]
plt.figure(figsize=(7, 3.5))
plt.plot(ps, [risk(p, **ex) for p in ps], "o-", ms=3)
plt.axvline(ex["n"], color="grey", ls=":", label="interpolation threshold p = n")
plt.yscale("log")
plt.xlabel("features used, p")
plt.ylabel("test risk")
plt.legend()
plt.title("Double descent of minimum-norm least squares")
plt.show()
best_under = min(risk(p, **ex) for p in range(1, ex["n"] - 1))
crossover = next(p for p in range(ex["n"] + 2, ex["D"] + 1) if risk(p, **ex) < best_under)
print("best risk below the threshold:", round(best_under, 4), "; first p above it that beats it:", crossover)

# %% [markdown]
# The risk climbs toward the threshold, is infinite there, and falls again beyond it; with all
# 40 features it is lower than anywhere below the threshold. The **crossover** is the fewest
# features past the threshold whose risk beats the best risk of any $p \le n - 2$.
#
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

VARIANTS = {'A': {'n_samples': 40,
       'total_features': 100,
       'signal': 1.0,
       'noise_var': 0.0,
       'feature_counts': [10, 20, 30, 60, 100]},
 'B': {'n_samples': 20,
       'total_features': 60,
       'signal': 1.0,
       'noise_var': 0.25,
       'feature_counts': [5, 10, 15, 25, 40, 60]},
 'C': {'n_samples': 50,
       'total_features': 200,
       'signal': 2.0,
       'noise_var': 0.1,
       'feature_counts': [10, 25, 45, 55, 100, 200]},
 'D': {'n_samples': 30,
       'total_features': 150,
       'signal': 1.0,
       'noise_var': 0.2,
       'feature_counts': [4, 12, 24, 35, 60, 150]}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-worked:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# Your parameters: `n_samples` ($n$), `total_features` ($D$), `signal` ($S$), `noise_var` ($\sigma^2$)
# and `feature_counts` (none of them lies in $[n-1, n+1]$).
#
# ### 3a. Derive it
#
# With `p, n = sympy.symbols("p n", positive=True)`, give the two branches of the risk as sympy
# expressions in `p` and `n`, with your variant's $D$, $S$ and $\sigma^2$ as numbers:
# `risk_under_expr` (for $p \le n - 2$) and `risk_over_expr` (for $p \ge n + 2$).

# %% nbgrader={"grade": false, "grade_id": "answer_expressions", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
p, n = sympy.symbols("p n", positive=True)
D, S, noise = params["total_features"], sympy.nsimplify(params["signal"]), sympy.nsimplify(params["noise_var"])
tau2 = S * (D - p) / D + noise
risk_under_expr = tau2 * (1 + p / (n - p - 1))
risk_over_expr = S * p / D * (1 - n / p) + tau2 * (1 + n / (p - n - 1))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expressions", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
for _name in ("risk_under_expr", "risk_over_expr"):
    assert isinstance(globals()[_name], sympy.Basic), f"{_name} should be a sympy expression in p and n"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-w1-double-descent", "check_expressions", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 3b. Compute it
#
# - `risks`: the risk at each of your `feature_counts`, in order (a list of floats);
# - `crossover_features`: the fewest features $p \ge n + 2$ whose risk is below the best risk of any
#   $p$ in $1, \dots, n - 2$ (an int);
# - `risk_all_features`: the risk when the learner uses all $D$ features (a float).

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
q = {"n": params["n_samples"], "D": params["total_features"], "S": params["signal"], "noise": params["noise_var"]}
risks = [risk(k, **q) for k in params["feature_counts"]]
best_under = min(risk(k, **q) for k in range(1, q["n"] - 1))
crossover_features = next(k for k in range(q["n"] + 2, q["D"] + 1) if risk(k, **q) < best_under)
risk_all_features = risk(q["D"], **q)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
assert isinstance(risks, list) and len(risks) == len(params["feature_counts"]), "one risk per feature count"
assert isinstance(crossover_features, numbers.Integral), "crossover_features is a count of features: an int"
assert isinstance(risk_all_features, numbers.Real), "risk_all_features should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-w1-double-descent", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# Look at your numbers (not graded): where would a practitioner who only ever tried $p < n$ have
# stopped, and how much lower is your `risk_all_features`? What does the noise level do to the
# height of the peak's shoulders?
