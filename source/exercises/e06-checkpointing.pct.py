# %% [markdown]
# # e06-checkpointing · How often to save, and what saving costs
#
# *Chapter II.8 Training at Scale · mathematics · exercise 6 of 10*
#
# A long run will be interrupted: a GPU dies, a link flaps, a node is drained. When it
# happens, every step since the last checkpoint is lost and has to be done again. Saving
# more often loses less work per failure, but each save stalls the run. This exercise
# prices both sides and finds the interval between checkpoints that wastes the least time.
#
# Sources:
# - J. W. Young, *A first order approximation to the optimum checkpoint interval*,
#   Communications of the ACM 17(9), 1974.
# - J. T. Daly, *A higher order estimate of the optimum checkpoint interval for restart
#   dumps*, Future Generation Computer Systems 22 (2006) 303–312.
# - A. Kokolis et al., *Revisiting Reliability in Large-Scale Machine Learning Research
#   Clusters*, HPCA 2025 (arXiv 2410.21680).
#
# Notation: $N$ parameters; $\delta$ seconds to write one checkpoint; $\Theta$ the job's mean
# time between failures (MTBF), in seconds (Daly writes M); $\tau$ seconds of computing
# between two checkpoints.
# Units are plain: bytes, seconds.

# %% [markdown]
# ## 1. What a checkpoint holds, and how long it takes to write
#
# **What a checkpoint holds (the chapter's definition).** A training checkpoint holds
# everything the next step reads and cannot recompute: the fp32 weights (in mixed precision,
# the fp32 master copy), the optimiser's state, the learning-rate scheduler's state, the
# random number generators' states and the position in the data, and, with fp16, the
# GradScaler's state. For Adam that is 4 + 4 + 4 = 12 bytes per parameter. The 16-bit copy
# of the weights is not part of it: it is a cast of the fp32 master weights, and the same
# cast on loading gives the same bits. It is saved only when the checkpoint must also serve
# as a model that loads without its optimiser (for evaluation, export or serving); DeepSpeed
# and Megatron-LM, for instance, write the 16-bit module weights beside the fp32 optimiser
# state, and then the checkpoint is 2 + 12 = 14 bytes per parameter.
#
# | what | bytes per parameter |
# |---|---|
# | the fp32 master weights | 4 |
# | Adam's first and second moments, fp32 | 4 + 4 |
# | the chapter's checkpoint | **12** |
# | the 16-bit weights, when the framework writes them too | + 2 = 14 |
#
# Gradients are not saved: the next step computes fresh ones. Your variant's
# `bytes_per_param` says which of the two layouts its run writes.
#
# A checkpoint of $N$ parameters at $b_\text{param}$ bytes each is $N b_\text{param}$ bytes, and writing it at $R_\text{write}$
# bytes per second stalls the run for
#
# $$\delta = \frac{N b_\text{param}}{R_\text{write}}.$$
#
# $R_\text{write}$ is what the whole job achieves to storage, not what one disk does: sharded writes
# from every data-parallel rank can reach tens or hundreds of GB/s; a single rank calling
# `torch.save` on the whole state reaches a few GB/s at best.
#
# ## 2. How often the job fails
#
# Kokolis et al. studied eleven months of two of Meta's A100 research clusters (RSC-1,
# 16k GPUs, and RSC-2, 8k GPUs; 8 GPUs per node). What they report is a **rate per node**:
# $r_f$ = 6.50 failures per 1000 node-days on RSC-1 and 2.34 on RSC-2. A synchronous job
# stops when *any* of its nodes fails, so with independent failures the job's failure rate
# is the sum of its nodes' rates. Turning that into the job's mean time between failures,
# $\Theta$, in seconds, is part of your task below.
#
# This is the model they fit, and from it they project about 1.8 hours between failures
# for a 16,384-GPU job (2,048 nodes) and about 0.23 hours for 131,072 GPUs. Two readings
# to avoid: $r_f$ is per node, not per GPU; and $1/r_f$ (about 150 days on RSC-1) is one
# node's MTBF, not the job's.
#
# The Llama 3 report (Llama Team 2024, §3.3.4) gives the same kind of number from a real run:
# 419 unexpected interruptions in a 54-day snapshot of Llama 3 405B's pre-training on
# 16,384 H100 GPUs, about one every three hours.
#
# ## 3. The trade-off, to first order (Young 1974)
#
# Checkpoint after every $\tau$ seconds of work. Each interval costs $\delta$ seconds of
# writing, a share $\delta/\tau$ of the time. Failures arrive at rate $1/\Theta$, and each one
# lands, on average, halfway through an interval, so it throws away about $\tau/2$ seconds
# of work: a share $\tau/(2\Theta)$. The waste is
#
# $$w(\tau) = \frac{\delta}{\tau} + \frac{\tau}{2\Theta}.$$
#
# The first term wants $\tau$ large, the second wants it small. Setting $w'(\tau) = 0$
# gives Young's interval, which you will derive below. (The restart time after a failure
# is also lost, but it does not depend on $\tau$, so it does not move the optimum.)
#
# ## 4. A higher-order answer (Daly 2006)
#
# Young's argument assumes $\delta \ll \Theta$ and at most one failure per interval. Daly
# writes a fuller expected run time for Poisson failures, in which a failure may also
# strike during a write or a restart, and finds its minimum as a series in $\xi = \delta/(2\Theta)$.
# Written with Young's interval $\tau_Y$ (the one you derive below), it reads
#
# $$\tau_{\text{opt}} = \tau_Y\left[1 + \frac13\sqrt{\xi} + \frac19\,\xi\right] - \delta \quad (\delta < 2\Theta), \qquad \tau_{\text{opt}} = \Theta \quad (\delta \ge 2\Theta).$$
#
# Once you have $\tau_Y$, expand the bracket: the middle term is a constant share of
# $\delta$, so Daly's interval sits a fixed share of $\delta$ below Young's. The pair is often
# quoted together as "Young/Daly"; the first-order expression is Young's alone.
#
# Daly checks his model against simulation for $\delta$ = 5 minutes and a 10-minute
# restart, and prints the interval it predicts (Figs. 3–5):
#
# | $\Theta$ | Daly's $\tau_{\text{opt}}$ as printed |
# |---|---|
# | 24 h | 117 min |
# | 6 h | 57 min |
# | 15 min | 9.1 min |
#
# The figure below draws the first-order waste for the middle case, and marks the lowest
# point of the drawn curve, found by looking along it.

# %%
import matplotlib.pyplot as plt
import numpy as np

example_delta, example_mtbf = 5 * 60.0, 6 * 3600.0          # Daly's Fig. 4: 5 minutes, 6 hours
taus = np.linspace(600, 12_000, 400)
example_waste = example_delta / taus + taus / (2 * example_mtbf)
lowest = taus[np.argmin(example_waste)]                       # read off the curve, not a formula
daly_printed = 57 * 60.0                                      # Daly's Fig. 4, as printed

fig, ax = plt.subplots(figsize=(7, 3.6))
ax.plot(taus / 60, 100 * example_delta / taus, ":", label=r"writing, $\delta/\tau$")
ax.plot(taus / 60, 100 * taus / (2 * example_mtbf), ":", label=r"redone work, $\tau/(2\Theta)$")
ax.plot(taus / 60, 100 * example_waste, "k", label="first-order waste")
ax.axvline(lowest / 60, color="C2", label=f"lowest point of the curve: {lowest / 60:.0f} min")
ax.axvline(daly_printed / 60, color="C3", ls="--", label=f"Daly prints: {daly_printed / 60:.0f} min")
ax.set_xlabel(r"interval between checkpoints $\tau$ (minutes)")
ax.set_ylabel("share of time lost (%)")
ax.set_title(r"$\delta$ = 5 min, $\Theta$ = 6 h (Daly 2006, Fig. 4)")
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# The curve is flat near its minimum: checkpointing every 45 or every 80 minutes
# costs little more than the optimum. What the formulas really guard against is being off
# by a factor of ten, which is easy when $\Theta$ shrinks with the number of nodes.
#
# ## 5. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student
# id. On JupyterHub that is your hub user name; working on your own machine, start
# Jupyter with `JUPYTERHUB_USER=<your course id> jupyter lab` so that you see the same
# variant the grader uses. Editing this cell does not change what you are graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import sympy as sp

delta, Theta = sp.symbols("delta Theta", positive=True)

# bytes_per_param: 12 is the chapter's checkpoint; 14 also writes the 16-bit module weights
VARIANTS = {
    "A": {"N": 7_000_000_000, "bytes_per_param": 14, "write_bandwidth": 10e9,
          "n_nodes": 32, "failure_rate": 2.34e-3},
    "B": {"N": 70_000_000_000, "bytes_per_param": 14, "write_bandwidth": 50e9,
          "n_nodes": 512, "failure_rate": 2.34e-3},
    "C": {"N": 175_000_000_000, "bytes_per_param": 14, "write_bandwidth": 100e9,
          "n_nodes": 2048, "failure_rate": 6.50e-3},
    "D": {"N": 405_000_000_000, "bytes_per_param": 12, "write_bandwidth": 2e12,
          "n_nodes": 2048, "failure_rate": 3.79e-3},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"exercises:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# Your parameters: `N` parameters, `bytes_per_param` bytes of checkpoint per parameter,
# `write_bandwidth` in bytes per second, `n_nodes` nodes, and `failure_rate` in failures
# **per node-day** (6.50e-3 is RSC-1's 6.50 per 1000 node-days; 3.79e-3 is Llama 3's 419
# interruptions over 54 days and 2,048 nodes).
#
# ### 5a. Derive
#
# Write the first-order waste $w(\tau)$ with sympy, minimise it over $\tau > 0$, and
# assign the minimiser to `interval_expr`, an expression in the symbols `delta` and
# `Theta` (the MTBF $\Theta$) defined above. Let sympy do the calculus (`sp.diff`, `sp.solve`).

# %% nbgrader={"grade": false, "grade_id": "answer_expr", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
tau = sp.symbols("tau", positive=True)
waste = delta / tau + tau / (2 * Theta)
interval_expr = sp.solve(sp.diff(waste, tau), tau)[0]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expr", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the mathematics is checked when your notebook is graded.
assert isinstance(interval_expr, sp.Expr), "interval_expr should be a sympy expression"
assert {x.name for x in interval_expr.free_symbols} <= {x.name for x in (delta, Theta)}, "use only the symbols delta and Theta"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e06-checkpointing", "check_expr", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 5b. The checkpoint and the failures
#
# For your variant, compute
# - `checkpoint_bytes`: the size of one checkpoint, in bytes;
# - `write_seconds`: $\delta$, the seconds one synchronous write stalls the run;
# - `job_mtbf_seconds`: $\Theta$, the job's mean time between failures, in seconds.

# %% nbgrader={"grade": false, "grade_id": "answer_io", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
checkpoint_bytes = params["N"] * params["bytes_per_param"]
write_seconds = checkpoint_bytes / params["write_bandwidth"]
job_mtbf_seconds = 86_400 / (params["n_nodes"] * params["failure_rate"])
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_io", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the numbers are checked when your notebook is graded.
for name in ("checkpoint_bytes", "write_seconds", "job_mtbf_seconds"):
    assert isinstance(globals()[name], numbers.Real), f"{name} should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e06-checkpointing", "check_io", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 5c. The interval
#
# Compute, in seconds,
# - `young_interval_seconds`: your `interval_expr` at your $\delta$ and $\Theta$;
# - `daly_interval_seconds`: Daly's higher-order interval (section 4, with your Young
#   interval as $\tau_Y$), including its
#   $\delta \ge 2\Theta$ case. Write it as a function `daly_interval(delta_s, mtbf_s)`; the
#   cell after this one checks that function against the numbers Daly prints;
#
# and the dimensionless
# - `waste_fraction`: the first-order waste $w(\tau)$ of section 3 at Young's interval.

# %% nbgrader={"grade": false, "grade_id": "answer_interval", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def daly_interval(delta_s, mtbf_s):
    if delta_s >= 2 * mtbf_s:
        return float(mtbf_s)
    xi = delta_s / (2 * mtbf_s)
    return (2 * delta_s * mtbf_s) ** 0.5 * (1 + xi ** 0.5 / 3 + xi / 9) - delta_s


young_interval_seconds = float(interval_expr.subs({delta: write_seconds, Theta: job_mtbf_seconds}))
daly_interval_seconds = daly_interval(write_seconds, job_mtbf_seconds)
waste_fraction = write_seconds / young_interval_seconds + young_interval_seconds / (2 * job_mtbf_seconds)
### END SOLUTION

# %% [markdown]
# Not graded: your `daly_interval` against Daly's printed examples ($\delta$ = 5 min).
# Each line should agree to the paper's rounding.

# %%
if callable(globals().get("daly_interval")):
    for label, mtbf_minutes, printed in (("24 h", 24 * 60, 117), ("6 h", 6 * 60, 57), ("15 min", 15, 9.1)):
        yours = daly_interval(5 * 60.0, mtbf_minutes * 60.0) / 60
        print(f"MTBF {label:>6}: yours {yours:6.1f} min, Daly prints {printed} min")
else:
    print("Define daly_interval(delta_s, mtbf_s) in the cell above first.")

# %% nbgrader={"grade": true, "grade_id": "check_interval", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
for name in ("young_interval_seconds", "daly_interval_seconds", "waste_fraction"):
    assert isinstance(globals()[name], numbers.Real), f"{name} should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("e06-checkpointing", "check_interval", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 5d. Read your numbers
#
# Not graded; a few sentences for yourself.
# - What share of the run does your variant lose to checkpoints and redone work? Would
#   it still be worth writing asynchronously (copy to host memory, then write in the
#   background), which cuts the stall $\delta$ to the copy time?
# - First-order waste above 1 means the model has broken down: the job spends longer
#   writing and redoing than it has between failures, and will hardly progress at all.
#   If your variant is in that regime, which of $R_\text{write}$, $b_\text{param}$ or $n_{\text{nodes}}$ would you change,
#   and by how much, to bring $\delta$ well below $\Theta$?
# - Kokolis et al.'s rates come from shared research clusters; a dedicated, burned-in
#   training cluster may do better. How does the interval scale if $r_f$ halves?

# %% [markdown]
# *Your answer, for yourself (not graded): double-click this cell and write it here.*
