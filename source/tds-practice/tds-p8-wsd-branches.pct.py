# %% [markdown]
# # tds-p8-wsd-branches · One trunk, many lengths: branching a warmup-stable-decay run
#
# *Module TDS Training Dynamics & Scaling · practice · build it, count it, read the papers*
#
# Chapter II.8's p9-wsd-vs-cosine put a warmup-stable-decay (WSD) schedule next to a cosine schedule
# at one length and watched the WSD loss sit above the cosine loss during the stable phase, then
# fall steeply in the decay and finish level with it. That comparison, on its own, does not say why
# anyone would bother: at one length the two schedules cost the same. The reason is in what happens
# when you need *several* lengths. A scaling-law sweep trains the same model on 1, 2, 4 and 8 times
# as many tokens; a lab that has not decided how long its final run will be wants to keep its
# options open; a team that wants a checkpoint for evaluation now and a better one in a month would
# like the second to continue the first. A cosine schedule cannot serve any of these: its shape
# depends on the length fixed in advance, so each length is a run of its own from step zero.
#
# WSD can. Its learning rate is flat through the long stable phase, so the stable phase does not
# know how long the run will be. Hu et al. (2024, *MiniCPM*, §4) use exactly that: keep one
# **trunk** running at the peak rate, and whenever a model of a given length is wanted, take the
# trunk's checkpoint at the right point and run a short **decay branch** from it. The trunk goes on
# untouched. Hägele et al. (2024, *Scaling Laws and Compute-Optimal Training Beyond Fixed Training
# Durations*) make the same point for scaling-law work: a constant rate with a short cooldown of
# about a fifth of the run matches cosine, so one constant-rate run with several cooldowns replaces
# a family of cosine runs, for a fraction of the compute.
#
# ## 1. What a branch is, exactly
#
# For a target length $L$ the branch must be the same run that a stand-alone WSD schedule of length
# $L$ would have been. Call the decay length $D = $ `round(decay_fraction * L)`: each length gets the
# same *fraction* of itself as its decay, the way the papers specify a cooldown. Then the branch point
# is where that decay has to start so that it ends at step $L$. Up to the branch point the
# stand-alone WSD run and the trunk have had the same warmup, the same constant rate and the same
# batches, so they are the same network with the same optimiser state. From the branch point on, the
# branch takes a linear decay from the peak to the floor. Two things make this exact rather than
# approximate: the branch continues with the trunk's **optimiser state** (Adam's moments), not with a
# fresh optimiser, and it reads the same batches at the same steps as the stand-alone run would. The
# harness below does both; a test of the course checks that a branch reproduces a stand-alone run.
#
# The learning rate of a branch that leaves the trunk at step `start` and decays over `decay` steps
# is therefore a function of the step with three pieces: the linear warmup from zero over the first
# `warmup` steps (the same as in the cosine baseline and in II.8's schedules), the peak up to and
# including `start`, then a straight line from the peak down to the floor reached at `start + decay`,
# and the floor after that. You will write it, and the plan of branch points, and the compute.
#
# ## 2. Counting the compute
#
# Count compute in optimiser updates: the model and the batch are the same in every run, so an update
# costs the same everywhere. A family of cosine runs costs the sum of its lengths. The branched WSD
# family costs the trunk, run **once** up to its last branch point, plus every branch's decay. Work out
# the two totals for a geometric sweep before you run it, and see how the ratio behaves as you add
# lengths: the trunk is shared, so each extra length costs only its decay, where a cosine family pays
# the whole length again. That saving is why scaling-law sweeps moved to this kind of schedule.

# %% [markdown]
# ## 3. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id (on your own
# machine start Jupyter with `JUPYTERHUB_USER=<your course id> jupyter lab`), and defines the
# harness. Editing this cell does not change what you are graded on.
#
# - `run_cosine(params, length)` trains one cosine run of `length` updates and returns its final
#   held-out loss;
# - `run_branches(params, plan, lr_fn)` runs the trunk once and a branch at each `[start, decay]` of
#   `plan` (in increasing `start`), with learning rates `lr_fn(t, peak, floor, warmup, start, decay)`;
#   it returns `(results, updates)`: `results[k] = [held-out loss at the branch point, at the branch's
#   end]`, and the number of updates it executed.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import copy
import getpass
import hashlib
import math
import os

import torch

torch.set_num_threads(1)   # tiny tensors: one thread is the fastest, and the numbers never depend on it

VARIANTS = {'A': {'seed': 22,
       'dim': 8,
       'hidden': 32,
       'batch': 16,
       'noise': 0.3,
       'peak_lr': 0.05,
       'min_lr': 0.005,
       'warmup': 20,
       'weight_decay': 0.1,
       'lengths': [100, 200, 400],
       'decay_fraction': 0.2},
 'B': {'seed': 25,
       'dim': 6,
       'hidden': 24,
       'batch': 16,
       'noise': 0.4,
       'peak_lr': 0.05,
       'min_lr': 0.005,
       'warmup': 20,
       'weight_decay': 0.1,
       'lengths': [80, 160, 240, 320],
       'decay_fraction': 0.1},
 'C': {'seed': 23,
       'dim': 8,
       'hidden': 32,
       'batch': 16,
       'noise': 0.3,
       'peak_lr': 0.05,
       'min_lr': 0.005,
       'warmup': 16,
       'weight_decay': 0.05,
       'lengths': [80, 160, 320],
       'decay_fraction': 0.25},
 'D': {'seed': 24,
       'dim': 10,
       'hidden': 16,
       'batch': 16,
       'noise': 0.3,
       'peak_lr': 0.05,
       'min_lr': 0.005,
       'warmup': 12,
       'weight_decay': 0.1,
       'lengths': [60, 120, 180, 240],
       'decay_fraction': 0.15}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-practice:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]


# chapter: include graders.problems.tds_practice.tds_p8_wsd_branches.make_task


# chapter: include graders.problems.tds_practice.tds_p8_wsd_branches.cosine_lr


# chapter: include graders.problems.tds_practice.tds_p8_wsd_branches.train_steps


# chapter: include graders.problems.tds_practice.tds_p8_wsd_branches.evaluate


# chapter: include graders.problems.tds_practice.tds_p8_wsd_branches.run_cosine


# chapter: include graders.problems.tds_practice.tds_p8_wsd_branches.run_branches


print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ## 4. Build it: the plan and the branch's schedule
#
# Write
#
# - `branch_plan(lengths, decay_fraction)`: a list with one `[start, decay]` per length, in the order
#   of `lengths`, as section 1 defines them (integers);
# - `wsd_branch_lr(t, peak, floor, warmup, start, decay)`: the learning rate of update `t` in the
#   branch that leaves the trunk at `start`, as section 1 describes it (a float). At
#   `t < warmup` it is the warmup's `peak * t / warmup`.
#
# The hidden tests call the plan on other sweeps and fractions, and the schedule at steps in every
# phase, on your variant and on an LLM-sized schedule.

# %% nbgrader={"grade": false, "grade_id": "answer_plan", "locked": false, "schema_version": 3, "solution": true, "task": false}
def branch_plan(lengths, decay_fraction):
    """[[start, decay], ...]: each length's branch point and decay length."""
    ### BEGIN SOLUTION
    plan = []
    for length in lengths:
        decay = int(round(decay_fraction * length))
        plan.append([int(length) - decay, decay])
    return plan
    ### END SOLUTION


def wsd_branch_lr(t, peak, floor, warmup, start, decay):
    """Warmup, the peak up to `start`, then a linear decay to `floor` at `start + decay`."""
    ### BEGIN SOLUTION
    if t < warmup:
        return peak * t / warmup
    if t <= start:
        return peak
    return peak - (peak - floor) * min(1.0, (t - start) / decay)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_plan", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
_plan = branch_plan([100, 200], 0.2)
assert isinstance(_plan, list) and len(_plan) == 2 and len(_plan[0]) == 2, "one [start, decay] per length"
assert isinstance(wsd_branch_lr(0, 1e-3, 1e-4, 10, 80, 20), float), "wsd_branch_lr returns a float"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p8-wsd-branches", "check_plan", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 5. Build it: the compute of the two families
#
# Write `sweep_cost(plan, lengths)`: the list `[wsd_updates, cosine_updates]` of section 2, the updates
# of the branched WSD family given its `plan`, and the updates of one cosine run per length (ints).

# %% nbgrader={"grade": false, "grade_id": "answer_cost", "locked": false, "schema_version": 3, "solution": true, "task": false}
def sweep_cost(plan, lengths):
    """[updates of one trunk and its branches, updates of a cosine run per length]."""
    ### BEGIN SOLUTION
    return [max(s for s, _ in plan) + sum(d for _, d in plan), int(sum(lengths))]
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_cost", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
assert len(sweep_cost([[80, 20], [160, 40]], [100, 200])) == 2, "return [wsd_updates, cosine_updates]"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p8-wsd-branches", "check_cost", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 6. Run both families
#
# With your variant's `params["lengths"]` and `params["decay_fraction"]`:
#
# - run the branches with your plan and your schedule; record `wsd_losses` (the held-out loss at the
#   end of each branch, in the order of the lengths) and `decay_drops` (for each branch, the held-out
#   loss at its branch point minus the loss at its end: the drop that the decay buys);
# - run one cosine run per length; record `cosine_losses` in the same order;
# - record `compute_steps = sweep_cost(plan, lengths)`, and compare it with the harness's own count of
#   the updates it executed.

# %% nbgrader={"grade": false, "grade_id": "answer_runs", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
plan = branch_plan(params["lengths"], params["decay_fraction"])
results, executed = run_branches(params, plan, wsd_branch_lr)
wsd_losses = [end for _, end in results]
decay_drops = [start - end for start, end in results]
cosine_losses = [run_cosine(params, length) for length in params["lengths"]]
compute_steps = sweep_cost(plan, params["lengths"])
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_runs", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
for _name in ("wsd_losses", "cosine_losses", "decay_drops"):
    assert isinstance(globals()[_name], list) and len(globals()[_name]) == len(params["lengths"]), \
        f"{_name} should be a list with one value per length"
assert len(compute_steps) == 2, "compute_steps is [wsd_updates, cosine_updates]"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p8-wsd-branches", "check_runs", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 7. Look at it (not graded)

# %%
import matplotlib.pyplot as plt

try:
    print(f"updates: WSD family {compute_steps[0]} (the harness executed {executed}), "
          f"cosine family {compute_steps[1]}")
    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.plot(params["lengths"], cosine_losses, "o-", label="a cosine run per length")
    ax.plot(params["lengths"], wsd_losses, "s-", label="WSD branches of one trunk")
    ax.plot(params["lengths"], [w + d for w, d in zip(wsd_losses, decay_drops)], "^:",
            label="the trunk at each branch point")
    ax.set(xlabel="training length (updates)", ylabel="held-out loss", title=f"Variant {VARIANT}")
    ax.legend()
    plt.show()
except NameError as exc:
    print(f"Run both families first ({exc}).")

# %% [markdown]
# ## 8. Read it
#
# **The losses.** At no length does the branch end more than about a tenth behind the cosine run,
# and at some it ends ahead. At the shortest length WSD tends to be clearly ahead: a
# cosine run starts lowering its rate from the first step after warmup, so a short cosine run spends
# much of its budget at low rates before it has learned much, while the WSD trunk keeps the peak rate
# until the decay. At the longer lengths the two trade places from variant to variant, which is what
# one run per schedule and seed can tell you and no more. The papers report "comparable" for large
# language models, with WSD level or slightly ahead once the decay is long enough; nobody should
# read a small regression's margin, either way, as a prediction for a transformer.
#
# **The drop.** The trunk's loss at a branch point is well above the branch's end: most of what the
# decay buys, it buys in its last stretch. II.8's p9 shows the same sudden fall at one length, and
# the usual explanation is that at a high constant rate the iterate bounces around a valley floor
# driven by gradient noise, and lowering the rate lets it settle. The drop is also why the loss of a
# WSD trunk, read during its stable phase, is a poor guide to the loss of the finished model: an
# extrapolation of the trunk's curve has to add the drop a decay would bring. Hägele et al. fit
# scaling laws to the *cooled-down* losses for that reason.
#
# **The compute.** For a geometric sweep the WSD family costs about the longest run plus a decay per
# shorter length; the cosine family costs the sum of all lengths. Compare your two numbers. The gap
# widens with every length added, and it is exactly the saving that Hägele et al. point to for
# scaling-law experiments. What it does not buy: the decay fraction is still a hyperparameter, the
# shape of the decay matters (they find a cooldown shaped like one minus a square root beats a
# straight line), and a model released from a branch is not the same as one trained to that length
# under a schedule tuned for it in every other respect.
#
# ## 9. Break it (not graded)
#
# Give the branch a fresh AdamW instead of the trunk's optimiser state and rerun one branch. Does it
# still match a stand-alone WSD run of that length? Then give every branch the decay length of the
# longest one and see what happens to the shortest length.
