# %% [markdown]
# # tds-e9-sharpness-power-iteration · Measuring sharpness: power iteration on Hessian-vector products
#
# *Module TDS Training Dynamics & Scaling · mathematics · exercise 9*
#
# The sharpness of tds-b1 is the largest eigenvalue of the training loss's Hessian, and tds-e1
# showed why it matters: gradient descent is stable along a direction only while its curvature
# is below $2/\eta$. Every plot of progressive sharpening and of the edge of stability is a plot of
# a *measured* sharpness. A network with ten million parameters has a Hessian with $10^{14}$
# entries, which nobody forms. This exercise is about how the number is obtained instead, how
# fast the method converges, and the two ways it quietly gives the wrong answer.
#
# **Hessian-vector products are cheap.** Pearlmutter (*Fast exact multiplication by the Hessian*,
# Neural Computation, 1994) observed that $Hv$ is the directional derivative of the gradient along
# $v$, so it costs about as much as one more gradient: differentiate $g(\theta)^\top v$ with respect
# to $\theta$, with $v$ held fixed. In PyTorch that is two calls to `torch.autograd.grad`, the first
# with `create_graph=True`. Any method that needs only products with $H$ can therefore run on a
# real network.
#
# **Power iteration** is the simplest such method. Start from a random unit vector, and repeat: multiply
# by $H$, normalise. Read off the estimate as the Rayleigh quotient $v^\top H v$. To see what it converges
# to, write the start vector in the Hessian's eigenbasis, $v_0 = \sum_i c_i u_i$. Multiplying $k$ times
# multiplies each component by $\lambda_i^k$. Whichever eigenvalue is largest *in magnitude* wins the race,
# and the others fall behind it geometrically, at a rate set by how far the runner-up trails the leader.
# The Rayleigh quotient is an average of the eigenvalues weighted by the squared components, and a
# squared weight falls twice as fast as the component itself; this is why the eigenvalue estimate
# is much better than the vector it comes from.
#
# **Who uses what.** PyHessian (Yao, Gholami, Keutzer and Mahoney, IEEE Big Data 2020) computes the top
# eigenvalue by exactly this power iteration, and stops when two successive estimates differ by less
# than a relative tolerance (its defaults: a tolerance of one in a thousand and at most a hundred
# products). It is often said that Cohen et al. (ICLR 2021) measured the sharpness along their
# edge-of-stability runs the same way. Their released code does not: it hands the Hessian-vector
# product to the Lanczos method (SciPy's `eigsh`, ARPACK) and asks for the top few eigenvalues. Lanczos
# uses the same products but keeps all the vectors it has seen, and converges much faster when the
# top eigenvalues are close. The two measure the same quantity; the question of how many products
# you need, and when to trust the answer, is what differs.
#
# **Two ways to be wrong.** First, a *near-tie* at the top: when the two largest eigenvalues are close,
# the runner-up falls behind very slowly, and a stopping rule that watches the change between successive
# estimates sees small changes and stops, although the estimate is still far from converged. Second,
# a *negative eigenvalue of larger magnitude*: power iteration does not know that you wanted the largest
# eigenvalue; it finds the largest in size. A network's Hessian away from a minimum is not positive
# definite, and nothing makes its negative eigenvalues smaller in size than its top positive one
# (Ghorbani, Krishnan and Xiao, ICML 2019, estimate the whole spectrum, negative part included, along
# training); when one is larger, the "sharpness" the method reports is a negative number, or, if one takes its
# absolute value, a curvature of the wrong sign. The remedy is a shift: run it again on $H + cI$
# with $c$ the magnitude just found, so that the most negative direction moves to zero and the most
# positive one becomes the largest; or use Lanczos, which gives both ends of the spectrum at once.
#
# Questions to settle on paper before you write any code:
# - After $k$ products, what is the ratio of the runner-up's component to the leader's, relative to
#   where it started? Call $\rho$ the ratio of the runner-up's magnitude to the leader's.
# - With just two directions of equal starting weight, and both eigenvalues positive, what is the relative
#   error of the Rayleigh quotient after $k$ products, exactly? What does it look like to leading
#   order in $\rho$, and how many products does that suggest for a given tolerance?
# - Why can the exact count be much smaller than that leading-order count when $\rho$ is close to one?
# - When successive estimates differ by a small relative amount, how large can the remaining error be?

# %% [markdown]
# ## Worked example: power iteration on a small quadratic (not your variant)
#
# A quadratic loss in four parameters with Hessian eigenvalues 12, 9, 2 and $-5$, hidden behind a
# random rotation so that the code cannot read them off. The Hessian-vector product is computed the
# way one would on a network, by differentiating the gradient; the loop prints the Rayleigh quotient
# after each product.

# %%
import math

import sympy
import torch

torch.manual_seed(0)
ex_Q, _ = torch.linalg.qr(torch.randn(4, 4, dtype=torch.float64))
ex_H = ex_Q @ torch.diag(torch.tensor([12.0, 9.0, 2.0, -5.0], dtype=torch.float64)) @ ex_Q.T
ex_theta = torch.randn(4, dtype=torch.float64, requires_grad=True)


def ex_loss(theta):
    return 0.5 * theta @ ex_H @ theta


def ex_hvp(v):
    grad = torch.autograd.grad(ex_loss(ex_theta), ex_theta, create_graph=True)[0]
    return torch.autograd.grad(grad @ v, ex_theta)[0]     # Pearlmutter: d/dθ (g(θ)·v)


ex_v = torch.randn(4, dtype=torch.float64)
ex_v = ex_v / ex_v.norm()
for step in range(12):
    ex_Hv = ex_hvp(ex_v)
    print(f"after {step:2d} products: Rayleigh quotient {float(ex_v @ ex_Hv):.6f}")
    ex_v = ex_Hv / ex_Hv.norm()

# %% [markdown]
# The estimate climbs toward 12 and gains a roughly constant number of correct digits per product,
# which is what a geometric rate looks like. Try replacing $-5$ by $-15$ in the example and running it
# again: the same code now converges, just as steadily, to the wrong end of the spectrum.

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

VARIANTS = {'A': {'eigenvalues': [220.0, 160.0, 95.0, 40.0, -25.0], 'tol': 0.001, 'max_iter': 100},
 'B': {'eigenvalues': [104.0, 101.0, 60.0, -8.0], 'tol': 0.001, 'max_iter': 100},
 'C': {'eigenvalues': [40.0, 25.0, 12.0, -65.0], 'tol': 0.001, 'max_iter': 100},
 'D': {'eigenvalues': [2000.0, 1400.0, -1700.0, 300.0], 'tol': 0.0001, 'max_iter': 200}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-exercises:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# Your parameters: `eigenvalues`, the Hessian's eigenvalues along the directions the start vector
# touches (the start vector has **equal weight on each**; the spectra are illustrative, shaped like
# the reported ones: a top eigenvalue near $2/\eta$, a near-tie, a negative eigenvalue early in
# training), `tol`, and `max_iter`, the cap on products. "After $k$ products" means the vector has been
# multiplied $k$ times before the quotient is read, so the estimate after 0 products is $v_0^\top H v_0$.
#
# ### Derive it
#
# With `rho, k, tol = sympy.symbols("rho k tol", positive=True)`, give
# - `rayleigh_error_expr`: the exact relative error $(\lambda_1 - R_k)/\lambda_1$ of the Rayleigh quotient
#   after `k` products, for two directions of equal starting weight with $\lambda_2 = \rho\lambda_1$, $0 < \rho < 1$;
# - `iterations_expr`: the number of products at which the leading-order term of that error (the power of
#   $\rho$ alone) equals `tol`.

# %% nbgrader={"grade": false, "grade_id": "answer_expressions", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
rho, k, tol = sympy.symbols("rho k tol", positive=True)
rayleigh_error_expr = sympy.simplify(1 - (1 + rho ** (2 * k + 1)) / (1 + rho ** (2 * k)))
iterations_expr = sympy.log(tol) / (2 * sympy.log(rho))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expressions", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
for _name in ("rayleigh_error_expr", "iterations_expr"):
    assert isinstance(globals()[_name], sympy.Basic), f"{_name} should be a sympy expression"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-e9-sharpness-power-iteration", "check_expressions", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Compute it
#
# For your variant's spectrum and `tol`:
# - `found_eigenvalue`: the eigenvalue power iteration converges to (a float);
# - `convergence_ratio`: $\rho$, the ratio that sets its speed (a float);
# - `iterations_estimate`: the leading-order count of products for a relative error of `tol`, rounded up (an int);
# - `iterations_needed`: the fewest products after which the Rayleigh quotient's relative error, measured
#   against `found_eigenvalue`, is at most `tol`, exactly, for your equal-weight start (an int).

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
lams = params["eigenvalues"]


def quotient(n):
    top = max(abs(x) for x in lams)
    return sum((x / top) ** (2 * n) * x for x in lams) / sum((x / top) ** (2 * n) for x in lams)


by_size = sorted(lams, key=abs, reverse=True)
found_eigenvalue = by_size[0]
convergence_ratio = abs(by_size[1]) / abs(by_size[0])
iterations_estimate = math.ceil(math.log(params["tol"]) / (2 * math.log(convergence_ratio)))
iterations_needed = next(n for n in range(100_000)
                         if abs(quotient(n) - found_eigenvalue) / abs(found_eigenvalue) <= params["tol"])
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
for _name in ("found_eigenvalue", "convergence_ratio"):
    assert isinstance(globals()[_name], numbers.Real), f"{_name} should be a number"
for _name in ("iterations_estimate", "iterations_needed"):
    assert isinstance(globals()[_name], numbers.Integral), f"{_name} is a count of products: an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-e9-sharpness-power-iteration", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### When does the usual stopping rule stop?
#
# PyHessian's rule: after each product $k \ge 1$, stop as soon as $|R_k - R_{k-1}| / |R_{k-1}|$ is below
# `tol`; if that never happens, stop at $k$ = `max_iter` - 1 (its last estimate). Give
# - `stop_iteration`: the $k$ at which it stops (an int);
# - `error_at_stop`: the true relative error of $R_k$ there, against `found_eigenvalue` (a float).
#
# (PyHessian's code, when it stops, returns the estimate before the last one, $R_{k-1}$, which is a
# little further off; the question takes $R_k$, the newest estimate the rule has seen.)

# %% nbgrader={"grade": false, "grade_id": "answer_stopping", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
stop_iteration = params["max_iter"] - 1
for n in range(1, params["max_iter"]):
    if abs(quotient(n) - quotient(n - 1)) / abs(quotient(n - 1)) < params["tol"]:
        stop_iteration = n
        break
error_at_stop = abs(quotient(stop_iteration) - found_eigenvalue) / abs(found_eigenvalue)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_stopping", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
assert isinstance(stop_iteration, numbers.Integral), "stop_iteration is a count of products: an int"
assert isinstance(error_at_stop, numbers.Real), "error_at_stop should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-e9-sharpness-power-iteration", "check_stopping", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## Reading your numbers
#
# Compare `iterations_estimate` with `iterations_needed`. The leading-order count ignores the prefactor
# of the error, and that prefactor carries a factor that vanishes as the two top eigenvalues merge: when
# they are nearly equal, the quotient is close to the top eigenvalue even while the vector is still a
# mixture of the two directions. For the *eigenvalue* a near-tie is therefore less harmful than it looks;
# for the *eigenvector*, which is what an analysis of the edge of stability projects the iterates onto,
# it is as slow as the ratio says, and a vector that is half one direction and half the other is not the
# top eigenvector in any useful sense.
#
# Then compare `error_at_stop` with `tol`. Near a tie, the change between successive estimates shrinks
# by the same factor as the error itself, so the rule sees a small change while much of the distance
# still lies ahead; the error it leaves can be many times the tolerance it was given. A safer rule
# checks the residual $\|Hv - Rv\|$, which bounds the distance of $R$ to *some* eigenvalue, or simply uses
# Lanczos, as Cohen et al. did.
#
# Finally, look at `found_eigenvalue`. If your spectrum has a negative eigenvalue larger in size than the
# top positive one, the method has measured the wrong thing, and a plot of "sharpness" built on it would
# show a curvature that gradient descent does not find unstable at all: along a negative direction the
# loss falls away, it does not oscillate. The edge-of-stability threshold of tds-e1 concerns the largest
# *positive* eigenvalue, and it is worth running the shifted iteration, or checking the sign, every time.
#
# In a real measurement the start vector is random, not equally weighted, and on a network with
# millions of parameters the top direction's starting component is tiny (about one over the square root
# of the dimension), which adds a few products to every count here; and the Hessian itself changes as
# training moves, so a measurement is only as current as the parameters it was taken at.
