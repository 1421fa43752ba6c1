# %% [markdown]
# # tds-b6-lazy-training · How far did the weights actually move?
#
# *Module TDS Training Dynamics & Scaling · basics · term 6 of 11*
#
# **Lazy training (the kernel regime).** Training is *lazy* when, by the end of the run, every
# weight matrix is still close to its initial value *relative to its own size*. The number that
# measures it is the **relative change** of a weight matrix over the run,
#
# $$\frac{\lVert W_T - W_0 \rVert_F}{\lVert W_0 \rVert_F},$$
#
# the Frobenius norm of the change divided by the Frobenius norm of the starting matrix. When it
# is small for every layer, the network is, for the whole run, very nearly its own first-order
# Taylor expansion around $W_0$: a model that is linear in its parameters, trained on fixed
# features. Those features are the gradients of the output with respect to the weights at
# initialisation, and their inner products form the **neural tangent kernel** (NTK) of Jacot,
# Gabriel and Hongler (2018, *Neural Tangent Kernel*, NeurIPS). A lazy network trains like a
# kernel machine with that kernel, which stays fixed during training.

# %% [markdown]
# ## Why width makes a network lazy
#
# Jacot et al. showed that in the *NTK parametrisation* (unit-variance Gaussian weights, each
# layer's output divided by the square root of its fan-in) the tangent kernel becomes constant
# during training as the width goes to infinity. Lee et al. (2019, *Wide Neural Networks of Any
# Depth Evolve as Linear Models Under Gradient Descent*, NeurIPS) turned that into a statement
# about the whole training trajectory: the wide network and its linearisation follow the same
# path, and the weights barely move.
#
# You can see the size of "barely" by counting, for the input-to-hidden matrix of a two-layer
# network of width $n$ on $d$ inputs. The readout divides by $\sqrt{n}$, so the gradient reaching
# any one hidden unit carries a factor of order $1/\sqrt{n}$; each of the $n$ rows of the matrix
# therefore moves by an amount of order $1/\sqrt{n}$ over a run of fixed length at a fixed rate,
# and the whole change, summed over $n$ rows, has a Frobenius norm of order one. The starting
# matrix has $nd$ unit-variance entries, so its norm grows like the square root of $nd$. Put
# the two together and the relative change falls like one over the square root of the width:
# four times wider, half the relative movement. The network still fits its data, because
# many small moves of many units add up in the output; no single weight has to travel far.
#
# The count assumes the same number of steps and the same rate at every width, which is
# exactly what the NTK parametrisation allows: its stable rate does not depend on the width.
# It is a statement about this matrix and this norm. For a square hidden-to-hidden matrix the
# same bookkeeping gives a Frobenius ratio that falls faster with width, while its spectral-norm
# ratio falls like the one above; always say which matrix and which norm a reported number is.

# %% [markdown]
# ## Lazy is not the same as wide
#
# Chizat, Oyallon and Bach (2019, *On Lazy Training in Differentiable Programming*, NeurIPS)
# showed that laziness is not a property of width at all but of scale: multiply a model's output
# by a large factor (and shrink the rate to match) and *any* model, narrow or wide, trains
# lazily. Width in the NTK parametrisation is one way of turning up that factor. Their
# experiments also show the price: networks pushed into the lazy regime generalise worse on
# real image tasks than the same networks trained normally, because a kernel machine cannot
# learn new features; it can only reweight the ones it was born with. Luo, Xu, Ma and Zhang (2021,
# *Phase Diagram for Two-layer ReLU Neural Networks at Infinite-width Limit*, JMLR) use exactly
# this item's number, the relative change of a two-layer network's input weights as the width
# grows, to map the regimes: it tends to zero in the linear (lazy) regime, stays of order one in
# a critical regime, and grows without bound in a condensed regime where the hidden units
# gather along a few directions. Which regime a network is in depends on how its initialisation
# scales with width.
#
# That is the point of the concept for this module. A real network that performs well is
# usually *not* lazy: its first layers end far from where they started, and the features
# they compute change. The muP parametrisation of tds-b5 and tds-t1 is built to keep that
# feature learning alive at every width, with each layer's update of a size that does not
# vanish as the model grows. Measuring the relative change is how you tell, from a checkpoint
# pair, which regime a run was in.
#
# Two common slips when reading such numbers. First, the change of the *norm*,
# $\lVert W_T\rVert - \lVert W_0 \rVert$, is not the norm of the *change*: a matrix can turn a long
# way while its length hardly moves, and in the lazy regime the two norms often agree to three
# digits while the change is a few per cent. Second, the ratio is taken against the starting
# matrix; against the final one it is nearly the same number in the lazy regime, which is
# exactly why mixing them up goes unnoticed until the run is not lazy.
#
# A widely repeated claim is that "infinitely wide networks do not learn features, so width
# is bad". The theory says that *in the NTK parametrisation* the limit is a kernel; in muP
# the same width limit keeps learning features. Which limit you get is a choice of
# parametrisation, not a fact about width.

# %% [markdown]
# ## Worked example (not your variant)
#
# A run of width 512 whose input matrix started with norm 400, ended with norm 400.4, and moved
# by a change of norm 10. The law predicts the relative change at other widths.

# %%
ex_width, ex_init, ex_final, ex_change = 512, 400.0, 400.4, 10.0
ex_relative = ex_change / ex_init
print(f"relative change: {ex_relative:.4f}   (change of the norm, for contrast: {(ex_final - ex_init) / ex_init:.4f})")
for other in (128, 2048):
    print(f"predicted at width {other}: {ex_relative * (ex_width / other) ** 0.5:.4f}")

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

VARIANTS = {'A': {'width': 256,
       'd': 784,
       'init_norm': 448.3,
       'final_norm': 448.9,
       'change_norm': 18.6,
       'other_widths': [1024, 4096, 16384]},
 'B': {'width': 1024,
       'd': 3072,
       'init_norm': 1773.1,
       'final_norm': 1773.4,
       'change_norm': 31.2,
       'other_widths': [256, 4096, 65536]},
 'C': {'width': 128,
       'd': 100,
       'init_norm': 113.4,
       'final_norm': 114.6,
       'change_norm': 9.7,
       'other_widths': [512, 2048, 8192]},
 'D': {'width': 2048,
       'd': 512,
       'init_norm': 1024.6,
       'final_norm': 1024.9,
       'change_norm': 12.9,
       'other_widths': [512, 8192, 32768]}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-basics:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# Your variant is one logged run of an NTK-parametrised two-layer network of width `width` on
# `d` inputs, with the Frobenius norms of its input-to-hidden matrix: `init_norm` at the start,
# `final_norm` at the end, and `change_norm` of the difference. Compute
# - `relative_change`: the relative change of that matrix over the run (a float);
# - `predicted_changes`: the relative change the NTK scaling law predicts for the same run (same
#   steps, same rate) at each width of `other_widths`, in that order (a list of floats).

# %% nbgrader={"grade": false, "grade_id": "answer_lazy", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
relative_change = params["change_norm"] / params["init_norm"]
predicted_changes = [relative_change * (params["width"] / w) ** 0.5 for w in params["other_widths"]]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_lazy", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
assert isinstance(relative_change, numbers.Real), "relative_change should be a number"
assert isinstance(predicted_changes, list) and len(predicted_changes) == len(params["other_widths"]), \
    "predicted_changes should be a list with one number per width in other_widths"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-b6-lazy-training", "check_lazy", globals())
### END HIDDEN TESTS
