"""tds-e6-lr-batch-coupling: the best rate against a Monte Carlo search on a noisy quadratic, the
small-batch limit against Goyal et al.'s printed linear rule, and the overshoot batch against the
rates themselves."""
import math

import numpy as np

from graders import problems

P = problems.get("tds-e6-lr-batch-coupling")


def test_best_step_on_a_noisy_quadratic_matches_the_model():
    """McCandlish et al. 2018 §2: on a quadratic with Hessian H, gradient G and per-example
    covariance Sigma, the expected loss after a step eps along a batch-B gradient is minimised at
    eps_max / (1 + B_noise/B), with eps_max = |G|^2 / G'HG and B_noise = tr(H Sigma) / G'HG. The
    expectation is estimated from sampled batches, the best eps by a fine grid."""
    rng = np.random.default_rng(3)
    dim = 4
    h = np.diag([3.0, 1.5, 0.7, 0.2])
    theta = np.array([1.0, -0.5, 2.0, 1.0])
    g = h @ theta
    sigma_sqrt = np.diag([4.0, 2.0, 1.0, 3.0])
    eps_max = (g @ g) / (g @ h @ g)
    b_noise = np.trace(h @ sigma_sqrt @ sigma_sqrt) / (g @ h @ g)
    q = {"b0": 8, "eta0": eps_max / (1 + b_noise / 8), "b_noise": b_noise, "batches": [2, 8, 32, 128],
         "factor": 1.5}
    r = P.solve(q)
    assert math.isclose(r["eta_max"], eps_max, rel_tol=1e-12)
    grid = np.linspace(0.01, 0.5, 491)
    for batch, predicted in zip(q["batches"], r["optimal_rates"]):
        noise = rng.standard_normal((200000, dim)) @ sigma_sqrt / math.sqrt(batch)
        grads = g + noise
        # expected loss after the step, exactly quadratic in eps: estimate its two coefficients
        lin = -np.mean(grads @ h @ theta)
        quad = 0.5 * np.mean(np.einsum("ni,ij,nj->n", grads, h, grads))
        best = grid[int(np.argmin(lin * grid + quad * grid**2))]
        assert abs(best - predicted) <= 0.01 + 0.03 * predicted, (batch, best, predicted)


def test_small_batches_follow_goyal_linear_rule():
    """Goyal et al. 2017, §2: eta = 0.1 * kn / 256 for ResNet-50 on ImageNet (0.1 at 256 images). Far
    below the noise scale the model's best rate is that rule to first order in B/B_noise."""
    q = {"b0": 256, "eta0": 0.1, "b_noise": 1e9, "batches": [512, 1024, 8192], "factor": 1.5}
    r = P.solve(q)
    for batch, rate in zip(q["batches"], r["optimal_rates"]):
        assert math.isclose(rate, 0.1 * batch / 256, rel_tol=1e-4)


def test_the_linear_rule_overshoots_by_the_factor_at_the_overshoot_batch():
    for q in P.variants.values():
        r = P.solve(q)
        b = r["overshoot_batch"]
        linear = q["eta0"] * b / q["b0"]
        best = r["eta_max"] / (1 + q["b_noise"] / b)
        assert math.isclose(linear / best, q["factor"], rel_tol=1e-9)
        assert r["optimal_rates"][q["batches"].index(q["b0"])] == q["eta0"] or math.isclose(
            r["optimal_rates"][q["batches"].index(q["b0"])], q["eta0"])
