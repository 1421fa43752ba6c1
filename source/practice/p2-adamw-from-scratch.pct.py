# %% [markdown]
# # p2-adamw-from-scratch · Clipping and AdamW, matched to torch
#
# *Chapter II.8 Training at Scale · practice · build it · 2 of 9*
#
# Every large run in this chapter takes the same two steps after each backward pass:
# it clips the global gradient norm, then takes an AdamW step. Here you write both
# from scratch and make them agree with `torch.nn.utils.clip_grad_norm_` and
# `torch.optim.AdamW` to twelve digits in float64, over a few dozen steps of a real
# (small) model. At that precision every detail of the update shows: where the decay
# goes, where $\epsilon$ goes, the bias corrections, the $10^{-6}$ in the clip.
#
# Sources: Loshchilov and Hutter, *Decoupled Weight Decay Regularization* (ICLR 2019),
# Algorithm 2; Kingma and Ba, *Adam* (ICLR 2015), Algorithm 1; Pascanu, Mikolov and
# Bengio (ICML 2013), Algorithm 1 (clipping); and the PyTorch source, which is what is graded:
# `torch/optim/adam.py` (AdamW is Adam with decoupled decay) and `torch/nn/utils/clip_grad.py`.

# %% [markdown]
# ## 1. The two rules as torch applies them
#
# **Clipping.** With $g_1, \dots, g_k$ the gradients of all parameters,
# $\lVert g \rVert = \sqrt{\sum_i \lVert g_i \rVert^2}$ (the norm of everything laid end
# to end). Every gradient is multiplied by the same coefficient
# $\min\!\big(1, \; M / (\lVert g \rVert + 10^{-6})\big)$, where $M$ is `max_norm`.
# The function returns $\lVert g \rVert$ *before* clipping.
#
# **AdamW**, for each parameter $\theta$ with gradient $g$, at step $t = 1, 2, \dots$
# (state $m = v = 0$ at the start), in this order:
#
# 1. $\theta \leftarrow \theta\,(1 - \eta\lambda)$ (decoupled decay; $\eta$ is `lr`, $\lambda$ is `weight_decay`);
# 2. $m \leftarrow \beta_1 m + (1 - \beta_1) g$;
# 3. $v \leftarrow \beta_2 v + (1 - \beta_2) g^2$;
# 4. $\theta \leftarrow \theta - \dfrac{\eta}{1 - \beta_1^t} \cdot \dfrac{m}{\sqrt{v} / \sqrt{1 - \beta_2^t} + \epsilon}$.
#
# Three things here differ from what people often write down:
#
# - The decay is **outside** Adam's normalisation, and it happens **before** the update.
#   Putting $\lambda\theta$ into $g$ instead is an L2 penalty (that is what
#   `torch.optim.Adam(weight_decay=...)` does), and Adam's division by $\sqrt{v}$ then
#   weakens it for weights with large gradients: Loshchilov and Hutter's point.
# - The decay is multiplied by the **learning rate**. In Loshchilov and Hutter's
#   Algorithm 2 the decay term is multiplied by the schedule multiplier $\eta_t$ and not
#   by the base rate $\alpha$; torch multiplies it by `lr`. So torch's `weight_decay=0.1` at
#   `lr=6e-4` shrinks the weights by a factor $1 - 6\times10^{-5}$ per step.
# - $\epsilon$ is added **after** the bias correction of $\sqrt{v}$. Kingma and Ba note a
#   cheaper ordering (fold both corrections into the step size, add an
#   $\hat\epsilon$ to $\sqrt{v}$ itself); it is a slightly different optimizer.
#
# torch does step 2 as `m.lerp_(g, 1 - beta1)` and step 4 as
# `p.addcdiv_(m, denom, value=-lr / (1 - beta1**t))` with
# `denom = (v.sqrt() / (1 - beta2**t) ** 0.5).add_(eps)`. If you use the same operations
# your weights agree bit for bit; the usual `beta1 * m + (1 - beta1) * g` agrees to about
# $10^{-15}$, which also passes (the tolerance is $10^{-12}$).

# %% [markdown]
# ## 2. Your variant
#
# Run the next cell. It works out which variant you are graded on from your student
# id. On JupyterHub that is your hub user name; working on your own machine, start
# Jupyter with `JUPYTERHUB_USER=<your course id> jupyter lab` so that you see the same
# variant the grader uses. Editing this cell does not change what you are graded on.
#
# The hyperparameters are the published ones: GPT-3 125M (Brown et al. 2020, Table 2.1
# and Appendix B), torch's defaults, OPT-175B after its clip threshold was lowered to 0.3
# (Zhang et al. 2022), and LLaMA 2 7B (Touvron et al. 2023). `spikes` lists outlier
# batches, [step, factor] with the inputs multiplied by factor.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import getpass
import hashlib
import os

VARIANTS = {
    "A": {"seed": 1, "steps": 25, "lr": 6e-4, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1,
          "max_norm": 1.0, "spikes": [[9, 6.0]]},
    "B": {"seed": 2, "steps": 25, "lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.01,
          "max_norm": 1.0, "spikes": [[14, 8.0]]},
    "C": {"seed": 3, "steps": 25, "lr": 1.2e-4, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1,
          "max_norm": 0.3, "spikes": [[5, 5.0], [18, 5.0]]},
    "D": {"seed": 4, "steps": 25, "lr": 3e-4, "betas": [0.9, 0.95], "eps": 1e-5, "weight_decay": 0.1,
          "max_norm": 1.0, "spikes": [[11, 10.0]]},
}
STUDENT = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
VARIANT = "ABCD"[int.from_bytes(hashlib.sha256(f"practice:{STUDENT}".encode()).digest()[:8], "big") % 4]
params = VARIANTS[VARIANT]
print(f"Student {STUDENT}: variant {VARIANT}")
for _key, _value in params.items():
    print(f"  {_key} = {_value}")

# %% [markdown]
# ## 3. The training loop (given)
#
# `adamw_run` trains a small float64 classifier (6 → 24 → 4 with GELU, 268 weights)
# on labels from a random linear teacher. At each step it clips with
# `clip(model.parameters(), max_norm)` and then calls `optimizer.step()`. Note that it
# passes `model.parameters()`, a generator, as torch's own loops do: if your functions
# go through the parameters twice, make a list first. The grader calls `adamw_norms`
# and `adamw_weights` on hidden runs. Do not edit this cell; it is replaced by this
# version when your notebook is graded.

# %% nbgrader={"grade": false, "grade_id": "harness", "locked": true, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
import torch
import torch.nn.functional as F


# chapter: include graders.problems.practice.p2_adamw_from_scratch.adamw_run


def adamw_norms(seed, steps, lr, betas, eps, weight_decay, max_norm, spikes):
    """The pre-clip gradient norms of one run with your code (called by the grader)."""
    return adamw_run(ScratchAdamW, clip_grad_norm, seed, steps, lr, betas, eps, weight_decay, max_norm,
                     spikes)[0]


def adamw_weights(seed, steps, lr, betas, eps, weight_decay, max_norm, spikes):
    """The final weights of one run with your code (called by the grader)."""
    return adamw_run(ScratchAdamW, clip_grad_norm, seed, steps, lr, betas, eps, weight_decay, max_norm,
                     spikes)[1]


# %% [markdown]
# ## 4. Build it
#
# Write
#
# - `clip_grad_norm(parameters, max_norm)`: clip, in place, the gradients of the
#   parameters that have one; return the global norm before clipping (a float or a
#   0-dimensional tensor);
# - `ScratchAdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2)` with
#   `zero_grad()` (set each `.grad` to `None`, as torch does) and `step()`, which applies
#   the four AdamW lines above to every parameter, keeping $m$, $v$ and $t$ as state.
#
# Use only tensor arithmetic: no `torch.optim` and no `torch.nn.utils` here. Update the
# weights in place under `torch.no_grad()`.

# %% nbgrader={"grade": false, "grade_id": "answer_adamw", "locked": false, "schema_version": 3, "solution": true, "task": false}
def clip_grad_norm(parameters, max_norm):
    """Global-norm clipping as torch.nn.utils.clip_grad_norm_ does it; returns the pre-clip norm."""
    ### BEGIN SOLUTION
    grads = [p.grad for p in parameters if p.grad is not None]
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    with torch.no_grad():
        for g in grads:
            g.mul_(coef)
    return total
    ### END SOLUTION


class ScratchAdamW:
    """AdamW with torch's update rule (decoupled decay, bias-corrected moments)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        ### BEGIN SOLUTION
        self.params = list(params)
        self.lr, self.beta1, self.beta2 = lr, betas[0], betas[1]
        self.eps, self.weight_decay = eps, weight_decay
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]
        self.t = 0
        ### END SOLUTION

    def zero_grad(self):
        ### BEGIN SOLUTION
        for p in self.params:
            p.grad = None
        ### END SOLUTION

    def step(self):
        ### BEGIN SOLUTION
        self.t += 1
        lr, b1, b2 = self.lr, self.beta1, self.beta2
        with torch.no_grad():
            for p, m, v in zip(self.params, self.m, self.v):
                g = p.grad
                if g is None:
                    continue
                p.mul_(1 - lr * self.weight_decay)                       # 1. decoupled decay first
                m.lerp_(g, 1 - b1)                                       # 2. first moment
                v.mul_(b2).addcmul_(g, g, value=1 - b2)                  # 3. second moment
                denom = (v.sqrt() / (1 - b2 ** self.t) ** 0.5).add_(self.eps)
                p.addcdiv_(m, denom, value=-lr / (1 - b1 ** self.t))     # 4. the bias-corrected step
        ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_adamw", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the hidden tests run your code and torch's on hidden runs and compare.
import numbers

_norms, _weights, _loss = adamw_run(ScratchAdamW, clip_grad_norm, seed=0, steps=3, lr=1e-3, betas=[0.9, 0.95],
                                    eps=1e-8, weight_decay=0.1, max_norm=1.0, spikes=[])
assert len(_norms) == 3 and all(isinstance(n, numbers.Real) for n in _norms), "one norm per step"
assert len(_weights) == 6 * 24 + 24 + 24 * 4 + 4, "all the weights are trained"
assert isinstance(_loss, numbers.Real)
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p2-adamw-from-scratch", "check_adamw", globals())
### END HIDDEN TESTS

# %% [markdown]
# Check yourself against torch on your variant. This cell is not graded.

# %%
try:
    _mine = adamw_run(ScratchAdamW, clip_grad_norm, **params)
    _torch = adamw_run(torch.optim.AdamW, torch.nn.utils.clip_grad_norm_, **params)
    _diff = max(abs(a - b) for a, b in zip(_mine[1], _torch[1]))
    print(f"largest weight difference after {params['steps']} steps: {_diff:.3g}",
          "(bit for bit)" if _diff == 0 else "")
    print("largest norm difference:", max(abs(a - b) for a, b in zip(_mine[0], _torch[0])))
except NotImplementedError:
    print("Write clip_grad_norm and ScratchAdamW above first.")

# %% [markdown]
# ## 5. Your variant's run
#
# Run your variant through `adamw_run` with your code and report:
# - `grad_norms`: the global gradient norm before clipping, at each step (a list of floats);
# - `clipped_steps`: the indices (from 0) of the steps where clipping changed the
#   gradients (torch's coefficient below 1);
# - `final_loss`: the held-out loss after the last step.

# %% nbgrader={"grade": false, "grade_id": "answer_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
grad_norms, _, final_loss = adamw_run(ScratchAdamW, clip_grad_norm, **params)
clipped_steps = [i for i, n in enumerate(grad_norms) if params["max_norm"] / (n + 1e-6) < 1.0]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "check_numbers", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} deletable=false editable=false
# Form only: the numbers are checked when your notebook is graded.
import numbers

assert len(grad_norms) == params["steps"], "one norm per step"
assert isinstance(clipped_steps, list) and all(isinstance(i, numbers.Integral) for i in clipped_steps), \
    "clipped_steps is a list of step indices (ints)"
assert isinstance(final_loss, numbers.Real), "final_loss is a number"
### BEGIN HIDDEN TESTS
from graders.notebook import judge
judge("p2-adamw-from-scratch", "check_numbers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 6. Look at it
#
# The chapter's Fig. 8 from your own run: the gradient norm at each step against the
# threshold. Below it, what decoupled decay did over the same steps: the factor
# $(1 - \eta\lambda)^t$ by which it alone has shrunk every weight. With the
# published thresholds of 1.0, clipping touches only the outlier batches; OPT's
# lowered 0.3 sits below this model's usual norm and clips almost every step, which
# for Adam is nearly harmless (Adam divides out a common scale of the gradients, up to
# $\epsilon$), and for SGD would be a smaller learning rate.

# %%
import matplotlib.pyplot as plt

try:
    _norms, _, _ = adamw_run(ScratchAdamW, clip_grad_norm, **params)
    _steps = range(len(_norms))
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 5), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    _colors = ["C3" if params["max_norm"] / (n + 1e-6) < 1 else "C0" for n in _norms]
    ax1.bar(_steps, _norms, color=_colors)
    ax1.axhline(params["max_norm"], color="k", ls="--", lw=1, label=f"max_norm = {params['max_norm']}")
    ax1.set_ylabel("global gradient norm")
    ax1.legend(loc="upper left")
    ax2.plot(_steps, [(1 - params["lr"] * params["weight_decay"]) ** (t + 1) for t in _steps], "C2")
    ax2.set_ylabel("decay factor")
    ax2.set_xlabel("step (red: clipped)")
    fig.tight_layout()
    plt.show()
except NotImplementedError:
    print("Write clip_grad_norm and ScratchAdamW above first.")

# %% [markdown]
# ## 7. What the sources print
#
# - Loshchilov and Hutter's Algorithm 2 writes the AdamW step as
#   $\theta_t = \theta_{t-1} - \eta_t\big(\alpha\,\hat m_t/(\sqrt{\hat v_t} + \epsilon) + \lambda\theta_{t-1}\big)$,
#   with $\eta_t$ a schedule multiplier. torch's `weight_decay` is therefore not the
#   paper's $\lambda$: torch applies $\eta\lambda$ with $\eta$ the learning rate, so the same
#   `weight_decay` means less decay at a smaller learning rate. When you copy a
#   `weight_decay` from a paper, check which convention its code used.
# - Kingma and Ba's Algorithm 1 adds $\epsilon$ to $\sqrt{\hat v_t}$, the bias-corrected
#   moment, as torch does; the cheaper ordering they mention right after it changes what
#   $\epsilon$ means in the first steps.
# - GPT-3 (Brown et al. 2020, Appendix B) prints $\beta_1 = 0.9$, $\beta_2 = 0.95$,
#   $\epsilon = 10^{-8}$, weight decay 0.1 and a global-norm clip at 1.0; torch's
#   defaults are $\beta_2 = 0.999$ and weight decay 0.01. With $\beta_2 = 0.95$ the second
#   moment averages over about $1/(1 - \beta_2) = 20$ steps instead of 1000, so it
#   follows a change in the size of the gradients (a spike, say) fifty times faster.
#
# Not graded: in your variant, how much did the one outlier batch change the final
# loss, with clipping and (try it) without (`max_norm=1e9`)?
