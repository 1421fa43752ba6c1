"""p9-wsd-vs-cosine: a small training run, warmup-stable-decay against warmup-cosine.

The student writes the two schedules (probed on hidden steps against the
reference definitions of e02-schedules, imported from there) and trains the
same tiny model twice, under the same seed and on the same data, once with
each schedule. The hidden tests compare the held-out losses with the
reference run made here, in `solve`.

Sources:
- Loshchilov and Hutter, "SGDR: Stochastic Gradient Descent with Warm Restarts"
  (ICLR 2017, arXiv 1608.03983), eq. (5): the cosine annealing rule; GPT-3
  (Brown et al. 2020, Appendix B) decays it to 10% of the peak after a linear warmup.
- Hu et al., "MiniCPM: Unveiling the Potential of Small Language Models with
  Scalable Training Strategies" (2024, arXiv 2404.06395), §4: the WSD schedule
  (warmup, a stable phase at the peak, a short decay) and the observation that the
  loss falls sharply during the decay phase, after sitting above the cosine run.
- Hägele et al., "Scaling Laws and Compute-Optimal Training Beyond Fixed Training
  Durations" (2024, arXiv 2405.18392): a constant rate with a linear cooldown of
  about 20% of the run matches cosine.
The optimizer is torch.optim.AdamW with GPT-3's betas (0.9, 0.95).

The run, exactly (the notebook states the same protocol, and its locked setup
cell holds `make_task` verbatim; a test checks that the two agree):
  model, x, y, x_eval, y_eval = make_task(params)
  opt = AdamW(model.parameters(), lr=schedule(0), betas=(0.9, 0.95), weight_decay=params["weight_decay"])
  record the eval loss; then for t = 0 .. T-1:
      set every param group's lr to schedule(t)
      batch t is rows [t*b, (t+1)*b) of x, y; loss = mean((model(x_b).squeeze(-1) - y_b)**2)
      zero_grad, backward, step
      after every `eval_every` updates, record the eval loss (same formula on x_eval, under no_grad).
"""
from __future__ import annotations

import json
import math
from functools import lru_cache

import numpy as np
import torch

from graders.numeric import Number, Numbers, Outputs
from graders.problem import Mistake, Probe, Problem, one_torch_thread, seed_for
from graders.problems.common.schedules import cosine_lr, wsd_lr

COSINE_FUNCTION = "cosine_schedule"
WSD_FUNCTION = "wsd_schedule"
BETAS = (0.9, 0.95)


# --- the task: copied verbatim into the notebook's locked setup cell ----------------
def make_task(params):
    """A fresh model, its training stream and a held-out set; the same seed gives the same everything."""
    seed, d, h = params["seed"], params["dim"], params["hidden"]
    gen = torch.Generator().manual_seed(seed)
    teacher = torch.randn(d, generator=gen, dtype=torch.float64) / d ** 0.5

    def draw(n):
        x = torch.randn(n, d, generator=gen, dtype=torch.float64)
        y = torch.sin(2.0 * x @ teacher) + params["noise"] * torch.randn(n, generator=gen, dtype=torch.float64)
        return x, y

    x_train, y_train = draw(params["total"] * params["batch"])
    x_eval, y_eval = draw(2048)
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(d, h), torch.nn.Tanh(), torch.nn.Linear(h, 1)).double()
    return model, x_train, y_train, x_eval, y_eval


# --- parameters -----------------------------------------------------------------------
def _whole(q, name, minimum):
    value = q[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value != int(value) or value < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, not {value!r}")
    return int(value)


def _real(q, name, minimum=0.0):
    value = q[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < minimum:
        raise ValueError(f"{name} must be a finite number >= {minimum}, not {value!r}")
    return float(value)


def _read(q):
    """The validated parameters as a plain dict (ints and floats)."""
    p = {name: _whole(q, name, low) for name, low in
         (("seed", 0), ("dim", 1), ("hidden", 1), ("batch", 1), ("warmup", 1), ("total", 2),
          ("decay", 1), ("eval_every", 1))}
    p.update({name: _real(q, name) for name in ("noise", "peak_lr", "min_lr", "weight_decay")})
    if p["min_lr"] > p["peak_lr"] or p["peak_lr"] <= 0:
        raise ValueError("need 0 <= min_lr <= peak_lr and peak_lr > 0")
    if p["warmup"] >= p["total"] or p["decay"] > p["total"] - p["warmup"]:
        raise ValueError("the warmup and the decay must fit inside the run")
    if p["total"] % p["eval_every"] or p["decay"] % p["eval_every"]:
        raise ValueError("eval_every must divide both total and decay")
    if p["total"] * p["batch"] > 200_000 or p["hidden"] * p["dim"] > 10_000:
        raise ValueError("keep the run small: it is made for a CPU in seconds")
    return p


# --- schedules (e02's definitions) and their probes -------------------------------------
def _cosine(t, p, **kw):
    return float(cosine_lr(t, p["peak_lr"], p["min_lr"], p["warmup"], p["total"], **kw))


def _wsd(t, p, **kw):
    return float(wsd_lr(t, p["peak_lr"], p["min_lr"], p["warmup"], p["total"], p["decay"], **kw))


def probe_calls(params):
    """Hidden calls: the variant's schedule at steps in every phase, and a second, unseen schedule."""
    p = _read(params)
    rng = np.random.default_rng(seed_for(params, "p9-wsd-vs-cosine"))
    W, T, decay = p["warmup"], p["total"], p["decay"]

    def between(lo, hi):          # a step in [lo, hi), or lo when the range is empty
        return int(rng.integers(lo, hi)) if hi > lo else lo

    steps = sorted({0, between(1, W), W, between(W + 1, T - decay), T - decay,
                    between(T - decay + 1, T), T, T + between(1, 50)})
    own = (p["peak_lr"], p["min_lr"], W, T)
    # an unseen schedule at LLM scale: peak 1e-4..1e-3, floor 10% of it, warmup 1-3%, decay 10-30%
    T2 = int(rng.integers(20_000, 200_000))
    W2, D2 = int(T2 * rng.uniform(0.01, 0.03)), int(T2 * rng.uniform(0.1, 0.3))
    peak2 = float(round(10 ** rng.uniform(-4, -3), 7))
    other = (peak2, round(peak2 / 10, 8), W2, T2)
    steps2 = [int(W2 * rng.uniform(0.1, 0.9)), int(rng.integers(W2, T2 - D2)), int(rng.integers(T2 - D2, T2))]
    cosine = [[t, *own] for t in steps] + [[t, *other] for t in steps2]
    wsd = [[t, *own, decay] for t in steps] + [[t, *other, D2] for t in steps2]
    return cosine, wsd


def _schedule_outputs(params, cos_kw=None, wsd_kw=None):
    cosine, wsd = probe_calls(params)
    return ([float(cosine_lr(t, a, b, w, n, **(cos_kw or {}))) for t, a, b, w, n in cosine],
            [float(wsd_lr(t, a, b, w, n, d, **(wsd_kw or {}))) for t, a, b, w, n, d in wsd])


# --- the run ------------------------------------------------------------------------------
def _mse(prediction, target, broadcast=False):
    if broadcast:   # the (n, 1) - (n,) broadcasting bug: an (n, n) matrix of differences
        return ((prediction - target) ** 2).mean()
    return ((prediction.squeeze(-1) - target) ** 2).mean()


@lru_cache(maxsize=256)
def _run_cached(key):
    p, schedule, kw, ahead, broadcast = json.loads(key)
    lr_of = _cosine if schedule == "cosine" else _wsd
    with one_torch_thread():
        model, x, y, x_eval, y_eval = make_task(p)
        opt = torch.optim.AdamW(model.parameters(), lr=lr_of(1 if ahead else 0, p, **kw), betas=BETAS,
                                weight_decay=p["weight_decay"])
        b = p["batch"]

        def evaluate():
            with torch.no_grad():
                prediction = model(x_eval)
                if broadcast:   # the same (n, n) mean, expanded: mean(p²) - 2 mean(p) mean(y) + mean(y²),
                    # without the 2048 x 2048 matrix (the same value to ~1e-15, in a fraction of the time)
                    return float((prediction ** 2).mean() - 2 * prediction.mean() * y_eval.mean()
                                 + (y_eval ** 2).mean())
                return float(_mse(prediction, y_eval))

        losses = [evaluate()]
        for t in range(p["total"]):
            lr = lr_of(t + 1 if ahead else t, p, **kw)
            for group in opt.param_groups:
                group["lr"] = lr
            loss = _mse(model(x[t * b:(t + 1) * b]), y[t * b:(t + 1) * b], broadcast)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if (t + 1) % p["eval_every"] == 0:
                losses.append(evaluate())
        return tuple(losses)


def run(params, schedule, ahead=False, broadcast=False, **kw):
    """Held-out losses after 0, e, 2e, ..., T updates (e = eval_every) of one run."""
    p = _read(params)
    key = json.dumps([p, schedule, kw, ahead, broadcast], sort_keys=True)
    return list(_run_cached(key))


def _drop(p, losses):
    k = (p["total"] - p["decay"]) // p["eval_every"]
    return losses[k] - losses[-1]


def _answers(params, cos_kw=None, wsd_kw=None, ahead=False, broadcast=False):
    p = _read(params)
    cos_kw, wsd_kw = cos_kw or {}, wsd_kw or {}
    cosine_out, wsd_out = _schedule_outputs(params, cos_kw, wsd_kw)
    loss_cosine = run(p, "cosine", ahead=ahead, broadcast=broadcast, **cos_kw)
    loss_wsd = run(p, "wsd", ahead=ahead, broadcast=broadcast, **wsd_kw)
    return {
        "cosine_probe": cosine_out,
        "wsd_probe": wsd_out,
        "loss_cosine": loss_cosine,
        "loss_wsd": loss_wsd,
        "decay_drop": _drop(p, loss_wsd),
    }


def _only(keys, **kw):
    return lambda q: {k: v for k, v in _answers(q, **kw).items() if k in keys}


class WsdVersusCosineProblem(Problem):
    id = "p9-wsd-vs-cosine"
    title = "Warmup-stable-decay against cosine, in a small training run"
    strand = "practice"
    kind = "practice"
    assignment = "practice"
    symbols = ()
    # Four small runs (2k-7k examples, ~300-700 parameters, 200-300 AdamW steps): the decay is
    # 20% of the run (Hägele et al.'s cooldown), 10% (MiniCPM's), 30%, and 20% again;
    # the floor is 10% of the peak (GPT-3) except in C, which decays to zero.
    variants = {
        "A": {"seed": 11, "dim": 8, "hidden": 32, "batch": 16, "noise": 0.3, "peak_lr": 0.03,
              "min_lr": 0.003, "warmup": 20, "total": 300, "decay": 60, "weight_decay": 0.1,
              "eval_every": 20},
        "B": {"seed": 12, "dim": 6, "hidden": 24, "batch": 8, "noise": 0.4, "peak_lr": 0.03,
              "min_lr": 0.003, "warmup": 24, "total": 240, "decay": 24, "weight_decay": 0.1,
              "eval_every": 12},
        "C": {"seed": 13, "dim": 10, "hidden": 32, "batch": 32, "noise": 0.2, "peak_lr": 0.05,
              "min_lr": 0.0, "warmup": 30, "total": 300, "decay": 90, "weight_decay": 0.0,
              "eval_every": 30},
        "D": {"seed": 14, "dim": 8, "hidden": 16, "batch": 16, "noise": 0.4, "peak_lr": 0.04,
              "min_lr": 0.004, "warmup": 10, "total": 200, "decay": 40, "weight_decay": 0.05,
              "eval_every": 20},
    }
    checks = {
        "cosine_probe": Outputs(rtol=1e-6, atol=1e-15, reference="the reference's"),
        "wsd_probe": Outputs(rtol=1e-6, atol=1e-15, reference="the reference's"),
        # same seed, same data, same float64 ops: only summation order can differ (~1e-15)
        "loss_cosine": Numbers(rtol=1e-4, points=2.0),
        "loss_wsd": Numbers(rtol=1e-4, points=2.0),
        "decay_drop": Number(rtol=1e-3),
    }
    cells = {
        "check_schedules": ("cosine_probe", "wsd_probe"),
        "check_losses": ("loss_cosine", "loss_wsd"),
        "check_drop": ("decay_drop",),
    }

    def probes(self, params):
        cosine, wsd = probe_calls(params)
        return {"cosine_probe": Probe(function=COSINE_FUNCTION, calls=cosine),
                "wsd_probe": Probe(function=WSD_FUNCTION, calls=wsd)}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake(
            "cosine-to-zero",
            "the cosine was taken down to zero; it ends at the floor min_lr, so its swing is "
            "(peak_lr - min_lr).",
            _only(("cosine_probe", "loss_cosine"), cos_kw={"to_zero": True}),
            instant="where the cosine schedule ends.",
        ),
        Mistake(
            "cosine-from-step-zero",
            "the cosine's phase was counted from step 0; it starts where the warmup ends, "
            "(t - warmup)/(total - warmup).",
            _only(("cosine_probe", "loss_cosine"), cos_kw={"from_zero": True}),
            instant="where the cosine's phase starts.",
        ),
        Mistake(
            "wsd-without-warmup",
            "the WSD schedule was held at the peak from step 0; it has the same linear warmup as the "
            "cosine schedule.",
            _only(("wsd_probe", "loss_wsd", "decay_drop"), wsd_kw={"no_warmup": True}),
            instant="the warmup of the WSD schedule.",
        ),
        Mistake(
            "wsd-to-zero",
            "the WSD decay was taken down to zero; it ends at the floor min_lr at step total.",
            _only(("wsd_probe", "loss_wsd", "decay_drop"), wsd_kw={"to_zero": True}),
            instant="where the WSD decay ends.",
        ),
        Mistake(
            "scheduler-one-step-ahead",
            "each update used the next step's learning rate (the schedule advanced before the "
            "optimizer step, as when scheduler.step() is called first); update t uses schedule(t).",
            _only(("loss_cosine", "loss_wsd", "decay_drop"), ahead=True),
            instant="which step's learning rate each update uses.",
        ),
        Mistake(
            "broadcast-mse",
            "the model's (n, 1) output was subtracted from the (n,) targets without squeezing, so the "
            "loss averaged an (n, n) matrix of every prediction against every target.",
            _only(("loss_cosine", "loss_wsd", "decay_drop"), broadcast=True),
            instant="the shapes of the model's output and of the targets.",
        ),
    )


PROBLEM = WsdVersusCosineProblem()
