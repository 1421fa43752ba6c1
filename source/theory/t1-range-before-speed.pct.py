# %% [markdown]
# # t1-range-before-speed · Range before speed: when a loss scale works, and when it fails
#
# *Chapter II.8 Training at Scale · theory · why it works, and when it does not (1 of 4)*
#
# **Proposition 1.** Mixed precision is a question of range before it is a question of speed.
#
# The speed is real: 16-bit tensors move half the bytes, and tensor cores multiply them
# several times faster than fp32. But the speed is worth having only if the numbers survive
# being stored in 16 bits. fp16 has precision to spare for gradients (10 fraction bits) and a
# narrow exponent (5 bits); small gradients fall through its floor and become exactly zero.
# Loss scaling exists to prevent that. This notebook asks why it works, and the three ways in
# which it stops working.
#
# You know the casts from w3-range and the picture from c2-number-line; the scaler's state
# machine is e05-loss-scaling. Sources: IEEE 754-2008 binary16; the bfloat16 format as torch
# implements it; Micikevicius et al., *Mixed Precision Training*, ICLR 2018, §3; torch's
# `torch.amp.GradScaler`.

# %% [markdown]
# ## 1. Why a scale works at all
#
# Multiplying the loss by $S = 2^k$ multiplies every gradient by $2^k$ (chain rule), and
# multiplying by a power of two changes exponents only, not significant bits. The optimizer
# gets the gradient back by dividing by $2^k$ in fp32, exactly. So the scale costs nothing,
# *provided* every scaled gradient lands inside fp16's window:
#
# - **floor:** a value is lost when $|g|\,2^k \le 2^{-25}$ (it rounds to 0; values between
#   $2^{-25}$ and $2^{-24}$ round up to the smallest subnormal $2^{-24}$);
# - **ceiling:** a value overflows when $|g|\,2^k$ rounds above 65504, which happens from
#   65520 on; it becomes `inf`, and the whole step is unusable.
#
# ## 2. First failure: the histogram is wider than the window
#
# For one step's gradients define
#
# - $k_{\max}$, the largest $k \ge 0$ with $\max|g| \cdot 2^k \le 65504$ (the ceiling), and
# - $k_{\text{rescue}}$, the smallest $k \ge 0$ at which no gradient becomes 0 (the floor).
#
# A static scale that loses nothing must satisfy $k_{\text{rescue}} \le k \le k_{\max}$:
# there are $\max(0,\ k_{\max} - k_{\text{rescue}} + 1)$ such scales. fp16's window spans
# from $2^{-24}$ to just under $2^{16}$, about 40 binades. If one step's gradients span
# more than that, from the smallest to the largest, *no* scale saves them all: the count is
# 0, and the scale can only choose which end to lose. bf16's window spans about 260 binades,
# which no gradient histogram fills.
#
# ## 3. Second failure: the dynamic scaler pays in skipped steps
#
# Nobody knows $k_{\max}$ in advance, and it moves during training. torch's `GradScaler`
# (the scheme of Micikevicius et al. §3.2) finds it by trial: on a step whose scaled
# gradients contain `inf` or `NaN` it **skips** the optimizer step and multiplies the scale
# by `backoff_factor` (0.5); after `growth_interval` consecutive clean steps it multiplies
# the scale by `growth_factor` (2.0). Every lesson costs a step:
#
# - at the start, one skipped step per halving from `init_scale` down to the ceiling
#   (Megatron-LM starts at $2^{32}$);
# - in steady state, one skipped step every `growth_interval` + 1 steps or so, because
#   growing is how the scaler tests the ceiling (torch's default interval of 2000 makes this
#   rare; a short interval makes it frequent);
# - in a loss spike, one skipped step for every step of the spike whose gradients overflow
#   at the scale then in force.
#
# ## 4. Third failure, and why bf16 sidesteps the first two
#
# bf16 keeps fp32's 8 exponent bits: its floor is $2^{-133}$ and its ceiling about
# $3.4\times10^{38}$, so for range it needs no scale at all, and no steps are skipped for
# range. It pays in precision: 7 fraction bits, so a normal number is rounded with relative
# error at most $2^{-8} \approx 0.4\%$. That is harmless for a gradient, and fatal for an
# update added to a weight stored in 16 bits: $w + u$ rounds back to $w$ when $|u|$ is below
# half a unit in the last place of $w$. This is why mixed precision keeps an fp32 master copy
# of the weights (Micikevicius et al. §3.1) in fp16 and in bf16 alike.
#
# ## 4b. At 8 bits the window shrinks again
#
# The FP8 formats of Micikevicius et al., *FP8 Formats for Deep Learning* (2022, Table 1), which
# torch has as `torch.float8_e4m3fn` and `torch.float8_e5m2`, make the first failure the rule:
#
# | format | largest finite | smallest normal | smallest subnormal | window |
# |---|---|---|---|---|
# | fp16 | 65504 | $2^{-14}$ | $2^{-24}$ | about 40 binades |
# | E5M2 | 57344 | $2^{-14}$ | $2^{-16}$ | about 32 binades |
# | E4M3 (`fn`: no inf) | 448 | $2^{-6}$ | $2^{-9}$ | about 18 binades |
#
# No single loss scale fits a whole network into 18 binades, so FP8 training scales each tensor
# on its own: **per-tensor scaling** chooses a factor from each tensor's largest magnitude, and
# the paper's recipe keeps E4M3 (more precision) for weights and activations and E5M2 (more
# range) for gradients. One outlier still pins a tensor's scale. **Block scaling** shrinks the
# unit further: the OCP *Microscaling (MX) Formats Specification* v1.0 (2023) gives every block
# of 32 elements its own shared scale, a power of two stored in 8 bits (E8M0). Each block then
# needs only its own 18 or 32 binades. The proposition holds at every width: range first.

# %% [markdown]
# ## 5. An example (not your variant)
#
# One step's gradients, and a short run of the largest gradient per step.

# %%
import math

import torch

example = {"grads": [3.0e-9, -4.1e-7, 2.2e-6, -8.5e-5, 6.0e-4, -0.013, 0.41, 7.3e-8],
           "grad_max": [2.4, 2.2, 2.5, 2.3, 2.1, 2.2, 2.4, 40.0, 38.0, 2.2, 2.4, 2.3, 2.2, 2.1],
           "init_scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5,
           "growth_interval": 3}


def lost(grads, dtype, k=0):
    """How many values become exactly 0 when torch.tensor(grads) * 2**k is cast to dtype."""
    return int(((torch.tensor(grads) * 2.0 ** k).to(dtype) == 0).sum())


FP16_MAX = torch.finfo(torch.float16).max
peak = max(abs(g) for g in example["grads"])
k_max = max(k for k in range(128) if peak * 2.0 ** k <= FP16_MAX)
k_rescue = min(k for k in range(128) if lost(example["grads"], torch.float16, k) == 0)
print(f"lost unscaled: fp16 {lost(example['grads'], torch.float16)}, "
      f"bf16 {lost(example['grads'], torch.bfloat16)}")
print(f"k_max = {k_max}, k_rescue = {k_rescue}, safe static scales: {max(0, k_max - k_rescue + 1)}")
as_bf16 = torch.tensor(example["grads"], dtype=torch.float64).to(torch.bfloat16).double()
rel = ((as_bf16 - torch.tensor(example["grads"], dtype=torch.float64)).abs()
       / torch.tensor(example["grads"], dtype=torch.float64).abs())
print(f"bf16's largest relative rounding error here: {rel.max().item():.5f} (bound 2^-8 = {2**-8:.5f})")

# %% [markdown]
# The dynamic scaler, run twice. First by hand (the rule of section 3), then with torch's
# own `GradScaler` on a one-parameter model whose gradient is made to pass through fp16, so
# that `inf` appears exactly where an fp16 backward pass would produce it.

# %%
def by_hand(grad_max, init_scale, growth_factor, backoff_factor, growth_interval):
    scale, clean, skipped = init_scale, 0, []
    for step, m in enumerate(grad_max):
        if torch.isinf((torch.tensor([m]) * scale).to(torch.float16)).item():
            skipped.append(step)
            scale, clean = scale * backoff_factor, 0
        else:
            clean += 1
            if clean == growth_interval:
                scale, clean = scale * growth_factor, 0
    return skipped, scale


def with_gradscaler(grad_max, init_scale, growth_factor, backoff_factor, growth_interval):
    w = torch.nn.Parameter(torch.tensor([1.0]))
    w.register_hook(lambda g: g.half().float())          # the gradient as fp16 would hold it
    opt = torch.optim.SGD([w], lr=0.0)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_factor=growth_factor,
                                  backoff_factor=backoff_factor, growth_interval=growth_interval)
    skipped = []
    for step, m in enumerate(grad_max):
        opt.zero_grad()
        scaler.scale((w * m).sum()).backward()
        if not torch.isfinite(w.grad).all():
            skipped.append(step)
        scaler.step(opt)
        scaler.update()
    return skipped, scaler.get_scale()


settings = {k: example[k] for k in ("init_scale", "growth_factor", "backoff_factor", "growth_interval")}
print("by hand    :", by_hand(example["grad_max"], **settings))
print("GradScaler :", with_gradscaler(example["grad_max"], **settings))

# %% [markdown]
# Steps 0 and 1 are the start-up lesson ($2^{16} \to 2^{14}$: $2.5 \times 2^{14} = 40960$
# fits). Step 5 is the scaler testing its ceiling: after three clean steps it grew back to
# $2^{15}$, and $2.2 \times 2^{15} \approx 72{,}000$ overflows. Steps 7 and 8 are the spike:
# each step of it costs a halving and a skipped update (a longer spike would have pushed the
# scale down to $2^{10}$, where $40 \times 2^{10}$ fits). Nine of fourteen updates were kept.
#
# What the sources say and do not say:
# - Micikevicius et al. (§3.2) describe a constant scale chosen by experiment (8 was enough
#   for their SSD detector) and, as the alternative, a dynamic scale lowered on overflow and
#   raised after a run of clean steps. The dynamic scheme's defaults in torch are
#   `init_scale` $2^{16}$, `growth_factor` 2, `backoff_factor` 0.5 and `growth_interval`
#   2000 (the `GradScaler` documentation).
# - The 65504 printed in §3.2 is fp16's largest finite value; `inf` starts at 65520, because
#   the cast rounds to nearest. A product of exactly $2^{16} = 65536$ is already `inf`.

# The run as a picture: the scale in force at each step (log scale), torch's own `GradScaler`
# recording it, with the skipped steps marked. The dashed line is the ceiling of each step, the
# largest power of two at which that step's largest gradient still fits below 65504: a step is
# skipped exactly where the scale stands above it.

# %%
import matplotlib.pyplot as plt


def scale_history(grad_max, init_scale, growth_factor, backoff_factor, growth_interval):
    """(the scale in force at each step, the skipped steps), from torch's own GradScaler."""
    w = torch.nn.Parameter(torch.tensor([1.0]))
    w.register_hook(lambda g: g.half().float())          # the gradient as fp16 would hold it
    opt = torch.optim.SGD([w], lr=0.0)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_factor=growth_factor,
                                  backoff_factor=backoff_factor, growth_interval=growth_interval)
    scales, skipped = [], []
    for step, m in enumerate(grad_max):
        scales.append(scaler.get_scale())
        opt.zero_grad()
        scaler.scale((w * m).sum()).backward()
        if not torch.isfinite(w.grad).all():
            skipped.append(step)
        scaler.step(opt)
        scaler.update()
    return scales, skipped


def plot_scale_trajectory(grad_max, settings, title):
    scales, skipped = scale_history(grad_max, **settings)
    steps = list(range(len(grad_max)))
    ceiling = [math.floor(math.log2(FP16_MAX / m)) for m in grad_max]
    fig, ax = plt.subplots(figsize=(9, 3.2))
    ax.plot(steps, [math.log2(s) for s in scales], "o-", color="#1f77b4", label="log2(scale in force)")
    ax.step(steps, ceiling, where="mid", linestyle="--", color="#7f7f7f",
            label="largest k with max|g| * 2^k <= 65504")
    ax.scatter(skipped, [math.log2(scales[i]) for i in skipped], marker="x", s=90, color="#d62728",
               zorder=3, label="skipped step (inf in the fp16 gradients)")
    ax.set_xlabel("step")
    ax.set_ylabel("log2 of the loss scale")
    ax.set_title(title)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=3, frameon=False, fontsize=8)
    fig.tight_layout()
    plt.show()
    return fig


example_figure = plot_scale_trajectory(example["grad_max"], settings, "The example: GradScaler's scale over 14 steps")

# %% [markdown]
# ## 6. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id.
# On JupyterHub that is your hub user name; working on your own machine, start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab` so that you see the same variant the grader
# uses. Editing this cell does not change what you are graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {
    "A": {"grads": [4.43e-06, -0.0303, 1.25e-05, 2.95e-08, 0.000123, -5.42e-09, 5.08e-09,
                    -0.000403, 0.0896, 0.000192, -1.77e-08, -1.84e-05, -3.27e-08, -1.64e-09,
                    3.55e-06, 1.54e-05],
          "grad_max": [1.6, 1.4, 1.5, 1.9993, 1.5, 1.0, 1.6, 1.4, 1.5, 1.6, 1.4, 1.5, 62.0, 1.5,
                       1.4, 1.6, 1.5, 1.3, 1.5, 1.4, 1.6, 1.5, 1.4, 1.5],
          "init_scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5,
          "growth_interval": 4},
    "B": {"grads": [1.32e-08, -6.01e-06, -5.02e-15, 2.22e-11, 1.3e-05, 1.91e-07, -3.65e-13,
                    6.27e-13, 2.32e-14, 3.83e-14, -1.65e-10, -0.00164, 2.47e-14, -3.96e-08,
                    0.166, -1.28e-13],
          "grad_max": [0.31, 0.29, 0.33, 0.30, 0.28, 0.32, 0.30, 0.29, 0.31, 0.27, 0.30, 0.32,
                       0.29, 0.30, 0.28, 0.31, 0.5, 0.29, 0.31, 0.30, 0.28, 0.32, 0.30, 0.4998,
                       0.31, 0.30, 0.28, 0.31, 0.29, 0.30],
          "init_scale": 4294967296.0, "growth_factor": 2.0, "backoff_factor": 0.5,
          "growth_interval": 6},
    "C": {"grads": [4.22e-06, 0.00047, -1.87e-06, -1.22e-06, -0.000818, -8.64e-05, -6.26e-06,
                    0.00258, -2.8e-07, 1.21e-06, 0.00189, 0.00228, 0.00891, 4.11e-06,
                    5.27e-05, -0.000124],
          "grad_max": [4.0, 3.6, 4.0, 2.5, 2.0, 1.6, 1.2, 0.9, 0.7, 0.52, 0.40, 0.31, 0.24,
                       0.9996, 1.2, 0.12, 0.09, 0.07, 0.055, 0.045, 0.036, 0.03, 0.025, 0.02,
                       0.016],
          "init_scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5,
          "growth_interval": 3},
    "D": {"grads": [1.67e-09, 0.00136, -1.01e-07, 0.0105, 2.24e-07, 2.32e-06, -2.23e-09,
                    -0.684, 7.73e-08, -0.000815, 0.00011, 7.14e-09, -2.51e-09, -9.28e-10,
                    -4.62, -6.3],
          "grad_max": [2.1, 1.9, 2.0, 2.2, 1.8, 2.0, 1.9, 2.1, 2.0, 850.0, 256.0, 511.8, 2.0,
                       1.9, 2.1, 2.0, 1.8, 2.2, 1.9, 2.0, 2.1, 1.9],
          "init_scale": 128.0, "growth_factor": 2.0, "backoff_factor": 0.5,
          "growth_interval": 4},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"theory:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {len(params['grads'])} gradients, "
      f"{len(params['grad_max'])} steps, init_scale {params['init_scale']:g}, "
      f"growth_interval {params['growth_interval']}")

# %% [markdown]
# ### 6a. Does bf16 need a scale for these gradients? What does it cost instead?
#
# For your variant's `grads` (one step's gradients), cast the way torch does
# (`torch.tensor(grads).to(...)`), give
# - `fp16_lost_count`: how many become exactly 0 in fp16 (an int);
# - `bf16_lost_count`: how many become exactly 0 in bf16 (an int);
# - `bf16_max_rel_error`: the largest relative rounding error $|\tilde g - g|/|g|$ that the
#   bf16 cast makes on them, $\tilde g$ the cast value (a float; measure it, do not quote
#   the bound).

# %% nbgrader={"grade": false, "grade_id": "answer_casts", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
grads64 = torch.tensor(params["grads"], dtype=torch.float64)
fp16_lost_count = int((torch.tensor(params["grads"]).to(torch.float16) == 0).sum())
bf16_lost_count = int((torch.tensor(params["grads"]).to(torch.bfloat16) == 0).sum())
bf16_values = torch.tensor(params["grads"]).to(torch.bfloat16).double()
bf16_max_rel_error = ((bf16_values - grads64).abs() / grads64.abs()).max().item()
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_casts", "locked": true, "points": 2.5, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
for name in ("fp16_lost_count", "bf16_lost_count"):
    assert isinstance(globals()[name], numbers.Integral), f"{name} should be an int"
assert isinstance(bf16_max_rel_error, numbers.Real), "bf16_max_rel_error should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("t1-range-before-speed", "check_casts", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 6b. Is there a safe static scale?
#
# For the same `grads` in fp16:
# - `max_log2_scale`: $k_{\max}$, the largest integer $k \ge 0$ with
#   $\max|g| \cdot 2^k \le 65504$;
# - `min_rescue_log2_scale`: $k_{\text{rescue}}$, the smallest integer $k \ge 0$ at which
#   none of the values becomes 0 after scaling by $2^k$ and casting (it may lie above
#   $k_{\max}$);
# - `safe_scale_count`: how many integers $k \ge 0$ lose nothing at either end (0 if none).

# %% nbgrader={"grade": false, "grade_id": "answer_window", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
peak = max(abs(g) for g in params["grads"])
max_log2_scale = max(k for k in range(128) if peak * 2.0 ** k <= 65504.0)
min_rescue_log2_scale = min(k for k in range(128) if lost(params["grads"], torch.float16, k) == 0)
safe_scale_count = max(0, max_log2_scale - min_rescue_log2_scale + 1)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_window", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
for name in ("max_log2_scale", "min_rescue_log2_scale", "safe_scale_count"):
    assert isinstance(globals()[name], numbers.Integral), f"{name} should be an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("t1-range-before-speed", "check_window", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 6c. What does the dynamic scaler cost?
#
# Run `GradScaler`'s rule (section 3) with your variant's `init_scale`, `growth_factor`,
# `backoff_factor` and `growth_interval` over the steps of `grad_max` (the largest
# |gradient| of each step; the step overflows when that value times the scale in force,
# cast to fp16, is `inf`). Give
# - `skipped_steps`: the 0-based indices of the steps whose update is skipped (a list of ints);
# - `final_scale`: the scale after the last step's update (a float).

# %% nbgrader={"grade": false, "grade_id": "answer_scaler", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
skipped_steps, final_scale = by_hand(params["grad_max"], params["init_scale"], params["growth_factor"],
                                     params["backoff_factor"], params["growth_interval"])
final_scale = float(final_scale)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_scaler", "locked": true, "points": 2.5, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
assert isinstance(skipped_steps, list) and all(isinstance(i, numbers.Integral) for i in skipped_steps), \
    "skipped_steps should be a list of ints"
assert isinstance(final_scale, numbers.Real), "final_scale should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("t1-range-before-speed", "check_scaler", globals())
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "task_range_vs_speed", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": true} deletable=false editable=false
# ### 6d. In words (graded by hand, 4 points)
#
# Using your own numbers from 6a to 6c, explain in a short paragraph or a few bullet points:
# 1. why your fp16 gradients need a loss scale and your bf16 gradients do not (or, if your
#    fp16 gradients lose nothing, why a scale would still be used);
# 2. whether a single static scale could have saved this step's gradients, and what decides
#    that;
# 3. where the skipped steps of 6c come from (which of them are start-up, ceiling tests,
#    spike), and what they cost;
# 4. what bf16 gives up in exchange for its range, and why that does not make an fp32 master
#    copy of the weights unnecessary.
#
# === BEGIN MARK SCHEME ===
# One point per item; half a point when the idea is right but not tied to the student's numbers.
# 1. fp16's floor: values at or below 2^-25 round to 0 (quotes their fp16_lost_count); bf16's
#    floor is 2^-133, far below any of them (bf16_lost_count = 0). Variant C: nothing is lost
#    unscaled, but the histogram sits low in the window, and a scale still protects
#    later, smaller gradients (the run's gradients shrink) and the subnormal values' precision.
# 2. A static scale exists iff k_rescue <= k_max; the count is k_max - k_rescue + 1, or 0 when
#    the gradients span more binades than fp16's window (about 40: 2^-24 to 65504). Variant B
#    must say that no static scale works (rescue 23 > max 18): the spread is about 45 binades,
#    so one end is lost whatever the scale. Others name their window.
# 3. Skips are the price of finding the ceiling by overflowing: start-up skips while the scale
#    halves from init_scale (B: 15 steps from 2^32), periodic skips when the scaler grows into
#    the ceiling every growth_interval clean steps (A; B step 29), and one skip per overflowing
#    step of a spike (A step 12, B step 16, C step 14, D steps 9-10). Products of exactly 2^16
#    are already inf (A step 5: 1.0 x 2^16; B step 16: 0.5 x 2^17; C's three start-up skips
#    include 4 x 2^14; D step 10: 256 x 2^8), while products just above 65504 round down and
#    are kept (A step 3, B step 23, C step 13, D step 11, all about 65510).
#    Each skip wastes a whole forward and backward pass.
# 4. bf16 has 7 fraction bits: relative rounding error up to 2^-8 (their measured
#    bf16_max_rel_error just below it). A small update added to a 16-bit weight can round away
#    (w + u == w when |u| is under half an ulp of w), so the weights are kept and updated in
#    fp32 in bf16 training too.
# === END MARK SCHEME ===

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer_range_vs_speed", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# (Model answer for variant A.)
# 1. Five of the sixteen fp16 values (all at or below 2^-25, about 3e-8) round to 0, so
#    their signal is lost unless the loss is scaled; in bf16 none is lost, since its floor
#    2^-133 lies about a hundred binades below the smallest of them. For range bf16 needs no
#    scale.
# 2. Yes: the largest value (0.0896) allows k up to 19, and k = 5 already rescues the
#    smallest (1.64e-9), so 15 static scales (2^5 to 2^19) lose nothing. What decides it is
#    the spread of the histogram, about 26 binades here, against fp16's window of about 40.
# 3. Step 0 is start-up (2^16 x 1.6 overflows; 2^15 fits). Steps 5, 10 and 21 are the scaler
#    growing back to 2^16 after four clean steps and hitting the ceiling. Step 12 is the
#    spike (62 x 2^15 overflows). Five of 24 updates are lost, each a full forward and
#    backward pass.
# 4. bf16 keeps 7 fraction bits: the largest relative rounding error on these gradients is
#    about 0.0032, close to the bound 2^-8. Harmless for a gradient, but an update smaller
#    than half an ulp of a bf16 weight disappears when added, so an fp32 master copy of the
#    weights is still needed.
# ### END SOLUTION
