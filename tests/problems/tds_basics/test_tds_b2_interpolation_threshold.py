"""tds-b2-interpolation-threshold: random feature matrices fit every target exactly from p = n on."""
import numpy as np

from graders import problems

P = problems.get("tds-b2-interpolation-threshold")


def test_belkin_mnist_network_threshold_is_n_times_k():
    # Belkin et al. 2019 (PNAS), Fig. 3: a one-hidden-layer network on n = 4*10^3 MNIST images,
    # K = 10 classes; "the interpolation threshold ... is observed at n*K" = 4*10^4 parameters.
    assert P.solve({"n_samples": 4000, "outputs": 10, "feature_counts": [1]})["threshold_parameters"] == 40_000


def test_minimum_norm_fit_interpolates_exactly_when_p_reaches_n():
    rng = np.random.default_rng(1)
    n = 12
    q = {"n_samples": n, "outputs": 1, "feature_counts": [4, 11, 12, 13, 30]}
    r = P.solve(q)
    y = rng.normal(size=n)
    for i, p in enumerate(q["feature_counts"]):
        X = np.maximum(rng.normal(size=(n, 5)) @ rng.normal(size=(5, p)), 0) + rng.normal(size=(n, p))
        w = np.linalg.pinv(X) @ y
        assert (np.linalg.norm(X @ w - y) < 1e-8) == (i in r["interpolating"])
        assert np.linalg.matrix_rank(X) == p - r["exact_fit_dims"][i] == n - r["unfit_dims"][i]


def test_bad_answers_score_zero_without_raising():
    q = P.variants["C"]
    r = P.grade(q, {k: "x" for k in P.checks})
    assert r.score == 0
