# %% [markdown]
# # w4-activations · What the backward pass needs kept, and what recomputing it costs
#
# *Chapter II.8 Training at Scale · mathematics · worked problem 4 of 5*
#
# Problem w1 priced the model states, which depend only on $N$. The backward pass also
# needs tensors from the forward pass: the **activations**. Their size grows with the
# sequence length, the batch, the width and the depth, and in large runs they can outgrow
# everything else. This problem counts them for one transformer layer, then prices the
# usual remedy: throw some of them away and recompute them in the backward pass.
#
# Sources: Korthikanti et al., *Reducing Activation Recomputation in Large Transformer
# Models* (MLSys 2023, arXiv:2205.05198), §4.1, Table 2 and Appendix A; Chen et al.,
# *Training Deep Nets with Sublinear Memory Cost* (2016).
#
# Notation (the paper's letters): $s$ sequence length, $b$ sequences in the micro-batch,
# $h$ hidden width (the chapter's $d$), $a$ attention heads, $L$ layers. Activations are
# 16-bit (2 bytes a value); a dropout mask takes 1 byte a value. No tensor, sequence or
# pipeline parallelism. Units are plain bytes.

# %% [markdown]
# ## 1. What one layer keeps for its backward pass
#
# A layer's backward pass needs, for every operation, the inputs it must differentiate
# against. Go through a GPT-style layer (pre-LayerNorm, MLP of width $4h$) and write down
# each tensor that has to survive until the backward pass:
#
# | block | what is stored | bytes |
# |---|---|---|
# | attention | input to the Q, K, V projection | $2sbh$ |
# | | Q and K, for $QK^\top$ | $4sbh$ |
# | | softmax output, for its own backward | $2as^2b$ |
# | | dropout mask on the scores | $as^2b$ |
# | | dropped-out scores and V, for scores $\times$ V | $2as^2b + 2sbh$ |
# | | input to the output projection | $2sbh$ |
# | | dropout mask after attention | $sbh$ |
# | MLP | input to the first linear layer | $2sbh$ |
# | | input to the GeLU | $8sbh$ |
# | | input to the second linear layer | $8sbh$ |
# | | dropout mask | $sbh$ |
# | LayerNorms | their two inputs | $4sbh$ |
#
# Attention: $11sbh + 5as^2b$. MLP: $19sbh$. LayerNorms: $4sbh$. In all,
#
# $$ \text{bytes per layer} = 34\,sbh + 5\,as^2b = sbh\left(34 + \frac{5as}{h}\right), $$
#
# which is the paper's eq. (1) and the first row of its Table 2. The $5as/h$ term is the
# attention scores: $a$ matrices of $s \times s$ per sequence. It grows with $s^2$, and for
# large models it is bigger than the 34.
#
# ## 2. Two ways to keep less
#
# - **Full recomputation** (the checkpointing of Chen et al. 2016, with a checkpoint at
#   every layer, as Megatron-LM does it): keep only each layer's input, $2sbh$ bytes, and
#   run the layer's forward pass again when the backward pass reaches it.
# - **Selective recomputation** (Korthikanti et al. §5): keep everything except the
#   attention scores, softmax and dropout, which are large to store but cheap to recompute.
#   What remains is $34\,sbh$.
#
# | strategy | bytes per layer (Table 2, no parallelism) |
# |---|---|
# | `none` | $sbh(34 + 5as/h)$ |
# | `selective` | $34\,sbh$ |
# | `full` | $2\,sbh$ |
#
# For $L$ layers multiply by $L$. (With a pipeline, the first stage holds $L$ layers' worth
# however many stages there are; the paper's §4.2.3 explains why.)
#
# ## 3. What the recomputation costs in FLOPs
#
# Count the matmuls of one layer's forward pass, per micro-batch: the Q, K, V projection
# $6bsh^2$, the scores $QK^\top$ $2bs^2h$, scores times V $2bs^2h$, the output projection
# $2bsh^2$ and the MLP $16bsh^2$. In all $24bsh^2 + 4bs^2h$. The backward pass costs twice the
# forward, so a training step without recomputation costs three forwards:
#
# $$ 72\,bLsh^2\left(1 + \frac{s}{6h}\right) \quad\text{(eq. 7, without the vocabulary term).} $$
#
# Full recomputation runs every forward once more: $(2 + 4 + 2)/(2 + 4) = 8/6$. That is
# the 8 of problem w2.
#
# For selective recomputation the paper prints, as its eq. (8),
#
# $$ 72\,bLsh^2\left(1 + \frac{s}{3h}\right), \qquad\text{so the ratio is}\qquad
#    \frac{1 + s/(3h)}{1 + s/(6h)}. $$
#
# **This problem's reference ratio is this one: eq. (8) over eq. (7), as printed.** The
# corrected form below is graded as correct too (see the erratum).
#
# ### What the source prints, and its erratum
#
# The appendix's own words say selective recomputation adds one forward of the two
# attention matmuls, $2bs^2h + 2bs^2h = 4bs^2h$ per layer. Eq. (7) already holds
# $12bs^2h$ of attention work per layer ($72bsh^2 \cdot s/(6h)$); adding 4 gives 16, which
# is $72bsh^2 \cdot 2s/(9h)$, not the printed $s/(3h)$ (that would be 24). A co-author agreed
# on the Megatron-LM issue tracker in 2023 (NVIDIA/Megatron-LM issue #523) that the printed
# term should be $2/9$. The paper's headline overheads ("2.7% and 1.6%" for GPT-3 and
# MT-NLG) and the ratio of its HFU to MFU columns in Table 5 were computed with the printed
# eq. (8). The worked example computes both; at these shapes the difference is a couple
# of percent of a step either way, and the memory saving is what matters.
#
# **How the two forms are graded.** The reference is the printed form,
# $(1 + s/(3h))/(1 + s/(6h))$, because it reproduces the paper's own 2.7% and 1.6%. The
# corrected form, $(1 + 2s/(9h))/(1 + s/(6h))$, earns the same full marks, and its feedback
# line says that your ratio matched the erratum's corrected form (NVIDIA/Megatron-LM
# issue #523).

# %% [markdown]
# ## 4. Worked example: GPT-3 175B in the paper's shape
#
# Korthikanti et al. use $a = 96$, $s = 2048$, $h = 12288$ and $L = 96$ for GPT-3; we take
# one sequence per micro-batch, $b = 1$.

# %%
import sympy as sp

s_, b_, h_, a_ = sp.symbols("s b h a", positive=True)
example_layer = {
    "none": s_ * b_ * h_ * (34 + 5 * a_ * s_ / h_),
    "selective": 34 * s_ * b_ * h_,
    "full": 2 * s_ * b_ * h_,
}
example = {s_: 2048, b_: 1, h_: 12288, a_: 96}
example_L = 96

print(f"5as/h = {5 * 96 * 2048 / 12288:g}")
example_bytes = {}
for strategy, expr in example_layer.items():
    example_bytes[strategy] = int(expr.subs(example))
    print(f"{strategy:>9}: {str(expr):24s} = {example_bytes[strategy] / 1e9:6.3f} GB per layer, "
          f"{example_bytes[strategy] * example_L / 1e9:7.1f} GB for {example_L} layers")
print(f"selective keeps {example_bytes['selective'] / example_bytes['none']:.1%}, "
      f"saving {1 - example_bytes['selective'] / example_bytes['none']:.1%}")

# %% [markdown]
# The paper prints $5as/h = 80$ for GPT-3 and says selective recomputation saves 70% of
# the activation memory: $1 - 34/114 = 70.2\%$. Without recomputation, one sequence of
# 2048 tokens needs about 275 GB of activations across the 96 layers, more than three
# 80 GB GPUs hold; selective recomputation brings it to 82 GB and full recomputation to 4.8 GB.
# (That is why the paper also splits activations over tensor-parallel GPUs, which this
# problem leaves out.)
#
# Now the FLOPs ratios:

# %%
from fractions import Fraction

x = Fraction(2048, 12288)      # s/h
printed = (1 + x / 3) / (1 + x / 6)
corrected = (1 + x / 6 + x / 18) / (1 + x / 6)   # + 4bs²h per layer = 72bsh² · s/(18h)
print(f"full recomputation: {float(Fraction(8, 6)):.4f}")
print(f"selective, eq. (8) as printed: {float(printed):.4f}  (overhead {float(printed - 1):.1%})")
print(f"selective, corrected count:    {float(corrected):.4f}  (overhead {float(corrected - 1):.1%})")

# %% [markdown]
# The printed equation reproduces the paper's 2.7% for GPT-3 (and, with $h = 20480$, its
# 1.6% for MT-NLG); the corrected count gives 0.9%. Full recomputation's 8/6 is the
# "expected 33%" of the paper's Table 4, where the measured overhead for a 22B model was 39%.
#
# The figure below draws the memory of one GPT-3 layer under the three strategies, and the
# selective ratio as $s/h$ grows, with both versions of eq. (8). The dots are the HFU/MFU
# ratios of the paper's Table 5 for its four models (MFU counts the model's FLOPs, HFU counts
# what the hardware executed, so their ratio is the recompute ratio): they sit on the
# printed curve, which is how we know the paper's measurements used it.

# %%
import matplotlib.pyplot as plt

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
rest = {k: 34 * 2048 * 1 * 12288 if k != "full" else example_bytes["full"] for k in example_layer}
scores = {k: example_bytes[k] - rest[k] for k in example_layer}
labels = list(example_layer)
left.bar(labels, [rest[k] / 1e9 for k in labels], color="#6baed6", label="34 sbh (or 2 sbh)")
left.bar(labels, [scores[k] / 1e9 for k in labels], bottom=[rest[k] / 1e9 for k in labels],
         color="#fd8d3c", label="attention scores, 5 a s² b")
left.set_ylabel("GB per layer")
left.set_title("GPT-3 175B, one sequence of 2048 tokens")
left.legend()

ratios = [i / 100 for i in range(1, 101)]
right.plot(ratios, [(1 + r / 3) / (1 + r / 6) for r in ratios], label="eq. (8) as printed")
right.plot(ratios, [(1 + r / 6 + r / 18) / (1 + r / 6) for r in ratios], "--", label="corrected count")
table5 = {"22B": (6144, 43.7, 41.5), "175B": (12288, 52.8, 51.4),
          "530B": (20480, 57.0, 56.0), "1T": (25600, 57.0, 56.3)}  # h, HFU %, MFU %
offsets = {"22B": (6, -12), "175B": (6, -12), "530B": (-30, 6), "1T": (6, -14)}
for name, (width, hfu, mfu) in table5.items():
    right.plot(2048 / width, hfu / mfu, "ko")
    right.annotate(name, (2048 / width, hfu / mfu), textcoords="offset points", xytext=offsets[name])
right.set_xlabel("s / h")
right.set_ylabel("FLOPs with / without recomputation")
right.set_title("Selective recomputation")
right.legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# A note on units, because the paper mixes them: its Appendix B gives the saving of one
# optimisation for the 530B model as "$sbhp$ = 2.73 GB" at 2 bytes a value. With $s = 2048$,
# $h = 20480$, $p = 35$ and $b = 1$ that is $2.94 \times 10^9$ bytes, which is 2.73 GiB
# ($2^{30}$ bytes), not 2.73 GB. This chapter's unit is the plain byte.
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

s, b, h, a = sp.symbols("s b h a", positive=True)

VARIANTS = {
    "A": {"s": 2048, "b": 4, "h": 6144, "a": 64, "L": 48, "strategy": "none"},
    "B": {"s": 2048, "b": 1, "h": 20480, "a": 128, "L": 105, "strategy": "selective"},
    "C": {"s": 2048, "b": 1, "h": 25600, "a": 160, "L": 128, "strategy": "full"},
    "D": {"s": 2048, "b": 4, "h": 4096, "a": 32, "L": 32, "strategy": "selective"},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"worked:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# ### 5a. Derive
#
# Write `per_layer_expr`, the activation bytes of one layer under **your** `strategy`, as a
# sympy expression in `s`, `b`, `h` and `a` (the symbols defined above; the chapter's `d`
# for `h` and `B` for `b` are read too).

# %% nbgrader={"grade": false, "grade_id": "answer_expr", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
per_layer_expr = {
    "none": s * b * h * (34 + 5 * a * s / h),
    "selective": 34 * s * b * h,
    "full": 2 * s * b * h,
}[params["strategy"]]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expr", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the mathematics is checked when your notebook is graded.
assert isinstance(per_layer_expr, sp.Expr), "per_layer_expr should be a sympy expression"
assert {sym.name for sym in per_layer_expr.free_symbols} <= {"s", "b", "h", "a", "d", "B"}, \
    "use only the symbols s, b, h and a"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("w4-activations", "check_expr", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 5b. Compute the memory
#
# For your variant, in plain bytes:
# - `per_layer_bytes`: the activations one layer stores;
# - `total_bytes`: the activations of all `L` layers.

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
per_layer_bytes = int(per_layer_expr.subs({s: params["s"], b: params["b"], h: params["h"], a: params["a"]}))
total_bytes = per_layer_bytes * params["L"]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
import numbers

for name in ("per_layer_bytes", "total_bytes"):
    assert name in globals(), f"assign {name} in the answer cell above"
    value = globals()[name]
    assert isinstance(value, numbers.Real) and not isinstance(value, bool), f"{name} should be a number of bytes"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("w4-activations", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 5c. Compute the price
#
# `recompute_flops_ratio`: the FLOPs of a training step with your `strategy` divided by the
# FLOPs of the same step without recomputation, leaving out the vocabulary (logits) term.
# For `selective`, use eqs. (8) and (7) exactly as printed (section 3), or the erratum's
# corrected eq. (8) with $2s/(9h)$ (both are graded correct), not the approximation
# $1 + s/(6h)$.

# %% nbgrader={"grade": false, "grade_id": "answer_ratio", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
x_ratio = params["s"] / params["h"]
recompute_flops_ratio = {
    "none": 1.0,
    "full": 8 / 6,
    "selective": (1 + x_ratio / 3) / (1 + x_ratio / 6),
}[params["strategy"]]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_ratio", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the number is checked when your notebook is graded.
import numbers

assert isinstance(recompute_flops_ratio, numbers.Real) and not isinstance(recompute_flops_ratio, bool), \
    "recompute_flops_ratio should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("w4-activations", "check_ratio", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 5d. Read your numbers
#
# Would your variant's activations fit on one 80 GB GPU beside its model states? If your
# strategy is `none`, what would `selective` save, and at what price? If it is `full`, how
# much memory would `selective` need instead? (Not graded: a sentence for yourself.)

# %% [markdown]
# *Your answer, for yourself (not graded): double-click this cell and write it here.*
