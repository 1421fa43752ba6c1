"""tds-p4-metric-artefacts: per-token accuracy and exact match of one real model, checkpoint by checkpoint.

Source: Schaeffer, Miranda and Koyejo, "Are Emergent Abilities of Large Language Models a Mirage?"
(NeurIPS 2023), §2: if the tokens of an L-token answer are right independently with probability p,
exact match is p^L, which sits near 0 and then rises steeply while p improves steadily; their
Fig. 2 draws it from a power-law loss. tds-e2-metric-artefacts derives that model on paper; here it
is measured. The same trained model is scored both ways at several training lengths, and its
exact match is compared with p^L computed from its own per-token accuracy.

The run, exactly (the notebook's locked cell holds `make_task` and `train_checkpoints` verbatim;
a test checks that they agree): answers of `length` digits, answer digit i = (input digit
perm[i] + key[i]) mod 10 for a fixed random permutation and key; a one-hidden-layer ReLU MLP of
`width` units on the one-hot input, trained by plain SGD (rate `lr`, fresh random batches of
`batch` examples, cross-entropy summed over answer positions by averaging) for each step count in
`checkpoints`; at each checkpoint the logits on `n_test` held-out examples are kept.

The student writes `token_accuracy(predictions, targets)` and `exact_match(predictions, targets)`
(probed on hidden nested lists of digits) and measures, at each checkpoint, with predictions the
arg-max digits: `token_accuracies` (p), `exact_matches` and `independent_exact` (p^length).
"""
from __future__ import annotations

import json
import math
from functools import lru_cache

import numpy as np

from graders.numeric import Numbers, Outputs
from graders.problem import Mistake, Probe, Problem, one_torch_thread, seed_for


# --- the run: copied verbatim into the notebook's locked setup cell -------------------
def make_task(params):
    """The task's fixed rule, a sampler of fresh examples, and the held-out test set."""
    import torch
    gen = torch.Generator().manual_seed(params["seed"])
    length = params["length"]
    perm = torch.randperm(length, generator=gen)
    key = torch.randint(0, 10, (length,), generator=gen)

    def draw(n):
        x = torch.randint(0, 10, (n, length), generator=gen)
        return x, (x[:, perm] + key) % 10

    test_x, test_y = draw(params["n_test"])
    return draw, test_x, test_y


def train_checkpoints(params):
    """Train the MLP; return its test logits (n_test x length x 10) at each checkpoint, and the test targets."""
    import torch
    import torch.nn.functional as F
    draw, test_x, test_y = make_task(params)
    torch.manual_seed(params["seed"])
    length, width = params["length"], params["width"]
    model = torch.nn.Sequential(torch.nn.Linear(10 * length, width), torch.nn.ReLU(),
                                torch.nn.Linear(width, 10 * length))
    opt = torch.optim.SGD(model.parameters(), lr=params["lr"])

    def one_hot(x):
        return F.one_hot(x, 10).float().reshape(len(x), -1)

    logits, step = [], 0
    for stop in params["checkpoints"]:
        while step < stop:
            x, y = draw(params["batch"])
            loss = F.cross_entropy(model(one_hot(x)).reshape(-1, 10), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
        with torch.no_grad():
            logits.append(model(one_hot(test_x)).reshape(-1, length, 10))
    return logits, test_y


# --- the reference ----------------------------------------------------------------------
def _read(q):
    p = {}
    for name, low in (("seed", 0), ("length", 1), ("width", 1), ("batch", 1), ("n_test", 10)):
        v = q[name]
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ValueError(f"{name} must be a whole number >= {low}, not {v!r}")
        p[name] = v
    p["lr"] = float(q["lr"])
    p["checkpoints"] = [int(s) for s in q["checkpoints"]]
    if not 0 < p["lr"] < 10 or p["checkpoints"] != sorted(set(p["checkpoints"])) or p["checkpoints"][0] < 1 \
            or p["checkpoints"][-1] > 2000 or p["width"] > 512 or p["length"] > 16 or p["n_test"] > 5000:
        raise ValueError("keep the run small: rising checkpoints up to 2000 steps, width <= 512, length <= 16")
    return p


def reference_token_accuracy(predictions, targets):
    """The fraction of answer tokens predicted right, over every position of every example."""
    pred, true = np.asarray(predictions), np.asarray(targets)
    return float((pred == true).mean())


def reference_exact_match(predictions, targets):
    """The fraction of examples whose every answer token is right."""
    pred, true = np.asarray(predictions), np.asarray(targets)
    return float((pred == true).all(axis=1).mean())


def _any_token_right(predictions, targets):      # a declared mistake
    pred, true = np.asarray(predictions), np.asarray(targets)
    return float((pred == true).any(axis=1).mean())


@lru_cache(maxsize=8)
def _measured(key):
    """Per checkpoint: argmax-accuracy p, exact match, any-token-right, and exp(-cross-entropy)."""
    import torch.nn.functional as F
    p = json.loads(key)
    with one_torch_thread():
        logits, test_y = train_checkpoints(p)
        rows = []
        for lg in logits:
            pred = lg.argmax(-1).numpy()
            true = test_y.numpy()
            ce = float(F.cross_entropy(lg.reshape(-1, 10), test_y.reshape(-1)))
            rows.append((reference_token_accuracy(pred, true), reference_exact_match(pred, true),
                         _any_token_right(pred, true), math.exp(-ce)))
    return rows


def measured(params):
    """[(p, exact match, any-token-right, exp(-CE))] at each checkpoint of the run."""
    return _measured(json.dumps(_read(params), sort_keys=True))


def probe_calls(params):
    """Hidden [predictions, targets] pairs: digit tables with some rows entirely right."""
    rng = np.random.default_rng(seed_for(params, "tds-p4-metric-artefacts"))
    calls = []
    for rows, length, slip in ((12, 4, 0.2), (9, 7, 0.1), (15, 3, 0.4), (6, 5, 0.0), (10, 6, 0.6)):
        targets = rng.integers(0, 10, size=(rows, length))
        wrong = rng.random((rows, length)) < slip
        predictions = np.where(wrong, (targets + rng.integers(1, 10, size=(rows, length))) % 10, targets)
        calls.append([predictions.tolist(), targets.tolist()])
    return calls


def _answers(params, *, probability=False, any_token=False, linear=False):
    p = _read(params)
    rows = measured(params)
    accuracies = [r[3] if probability else r[0] for r in rows]
    exact = [r[2] if any_token else r[1] for r in rows]
    length = p["length"]
    exact_fn = _any_token_right if any_token else reference_exact_match
    return {
        "token_probe": [reference_token_accuracy(*call) for call in probe_calls(params)],
        "exact_probe": [exact_fn(*call) for call in probe_calls(params)],
        "token_accuracies": accuracies,
        "exact_matches": exact,
        "independent_exact": [1 - length * (1 - a) if linear else a ** length for a in accuracies],
    }


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    return {k: v for k, v in wrong.items()
            if any(not math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9) for a, b in zip(v, right[k]))}


class MetricArtefactsPractice(Problem):
    id = "tds-p4-metric-artefacts"
    title = "One model, two metrics: per-token accuracy and exact match during training"
    strand = "practice"
    kind = "practice"
    assignment = "tds-practice"
    # Toy stand-ins for Schaeffer et al.'s arithmetic tasks: answers of 5 to 10 digits, MLPs of 32 to
    # 128 hidden units, checkpoints on a doubling grid of steps (each run a few seconds on one core).
    variants = {
        "A": {"seed": 1, "length": 5, "width": 64, "lr": 0.5, "batch": 64, "n_test": 2000,
              "checkpoints": [10, 20, 40, 80, 160, 320]},
        "B": {"seed": 2, "length": 8, "width": 64, "lr": 0.5, "batch": 64, "n_test": 2000,
              "checkpoints": [20, 40, 80, 160, 320, 640]},
        "C": {"seed": 3, "length": 10, "width": 128, "lr": 0.5, "batch": 64, "n_test": 2000,
              "checkpoints": [20, 40, 80, 160, 320, 640]},
        "D": {"seed": 4, "length": 6, "width": 32, "lr": 0.6, "batch": 64, "n_test": 2000,
              "checkpoints": [20, 40, 80, 160, 320, 640]},
    }
    checks = {
        "token_probe": Outputs(rtol=1e-6, atol=1e-9, reference="the reference's"),
        "exact_probe": Outputs(rtol=1e-6, atol=1e-9, reference="the reference's"),
        "token_accuracies": Numbers(rtol=1e-6, atol=1e-9),
        "exact_matches": Numbers(rtol=1e-6, atol=1e-9),
        "independent_exact": Numbers(rtol=1e-6, atol=1e-9),
    }
    cells = {"check_scores": ("token_probe", "exact_probe"),
             "check_run": ("token_accuracies", "exact_matches", "independent_exact")}

    def probes(self, params):
        return {"token_probe": Probe(function="token_accuracy", calls=probe_calls(params)),
                "exact_probe": Probe(function="exact_match", calls=probe_calls(params))}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("probability-not-accuracy",
                "the per-token accuracy was taken as exp(-cross-entropy), the geometric-mean probability of the "
                "right digit; the protocol scores the arg-max prediction, right or wrong, and the two differ "
                "widely while the model is unsure.",
                lambda q: _changed(q, probability=True),
                instant="the difference between the probability given to the right token and whether the "
                        "predicted token is right."),
        Mistake("any-token-counts",
                "an example was counted as matched when any of its digits was right; exact match needs every "
                "digit of the answer right.",
                lambda q: _changed(q, any_token=True),
                instant="what exact match requires of every digit of an answer."),
        Mistake("linearised-independence",
                "the independence prediction was written 1 - L(1 - p), which agrees with p^L only when 1 - p "
                "is small; independent tokens all right have probability p^L.",
                lambda q: _changed(q, linear=True),
                instant="how independent per-token successes combine into a whole answer."),
    )


PROBLEM = MetricArtefactsPractice()
