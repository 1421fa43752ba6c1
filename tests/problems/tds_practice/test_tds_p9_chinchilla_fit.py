"""tds-p9-chinchilla-fit: the notebook runs the module's table and optimiser, the objective is Approach 3's,
and in every variant the fit recovers Besiroglu et al.'s law from the noisy table.

Printed numbers the tests use: Besiroglu, Erdil, Barnett and You 2024 (arXiv 2404.10102), the refit
E = 1.8172, A = 482.01, B = 2085.43, alpha = 0.3478, beta = 0.3658 (checked against the paper's HTML and
abstract through the search tool); Hoffmann et al. 2022 (arXiv 2203.15556), Appendix D.2, Huber delta = 1e-3
and eq. (10) as printed, E = 1.69, A = 406.4, B = 410.7, alpha = 0.34, beta = 0.28; Table 3, 67B parameters
and 1.5T tokens at 5.76e23 FLOPs. Hoffmann et al.'s grid of initialisations is quoted from the paper as
remembered; only four of its points are used here.
"""
import math
from pathlib import Path

import numpy as np
import torch

from graders import problems
from graders.problems.common.scaling_laws import allocation
from graders.problems.tds_practice import tds_p9_chinchilla_fit as module
from tests.problems.notebook_cells import cell_sources

P = problems.get("tds-p9-chinchilla-fit")
NOTEBOOK = Path(__file__).resolve().parents[3] / "source" / "tds-practice" / "tds-p9-chinchilla-fit.pct.py"
BESIROGLU = {"E": 1.8172, "A": 482.01, "B": 2085.43, "alpha": 0.3478, "beta": 0.3658}
HOFFMANN_PRINTED = (1.69, 406.4, 410.7, 0.34, 0.28)


def test_the_notebook_holds_the_harness_verbatim():
    import inspect
    setup = cell_sources(NOTEBOOK)["setup"]
    for function in (module.make_runs, module.starting_points, module.lbfgs):
        assert inspect.getsource(function).strip() in setup


def test_the_table_is_drawn_from_besiroglus_refit_and_hoffmanns_delta():
    assert module.REFIT == BESIROGLU and module.DELTA == 1e-3
    q = {"seed": 0, "noise": 0.0, "spoiled": 0, "per_budget": 3, "compute": 1e22, "budgets": [1e20]}
    n, d, loss = module.make_runs(q).T
    law = BESIROGLU["E"] + BESIROGLU["A"] / n ** BESIROGLU["alpha"] + BESIROGLU["B"] / d ** BESIROGLU["beta"]
    assert np.allclose(loss, law, rtol=1e-12) and np.allclose(6 * n * d, 1e20, rtol=1e-12)


def test_the_objective_is_a_sum_of_hubers_of_log_residuals():
    theta = [6.0, 7.5, 0.6, 0.34, 0.36]
    log_n, log_d = np.log([1e8, 1e9, 1e10]), np.log([1e10, 1e11, 2e11])
    pred = np.log(np.exp(theta[0] - theta[3] * log_n) + np.exp(theta[1] - theta[4] * log_d) + np.exp(theta[2]))
    r = np.array([5e-4, -2e-3, 0.05])
    h = np.where(np.abs(r) <= 1e-3, 0.5 * r ** 2, 1e-3 * (np.abs(r) - 5e-4))
    got = float(module.reference_objective(theta, log_n, log_d, pred - r, 1e-3))
    assert math.isclose(got, h.sum(), rel_tol=1e-9)


def test_the_fit_recovers_the_law_in_every_variant():
    # Noise of 0.5-1% and a few spoiled runs: the exponents come back within 0.03 (Besiroglu et al.'s standard
    # errors are 0.02 on about 240 runs) and the tokens per parameter within a quarter of the truth.
    for name, q in P.variants.items():
        r = P.solve(q)
        alpha, beta = r["fitted_exponents"]
        assert abs(alpha - BESIROGLU["alpha"]) < 0.03 and abs(beta - BESIROGLU["beta"]) < 0.03, (name, alpha, beta)
        n, d, _, _ = allocation(q["compute"], *BESIROGLU.values())
        assert abs(r["tokens_per_parameter"] / (d / n) - 1) < 0.25, (name, r["tokens_per_parameter"], d / n)
        assert abs(r["fitted_constants"][0] - BESIROGLU["E"]) < 0.1, name


def test_the_refit_agrees_with_table_3_and_the_printed_constants_do_not():
    # Hoffmann et al. Table 3: 67B parameters, 1.5T tokens at 5.76e23 FLOPs (22 tokens per parameter).
    table = 1.5e12 / 67e9
    n, d, _, _ = allocation(5.76e23, *BESIROGLU.values())
    assert abs(d / n / table - 1) < 0.25
    n, d, _, _ = allocation(5.76e23, *HOFFMANN_PRINTED)
    assert d / n > 3 * table


def test_all_starts_reach_the_same_minimum_on_variant_a():
    rows = module.make_runs(P.variants["A"])
    logs = [torch.tensor(np.log(rows[:, i]), dtype=torch.float64) for i in range(3)]
    values = [module.lbfgs(lambda th: module.reference_objective(th, *logs, 1e-3), s)[0]
              for s in module.starting_points()]
    assert max(values) - min(values) < 1e-9 * max(values) + 1e-12, values
