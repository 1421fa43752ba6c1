"""tds-c2-lazy-versus-rich: what to picture. How far a network's features move as it widens.

The picture. Under the NTK parametrisation (each layer's output divided by the square root of its
fan-in, one learning rate at every width; Jacot et al. 2018), a wider network fits the same data
with smaller moves of each weight: the relative change of the weights and of the hidden features
falls like 1/sqrt(n) at width n (Lee et al. 2019, §2, who measure it against width), so in the limit the features
freeze and the network trains as its linearisation, a fixed kernel machine ("lazy"). Under muP
(Yang & Hu 2021, "Feature Learning in Infinite-Width Neural Networks", Tensor Programs IV; for one
hidden layer it is the mean-field scaling, output divided by n and learning rate multiplied by n),
the features move by an amount that does not depend on the width ("rich"). Chizat, Oyallon & Bach
2019 ("On Lazy Training in Differentiable Programming") show that laziness comes from the scaling,
and Ghorbani et al. 2019/2020 that kernel methods, and so lazy networks, need far more samples
than feature-learning networks on simple targets.

The parametrisations are set to agree at the variant's base width n0 (as muP's base shapes do),
where a run moves its features by `base_movement` m0. The checks are the numbers the picture
predicts:
- `ntk_movements`: m0 sqrt(n0 / n) per width; `mup_movements`: m0 per width;
- `frozen_width`: the width at which the NTK run's movement has fallen to `target_movement`;
- `run_exponents`: for each described run, (movement at two widths), the fitted exponent
  log(m2/m1) / log(n2/n1); `run_regimes`: 0 (lazy) when it is nearer -1/2 than 0, else 1 (rich).
The runs' numbers come from `feature_movement`, a real two-layer network trained in each
parametrisation (the test re-runs them).
"""
from __future__ import annotations

import math

from graders.numeric import Number, Numbers
from graders.problem import Mistake, Problem

LAZY, RICH = 0, 1
LAZY_EXPONENT = -0.5
BOUNDARY = -0.25          # halfway between the lazy exponent and the rich one (0)


def _read(q):
    base, m0, target = float(q["base_width"]), float(q["base_movement"]), float(q["target_movement"])
    widths = [float(w) for w in q["widths"]]
    runs = [tuple(float(v) for v in run) for run in q["runs"]]
    if not (base > 0 and m0 > 0 and 0 < target < m0) or not widths or any(w <= 0 for w in widths):
        raise ValueError("need a positive base width and widths, and 0 < target_movement < base_movement")
    if any(len(r) != 4 or r[0] == r[2] or min(r) <= 0 for r in runs):
        raise ValueError("each run is [width1, movement1, width2, movement2] with two different widths")
    return base, widths, m0, target, runs


def _answers(q, *, ntk_power=0.5, mup_freezes=False, boundary=BOUNDARY):
    base, widths, m0, target, runs = _read(q)
    ntk = [m0 * (base / n) ** ntk_power for n in widths]
    exponents = [math.log(m2 / m1) / math.log(n2 / n1) for n1, m1, n2, m2 in runs]
    return {
        "ntk_movements": ntk,
        "mup_movements": list(ntk) if mup_freezes else [m0 for _ in widths],
        "frozen_width": base * (m0 / target) ** (1 / ntk_power),
        "run_exponents": exponents,
        "run_regimes": [LAZY if e < boundary else RICH for e in exponents],
    }


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    return {k: v for k, v in wrong.items() if v != right[k]}


def feature_movement(width, parametrisation, steps=40, lr=0.1, points=16, dim=8, seed=0):
    """Relative movement |H_T - H_0| / |H_0| of the hidden features of a two-layer ReLU network
    after `steps` steps of full-batch gradient descent on ½ Σ (f - y)², in the "ntk"
    parametrisation (f = a · relu(W x) / sqrt(width), rate lr) or "mup" (f = a · relu(W x) / width,
    rate lr · width). Neurons come in pairs with opposite output weights, so f starts at 0 at
    every width and runs differ only in the width."""
    import numpy as np
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((points, dim))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y = np.sin(2 * x[:, 0]) + 0.5 * x[:, 1]
    init = np.random.default_rng(seed + 1)
    half_w, half_a = init.standard_normal((width // 2, dim)), init.standard_normal(width // 2)
    w, a = np.vstack([half_w, half_w]), np.concatenate([half_a, -half_a])
    if parametrisation == "ntk":
        scale, rate = 1 / np.sqrt(width), lr
    elif parametrisation == "mup":
        scale, rate = 1 / width, lr * width
    else:
        raise ValueError("parametrisation is 'ntk' or 'mup'")
    h0 = np.maximum(x @ w.T, 0)
    for _ in range(steps):
        pre = x @ w.T
        h = np.maximum(pre, 0)
        res = scale * h @ a - y
        a, w = a - rate * scale * h.T @ res, w - rate * scale * ((pre > 0) * a * res[:, None]).T @ x
    return float(np.linalg.norm(np.maximum(x @ w.T, 0) - h0) / np.linalg.norm(h0))


class LazyVersusRichConcept(Problem):
    id = "tds-c2-lazy-versus-rich"
    title = "Lazy or rich: how far the features move as the network widens"
    strand = "concept"
    kind = "concept"
    assignment = "tds-concept"
    # Base widths and widths of muP-style sweeps (proxies of 64-512, targets up to 16k); the runs are
    # `feature_movement` at (width, parametrisation, seed), 4 significant digits, listed in the test.
    variants = {
        "A": {"base_width": 256, "widths": [256, 1024, 4096, 16384], "base_movement": 0.04,
              "target_movement": 0.005,
              "runs": [[128, 0.06133, 2048, 0.01391], [128, 0.4838, 2048, 0.4387], [64, 0.4935, 1024, 0.4987]]},
        "B": {"base_width": 128, "widths": [64, 128, 512, 2048], "base_movement": 0.06,
              "target_movement": 0.01,
              "runs": [[256, 0.5088, 4096, 0.5], [64, 0.08692, 1024, 0.02197], [256, 0.0437, 1024, 0.02349]]},
        "C": {"base_width": 512, "widths": [512, 2048, 8192], "base_movement": 0.03,
              "target_movement": 0.002,
              "runs": [[512, 0.0378, 4096, 0.01218], [64, 0.6568, 512, 0.5923], [128, 0.4496, 2048, 0.4868]]},
        "D": {"base_width": 64, "widths": [64, 256, 1024, 4096, 65536], "base_movement": 0.08,
              "target_movement": 0.001,
              "runs": [[64, 0.6463, 256, 0.6218], [128, 0.08109, 512, 0.03605], [256, 0.4921, 2048, 0.4767],
                       [64, 0.08476, 4096, 0.01091]]},
    }
    checks = {
        "ntk_movements": Numbers(rtol=1e-6),
        "mup_movements": Numbers(rtol=1e-6),
        "frozen_width": Number(rtol=1e-6),
        "run_exponents": Numbers(rtol=1e-6),
        "run_regimes": Numbers(exact=True),
    }
    cells = {"check_widths": ("ntk_movements", "mup_movements", "frozen_width"),
             "check_runs": ("run_exponents", "run_regimes")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("one-over-width",
                "under the NTK parametrisation the relative movement falls like 1/sqrt(n), not 1/n: the output "
                "is divided by sqrt(n), so each hidden unit's weights get a gradient of size 1/sqrt(n), and "
                "that is how far each unit's feature moves.",
                lambda q: _changed(q, ntk_power=1.0),
                instant="how the NTK parametrisation's output scale sets the size of each weight's step."),
        Mistake("mup-also-freezes",
                "muP is built so that the features move by a width-independent amount; it does not freeze "
                "them as the NTK parametrisation does.",
                lambda q: _changed(q, mup_freezes=True),
                instant="what muP was designed to keep fixed across widths."),
        Mistake("any-shrinkage-is-lazy",
                "a rich run's movement also drifts a little with width at finite width; the lazy signature "
                "is the exponent near -1/2, so classify by which of -1/2 and 0 the exponent is nearer.",
                lambda q: _changed(q, boundary=0.0),
                instant="what distinguishes the lazy exponent from the drift a rich run shows at finite width."),
    )


PROBLEM = LazyVersusRichConcept()
