"""tds-e6-lr-batch-coupling: the best SGD learning rate as the batch grows, and where the linear
rule overshoots it.

Source: McCandlish, Kaplan, Amodei et al., "An Empirical Model of Large-Batch Training" (2018,
arXiv 1812.06162), §2: on a loss that is locally quadratic, with true gradient G, Hessian H and
per-example gradient covariance Sigma, one SGD step of size eps along a mini-batch gradient of size
B lowers the expected loss by eps |G|^2 - (eps^2 / 2)(G^T H G + tr(H Sigma)/B); the best step is
    eps_opt(B) = eps_max / (1 + B_noise / B),   eps_max = |G|^2 / (G^T H G),
    B_noise = tr(H Sigma) / (G^T H G),
so the best rate grows linearly in B while B << B_noise and saturates at eps_max beyond it.
Goyal et al. 2017 ("Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour", §2) scale the
rate linearly with the batch (0.1 at 256 images, 0.1 kn/256 in general): the small-batch limit.

Here the variant's run tuned its rate eta0 at batch b0, and the model above holds with noise
scale b_noise. Answers: `eta_opt_expr` (the best rate in eta_max, B_noise and B), `eta_max` (the
saturating rate implied by the tuned point), `optimal_rates` (at each of `batches`) and
`overshoot_batch` (the batch at which the linear rule from (b0, eta0) gives `factor` times the best
rate: (B + B_noise)/(b0 + B_noise) = factor).
"""
from __future__ import annotations

from graders.numeric import Number, Numbers
from graders.problem import Mistake, Problem
from graders.symbolic import Expr, symbols_for

SYMBOLS = ("eta_max", "B_noise", "B")


def _read(q):
    b0, eta0, noise, factor = float(q["b0"]), float(q["eta0"]), float(q["b_noise"]), float(q["factor"])
    batches = [float(b) for b in q["batches"]]
    if not (b0 > 0 and eta0 > 0 and noise > 0 and factor > 1) or not batches or min(batches) <= 0:
        raise ValueError("need positive b0, eta0, b_noise and batches, and a factor above 1")
    return b0, eta0, noise, factor, batches


def _answers(q, *, flipped=False, tuned_is_max=False, linear=False, noiseless_overshoot=False):
    b0, eta0, noise, factor, batches = _read(q)

    def shrink(batch):            # the factor 1 + B_noise/B, or its flipped form
        return 1 + (batch / noise if flipped else noise / batch)

    eta_max = eta0 if tuned_is_max else eta0 * shrink(b0)
    rates = [eta0 * b / b0 for b in batches] if linear else [eta_max / shrink(b) for b in batches]
    s = symbols_for(SYMBOLS)
    ratio = s["B"] / s["B_noise"] if flipped else s["B_noise"] / s["B"]
    return {
        "eta_opt_expr": s["eta_max"] / (1 + ratio),
        "eta_max": eta_max,
        "optimal_rates": rates,
        "overshoot_batch": factor * b0 if noiseless_overshoot else factor * (b0 + noise) - noise,
    }


def _changed(q, keys, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    return {k: wrong[k] for k in keys if str(wrong[k]) != str(right[k])}


class LrBatchCouplingExercise(Problem):
    id = "tds-e6-lr-batch-coupling"
    title = "The best SGD learning rate against the batch size, and where the linear rule overshoots"
    strand = "mathematics"
    kind = "exercise"
    assignment = "tds-exercises"
    symbols = SYMBOLS
    # Tuned points of real SGD runs: Goyal et al. 2017 (ResNet-50 on ImageNet, 0.1 at 256 images and,
    # by their rule 0.1 kn/256, 0.4 at 1024); He et al. 2016 (ResNet on CIFAR-10, 0.1 at 128, §4.2); an
    # MNIST classifier at 0.01 and 64. The noise scales are illustrative, of the orders McCandlish et
    # al. report for these datasets (hundreds to thousands for MNIST and CIFAR-10, tens of thousands
    # for ImageNet late in training); they are not read off a table of the paper.
    variants = {
        "A": {"b0": 256, "eta0": 0.1, "b_noise": 20000, "batches": [256, 1024, 8192, 32768, 65536], "factor": 1.5},
        "B": {"b0": 128, "eta0": 0.1, "b_noise": 1000, "batches": [128, 256, 512, 2048, 8192], "factor": 2.0},
        "C": {"b0": 64, "eta0": 0.01, "b_noise": 900, "batches": [64, 128, 512, 1024, 4096], "factor": 1.25},
        "D": {"b0": 1024, "eta0": 0.4, "b_noise": 50000, "batches": [1024, 4096, 16384, 65536], "factor": 1.2},
    }
    checks = {
        "eta_opt_expr": Expr(symbols=SYMBOLS),
        "eta_max": Number(rtol=1e-6),
        "optimal_rates": Numbers(rtol=1e-6),
        "overshoot_batch": Number(rtol=1e-6),
    }
    cells = {"check_expression": ("eta_opt_expr",),
             "check_numbers": ("eta_max", "optimal_rates", "overshoot_batch")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("linear-rule-everywhere",
                "the rates were scaled linearly from the tuned point at every batch (Goyal et al.'s rule); "
                "that is the small-batch limit of η_max / (1 + B_noise/B) and overshoots once B is "
                "comparable to B_noise.",
                lambda q: _changed(q, ("optimal_rates",), linear=True),
                instant="what happens to the best rate once the batch averages away most of the noise."),
        Mistake("noise-ratio-flipped",
                "the noise term was written B/B_noise; the noise of a batch mean falls as 1/B, so the "
                "penalty term is tr(HΣ)/B and the factor is 1 + B_noise/B.",
                lambda q: _changed(q, ("eta_opt_expr", "eta_max", "optimal_rates"), flipped=True),
                instant="how the variance of a batch-mean gradient depends on the batch."),
        Mistake("tuned-rate-as-ceiling",
                "the tuned rate at b0 was taken as η_max; it is η_max / (1 + B_noise/b0), so "
                "η_max = η0 (1 + B_noise/b0).",
                lambda q: _changed(q, ("eta_max", "optimal_rates"), tuned_is_max=True),
                instant="what the tuned rate at the reference batch already includes."),
        Mistake("overshoot-without-noise",
                "the overshoot was placed at factor × b0; the linear rule's ratio to the best rate is "
                "(B + B_noise)/(b0 + B_noise), so B = factor (b0 + B_noise) - B_noise.",
                lambda q: _changed(q, ("overshoot_batch",), noiseless_overshoot=True),
                instant="the ratio of the linear rule to the best rate, as a function of the batch."),
    )


PROBLEM = LrBatchCouplingExercise()
