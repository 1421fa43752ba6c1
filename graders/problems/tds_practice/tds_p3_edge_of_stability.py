"""tds-p3-edge-of-stability: full-batch gradient descent drives the sharpness to 2/eta and holds it there.

Source: Cohen, Kaur, Li, Kolter and Talwalkar, "Gradient Descent on Neural Networks Typically
Occurs at the Edge of Stability" (ICLR 2021). Sharpness is the largest eigenvalue of the training
loss's Hessian. Under full-batch gradient descent at step size eta it rises while it is below 2/eta
(progressive sharpening, their §3.1), then "hovers right at, or just above" 2/eta (their Fig. 1
caption) while the training loss keeps falling over long timescales but non-monotonically over
short ones (§3.2). They measure the sharpness by Lanczos on Hessian-vector products; power
iteration on the same products finds the same top eigenvalue when it dominates. Damian, Nichani
and Lee, "Self-Stabilization: The Implicit Bias of Gradient Descent at the Edge of Stability"
(ICLR 2023), explain the hovering: the unstable oscillation along the top eigenvector, through the
third derivative, pushes the sharpness back down.

The run, exactly (the notebook's locked cell holds `make_task` and `eos_run` verbatim; a test
checks that they agree): n_examples Gaussian inputs in dimension 10, each with 3 random +-1 targets
(a memorisation task, which sharpens strongly, as Cohen et al.'s harder tasks do); a tanh MLP
10 -> width -> width -> 3 in float64; loss = half the squared error summed over the outputs and
averaged over the examples; plain full-batch gradient descent at step size eta for `steps` steps.
Every `every` steps, before the update, the sharpness is measured by the student's
`sharpness(loss_fn, params, v, iters)`: `iters` rounds of power iteration on Hessian-vector
products (double backward through torch.autograd), warm-started from the previous vector.

Answers: `sharpness_probe` (the student's function on hidden quadratics, whose Hessians are the
hidden matrices), `sharpness_trace` (the measured sharpness at each measured step),
`first_cross_step` (the first measured step whose sharpness is at least 2/eta), `late_ratio` (the
mean of eta * sharpness / 2 over the measurements in the second half of the run) and `loss_rises`
(the number of steps whose loss is above the loss of the step before).
"""
from __future__ import annotations

import json
import math
from functools import lru_cache

import numpy as np
import torch
from torch import nn

from graders.numeric import Count, Number, Numbers, Outputs
from graders.problem import Mistake, Probe, Problem, seed_for
from graders.problems.common.torch_runs import quiet_torch

FUNCTION = "quadratic_sharpness"


# --- the harness: copied verbatim into the notebook's locked setup cell ------------------------
def make_task(params):
    """Gaussian inputs, random +-1 targets and a tanh MLP (float64), all from the variant's seed."""
    gen = torch.Generator().manual_seed(params["seed"])
    x = torch.randn(params["n_examples"], 10, generator=gen, dtype=torch.float64)
    y = torch.sign(torch.randn(params["n_examples"], 3, generator=gen, dtype=torch.float64))
    torch.manual_seed(params["seed"])
    width = params["width"]
    model = nn.Sequential(nn.Linear(10, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(),
                          nn.Linear(width, 3)).double()
    return x, y, model


def eos_run(params, sharpness):
    """Full-batch gradient descent; the loss at every step and the sharpness every `every` steps."""
    x, y, model = make_task(params)
    weights = list(model.parameters())

    def loss_fn():
        return 0.5 * ((model(x) - y) ** 2).sum(1).mean()

    gen = torch.Generator().manual_seed(params["seed"] + 1)
    v = [torch.randn(w.shape, generator=gen, dtype=torch.float64) for w in weights]
    losses, measured_at, trace = [], [], []
    for step in range(params["steps"]):
        if step % params["every"] == 0:
            value, v = sharpness(loss_fn, weights, v, params["iters"])
            measured_at.append(step)
            trace.append(float(value))
        loss = loss_fn()
        grads = torch.autograd.grad(loss, weights)
        with torch.no_grad():
            for w, g in zip(weights, grads):
                w -= params["eta"] * g
        losses.append(loss.item())
    return {"losses": losses, "measured_at": measured_at, "sharpness": trace}


def quadratic_sharpness(matrix, start, iters):
    """The student's `sharpness` on the quadratic 1/2 x^T A x, whose Hessian is A (the probe)."""
    A = torch.tensor(matrix, dtype=torch.float64)
    x = torch.zeros(A.shape[0], dtype=torch.float64, requires_grad=True)
    value, _ = sharpness(lambda: 0.5 * x @ A @ x, [x], [torch.tensor(start, dtype=torch.float64)], iters)
    return float(value)
# --- end of the harness -------------------------------------------------------------------------


def sharpness(loss_fn, params, v, iters):
    """Reference: `iters` rounds of v <- v/|v|, Hv, estimate v.Hv, v <- Hv; returns (estimate, v)."""
    grads = torch.autograd.grad(loss_fn(), params, create_graph=True)
    value = torch.zeros((), dtype=torch.float64)
    for _ in range(iters):
        norm = torch.sqrt(sum((u * u).sum() for u in v))
        v = [u / norm for u in v]
        hv = torch.autograd.grad(grads, params, grad_outputs=v, retain_graph=True)
        value = sum((h * u).sum() for h, u in zip(hv, v))
        v = [h.detach() for h in hv]
    return float(value), v


def _slipped(kind):
    """`sharpness` with one declared mistake built in."""
    def slipped(loss_fn, params, v, iters):
        grads = torch.autograd.grad(loss_fn(), params, create_graph=True)
        value = 0.0
        for _ in range(iters):
            if kind != "no-normalise":
                norm = torch.sqrt(sum((u * u).sum() for u in v))
                v = [u / norm for u in v]
            hv = torch.autograd.grad(grads, params, grad_outputs=v, retain_graph=True)
            if kind == "norm-of-hv":
                value = float(torch.sqrt(sum((h * h).sum() for h in hv)))
            else:
                value = float(sum((h * u).sum() for h, u in zip(hv, v)))
            v = [h.detach() for h in hv]
            if kind == "no-normalise":      # keep the numbers finite: rescale only the carried vector
                scale = float(torch.sqrt(sum((u * u).sum() for u in v)))
                v = [u / scale * 3.0 for u in v]
        return value, v
    return slipped


def probe_calls(params):
    """Hidden quadratics [A, start, iters]: symmetric matrices with a dominant top eigenvalue."""
    rng = np.random.default_rng(seed_for(params, "tds-p3-edge-of-stability"))
    calls = []
    for n, iters, top in ((4, 3, 9.0), (6, 5, 20.0), (3, 2, 4.0), (8, 12, 50.0), (5, 4, 7.5)):
        q, _ = np.linalg.qr(rng.normal(size=(n, n)))
        eig = np.concatenate([[top], rng.uniform(-0.3 * top, 0.6 * top, size=n - 1)])
        A = (q * eig) @ q.T
        A = np.round((A + A.T) / 2, 5)
        start = np.round(rng.normal(size=n) * float(rng.uniform(0.5, 3.0)), 4)
        calls.append([A.tolist(), start.tolist(), iters])
    return calls


def _read(q):
    p = {}
    for name, low in (("seed", 0), ("n_examples", 2), ("width", 1), ("steps", 2), ("every", 1), ("iters", 1)):
        v = q[name]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v < low:
            raise ValueError(f"{name} must be a whole number >= {low}, not {v!r}")
        p[name] = int(v)
    p["eta"] = float(q["eta"])
    if not p["eta"] > 0 or p["n_examples"] > 1000 or p["width"] > 256 or p["steps"] > 5000:
        raise ValueError("keep the run small: eta > 0, up to 1000 examples, width 256 and 5000 steps")
    return p


@lru_cache(maxsize=16)
def _run(key, kind):
    q = json.loads(key)
    with quiet_torch():
        return eos_run(q, sharpness if kind == "right" else _slipped(kind))


def run(params, kind="right"):
    return _run(json.dumps(_read(params), sort_keys=True), kind)


def _quadratic(call, fn):
    matrix, start, iters = call
    A = torch.tensor(matrix, dtype=torch.float64)
    x = torch.zeros(A.shape[0], dtype=torch.float64, requires_grad=True)
    with quiet_torch():
        return float(fn(lambda: 0.5 * x @ A @ x, [x], [torch.tensor(start, dtype=torch.float64)], iters)[0])


def _answers(params, kind="right", threshold_factor=2.0, late_from_start=False):
    p = _read(params)
    r = run(p, kind)
    fn = sharpness if kind == "right" else _slipped(kind)
    bar = threshold_factor / p["eta"]
    crossed = [s for s, v in zip(r["measured_at"], r["sharpness"]) if v >= bar]
    late = [v for s, v in zip(r["measured_at"], r["sharpness"]) if late_from_start or s >= p["steps"] / 2]
    L = r["losses"]
    return {
        "sharpness_probe": [_quadratic(call, fn) for call in probe_calls(params)],
        "sharpness_trace": list(r["sharpness"]),
        "first_cross_step": crossed[0] if crossed else -1,
        "late_ratio": sum(v * p["eta"] / threshold_factor for v in late) / len(late),
        "loss_rises": sum(1 for t in range(1, len(L)) if L[t] > L[t - 1]),
    }


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    out = {}
    for k, v in wrong.items():
        if isinstance(v, list):
            flat_r = np.ravel(np.array(right[k], dtype=float))
            flat_w = np.ravel(np.array(v, dtype=float))
            if not np.allclose(flat_r, flat_w, rtol=1e-4, atol=1e-9):
                out[k] = v
        elif isinstance(v, float):
            if not math.isclose(v, right[k], rel_tol=1e-4):
                out[k] = v
        elif v != right[k]:
            out[k] = v
    return out


class EdgeOfStabilityPractice(Problem):
    id = "tds-p3-edge-of-stability"
    title = "Measure the sharpness: progressive sharpening and the edge of stability"
    strand = "practice"
    kind = "practice"
    assignment = "tds-practice"
    # Cohen et al. run tanh and ReLU MLPs full-batch on a 5,000-example CIFAR-10 subset at step
    # sizes 2/eta from 10 to 200 (their Fig. 1-2); here 80-120 examples and step sizes with 2/eta
    # of 5 to 10, so that the sharpness reaches 2/eta in a few hundred steps (a test checks it).
    variants = {
        "A": {"seed": 0, "n_examples": 100, "width": 32, "eta": 0.3, "steps": 500, "every": 10, "iters": 8},
        "B": {"seed": 1, "n_examples": 100, "width": 32, "eta": 0.2, "steps": 500, "every": 10, "iters": 8},
        "C": {"seed": 2, "n_examples": 80, "width": 32, "eta": 0.4, "steps": 500, "every": 10, "iters": 8},
        "D": {"seed": 3, "n_examples": 120, "width": 24, "eta": 0.25, "steps": 500, "every": 10, "iters": 8},
    }
    checks = {
        "sharpness_probe": Outputs(rtol=1e-6, atol=1e-9, points=2.0, reference="the reference's"),
        "sharpness_trace": Numbers(rtol=1e-5, atol=1e-9),
        "first_cross_step": Count(),
        "late_ratio": Number(rtol=1e-5),
        "loss_rises": Count(),
    }
    cells = {
        "check_sharpness": ("sharpness_probe",),
        "check_trace": ("sharpness_trace", "first_cross_step", "late_ratio", "loss_rises"),
    }

    def probes(self, params):
        return {"sharpness_probe": Probe(function=FUNCTION, calls=probe_calls(params))}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("no-normalise",
                "the vector was not normalised before the Hessian-vector product, so v.Hv is the "
                "eigenvalue times |v|^2, not the eigenvalue; normalise v to unit length first.",
                lambda q: _changed(q, kind="no-normalise"),
                instant="what the Rayleigh quotient needs of the vector it is taken on."),
        Mistake("norm-of-hv",
                "the estimate was |Hv|; that is the size of the eigenvalue only once v has converged, "
                "and it loses the sign. Report the Rayleigh quotient v.Hv of the unit vector.",
                lambda q: _changed(q, kind="norm-of-hv"),
                instant="which quantity of the iteration estimates the eigenvalue."),
        Mistake("threshold-one-over-eta",
                "the threshold was taken as 1/eta; gradient descent on a quadratic of curvature a "
                "multiplies the error by 1 - eta a per step, which leaves the unit interval at "
                "eta a = 2, so the edge is 2/eta.",
                lambda q: _changed(q, threshold_factor=1.0),
                instant="where gradient descent on a quadratic stops being stable."),
        Mistake("late-over-whole-run",
                "the ratio was averaged over all measurements, including the sharpening phase; the "
                "protocol averages over the second half of the run, where the sharpness has settled.",
                lambda q: _changed(q, late_from_start=True),
                instant="which measurements enter the average."),
    )


PROBLEM = EdgeOfStabilityPractice()
