# %% [markdown]
# # tds-e5-adam-warmup · Why Adam needs warmup: the first steps of its second-moment average
#
# *Module TDS Training Dynamics & Scaling · mathematics · exercise*
#
# Almost every transformer is trained with a learning-rate warmup: the rate starts near zero and
# rises to its peak over the first few hundred or thousand steps. II.8's t4-warmup-and-wsd gives
# one reason, from curvature: early in training the sharpness is high, and a small rate keeps
# the product of the two under the stability threshold. This exercise quantifies a second,
# independent reason that is specific to Adam and its relatives: in the first steps, the
# denominator of Adam's update is estimated from very few squared gradients, so the *adaptive*
# rate is itself a noisy random number.
#
# Adam divides each coordinate's momentum by the square root of $v_t$, an exponential moving
# average of the squared gradients with decay $\beta_2$, corrected for its start at zero by the
# factor $1/(1-\beta_2^t)$. After one step, $v_1$ is a single squared gradient. If that gradient
# happens to be small, the step in that coordinate is huge; the bias correction does nothing
# about this, because it fixes the *mean* of the estimate, not its spread. Liu, Jiang, He, Chen,
# Liu, Gao and Han (*On the Variance of the Adaptive Learning Rate and Beyond*, ICLR 2020) made
# the argument precise and turned it into an optimiser, RAdam. Ma and Yarats (*On the Adequacy
# of Untuned Warmup for Adaptive Optimization*, AAAI 2021) then showed that a plain linear warmup
# whose length is read off $\beta_2$ does about as well. You will compute both.
#
# ## The route of Liu et al.'s argument
#
# 1. **Model the gradients.** Take each coordinate's gradients as independent draws from a
#    normal distribution with mean zero. Then a *simple* moving average of the last $f$ squared
#    gradients, divided by the variance, follows a chi-square distribution with $f$ degrees of
#    freedom, and one over its square root, the adaptive rate, follows a scaled inverse
#    chi distribution.
# 2. **The variance of the adaptive rate.** That distribution's variance is infinite when the
#    degrees of freedom are few, becomes finite once $f$ passes a small threshold, and then falls
#    as $f$ grows. So the adaptive rate is wild at the start and settles later.
# 3. **Replace the exponential average by a simple one.** An exponential average is not a simple
#    one, so Liu et al. match them: they choose the length $f$ of a simple moving average whose
#    *centre of mass* (the average age of the gradients it holds) equals that of the
#    bias-corrected exponential average over its first $t$ steps. That length is the quantity
#    $\rho_t$ of the paper; its limit as $t \to \infty$ is $\rho_\infty$.
# 4. **Rectify.** Once $\rho_t$ is past the threshold, RAdam multiplies the adaptive step by a
#    factor $r_t$ that rescales the variance at length $\rho_t$ to the variance at length
#    $\rho_\infty$; before that, it takes a plain momentum step with no adaptive denominator at all.
#
# The threshold, in their Algorithm 2, is $\rho_t > 4$, and the factor is
#
# $$ r_t = \sqrt{\frac{(\rho_t - 4)(\rho_t - 2)\,\rho_\infty}{(\rho_\infty - 4)(\rho_\infty - 2)\,\rho_t}}. $$
#
# Deriving $\rho_\infty$ and $\rho_t$ is your job. Questions to settle on paper:
# - For an exponential average with decay $\beta_2$ running forever, what is the average age of
#   the squared gradients it holds (the newest has age one)? What is the average age in a simple
#   average of length $f$? Set them equal and solve for $f$.
# - Over only the first $t$ steps the exponential weights do not sum to one; what do they sum to,
#   and how does normalising by it change the average age? Solve for the matching length again.
# - At $t = 1$ the average holds one gradient. What should your $\rho_1$ be, whatever $\beta_2$?
#
# ## What to expect, and a widely repeated slip
#
# Early on, $\rho_t$ grows almost exactly like $t$, for any $\beta_2$ close to one: one more step is
# one more gradient in the average. So the first rectified step hardly depends on $\beta_2$. What
# does depend on $\beta_2$ is how long the rectification keeps the step well below Adam's: the
# factor approaches one only once $\rho_t$ is a good fraction of $\rho_\infty$, and $\rho_\infty$ is
# large when $\beta_2$ is close to one. That is the length of RAdam's built-in warmup.
#
# The threshold is often misquoted. The paper's Algorithm 2 rectifies when $\rho_t > 4$, where the
# variance of the adaptive rate first becomes finite. The authors' released code, and PyTorch's
# `torch.optim.RAdam` (whose documentation prints the algorithm), switch at $\rho_t > 5$ instead,
# which delays the first adaptive step by one. Neither is wrong as engineering, but they are not
# the same rule, and this exercise grades the paper's.
#
# ## Ma and Yarats: the variance story is not the whole story
#
# Ma and Yarats argue that what matters for stability is the *size of the update*, not the
# variance of the denominator. Even with no noise at all, the very first Adam steps have
# magnitude close to the learning rate in every coordinate, because the ratio of the first
# moment to the root of the second is close to one in size. They propose two untuned schedules
# whose only parameter is $\beta_2$: an exponential warmup with time constant
# $(1-\beta_2)^{-1}$, and a linear warmup over twice that many steps, and they find either
# matches RAdam across image classification, language modelling and translation. Their advice,
# printed in the abstract, is the linear one. Note what the rule implies: a run with a
# $\beta_2$ close to one needs a long warmup, and runs with $\beta_2 = 0.95$, as in GPT-3 and
# Llama 2, need a short one by this rule. Practitioners often warm up for much longer than the
# rule says, for the curvature reason of t4-warmup-and-wsd, which this rule does not address.
#
# ## When the model fails
#
# The derivation assumes gradients that are independent, normal and of mean zero in each
# coordinate. Real gradients have a mean, especially early, and are correlated across steps; when
# the mean is large compared with the noise, the adaptive rate is far less variable than the model
# says (the RAdam authors note this themselves). The SMA length is an approximation too: an
# exponential average is not a simple one, and matching the centre of mass is one choice among
# several. Treat $\rho_t$ as a measure of how many gradients the estimate effectively holds, not as
# an exact count of degrees of freedom.

# %% [markdown]
# ## Worked example: what one squared gradient does (not your variant)
#
# A coordinate whose gradients are standard normal, with $\beta_2 = 0.9$ (no variant uses it). We
# simulate the bias-corrected second moment after a few steps, over many seeds, and look at how
# widely the adaptive rate $1/\sqrt{\hat v_t}$ spreads. No SMA length is computed here.

# %%
import math

import numpy as np
import sympy

ex_rng = np.random.default_rng(0)
ex_beta2, ex_runs = 0.9, 20000
for ex_t in (1, 3, 10, 50):
    ex_g = ex_rng.standard_normal((ex_runs, ex_t))
    ex_weights = (1 - ex_beta2) * ex_beta2 ** np.arange(ex_t - 1, -1, -1)
    ex_v_hat = (ex_g ** 2 @ ex_weights) / (1 - ex_beta2 ** ex_t)
    ex_rate = 1 / np.sqrt(ex_v_hat)
    print(f"step {ex_t:>2}: median rate {np.median(ex_rate):6.2f}, "
          f"99th percentile {np.percentile(ex_rate, 99):8.1f}, largest {ex_rate.max():9.0f}")

# %% [markdown]
# The median barely moves, but the tail is enormous after one step and shrinks as the average
# fills up: after one step, one coordinate in a hundred gets a step tens of times the typical one,
# and the worst of twenty thousand gets thousands of times. With millions of parameters, such
# coordinates are certain to exist. That tail is what a warmup, or RAdam's rectification, keeps
# from wrecking the first updates.

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

VARIANTS = {'A': {'beta2': 0.999, 'steps': [1, 5, 10, 100, 1000], 'target': 0.9},
 'B': {'beta2': 0.98, 'steps': [2, 6, 20, 50, 200], 'target': 0.9},
 'C': {'beta2': 0.95, 'steps': [3, 5, 8, 40, 100], 'target': 0.95},
 'D': {'beta2': 0.99, 'steps': [4, 7, 25, 150, 500], 'target': 0.8}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-exercises:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ### Derive it
#
# With `t, beta2 = sympy.symbols("t beta2", positive=True)`, give
# - `rho_t_expr`: the length $\rho_t$ of the simple moving average matched to Adam's bias-corrected
#   second-moment average after $t$ steps, in `t` and `beta2`.

# %% nbgrader={"grade": false, "grade_id": "answer_expression", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
t, beta2 = sympy.symbols("t beta2", positive=True)
rho_t_expr = 2 / (1 - beta2) - 1 - 2 * t * beta2**t / (1 - beta2**t)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expression", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the value is checked when your notebook is graded.
assert isinstance(rho_t_expr, sympy.Basic), "rho_t_expr should be a sympy expression"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-e5-adam-warmup", "check_expression", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Compute it
#
# For your variant's `beta2`, `steps` and `target`:
# - `rho_inf`: the limit $\rho_\infty$ (a float);
# - `rho_t`: $\rho_t$ at each step in `steps`, in that order (a list of floats);
# - `first_rectified_step`: the first step $t$ at which Liu et al.'s Algorithm 2 applies the rectified adaptive step (an int);
# - `steps_to_target`: the first step at which the rectification factor $r_t$ is at least `target` (an int);
# - `warmup_steps`: the length of Ma and Yarats' untuned linear warmup (a float).

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_b2 = params["beta2"]
rho_inf = 2 / (1 - _b2) - 1


def _rho(step):
    return rho_inf - 2 * step * _b2**step / (1 - _b2**step)


def _rect(step):
    r = _rho(step)
    return math.sqrt((r - 4) * (r - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * r)) if r > 4 else 0.0


rho_t = [_rho(step) for step in params["steps"]]
first_rectified_step = next(step for step in range(1, 10**6) if _rho(step) > 4)
steps_to_target = next(step for step in range(first_rectified_step, 10**6) if _rect(step) >= params["target"])
warmup_steps = 2 / (1 - _b2)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
assert isinstance(rho_inf, numbers.Real), "rho_inf should be a number"
assert isinstance(rho_t, list) and len(rho_t) == len(params["steps"]), "one rho_t per step in steps"
assert isinstance(first_rectified_step, numbers.Integral), "first_rectified_step is a step: an int"
assert isinstance(steps_to_target, numbers.Integral), "steps_to_target is a step: an int"
assert isinstance(warmup_steps, numbers.Real), "warmup_steps should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-e5-adam-warmup", "check_numbers", globals())
### END HIDDEN TESTS
