"""tds-p5-lazy-vs-feature: how far the hidden weights move as the width grows, under NTK and under muP.

Sources: Jacot, Gabriel and Hongler, "Neural Tangent Kernel" (NeurIPS 2018), and Lee et al.,
"Wide Neural Networks of Any Depth Evolve as Linear Models Under Gradient Descent" (NeurIPS 2019):
in the NTK parametrisation (weights N(0, 1), each layer's output multiplied by 1/sqrt(fan_in), one
learning rate for all) the relative change of the weights over training vanishes like
1/sqrt(width), so a wide network trains as its linearisation around the start (lazy training;
Chizat, Oyallon and Bach, NeurIPS 2019). Yang and Hu, "Feature Learning in Infinite-Width Neural
Networks" (ICML 2021), show that this limit learns no features and derive the maximal update
parametrisation (muP), in which every layer's features move by an amount that does not vanish with
width; Yang et al., "Tensor Programs V" (2022, arXiv 2203.03466), Table 3, give it for SGD:
input weights initialised with variance 1/fan_in and trained at rate eta * fan_out, output weights
with variance 1/fan_in^2 and rate eta / fan_in.

The run, exactly (the notebook's locked cell holds `make_task` and `train_width` verbatim; a test
checks that they agree): n_examples Gaussian inputs in dimension `dim`, a smooth target (the
variant's `task`); a two-layer tanh network f(x) = a . tanh(W x) with multipliers; full-batch
gradient descent on half the mean squared error for `steps` steps, the same number at every width.
`train_width(params, width, parametrisation)` returns the hidden (input) weights at the start and
at the end.

The student writes `relative_change(final, initial)` (|final - initial|_F / |initial|_F) and
`loglog_slope(widths, values)` (the least-squares slope of log value on log width), both probed,
and reports `changes_ntk`, `changes_mup` (per width), `slope_ntk` and `slope_mup`.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache

import numpy as np
import torch

from graders.numeric import Number, Numbers, Outputs
from graders.problem import Mistake, Probe, Problem, seed_for
from graders.problems.common.torch_runs import quiet_torch

TASKS = ("sin", "abs", "product")


# --- the harness: copied verbatim into the notebook's locked setup cell ------------------------
def make_task(params):
    """Gaussian inputs and a smooth target of them (float64), from the variant's seed."""
    gen = torch.Generator().manual_seed(params["seed"])
    x = torch.randn(params["n_examples"], params["dim"], generator=gen, dtype=torch.float64)
    w = torch.randn(params["dim"], generator=gen, dtype=torch.float64) / params["dim"] ** 0.5
    if params["task"] == "sin":
        y = torch.sin(2.0 * x @ w)
    elif params["task"] == "abs":
        y = (x @ w).abs() - 0.8
    else:                                                  # "product" of two input coordinates
        y = x[:, 0] * x[:, 1]
    return x, y


def train_width(params, width, parametrisation):
    """Full-batch GD on a two-layer tanh net; the hidden weights W at the start and at the end."""
    x, y = make_task(params)
    d = x.shape[1]
    gen = torch.Generator().manual_seed(params["seed"] + width)
    if parametrisation == "ntk":      # N(0, 1) weights, 1/sqrt(fan_in) multipliers, one rate
        W = torch.randn(width, d, generator=gen, dtype=torch.float64)
        a = torch.randn(width, generator=gen, dtype=torch.float64)
        w_mult, a_mult = d ** -0.5, width ** -0.5
        lr_w = lr_a = params["lr_ntk"]
    else:                             # muP for SGD (Tensor Programs V, Table 3)
        W = torch.randn(width, d, generator=gen, dtype=torch.float64) / d ** 0.5
        a = torch.randn(width, generator=gen, dtype=torch.float64) / width
        w_mult, a_mult = 1.0, 1.0
        lr_w, lr_a = params["lr_mup"] * width, params["lr_mup"] / width
    W0 = W.clone()
    W.requires_grad_()
    a.requires_grad_()
    for _ in range(params["steps"]):
        out = torch.tanh(x @ W.T * w_mult) @ a * a_mult
        loss = 0.5 * ((out - y) ** 2).mean()
        g_w, g_a = torch.autograd.grad(loss, [W, a])
        with torch.no_grad():
            W -= lr_w * g_w
            a -= lr_a * g_a
    return W0, W.detach()
# --- end of the harness -------------------------------------------------------------------------


def reference_change(final, initial, kind="right"):
    A = torch.as_tensor(final, dtype=torch.float64)
    B = torch.as_tensor(initial, dtype=torch.float64)
    diff = torch.linalg.norm(A - B)
    if kind == "absolute":
        return float(diff)
    return float(diff / torch.linalg.norm(A if kind == "over-final" else B))


def reference_slope(widths, values, kind="right"):
    """Least-squares slope of log(values) on log(widths) (numpy polyfit, degree 1)."""
    xs = np.asarray(widths, dtype=float)
    ys = np.log(np.asarray(values, dtype=float))
    if kind == "mixed-bases":
        ys = ys / math.log(10.0)
    return float(np.polyfit(xs if kind == "semilog" else np.log(xs), ys, 1)[0])


def probe_change_calls(params):
    rng = np.random.default_rng(seed_for(params, "tds-p5-lazy-vs-feature/change"))
    calls = []
    for rows, cols, size in ((3, 4, 0.1), (5, 2, 0.5), (4, 4, 0.02), (2, 6, 1.3)):
        initial = np.round(rng.normal(size=(rows, cols)), 4)
        final = np.round(initial + size * rng.normal(size=(rows, cols)), 4)
        calls.append([final.tolist(), initial.tolist()])
    return calls


def probe_slope_calls(params):
    rng = np.random.default_rng(seed_for(params, "tds-p5-lazy-vs-feature/slope"))
    calls = []
    for widths, power in (([16, 64, 256, 1024], -0.5), ([10, 20, 40, 80, 160], 0.3),
                          ([32, 128, 512], -1.0), ([8, 16, 32, 64, 128, 256], 0.0)):
        values = [round(float(2.0 * w ** power * math.exp(0.05 * rng.standard_normal())), 6) for w in widths]
        calls.append([widths, values])
    return calls


def _read(q):
    p = {}
    for name, low in (("seed", 0), ("n_examples", 2), ("dim", 1), ("steps", 1)):
        v = q[name]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v < low:
            raise ValueError(f"{name} must be a whole number >= {low}, not {v!r}")
        p[name] = int(v)
    p["widths"] = [int(n) for n in q["widths"]]
    p["lr_ntk"], p["lr_mup"] = float(q["lr_ntk"]), float(q["lr_mup"])
    p["task"] = str(q["task"])
    if p["task"] not in TASKS or len(p["widths"]) < 2 or min(p["widths"]) < 1 or max(p["widths"]) > 8192 \
            or p["n_examples"] > 512 or p["steps"] > 1000:
        raise ValueError(f"task in {TASKS}; at least two widths up to 8192; up to 512 examples, 1000 steps")
    return p


@lru_cache(maxsize=16)
def _runs(key):
    q = json.loads(key)
    out = {}
    with quiet_torch():
        for par in ("ntk", "mup"):
            out[par] = [train_width(q, n, par) for n in q["widths"]]
    return out


def runs(params):
    """{'ntk': [(W0, WT) per width], 'mup': [...]}."""
    return _runs(json.dumps(_read(params), sort_keys=True))


def _answers(params, change_kind="right", slope_kind="right"):
    with quiet_torch():             # torch.linalg.norm on the widest matrices would start a thread pool
        return _answers_here(params, change_kind, slope_kind)


def _answers_here(params, change_kind, slope_kind):
    p = _read(params)
    r = runs(p)
    out = {
        "change_probe": [reference_change(*c, kind=change_kind) for c in probe_change_calls(params)],
        "slope_probe": [reference_slope(*c, kind=slope_kind) for c in probe_slope_calls(params)],
    }
    for par in ("ntk", "mup"):
        changes = [reference_change(WT, W0, kind=change_kind) for W0, WT in r[par]]
        out[f"changes_{par}"] = changes
        out[f"slope_{par}"] = reference_slope(p["widths"], changes, kind=slope_kind)
    return out


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    out = {}
    for k, v in wrong.items():
        a, b = np.ravel(np.array(v, dtype=float)), np.ravel(np.array(right[k], dtype=float))
        if not np.allclose(a, b, rtol=1e-4, atol=1e-6):
            out[k] = v
    return out


class LazyVsFeaturePractice(Problem):
    id = "tds-p5-lazy-vs-feature"
    title = "Lazy or feature learning: how far the hidden weights move as the width grows"
    strand = "practice"
    kind = "practice"
    assignment = "tds-practice"
    # Widths 32-4096 as in Yang and Hu's and Lee et al.'s width sweeps, cut to a two-layer tanh
    # net, 64-96 examples and 80-120 full-batch steps so that the sweep runs in seconds; the
    # rates keep both parametrisations stable at every width (a test checks the slopes).
    variants = {
        "A": {"seed": 0, "task": "sin", "n_examples": 64, "dim": 8, "steps": 100,
              "widths": [64, 128, 256, 512, 1024, 2048, 4096], "lr_ntk": 1.0, "lr_mup": 0.05},
        "B": {"seed": 1, "task": "abs", "n_examples": 64, "dim": 6, "steps": 100,
              "widths": [32, 64, 128, 256, 512, 1024, 2048], "lr_ntk": 1.0, "lr_mup": 0.05},
        "C": {"seed": 2, "task": "product", "n_examples": 96, "dim": 4, "steps": 80,
              "widths": [100, 200, 400, 800, 1600, 3200], "lr_ntk": 0.5, "lr_mup": 0.05},
        "D": {"seed": 3, "task": "sin", "n_examples": 48, "dim": 10, "steps": 120,
              "widths": [64, 256, 1024, 4096], "lr_ntk": 1.0, "lr_mup": 0.03},
    }
    checks = {
        "change_probe": Outputs(rtol=1e-6, atol=1e-9, points=1.0, reference="the reference's"),
        "slope_probe": Outputs(rtol=1e-6, atol=1e-9, points=1.0, reference="numpy's"),
        "changes_ntk": Numbers(rtol=1e-5, atol=1e-9),
        "changes_mup": Numbers(rtol=1e-5, atol=1e-9),
        "slope_ntk": Number(rtol=1e-4, atol=1e-6),
        "slope_mup": Number(rtol=1e-4, atol=1e-6),
    }
    cells = {
        "check_measures": ("change_probe", "slope_probe"),
        "check_sweep": ("changes_ntk", "changes_mup", "slope_ntk", "slope_mup"),
    }

    def probes(self, params):
        return {"change_probe": Probe(function="relative_change", calls=probe_change_calls(params)),
                "slope_probe": Probe(function="loglog_slope", calls=probe_slope_calls(params))}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("relative-to-final",
                "the change was measured relative to the final weights; the protocol measures it "
                "relative to where training started, |W_T - W_0| / |W_0|.",
                lambda q: _changed(q, change_kind="over-final"),
                instant="the reference point a relative change is taken against."),
        Mistake("absolute-change",
                "the change was not made relative: |W_T - W_0| alone grows with the number of entries, "
                "so its slope mixes the size of the matrix with how far each entry moved.",
                lambda q: _changed(q, change_kind="absolute"),
                instant="what makes the change comparable across widths."),
        Mistake("semilog-fit",
                "the slope was fitted against the width itself; a power law is a straight line only "
                "when both axes are logarithmic, so fit log(change) against log(width).",
                lambda q: _changed(q, slope_kind="semilog"),
                instant="which axes make the fitted relation a straight line."),
        Mistake("mixed-log-bases",
                "the two axes were logged in different bases; the slope of a power law is the same in "
                "any base only when both axes use the same one.",
                lambda q: _changed(q, slope_kind="mixed-bases"),
                instant="the logarithms taken on the axes of the fit."),
    )


PROBLEM = LazyVsFeaturePractice()
