"""p2-adamw-from-scratch: global-norm clipping and an AdamW step, written from scratch.

The student writes `clip_grad_norm(parameters, max_norm)` and a class
`ScratchAdamW` with torch.optim.AdamW's interface. The notebook's locked
harness, `adamw_run`, trains a small float64 MLP classifier (6 -> 24 -> 4,
GELU) for a few dozen steps with clipping before every optimizer step. The
hidden tests run it with the student's code and with torch's own
`torch.nn.utils.clip_grad_norm_` and `torch.optim.AdamW` on hidden seeds and
hyperparameters, and compare the pre-clip gradient norms and the final
weights to 1e-12 (float64; a faithful implementation matches to ~1e-15, and
one that follows torch's order of operations matches bit for bit).

torch's AdamW on the CPU (torch/optim/adam.py, `_single_tensor_adam` with
decoupled weight decay): step += 1; p *= 1 - lr*wd; m.lerp_(g, 1 - beta1);
v = beta2*v + (1 - beta2)*g*g; denom = sqrt(v)/sqrt(1 - beta2**step) + eps;
p -= lr/(1 - beta1**step) * m/denom. Clipping (torch/nn/utils/clip_grad.py):
total = 2-norm of all gradients laid end to end; every gradient is multiplied
by min(max_norm/(total + 1e-6), 1).

Sources: Loshchilov and Hutter, "Decoupled Weight Decay Regularization" (ICLR
2019), Algorithm 2 (where the decay term is multiplied by the schedule
multiplier eta_t, not by the learning rate alpha: torch multiplies it by lr);
Kingma and Ba, "Adam" (ICLR 2015), Algorithm 1 and the note after it on the
cheaper ordering with an epsilon-hat; Pascanu, Mikolov and Bengio (ICML 2013),
Algorithm 1, for the clipping rule. Hyperparameters of the variants: GPT-3
(Brown et al. 2020, Appendix B and Table 2.1), OPT-175B (Zhang et al. 2022),
LLaMA 2 (Touvron et al. 2023), and torch's defaults.
"""
from __future__ import annotations

import copy
import json
import math
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F

from graders.numeric import Number, Numbers, Outputs
from graders.problem import Mistake, Probe, Problem, one_torch_thread, seed_for

ARGS = ("seed", "steps", "lr", "betas", "eps", "weight_decay", "max_norm", "spikes")
CLIP_EPS = 1e-6


# --- the harness: identical to the locked cell of the notebook (a test checks it) ------

def adamw_run(make_optimizer, clip, seed, steps, lr, betas, eps, weight_decay, max_norm, spikes):
    """Train a small float64 MLP; return (pre-clip gradient norms, final weights, final loss).

    At each step the gradients are clipped with `clip(parameters, max_norm)`, which
    returns the norm before clipping, and then `optimizer.step()` runs. `spikes` is
    a list of [step, factor] pairs: that step's inputs are multiplied by factor.
    The final loss is measured on a fixed held-out batch.
    """
    gen = torch.Generator().manual_seed(int(seed))
    model = torch.nn.Sequential(torch.nn.Linear(6, 24), torch.nn.GELU(), torch.nn.Linear(24, 4)).double()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.3 * torch.randn(p.shape, generator=gen, dtype=torch.float64))
    teacher = torch.randn(6, 4, generator=gen, dtype=torch.float64)
    xs = 0.3 * torch.randn(int(steps), 32, 6, generator=gen, dtype=torch.float64)
    x_eval = 0.3 * torch.randn(256, 6, generator=gen, dtype=torch.float64)
    for step, factor in spikes:
        xs[int(step)] *= float(factor)
    optimizer = make_optimizer(model.parameters(), lr=lr, betas=(betas[0], betas[1]), eps=eps,
                               weight_decay=weight_decay)
    norms = []
    for t in range(int(steps)):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xs[t]), (xs[t] @ teacher).argmax(dim=1))
        loss.backward()
        norms.append(float(clip(model.parameters(), max_norm)))
        optimizer.step()
    with torch.no_grad():
        final_loss = float(F.cross_entropy(model(x_eval), (x_eval @ teacher).argmax(dim=1)))
    weights = torch.cat([p.detach().flatten() for p in model.parameters()]).tolist()
    return norms, weights, final_loss


# --- from scratch, with an optional mistake built in -----------------------------------

class ScratchAdamW:
    """AdamW in torch's order of operations (bit for bit), or with mistake `kind`."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, kind=None):
        self.params = list(params)
        self.lr, self.beta1, self.beta2 = float(lr), float(betas[0]), float(betas[1])
        self.eps, self.wd, self.kind = float(eps), float(weight_decay), kind
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]
        self.t = 0

    def zero_grad(self):
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self):
        self.t += 1
        lr, b1, b2, eps, wd, kind = self.lr, self.beta1, self.beta2, self.eps, self.wd, self.kind
        for p, m, v in zip(self.params, self.m, self.v):
            g = p.grad
            if kind == "coupled-l2":
                g = g.add(p, alpha=wd)
            elif kind == "paper-decay":
                p.mul_(1 - wd)
            elif kind != "decay-after-update":
                p.mul_(1 - lr * wd)
            m.lerp_(g, 1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            if kind == "no-bias-correction":
                p.addcdiv_(m, v.sqrt().add_(eps), value=-lr)
            elif kind == "eps-hat":
                step_size = lr * math.sqrt(1 - b2 ** self.t) / (1 - b1 ** self.t)
                p.addcdiv_(m, v.sqrt().add_(eps), value=-step_size)
            else:
                denom = (v.sqrt() / (1 - b2 ** self.t) ** 0.5).add_(eps)
                p.addcdiv_(m, denom, value=-lr / (1 - b1 ** self.t))
            if kind == "decay-after-update":
                p.mul_(1 - lr * wd)


def scratch_clip(parameters, max_norm, kind=None):
    """Global-norm clipping as torch does it (or with mistake `kind`); returns the pre-clip norm."""
    grads = [p.grad for p in parameters if p.grad is not None]
    norms = torch.stack([torch.linalg.vector_norm(g) for g in grads])
    total = torch.linalg.vector_norm(norms)
    with torch.no_grad():
        if kind == "per-tensor-clip":
            for g, n in zip(grads, norms):
                g.mul_(torch.clamp(max_norm / (n + CLIP_EPS), max=1.0))
        else:
            coef = max_norm / total if kind == "clip-no-eps" else max_norm / (total + CLIP_EPS)
            for g in grads:
                g.mul_(torch.clamp(coef, max=1.0))
    return total


# --- the reference: torch --------------------------------------------------------------

def _validate(q: dict) -> None:
    if int(q["steps"]) != q["steps"] or not 1 <= q["steps"] <= 500:
        raise ValueError("steps must be a whole number from 1 to 500")
    b1, b2 = q["betas"]
    if not (0 <= b1 < 1 and 0 <= b2 < 1):
        raise ValueError("betas must lie in [0, 1)")
    if not (q["lr"] > 0 and q["eps"] > 0 and q["weight_decay"] >= 0 and q["max_norm"] > 0):
        raise ValueError("lr, eps and max_norm must be positive, weight_decay non-negative")
    if any(len(pair) != 2 or not 0 <= pair[0] < q["steps"] or not pair[1] > 0 for pair in q["spikes"]):
        raise ValueError("spikes are [step, positive factor] pairs within the run")


def _torch_opt(params, **hyper):
    return torch.optim.AdamW(params, **hyper)


@lru_cache(maxsize=256)
def _cached_run(opt_kind, clip_kind, text):
    q = json.loads(text)
    _validate(q)
    if opt_kind == "torch":
        make = _torch_opt
    else:
        make = lambda params, **hyper: ScratchAdamW(params, kind=opt_kind, **hyper)
    if clip_kind == "torch":
        clip = torch.nn.utils.clip_grad_norm_
    else:
        clip = lambda params, max_norm: scratch_clip(params, max_norm, clip_kind)
    with one_torch_thread():
        return adamw_run(make, clip, *(q[k] for k in ARGS))


def cached_run(q: dict, opt_kind="torch", clip_kind="torch"):
    """(norms, weights, final loss) of the harness; memoised, since runs are deterministic."""
    return copy.deepcopy(_cached_run(opt_kind, clip_kind, json.dumps(q, sort_keys=True)))


def probe_calls(params: dict) -> list:
    """Hidden calls [seed, steps, lr, betas, eps, weight_decay, max_norm, spikes]."""
    rng = np.random.default_rng(seed_for(params, "p2-adamw-from-scratch"))
    calls = []
    for lr, betas, eps, wd, max_norm in (
            (float(params["lr"]), list(params["betas"]), float(params["eps"]),
             float(params["weight_decay"]), float(params["max_norm"])),
            (1e-3, [0.9, 0.999], 1e-8, 1e-2, 1.0),             # torch's defaults
            (3e-3, [0.9, 0.95], 1e-6, 0.1, 0.5),
            (1e-2, [0.8, 0.99], 1e-8, 0.05, 5.0)):              # rarely clipped
        steps = int(rng.integers(12, 20))
        spike_at = int(rng.integers(2, steps))
        calls.append([int(rng.integers(0, 10_000)), steps, lr, betas, eps, wd, max_norm,
                      [[spike_at, float(rng.choice([4.0, 8.0]))]]])
    return calls


def _clipped(norms, max_norm):
    """Steps where torch's coefficient max_norm / (norm + 1e-6) is below 1."""
    return [i for i, n in enumerate(norms) if max_norm / (n + CLIP_EPS) < 1.0]


def _mistake(opt_kind=None, clip_kind="torch"):
    def wrong(q):
        norms, _, final_loss = cached_run(q, opt_kind, clip_kind)
        runs = [cached_run(dict(zip(ARGS, call)), opt_kind, clip_kind) for call in probe_calls(q)]
        return {"grad_norms": norms, "final_loss": final_loss,
                "adamw_norms": [r[0] for r in runs], "adamw_weights": [r[1] for r in runs]}
    return wrong


class AdamWProblem(Problem):
    id = "p2-adamw-from-scratch"
    title = "Clipping and AdamW from scratch, matched to torch"
    strand = "practice"
    kind = "practice"
    assignment = "practice"
    symbols = ()
    variants = {
        "A": {  # GPT-3 125M: lr 6e-4, betas (0.9, 0.95), eps 1e-8, decay 0.1, clip 1.0
            "seed": 1, "steps": 25, "lr": 6e-4, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1,
            "max_norm": 1.0, "spikes": [[9, 6.0]]},
        "B": {  # torch.optim.AdamW's defaults, clip 1.0
            "seed": 2, "steps": 25, "lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.01,
            "max_norm": 1.0, "spikes": [[14, 8.0]]},
        "C": {  # OPT-175B: lr 1.2e-4, betas (0.9, 0.95), decay 0.1, clip lowered to 0.3
            "seed": 3, "steps": 25, "lr": 1.2e-4, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1,
            "max_norm": 0.3, "spikes": [[5, 5.0], [18, 5.0]]},
        "D": {  # LLaMA 2 7B: lr 3e-4, betas (0.9, 0.95), eps 1e-5, decay 0.1, clip 1.0
            "seed": 4, "steps": 25, "lr": 3e-4, "betas": [0.9, 0.95], "eps": 1e-5, "weight_decay": 0.1,
            "max_norm": 1.0, "spikes": [[11, 10.0]]},
    }
    checks = {
        "adamw_norms": Outputs(rtol=1e-12, atol=1e-12, points=2.0),
        "adamw_weights": Outputs(rtol=1e-12, atol=1e-12, points=2.0),
        "grad_norms": Numbers(rtol=1e-10),
        "clipped_steps": Numbers(exact=True),
        "final_loss": Number(rtol=1e-10),
    }
    cells = {
        "check_adamw": ("adamw_norms", "adamw_weights"),
        "check_numbers": ("grad_norms", "clipped_steps", "final_loss"),
    }

    def probes(self, params):
        calls = probe_calls(params)
        return {"adamw_norms": Probe(function="adamw_norms", calls=calls),
                "adamw_weights": Probe(function="adamw_weights", calls=calls)}

    def solve(self, params):
        norms, _, final_loss = cached_run(params)
        runs = [cached_run(dict(zip(ARGS, call))) for call in probe_calls(params)]
        return {
            "adamw_norms": [r[0] for r in runs],
            "adamw_weights": [r[1] for r in runs],
            "grad_norms": norms,
            "clipped_steps": _clipped(norms, float(params["max_norm"])),
            "final_loss": final_loss,
        }

    mistakes = (
        Mistake(
            "coupled-l2",
            "the weight decay was added to the gradient (an L2 penalty, as in torch.optim.Adam); AdamW "
            "decouples it: the weights shrink by a factor (1 - lr * weight_decay) outside Adam's update.",
            _mistake("coupled-l2"),
            instant="where AdamW applies the weight decay.",
        ),
        Mistake(
            "paper-decay",
            "the weights shrank by (1 - weight_decay) per step; torch multiplies the decay by the "
            "learning rate, (1 - lr * weight_decay), where Loshchilov and Hutter's Algorithm 2 uses "
            "the schedule multiplier.",
            _mistake("paper-decay"),
            instant="how torch's AdamW ties the decay to the learning rate.",
        ),
        Mistake(
            "no-bias-correction",
            "the moments were used without bias correction; torch divides m by (1 - beta1**t) and "
            "v by (1 - beta2**t), which matters most in the first steps.",
            _mistake("no-bias-correction"),
            instant="the bias correction of Adam's moments.",
        ),
        Mistake(
            "eps-hat",
            "eps was added to sqrt(v) before the bias correction (the cheaper ordering in Kingma and Ba); "
            "torch adds eps after dividing sqrt(v) by sqrt(1 - beta2**t).",
            _mistake("eps-hat"),
            instant="where eps sits relative to the bias correction in torch.",
        ),
        Mistake(
            "decay-after-update",
            "the decay was applied after Adam's update; torch shrinks the weights first and then "
            "subtracts the update, so the update itself is not decayed.",
            _mistake("decay-after-update"),
            instant="the order of the decay and Adam's update within one step.",
        ),
        Mistake(
            "clip-no-eps",
            "the clip coefficient was max_norm / norm; torch divides by (norm + 1e-6).",
            _mistake(None, "clip-no-eps"),
            instant="the stabilising constant in torch's clip coefficient.",
        ),
        Mistake(
            "per-tensor-clip",
            "each tensor was clipped by its own norm; the threshold applies to the global norm of "
            "all gradients laid end to end, and all tensors are scaled by the same coefficient.",
            _mistake(None, "per-tensor-clip"),
            instant="which norm the clipping threshold applies to.",
        ),
    )


PROBLEM = AdamWProblem()
