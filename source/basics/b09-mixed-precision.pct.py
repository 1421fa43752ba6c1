# %% [markdown]
# # b09-mixed-precision · Mixed precision
#
# *Chapter II.8 Training at Scale · basics · term 9 of 11*
#
# **Mixed precision** runs most of a training step's arithmetic in a 16-bit format (fp16 or
# bf16) and keeps the things that must not lose bits in fp32: the weights the optimiser
# updates, and the optimiser's state. In torch this is `torch.autocast`. The parameters stay
# fp32 tensors, and each matrix multiply casts its inputs, weights included, to the 16-bit
# dtype on the fly. (Micikevicius et al., *Mixed Precision Training*, ICLR 2018, §3.1, call
# the fp32 weights the *master copy*.)
#
# A 16-bit format has a narrow **range**. That, before any question of speed, decides what
# survives:
#
# | | exponent / fraction bits | largest finite | smallest normal | smallest subnormal |
# |---|---|---|---|---|
# | fp16 | 5 / 10 | 65504 | $2^{-14}\approx 6.1\times10^{-5}$ | $2^{-24}\approx 6.0\times10^{-8}$ |
# | bf16 | 8 / 7 | $\approx 3.39\times10^{38}$ | $2^{-126}\approx 1.2\times10^{-38}$ | $2^{-133}\approx 9.2\times10^{-41}$ |
# | FP8 E5M2 (`torch.float8_e5m2`) | 5 / 2 | 57344 | $2^{-14}$ | $2^{-16}$ |
# | FP8 E4M3 (`torch.float8_e4m3fn`) | 4 / 3 | 448 | $2^{-6}$ | $2^{-9}$ |
#
# The two 8-bit rows are the formats of Micikevicius et al., *FP8 Formats for Deep Learning*
# (2022, Table 1), in which Hopper-class and later GPUs multiply: E4M3 (more precision) for
# weights and activations, E5M2 (fp16's range, 2 fraction bits) for gradients. E4M3 has no
# infinity (the `fn`), so its top is 448. A cast past it saturates there in torch; that is
# torch's choice, not the format's, and other stacks may give NaN (E4M3's only non-finite
# value, S.1111.111). Their windows are so narrow (18 and 32 binades) that every FP8 tensor
# carries its own scale: one per tensor, or, in the OCP Microscaling (MX) formats, one power of
# two shared by each block of 32 values.
#
# The cast **rounds to nearest** (ties to even) and keeps subnormals. A value below the
# smallest subnormal is not simply dropped. It becomes 0 only when it is at most half of
# the smallest subnormal, and otherwise it rounds *up* to it. Likewise an fp16 value is not
# lost just because it exceeds 65504. Only values from 65520 up round to infinity: 65520
# lies half-way between 65504 and 65536, the next value the format would need a larger
# exponent for. bf16 has the exponent range of fp32 and only 8 significant bits, so it
# keeps the tiny and the huge and loses digits instead.
#
# We say a value **survives** the cast when the result is finite and nonzero.

# %%
import torch

for x in [65504.0, 65519.0, 65520.0, 3.0e-8, 2.9e-8, 1e-41]:
    t = torch.tensor([x])                 # a Python float becomes float32 first
    print(f"{x:>9g}   fp16 -> {t.to(torch.float16).item():<12.6g} bf16 -> {t.to(torch.bfloat16).item():.6g}")

# %% [markdown]
# ## What autocast saves, and what it costs
#
# Account for one training step. Let $N$ be the number of weights of the linear layers and
# $A$ the number of floating-point values the forward pass saves for backward (the activations;
# in e09 the Chinchilla coefficient is written $A_N$, so $A$ here means only this count).
# - In plain fp32 training the weights take $4N$ bytes and the saved activations $4A$.
# - Under autocast the fp32 weights are still there ($4N$). Each weight is cast to a 16-bit
#   copy, and backward keeps that copy because it needs it ($2N$). The saved activations are
#   16-bit ($2A$; we assume all of them, although autocast in fact keeps softmax and layer
#   norm outputs in fp32).
#
# So autocast saves $(4N + 4A) - (6N + 2A) = 2A - 2N$ bytes. The saving comes from the
# activations, and the weights cost memory rather than save it. When activations are small
# beside the weights, mixed precision uses *more* memory than fp32.

# %% [markdown]
# ## Your variant
#
# Each variant lists values met in one training step, labelled, with $N$ and $A$ for the
# model and batch. $A$ counts the floating-point values saved for backward. Dropout masks are
# saved too, but as 1-byte booleans in both runs, so they cancel from the saving and are not
# in $A$.
#
# - **GPT-2-style models** (variants A and B: LayerNorm, a GeLU MLP of width $4h$, dropout, and
#   attention scores stored as $s \times s$ matrices, as implementations of the time did).
#   Korthikanti et al., *Reducing Activation Recomputation in Large Transformer Models* (2022),
#   §4.1, eq. 1, count $sbh(34 + 5as/h)$ **bytes** per layer, with 16-bit values and 1-byte
#   dropout masks ($s$ sequence length, $b$ sequences, $h$ width, $a$ heads). Term by term, in
#   values: the attention block stores its QKV input, the query, key and value tensors and the
#   output projection's input ($5sbh$), the softmax output and its dropout's output ($2as^2b$), and two
#   masks ($as^2b + sbh$ bytes); the MLP stores its input, the GeLU's input and output ($9sbh$)
#   and a mask ($sbh$ bytes); the two LayerNorms their inputs ($2sbh$). So
#   $A = L(16sbh + 2as^2b)$ values, and $2A + L(2sbh + as^2b) = L(34sbh + 5as^2b)$ bytes.
#   (Halving Korthikanti's bytes would count each 1-byte mask as half a value.)
# - **Llama-2-7B** (variants C and D). Touvron et al., *Llama 2* (2023), §2.2 and Table 1, keep
#   Llama 1's architecture (pre-norm RMSNorm, SwiGLU, rotary embeddings; for 7B: 32 layers,
#   width 4096, 32 heads, 4k context), and the released model's SwiGLU width is $f = 11008$
#   ($\tfrac{2}{3}4h$, Touvron et al., *LLaMA*, 2023, §2.2, rounded up to a multiple of 256 in
#   the released code).
#   We assume what such a run does: **no dropout** (the models have none), and **flash
#   attention**, so no $s \times s$ scores are stored; backward keeps the query, key and value
#   tensors and the attention output, which is also the output projection's input. Per layer
#   that is two RMSNorm inputs and outputs ($4sbh$), query, key and value ($3sbh$), the
#   attention output ($sbh$), and the SwiGLU's gate pre-activation, up
#   projection, SiLU output and their product ($4fsb$): $A = L\,sb(8h + 4f)$. Per-row
#   statistics (RMSNorm's $1/\mathrm{rms}$, flash attention's log-sum-exp) are fp32 in both runs
#   and left out.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {
    "A": {
        "labels": ["weight", "embedding-row gradient", "Adam second moment",
                   "attention logit", "MLP activation outlier", "loss x 2**16",
                   "small gradient", "LayerNorm-gain gradient", "large activation",
                   "learning rate"],
        "values": [0.0213, 3.7e-9, 1.4e-13, 412.5, 7.3e4, 151388.16, 4.5e-8, 2.2e-6,
                   65515.0, 3.0e-4],
        "N": 1_474_560_000, "activation_elements": 15_099_494_400},
    "B": {
        "labels": ["gradient", "gradient", "gradient", "activation", "weight",
                   "Adam first moment", "Adam second moment", "logit", "activation",
                   "update lr*m/sqrt(v)", "attention score"],
        "values": [1.2e-5, 2.5e-8, 3.1e-8, 6.6e4, -0.047, -8.3e-7, 6.9e-13, -23.75,
                   65519.0, 2.9e-4, 1.0e5],
        "N": 84_934_656, "activation_elements": 7_247_757_312},
    "C": {
        "labels": ["weight", "gradient", "Adam second moment of a dead unit",
                   "Adam second moment of a dead unit", "activation", "loss",
                   "gradient", "attention logit", "loss x 2**24", "gradient"],
        "values": [0.0187, 6.2e-9, 2.0e-41, 6.5e-41, 3.1e5, 2.05, 1.6e-39, 1250.0,
                   3.4e7, 7.7e-6],
        "N": 6_476_005_376, "activation_elements": 10_066_329_600},
    "D": {
        "labels": ["gradient", "gradient", "Adam second moment", "activation",
                   "activation", "weight", "Adam second moment of a dead unit",
                   "gradient", "logit", "lr x weight decay"],
        "values": [4.0e-8, 1.9e-8, 3.3e-15, 65520.0, 65510.0, 0.0091, 3.0e-41, 5.1e-40,
                   -48.5, 1.0e-6],
        "N": 6_476_005_376, "activation_elements": 1_258_291_200},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"basics:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}")
for i, (label, value) in enumerate(zip(params["labels"], params["values"])):
    print(f"  {i:2d}  {label:<36s} {value:.4g}")
print(f"  N = {params['N']:,}   A = {params['activation_elements']:,}")

# %% [markdown]
# The models: **A** a GPT-2 XL-sized model (48 layers, width 1600) on a batch of 4 × 1024
# tokens; **B** a GPT-2 124M-sized model on 16 × 1024; **C** a Llama-2-7B-sized model on
# one 4096-token sequence; **D** the same 7B model fine-tuned on one 512-token sequence.
#
# Compute, for your variant:
# - `fp16_survivors`: the indices (0-based, ascending) of the values that survive a cast to
#   fp16 with torch's rounding;
# - `bf16_survivors`: the same for bf16;
# - `bytes_saved`: the bytes autocast saves against fp32 training, by the account above
#   (negative if it costs memory).

# %% nbgrader={"grade": false, "grade_id": "answer_survivors", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
import math


def survivors(values, dtype):
    cast = torch.tensor(values).to(dtype).tolist()
    return [i for i, y in enumerate(cast) if math.isfinite(y) and y != 0.0]


fp16_survivors = survivors(params["values"], torch.float16)
bf16_survivors = survivors(params["values"], torch.bfloat16)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_survivors", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the lists are checked when your notebook is graded.
for name in ("fp16_survivors", "bf16_survivors"):
    assert name in globals(), f"{name} is not defined yet"
    assert isinstance(globals()[name], (list, tuple)), f"{name} should be a list of indices"
    assert all(isinstance(i, numbers.Integral) for i in globals()[name]), f"{name} should hold ints"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("b09-mixed-precision", "check_survivors", globals())
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "answer_bytes", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
fp32_bytes = 4 * params["N"] + 4 * params["activation_elements"]
autocast_bytes = 4 * params["N"] + 2 * params["N"] + 2 * params["activation_elements"]
bytes_saved = fp32_bytes - autocast_bytes
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_bytes", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the number is checked when your notebook is graded.
assert "bytes_saved" in globals(), "bytes_saved is not defined yet"
assert isinstance(bytes_saved, numbers.Real), "bytes_saved should be a number of bytes"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("b09-mixed-precision", "check_bytes", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## Look at it
#
# Your values on a log scale, against the two formats' floors and fp16's ceiling.

# %%
import matplotlib.pyplot as plt

mags = [abs(v) for v in params["values"]]
fig, ax = plt.subplots(figsize=(7, 3))
ax.scatter(mags, range(len(mags)), color="black", zorder=3)
ax.axvspan(1e-46, 2.0 ** -25, color="tab:orange", alpha=0.2, label="fp16 rounds to 0")
ax.axvspan(65520, 1e40, color="tab:red", alpha=0.2, label="fp16 rounds to inf")
ax.axvline(2.0 ** -134, color="tab:green", linestyle="--", label="bf16 rounds to 0 below")
ax.set_xscale("log")
ax.set_xlim(1e-45, 1e39)
ax.set_yticks(range(len(mags)))
ax.set_yticklabels(params["labels"], fontsize=7)
ax.legend(fontsize=7, loc="lower right")
plt.show()
