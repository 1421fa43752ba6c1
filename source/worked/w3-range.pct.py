# %% [markdown]
# # w3-range · Range before speed: where gradients fall off the floor, and how a loss scale lifts them
#
# *Chapter II.8 Training at Scale · mathematics · worked problem 3 of 5*
#
# **Proposition 1.** Mixed precision is a question of range before it is a question of speed.
# A 16-bit format halves the bytes of every tensor, but what decides whether training still
# works is which numbers the format can hold at all. IEEE half precision (fp16) keeps ten
# fraction bits and only five exponent bits, so its range is narrow: small gradients round
# to exactly zero. bfloat16 (bf16) spends its bits the other way round.
#
# Sources: IEEE 754-2008 (the binary16 format); the bfloat16 format as torch implements it;
# Micikevicius et al., *Mixed Precision Training*, ICLR 2018, §3.1 and §3.2; Micikevicius et
# al., *FP8 Formats for Deep Learning*, 2022, Table 1; the OCP Microscaling Formats (MX)
# Specification v1.0, 2023.
# Apparatus: floating point (0.NU.01).

# %% [markdown]
# ## 1. What a format can hold
#
# A binary floating-point format with $e$ exponent bits and $m$ fraction bits stores
# $(-1)^{\text{sign}} \times 1.f \times 2^{E - \text{bias}}$ with $\text{bias} = 2^{e-1} - 1$.
# Two exponent fields are reserved:
#
# - the all-ones field encodes infinity and NaN, so the largest usable exponent is
#   $2^e - 2 - \text{bias} = \text{bias}$, and the largest finite number is
#   $(2 - 2^{-m})\,2^{\text{bias}}$ (all fraction bits set);
# - the all-zeros field encodes zero and the **subnormals** $0.f \times 2^{1-\text{bias}}$.
#   So the smallest *normal* number is $2^{1-\text{bias}}$, and below it the subnormals
#   continue down in steps of $2^{1-\text{bias}-m}$, the smallest positive number of all.
#
# | format | $e$ | $m$ | largest finite | smallest normal | smallest subnormal |
# |---|---|---|---|---|---|
# | fp32 | 8 | 23 | $(2 - 2^{-23})\,2^{127} \approx 3.40\times10^{38}$ | $2^{-126}$ | $2^{-149}$ |
# | fp16 | 5 | 10 | derived below | derived below | derived below |
# | bf16 | 8 | 7 | derived below | derived below | derived below |
#
# Notice the trade: bf16 keeps fp32's eight
# exponent bits (fp32's range) and pays with precision (7 fraction bits, about 2 to 3
# decimal digits); fp16 keeps more precision and pays with range.
#
# ### The 8-bit formats (2022 on)
#
# Hopper-class and later GPUs multiply in FP8, and Micikevicius et al., *FP8 Formats for Deep
# Learning* (2022, arXiv 2209.05433, Table 1) define the two formats torch calls
# `torch.float8_e4m3fn` and `torch.float8_e5m2`:
#
# | format | $e$ | $m$ | bias | largest finite | smallest normal | smallest subnormal |
# |---|---|---|---|---|---|---|
# | E5M2 (`float8_e5m2`) | 5 | 2 | 15 | $1.75 \times 2^{15} = 57344$ | $2^{-14}$ | $2^{-16}$ |
# | E4M3 (`float8_e4m3fn`) | 4 | 3 | 7 | $1.75 \times 2^{8} = 448$ | $2^{-6}$ | $2^{-9}$ |
#
# E5M2 follows the IEEE rules above (it is fp16 with the fraction cut to 2 bits: the same
# exponent range). E4M3 breaks one of them to buy range: it has **no infinities**, and only
# the bit pattern S.1111.111 is NaN, so the all-ones exponent holds ordinary numbers and the
# largest finite value is $1.110_2 \times 2^{8} = 448$, not the IEEE rule's $240$ (the `fn`
# in torch's name: finite, NaN only). torch 2.13's cast into it **saturates**: anything beyond
# 448, `inf` included, becomes $\pm 448$; a cast into E5M2 overflows to `inf` as fp16 does.
# Saturation is what torch does, not what the format prescribes: other stacks may give NaN
# (S.1111.111) for a value past 448, since E4M3 has no infinity to round it to. This notebook
# grades torch's casts.
#
# The paper's recipe: E4M3 for the tensors of the forward pass (weights and activations, which
# need precision and fit in E4M3's roughly 18 binades once scaled), E5M2 for the gradients,
# whose spread is wider and which need E5M2's 32 binades more than a third fraction bit.
# Neither range is enough on its own, so every FP8 tensor travels with a scale: **per-tensor
# scaling** picks one factor per tensor from its largest magnitude (its *amax*), the loss scale
# below in a new place. One outlier then pins the scale for the whole tensor. **Block scaling**
# gives each small block its own: the OCP *Microscaling (MX) Formats Specification* v1.0 (2023)
# stores 32 consecutive elements with one shared scale in E8M0, an 8-bit power of two
# ($2^{-127}$ to $2^{127}$), so an outlier costs range only in its own block of 32.
#
# ## 2. What a cast does
#
# `torch.tensor(values)` first stores Python floats as fp32; `.to(torch.float16)` (or
# `torch.bfloat16`) then rounds each value to the **nearest** representable number, ties
# to the even one. Near zero the representable numbers are $0, s, 2s, \dots$ with $s$ the
# smallest subnormal, so:
#
# - a value with $|g| > s/2$ rounds to $s$ or more: it survives, however coarsely;
# - a value with $|g| \le s/2$ rounds to **exactly 0** (at $s/2$ itself the tie goes to the
#   even neighbour, which is 0).
#
# A gradient that becomes 0 carries no signal at all: that is *underflow*. Subnormals are
# survivors too, only with fewer significant bits.
#
# ## 3. What a loss scale does
#
# Multiply the loss by $S = 2^k$ before the backward pass. By the chain rule every gradient
# is multiplied by $S$, and multiplying by a power of two only shifts exponents: nothing
# is rounded except at the two ends. The gradients are divided by $S$ again in fp32 before
# the optimiser (and before clipping) sees them. The ceiling sets how far one can go: the
# largest safe $k$ is the largest integer with $\max|g| \cdot 2^k \le$ the largest finite
# value. One more power of two and the biggest gradient becomes `inf`.
#
# ## 4. What the paper actually prints
#
# - §3.1 says that any value whose magnitude is smaller than $2^{-24}$ becomes zero in fp16,
#   and (Fig. 2b) that about 5% of the weight-gradient values of a Mandarin speech model
#   have exponents below $-24$. Strictly, with round-to-nearest the cut is half that:
#   values between $2^{-25}$ and $2^{-24}$ round *up*. You will see this in the example.
# - §3.2, Fig. 3 is a histogram of the **activation** gradients of a Multibox SSD detector,
#   collected over all layers during **fp32** training, with a separate bin for zeros. Its
#   caption reads off three bins: about 2% of the values in $[2^{-34}, 2^{-32})$, about 2%
#   in $[2^{-24}, 2^{-23})$, and 67% in the zero bin. That 67% counts values that were
#   already zero in fp32 training; it is not a count of fp16 underflow. The text says that
#   most of fp16's range went unused while many values sat below it. Unscaled, the network
#   diverged. A scale of 8 ($k = 3$) was enough to match fp32, which suggests that values
#   in $[2^{-27}, 2^{-24})$ mattered and values below $2^{-27}$ did not. The paper's rule for
#   a constant factor is any factor whose product with the largest absolute gradient stays
#   below 65,504.
# - The often-quoted figure "31% of the gradients underflow" is **not in the paper**. It
#   comes from NVIDIA's later *Training with Mixed Precision* user guide, which re-plots
#   the same SSD histogram and states its own percentages. Cite what the source you name
#   prints.

# %% [markdown]
# ## 5. Worked example
#
# Twelve gradient values from one backward pass (not your variant), cast to fp16 and,
# for comparison, to bf16. First the limits, derived once from the bit layout.

# %%
import math

import sympy as sp
import torch

e_, m_ = sp.symbols("e m", positive=True)
bias_ = 2 ** (e_ - 1) - 1
example_min_subnormal = 2 ** (1 - bias_ - m_)
example_max_finite = (2 - 2 ** (-m_)) * 2 ** bias_
for name, bits in {"fp16": {e_: 5, m_: 10}, "bf16": {e_: 8, m_: 7}}.items():
    print(f"{name}: largest finite {float(example_max_finite.subs(bits)):.6g}, "
          f"smallest normal 2^{int(1 - bias_.subs(bits))}, "
          f"smallest subnormal 2^{int((1 - bias_ - m_).subs(bits))}")
print("torch agrees:", torch.finfo(torch.float16).max, torch.finfo(torch.float16).tiny,
      torch.finfo(torch.bfloat16).tiny == 2.0 ** -126)
# the 8-bit formats: E5M2 obeys the rule above; E4M3 ("fn") has no infinities, so its top is not
for dtype in (torch.float8_e5m2, torch.float8_e4m3fn):
    info = torch.finfo(dtype)
    print(f"{str(dtype):20s} largest finite {info.max:g}, smallest normal 2^{int(math.log2(info.tiny))}, "
          f"smallest subnormal 2^{int(math.log2(info.tiny * info.eps))}")

# %% [markdown]
# Now the cast. Count the values that become exactly zero, find the largest safe scale,
# and count again after scaling.

# %%
example_grads = [5.0e-10, -2.0e-8, 3.5e-8, -9.0e-8, 4.0e-7, -6.0e-6, 2.5e-5, -1.3e-4,
                 7.0e-4, -3.0e-3, 1.6e-2, -0.09]


def zero_share(values, dtype, k=0):
    """Share of the values that are exactly 0 after scaling by 2**k and casting."""
    # scale the Python floats: 2.0**k itself may be beyond fp32's range when k > 127
    cast = torch.tensor([v * 2.0 ** k for v in values]).to(dtype)
    return (cast == 0).float().mean().item()


def largest_safe_k(values, dtype):
    """Largest k >= 0 with max|g| * 2**k <= the largest finite value of dtype."""
    ceiling, peak = torch.finfo(dtype).max, max(abs(v) for v in values)
    k = math.floor(math.log2(ceiling / peak))
    while peak * 2.0 ** (k + 1) <= ceiling:   # guard the floor() against rounding
        k += 1
    while k > 0 and peak * 2.0 ** k > ceiling:
        k -= 1
    return max(k, 0)


for dtype in (torch.float16, torch.bfloat16, torch.float8_e5m2, torch.float8_e4m3fn):
    k = largest_safe_k(example_grads, dtype)
    print(f"{str(dtype):20s} zero share {zero_share(example_grads, dtype):.4f}, "
          f"largest safe k = {k}, zero share after 2^{k}: {zero_share(example_grads, dtype, k):.4f}")
print(f"fp16 with the paper's factor 8: zero share {zero_share(example_grads, torch.float16, 3):.4f}")
print("3.5e-8 lies between 2^-25 and 2^-24 and rounds up to",
      torch.tensor([3.5e-8]).to(torch.float16).item(), "= 2^-24")

# %% [markdown]
# Two of the twelve fp16 values vanish ($5\times10^{-10}$ and $-2\times10^{-8}$, both below
# $2^{-25} \approx 2.98\times10^{-8}$); $3.5\times10^{-8}$ is below $2^{-24}$ yet survives,
# because it rounds up. The largest gradient, $0.09$, leaves room for a scale of $2^{19}$,
# and with it nothing underflows. With the paper's factor 8 the smallest value is still lost.
# In bf16 nothing underflows in the first place: its floor is about $10^{-40}$, and a scale
# is not needed for range (bf16's cost is precision instead).
#
# At 8 bits the thesis bites hardest. In E5M2 half of the twelve values vanish unscaled, and
# the same scale $2^{19}$ saves them all (E5M2 has fp16's exponent range). In E4M3 nine of twelve
# vanish; the largest safe scale is only $2^{12}$, since its ceiling is 448, and a third are
# still lost after it. Its window, $2^{-9}$ to 448, is about 18 binades against these values'
# 27. That is why the FP8 recipes keep E4M3 for forward tensors and E5M2 for gradients, and
# why they scale every tensor (or every block of 32) on its own.
#
# The picture: each gradient on fp16's number line, before and after scaling.

# %%
import matplotlib.pyplot as plt


def number_line(values, dtype_name, k, title):
    """Plot log2|g| before and after scaling by 2**k against the format's bands."""
    dtype = getattr(torch, dtype_name)   # torch.float16, torch.float8_e4m3fn, ...
    info = torch.finfo(dtype)
    tiny, top = math.log2(info.tiny), math.log2(info.max)
    floor = tiny + math.log2(info.eps)   # log2 of the smallest subnormal (eps = 2^-m)
    rows = {0: "as computed", 1: f"scaled by 2^{k}"}
    logs = [math.log2(abs(v)) for v in values]
    left = min(min(logs), floor) - 3
    right = max(max(logs) + k, top) + 3
    fig, ax = plt.subplots(figsize=(10, 2.8))
    ax.axvspan(left, floor - 1, color="#d62728", alpha=0.18, label="rounds to 0")
    ax.axvspan(floor - 1, tiny, color="#ff7f0e", alpha=0.18, label="subnormal (fewer bits)")
    ax.axvspan(tiny, top, color="#2ca02c", alpha=0.12, label="normal")
    ax.axvspan(top, right, color="#7f7f7f", alpha=0.25, label="past the largest finite value")
    for row, shift in ((0, 0), (1, k)):
        cast = torch.tensor([v * 2.0 ** shift for v in values]).to(dtype)
        lost = (cast == 0).tolist()
        xs = [lg + shift for lg in logs]
        ax.scatter([x for x, z in zip(xs, lost) if not z], [row] * (len(xs) - sum(lost)),
                   marker="o", color="black", zorder=3)
        ax.scatter([x for x, z in zip(xs, lost) if z], [row] * sum(lost),
                   marker="x", color="#d62728", s=60, zorder=3)
    ax.set_yticks(list(rows), list(rows.values()))
    ax.set_ylim(-0.7, 1.7)
    ax.set_xlim(left, right)
    ax.set_xlabel(f"log2 |g| in {dtype_name} (x: became exactly 0)")
    ax.set_title(title)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=4, frameon=False)
    fig.tight_layout()
    plt.show()


number_line(example_grads, "float16", largest_safe_k(example_grads, torch.float16),
            "Worked example: fp16")

# %% [markdown]
# ## 6. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id.
# On JupyterHub that is your hub user name; working on your own machine, start Jupyter
# with `JUPYTERHUB_USER=<your course id> jupyter lab` so that you see the same variant the
# grader uses. Editing this cell does not change what you are graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import sympy as sp

e, m = sp.symbols("e m", positive=True)

VARIANTS = {
    "A": {"dtype": "float16", "grads": [
        3.1e-11, -8.4e-10, 2.6e-9, -1.9e-8, 4.3e-8, -3.7e-8, 7.9e-8, -1.2e-7,
        5.5e-7, -2.4e-6, 9.8e-6, -3.3e-5, 7.1e-5, -2.2e-4, 6.4e-4, -1.5e-3,
        4.8e-3, -9.6e-3, 2.1e-2, -4.4e-2]},
    "B": {"dtype": "float8_e5m2", "grads": [
        -6.2e-12, 1.8e-10, -5.3e-9, 1.1e-8, -2.8e-8, 3.2e-8, -5.1e-8, 1.6e-7,
        -4.4e-7, 8.9e-7, -1.3e-6, 3.7e-6, -7.7e-6, 2.5e-5, -5.8e-5, 1.9e-4,
        -6.6e-4, 1.4e-3, -3.9e-3, 8.2e-3, -2.7e-2, 0.11]},
    "C": {"dtype": "bfloat16", "grads": [
        3.1e-41, -6.8e-41, 5.2e-39, 2.3e-30, -7.4e-25, 1.5e-19, -8.1e-15, 3.6e-12, -9.2e-11, 4.9e-9, -2.7e-8,
        5.4e-8, -1.9e-7, 8.3e-6, -4.1e-5, 2.9e-4, -1.7e-3, 6.6e-3, -0.052, 0.38, -1.7]},
    "D": {"dtype": "float8_e4m3fn", "grads": [
        2.9e-12, -4.7e-11, 8.8e-10, -1.4e-9, 6.1e-9, -2.3e-8, 3.9e-8, -4.6e-8,
        9.7e-8, -6.8e-7, 2.2e-6, -1.1e-5, 4.5e-5, -3.4e-4, 1.2e-3, -8.7e-3,
        6.3e-2, -0.41, 2.8, 12.6]},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"worked:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: dtype {params['dtype']}, {len(params['grads'])} gradients")

# %% [markdown]
# ### 6a. Derive
#
# For a format with `e` exponent bits and `m` fraction bits (the sympy symbols defined
# above), write
# - `min_subnormal_expr`: the smallest positive number the format holds;
# - `max_finite_expr`: the largest finite number.
#
# Check them yourself: substituted with fp16's and bf16's bit counts they must give the
# limits you state next.

# %% nbgrader={"grade": false, "grade_id": "answer_expr", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
bias = 2 ** (e - 1) - 1
min_subnormal_expr = 2 ** (1 - bias - m)
max_finite_expr = (2 - 2 ** (-m)) * 2 ** bias
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expr", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the mathematics is checked when your notebook is graded.
for name in ("min_subnormal_expr", "max_finite_expr"):
    value = globals()[name]
    assert isinstance(value, sp.Expr), f"{name} should be a sympy expression"
    assert {x.name for x in value.free_symbols} <= {x.name for x in (e, m)}, f"{name}: use only the symbols e and m"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("w3-range", "check_expr", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 6b. The limits
#
# As plain Python floats (these are the same for every variant), exact: take them from your
# expressions, not from the rounded decimals a table prints, as they are checked to a relative 1e-6:
# - `fp16_max`, `fp16_min_normal`, `fp16_min_subnormal`: binary16's largest finite number,
#   smallest normal number and smallest subnormal;
# - `bf16_min_normal`: bfloat16's smallest normal number.

# %% nbgrader={"grade": false, "grade_id": "answer_limits", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
fp16_bits, bf16_bits = {e: 5, m: 10}, {e: 8, m: 7}
fp16_max = float(max_finite_expr.subs(fp16_bits))
fp16_min_subnormal = float(min_subnormal_expr.subs(fp16_bits))
fp16_min_normal = float(fp16_min_subnormal * 2 ** 10)      # m = 10 steps above the floor
bf16_min_normal = float(min_subnormal_expr.subs(bf16_bits) * 2 ** 7)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_limits", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the values are checked when your notebook is graded.
for name in ("fp16_max", "fp16_min_normal", "fp16_min_subnormal", "bf16_min_normal"):
    assert isinstance(globals()[name], numbers.Real), f"{name} should be a Python number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("w3-range", "check_limits", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 6c. Compute
#
# Your `params["dtype"]` may be one of the 8-bit formats; `getattr(torch, params["dtype"])`
# gives the torch dtype whatever its name, and `torch.finfo` knows each one's limits.
# For your variant's `params["grads"]` cast to `params["dtype"]` the way torch does it
# (`torch.tensor(grads).to(...)`), compute
# - `underflow_fraction`: the share of the values that become exactly 0 (a fraction
#   between 0 and 1, not a percentage);
# - `max_log2_scale`: the largest integer $k \ge 0$ with $\max|g| \cdot 2^k$ at most the
#   format's largest finite value (an int);
# - `underflow_fraction_scaled`: the share that becomes exactly 0 after multiplying by
#   $2^k$ first.

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
import math

import torch

dtype = getattr(torch, params["dtype"])
grads = params["grads"]
underflow_fraction = (torch.tensor(grads).to(dtype) == 0).float().mean().item()
ceiling, peak = torch.finfo(dtype).max, max(abs(g) for g in grads)
max_log2_scale = math.floor(math.log2(ceiling / peak))
while peak * 2.0 ** (max_log2_scale + 1) <= ceiling:
    max_log2_scale += 1
while max_log2_scale > 0 and peak * 2.0 ** max_log2_scale > ceiling:
    max_log2_scale -= 1
scaled = torch.tensor([g * 2.0 ** max_log2_scale for g in grads])
underflow_fraction_scaled = (scaled.to(dtype) == 0).float().mean().item()
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
for name in ("underflow_fraction", "underflow_fraction_scaled"):
    assert isinstance(globals()[name], numbers.Real), f"{name} should be a Python number (use .item())"
assert isinstance(max_log2_scale, numbers.Integral), "max_log2_scale is a power of two's exponent: an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("w3-range", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 6d. Look at it
#
# Your variant on its format's number line (ungraded; it uses only the parameters, so it
# runs before you have answered). Then ask yourself: if your variant's fraction after
# scaling is not zero, what stopped the scale from going higher? What would bf16 have
# done with the same values, and what would it have cost?

# %%
variant_dtype = getattr(torch, params["dtype"])
number_line(params["grads"], params["dtype"], largest_safe_k(params["grads"], variant_dtype),
            f"Variant {VARIANT}: {params['dtype']}")
