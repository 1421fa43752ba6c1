"""tds-p6-mup-coordinate-check: the coordinate check of muP, and a learning-rate sweep at two widths.

Source: Yang, Hu, Babuschkin, Sidor, Liu, Farhi, Ryder, Pachocki, Chen and Gao, "Tensor Programs V:
Tuning Large Neural Networks via Zero-Shot Hyperparameter Transfer" (2022, arXiv 2203.03466). Their
Table 3 writes muP for Adam through initialisation variances and learning rates; Table 8 gives the
equivalent form with multipliers that the microsoft/mup package implements (MuAdam, MuReadout), and
this item uses it, relative to a base width n0 (width multiplier m = n / n0):
- input weights and all biases: Adam rate eta (as under SP);
- hidden (n x n) weights: Adam rate eta / m;
- output (readout) weights: Adam rate eta, and the logits multiplied by 1 / m.
Under the standard parametrisation (SP) every parameter has rate eta and the multiplier is 1.
The "coordinate check" is the package's test of an implementation (mup/coord_check.py): train
each width a few steps and record the mean absolute value of every layer's output (its "l1"
statistic); under SP the hidden and output coordinates grow with width, under muP they stay flat.
The readout is initialised at zero in both parametrisations (the package's `readout_zero_init`
option), so that the output coordinates are the training updates alone.

The run, exactly (the notebook's locked cell holds `make_batch`, `make_mlp` and `train_mlp`
verbatim; a test checks that they agree): a fixed batch of `batch` Gaussian inputs of dimension
`d_in`, labelled by the argmax of a random linear teacher over `d_out` classes; an MLP
d_in -> n -> n -> d_out with ReLU, PyTorch's default initialisation except the zeroed readout;
full-batch torch.optim.Adam (default betas and eps) on the cross-entropy, float32, one thread.
`train_mlp(params, width, settings, steps, measure)` returns the coordinate sizes of the three
layers' outputs (the student's `measure`) after every update, and the loss after the last one.

Answers: `settings_probe` (the student's `mup_settings(width, base_width, base_lr)` on hidden
widths), `measure_probe` (the student's `coordinate_size` on hidden arrays), the coordinate sizes of
the hidden and output layers after the last of `coord_steps` updates at every coordinate-check
width under SP and muP, and the best base rate of the sweep grid at each sweep width under each.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache

import numpy as np
import torch
from torch import nn

from graders.numeric import Numbers, Outputs
from graders.problem import Mistake, Probe, Problem, seed_for
from graders.problems.common.torch_runs import quiet_torch

SETTINGS_FUNCTION = "mup_settings"
MEASURE_FUNCTION = "coordinate_size"


# --- the harness: copied verbatim into the notebook's locked cell ------------------------------
def make_batch(params):
    """The fixed training batch: Gaussian inputs and the labels of a random linear teacher."""
    g = torch.Generator().manual_seed(params["seed"])
    x = torch.randn(params["batch"], params["d_in"], generator=g)
    teacher = torch.randn(params["d_in"], params["d_out"], generator=g) / params["d_in"] ** 0.5
    return x, (x @ teacher).argmax(1)


def make_mlp(params, width):
    """d_in -> width -> width -> d_out with ReLU; PyTorch's default init, the readout zeroed."""
    torch.manual_seed(params["seed"] * 10007 + width)
    model = nn.Sequential(nn.Linear(params["d_in"], width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                          nn.Linear(width, params["d_out"]))
    with torch.no_grad():
        model[4].weight.zero_()
        model[4].bias.zero_()
    return model


def train_mlp(params, width, settings, steps, measure):
    """Full-batch Adam for `steps` updates with settings = [input-and-bias lr, hidden lr, output lr,
    output multiplier]. Returns (coords, final_loss): coords[t] = [measure(first layer's output),
    measure(hidden layer's output), measure(logits)] after update t + 1."""
    lr_in, lr_hidden, lr_out, multiplier = settings
    x, labels = make_batch(params)
    model = make_mlp(params, width)
    first, hidden, readout = model[0], model[2], model[4]
    opt = torch.optim.Adam([
        {"params": [first.weight, first.bias, hidden.bias, readout.bias], "lr": lr_in},
        {"params": [hidden.weight], "lr": lr_hidden},
        {"params": [readout.weight], "lr": lr_out},
    ])

    def forward():
        h1 = first(x)
        h2 = hidden(torch.relu(h1))
        return h1, h2, multiplier * readout(torch.relu(h2))

    coords = []
    for _ in range(steps):
        loss = nn.functional.cross_entropy(forward()[2], labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            coords.append([float(measure(a)) for a in forward()])
    with torch.no_grad():
        final_loss = float(nn.functional.cross_entropy(forward()[2], labels))
    return coords, final_loss
# --- end of the harness ------------------------------------------------------------------------


def _read(q):
    p = {}
    for name, low in (("seed", 0), ("batch", 2), ("d_in", 1), ("d_out", 2), ("base_width", 1),
                      ("coord_steps", 1), ("sweep_steps", 1)):
        v = q[name]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v < low:
            raise ValueError(f"{name} must be a whole number >= {low}, not {v!r}")
        p[name] = int(v)
    p["coord_widths"] = [int(w) for w in q["coord_widths"]]
    p["sweep_widths"] = [int(w) for w in q["sweep_widths"]]
    p["coord_lr"] = float(q["coord_lr"])
    p["lr_grid"] = [float(v) for v in q["lr_grid"]]
    if max(p["coord_widths"] + p["sweep_widths"]) > 1024 or min(p["coord_widths"] + p["sweep_widths"]) < 1 \
            or len(p["coord_widths"]) < 2 or len(p["sweep_widths"]) < 2 or len(p["lr_grid"]) < 2 \
            or p["batch"] > 256 or p["coord_steps"] > 10 or p["sweep_steps"] > 30 or not p["coord_lr"] > 0:
        raise ValueError("keep the run small: widths up to 1024, a batch up to 256, a few steps")
    return p


# --- the student's two functions, right and wrong ----------------------------------------------
def reference_settings(width, base_width, base_lr, kind="right"):
    """[input-and-bias lr, hidden lr, output lr, output multiplier] under muP (Table 8's Adam column)."""
    m = float(width) / float(base_width)
    lr = float(base_lr)
    if kind == "hidden-sqrt":
        return [lr, lr / math.sqrt(m), lr, 1.0 / m]
    if kind == "output-lr":
        return [lr, lr / m, lr / m, 1.0]
    if kind == "all-scaled":
        return [lr / m, lr / m, lr / m, 1.0 / m]
    return [lr, lr / m, lr, 1.0 / m]


def sp_settings(base_lr):
    return [float(base_lr)] * 3 + [1.0]


def reference_measure(values, kind="right"):
    t = torch.as_tensor(values, dtype=torch.float64) if not torch.is_tensor(values) else values
    if kind == "rms":
        return float((t.double() ** 2).mean().sqrt())
    return float(t.double().abs().mean())


def settings_calls(params):
    rng = np.random.default_rng(seed_for(params, "tds-p6-settings"))
    calls = [[params["coord_widths"][-1], params["base_width"], params["coord_lr"]]]
    for _ in range(4):
        base = int(2 ** rng.integers(5, 9))
        width = int(base * 2.0 ** int(rng.integers(-2, 6)))
        calls.append([width, base, float(round(10 ** rng.uniform(-4, -2), 6))])
    calls.append([int(rng.integers(100, 5000)), int(rng.integers(16, 300)), float(round(10 ** rng.uniform(-4, -2), 6))])
    return calls


def measure_calls(params):
    rng = np.random.default_rng(seed_for(params, "tds-p6-measure"))
    calls = []
    for rows, cols, loc in ((4, 6, 0.0), (3, 5, 1.5), (7, 2, -0.7), (2, 9, 0.2)):
        calls.append([np.round(rng.normal(loc, 1.0, size=(rows, cols)), 4).tolist()])
    return calls


# --- the runs ------------------------------------------------------------------------------------
@lru_cache(maxsize=64)
def _coords(key, mode, settings_kind, measure_kind, pick):
    p = json.loads(key)
    lr = p["coord_lr"]
    hidden, output = [], []
    with quiet_torch():
        for w in p["coord_widths"]:
            s = sp_settings(lr) if mode == "sp" else reference_settings(w, p["base_width"], lr, settings_kind)
            coords, _ = train_mlp(p, w, s, p["coord_steps"], lambda a: reference_measure(a, measure_kind))
            row = coords[0] if pick == "first" else coords[-1]
            hidden.append(row[1])
            output.append(row[2])
    return hidden, output


@lru_cache(maxsize=64)
def _best(key, mode, settings_kind):
    p = json.loads(key)
    best = []
    with quiet_torch():
        for w in p["sweep_widths"]:
            losses = []
            for lr in p["lr_grid"]:
                s = sp_settings(lr) if mode == "sp" else reference_settings(w, p["base_width"], lr, settings_kind)
                _, final = train_mlp(p, w, s, p["sweep_steps"], lambda a: 0.0)
                losses.append(final if math.isfinite(final) else math.inf)
            best.append(p["lr_grid"][losses.index(min(losses))])
    return best


def _answers(params, settings_kind="right", measure_kind="right", pick="last"):
    p = _read(params)
    key = json.dumps(p, sort_keys=True)
    hidden_sp, output_sp = _coords(key, "sp", "right", measure_kind, pick)
    hidden_mup, output_mup = _coords(key, "mup", settings_kind, measure_kind, pick)
    return {
        "settings_probe": [reference_settings(*c, kind=settings_kind) for c in settings_calls(p)],
        "measure_probe": [reference_measure(*c, kind=measure_kind) for c in measure_calls(p)],
        "hidden_coords_sp": list(hidden_sp),
        "output_coords_sp": list(output_sp),
        "hidden_coords_mup": list(hidden_mup),
        "output_coords_mup": list(output_mup),
        "best_lrs_sp": list(_best(key, "sp", "right")),
        "best_lrs_mup": list(_best(key, "mup", settings_kind)),
    }


def _differs(a, b):
    if isinstance(a, list):
        return len(a) != len(b) or any(_differs(x, y) for x, y in zip(a, b))
    return not math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-12)


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    return {k: v for k, v in wrong.items() if _differs(v, right[k])}


class MupCoordinateCheck(Problem):
    id = "tds-p6-mup-coordinate-check"
    title = "The muP coordinate check, and where the best learning rate goes"
    strand = "practice"
    kind = "practice"
    assignment = "tds-practice"
    # Widths doubling from a narrow base, as in Yang et al.'s coordinate checks and their MLP
    # transfer sweeps (Fig. 3 and the mup package's MLP example sweep log2 learning rates at widths
    # 2^k); the sweep grid is log2-spaced like theirs. The task is small enough for a CPU.
    variants = {
        "A": {"seed": 1, "batch": 64, "d_in": 16, "d_out": 10, "base_width": 32,
              "coord_widths": [32, 64, 128, 256, 512, 1024], "coord_lr": 2.0 ** -10, "coord_steps": 4,
              "sweep_widths": [32, 256], "lr_grid": [2.0 ** k for k in range(-9, -1)], "sweep_steps": 10},
        "B": {"seed": 2, "batch": 64, "d_in": 12, "d_out": 8, "base_width": 64,
              "coord_widths": [64, 128, 256, 512, 1024], "coord_lr": 2.0 ** -11, "coord_steps": 5,
              "sweep_widths": [64, 512], "lr_grid": [2.0 ** k for k in range(-9, -1)], "sweep_steps": 10},
        "C": {"seed": 3, "batch": 48, "d_in": 20, "d_out": 10, "base_width": 32,
              "coord_widths": [32, 64, 128, 256, 512], "coord_lr": 2.0 ** -9, "coord_steps": 3,
              "sweep_widths": [32, 256], "lr_grid": [2.0 ** k for k in range(-9, -1)], "sweep_steps": 12},
        "D": {"seed": 4, "batch": 64, "d_in": 16, "d_out": 6, "base_width": 16,
              "coord_widths": [16, 64, 256, 1024], "coord_lr": 2.0 ** -10, "coord_steps": 4,
              "sweep_widths": [16, 128], "lr_grid": [2.0 ** k for k in range(-9, -1)], "sweep_steps": 10},
    }
    checks = {
        "settings_probe": Outputs(rtol=1e-9, atol=1e-15, points=2.0, reference="the reference's"),
        "measure_probe": Outputs(rtol=1e-6, atol=1e-12, reference="the reference's"),
        "hidden_coords_sp": Numbers(rtol=1e-4),
        "output_coords_sp": Numbers(rtol=1e-4),
        "hidden_coords_mup": Numbers(rtol=1e-4),
        "output_coords_mup": Numbers(rtol=1e-4),
        "best_lrs_sp": Numbers(rtol=1e-9),
        "best_lrs_mup": Numbers(rtol=1e-9),
    }
    cells = {
        "check_settings": ("settings_probe",),
        "check_measure": ("measure_probe",),
        "check_coords": ("hidden_coords_sp", "output_coords_sp", "hidden_coords_mup", "output_coords_mup"),
        "check_sweep": ("best_lrs_sp", "best_lrs_mup"),
    }

    def probes(self, params):
        return {"settings_probe": Probe(function=SETTINGS_FUNCTION, calls=settings_calls(_read(params))),
                "measure_probe": Probe(function=MEASURE_FUNCTION, calls=measure_calls(_read(params)))}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("hidden-rate-sqrt",
                "the hidden matrices' Adam rate was scaled by 1/sqrt(m); Adam's update is entrywise of size "
                "eta whatever the gradient, and it is correlated with the layer's input, so the change of a "
                "hidden output grows like n: Table 8 divides the hidden rate by m itself.",
                lambda q: _changed(q, settings_kind="hidden-sqrt"),
                instant="how the hidden layers' Adam rate scales with the width multiplier."),
        Mistake("output-rate-not-multiplier",
                "the readout's learning rate was divided by m and its logits left unscaled; muP for Adam keeps "
                "the readout's rate at eta and multiplies its logits by 1/m (Table 8), which also scales "
                "the gradient the readout sends back into the network.",
                lambda q: _changed(q, settings_kind="output-lr"),
                instant="which knob of the readout layer muP scales."),
        Mistake("every-rate-scaled",
                "every learning rate was divided by m, the input weights and biases too; their fan-in does "
                "not grow with width (a bias has none), so muP leaves their Adam rate at eta.",
                lambda q: _changed(q, settings_kind="all-scaled"),
                instant="which parameters muP treats as input-like and leaves alone."),
        Mistake("rms-not-mean-abs",
                "the coordinate size was the root mean square; the protocol's (the mup package's l1) is the "
                "mean absolute value of the entries.",
                lambda q: _changed(q, measure_kind="rms"),
                instant="the statistic that defines a coordinate's size in the protocol."),
        Mistake("first-step-coords",
                "the coordinates were read after the first update; the check reads them after the last one, "
                "when the updates have had time to add up.",
                lambda q: _changed(q, pick="first"),
                instant="at which update the coordinates are read."),
    )


PROBLEM = MupCoordinateCheck()
