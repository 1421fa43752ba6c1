# %% [markdown]
# # b10-checkpoint · Checkpoint
#
# *Chapter II.8 Training at Scale · basics · term 10 of 11*
#
# A **checkpoint** is a saved snapshot of a training run. A *full* checkpoint holds
# everything needed to carry on as if the run had never stopped:
# - the **weights**, in fp32 (in mixed precision, the fp32 master copy);
# - the **optimiser's state**: Adam's two moments per parameter, SGD's momentum buffer, and
#   the step counters (Adam's bias correction depends on them);
# - the **learning-rate scheduler's state**, so the schedule resumes at the right step;
# - the **random number generators' states** (Python, NumPy, torch CPU and each GPU), so
#   dropout masks and data shuffles continue the same streams;
# - the **position in the data**: epoch, batch index, and the shuffle's seed, so no batch is
#   repeated or skipped;
# - with fp16 and a `GradScaler`, the **scaler's state** (the current loss scale and its
#   growth counter). bf16 needs no loss scaling and has no scaler.
#
# A checkpoint leaves some things out. It is taken between steps, when no gradients or
# saved activations exist.
#
# **What a checkpoint holds (the chapter's definition).** A training checkpoint holds
# everything the next step reads and cannot recompute: the fp32 weights (in mixed precision,
# the fp32 master copy), the optimiser's state, the learning-rate scheduler's state, the
# random number generators' states and the position in the data, and, with fp16, the
# GradScaler's state. For Adam that is 4 + 4 + 4 = 12 bytes per parameter. The 16-bit copy
# of the weights is not part of it: it is a cast of the fp32 master weights, and the same
# cast on loading gives the same bits. It is saved only when the checkpoint must also serve
# as a model that loads without its optimiser (for evaluation, export or serving); DeepSpeed
# and Megatron-LM, for instance, write the 16-bit module weights beside the fp32 optimiser
# state, and then the checkpoint is 2 + 12 = 14 bytes per parameter.
#
# Nearly all of its bytes are the weights and the optimiser state. A model of $N$ parameters
# with $k$ fp32 state tensors per parameter checkpoints to about $(4 + 4k)N$ bytes, $12N$ for
# Adam. The rest is a few numbers.

# %% [markdown]
# ## Measure one
#
# `torch.save` writes a zip archive in which every tensor storage is one entry,
# `archive/data/<k>`. Adding up those entries gives the exact tensor payload. The file is
# a little larger, because of the pickled structure and the zip headers.
#
# The optimiser's state exists only after its first step (torch creates it lazily), so take
# one step before saving.

# %%
import io
import random
import zipfile

import numpy as np
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: min(1.0, (t + 1) / 100))
loss = model(torch.randn(16, 4)).pow(2).mean()
loss.backward()
opt.step()
sched.step()
opt.zero_grad(set_to_none=True)

checkpoint = {
    "model": model.state_dict(),
    "optimizer": opt.state_dict(),
    "scheduler": sched.state_dict(),
    "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state(),
            "python": random.getstate()},
    "data": {"epoch": 0, "batch": 1, "shuffle_seed": 1234},
}


def tensor_payload(obj):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    archive = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    data = sum(i.file_size for i in archive.infolist() if "/data/" in i.filename)
    return data, len(buffer.getvalue())


n = sum(p.numel() for p in model.parameters())
tensors = len(list(model.parameters()))
print("AdamW state of one tensor:", {k: tuple(v.shape) for k, v in opt.state_dict()["state"][0].items()})
print(f"parameters {n}, parameter tensors {tensors}")
print("model + optimizer payload, file size:", tensor_payload({"model": model.state_dict(),
                                                              "optimizer": opt.state_dict()}))
print("count: 4n + 8n + 4 per step tensor =", 4 * n + 8 * n + 4 * tensors)
print("full checkpoint payload, file size:", tensor_payload(checkpoint))

# %% [markdown]
# The count matches the payload to the byte. The full checkpoint adds the torch RNG state,
# a tensor of 5056 bytes, and the pickled rest adds the file's overhead. Look at the state
# dict: each parameter tensor has its own `step`, a 0-dim float32 tensor of 4 bytes.
#
# ## Your variant

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {
    "A": {"model": "GPT-2 XL", "N": 1_557_611_200, "optimizer": "adamw", "precision": "fp16",
          "tiny_layers": [[16, 32], [32, 4]]},
    "B": {"model": "ResNet-50", "N": 25_557_032, "optimizer": "sgd_momentum",
          "precision": "fp16", "tiny_layers": [[8, 64], [64, 64], [64, 10]]},
    "C": {"model": "Llama 2 7B", "N": 6_738_415_616, "optimizer": "adamw", "precision": "bf16",
          "tiny_layers": [[32, 48], [48, 48], [48, 32]]},
    "D": {"model": "EfficientNet-B4", "N": 19_000_000, "optimizer": "rmsprop_momentum",
          "precision": "bf16", "tiny_layers": [[12, 24], [24, 24], [24, 24], [24, 6]]},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"basics:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

MENU = [
    "the fp32 weights (the master copy)",                            # 0
    "the gradients of the last step",                                # 1
    "the optimizer's state (moments or momentum, step counts)",      # 2
    "the learning-rate scheduler's state",                           # 3
    "the random number generators' states",                          # 4
    "the position in the data (epoch, batch index, shuffle seed)",   # 5
    "the activations saved for the backward pass",                   # 6
    "the 16-bit copy of the weights",                                # 7
    "the GradScaler's state (loss scale, growth tracker)",           # 8
]

# %% [markdown]
# The parameter counts are those of the released models. GPT-2 XL's checkpoint holds
# 1,557,611,200 parameters (48 layers of width 1600, a 50,257-token vocabulary, 1024
# positions), but Table 2 of the GPT-2 paper prints "1542M" for it, a figure the
# architecture does not give. Llama 2 7B holds 6,738,415,616 and torchvision's ResNet-50
# 25,557,032. EfficientNet-B4 is the rounded "19M" of Tan and Le's Table 2.
#
# The optimisers are torch's: `adamw` is `torch.optim.AdamW`, `sgd_momentum` is
# `torch.optim.SGD(momentum=0.9)`, and `rmsprop_momentum` is `torch.optim.RMSprop(momentum=0.9)`,
# as EfficientNet was trained. Precision `fp16` means autocast with a `GradScaler`, and
# `bf16` means autocast without one.
#
# 1. `must_hold`: the indices in `MENU` of what a full checkpoint of your run must hold,
#    ascending.

# %% nbgrader={"grade": false, "grade_id": "answer_contents", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
must_hold = [0, 2, 3, 4, 5] + ([8] if params["precision"] == "fp16" else [])
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_contents", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import numbers
# Form only: the list is checked when your notebook is graded.
assert "must_hold" in globals(), "must_hold is not defined yet"
assert isinstance(must_hold, (list, tuple)), "must_hold should be a list of indices into MENU"
assert all(isinstance(i, numbers.Integral) and 0 <= i < len(MENU) for i in must_hold), "indices into MENU"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("b10-checkpoint", "check_contents", globals())
### END HIDDEN TESTS

# %% [markdown]
# 2. `checkpoint_bytes`: the bytes of your model's checkpoint (weights and optimiser state;
#    the counters and the other small items may be ignored), in plain bytes.
# 3. `tiny_payload_bytes`: the exact tensor payload, in bytes, of
#    `torch.save({"model": model.state_dict(), "optimizer": opt.state_dict()})` for a tiny
#    model of `nn.Linear` layers (with bias) of the sizes in `tiny_layers`, after one step of
#    your optimiser (an int). Count it, then measure it as above.

# %% nbgrader={"grade": false, "grade_id": "answer_sizes", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
states = {"adamw": 2, "sgd_momentum": 1, "rmsprop_momentum": 2}[params["optimizer"]]
has_step = params["optimizer"] != "sgd_momentum"
checkpoint_bytes = (4 + 4 * states) * params["N"]

tiny_n = sum(a * b + b for a, b in params["tiny_layers"])
tiny_tensors = 2 * len(params["tiny_layers"])
tiny_payload_bytes = 4 * tiny_n + 4 * states * tiny_n + (4 * tiny_tensors if has_step else 0)

# measured, to compare
torch.manual_seed(0)
layers = [torch.nn.Linear(a, b) for a, b in params["tiny_layers"]]
tiny = torch.nn.Sequential(*layers)
tiny_opt = {"adamw": lambda p: torch.optim.AdamW(p, lr=1e-3),
            "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
            "rmsprop_momentum": lambda p: torch.optim.RMSprop(p, lr=1e-3, momentum=0.9)}[params["optimizer"]](tiny.parameters())
tiny(torch.randn(2, params["tiny_layers"][0][0])).sum().backward()
tiny_opt.step()
measured, _ = tensor_payload({"model": tiny.state_dict(), "optimizer": tiny_opt.state_dict()})
print("counted", tiny_payload_bytes, "measured", measured)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_sizes", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
for name in ("checkpoint_bytes", "tiny_payload_bytes"):
    assert name in globals(), f"{name} is not defined yet"
assert isinstance(checkpoint_bytes, numbers.Real), "checkpoint_bytes should be a number of bytes"
assert isinstance(tiny_payload_bytes, numbers.Integral), "tiny_payload_bytes is a count of bytes: an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("b10-checkpoint", "check_sizes", globals())
### END HIDDEN TESTS

# %% [markdown]
# Read your number: how long would your checkpoint take to write at 2 GB/s? (Exercise e06
# works out how often a run should pay that cost.)
