# %% [markdown]
# # tds-t2-ntk-linearisation · Why a wide network trains like its linearisation
#
# *Module TDS Training Dynamics & Scaling · theory*
#
# tds-c2 gives the picture: as a network in the NTK parametrisation widens, its weights move less and
# less while its outputs still fit the data. This notebook gives the theory behind the picture and
# what it predicts, direction by direction, for training on squared loss. The prediction is exact
# for the linearised model and, for a wide enough network, close for the real one; you will derive
# it and then check it on a real network that you can train on a CPU in a fraction of a second.
#
# ## 1. The tangent kernel
#
# Let $f(x; \theta)$ be the network's output and $x_1, \dots, x_n$ the training inputs. Collect the
# outputs on the training set into a vector $f(\theta)$ and write $J$ for its Jacobian with respect
# to all the parameters, one row per training point. The **neural tangent kernel** on the training
# set is the $n \times n$ matrix $\Theta = J J^\top$: entry $(k, l)$ is the inner product of the
# gradients of the outputs at $x_k$ and at $x_l$. It measures how much a step that changes the output
# at $x_l$ also changes it at $x_k$.
#
# Take the loss $\tfrac12 \sum_k (f(x_k) - y_k)^2$, summed over the training points, and write
# $u = f(\theta) - y$ for the residual. Gradient descent moves the parameters by $-\eta J^\top u$;
# to first order, the outputs then move by $J$ times that, which is $-\eta \Theta u$. So *as long as
# $\Theta$ does not change*, the residual evolves by a fixed linear map. That is the whole content
# of "training like the linearisation": replace the network by its first-order Taylor expansion
# around the initial parameters, and the dynamics become those of a kernel machine with kernel
# $\Theta$. (Some papers divide the loss by $n$; their kernel then carries a $1/n$ and their
# eigenvalues are $n$ times smaller. The variants here use the summed loss.)
#
# ## 2. Why the kernel is fixed in the limit
#
# Jacot, Gabriel and Hongler (2018) proved two facts about networks in the NTK parametrisation, where
# each layer's output is divided by the square root of its fan-in and the learning rate does not
# change with width. First (their Theorem 1), as the widths go to infinity the kernel at
# initialisation converges to a deterministic limit that depends only on the architecture, not on
# the random draw. Second (their Theorem 2), during training by gradient descent for a fixed time
# the kernel stays equal to that limit: each individual weight moves by an amount that vanishes with
# width, so the Jacobian, and with it $\Theta$, does not change, even though the outputs change by a
# finite amount because many small moves add up. Lee et al. (2019) turned this into a statement at
# finite width: the network's outputs during training stay within a distance of order one over the
# square root of the width of the outputs of the linearised model, for the whole of training, and
# they showed it on real architectures.
#
# ## 3. The route to the prediction
#
# Because $\Theta$ is symmetric and positive semi-definite, it has an orthonormal basis of
# eigenvectors $v_i$ with eigenvalues $\mu_i \ge 0$ (the course keeps $\lambda$ for weight decay).
# Write the residual in that basis. The linear map in section 1 acts on each coordinate separately,
# so each component evolves on its own, at a rate set by its own eigenvalue. From there:
#
# - Under **gradient flow** (the limit of small steps, with time measured in units of $\eta$), write
#   the differential equation one component obeys and solve it.
# - Under **gradient descent** with a finite rate, write what one step does to one component, and
#   what $t$ steps do. That is the same one-dimensional recursion as tds-c1's quadratic, with the
#   eigenvalue in place of the curvature.
# - **Stability.** Find the condition on $\eta$ under which every component shrinks. Which
#   eigenvalue decides it? Compare with tds-b1 (the sharpness is the largest eigenvalue of the
#   Hessian) and tds-e1 (the edge of stability): for squared loss at a point that fits the data, the
#   Hessian is $J^\top J$, which has the same non-zero eigenvalues as $\Theta = J J^\top$, so the two
#   bounds are the same bound seen from two sides.
# - **Speed.** Count the steps for a component to shrink by a factor $r$ under each of the two
#   dynamics. The flow gives a smooth formula; the discrete count is a whole number, and for a
#   component whose $\eta\mu_i$ is not small the two disagree, sometimes by a lot.
#
# The consequence to carry away: training fits the top eigendirections of the kernel first and the
# bottom ones last, and the rate cannot be raised to speed up the slow directions because the fast
# one sets the stability bound. The ratio of the largest to the smallest eigenvalue (the condition
# number) is what makes a kernel slow to fit. For real kernels the eigenvalues fall off quickly, so
# the fine detail of the targets, which lives in the bottom directions, is learned last or not at all
# in the time available: the *spectral bias* of wide networks.
#
# ## 4. When it fails
#
# - **Finite width.** The deviation from the linearised model is of order one over the square root of
#   the width. The experiment below shows it at a narrow width and at a wide one.
# - **Large rates.** Past the stability bound the linearised model diverges, but a real network can
#   do something the linearisation cannot: its kernel changes. Lewkowycz et al. (2020) found a
#   *catapult* phase just above the bound in which the loss first grows, the kernel's top eigenvalue
#   falls, and training then converges in a flatter region. The NTK prediction holds only below the
#   bound.
# - **Other parametrisations.** Under muP or the mean-field scaling the features move by a
#   width-independent amount and the kernel evolves; the linearisation does not describe training
#   at any width (tds-c2, tds-t1).
# - **It is not the whole story of deep learning.** That a wide network trains like a kernel machine
#   does not mean that practical networks do: Chizat, Oyallon and Bach (2019) showed that the kernel
#   regime comes from the scaling, not from width alone, and that networks in it usually do worse
#   than the same networks trained with their features moving.

# %% [markdown]
# ## 5. The real network against its linearisation (not your variant)
#
# The cell below builds a two-layer ReLU network in the NTK parametrisation on seven points of the
# unit sphere in three dimensions (a dataset no variant uses), computes its tangent kernel, trains
# the network by full-batch gradient descent, and compares the residual after each step with what
# the fixed-kernel linear map predicts, at a narrow and at a wide width.

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import sympy


# chapter: include graders.problems.tds_theory.tds_t2_ntk_linearisation.sphere_points
# chapter: include graders.problems.tds_theory.tds_t2_ntk_linearisation.two_layer
# chapter: include graders.problems.tds_theory.tds_t2_ntk_linearisation.empirical_ntk
# chapter: include graders.problems.tds_theory.tds_t2_ntk_linearisation.train_two_layer


example_x = sphere_points(7, 3, seed=11)
example_y = np.sin(3 * example_x[:, 0]) + example_x[:, 1]
plt.figure(figsize=(6, 3.4))
for width in (32, 4096):
    w0, a0 = two_layer(width, 3, seed=11)
    kernel = empirical_ntk(example_x, w0, a0)
    rate = 0.5 / np.linalg.eigvalsh(kernel).max()
    residuals = train_two_layer(example_x, example_y, w0, a0, rate, steps=30)
    step_map = np.eye(len(example_y)) - rate * kernel
    gap = [np.linalg.norm(residuals[t] - np.linalg.matrix_power(step_map, t) @ residuals[0])
           / np.linalg.norm(residuals[0]) for t in range(31)]
    plt.plot(gap, label=f"width {width}")
plt.xlabel("step")
plt.ylabel("|network - linearised| / |initial residual|")
plt.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# The wide network stays within a small fraction of its linearisation for the whole run; the narrow
# one drifts away, because its kernel changes as it trains.
#
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

VARIANTS = {'A': {'points': 6, 'dim': 3, 'seed': 0, 'lr': 0.7, 'shrink': 100.0,
       'eigenvalues': [2.7155, 1.6067, 1.0154, 0.3468, 0.2073, 0.1093]},
 'B': {'points': 8, 'dim': 5, 'seed': 1, 'lr': 0.5, 'shrink': 1000.0,
       'eigenvalues': [2.2139, 1.6038, 1.1758, 1.0313, 0.9182, 0.4769, 0.3926, 0.228]},
 'C': {'points': 5, 'dim': 2, 'seed': 2, 'lr': 0.3, 'shrink': 50.0,
       'eigenvalues': [2.7767, 1.2499, 0.7315, 0.2809, 0.0191]},
 'D': {'points': 10, 'dim': 4, 'seed': 3, 'lr': 0.6, 'shrink': 10.0,
       'eigenvalues': [3.1416, 2.2757, 1.7266, 0.9445, 0.6323, 0.4347, 0.3856, 0.1423, 0.0903, 0.0741]}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-theory:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# Your variant's `eigenvalues` are those of the tangent kernel of a width-4096 network built as above
# on `points` points in `dim` dimensions (with its `seed`); you can recompute them with the functions
# of section 5, but you do not need to. The printed values, rounded to four decimals, are the
# ones your answers are graded against: compute from `params["eigenvalues"]`, not from a
# recomputation, whose fifth decimal differs.
#
# ### 6a. Derive it
#
# With `eta, mu, t = sympy.symbols("eta mu t", positive=True)`, give, for a component of the residual
# along an eigenvector with eigenvalue `mu`, its value divided by its initial value:
# - `gd_residual_expr`: after `t` steps of gradient descent at rate `eta` on the linearised model;
# - `flow_residual_expr`: under gradient flow, after time `t` measured in steps (the flow that those
#   steps approximate).

# %% nbgrader={"grade": false, "grade_id": "answer_expressions", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
eta, mu, t = sympy.symbols("eta mu t", positive=True)
gd_residual_expr = (1 - eta * mu) ** t
flow_residual_expr = sympy.exp(-eta * mu * t)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expressions", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
assert isinstance(gd_residual_expr, sympy.Basic), "gd_residual_expr should be a sympy expression in eta, mu and t"
assert isinstance(flow_residual_expr, sympy.Basic), "flow_residual_expr should be a sympy expression in eta, mu and t"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-t2-ntk-linearisation", "check_expressions", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 6b. Compute it
#
# For your variant's `eigenvalues`, `lr` and `shrink` ($r$):
# - `stability_bound`: the largest rate at which gradient descent on the linearised model converges
#   (a float);
# - `gd_steps`: for each eigenvalue, in the given order, the fewest whole steps of gradient descent at
#   `lr` after which that component's magnitude has fallen by at least the factor `shrink` (a list of
#   ints);
# - `flow_steps`: for each eigenvalue, the gradient-flow estimate of the same number of steps (a list
#   of floats, not rounded).

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
stability_bound = 2 / max(params["eigenvalues"])
gd_steps = [math.ceil(math.log(params["shrink"]) / -math.log(abs(1 - params["lr"] * m)))
            for m in params["eigenvalues"]]
flow_steps = [math.log(params["shrink"]) / (params["lr"] * m) for m in params["eigenvalues"]]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
assert isinstance(stability_bound, numbers.Real), "stability_bound should be a number"
for _name in ("gd_steps", "flow_steps"):
    assert isinstance(globals()[_name], list) and len(globals()[_name]) == len(params["eigenvalues"]), \
        f"{_name} should be a list with one entry per eigenvalue"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-t2-ntk-linearisation", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# Not graded: which of your components does the flow estimate get most wrong, and why that one? Find
# the component whose residual changes sign at every step. How many times as many steps does the
# slowest component need as the fastest, and what would you have to change about the kernel (not the
# rate) to close that gap?
