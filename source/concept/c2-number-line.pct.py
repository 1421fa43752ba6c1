# %% [markdown]
# # c2-number-line · The fp16 and bf16 number lines: gradients falling off the floor, and a scale that lifts them
#
# *Chapter II.8 Training at Scale · concept · what to picture (2 of 2)*
#
# **Proposition 1** says that mixed precision is a question of range before it is a question
# of speed. This notebook is the picture behind that sentence: the positive number line on a
# logarithmic axis, the stretch of it that each 16-bit format can hold, and a histogram of
# real-looking gradient magnitudes laid on top. Part of the histogram hangs off fp16's lower
# end; multiplying the loss by $2^k$ slides the whole histogram $k$ binades to the right.
#
# The casting rules are derived in the worked problem w3-range; here you read the picture.
# Apparatus: floating point (0.NU.01).

# %% [markdown]
# ## 1. A format is a window on the log axis
#
# Put every positive number at $x = \log_2 |g|$. One step of $x$ is one *binade*: the numbers
# $[2^E, 2^{E+1})$. A floating-point format holds:
#
# | band | fp16 (5 exponent bits, 10 fraction bits) | bf16 (8 exponent bits, 7 fraction bits) |
# |---|---|---|
# | overflows to `inf` | from about $2^{16}$ ($\ge 65520$ rounds to inf) | from about $2^{128}$ |
# | normal numbers | $2^{-14}$ up to $65504$: binades $E = -14 \dots 15$ | binades $E = -126 \dots 127$ |
# | subnormals (fewer and fewer significant bits) | binades $E = -24 \dots -15$ | binades $E = -133 \dots -127$ |
# | rounds to 0 | below about $2^{-25}$ | below about $2^{-134}$ |
#
# Both formats are 16 bits wide. fp16 spends its bits on precision (10 fraction bits)
# and has a window about 40 binades wide; bf16 spends them on range (8 exponent bits, the
# same as fp32) and has a window of about 260 binades, with only 7 fraction bits.
#
# Near the floor the cast rounds to the nearest representable number, and the smallest
# representable positive number in fp16 is $2^{-24}$. So a value is lost (becomes exactly
# 0) when $|g| \le 2^{-25}$, and a value between $2^{-25}$ and $2^{-24}$ rounds *up* and
# survives. A subnormal survives, but with fewer significant bits: $2^{-24}$ has one.
#
# ## 2. A loss scale slides the histogram, not the window
#
# Multiplying the loss by $S = 2^k$ multiplies every gradient by $2^k$ (chain rule), which
# adds $k$ to every $x$ and changes no significant bit. Seen from the *unscaled* gradients,
# the window slides the other way: a gradient $2^E$ survives the cast after scaling when
# $E + k$ lies in fp16's window, so the surviving unscaled exponents are
#
# $$ -24 - k \;\le\; E \;\le\; 15 - k . $$
#
# The window keeps its width. Whatever the scale, fp16 cannot hold a histogram wider than
# about 40 binades: what a scale gains at the bottom it gives up at the top.

# %% [markdown]
# ## 1b. Four formats side by side, 8-bit ones included
#
# Since 2022 accelerators also multiply in 8 bits. Micikevicius et al., *FP8 Formats for Deep
# Learning* (2022, arXiv 2209.05433, Table 1) define two formats, in torch `torch.float8_e5m2`
# and `torch.float8_e4m3fn`:
#
# | format | exponent, fraction bits | largest finite | smallest normal | smallest subnormal |
# |---|---|---|---|---|
# | fp16 | 5, 10 | 65504 | $2^{-14}$ | $2^{-24}$ |
# | bf16 | 8, 7 | about $3.39\times10^{38}$ | $2^{-126}$ | $2^{-133}$ |
# | E5M2 | 5, 2 | 57344 | $2^{-14}$ | $2^{-16}$ |
# | E4M3 (`fn`: finite, no inf) | 4, 3 | 448 | $2^{-6}$ | $2^{-9}$ |
#
# E5M2 is fp16's exponent range with two fraction bits: the window of gradients. E4M3 pays for
# a third fraction bit with about 14 binades of range (about 18 binades against E5M2's 32, even
# though it reuses the all-ones exponent for numbers: only S.1111.111 is NaN, so its top is
# $1.75 \times 2^8 = 448$). It has no infinity: torch 2.13 saturates a cast past 448 to 448,
# while other stacks may give NaN. E4M3 is the window of weights and activations in the
# paper's recipe. An 18-binade window cannot hold a whole network's values at one scale,
# so FP8 training scales each tensor by its own factor (per-tensor scaling), or each block of 32
# values by a shared power of two (the OCP *Microscaling Formats* v1.0 block scaling, the scale
# stored as E8M0). The picture below draws each window from `torch.finfo`, on one axis.

# %%
import math

import matplotlib.pyplot as plt
import torch

FORMAT_WINDOWS = {}      # name -> (log2 smallest subnormal, log2 smallest normal, log2 largest finite)
for name, dtype in {"fp16": torch.float16, "bf16": torch.bfloat16,
                    "E5M2 (float8_e5m2)": torch.float8_e5m2,
                    "E4M3 (float8_e4m3fn)": torch.float8_e4m3fn}.items():
    info = torch.finfo(dtype)
    FORMAT_WINDOWS[name] = (math.log2(info.tiny * info.eps), math.log2(info.tiny), math.log2(info.max))
    print(f"{name:22s} subnormals from 2^{FORMAT_WINDOWS[name][0]:.0f}, normals 2^{FORMAT_WINDOWS[name][1]:.0f}"
          f" to {info.max:.6g}: {FORMAT_WINDOWS[name][2] - FORMAT_WINDOWS[name][0]:.0f} binades")


def draw_format_windows(windows, left=-40, right=20):
    """One row per format: its subnormal and normal bands on the log2 axis (bf16 runs off both ends)."""
    fig, ax = plt.subplots(figsize=(10, 2.8))
    for row, (name, (floor, tiny, top)) in enumerate(windows.items()):
        ax.broken_barh([(floor, tiny - floor)], (row - 0.35, 0.7), color="#ff7f0e", alpha=0.6,
                       label="subnormal" if row == 0 else None)
        ax.broken_barh([(tiny, top - tiny)], (row - 0.35, 0.7), color="#2ca02c", alpha=0.6,
                       label="normal" if row == 0 else None)
    ax.set_yticks(range(len(windows)), list(windows))
    ax.set_xlim(left, right)
    ax.set_xlabel("log2 |x|  (bf16's window runs from -133 to 128, beyond both edges)")
    ax.legend(ncol=2, frameon=False, loc="lower left", fontsize=8)
    ax.set_title("What each format holds, on one log axis", fontsize=10)
    fig.tight_layout()
    plt.show()
    return fig


format_figure = draw_format_windows(FORMAT_WINDOWS)

# %% [markdown]
# ## 3. An example (not your variant)
#
# Twenty gradients, and the scale $2^{10}$.

# %%
example_grads = [2.1e-10, -6.0e-9, 1.7e-8, -2.5e-8, 4.4e-8, -9.0e-8, 2.2e-7, -5.1e-7,
                 1.3e-6, -3.0e-6, 7.7e-6, -1.9e-5, 4.1e-5, -1.2e-4, 3.3e-4, -8.0e-4,
                 2.6e-3, -7.4e-3, 0.021, -0.6]
example_k = 10

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def cast_scaled(grads, dtype, k=0):
    """The values after torch.tensor(grads) * 2**k is cast to dtype, back as Python floats."""
    return (torch.tensor(grads) * 2.0 ** k).to(dtype).float().tolist()


def fates(grads, dtype, k=0):
    """'lost', 'subnormal', 'normal' or 'overflow' for each value, after scaling and casting."""
    tiny = torch.finfo(dtype).tiny
    out = []
    for v in cast_scaled(grads, dtype, k):
        if v == 0:
            out.append("lost")
        elif math.isinf(v):
            out.append("overflow")
        else:
            out.append("subnormal" if abs(v) < tiny else "normal")
    return out


for name, dtype in DTYPES.items():
    f = fates(example_grads, dtype)
    print(f"{name}: lost {f.count('lost')}/20, subnormal {f.count('subnormal')}/20")
f = fates(example_grads, torch.float16, example_k)
print(f"fp16 after 2^{example_k}: lost {f.count('lost')}/20, overflow {f.count('overflow')}/20, "
      f"surviving exponents {-24 - example_k} .. {15 - example_k}")

# %% [markdown]
# The picture: a histogram of $\lfloor\log_2|g|\rfloor$ (one bar per binade, coloured by
# what the cast does to the values in it) on the bands of each format. Top: fp16 as
# computed. Middle: fp16 after the scale. Bottom: bf16 as computed, on its much wider axis.

# %%
COLOURS = {"lost": "#d62728", "subnormal": "#ff7f0e", "normal": "#2ca02c", "overflow": "#7f7f7f"}


def draw_number_line(grads, k, title):
    rows = [("fp16, as computed", torch.float16, 0), (f"fp16, scaled by 2^{k}", torch.float16, k),
            ("bf16, as computed", torch.bfloat16, 0)]
    fig, axes = plt.subplots(3, 1, figsize=(10, 7.2))
    for ax, (label, dtype, shift) in zip(axes, rows):
        info = torch.finfo(dtype)
        tiny, top = math.log2(info.tiny), math.log2(info.max)
        floor = tiny + math.log2(info.eps)                # the smallest subnormal
        left, right = (-45, 22) if dtype == torch.float16 else (-142, 135)
        ax.axvspan(left, floor - 1, color=COLOURS["lost"], alpha=0.12)
        ax.axvspan(floor - 1, tiny, color=COLOURS["subnormal"], alpha=0.15)
        ax.axvspan(tiny, top, color=COLOURS["normal"], alpha=0.08)
        ax.axvspan(top, right, color=COLOURS["overflow"], alpha=0.2)
        binades = [math.floor(math.log2(abs(g))) + shift for g in grads]
        fate = fates(grads, dtype, shift)
        bottom = {}
        for kind in ("lost", "subnormal", "normal", "overflow"):
            counts = {}
            for b, f in zip(binades, fate):
                if f == kind:
                    counts[b] = counts.get(b, 0) + 1
            xs = sorted(counts)
            ax.bar([x + 0.5 for x in xs], [counts[x] for x in xs], width=0.9,
                   bottom=[bottom.get(x, 0) for x in xs], color=COLOURS[kind], label=kind)
            for x in xs:
                bottom[x] = bottom.get(x, 0) + counts[x]
        ax.set_xlim(left, right)
        ax.set_ylabel("count")
        ax.set_title(label, fontsize=10, loc="left")
    axes[0].legend(ncol=4, frameon=False, loc="upper right")
    axes[-1].set_xlabel("log2 |g| (after scaling, where scaled); shaded: the format's bands")
    fig.suptitle(title)
    fig.tight_layout()
    plt.show()


draw_number_line(example_grads, example_k, "Example: the histogram, the floor, and the slide")

# %% [markdown]
# In the top row three bars (four values) sit in the red band: those values are gone. Nine
# more sit in the orange band: they survive, with few significant bits. After the scale the histogram has moved
# ten binades to the right; nothing is lost, and the largest gradient, $0.6 \times 2^{10}
# \approx 614$, is still far below 65504. In the bottom row the same histogram fits inside
# bf16's normal band with a hundred binades to spare at each end: for *range*, bf16 needs
# no scale at all. What bf16 gives up is precision: 7 fraction bits instead of 10.
#
# What the primary source shows, and what it does not:
# - Micikevicius et al., *Mixed Precision Training* (ICLR 2018), Fig. 3, is this picture for
#   real data: a histogram of the activation gradients of a Multibox SSD detector on a log2
#   axis, collected during fp32 training, with fp16's range marked. §3.2 observes that most of
#   fp16's range lay unused above the histogram while part of it lay below the range, and that
#   multiplying by 8 (a slide of 3 binades) was enough for that network.
# - The 67% printed in that figure's caption is the share of values that were *zero* in fp32
#   training, not the share that fp16 loses. The "31% of gradients become zero in fp16" that
#   is often attributed to the paper is not printed there.
# - §3.1 of the paper gives $2^{-24}$ as the magnitude below which values become zero in
#   fp16. With round-to-nearest the cut is really at $2^{-25}$ (section 1 above); the
#   difference is one binade of the histogram.

# %% [markdown]
# ## 4. Your variant
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
    "A": {"log2_scale": 8, "target_share": 0.9, "grads": [
        3.24e-07, -5.66e-07, 8.46e-11, 4.15e-09, 7.43e-09, -5.91e-09, -3.79e-09, 2.98e-09,
        1.13e-08, -1.47e-05, 2.67e-07, -7.42e-09, -7.93e-09, -1.3e-07, -8.75e-11, -1.74e-08,
        -7.88e-09, -1.62e-07, 3.76e-08, -8.61e-11, -3.57e-06, -2.7e-09, 1.41e-09, -1.73e-11,
        -4.49e-08, 4.04e-11, 5.31e-07, 4.08e-11, 4.65e-08, -6.5e-09, 2.85e-08, 1.79e-07,
        2.69e-10, 5.22e-08, -1.2e-10, -2.36e-09, 6.77e-07, 1.6e-08, 7.07e-10, 1.38e-08]},
    "B": {"log2_scale": 3, "target_share": 1.0, "grads": [
        -0.000623, -1.52e-07, 9.66e-06, -1.95e-08, 4.85e-08, -9.19e-08, 7.72e-08, 3.07e-06,
        -2.59e-05, -3.22e-07, -1.8e-06, -1.1e-06, 1.34e-08, 5.22e-05, -1.01e-06, -1.75e-06,
        4.01e-11, -4.99e-07, 4.63e-05, 4.43e-08, -1.42e-06, 7.24e-09, 4.71e-06, 6.46e-07,
        -3.49e-08, 2.16e-06, -5.09e-09, 9.28e-07, 1.15e-05, 1.55e-07, -5.64e-07, -4.05e-08,
        5.67e-07, -1.95e-07, 7.23e-06, 2.7e-07, 3.35e-08, 8.72e-07, 4.66e-07, 5.5e-06]},
    "C": {"log2_scale": 14, "target_share": 0.9, "grads": [
        -4.52e-05, 0.00552, -1.04e-05, 1.03e-05, 2.55e-05, -0.000634, 0.000352, -5.32e-07,
        1.2e-07, 5.75e-08, 1.49e-05, 8.05e-06, 2.19e-05, -8.21e-05, 5.79e-06, 6.99e-09,
        -8.33e-08, 0.00298, -0.000119, -8.33e-06, 0.00236, -1.17e-05, -5.04e-07, 2.53e-05,
        1.28e-08, 3.23e-07, 0.0833, -1.36e-09, 0.0299, 7.92e-09, 1.6e-05, 1.87e-06,
        2.2e-05, 0.000133, -0.0173, -0.00157, 4.39e-06, -0.0288, 7.9, -3.7]},
    "D": {"log2_scale": 12, "target_share": 0.975, "grads": [
        -6.49e-08, -1.57e-07, 4.09e-07, 1.4e-07, 6.86e-08, -1.38e-08, -9.44e-08, 1.42e-07,
        3.58e-07, -2.16e-09, 2.04e-08, 9.01e-07, 1.14e-07, 3.25e-08, -1.62e-08, -5.68e-08,
        2.71e-06, -1.13e-08, 5.82e-07, 1.37e-08, 6.97e-09, -5.32e-08, 1.52e-07, -2.69e-07,
        -9.75e-07, 1.38e-07, 9.15e-09, -8.39e-08, 1.8e-08, -1.24e-07, -7.1e-09, 8.98e-07,
        -1.31e-07, -3.46e-08, -7.84e-08, -3.41e-09, -1.64e-07, 4.72e-07, 3.62e-06, 2.56e-09]},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"concept:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {len(params['grads'])} gradients, "
      f"log2_scale {params['log2_scale']}, target_share {params['target_share']}")

# %% [markdown]
# First look at your histogram (ungraded; drawn from the parameters only).

# %%
draw_number_line(params["grads"], params["log2_scale"], f"Variant {VARIANT}")

# %% [markdown]
# ### 4a. The floor
#
# Cast your variant's `grads` the way torch does (`torch.tensor(grads).to(...)`), unscaled,
# and give as fractions between 0 and 1:
# - `lost_fp16`: the share that becomes exactly 0 in fp16;
# - `lost_bf16`: the share that becomes exactly 0 in bf16;
# - `subnormal_fp16`: the share that survives in fp16 only as a subnormal (nonzero, with
#   magnitude below fp16's smallest normal number $2^{-14}$ after the cast).

# %% nbgrader={"grade": false, "grade_id": "answer_floor", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
plain_fp16 = torch.tensor(params["grads"]).to(torch.float16).float()
lost_fp16 = (plain_fp16 == 0).float().mean().item()
lost_bf16 = (torch.tensor(params["grads"]).to(torch.bfloat16) == 0).float().mean().item()
subnormal_fp16 = ((plain_fp16 != 0) & (plain_fp16.abs() < 2.0 ** -14)).float().mean().item()
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_floor", "locked": true, "points": 2.5, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
for name in ("lost_fp16", "lost_bf16", "subnormal_fp16"):
    assert isinstance(globals()[name], numbers.Real), f"{name} should be a Python number (use .item())"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("c2-number-line", "check_floor", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4b. The slide
#
# Now multiply by $2^k$ with $k$ = `params["log2_scale"]` before the fp16 cast
# (`torch.tensor(grads) * 2.0**k`), and give
# - `lost_fp16_scaled`: the share that still becomes exactly 0;
# - `overflow_fp16_scaled`: the share that becomes `inf`;
# - `exponent_window`: `[lo, hi]`, the smallest and the largest integer $E$ for which an
#   unscaled gradient $2^E$, scaled by $2^k$ and cast to fp16, is nonzero and finite (two ints).

# %% nbgrader={"grade": false, "grade_id": "answer_scaled", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
k = params["log2_scale"]
scaled_fp16 = (torch.tensor(params["grads"]) * 2.0 ** k).to(torch.float16)
lost_fp16_scaled = (scaled_fp16 == 0).float().mean().item()
overflow_fp16_scaled = torch.isinf(scaled_fp16).float().mean().item()
survives = [E for E in range(-60, 40)
            if 0 < (torch.tensor([2.0 ** E]) * 2.0 ** k).to(torch.float16).item() < math.inf]
exponent_window = [min(survives), max(survives)]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_scaled", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the values are checked when your notebook is graded.
for name in ("lost_fp16_scaled", "overflow_fp16_scaled"):
    assert isinstance(globals()[name], numbers.Real), f"{name} should be a Python number (use .item())"
assert isinstance(exponent_window, list) and len(exponent_window) == 2, \
    "exponent_window should be a list [lo, hi]"
assert all(isinstance(E, numbers.Integral) for E in exponent_window), "exponent_window should hold two ints"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("c2-number-line", "check_scaled", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4c. How far to slide
#
# - `min_log2_scale`: the smallest integer $k \ge 0$ for which at least
#   `params["target_share"]` of your gradients survive the fp16 cast after scaling by $2^k$
#   (nonzero *and* finite). An int.
#
# Compare it with the largest scale that keeps your biggest gradient finite. Is there room
# between the two? In which variant would there not be?

# %% nbgrader={"grade": false, "grade_id": "answer_min_scale", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def surviving(grads, k):
    cast = (torch.tensor(grads) * 2.0 ** k).to(torch.float16)
    return ((cast != 0) & torch.isfinite(cast)).sum().item()


min_log2_scale = next(k for k in range(128)
                      if surviving(params["grads"], k) >= params["target_share"] * len(params["grads"]))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_min_scale", "locked": true, "points": 1.5, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the value is checked when your notebook is graded.
assert isinstance(min_log2_scale, numbers.Integral), "min_log2_scale is the exponent of a power of two: an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("c2-number-line", "check_min_scale", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4d. Your histogram, slid by your answer (ungraded)

# %%
try:
    draw_number_line(params["grads"], min_log2_scale,
                     f"Variant {VARIANT}: slid by your min_log2_scale")
except (NameError, TypeError, ValueError, OverflowError) as exc:
    print(f"Answer 4c first ({type(exc).__name__}: {exc}).")

# %% [markdown]
# To take away: a format is a window of fixed width on the log axis; a loss scale moves the
# histogram inside the window but cannot make the window wider. fp16's window is about 40
# binades, and a histogram wider than that loses something at one end whatever the scale.
# bf16's window is about 260 binades, which is why bf16 training usually runs without a
# loss scale, and pays in precision instead.
