"""tds-b2-interpolation-threshold: the point where a model can fit every training example.

The term. For least squares on p features of n training examples (the feature matrix X is
n x p, of rank min(n, p) for features in general position, as random features are with
probability 1), the training targets can be fitted exactly, for every target vector, exactly
when p >= n. That point, p = n, is the interpolation threshold: below it the fit leaves an
(n - p)-dimensional part of the targets unexplained; above it the exact fits form a
(p - n)-dimensional family, of which minimum-norm least squares (the pseudo-inverse) picks the
one of smallest norm. With K outputs fitted at once (one-hot classes under squared loss) the
model has p K parameters, so the threshold in parameters is n K.

Source: Belkin, Hsu, Ma and Mandal, "Reconciling modern machine-learning practice and the
classical bias-variance trade-off", PNAS 116 (2019): random Fourier features on MNIST with
n = 10^4 show the test-risk peak at N = n features (Fig. 2), and for networks the threshold is
read in parameters, n K for K classes (Fig. 3, "interpolation threshold").

Answers: `interpolating` (0-based indices of the feature counts that fit every target exactly),
`threshold_parameters` (n K), `unfit_dims` (per feature count, max(n - p, 0)) and
`exact_fit_dims` (per feature count, max(p - n, 0)).
"""
from __future__ import annotations

import math

from graders.numeric import Count, Numbers
from graders.problem import Mistake, Problem


def _whole(q, name):
    v = q[name]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v != int(v) or v < 1:
        raise ValueError(f"{name} must be a whole number >= 1, not {v!r}")
    return int(v)


def _read(q):
    n, k = _whole(q, "n_samples"), _whole(q, "outputs")
    ps = [_whole({"p": p}, "p") for p in q["feature_counts"]]
    if not ps:
        raise ValueError("feature_counts must be a non-empty list")
    return n, k, ps


def _answers(q, *, strict=False, per_output=True, swapped=False):
    n, k, ps = _read(q)
    unfit = [max(n - p, 0) for p in ps]
    free = [max(p - n, 0) for p in ps]
    return {
        "interpolating": [i for i, p in enumerate(ps) if (p > n if strict else p >= n)],
        "threshold_parameters": n * k if per_output else n,
        "unfit_dims": free if swapped else unfit,
        "exact_fit_dims": unfit if swapped else free,
    }


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    return {key: v for key, v in wrong.items() if v != right[key]}


class InterpolationThresholdBasics(Problem):
    id = "tds-b2-interpolation-threshold"
    title = "The interpolation threshold: when a model can fit every training example"
    strand = "basics"
    kind = "basics"
    assignment = "tds-basics"
    # A: Belkin et al.'s MNIST subset (n = 10^4, 10 classes); B: a CIFAR-10-sized subset;
    # C and D: the small regressions of this module's worked problem and practice item.
    variants = {
        "A": {"n_samples": 10000, "outputs": 10, "feature_counts": [2000, 9999, 10000, 40000]},
        "B": {"n_samples": 4000, "outputs": 10, "feature_counts": [4000, 4001, 1000, 3999]},
        "C": {"n_samples": 40, "outputs": 1, "feature_counts": [10, 39, 40, 41, 120]},
        "D": {"n_samples": 64, "outputs": 2, "feature_counts": [16, 64, 63, 256]},
    }
    checks = {
        "interpolating": Numbers(exact=True),
        "threshold_parameters": Count(),
        "unfit_dims": Numbers(exact=True),
        "exact_fit_dims": Numbers(exact=True),
    }
    cells = {"check_threshold": ("interpolating", "threshold_parameters", "unfit_dims", "exact_fit_dims")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("threshold-excluded",
                "p = n was counted as not interpolating; with as many features as examples the square "
                "feature matrix is invertible, so the fit is already exact.",
                lambda q: _changed(q, strict=True),
                instant="whether a feature matrix with as many features as examples already fits them exactly."),
        Mistake("outputs-forgotten",
                "the threshold in parameters forgot the outputs: each of the K outputs has its own p "
                "weights, so the model interpolates at n K parameters.",
                lambda q: _changed(q, per_output=False),
                instant="the weights each output of the model has of its own."),
        Mistake("dimensions-swapped",
                "the two dimension counts are swapped: too few features leave n - p directions of the "
                "targets unfit, too many leave p - n free directions among the exact fits.",
                lambda q: _changed(q, swapped=True),
                instant="which count belongs to the examples and which to the features."),
    )


PROBLEM = InterpolationThresholdBasics()
