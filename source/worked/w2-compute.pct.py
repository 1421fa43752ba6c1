# %% [markdown]
# # w2-compute · What a training run costs, in FLOPs and in days
#
# *Chapter II.8 Training at Scale · mathematics · worked problem 2 of 5*
#
# Memory decides whether a run can start; compute decides when it ends. This problem
# counts the floating-point operations of a whole training run from two numbers, the
# parameter count $N$ and the number of training tokens $D$, and turns that count into
# days on a given cluster and into the PF-days that papers report.
#
# Sources: Kaplan et al., *Scaling Laws for Neural Language Models* (2020), §2.1;
# Narayanan et al., *Efficient Large-Scale Language Model Training on GPU Clusters Using
# Megatron-LM* (SC 2021), eq. (4); Brown et al., *Language Models are Few-Shot Learners*
# (2020), Appendix D, Table D.1.
#
# Notation: $N$ parameters, $D$ training tokens, $C$ training compute in FLOPs. The
# cluster has $n$ GPUs, each with a peak of $F$ FLOP/s, of which the run achieves a
# fraction $u$ (the *utilization*). Units are plain: FLOPs, seconds, days of 86,400 s.

# %% [markdown]
# ## 1. FLOPs per parameter per token
#
# Almost all the arithmetic of a transformer is matrix multiplication. A weight matrix of
# shape $m \times k$ applied to one token's vector does $mk$ multiplications and $mk$
# additions: **2 FLOPs per weight per token**. Summed over every weight, the forward pass
# costs about $2N$ FLOPs per token. (Kaplan et al. write $C_\text{forward} \approx 2N +
# 2 n_\text{layer} n_\text{ctx} d_\text{attn}$; the second term, the attention scores,
# is small while the width is large compared with the context, and it is dropped here.
# Their $N$ leaves out the embedding matrices.)
#
# The backward pass multiplies by each weight matrix twice: once to send the gradient on
# to the layer's input, and once to form the gradient of the weights themselves. That is
# $4N$ per token. One training token therefore costs
#
# $$ 2N + 4N = 6N \qquad\Longrightarrow\qquad C = 6ND. $$
#
# **Full activation recomputation** (problem w4) throws the activations away after the
# forward pass and runs each layer's forward again during the backward pass. That adds
# another $2N$ per token, so the hardware executes
#
# $$ C = 8ND. $$
#
# This is where the 8 in Narayanan et al.'s eq. (4) comes from: their Megatron-LM runs
# recompute every layer, and their estimate of the end-to-end time is $8TP/(nX)$, with $T$
# tokens, $P$ parameters, $n$ GPUs and $X$ achieved FLOP/s per GPU.
#
# ## 2. From FLOPs to days, and to PF-days
#
# A cluster of $n$ GPUs that each sustain $uF$ FLOP/s gets through $C$ FLOPs in
#
# $$ t = \frac{C}{n\,u\,F}\ \text{seconds} = \frac{C}{86\,400\; n\,u\,F}\ \text{days}. $$
#
# Papers often quote compute in **PF-days**: one petaFLOP/s ($10^{15}$ FLOP/s) sustained
# for a day, $10^{15} \times 86\,400 = 8.64 \times 10^{19}$ FLOPs (Kaplan et al. §2.1
# define it this way). A PF-day is an amount of work, not a duration.
#
# One caution on $u$. When a run recomputes activations, the FLOP/s it reports usually
# count the recomputed work too: Narayanan et al.'s 140 TFLOP/s per GPU is measured
# against their 8-per-token count. Later papers separate *model* FLOPs utilization (the
# useful $6ND$) from *hardware* FLOPs utilization (everything executed). In this problem
# $u$ is the fraction of peak at which the GPUs execute **whatever the run computes**, so the
# time is the executed FLOPs divided by $n u F$.

# %% [markdown]
# ## 3. Worked example: GPT-3 175B, as Narayanan et al. priced it
#
# Narayanan et al. take GPT-3's shape, $N = 175 \times 10^9$ and $D = 300 \times 10^9$
# tokens, on $n = 1024$ A100 GPUs achieving $X = 140$ TFLOP/s each with full
# recomputation. The A100's dense 16-bit peak is 312 TFLOP/s, so $u = 140/312 \approx 0.45$.
# We derive once, symbolically, then substitute.

# %%
import sympy as sp

N_, D_ = sp.symbols("N D", positive=True)
forward, backward, recomputed_forward = 2, 4, 2          # FLOPs per parameter per token
example_expr = (forward + backward + recomputed_forward) * N_ * D_
example = {"N": 175e9, "D": 300e9, "n_gpus": 1024, "peak_flops": 312e12,
           "utilization": 140e12 / 312e12, "recompute": True}

example_flops = float(example_expr.subs({N_: example["N"], D_: example["D"]}))
example_seconds = example_flops / (example["n_gpus"] * example["peak_flops"] * example["utilization"])
print(f"C = {example_expr} = {example_flops:.3e} FLOPs")
print(f"time = {example_seconds:.3e} s = {example_seconds / 86_400:.1f} days")
print(f"     = {example_flops / 8.64e19:,.0f} PF-days executed")

# %% [markdown]
# The printout gives 33.9 days. Narayanan et al. print "34 days" for this example. Their
# second example, a model of about one trillion parameters (their Table 1 lists 1008 billion)
# trained on 450 billion tokens with 3072 GPUs at 163 TFLOP/s, comes out the same way:

# %%
one_t = 8 * 1008e9 * 450e9 / (3072 * 163e12)
print(f"1T model: {one_t / 86_400:.1f} days")

# %% [markdown]
# 83.9 days, and the paper prints 84. With exactly $10^{12}$ parameters you would get 83.2.
#
# ### What GPT-3's own table says
#
# The GPT-3 paper counts differently: its Table D.1 prices each model at 6 FLOPs per
# parameter per token (no recomputation, attention ignored) over 300 billion tokens. Its
# 175B row uses 174,600 million parameters. We recompute the table and set the printed
# values beside ours (XL's row is left out: variant A works it out).

# %%
table_d1 = {  # model: (parameters in millions, printed total train compute: PF-days, FLOPs)
    "Small": (125, "2.60E+00", "2.25E+20"), "Medium": (356, "7.42E+00", "6.41E+20"),
    "Large": (760, "1.58E+01", "1.37E+21"),
    "2.7B": (2650, "5.52E+01", "4.77E+21"), "6.7B": (6660, "1.39E+02", "1.20E+22"),
    "13B": (12850, "2.68E+02", "2.31E+22"), "175B": (174600, "3.64E+03", "3.14E+23"),
}
table_ours = {}
for name, (millions, printed_pf_days, printed_flops) in table_d1.items():
    flops = 6 * millions * 1e6 * 300e9
    table_ours[name] = flops / 8.64e19
    print(f"{name:>7}: 6ND = {flops:.2E} FLOPs (printed {printed_flops}) "
          f"= {table_ours[name]:.2E} PF-days (printed {printed_pf_days})")

# %%
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(7, 3.5))
names = list(table_d1)
ax.bar(names, [table_ours[m] for m in names], color="#9ecae1", label="6ND / 8.64e19 (ours)")
ax.plot(names, [float(table_d1[m][1]) for m in names], "k_", markersize=22, mew=2, label="printed in Table D.1")
ax.set_yscale("log")
ax.set_ylabel("PF-days")
ax.set_title("GPT-3 training compute: 300B tokens, 6 FLOPs per parameter per token")
ax.legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# Every bar meets its printed mark: the table is nothing more than $6ND$ in PF-days.
#
# **What the sources print, and what gets repeated.**
# - GPT-3's compute is 3.14e23 FLOPs = 3.64e3 PF-days (Table D.1, with $N$ = 174.6 billion).
#   With $N$ rounded to 175 billion the same count gives 3.15e23. (The table also lists
#   Medium at 356 million parameters, where the paper's Table 2.1 names it 350M.)
# - "34 days on 1024 GPUs" is Narayanan et al.'s *estimate* for training a model of
#   GPT-3's size with Megatron-LM on A100s. The GPT-3 paper says its models were trained
#   on V100s and gives no training time. Write-ups that say GPT-3 itself "took 34 days"
#   (on V100s, or on 10,000 GPUs) mix the two papers.
# - The two papers count different things on purpose. Table D.1 counts the model's
#   arithmetic ($6ND$). Narayanan et al. count what their hardware executes ($8ND$) because
#   they recompute activations. For the same run the second count is 4/3 of the first.
#
# ## 4. Your variant
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

N, D = sp.symbols("N D", positive=True)

VARIANTS = {
    "A": {"N": 1_320_000_000, "D": 300_000_000_000, "n_gpus": 64,
          "peak_flops": 125e12, "utilization": 0.35, "recompute": False},
    "B": {"N": 70_000_000_000, "D": 1_400_000_000_000, "n_gpus": 2048,
          "peak_flops": 1307.4e12, "utilization": 0.35, "recompute": False},
    "C": {"N": 8_030_000_000, "D": 15_000_000_000_000, "n_gpus": 1024,
          "peak_flops": 2.25e15, "utilization": 0.38, "recompute": True},
    "D": {"N": 176_000_000_000, "D": 366_000_000_000, "n_gpus": 384,
          "peak_flops": 312e12, "utilization": 0.48, "recompute": True},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"worked:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# Your run's `peak_flops` is the dense 16-bit tensor-core peak of one device (variant A
# runs on V100s, B on MI300Xs, C on B200s, D on A100s; the table below), `utilization` is
# the fraction of it the run achieves on the FLOPs it executes, and `recompute` says whether
# every layer's activations are recomputed.
#
# ### The devices, as their datasheets print them
#
# | device (datasheet) | memory | HBM bandwidth | 16-bit tensor peak, as printed | FP8, as printed | dense 16-bit | dense FP8 |
# |---|---|---|---|---|---|---|
# | NVIDIA V100 SXM2 (Tesla V100 datasheet) | 32 GB | 900 GB/s | 125 TFLOPS (fp16) | none | 125 | none |
# | NVIDIA A100 SXM 80GB (A100 datasheet) | 80 GB | 2,039 GB/s | 312 TFLOPS, 624* | none | 312 | none |
# | NVIDIA H100 SXM (H100 datasheet) | 80 GB | 3.35 TB/s | 1,979 TFLOPS* | 3,958 TFLOPS* | 989.5 | 1,979 |
# | NVIDIA H200 SXM (H200 datasheet) | 141 GB | 4.8 TB/s | 1,979 TFLOPS* | 3,958 TFLOPS* | 989.5 | 1,979 |
# | NVIDIA B200 (DGX B200 datasheet, 1/8 of its 8 GPUs' 1,440 GB; 16-bit peak from the HGX B200 table) | 180 GB | 8 TB/s | 4.5 PFLOPS* | 9 PFLOPS* | 2,250 | 4,500 |
# | AMD Instinct MI300X (MI300X datasheet) | 192 GB | 5.3 TB/s | 1,307.4 TFLOPS, 2,614.9 sparse | 2,614.9 TFLOPS, 5,229.8 sparse | 1,307.4 | 2,614.9 |
#
# Dense columns in TFLOP/s. **Read the asterisk.** NVIDIA's H100, H200 and B200 datasheets
# print the tensor-core peaks *with 2:4 structured sparsity* ("* With sparsity"), a mode in
# which half the weights are zero; a dense training run can approach only half of the
# printed figure. The A100 and MI300X datasheets print the dense peak and the sparse one
# beside it. H200 is H100's die with more and faster memory, so its peaks are the same.
# An MFU or a utilization is always a fraction of the dense peak.
#
# ### 4a. Derive
#
# Write `flops_expr`, the FLOPs your run executes, as a sympy expression in `N` and `D`
# (the symbols defined above). Mind your variant's `recompute`.

# %% nbgrader={"grade": false, "grade_id": "answer_expr", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
flops_per_param_token = 2 + 4 + (2 if params["recompute"] else 0)
flops_expr = flops_per_param_token * N * D
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_expr", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the mathematics is checked when your notebook is graded.
assert isinstance(flops_expr, sp.Expr), "flops_expr should be a sympy expression"
assert {x.name for x in flops_expr.free_symbols} <= {x.name for x in (N, D)}, "use only the symbols N and D"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("w2-compute", "check_expr", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4b. Compute
#
# For your variant, compute:
# - `train_flops`: the FLOPs your run executes;
# - `days`: the wall-clock time of the run, in days of 86,400 seconds;
# - `pf_days`: `train_flops` expressed in PF-days.

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
train_flops = float(flops_expr.subs({N: params["N"], D: params["D"]}))
seconds = train_flops / (params["n_gpus"] * params["peak_flops"] * params["utilization"])
days = seconds / 86_400
pf_days = train_flops / (1e15 * 86_400)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
import numbers

for name in ("train_flops", "days", "pf_days"):
    assert name in globals(), f"assign {name} in the answer cell above"
    value = globals()[name]
    assert isinstance(value, numbers.Real) and not isinstance(value, bool), f"{name} should be a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("w2-compute", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### 4c. Read your number
#
# How many days would your run take at the peak FLOP/s (the figure vendors advertise)?
# How many GPUs of the same kind would finish it in a week at your utilization? If your
# variant recomputes activations, how many days would it save to drop recomputation,
# supposing the memory allowed it? (Not graded: a sentence for yourself.)

# %% [markdown]
# *Your answer, for yourself (not graded): double-click this cell and write it here.*
