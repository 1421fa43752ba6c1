# %% [markdown]
# # tds-w5-ridge-double-descent · Ridgeless least squares with isotropic features, and the ridge that removes the peak
#
# *Module TDS Training Dynamics & Scaling · mathematics · worked problem 5*
#
# tds-w1 derived double descent for a learner that sees only some of the features, so that adding
# features adds signal. This problem takes the other classical model, the one Hastie, Montanari,
# Rosset and Tibshirani (*Surprises in high-dimensional ridgeless least squares interpolation*,
# Annals of Statistics 2022, §2) start from: **every feature is used, and the signal has the same
# size whatever the number of features**. Adding features now adds only parameters to estimate. The
# curve still has its peak at the interpolation threshold, and it still comes down on the far side;
# what changes is where the best model lies, and that is worth seeing exactly. The second half asks
# what a properly tuned ridge penalty does to the peak, the question of Nakkiran, Venkat, Kakade and
# Ma (*Optimal regularization can mitigate double descent*, ICLR 2021). tds-p1 then runs the
# experiment with random features, where the features are made by a network rather than given.
#
# **The model.** Inputs $x \sim N(0, I_p)$, targets $y = x^\top\beta + \sigma\varepsilon$ with
# $\varepsilon \sim N(0, 1)$ and $|\beta|^2 = r^2$ fixed as $p$ varies; $n$ training examples in the
# rows of $X$. The fit is the minimum-norm least-squares solution $\hat\beta = X^{+}y$: the ordinary
# least-squares fit when $p < n$, and among the infinitely many interpolating solutions the one of
# least norm when $p > n$ (it is also where gradient descent from zero ends up).
#
# **The risk** is HMRT's: the error of the fitted function on a fresh input, *without* the fresh
# label's own noise, $R = E\big[(x^\top\hat\beta - x^\top\beta)^2\big] = E|\hat\beta - \beta|^2$, the last
# step because $x$ is isotropic. (tds-w1 used the error against the noisy label; the two differ by
# exactly $\sigma^2$, and mixing them up is a common slip when comparing papers.)

# %% [markdown]
# ## 1. Derivation
#
# **Below the threshold, $p \le n - 2$.** $X^\top X$ is invertible and $\hat\beta - \beta = (X^\top X)^{-1}X^\top\sigma\varepsilon$.
# Averaging over the noise, $E|\hat\beta - \beta|^2 = \sigma^2 E \operatorname{tr}(X^\top X)^{-1}$. The matrix
# $X^\top X$ is Wishart with $n$ degrees of freedom in $p$ dimensions, and the mean of its inverse is
# $I_p/(n - p - 1)$, finite exactly when $p \le n - 2$. So
#
# $$R_{under}(p) = \sigma^2\,\frac{p}{\,n - p - 1\,}.$$
#
# There is no bias: with more equations than unknowns, least squares is unbiased. All the risk is
# variance, and it grows without bound as $p$ approaches $n$.
#
# **Above the threshold, $p \ge n + 2$.** Now $XX^\top$ is invertible, $X^{+} = X^\top(XX^\top)^{-1}$, and
# $X^{+}X = \Pi$ projects onto the row space of $X$, an $n$-dimensional subspace of $\mathbb{R}^p$. So
# $\hat\beta - \beta = -(I - \Pi)\beta + X^{+}\sigma\varepsilon$, two uncorrelated pieces. The row space is a uniformly
# random subspace (the Gaussian is rotation invariant), so it captures on average the fraction $n/p$ of
# $|\beta|^2$ and misses the rest: the **bias** is $r^2(1 - n/p)$. The **variance** is
# $\sigma^2 E\operatorname{tr}(XX^\top)^{-1} = \sigma^2\, n/(p - n - 1)$, the same Wishart fact with $n$ and $p$
# exchanged. So
#
# $$R_{over}(p) = r^2\Big(1 - \frac{n}{p}\Big) + \sigma^2\,\frac{n}{\,p - n - 1\,}.$$
#
# This is Belkin, Hsu and Xu's Theorem 1 (SIAM J. Math. Data Sci. 2020) with every feature used and
# the fresh label's $\sigma^2$ taken out, and as $n, p \to \infty$ with $p/n \to \gamma$ the two branches
# become HMRT's Theorem 1 for isotropic features, $\sigma^2\gamma/(1 - \gamma)$ and $r^2(1 - 1/\gamma) + \sigma^2/(\gamma - 1)$.
# Both expressions here are **exact for finite $n$ and $p$**, which is why the simulation below can
# check them to a few percent with small matrices.
#
# **At the threshold**, $n - 1 \le p \le n + 1$, the expected trace is infinite: a nearly square
# Gaussian matrix has a smallest singular value near zero, and the fit divides the noise by it. That
# is the peak. It is a peak of *variance*; without label noise ($\sigma = 0$) it disappears.
#
# **Where the second descent bottoms out.** Past the threshold the variance falls as $p$ grows and the
# bias rises toward $r^2$, the risk of predicting zero. Setting the derivative in $p$ to zero gives
# $r(p - n - 1) = \sigma p$, so there is a best over-parametrised size when $r > \sigma$, at about
# $p \approx r(n+1)/(r - \sigma)$. In the proportional limit the risk there is $2r\sigma - \sigma^2$, which is
# below $r^2$ but above what the *under*-parametrised branch reaches for small $p$. In this model the
# second descent never beats the first, as the two formulas show at once: that is why tds-w1 (and
# HMRT's own misspecified and random-features models) let extra features bring extra signal, which is
# what it takes for over-parametrisation to win.

# %% [markdown]
# ## 2. Ridge with the right penalty
#
# Ridge regression minimises $|y - Xb|^2 + \lambda|b|^2$, giving $\hat\beta_\lambda = (X^\top X + \lambda I)^{-1}X^\top y$, which
# exists for every $p$ when $\lambda > 0$: the penalty lifts the small singular values that caused the peak.
# Which $\lambda$? If $\beta$ is drawn from $N(0, (r^2/p)\,I)$, the posterior mean of $\beta$ given the data is
# exactly ridge with penalty equal to the noise variance divided by the prior variance per coordinate,
# and the posterior mean minimises the expected squared error. For a fixed $\beta$ of norm $r$, rotation
# invariance makes the same penalty optimal as $n$ and $p$ grow. Two cautions: the optimal penalty
# depends on how the objective is written (averaging the squared error over the $n$ examples rescales
# $\lambda$ by $n$), and it does not depend on $n$ at all in this summed form, which is the observation
# in the caption of Nakkiran et al.'s Fig. 1.
#
# The risk of the tuned ridge has a closed form in the proportional limit, through the Stieltjes
# transform $m$ of the Marchenko-Pastur law (HMRT derive the general ridge risk; Dobriban and Wager,
# Annals of Statistics 2018, give the optimum). At the tuned penalty the bias and variance terms
# combine into $\sigma^2\gamma\, m(-\lambda_*)$ with $\lambda_* = \sigma^2\gamma/r^2$ in the averaged normalisation, and at
# $\gamma = 1$ the quadratic equation for $m$ gives
#
# $$R_{ridge}(\gamma = 1) = \frac{\sigma^2}{2}\Big(\sqrt{1 + 4r^2/\sigma^2} - 1\Big),$$
#
# finite, below both $r^2$ and the curve's shoulders. Nakkiran et al. prove the general statement for
# this isotropic model: with the penalty tuned, the risk is monotone in the number of samples, and
# (in a random-projection version of the model) in the number of parameters. The peak is not a law
# of learning; it is what happens when nothing stands between the estimator and the smallest singular
# value. A little explicit regularisation, or the implicit kind that early stopping and label smoothing
# provide, already flattens it, which is one reason the peak is hard to see in practice.

# %% [markdown]
# ## 3. Worked example (not your variant): n = 30, σ² = 0.2, r² = 1
#
# The formulas for this example, then a Monte Carlo simulation of the fits themselves.

# %%
import math

import numpy as np
import sympy

ex_n, ex_noise, ex_signal = 30, 0.2, 1.0


def simulated_risk(n, p, noise, signal, lam=0.0, trials=400, seed=0):
    """Average |β̂ - β|² over fresh data sets: minimum-norm (lam = 0) or ridge (lam > 0)."""
    rng = np.random.default_rng(seed)
    total = 0.0
    for _ in range(trials):
        beta = rng.normal(size=p)
        beta *= math.sqrt(signal) / np.linalg.norm(beta)
        X = rng.normal(size=(n, p))
        y = X @ beta + math.sqrt(noise) * rng.normal(size=n)
        if lam > 0:
            fit = np.linalg.solve(X.T @ X + lam * np.eye(p), X.T @ y)
        else:
            fit = np.linalg.pinv(X) @ y
        total += np.sum((fit - beta) ** 2)
    return total / trials


for ex_p in (5, 15, 45, 90):
    if ex_p <= ex_n - 2:
        formula = ex_noise * ex_p / (ex_n - ex_p - 1)
    else:
        formula = ex_signal * (1 - ex_n / ex_p) + ex_noise * ex_n / (ex_p - ex_n - 1)
    print(f"p = {ex_p:3d}: formula {formula:.4f}   simulated {simulated_risk(ex_n, ex_p, ex_noise, ex_signal):.4f}")

# %% [markdown]
# They agree to the Monte Carlo error. Now the tuned ridge at the threshold, $p = n$, against the
# closed form (the finite-$n$ simulation sits a few percent from the proportional limit), and the
# minimum-norm fit at the same size for comparison:

# %%
ex_lam = ex_n * ex_noise / ex_signal          # p σ²/r² at p = n, summed objective
ex_limit = ex_noise / 2 * (math.sqrt(1 + 4 * ex_signal / ex_noise) - 1)
print("tuned ridge at p = n: simulated", round(simulated_risk(ex_n, ex_n, ex_noise, ex_signal, lam=ex_lam), 4),
      "  limit", round(ex_limit, 4))
print("minimum norm at p = n: simulated", round(simulated_risk(ex_n, ex_n, ex_noise, ex_signal), 1), "(no finite mean)")

# %%
import matplotlib.pyplot as plt

ex_ps = [p for p in range(1, 4 * ex_n) if not ex_n - 1 <= p <= ex_n + 1]
ex_curve = [ex_noise * p / (ex_n - p - 1) if p < ex_n else
            ex_signal * (1 - ex_n / p) + ex_noise * ex_n / (p - ex_n - 1) for p in ex_ps]
ex_ridge_ps = list(range(5, 4 * ex_n, 10))
ex_ridge = [simulated_risk(ex_n, p, ex_noise, ex_signal, lam=p * ex_noise / ex_signal, trials=100) for p in ex_ridge_ps]
plt.figure(figsize=(7, 3.5))
plt.plot(ex_ps, ex_curve, "o-", ms=3, label="minimum norm (exact)")
plt.plot(ex_ridge_ps, ex_ridge, "s--", label="tuned ridge (simulated)")
plt.axvline(ex_n, color="grey", ls=":", label="p = n")
plt.axhline(ex_signal, color="black", lw=0.5, label="predicting zero")
plt.yscale("log")
plt.xlabel("features, p")
plt.ylabel("excess risk")
plt.legend()
plt.title("Isotropic features: the peak, and the tuned ridge without one")
plt.show()

# %% [markdown]
# Read the picture before your variant. The minimum-norm curve rises to the peak, falls past it to a
# minimum and then climbs slowly back toward the risk of predicting zero; the tuned ridge curve has no
# peak at all and rises steadily toward the same limit, because in this model every extra feature is
# one more coordinate to estimate with the same data. Near the threshold the gap between the two is the
# whole story of the peak.
#
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

VARIANTS = {'A': {'n_samples': 100,
       'noise_var': 0.25,
       'signal': 1.0,
       'feature_counts': [20, 50, 90, 110, 200, 400]},
 'B': {'n_samples': 50,
       'noise_var': 0.5,
       'signal': 4.0,
       'feature_counts': [10, 30, 45, 55, 80, 150]},
 'C': {'n_samples': 200,
       'noise_var': 0.1,
       'signal': 2.0,
       'feature_counts': [50, 150, 190, 210, 300, 800]},
 'D': {'n_samples': 40,
       'noise_var': 0.5,
       'signal': 3.0,
       'feature_counts': [5, 20, 35, 45, 60, 120]}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-worked:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# Your parameters: `n_samples` ($n$), `noise_var` ($\sigma^2$), `signal` ($r^2 = |\beta|^2$) and
# `feature_counts` (none of them in $[n-1, n+1]$).
#
# ### 4a. The two branches
#
# With `p, n = sympy.symbols("p n", positive=True)`, give the excess risk of the minimum-norm fit as sympy
# expressions in `p` and `n`, with your variant's $\sigma^2$ and $r^2$ as numbers: `risk_under_expr` (for
# $p \le n - 2$) and `risk_over_expr` (for $p \ge n + 2$).

# %% nbgrader={"grade": false, "grade_id": "answer_expressions", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
p, n = sympy.symbols("p n", positive=True)
noise, signal = sympy.nsimplify(params["noise_var"]), sympy.nsimplify(params["signal"])
risk_under_expr = noise * p / (n - p - 1)
risk_over_expr = signal * (1 - n / p) + noise * n / (p - n - 1)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expressions", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
for _name in ("risk_under_expr", "risk_over_expr"):
    assert isinstance(globals()[_name], sympy.Basic), f"{_name} should be a sympy expression in p and n"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-w5-ridge-double-descent", "check_expressions", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4b. The curve
#
# - `risks`: the excess risk of the minimum-norm fit at each of your `feature_counts`, in order (a list of floats);
# - `best_over_features`: the whole number of features $p \ge n + 2$ with the least risk (an int).

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
n_, s2, r2 = params["n_samples"], params["noise_var"], params["signal"]


def excess_risk(k):
    if k <= n_ - 2:
        return s2 * k / (n_ - k - 1)
    return r2 * (1 - n_ / k) + s2 * n_ / (k - n_ - 1)


risks = [excess_risk(k) for k in params["feature_counts"]]
best_over_features = min(range(n_ + 2, 50 * n_), key=excess_risk)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
assert isinstance(risks, list) and len(risks) == len(params["feature_counts"]), "one risk per feature count"
assert isinstance(best_over_features, numbers.Integral), "best_over_features is a count of features: an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-w5-ridge-double-descent", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4c. The tuned ridge at the threshold
#
# - `ridge_lambda`: the optimal penalty $\lambda_*$ for the summed objective $|y - Xb|^2 + \lambda|b|^2$ at $p = n$ (a float);
# - `ridge_risk_threshold`: the tuned ridge's excess risk at $p = n$ in the proportional limit (a float).

# %% nbgrader={"grade": false, "grade_id": "answer_ridge", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
ridge_lambda = n_ * s2 / r2
ridge_risk_threshold = s2 / 2 * (math.sqrt(1 + 4 * r2 / s2) - 1)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_ridge", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
assert isinstance(ridge_lambda, numbers.Real), "ridge_lambda should be a number"
assert isinstance(ridge_risk_threshold, numbers.Real), "ridge_risk_threshold should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-w5-ridge-double-descent", "check_ridge", globals())
### END HIDDEN TESTS

# %% [markdown]
# Look at your numbers (not graded). How does the risk at your largest `feature_counts` compare with
# your `signal`, the risk of predicting zero, and with the risk at your smallest? Where would a
# practitioner who tuned the penalty have seen a peak? And which of your numbers would change if the
# features carried *new* signal as $p$ grows, as in tds-w1?
