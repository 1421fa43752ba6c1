"""tds-p1-random-features: double descent, seen in real minimum-norm random-features regression.

Source: Belkin, Hsu, Ma and Mandal, "Reconciling modern machine-learning practice and the
classical bias-variance trade-off" (PNAS 2019): random-features models fitted by minimum-norm
least squares show a test-error peak at the interpolation threshold, as many features as training
examples (their Fig. 2, random Fourier features; the same with ReLU random features); Nakkiran et
al., "Deep Double Descent" (2019, arXiv 1912.02292) observe it in model size for deep networks.

The run, exactly (the notebook's locked cell holds `make_task` verbatim; a test checks that the
two agree): a teacher y = sin(x·w*) + noise on Gaussian inputs of dimension `dim`; `n_train`
training and 1,000 test examples; random ReLU features φ(x) = relu(x V / sqrt(dim)) with V a fixed
dim x max(feature_counts) Gaussian matrix, of which a model with p features uses the first p
columns. Each model is fitted by minimum-norm least squares on the training set (the student's
`min_norm_fit(features, targets)`, probed on hidden matrices against torch.linalg.pinv) and
scored by its test mean squared error.

Answers: `fit_probe` (the student's `min_norm_fit` on hidden systems), `test_errors` (per feature
count), `train_errors` (per feature count; zero from p = n_train on, to rounding) and
`peak_features` (the feature count of the largest test error).
"""
from __future__ import annotations

import json
import math
from functools import lru_cache

import numpy as np
import torch

from graders.numeric import Count, Numbers, Outputs
from graders.problem import Mistake, Probe, Problem, one_torch_thread, seed_for

FUNCTION = "min_norm_fit"


# --- the task: copied verbatim into the notebook's locked setup cell ----------------
def make_task(params):
    """Training and test features (all max(feature_counts) of them) and targets, in float64."""
    gen = torch.Generator().manual_seed(params["seed"])
    d, width = params["dim"], max(params["feature_counts"])
    teacher = torch.randn(d, generator=gen, dtype=torch.float64) / d ** 0.5
    V = torch.randn(d, width, generator=gen, dtype=torch.float64)

    def draw(n):
        x = torch.randn(n, d, generator=gen, dtype=torch.float64)
        y = torch.sin(2.0 * x @ teacher) + params["noise"] * torch.randn(n, generator=gen, dtype=torch.float64)
        return torch.relu(x @ V / d ** 0.5), y

    train_features, train_y = draw(params["n_train"])
    test_features, test_y = draw(1000)
    return train_features, train_y, test_features, test_y


def _read(q):
    p = {}
    for name, low in (("seed", 0), ("dim", 1), ("n_train", 2)):
        v = q[name]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v < low:
            raise ValueError(f"{name} must be a whole number >= {low}, not {v!r}")
        p[name] = int(v)
    p["noise"] = float(q["noise"])
    p["feature_counts"] = [int(k) for k in q["feature_counts"]]
    if not p["feature_counts"] or min(p["feature_counts"]) < 1 or max(p["feature_counts"]) > 2000 \
            or p["n_train"] > 500 or not 0 <= p["noise"] < 10:
        raise ValueError("keep the run small: up to 2000 features and 500 training examples")
    return p


def reference_fit(features, targets):
    """Minimum-norm least squares, w = pinv(features) @ targets (float64)."""
    A = torch.as_tensor(features, dtype=torch.float64)
    b = torch.as_tensor(targets, dtype=torch.float64)
    return (torch.linalg.pinv(A) @ b).tolist()


def _mse(features, y, w):
    return float(((features @ w - y) ** 2).mean())


@lru_cache(maxsize=16)
def _errors_cached(key, fit_name):
    p = json.loads(key)
    with one_torch_thread():
        train_f, train_y, test_f, test_y = make_task(p)
        test, train = [], []
        for k in p["feature_counts"]:
            if fit_name == "ridge":      # a declared mistake: a small ridge instead of the minimum norm
                A = train_f[:, :k]
                w = torch.linalg.solve(A.T @ A + 1e-1 * torch.eye(k, dtype=torch.float64), A.T @ train_y)
            else:
                w = torch.linalg.pinv(train_f[:, :k]) @ train_y
            test.append(_mse(test_f[:, :k], test_y, w))
            train.append(_mse(train_f[:, :k], train_y, w))
    return test, train


def errors(params, fit_name="pinv"):
    """(test_errors, train_errors) of the protocol."""
    return _errors_cached(json.dumps(_read(params), sort_keys=True), fit_name)


def probe_calls(params):
    """Hidden least-squares systems [features, targets]: over-, under- and exactly determined."""
    rng = np.random.default_rng(seed_for(params, "tds-p1-random-features"))
    calls = []
    for rows, cols in ((6, 3), (4, 9), (5, 5), (8, 2), (3, 7)):
        A = np.round(rng.normal(size=(rows, cols)), 4)
        b = np.round(rng.normal(size=rows), 4)
        calls.append([A.tolist(), b.tolist()])
    return calls


def _answers(params, fit_name="pinv", summed=False, on_training_set=False):
    p = _read(params)
    test, train = errors(p, fit_name)
    if on_training_set:
        test = train
    if summed:
        test, train = [e * 1000 for e in test], [e * p["n_train"] for e in train]
    return {
        "fit_probe": [reference_fit(*call) for call in probe_calls(params)],
        "test_errors": list(test),
        "train_errors": list(train),
        "peak_features": p["feature_counts"][int(np.argmax(test))],
    }


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    out = {}
    for k, v in wrong.items():
        if k in ("test_errors", "train_errors"):
            if any(not math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-9) for a, b in zip(v, right[k])):
                out[k] = v
        elif v != right[k]:
            out[k] = v
    return out


class RandomFeaturesPractice(Problem):
    id = "tds-p1-random-features"
    title = "Double descent in minimum-norm random-features regression"
    strand = "practice"
    kind = "practice"
    assignment = "tds-practice"
    # Small runs with the threshold inside the sweep (feature counts around n_train).
    variants = {
        "A": {"seed": 35, "dim": 10, "n_train": 40, "noise": 0.2,
              "feature_counts": [5, 10, 20, 30, 36, 40, 44, 60, 100, 200, 400]},
        "B": {"seed": 32, "dim": 8, "n_train": 60, "noise": 0.1,
              "feature_counts": [10, 30, 50, 56, 60, 64, 80, 150, 300, 600]},
        "C": {"seed": 33, "dim": 12, "n_train": 30, "noise": 0.3,
              "feature_counts": [3, 10, 20, 26, 30, 34, 50, 100, 300]},
        "D": {"seed": 34, "dim": 6, "n_train": 50, "noise": 0.15,
              "feature_counts": [5, 25, 45, 50, 55, 75, 125, 250, 500]},
    }
    checks = {
        "fit_probe": Outputs(rtol=1e-6, atol=1e-9, points=2.0, reference="the reference's"),
        "test_errors": Numbers(rtol=1e-4, atol=1e-9),
        "train_errors": Numbers(rtol=1e-4, atol=1e-9),
        "peak_features": Count(),
    }
    cells = {"check_fit": ("fit_probe",), "check_sweep": ("test_errors", "train_errors", "peak_features")}

    def probes(self, params):
        return {"fit_probe": Probe(function=FUNCTION, calls=probe_calls(params))}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("ridge-not-minimum-norm",
                "a ridge penalty was added; it removes the peak (that is what regularisation does), but the "
                "protocol is the unregularised minimum-norm fit, pinv(features) @ targets.",
                lambda q: _changed(q, fit_name="ridge"),
                instant="the fit the protocol prescribes."),
        Mistake("summed-not-mean",
                "the squared errors were summed; the protocol's error is their mean over the examples, so "
                "that the training and test errors compare.",
                lambda q: _changed(q, summed=True),
                instant="how the protocol aggregates the errors of the individual examples."),
        Mistake("test-on-training-set",
                "the 'test' error was measured on the training examples, which every model past the threshold "
                "fits exactly; score each model on the held-out test set.",
                lambda q: _changed(q, on_training_set=True),
                instant="which examples the test error is measured on."),
    )


PROBLEM = RandomFeaturesPractice()
