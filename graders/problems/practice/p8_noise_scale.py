"""p8-noise-scale: measure the gradient noise scale of a small torch model, two-batch estimator.

Source: McCandlish, Kaplan, Amodei et al., "An Empirical Model of Large-Batch
Training" (2018, arXiv 1812.06162). §2.2 defines the simple noise scale
B_simple = tr(Sigma)/|G|^2; Appendix A.1 gives the unbiased two-batch estimators
    |G|^2     = (B_big |G_big|^2 - B_small |G_small|^2) / (B_big - B_small),
    tr(Sigma) = (|G_small|^2 - |G_big|^2) / (1/B_small - 1/B_big),
which follow from E|G_B|^2 = |G|^2 + tr(Sigma)/B. The estimators are the ones of
e10-noise-scale and are imported from there. The abstract's empirical finding,
that the noise scale grows as the loss falls over a run, is checked in the tests
on this very model.

The student writes `noise_scale(b_small, b_big, g2_small, g2_big)` (probed on
hidden measured squared norms) and measures g2_small and g2_big on a tiny
regression model, following one protocol exactly:
  model, x, y = make_task(params)       (locked setup cell; `make_task` is verbatim below)
  the loss of a batch is mean((model(x_b).squeeze(-1) - y_b)**2), gradients by autograd;
  |.|^2 is the squared 2-norm of all parameter gradients laid end to end;
  big batch j (j = 0 .. n_big-1) is rows [j*b_big, (j+1)*b_big); each is cut into
  b_big/b_small consecutive small batches (the data-parallel picture: one small batch
  per device, the big batch after the all-reduce);
  g2_small is the mean of |G_small|^2 over every small batch, g2_big the mean of
  |G_big|^2 over the big batches.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache

import numpy as np
import torch

from graders.numeric import Number, Outputs
from graders.problem import Mistake, Probe, Problem, one_torch_thread, seed_for
from graders.problems.common.noise_scale import unbiased_g2, unbiased_trace

FUNCTION = "noise_scale"


# --- the task: copied verbatim into the notebook's locked setup cell ----------------
def make_task(params):
    """The model at the moment of measurement, and the stream of fresh examples to measure on."""
    seed, d, h = params["seed"], params["dim"], params["hidden"]
    gen = torch.Generator().manual_seed(seed)
    teacher = torch.randn(d, generator=gen, dtype=torch.float64) / d ** 0.5

    def draw(n):
        x = torch.randn(n, d, generator=gen, dtype=torch.float64)
        y = torch.sin(2.0 * x @ teacher) + params["noise"] * torch.randn(n, generator=gen, dtype=torch.float64)
        return x, y

    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(d, h), torch.nn.Tanh(), torch.nn.Linear(h, 1)).double()
    for _ in range(params["train_steps"]):          # plain SGD to the point of measurement
        xb, yb = draw(32)
        loss = ((model(xb).squeeze(-1) - yb) ** 2).mean()
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for w in model.parameters():
                w.add_(w.grad, alpha=-params["lr"])
    x, y = draw(params["n_big"] * params["b_big"])
    return model, x, y


# --- parameters -----------------------------------------------------------------------
def _read(q):
    p = {}
    for name, low in (("seed", 0), ("dim", 1), ("hidden", 1), ("train_steps", 0), ("b_small", 1),
                      ("b_big", 2), ("n_big", 1)):
        value = q[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or value != int(value) or value < low:
            raise ValueError(f"{name} must be a whole number >= {low}, not {value!r}")
        p[name] = int(value)
    for name in ("noise", "lr"):
        value = q[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or value < 0:
            raise ValueError(f"{name} must be a finite number >= 0, not {value!r}")
        p[name] = float(value)
    if p["b_big"] <= p["b_small"] or p["b_big"] % p["b_small"]:
        raise ValueError("b_big must be a multiple of b_small, and larger")
    if p["n_big"] * p["b_big"] > 100_000 or p["train_steps"] > 5000 or p["hidden"] * p["dim"] > 10_000:
        raise ValueError("keep the measurement small: it is made for a CPU in seconds")
    return p


# --- the measurement --------------------------------------------------------------------
def _sq_grad_norm(model, x, y, summed=False):
    out = model(x).squeeze(-1)
    loss = ((out - y) ** 2).sum() if summed else ((out - y) ** 2).mean()
    grads = torch.autograd.grad(loss, list(model.parameters()))
    return float(sum((g * g).sum() for g in grads))


def batch_grad_sq_norms(model, x, y):
    """|G_b|^2 for every batch b of x (shape (batches, b, d)), y (batches, b), all at once.

    The gradient of mean((model(x_b).squeeze(-1) - y_b)**2) for make_task's two-layer tanh
    network, backpropagated by hand with batched tensor ops (the tests check it against autograd,
    one batch at a time, the way the notebook measures).
    """
    w1, b1, w2, b2 = (p.detach() for p in model.parameters())
    h = torch.tanh(x @ w1.T + b1)                                  # (batches, b, hidden)
    r = 2.0 * ((h @ w2.T + b2).squeeze(-1) - y) / x.shape[1]      # d loss / d output
    dz = r.unsqueeze(-1) * w2.squeeze(0) * (1.0 - h * h)          # d loss / d pre-activation
    parts = (torch.einsum("ni,nij->nj", r, h), r.sum(1),             # W2, b2
             torch.einsum("nih,nid->nhd", dz, x), dz.sum(1))         # W1, b1
    return sum((g.reshape(g.shape[0], -1) ** 2).sum(1) for g in parts)


@lru_cache(maxsize=64)
def _measure_cached(key):
    p = json.loads(key)
    with one_torch_thread():
        model, x, y = make_task(p)
        bs, bb, d = p["b_small"], p["b_big"], p["dim"]
        small = batch_grad_sq_norms(model, x.reshape(-1, bs, d), y.reshape(-1, bs))
        big = batch_grad_sq_norms(model, x.reshape(-1, bb, d), y.reshape(-1, bb))
    return math.fsum(small.tolist()) / len(small), math.fsum(big.tolist()) / len(big)


def measure(params):
    """(g2_small, g2_big): the protocol's two averaged squared gradient norms."""
    return _measure_cached(json.dumps(_read(params), sort_keys=True))


def estimates(b_small, b_big, g2_small, g2_big):
    """[|G|^2, tr(Sigma), B_simple] from two measurements (McCandlish et al. App. A.1)."""
    g2 = unbiased_g2(b_small, b_big, g2_small, g2_big)
    trace = unbiased_trace(b_small, b_big, g2_small, g2_big)
    return [g2, trace, trace / g2]


# --- hidden measurements for the probe ---------------------------------------------------
def probe_calls(params):
    """Hidden calls [b_small, b_big, g2_small, g2_big]: squared norms of simulated mini-batch gradients.

    Each call draws a true gradient G and per-coordinate noise, then measures |G_B|^2 of
    mini-batch gradients G + noise/sqrt(B) at two batch sizes, averaged over 200 draws,
    printed to 6 significant digits, as a log would show them.
    """
    rng = np.random.default_rng(seed_for(params, "p8-noise-scale"))
    calls = []
    while len(calls) < 6:
        dim = int(rng.integers(20, 200))
        g = rng.normal(size=dim) * 10 ** rng.uniform(-2.5, 0.0) / math.sqrt(dim)
        sigma = rng.uniform(0.3, 1.5, size=dim) * 10 ** rng.uniform(-1.0, 0.5) / math.sqrt(dim)
        b_small = int(2 ** rng.integers(0, 6))
        b_big = b_small * int(2 ** rng.integers(2, 8))

        def measured(b, g=g, sigma=sigma, dim=dim):
            draws = g + sigma / math.sqrt(b) * rng.normal(size=(200, dim))
            return float(f"{np.mean(np.sum(draws ** 2, axis=1)):.6g}")

        call = [b_small, b_big, measured(b_small), measured(b_big)]
        g2, trace, _ = estimates(*call)
        if g2 > 0 and trace > 0:      # a run would average longer until both are positive
            calls.append(call)
    return calls


def _answers(params, summed=False, norm_of_mean=False, estimator=None):
    p = _read(params)
    bs, bb = p["b_small"], p["b_big"]
    g2_small, g2_big = measure(p)
    if summed:
        g2_small, g2_big = g2_small * bs ** 2, g2_big * bb ** 2
    if norm_of_mean:
        g2_small = g2_big
    est = estimator or estimates
    g2, trace, b_simple = (est(bs, bb, g2_small, g2_big) if not norm_of_mean
                           else (g2_big, 0.0, 0.0))
    return {
        "estimator_probe": [est(*call) for call in probe_calls(params)],
        "g2_small": g2_small,
        "g2_big": g2_big,
        "g2": g2,
        "trace_sigma": trace,
        "b_simple": b_simple,
    }


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    return {k: v for k, v in wrong.items() if v != right[k]}


def _biased_small(bs, bb, gs, gb):
    trace = unbiased_trace(bs, bb, gs, gb)
    return [gs, trace, trace / gs]


def _big_as_exact(bs, bb, gs, gb):
    trace = bs * (gs - gb)
    return [gb, trace, trace / gb]


def _inverted(bs, bb, gs, gb):
    g2, trace, _ = estimates(bs, bb, gs, gb)
    return [g2, trace, g2 / trace]


class NoiseScaleMeasurementProblem(Problem):
    id = "p8-noise-scale"
    title = "Measuring the gradient noise scale of a small model"
    strand = "practice"
    kind = "practice"
    assignment = "practice"
    symbols = ()
    # Four points of measurement on a tiny tanh MLP regression (97-337 parameters), at
    # initialisation and after 100-300 SGD steps; b_small is one "device's" batch, b_big the
    # global batch after the all-reduce, n_big the number of global batches averaged
    # (16,384 examples in every variant).
    variants = {
        "A": {"seed": 21, "dim": 8, "hidden": 16, "noise": 0.3, "lr": 0.1, "train_steps": 0,
              "b_small": 8, "b_big": 1024, "n_big": 16},
        "B": {"seed": 22, "dim": 8, "hidden": 16, "noise": 0.3, "lr": 0.1, "train_steps": 100,
              "b_small": 8, "b_big": 512, "n_big": 32},
        "C": {"seed": 23, "dim": 12, "hidden": 24, "noise": 0.2, "lr": 0.05, "train_steps": 300,
              "b_small": 16, "b_big": 2048, "n_big": 8},
        "D": {"seed": 24, "dim": 6, "hidden": 12, "noise": 0.5, "lr": 0.1, "train_steps": 200,
              "b_small": 4, "b_big": 512, "n_big": 32},
    }
    checks = {
        "estimator_probe": Outputs(rtol=1e-6, atol=1e-12, points=2.0, reference="the reference's"),
        # float64 throughout; only the order of summation may differ from the reference
        "g2_small": Number(rtol=1e-6),
        "g2_big": Number(rtol=1e-6),
        "g2": Number(rtol=1e-5),
        "trace_sigma": Number(rtol=1e-5),
        "b_simple": Number(rtol=1e-5),
    }
    cells = {
        "check_estimator": ("estimator_probe",),
        "check_measurement": ("g2_small", "g2_big"),
        "check_noise_scale": ("g2", "trace_sigma", "b_simple"),
    }

    def probes(self, params):
        return {"estimator_probe": Probe(function=FUNCTION, calls=probe_calls(params))}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake(
            "biased-small-batch-norm",
            "the small-batch squared norm was used as |G|^2; it is biased upward by tr(Sigma)/B_small, "
            "so combine the two measurements to cancel the noise term.",
            lambda q: _changed(q, estimator=_biased_small),
            instant="the noise term inside g2_small.",
        ),
        Mistake(
            "big-batch-as-exact",
            "the big-batch gradient was treated as the exact gradient; it still carries tr(Sigma)/B_big "
            "of noise, so both |G|^2 and tr(Sigma) come out biased.",
            lambda q: _changed(q, estimator=_big_as_exact),
            instant="the noise that g2_big still carries.",
        ),
        Mistake(
            "inverted-noise-scale",
            "the noise scale is noise over signal, tr(Sigma)/|G|^2 (a number of examples), not its inverse.",
            lambda q: _changed(q, estimator=_inverted),
            instant="the definition of the noise scale.",
        ),
        Mistake(
            "summed-loss",
            "the gradients were taken of the summed loss; the protocol's loss is the batch mean, and a sum "
            "scales each squared norm by the batch size squared, so the two sizes no longer compare.",
            lambda q: _changed(q, summed=True),
            instant="how the protocol's loss reduces across the batch.",
        ),
        Mistake(
            "norm-of-mean",
            "the small-batch gradients were averaged before squaring, which gives the big-batch norm again; "
            "g2_small is the mean of the squared norms, one per small batch.",
            lambda q: _changed(q, norm_of_mean=True),
            instant="what g2_small averages.",
        ),
    )


PROBLEM = NoiseScaleMeasurementProblem()
