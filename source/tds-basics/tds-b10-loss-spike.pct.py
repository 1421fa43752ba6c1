# %% [markdown]
# # tds-b10-loss-spike · Which steps were a spike, and when was the run back?
#
# *Module TDS Training Dynamics & Scaling · basics · term 10 of 11*
#
# **Loss spike.** A loss spike is a sudden rise of the training loss far above where the run had
# been heading, usually followed, if the run survives, by a return to the old trend. To act on
# one (alert, roll back, skip data) a team needs an operational definition: a rule that a
# monitoring script applies to the logged loss. This item uses a common one.
#
# - **Reference.** An exponential moving average of the loss, with coefficient $\beta$: it starts
#   at the first logged loss, $r_0 = \ell_0$, and after each row that is *not* flagged it moves
#   to $r_i = \beta\, r_{i-1} + (1 - \beta)\, \ell_i$. A flagged loss does not enter it: while a
#   spike lasts, the reference remembers where the run was before it.
# - **Flag.** Row $i$ (from the second row on) is a spike row when its loss exceeds the
#   reference of the rows before it by the stated factor, $\ell_i > \text{factor} \cdot r_{i-1}$.
# - **Recovery.** A spike *starts* at a flagged row whose previous row was not flagged; its
#   pre-spike reference is the $r_{i-1}$ it was compared with. The run has recovered at the first
#   later row whose loss is back within the tolerance of that reference,
#   $\ell_j \le (1 + \text{tolerance})\, r_{\text{pre}}$, and the recovery time is the number of
#   optimisation steps from the spike's start to that row.

# %% [markdown]
# ## What the large runs report
#
# Chowdhery et al. (2022, *PaLM: Scaling Language Modeling with Pathways*, §5.1) describe the
# problem for the 540B model plainly: the loss spiked "roughly 20 times during training, despite
# the fact that gradient clipping was enabled", at irregular intervals and sometimes late in
# training, and not in the smaller models. Their mitigation was operational rather than
# principled: restart "from a checkpoint roughly 100 steps before the spike started", and skip
# "roughly 200–500 data batches" around it. The loss then did not spike again at the same point.
# They also report an ablation that matters for the diagnosis: feeding the same batches to an
# earlier checkpoint did *not* produce a spike, so a spike is not simply bad data; it comes from
# particular data meeting a particular state of the model.
#
# The OPT-175B team (Zhang et al. 2022, *OPT: Open Pre-trained Transformer Language Models*,
# together with the training logbook they released) describe the same fight by hand: repeated
# divergences, each answered by going back to an earlier checkpoint, lowering the learning rate
# and, at one point, lowering the gradient-clipping threshold (II.8's b08 and c1 tell that part).
# A reader of the logbook sees how much of large-scale training is this operational loop:
# notice the spike, decide whether it is one, decide how far back to go.
#
# Both accounts presuppose a detector. "The loss went up" is not one: the training loss is noisy
# at every step, and it drifts down, so a fixed threshold is wrong within a few thousand steps.
# A moving average gives a reference that follows the trend but not the noise, and a factor above
# it separates a spike from the ordinary wobble. Keeping flagged losses out of the average is the
# important detail: if the spike is averaged in, the reference climbs with it, the later rows of
# a long spike stop being flagged, and the "recovery" is measured against a level the run was
# never at. The factor, $\beta$ and the tolerance are judgement calls: a factor too close to one
# flags noise, too far from one misses the spikes PaLM's team restarted for.

# %% [markdown]
# ## Why spikes happen, in outline
#
# The mechanism this module and II.8 teach is the stability threshold of tds-b1: a step is stable
# only while the learning rate times the curvature stays below a limit, and training pushes the
# curvature up to that edge (tds-e1). A batch that pushes the model a little further over it
# throws the loss up; the optimiser then takes the model back down the far side of the valley.
# For Adam the picture has an extra ingredient: when some gradients have been tiny for a long
# time, their second-moment estimate is tiny too, and a sudden gradient in those coordinates
# takes an enormous step. II.8's p5-loss-spike produces spikes on purpose with too high a rate and
# shows that warmup and clipping prevent them; tds-b7 explains the warmup. What none of these
# gives is a way to predict *when* a long run will spike, which is why the detector and the
# rollback are still the practice.

# %% [markdown]
# ## Worked example (not your variant)
#
# A short made-up log written every 10 steps from step 500, with $\beta = 0.9$, factor 1.2 and
# tolerance 0.02.

# %%
ex_losses = [3.00, 2.98, 2.99, 3.80, 3.40, 3.02, 2.97, 2.96]
ex_first, ex_interval, ex_beta, ex_factor, ex_tol = 500, 10, 0.9, 1.2, 0.02
ex_ref, ex_flagged = ex_losses[0], []
for i in range(1, len(ex_losses)):
    if ex_losses[i] > ex_factor * ex_ref:
        ex_flagged.append(ex_first + i * ex_interval)
    else:
        ex_ref = ex_beta * ex_ref + (1 - ex_beta) * ex_losses[i]
print("flagged steps:", ex_flagged, " reference kept at", round(ex_ref, 4))

# %% [markdown]
# The row at step 540 is below 1.2 times the reference, so it is not flagged and enters the
# average; the run is back within 2% of the pre-spike reference only at step 550.
#
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

VARIANTS = {'A': {'first_step': 20000,
       'interval': 10,
       'ema_beta': 0.9,
       'spike_factor': 1.2,
       'tolerance': 0.02,
       'losses': [2.192,
                  2.196,
                  2.191,
                  2.177,
                  2.196,
                  2.192,
                  2.183,
                  2.193,
                  3.177,
                  3.505,
                  2.844,
                  2.456,
                  2.29,
                  2.23,
                  2.183,
                  2.193,
                  2.188,
                  2.185,
                  2.18,
                  2.185,
                  2.187,
                  2.185,
                  2.198,
                  2.196,
                  2.163,
                  2.17,
                  2.731,
                  2.65,
                  2.342,
                  2.21,
                  2.205,
                  2.177,
                  2.183,
                  2.204,
                  2.192,
                  2.192,
                  2.181,
                  2.171,
                  2.187,
                  2.187]},
 'B': {'first_step': 51000,
       'interval': 50,
       'ema_beta': 0.95,
       'spike_factor': 1.15,
       'tolerance': 0.02,
       'losses': [2.209,
                  2.203,
                  2.204,
                  2.186,
                  2.223,
                  2.217,
                  2.865,
                  3.143,
                  2.651,
                  2.334,
                  2.282,
                  2.204,
                  2.203,
                  2.199,
                  2.21,
                  2.205,
                  2.211,
                  2.201,
                  2.207,
                  2.198,
                  2.213,
                  2.207,
                  2.208,
                  2.209,
                  3.514,
                  2.986,
                  2.557,
                  2.3,
                  2.233,
                  2.192,
                  2.212,
                  2.206,
                  2.214,
                  2.211,
                  2.206,
                  2.207,
                  2.203,
                  2.212,
                  2.194,
                  2.2]},
 'C': {'first_step': 3000,
       'interval': 5,
       'ema_beta': 0.9,
       'spike_factor': 1.1,
       'tolerance': 0.01,
       'losses': [3.306,
                  3.245,
                  3.283,
                  3.27,
                  3.271,
                  3.273,
                  3.249,
                  3.272,
                  3.263,
                  3.318,
                  3.997,
                  4.249,
                  3.759,
                  3.394,
                  3.258,
                  3.266,
                  3.277,
                  3.267,
                  3.282,
                  3.266,
                  3.269,
                  3.288,
                  3.274,
                  3.26,
                  3.264,
                  3.273,
                  3.29,
                  3.261,
                  4.891,
                  4.096,
                  3.61,
                  3.357,
                  3.306,
                  3.269,
                  3.262,
                  3.269,
                  3.223,
                  3.273,
                  3.247,
                  3.237]},
 'D': {'first_step': 120000,
       'interval': 20,
       'ema_beta': 0.8,
       'spike_factor': 1.15,
       'tolerance': 0.03,
       'losses': [1.786,
                  1.789,
                  1.802,
                  1.795,
                  1.778,
                  1.79,
                  1.786,
                  2.418,
                  2.277,
                  2.25,
                  1.935,
                  1.855,
                  1.792,
                  1.794,
                  1.779,
                  1.806,
                  1.776,
                  1.798,
                  1.788,
                  1.784,
                  1.785,
                  1.785,
                  1.793,
                  1.789,
                  1.801,
                  2.274,
                  2.506,
                  2.14,
                  1.957,
                  1.81,
                  1.788,
                  1.791,
                  1.779,
                  1.797,
                  1.791,
                  1.797,
                  1.797,
                  1.783,
                  1.784,
                  1.788]}}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"tds-basics:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# Your variant is one run's log: `losses[i]` was logged at step `first_step + i * interval`, and
# the detector uses `ema_beta` ($\beta$), `spike_factor` and `tolerance`. Apply the definition
# above and compute
# - `spike_steps`: the optimisation step of every flagged row, in order (a list of ints);
# - `recovery_steps`: for each spike, in order, the number of optimisation steps from its first
#   flagged row to the row where the run has recovered (a list of ints).

# %% nbgrader={"grade": false, "grade_id": "answer_spikes", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def detect(q):
    losses, step = q["losses"], lambda i: q["first_step"] + i * q["interval"]
    ref, flagged, starts, previous = losses[0], [], [], False
    for i in range(1, len(losses)):
        spike = losses[i] > q["spike_factor"] * ref
        if spike:
            flagged.append(i)
            if not previous:
                starts.append((i, ref))
        else:
            ref = q["ema_beta"] * ref + (1 - q["ema_beta"]) * losses[i]
        previous = spike
    recovered = []
    for i, pre in starts:
        j = next(j for j in range(i + 1, len(losses)) if losses[j] <= (1 + q["tolerance"]) * pre)
        recovered.append(step(j) - step(i))
    return [step(i) for i in flagged], recovered


spike_steps, recovery_steps = detect(params)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_spikes", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
assert isinstance(spike_steps, list) and isinstance(recovery_steps, list), "spike_steps and recovery_steps should be lists"
assert all(isinstance(s, numbers.Integral) for s in spike_steps + recovery_steps), "the entries are whole numbers (steps)"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("tds-b10-loss-spike", "check_spikes", globals())
### END HIDDEN TESTS
