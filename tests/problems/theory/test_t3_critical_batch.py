"""t3-critical-batch against McCandlish et al. 2018, "An Empirical Model of Large-Batch Training".

What the paper states (arXiv 1812.06162, §2; restated in Kaplan et al. 2020, §5.1), and what is
checked here:
- on a locally quadratic loss the best step along a mini-batch gradient of size B lowers the loss by
  dL_max / (1 + B_noise/B), at the learning rate eps_max / (1 + B_noise/B), with
  B_noise = tr(H Sigma) / (G^T H G): checked by Monte Carlo on a noisy quadratic;
- S/S_min = 1 + B_noise/B and E/E_min = 1 + B/B_noise, so (S/S_min - 1)(E/E_min - 1) = 1, and
  B_crit = E_min/S_min = B_noise; at B = B_crit a run takes twice the minimum steps and twice the
  minimum examples;
- the noise scale is measured with the unbiased two-batch estimators of Appendix A (here imported
  from e10-noise-scale, whose tests check them on sampled gradients).
"""
import math

import numpy as np
import pytest
import sympy

from graders import problems
from graders.problems.exercises import e10_noise_scale as e10

P = problems.get("t3-critical-batch")


def params(**kw):
    base = {"b_small": 16, "b_big": 1024, "g2_small": 0.2125, "g2_big": 0.01563,
            "batches": [32, 128, 512, 2048], "s_min": 20_000, "overhead": 0.1, "speedup": 1.8,
            "max_steps": 30_000}
    base.update(kw)
    return base


def exact_measurement(g2, trace, b_small=8, b_big=512):
    """Noise-free squared norms E|G_B|^2 = |G|^2 + tr(Sigma)/B at two batch sizes."""
    return {"b_small": b_small, "b_big": b_big, "g2_small": g2 + trace / b_small, "g2_big": g2 + trace / b_big}


# --- (a) the paper's model ----------------------------------------------------------------------
def test_optimal_step_on_a_noisy_quadratic_matches_section_2():
    # L(theta) = theta^T H theta / 2, per-example gradients G + noise with covariance Sigma.
    rng = np.random.default_rng(0)
    dim = 6
    h = np.diag(rng.uniform(0.5, 2.0, dim))
    theta = rng.normal(size=dim)
    g = h @ theta
    root = rng.normal(size=(dim, dim)) * 0.8
    sigma = root @ root.T
    b_noise = np.trace(h @ sigma) / (g @ h @ g)
    dl_max = 0.5 * (g @ g) ** 2 / (g @ h @ g)
    eps_max = (g @ g) / (g @ h @ g)
    loss = lambda th: 0.5 * np.einsum("...i,ij,...j->...", th, h, th)
    for batch in (1, 4, 32):
        eps = eps_max / (1 + b_noise / batch)
        draws = 100_000
        # the mean of `batch` independent draws of covariance Sigma has covariance Sigma/batch
        noise = rng.standard_normal((draws, dim)) @ np.linalg.cholesky(sigma / batch).T
        gains = loss(theta) - loss(theta - eps * (g + noise))
        se = gains.std(ddof=1) / math.sqrt(draws)
        predicted = dl_max / (1 + b_noise / batch)
        assert abs(gains.mean() - predicted) < 4 * se
        # and it is the best learning rate: 20% either side does worse in expectation
        for other in (0.8 * eps, 1.2 * eps):
            expected = other * (g @ g) - 0.5 * other ** 2 * (g @ h @ g + np.trace(h @ sigma) / batch)
            assert expected < predicted


def test_b_noise_is_the_imported_e10_estimate_and_recovers_the_truth():
    for g2, trace in ((0.0125, 3.2), (4e-4, 2.6), (0.3, 0.9)):
        q = params(**exact_measurement(g2, trace))
        r = P.solve(q)
        assert r["b_noise"] == pytest.approx(trace / g2, rel=1e-9)
        assert r["b_noise"] == e10.PROBLEM.solve({**exact_measurement(g2, trace), "batch": 1})["b_simple"]


@pytest.mark.parametrize("label", "ABCD")
def test_tradeoff_hyperbola_and_critical_batch(label):
    q = P.variants[label]
    r = P.solve(q)
    noise, s_min = r["b_noise"], q["s_min"]
    e_min = s_min * noise                     # B_crit = E_min / S_min = B_noise
    for b, s, e in zip(q["batches"], r["steps"], r["examples"]):
        assert (s / s_min - 1) * (e / e_min - 1) == pytest.approx(1, rel=1e-12)
        assert e == pytest.approx(b * s, rel=1e-12)
    assert [i for i, b in enumerate(q["batches"]) if b > noise] == r["diminishing"]


def test_limits_of_the_model():
    q = params()
    noise = P.solve(q)["b_noise"]
    at = P.solve(params(batches=[noise, noise * 1e-6, noise * 1e6]))
    s_min = q["s_min"]
    assert at["steps"][0] == pytest.approx(2 * s_min) and at["examples"][0] == pytest.approx(2 * s_min * noise)
    assert at["doubling_speedups"][0] == pytest.approx(4 / 3)
    assert at["doubling_speedups"][1] == pytest.approx(2, rel=1e-5)          # perfect scaling
    assert at["examples"][1] == pytest.approx(s_min * noise, rel=1e-5)        # E -> E_min
    assert at["doubling_speedups"][2] == pytest.approx(1, rel=1e-5)          # no gain
    assert at["steps"][2] == pytest.approx(s_min, rel=1e-5)                   # S -> S_min


@pytest.mark.parametrize("label", "ABCD")
def test_the_three_limits_mean_what_they_say(label):
    q = P.variants[label]
    r = P.solve(q)
    noise, s_min = r["b_noise"], q["s_min"]
    steps = lambda b: s_min * (1 + noise / b)
    # near-linear: doubling at the limit gives exactly the wanted speedup, and less beyond it
    b = r["near_linear_limit"]
    assert steps(b) / steps(2 * b) == pytest.approx(q["speedup"], rel=1e-12)
    assert steps(1.01 * b) / steps(2.02 * b) < q["speedup"]
    # overhead: E/E_min at the limit is exactly 1 + overhead
    b = r["overhead_batch"]
    assert b * steps(b) / (s_min * noise) == pytest.approx(1 + q["overhead"], rel=1e-12)
    # deadline: exactly max_steps at the deadline batch, and its cost
    b = r["deadline_batch"]
    assert steps(b) == pytest.approx(q["max_steps"], rel=1e-12)
    assert r["deadline_cost"] == pytest.approx(b * steps(b) / (s_min * noise), rel=1e-12)
    assert r["deadline_cost"] == pytest.approx(q["max_steps"] / (q["max_steps"] - s_min), rel=1e-12)


def test_near_linear_limit_by_solving_symbolically():
    b, n, s = sympy.symbols("b n s", positive=True)
    steps = lambda x: 1 + n / x
    solution = sympy.solve(sympy.Eq(steps(b) / steps(2 * b), s), b)
    q = params()
    noise = P.solve(q)["b_noise"]
    values = [float(x.subs({n: noise, s: q["speedup"]})) for x in solution]
    assert P.solve(q)["near_linear_limit"] == pytest.approx(max(values), rel=1e-12)


@pytest.mark.parametrize("change", [{"batches": []}, {"batches": [0]}, {"speedup": 2.0}, {"speedup": 1.0},
                                    {"max_steps": 20_000}, {"overhead": float("nan")}, {"s_min": "1"},
                                    {"b_big": 8}])
def test_solve_refuses_invalid_inputs(change):
    with pytest.raises(ValueError):
        P.solve(params(**change))


# --- (b) grading ----------------------------------------------------------------------------------
def test_variants_are_distinct():
    solved = {k: P.solve(q) for k, q in P.variants.items()}
    assert len({round(r["b_noise"]) for r in solved.values()}) == 4
    assert len({tuple(r["diminishing"]) for r in solved.values()}) >= 3
    assert len({round(r["deadline_cost"], 6) for r in solved.values()}) >= 3


@pytest.mark.parametrize("mistake", P.mistakes, ids=lambda m: m.name)
def test_every_mistake_loses_points_with_its_feedback(mistake):
    shown = False
    for q in P.variants.values():
        right = P.solve(q)
        result = P.grade(q, {**right, **mistake.wrong(q)})
        if result.score < result.max_score:
            shown = True
            assert any(mistake.feedback in line for line in result.feedback)
            assert not any(f"{right['b_noise']:.4g}" in line for line in result.feedback)
    assert shown


def test_mistake_named_on_the_key_it_breaks():
    q = P.variants["A"]
    right = P.solve(q)
    result = P.grade(q, {**right, "overhead_batch": right["b_noise"] / q["overhead"]}, keys=["overhead_batch"])
    assert result.score == 0 and "B_noise / o" in result.feedback[0]
    result = P.grade(q, {**right, "diminishing": [0, 1]}, keys=["diminishing"])
    assert result.score == 0 and "below the critical batch" in result.feedback[0]


@pytest.mark.parametrize("bad", [None, "256", float("nan"), [1.0], {"x": 1}, True])
def test_bad_numbers_score_zero(bad):
    q = P.variants["C"]
    keys = ["b_noise", "deadline_cost", "steps", "diminishing"]
    result = P.grade(q, {**P.solve(q), **{k: bad for k in keys}}, keys=keys)
    assert result.score == 0 and len(result.feedback) == 4


def test_missing_answers_and_wrong_lengths_score_zero():
    q = P.variants["B"]
    assert P.grade(q, {}).score == 0
    assert P.grade(q, "not a dict").score == 0
    right = P.solve(q)
    result = P.grade(q, {**right, "steps": right["steps"][:-1]}, keys=["steps"])
    assert result.score == 0
    result = P.grade(q, {**right, "diminishing": [float(i) + 0.5 for i in right["diminishing"]]},
                     keys=["diminishing"])
    assert result.score == 0


@pytest.mark.parametrize("label", "ABCD")
def test_every_batch_an_answer_names_could_be_run(label):
    """The batches the answers name are global batches a run could use: at least one device's batch,
    and the candidates lie in the text's range of 0.5M to 4M tokens at 1,024 to 2,048 tokens each."""
    q = P.variants[label]
    r = P.solve(q)
    for key in ("b_noise", "near_linear_limit", "overhead_batch", "deadline_batch"):
        assert r[key] >= q["b_small"], (key, r[key])
    if label == "D":
        assert all(0.5e6 <= b * 2048 <= 4.2e6 for b in q["batches"])
        assert r["overhead_batch"] * 1024 >= 0.25e6
