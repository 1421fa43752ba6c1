# %% [markdown]
# # tds-t3-grokking-delay · Why grokking waits: weight decay's clock
#
# *Module TDS Training Dynamics & Scaling · theory*
#
# tds-b4 taught you to read grokking off a log: the training accuracy reaches its ceiling early, the
# validation accuracy sits at chance for a long time and then climbs. This notebook asks *why the
# wait*, and what the competing explanations have in common. The answer they share is not a
# mechanism inside the network but a clock outside it: the optimiser's weight decay, which shrinks
# the weights at a steady rate once nothing else is pushing on them. You will derive how long that
# clock takes to run and how it depends on the learning rate and the decay.
#
# ## 1. Five papers, one shared ingredient
#
# - **Power et al. (2022)** found the phenomenon on small tables of modular arithmetic and group
#   operations, trained with AdamW. Among the interventions they compared, weight decay did the most
#   to shorten the delay and to make generalisation happen at all with little data.
# - **Nanda et al. (2023)** reverse-engineered a one-layer transformer trained on addition modulo
#   113. The network's final algorithm uses a handful of Fourier frequencies and trigonometric
#   identities. Their progress measures split training into three phases: *memorisation* (the
#   training set is fitted by a lookup-table-like solution), *circuit formation* (the Fourier
#   circuit grows while training loss is already near zero), and *cleanup* (the memorising weights
#   are removed, and only then does test loss drop). Weight decay is what drives the cleanup: the
#   generalising circuit reaches the same training loss with a smaller weight norm, so steady
#   shrinking favours it.
# - **Liu et al. (2022/2023, Omnigrok)** put the weight norm at the centre. On a reduced landscape
#   where the norm is held fixed, training and test loss are simple functions of the norm: models at
#   a large norm memorise, models near a particular smaller norm generalise. Starting a network at a
#   large initial norm and letting weight decay bring it down reproduces grokking even on MNIST.
# - **Varma et al. (2023)** explained grokking through *circuit efficiency*: a generalising circuit
#   produces the same logits with a smaller parameter norm than a memorising one, and the memorising
#   circuit's efficiency falls as the dataset grows. Weight decay makes the more efficient circuit
#   win; the delay is the time it takes for that preference to show.
# - **Kumar et al. (2023)** described grokking as a transition from lazy to rich training (see
#   tds-c2): a network first fits the data with nearly fixed features, like a kernel machine, and
#   only later learns features that generalise. How long the lazy phase lasts depends on the scale
#   of the initial weights and of the output; weight decay is one way the norm comes down and the
#   dynamics leave the lazy regime.
#
# The explanations differ in what they say happens inside the network, but they agree on this:
# after the training set is fitted, the *norm of the weights* has to fall before the generalising
# solution takes over, and with decoupled weight decay the speed at which it falls is set by the
# learning rate and the decay coefficient. That is the quantity this notebook computes.
#
# ## 2. The model
#
# PyTorch's `AdamW` (after Loshchilov & Hutter, 2019) applies weight decay *decoupled* from the
# gradient: at each step it first multiplies every weight by $1 - \eta\lambda$, where $\eta$ is the
# learning rate and $\lambda$ the `weight_decay` argument, and then adds Adam's step computed from
# the gradient alone. Two observations make a clock out of that:
#
# - Once the training loss is near zero, the cross-entropy gradient is tiny, and in the directions
#   the loss no longer cares about (the extra norm of a memorising solution) nothing pushes back
#   against the decay.
# - So in those directions the norm is multiplied by the same factor every step, and a product of
#   equal factors is a power of that factor.
#
# From these two facts, work out how many steps $t$ it takes for the norm to fall by a factor $r$:
# first exactly, by solving the equation the repeated product gives, and then to first order in the
# small number $\eta\lambda$, using the leading term of the logarithm's expansion near 1. From the
# first-order form you can read off how the delay scales with $\eta$ and with $\lambda$; part 4b
# asks you to compare two decays.
#
# ## 3. Where the model is too simple
#
# - **Adam does not stop when the gradient is small.** Its step divides the first moment by the root
#   of the second, so a small but consistent gradient still moves the weights by about $\eta$ a step.
#   The clock describes the directions where the gradient has no consistent sign, not every weight.
#   Nanda et al.'s cleanup is gradual for this reason: the memorising weights are pulled down by the
#   decay while the circuit's weights are held up by the loss.
# - **The delay is not only the shrinking.** The circuit has to form first, and the test accuracy
#   jumps only when the memorising part has shrunk enough that the circuit dominates the logits. The
#   shrink factor $r$ that matters is a property of the run, not a constant of nature; the model
#   tells you how the delay *scales*, and how two settings compare, more reliably than its absolute
#   length.
# - **Without weight decay grokking can still happen**, more slowly, through other routes to a small
#   norm (the implicit bias of the optimiser, large initial scales that decay with training, or the
#   lazy-to-rich transition of Kumar et al.). Saying that weight decay is *the* cause of grokking
#   goes beyond what the papers show; saying that it sets the pace of the cleanup when it is present
#   is what they agree on.
# - **Coupled L2 in Adam is a different clock.** If the decay is added to the gradient (plain `Adam`
#   with `weight_decay`), Adam rescales it with everything else and the shrinkage per step no longer
#   has this simple form. That is one reason the grokking literature uses AdamW.
# - A widely repeated summary says that grokking is "sudden". Nanda et al.'s progress measures show
#   that the internal change is gradual and continuous; what is sudden is the test accuracy, which
#   crosses from chance to perfect once the cleanup has gone far enough. Read the delay as the length
#   of a smooth process viewed through a threshold, as in tds-e2.

# %% [markdown]
# ## 4. See the clock run (not your variant)
#
# The cell below runs `torch.optim.AdamW` on a random matrix with the gradient set to zero, which is
# the idealised end of the memorisation phase, and plots the norm of the weights against the step.
# The rate and the decay here are chosen for the picture and are not any variant's.

# %%
import math

import matplotlib.pyplot as plt
import sympy
import torch

torch.set_num_threads(1)


# chapter: include graders.problems.tds_theory.tds_t3_grokking_delay.adamw_zero_gradient_norms


example_norms = adamw_zero_gradient_norms(lr=0.01, weight_decay=0.5, steps=1500)
plt.figure(figsize=(6, 3.2))
plt.plot(example_norms)
plt.yscale("log")
plt.xlabel("step")
plt.ylabel("weight norm / initial norm")
plt.title("AdamW with a zero gradient: lr 0.01, weight decay 0.5")
plt.tight_layout()
plt.show()

# %% [markdown]
# On a log scale the curve is a straight line: the norm falls by the same proportion every step.
# Read off roughly how many steps the example takes to halve the norm, and check it against your
# derivation before you use it on your variant.
#
# ## 5. Your variant

# %% [markdown]
# Run the next cell. It works out which variant you are graded on from your student id. On
# JupyterHub that is your hub user name; on your own machine start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab`. Editing this cell does not change what you are
# graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {'A': {'lr': 0.001, 'weight_decay': 1.0, 'shrink': 10.0, 'other_weight_decay': 0.1},
 'B': {'lr': 0.001, 'weight_decay': 1.0, 'shrink': 3.0, 'other_weight_decay': 0.3},
 'C': {'lr': 0.001, 'weight_decay': 0.01, 'shrink': 2.0, 'other_weight_decay': 0.05},
 'D': {'lr': 0.0006, 'weight_decay': 0.1, 'shrink': 5.0, 'other_weight_decay': 1.0}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-theory:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ### 5a. Derive it
#
# With `eta, lam, r = sympy.symbols("eta lambda r", positive=True)` (the weight decay's symbol is
# named `lambda`), give
# - `steps_expr`: the exact number of steps (as a real number, before rounding) for the weight norm
#   to fall by the factor `r` under the model of section 2;
# - `approx_expr`: its first-order approximation for small $\eta\lambda$.

# %% nbgrader={"grade": false, "grade_id": "answer_expressions", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
eta, lam, r = sympy.symbols("eta lambda r", positive=True)
steps_expr = sympy.log(r) / (-sympy.log(1 - eta * lam))
approx_expr = sympy.log(r) / (eta * lam)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expressions", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
assert isinstance(steps_expr, sympy.Basic), "steps_expr should be a sympy expression in eta, lambda and r"
assert isinstance(approx_expr, sympy.Basic), "approx_expr should be a sympy expression in eta, lambda and r"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-t3-grokking-delay", "check_expressions", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 5b. Compute it
#
# For your variant's `lr` ($\eta$), `weight_decay` ($\lambda$) and `shrink` ($r$):
# - `steps_exact`: the whole number of AdamW steps after which the norm has fallen by at least the
#   factor `shrink` (an int);
# - `steps_first_order`: the first-order approximation of the number of steps (a float, not rounded);
# - `delay_ratio`: how many times as long the exact count is at `other_weight_decay` as at
#   `weight_decay`, with the same rate and shrink factor (a float): the ratio of the two
#   real-valued solutions $t$ of 5a, before either is rounded up to whole steps.

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def _exact(decay):
    return math.log(params["shrink"]) / (-math.log(1 - params["lr"] * decay))


steps_exact = math.ceil(_exact(params["weight_decay"]))
steps_first_order = math.log(params["shrink"]) / (params["lr"] * params["weight_decay"])
delay_ratio = _exact(params["other_weight_decay"]) / _exact(params["weight_decay"])
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
assert isinstance(steps_exact, numbers.Integral), "steps_exact should be an int"
assert isinstance(steps_first_order, numbers.Real), "steps_first_order should be a number"
assert isinstance(delay_ratio, numbers.Real), "delay_ratio should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-t3-grokking-delay", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# Not graded: Nanda et al. train for tens of thousands of full-batch epochs, and their cleanup phase
# lasts a few thousand of them. How does that compare with your variant's count, and what does the
# comparison say about how much the memorising part of the norm has to shrink before the test
# accuracy moves? If you halved the learning rate and doubled the weight decay, what would the
# model predict for the delay, and why might a real run disagree (section 3)?
