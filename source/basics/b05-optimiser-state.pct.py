# %% [markdown]
# # b05-optimiser-state · What Adam remembers, in bytes
#
# *Chapter II.8 Training at Scale · basics · term 5 of 11*
#
# **Optimiser state.** Everything the optimiser carries from one step to the next besides
# the weights. Adam (and AdamW) keeps, for every parameter, a running mean of its gradient
# $m$ and of its squared gradient $v$, both in fp32:
#
# | how the weights are stored | Adam's state per parameter | bytes |
# |---|---|---|
# | fp32 (also fp32 weights under `torch.autocast`) | $m$, $v$ | $4 + 4 = 8$ |
# | 16-bit, with an fp32 master copy (Megatron-LM, DeepSpeed) | master weight, $m$, $v$ | $4 + 4 + 4 = 12$ |
#
# The second row is ZeRO's $K = 12$ (Rajbhandari et al. 2020, §3.1): updates too small for
# a 16-bit weight to absorb are applied to the fp32 master copy, which therefore belongs to
# the optimiser. Weights and gradients come on top in both rows (4 + 4 bytes, or 2 + 2);
# either way the model states total 16 bytes per parameter.
#
# In PyTorch the state is a dictionary you can inspect. `optimizer.state_dict()` holds
# `param_groups` (hyperparameters and parameter *indices*, not the weights) and `state`:
# for each parameter tensor, after the first step, a 0-dimensional float32 `step`, `exp_avg`
# ($m$) and `exp_avg_sq` ($v$), and with `amsgrad=True` also `max_exp_avg_sq`.

# %% [markdown]
# ## Worked example: a 3-5-2 network
#
# The state is empty until the first step; then it appears, tensor by tensor.

# %%
import torch

torch.manual_seed(0)
example_model = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2))
example_opt = torch.optim.AdamW(example_model.parameters(), lr=1e-3)
print("before any step:", example_opt.state_dict()["state"])
example_model(torch.randn(4, 3)).square().mean().backward()
example_opt.step()
example_state = example_opt.state_dict()["state"]
for index, entry in example_state.items():
    print(index, {name: (tuple(t.shape), str(t.dtype)) for name, t in entry.items()})
example_bytes = sum(t.numel() * t.element_size() for entry in example_state.values()
                    for t in entry.values())
example_n = sum(p.numel() for p in example_model.parameters())
print(f"{example_n} parameters in 4 tensors: {example_bytes} bytes "
      f"= 8 x {example_n} + 4 x 4")

# %% [markdown]
# **What the sources print.** ZeRO's §3.1 counts "2Ψ + 2Ψ + KΨ = 16Ψ bytes" for
# mixed-precision Adam and, for GPT-2 with 1.5 billion parameters, "a memory requirement of
# at least 24 GB", of which the optimiser's share is $12 \times 1.5\times10^9 = 18$ GB. A
# pure fp32 run with Adam also needs 16 bytes per parameter ($4 + 4 + 8$): mixed precision
# saves compute and activation memory, not model-state memory.
#
# ## Your variant
#
# Run the next cell. It works out which variant you are graded on from your student id. On
# JupyterHub that is your hub user name; on your own machine, start Jupyter with
# `JUPYTERHUB_USER=<your course id> jupyter lab` to see the variant the grader uses.
# Editing this cell does not change what you are graded on.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

import sympy as sp

N = sp.symbols("N", positive=True)

VARIANTS = {
    "A": {"widths": [16, 32, 4], "bias": True, "amsgrad": False, "N": 20_554_567_680,
          "precision": "mixed"},
    "B": {"widths": [64, 10], "bias": False, "amsgrad": True, "N": 124_439_808,
          "precision": "fp32"},
    "C": {"widths": [8, 8, 8, 2], "bias": True, "amsgrad": True, "N": 68_976_648_192,
          "precision": "mixed"},
    "D": {"widths": [128, 256, 128], "bias": False, "amsgrad": False, "N": 1_557_611_200,
          "precision": "fp32"},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"basics:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}: {params}")

# %% [markdown]
# Each variant has a small network and a real model. The small network is
# `torch.nn.Linear` layers of the given `widths` (with or without `bias`), a ReLU between
# consecutive layers, optimised by `torch.optim.AdamW(model.parameters(), amsgrad=...)`.
# The real models: **A** GPT-NeoX-20B, trained with fp16 weights in DeepSpeed; **B** GPT-2
# 124M as nanoGPT trains it (fp32 weights, autocast); **C** Llama 2 70B with 16-bit weights;
# **D** GPT-2 XL (1.5B) with fp32 weights.
#
# ### a. The state dict of your small network
#
# Build it (or count on paper), take one optimiser step, and report
# - `state_tensors`: the number of tensors in `optimizer.state_dict()["state"]`;
# - `state_dict_bytes`: their total size in bytes.

# %% nbgrader={"grade": false, "grade_id": "answer_state_dict", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
torch.manual_seed(0)
_layers = []
for _i, (_a, _b) in enumerate(zip(params["widths"], params["widths"][1:])):
    if _i:
        _layers.append(torch.nn.ReLU())
    _layers.append(torch.nn.Linear(_a, _b, bias=params["bias"]))
my_model = torch.nn.Sequential(*_layers)
my_opt = torch.optim.AdamW(my_model.parameters(), lr=1e-3, amsgrad=params["amsgrad"])
my_model(torch.randn(4, params["widths"][0])).square().mean().backward()
my_opt.step()
_state = my_opt.state_dict()["state"]
state_tensors = sum(len(entry) for entry in _state.values())
state_dict_bytes = sum(t.numel() * t.element_size() for entry in _state.values() for t in entry.values())
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_state_dict", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
import numbers

for _name in ("state_tensors", "state_dict_bytes"):
    assert _name in globals(), f"assign {_name} = ... in the answer cell"
    assert isinstance(globals()[_name], numbers.Integral), f"{_name} is a count: make it an int"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("b05-optimiser-state", "check_state_dict", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### b. The real model
#
# For your variant's real model ($N$ = `params["N"]` parameters, weights stored as
# `params["precision"]`) give
# - `adam_bytes_per_param`: bytes of Adam's state per parameter (an int);
# - `optimizer_bytes`: Adam's state for the whole model, in bytes;
# - `optimizer_bytes_expr`: the same as a sympy expression in `N`.

# %% nbgrader={"grade": false, "grade_id": "answer_model", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
adam_bytes_per_param = {"fp32": 8, "mixed": 12}[params["precision"]]
optimizer_bytes = adam_bytes_per_param * params["N"]
optimizer_bytes_expr = adam_bytes_per_param * N
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_model", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the answers are checked when your notebook is graded.
import numbers

assert isinstance(adam_bytes_per_param, numbers.Integral), "adam_bytes_per_param is a count: make it an int"
assert isinstance(optimizer_bytes, numbers.Real), "optimizer_bytes should be a number"
assert isinstance(optimizer_bytes_expr, sp.Expr), "optimizer_bytes_expr should be a sympy expression"
assert {x.name for x in optimizer_bytes_expr.free_symbols} <= {x.name for x in (N,)}, "use only the symbol N"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("b05-optimiser-state", "check_model", globals())
### END HIDDEN TESTS

# %% [markdown]
# Your small network's state dict is a little more than $8\times$ (or $12\times$ with amsgrad)
# its parameter count in bytes. Where does the remainder come from, and why does it vanish
# for a real model? (Not graded.)
