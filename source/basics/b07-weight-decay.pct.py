# %% [markdown]
# # b07-weight-decay · Weight decay
#
# *Chapter II.8 Training at Scale · basics · term 7 of 11*
#
# **Weight decay** is a pull toward zero applied to the parameters on every optimiser step,
# whatever the gradient says. **Decoupled** weight decay (AdamW) applies that pull to the
# weights themselves, as a multiplication. It is not added to the gradient, so Adam's
# normalisation never sees it. On step $t$, `torch.optim.AdamW` first multiplies every
# decayed parameter by
# $$1 - \eta_t\,\lambda ,$$
# where $\eta_t$ is the learning rate *in force at that step* (after any scheduler) and
# $\lambda$ is `weight_decay`. Only then does it take the Adam step.
#
# Two consequences follow, and the check below turns on both:
# - the pull is tiny: with $\eta = 3\times10^{-4}$ and $\lambda = 0.1$ a weight loses
#   $3\times10^{-5}$ of itself per step, not a tenth;
# - the pull follows the schedule. During warmup $\eta_t$ is small, so the decay is weak.
#
# **Paper and torch differ.** Loshchilov and Hutter's Algorithm 2 (ICLR 2019) multiplies the
# decay by the schedule multiplier $\eta_t$ only, not by the base learning rate $\alpha$.
# torch multiplies it by the whole learning rate. So a $\lambda$ quoted from the paper and
# torch's `weight_decay` are different numbers for the same run.

# %% [markdown]
# ## An idle parameter
#
# Take an embedding row of a token that has not yet appeared in any batch. Its gradient is
# exactly zero, so its Adam moments are still zero and its Adam step is $0/(0+\epsilon) = 0$.
# Only the decay moves it. After the idle steps $t = t_0, \dots, t_0 + k - 1$ it has been
# multiplied by
# $$\prod_{t=t_0}^{t_0+k-1} (1 - \eta_t\lambda), \qquad
#   \eta_t = \begin{cases} \eta\,t/W & t < W \\ \eta & t \ge W \end{cases}$$
# with the chapter's linear warmup over $W$ steps (exercise e02). torch does exactly this
# when a `LambdaLR` scheduler sets the rate. Here is a short example: $\eta = 10^{-2}$,
# $\lambda = 0.5$, $W = 20$, idle for 40 steps from step 10.

# %%
import torch

torch.manual_seed(0)
peak, wd, W, t0, k = 1e-2, 0.5, 20, 10, 40
row = torch.nn.Parameter(torch.ones(4, dtype=torch.float64))
opt = torch.optim.AdamW([row], lr=peak, weight_decay=wd)
# the scheduler counts from the first idle step, so shift its clock by t0
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (t0 + s) / W))
for _ in range(k):
    row.grad = torch.zeros_like(row)        # the token never occurs: zero gradient
    opt.step()
    sched.step()

factor = 1.0
for t in range(t0, t0 + k):
    factor *= 1 - (peak * t / W if t < W else peak) * wd
print(f"torch AdamW: {row[0].item():.12f}   product formula: {factor:.12f}")

# %% [markdown]
# The two agree to the last digit.
#
# ## Your variant

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {
    "A": {"lr": 3.0e-4, "weight_decay": 0.1, "warmup": 2000, "start": 0, "steps": 30_000},
    "B": {"lr": 6.0e-4, "weight_decay": 0.1, "warmup": 715, "start": 0, "steps": 5000},
    "C": {"lr": 1.2e-4, "weight_decay": 0.1, "warmup": 2000, "start": 500, "steps": 1000},
    "D": {"lr": 1.0e-4, "weight_decay": 0.01, "warmup": 10_000, "start": 20_000, "steps": 200_000},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"basics:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# The settings are published ones: **A** Llama 2 7B (peak 3.0e-4, decay 0.1, 2000 warmup
# steps); **B** build-nanogpt's GPT-2 124M (6e-4, 0.1, 715); **C** OPT-175B (1.2e-4, 0.1,
# 2000); **D** BERT-base (1e-4, 0.01, 10,000). The idle stretch (`start`, `steps`) is a rare
# token's.
#
# Compute, for your variant:
# - `per_step_factor`: the factor one step at the **peak** rate multiplies a weight by;
# - `decay_factor`: the factor the idle row has been multiplied by after the idle steps
#   `start` … `start + steps - 1`, with the warmup schedule above;
# - `steps_to_halve`: the smallest whole number of steps at the peak rate after which an idle
#   weight is at most half its size (an int).

# %% nbgrader={"grade": false, "grade_id": "answer_decay", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
import math

eta, lam = params["lr"], params["weight_decay"]
W = params["warmup"]
per_step_factor = 1 - eta * lam
decay_factor = math.exp(sum(math.log1p(-(eta * t / W if t < W else eta) * lam)
                            for t in range(params["start"], params["start"] + params["steps"])))
steps_to_halve = math.ceil(math.log(0.5) / math.log(per_step_factor))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_decay", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the numbers are checked when your notebook is graded.
for name in ("per_step_factor", "decay_factor", "steps_to_halve"):
    assert name in globals(), f"{name} is not defined yet"
for name in ("per_step_factor", "decay_factor"):
    assert isinstance(globals()[name], numbers.Real), f"{name} should be a number"
assert 0 < decay_factor <= 1, "a factor that shrinks a weight lies between 0 and 1"
assert isinstance(steps_to_halve, numbers.Integral), "steps_to_halve is a count of steps: an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("b07-weight-decay", "check_decay", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## Look at it
#
# The idle row's size over your stretch, with the schedule and (dashed) as if the peak rate
# had held throughout. The gap is the warmup's doing. When the stretch lies wholly after
# warmup the two curves coincide.

# %%
import matplotlib.pyplot as plt

ts = range(params["start"], params["start"] + params["steps"])
with_schedule, at_peak, w_s, w_p = [], [], 1.0, 1.0
for t in ts:
    rate = params["lr"] * t / params["warmup"] if t < params["warmup"] else params["lr"]
    w_s *= 1 - rate * params["weight_decay"]
    w_p *= 1 - params["lr"] * params["weight_decay"]
    with_schedule.append(w_s)
    at_peak.append(w_p)
fig, ax = plt.subplots(figsize=(6, 3))
ax.plot(list(ts), with_schedule, label="AdamW with the warmup schedule")
ax.plot(list(ts), at_peak, "--", label="peak rate throughout")
ax.set_xlabel("step")
ax.set_ylabel("size of the idle weight")
ax.legend()
plt.show()
