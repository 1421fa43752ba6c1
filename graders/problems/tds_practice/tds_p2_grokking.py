"""tds-p2-grokking: modular addition learned late, and the weight decay that makes it happen.

Sources: Power, Burda, Edwards, Babuschkin and Misra, "Grokking: Generalization Beyond Overfitting
on Small Algorithmic Datasets" (2022, arXiv 2201.02177): on tables such as (a + b) mod p a network
fits its training pairs long before it predicts the held-out ones, and weight decay shortens the
delay most of the interventions they tried (their Fig. 2 and §3.3); Nanda, Chan, Lieberum, Smith
and Steinhardt, "Progress Measures for Grokking via Mechanistic Interpretability" (ICLR 2023):
full-batch AdamW on addition mod 113, with the total weight norm falling through the delay and
no grokking without weight decay; Liu, Michaud and Tegmark, "Omnigrok: Grokking Beyond
Algorithmic Data" (ICLR 2023): a network initialised at a large weight norm memorises at that
norm, and generalises only once weight decay has shrunk the norm to a smaller "Goldilocks" value.

The run, exactly (the notebook's locked cell holds `make_split` and `grok_run` verbatim; a test
checks that they agree): every pair (a, b) of residues mod p, written as two concatenated one-hot
vectors, label (a + b) mod p; a seeded random `train_fraction` of the p^2 pairs is the training
set, the rest the test set. The network is Gromov's (2023, arXiv 2301.02679) two-layer MLP with a
quadratic activation and no biases, logits = (x W_in)^2 W_out, both matrices Gaussian with
standard deviation init_scale / sqrt(fan_in); init_scale 8 puts the start at a large norm, as in
Omnigrok's large-initialisation runs. Full-batch AdamW (betas 0.9 and 0.98, those of Power et
al. and Nanda et al.), cross-entropy loss, every `log_every` steps a log line: step, training
and test accuracy, total weight norm sqrt(|W_in|^2 + |W_out|^2). The same run is made with the
variant's weight decay and with none.

The student writes `first_step(steps, values, threshold)` (the first logged step whose value is
at least the threshold, -1 if none), probed on hidden logs, and reads the two runs: `fit_step`,
`generalise_step`, `delay_steps` (their difference), `norm_at_fit`, `norm_at_generalise`,
`generalise_step_no_wd` and `norm_end_no_wd` (the no-decay run's last logged norm).
"""
from __future__ import annotations

import json
import math
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F

from graders.numeric import Count, Number, Outputs
from graders.problem import Mistake, Probe, Problem, seed_for
from graders.problems.common.torch_runs import quiet_torch

FUNCTION = "first_step"


# --- the harness: copied verbatim into the notebook's locked setup cell ------------------------
def make_split(params):
    """One-hot inputs of all p^2 pairs, labels (a + b) mod p, and the train/test index split."""
    p = params["p"]
    gen = torch.Generator().manual_seed(params["seed"])
    a, b = torch.cartesian_prod(torch.arange(p), torch.arange(p)).T
    x = torch.cat([F.one_hot(a, p), F.one_hot(b, p)], 1).float()
    y = (a + b) % p
    order = torch.randperm(p * p, generator=gen)
    n_train = round(params["train_fraction"] * p * p)
    return x, y, order[:n_train], order[n_train:]


def grok_run(params, weight_decay):
    """Full-batch AdamW on the training pairs; a log of step, accuracies and weight norm."""
    x, y, train, test = make_split(params)
    p, width, scale = params["p"], params["width"], params["init_scale"]
    gen = torch.Generator().manual_seed(params["seed"] + 1)
    w_in = (scale * torch.randn(2 * p, width, generator=gen) / math.sqrt(2 * p)).requires_grad_()
    w_out = (scale * torch.randn(width, p, generator=gen) / math.sqrt(width)).requires_grad_()
    opt = torch.optim.AdamW([w_in, w_out], lr=params["lr"], betas=(0.9, 0.98), weight_decay=weight_decay)
    log = {"step": [], "train_acc": [], "test_acc": [], "weight_norm": []}
    for step in range(params["steps"] + 1):
        if step % params["log_every"] == 0:
            with torch.no_grad():
                right = (((x @ w_in) ** 2 @ w_out).argmax(1) == y).float()
                log["step"].append(step)
                log["train_acc"].append(right[train].mean().item())
                log["test_acc"].append(right[test].mean().item())
                log["weight_norm"].append(torch.sqrt((w_in ** 2).sum() + (w_out ** 2).sum()).item())
        if step == params["steps"]:
            break
        loss = F.cross_entropy((x[train] @ w_in) ** 2 @ w_out, y[train])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return log
# --- end of the harness -------------------------------------------------------------------------


def reference_first_step(steps, values, threshold):
    """The first logged step whose value is at least `threshold`; -1 when there is none (torch,
    on one thread: the grader's forked workers call it)."""
    with quiet_torch():
        v = torch.tensor([float(u) for u in values], dtype=torch.float64)
        hits = torch.nonzero(v >= float(threshold)).flatten()
        return int(steps[int(hits[0])]) if hits.numel() else -1


def slipped_first_step(steps, values, threshold, kind):
    """`first_step` with one declared mistake built in."""
    for i, (s, v) in enumerate(zip(steps, values)):
        if (v > threshold) if kind == "strict" else (v >= threshold):
            return i if kind == "index" else int(s)
    return int(steps[-1]) if kind == "never-last" else -1


def probe_calls(params):
    """Hidden logs [steps, values, threshold]: a tie at the threshold, none reached, sparse logs."""
    rng = np.random.default_rng(seed_for(params, "tds-p2-grokking"))
    calls = []
    # 1. an accuracy climbing to exactly the threshold before passing it; logged every 50 steps
    n = int(rng.integers(12, 18))
    vals = np.round(np.clip(np.linspace(0.02, 1.0, n) + 0.01 * rng.standard_normal(n), 0, 1), 3)
    k = int(rng.integers(4, n - 3))
    vals[:k] = np.minimum(vals[:k], 0.8)
    vals[k], vals[k + 1:] = 0.9, np.maximum(vals[k + 1:], 0.93)
    calls.append([[50 * i for i in range(n)], vals.tolist(), 0.9])
    # 2. never reaches the threshold; logged every 20 steps from step 0
    n = int(rng.integers(10, 16))
    calls.append([[20 * i for i in range(n)],
                  np.round(0.3 + 0.4 * rng.random(n), 3).tolist(), 0.95])
    # 3. a delayed jump on an uneven log (every 10, then every 100 steps)
    steps = list(range(0, 100, 10)) + list(range(100, 1600, 100))
    vals = [round(0.02 + 0.01 * float(rng.random()), 3) for _ in steps]
    j = int(rng.integers(13, 20))
    for i in range(j, len(steps)):
        vals[i] = round(min(1.0, 0.5 + 0.15 * (i - j)), 3)
    calls.append([steps, vals, 0.95])
    # 4. reached at the very first log line (a training accuracy already perfect)
    n = int(rng.integers(5, 9))
    calls.append([[25 * i for i in range(n)], [1.0] * n, 0.99])
    # 5. a tie at the threshold later followed by a value above it, logged every 25 steps
    n = int(rng.integers(14, 20))
    vals = np.round(np.linspace(0.1, 0.7, n), 3)
    m = int(rng.integers(3, n - 4))
    vals[m] = 0.75
    vals[m + 2:] = 0.81
    calls.append([[25 * i for i in range(n)], vals.tolist(), 0.75])
    return calls


def _read(q):
    p = {}
    for name, low in (("p", 3), ("seed", 0), ("width", 1), ("steps", 1), ("log_every", 1)):
        v = q[name]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v < low:
            raise ValueError(f"{name} must be a whole number >= {low}, not {v!r}")
        p[name] = int(v)
    for name in ("train_fraction", "init_scale", "lr", "weight_decay", "threshold"):
        p[name] = float(q[name])
    if p["p"] > 61 or p["width"] > 512 or p["steps"] > 4000:
        raise ValueError("keep the run small: p <= 61, width <= 512, steps <= 4000")
    if not 0 < p["train_fraction"] < 1 or not 0 < p["threshold"] <= 1:
        raise ValueError("train_fraction must lie in (0, 1) and threshold in (0, 1]")
    return p


@lru_cache(maxsize=16)
def _runs(key):
    q = json.loads(key)
    with quiet_torch():
        return grok_run(q, q["weight_decay"]), grok_run(q, 0.0)


def runs(params):
    """(the log with the variant's weight decay, the log without weight decay)."""
    return _runs(json.dumps(_read(params), sort_keys=True))


def _answers(params, kind="right", norm_at_end=False):
    p = _read(params)
    log, log0 = runs(p)
    thr = p["threshold"]
    first = reference_first_step if kind == "right" else \
        (lambda s, v, t: slipped_first_step(s, v, t, kind))
    fit = first(log["step"], log["train_acc"], thr)
    gen = first(log["step"], log["test_acc"], thr)

    def norm_at(step):
        if step < 0 or step not in log["step"]:      # a step the log does not hold (an index, say)
            return None
        return log["weight_norm"][log["step"].index(step)]

    out = {
        "first_step_probe": [first(*call) for call in probe_calls(params)],
        "fit_step": fit,
        "generalise_step": gen,
        "delay_steps": gen - fit,
        "norm_at_fit": norm_at(fit),
        "norm_at_generalise": log["weight_norm"][-1] if norm_at_end else norm_at(gen),
        "generalise_step_no_wd": first(log0["step"], log0["test_acc"], thr),
        "norm_end_no_wd": log0["weight_norm"][-1],
    }
    return out


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    out = {}
    for k, v in wrong.items():
        if v is None:
            continue
        if isinstance(v, float) and isinstance(right[k], (int, float)):
            if not math.isclose(v, right[k], rel_tol=1e-3):
                out[k] = v
        elif v != right[k]:
            out[k] = v
    return out


class GrokkingPractice(Problem):
    id = "tds-p2-grokking"
    title = "Grokking modular addition on a CPU, and what weight decay has to do with it"
    strand = "practice"
    kind = "practice"
    assignment = "tds-practice"
    # Sizes cut from Power et al.'s p = 97 (and Nanda et al.'s 113, 30% of pairs, full batch,
    # AdamW with weight decay 1) to p of 23-31 and a Gromov-style quadratic MLP, so that a run
    # groks in about a thousand full-batch steps; lr 1e-2 and init_scale 8 as in Omnigrok's
    # large-initialisation runs; each variant groks within its budget (a test checks it).
    variants = {
        "A": {"p": 23, "train_fraction": 0.6, "seed": 0, "width": 128, "init_scale": 8.0, "lr": 0.01,
              "weight_decay": 0.6, "steps": 1200, "log_every": 25, "threshold": 0.95},
        "B": {"p": 29, "train_fraction": 0.5, "seed": 1, "width": 128, "init_scale": 8.0, "lr": 0.01,
              "weight_decay": 0.6, "steps": 1200, "log_every": 25, "threshold": 0.9},
        "C": {"p": 31, "train_fraction": 0.45, "seed": 2, "width": 128, "init_scale": 8.0, "lr": 0.01,
              "weight_decay": 1.0, "steps": 1200, "log_every": 25, "threshold": 0.95},
        "D": {"p": 27, "train_fraction": 0.55, "seed": 3, "width": 128, "init_scale": 8.0, "lr": 0.01,
              "weight_decay": 0.6, "steps": 1200, "log_every": 25, "threshold": 0.9},
    }
    checks = {
        "first_step_probe": Outputs(rtol=0.0, atol=0.0, points=2.0, reference="the reference's"),
        "fit_step": Count(),
        "generalise_step": Count(),
        "delay_steps": Count(),
        "norm_at_fit": Number(rtol=1e-4),
        "norm_at_generalise": Number(rtol=1e-4),
        "generalise_step_no_wd": Count(),
        "norm_end_no_wd": Number(rtol=1e-4),
    }
    cells = {
        "check_first_step": ("first_step_probe",),
        "check_delay": ("fit_step", "generalise_step", "delay_steps"),
        "check_mechanism": ("norm_at_fit", "norm_at_generalise", "generalise_step_no_wd", "norm_end_no_wd"),
    }

    def probes(self, params):
        return {"first_step_probe": Probe(function=FUNCTION, calls=probe_calls(params))}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("log-index-not-step",
                "the position in the log was returned; the log is written every log_every steps, so "
                "return the step recorded at that position, logs['step'][i].",
                lambda q: _changed(q, kind="index"),
                instant="what the log's entries are counted in."),
        Mistake("strict-threshold",
                "a value equal to the threshold was not counted; 'reaches the threshold' means at least "
                "the threshold (>=), and logged accuracies can land on it exactly.",
                lambda q: _changed(q, kind="strict"),
                instant="whether a value equal to the threshold counts."),
        Mistake("never-as-last-step",
                "a curve that never reaches the threshold was given its last logged step; the protocol "
                "returns -1 then, so that 'never within the budget' is not read as a late success.",
                lambda q: _changed(q, kind="never-last"),
                instant="what the function returns when the threshold is never reached."),
        Mistake("norm-at-end",
                "the norm 'at generalisation' was read at the end of the run; read it at the logged "
                "step where the test accuracy first reaches the threshold.",
                lambda q: _changed(q, norm_at_end=True),
                instant="the moment at which the weight norm is read."),
    )


PROBLEM = GrokkingPractice()
