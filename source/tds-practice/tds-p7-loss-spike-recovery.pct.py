# %% [markdown]
# # tds-p7-loss-spike-recovery · A spike in the middle of a run, and what to do about it
#
# *Module TDS Training Dynamics & Scaling · practice · break it, respond, measure*
#
# II.8's p5-loss-spike produced a spike at the *start* of a run, from a learning rate too high for
# a network at initialisation, and showed that warmup removes it while clipping does not. This
# notebook is about the other situation, the one that costs money on a large run: the loss has been
# falling for days and then jumps. The question is no longer how to prevent the spike but how to
# *respond* once it is there, and the operational options are few. You can do nothing and hope the
# run recovers on its own; you can rely on gradient clipping, which most large runs have switched on
# anyway; or you can do what the PaLM team did: stop, go back to a checkpoint from before the
# spike, skip the data that was being read when it happened, and carry on.
#
# Chowdhery et al. (2022, *PaLM*, §5.1) describe that recipe. In their 540B run the loss spiked
# roughly twenty times even though clipping was on, at irregular intervals and sometimes late in
# training. Their remedy: restart from a checkpoint roughly 100 steps before the spike started and
# skip roughly 200 to 500 data batches, covering the batches seen before and during the spike;
# the loss then did not spike again at that point. They add a detail that is easy to misquote:
# they did **not** conclude that the data was bad. Replaying the same batches from a different,
# earlier checkpoint produced no spike, so a spike came from a particular batch meeting a particular
# state of the model. Summaries that say "PaLM's spikes were caused by bad batches" get this wrong.
#
# Why would the state matter? Molybog et al. (2023, *A Theory on Adam Instability in Large-Scale
# Machine Learning*) point at Adam's second-moment estimate $v$. Adam divides each coordinate's
# momentum by $\sqrt{v}$, a running mean of squared gradients that lags the gradients themselves.
# After a long quiet stretch in which a coordinate's gradients were tiny, $v$ is tiny too, and a
# sudden larger gradient goes through almost undamped: the update is far larger than anything the
# run has taken recently, and many coordinates can move together. Conversely, once a burst of large
# gradients has passed, $v$ stays inflated for roughly $1/(1-\beta_2)$ steps and the optimiser crawls,
# which slows the recovery. Wortsman et al. (2023) show that such instabilities of large
# transformers can be reproduced in small models, which is what makes an experiment like this one
# worth doing on a CPU.
#
# ## 1. The experiment
#
# We cannot wait for a spontaneous spike, so we provoke one in a controlled way: a stretch of the
# data stream is corrupted, its targets multiplied by a constant, as a mis-scaled shard of data would
# be. A small ReLU network is trained with AdamW ($\beta_1 = 0.9$, $\beta_2 = 0.95$, the values of most
# large language models) at a constant rate, and a clean held-out loss is logged after every update.
# Three responses run under **equal compute**, exactly the same number of executed updates:
#
# - **none**: train straight through;
# - **clip**: clip the global gradient norm at the variant's threshold before every update;
# - **rollback**: watch each batch's training loss; when it spikes, restore a checkpoint (model
#   *and* optimiser state) and skip ahead in the stream. Updates that are thrown away still count
#   against the budget: that is the price of a rollback, and the compute accounting must show it.
#
# Our spike is caused by data, so skipping the data is bound to help here; that is a property of
# this controlled experiment, not a claim about every spike (remember PaLM's ablation). What the
# experiment does show fairly is the arithmetic of each response: how high the spike gets, how
# many updates the run needs before it is back where it was, and where it ends.

# %% [markdown]
# ## 2. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id (on your own
# machine start Jupyter with `JUPYTERHUB_USER=<your course id> jupyter lab`), and defines the
# harness. Editing this cell does not change what you are graded on.
#
# `train(params, response, spike_score=None, rollback_plan=None)` returns
# `(eval_losses, train_losses, rollbacks)`: `eval_losses[i]` is the held-out loss after `i` executed
# updates (`eval_losses[0]` before any), `train_losses` the loss of each executed batch, and
# `rollbacks` a list of `[spike_step, restore_step, batches_skipped]`, one per rollback taken. With
# `response="rollback"` it calls your two functions below: `spike_score` on the training losses of
# the current timeline (the newest last) before each update, and, when the score exceeds the
# variant's `spike_ratio`, `rollback_plan`.
# Checkpoints are taken every `ckpt_every` steps, at steps 0, `ckpt_every`, and so on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import copy
import getpass
import hashlib
import os

import torch
import torch.nn.functional as F
from torch import nn

torch.set_num_threads(1)   # tiny tensors: one thread is the fastest, and the numbers never depend on it

VARIANTS = {'A': {'seed': 0,
       'd_in': 8,
       'hidden': 32,
       'batch': 32,
       'steps': 200,
       'lr': 0.01,
       'poison_start': 100,
       'poison_len': 12,
       'poison_scale': 4.0,
       'max_norm': 1.0,
       'ckpt_every': 20,
       'margin': 10,
       'skip': 15,
       'spike_ratio': 8.0,
       'window': 10,
       'max_rollbacks': 3},
 'B': {'seed': 1,
       'd_in': 6,
       'hidden': 32,
       'batch': 32,
       'steps': 200,
       'lr': 0.008,
       'poison_start': 110,
       'poison_len': 8,
       'poison_scale': 6.0,
       'max_norm': 0.5,
       'ckpt_every': 25,
       'margin': 20,
       'skip': 12,
       'spike_ratio': 8.0,
       'window': 16,
       'max_rollbacks': 3},
 'C': {'seed': 2,
       'd_in': 10,
       'hidden': 32,
       'batch': 24,
       'steps': 180,
       'lr': 0.01,
       'poison_start': 95,
       'poison_len': 10,
       'poison_scale': 5.0,
       'max_norm': 1.0,
       'ckpt_every': 10,
       'margin': 15,
       'skip': 14,
       'spike_ratio': 10.0,
       'window': 12,
       'max_rollbacks': 3},
 'D': {'seed': 3,
       'd_in': 8,
       'hidden': 24,
       'batch': 32,
       'steps': 200,
       'lr': 0.012,
       'poison_start': 105,
       'poison_len': 15,
       'poison_scale': 3.5,
       'max_norm': 0.3,
       'ckpt_every': 20,
       'margin': 25,
       'skip': 20,
       'spike_ratio': 6.0,
       'window': 20,
       'max_rollbacks': 3}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-practice:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]


# chapter: include graders.problems.tds_practice.tds_p7_loss_spike_recovery.make_data


# chapter: include graders.problems.tds_practice.tds_p7_loss_spike_recovery.make_model


# chapter: include graders.problems.tds_practice.tds_p7_loss_spike_recovery.batch_of


# chapter: include graders.problems.tds_practice.tds_p7_loss_spike_recovery.train


print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ## 3. Build it: an online spike detector
#
# p5-loss-spike built an offline report on a finished curve. A detector that runs during training
# sees only the past, and mini-batch losses are noisy, so a single high batch must not trip it.
# Write `spike_score(losses, window)`: `losses` is the list of training losses so far, the newest
# last. Return the newest loss divided by the **mean of the `window` losses that come before it**
# (a float), or `0.0` when there are not yet `window` earlier losses. The harness calls a step a
# spike when its score exceeds the variant's `spike_ratio`. The hidden tests call it on short and
# long lists, on sudden jumps and on a slow climb.

# %% nbgrader={"grade": false, "grade_id": "answer_detector", "locked": false, "schema_version": 3, "solution": true, "task": false}
def spike_score(losses, window):
    """The newest loss over the mean of the window losses before it; 0.0 without enough history."""
    ### BEGIN SOLUTION
    if len(losses) <= window:
        return 0.0
    before = losses[-window - 1:-1]
    return losses[-1] / (sum(before) / len(before))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_detector", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the hidden test calls spike_score on hidden loss curves.
assert isinstance(spike_score([1.0, 1.0, 1.0, 9.0], 3), float), "spike_score returns a float"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p7-loss-spike-recovery", "check_detector", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 4. Build it: the rollback plan
#
# Write `rollback_plan(spike_step, ckpt_every, margin, skip)`, PaLM's recipe as two integers
# `[restore_step, batches_skipped]`:
#
# - the damage begins before a detector fires, so go back a `margin` of steps before the spike and
#   restore **the latest checkpoint at or before that point** (never before step 0; checkpoints sit
#   at the multiples of `ckpt_every`);
# - from the restored checkpoint on, skip every batch that the run read between that checkpoint and
#   the spike, and `skip` more batches past the spike. Count the batch of the spike's own step as the
#   first of those `skip`: the run read it when the loss spiked, and it is skipped with them.
#
# The harness restores the checkpoint's model and optimiser state and resumes
# `batches_skipped` batches past the checkpoint's place in the stream. The hidden tests call your
# plan at small and at PaLM-like scales, and with a spike before the first margin has passed.

# %% nbgrader={"grade": false, "grade_id": "answer_plan", "locked": false, "schema_version": 3, "solution": true, "task": false}
def rollback_plan(spike_step, ckpt_every, margin, skip):
    """[checkpoint step to restore, batches to skip from that checkpoint on]."""
    ### BEGIN SOLUTION
    restore = (max(0, spike_step - margin) // ckpt_every) * ckpt_every
    return [restore, spike_step - restore + skip]
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_plan", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the hidden test calls rollback_plan on hidden spikes.
_plan = rollback_plan(57, 10, 5, 3)
assert isinstance(_plan, (list, tuple)) and len(_plan) == 2, "return [restore_step, batches_skipped]"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p7-loss-spike-recovery", "check_plan", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 5. Run the three responses and measure them
#
# Run `train(params, response, spike_score, rollback_plan)` for `response` in `"none"`, `"clip"`,
# `"rollback"`, in that order, and measure each run's held-out curve `eval_losses` around the onset,
# `onset = params["poison_start"]` (the number of updates executed before the first corrupted batch;
# it is the same in all three runs, because nothing differs before it):
#
# - the **base** is `eval_losses[onset]`, the held-out loss just before the spike;
# - the **height** is the largest held-out loss from the onset on, divided by the base;
# - the **recovery** is the number of updates from the onset to the first update *after that peak*
#   whose held-out loss is back at or below the base (`-1` if that never happens);
# - the **final loss** is `eval_losses[-1]`, after the last of the run's updates.
#
# Record three lists in the order none, clip, rollback: `spike_heights` (floats), `recovery_steps`
# (ints) and `final_losses` (floats); and `wasted_updates` (an int): the updates the rollback run
# threw away, summed over its rollbacks (each throws away the updates from its restored step to
# its spike step).

# %% nbgrader={"grade": false, "grade_id": "answer_responses", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
runs = {r: train(params, r, spike_score, rollback_plan) for r in ("none", "clip", "rollback")}
onset = params["poison_start"]
spike_heights, recovery_steps, final_losses = [], [], []
for _r in ("none", "clip", "rollback"):
    _ev = runs[_r][0]
    _base = _ev[onset]
    _peak = max(range(onset, len(_ev)), key=lambda i: (_ev[i], -i))
    _back = [i for i in range(_peak + 1, len(_ev)) if _ev[i] <= _base]
    spike_heights.append(_ev[_peak] / _base)
    recovery_steps.append(_back[0] - onset if _back else -1)
    final_losses.append(_ev[-1])
wasted_updates = sum(s - c for s, c, _ in runs["rollback"][2])
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_responses", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
for _name in ("spike_heights", "recovery_steps", "final_losses"):
    assert isinstance(globals()[_name], list) and len(globals()[_name]) == 3, \
        f"{_name} should be a list of three: none, clip, rollback"
assert isinstance(wasted_updates, numbers.Integral), "wasted_updates is a count: an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-p7-loss-spike-recovery", "check_responses", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 6. Look at it (not graded)

# %%
import matplotlib.pyplot as plt

try:
    fig, ax = plt.subplots(figsize=(8, 3.8))
    for _r in ("none", "clip", "rollback"):
        ax.plot(runs[_r][0], label=_r)
    ax.axvline(params["poison_start"], color="grey", ls=":", label="first corrupted batch")
    ax.set(yscale="log", xlabel="executed updates", ylabel="held-out loss", title=f"Variant {VARIANT}")
    ax.legend()
    plt.show()
    print("heights", spike_heights, "recoveries", recovery_steps, "finals", final_losses,
          "wasted", wasted_updates)
except NameError as exc:
    print(f"Run the three responses first ({exc}).")

# %% [markdown]
# ## 7. Read it
#
# **Doing nothing.** The run does come back, as small runs usually do, but only after many updates,
# and for a while it sits far above where it was. Part of the slowness is Adam's memory: the large
# gradients of the corrupted stretch have inflated the second moment, so for a while every update is
# damped, including the ones that would repair the damage.
#
# **Clipping.** Clipping caps the size of each gradient before Adam sees it, which keeps the second
# moment from blowing up, but it does not change the *direction* the corrupted batches push in, and
# Adam's normalised step is about the same size whether the gradient was clipped or not (p5-loss-spike
# showed why). So the spike is still there, usually somewhat lower. This is the small-scale echo of
# PaLM's report that its spikes happened with clipping switched on.
#
# **Rollback.** The spike never reaches the held-out loss: the detector fires on the first corrupted
# batch, before its update, because that batch's own loss is far above the window's mean. What you see
# instead is a bump back to the checkpoint's loss and a replay. Compare its final loss with the
# others' and with `wasted_updates`: at equal compute the discarded updates are a real cost, and when
# a spike heals by itself early enough in a long run, doing nothing can end lower. On a large run the
# balance is different, because a spike may not heal (the loss can settle on a worse plateau or
# diverge), and because the cost of a rollback is a hundred steps out of hundreds of thousands.
#
# **Where this analogy breaks.** Our cause is the data, the detector is ideal and the checkpoint is
# exact. In a real run the detector fires after the damage has begun (hence PaLM's margin), spikes can
# recur after a restart, and the skipped batches are not bad in themselves. Chapter II.8's
# p5-loss-spike treats the cold-start spike; the edge-of-stability items of this module (tds-b1,
# tds-e1) treat the curvature side of instability.
#
# ## 8. Break it (not graded)
#
# Set `skip` to zero in your plan, so the resumed run reads the corrupted stretch again, and rerun
# the rollback. How many rollbacks does the harness take before its limit, and what does the curve do?
# Then restore only the model's weights and keep the optimiser's current state: the inflated second
# moment comes back with it.
