"""tds-p1-random-features: the notebook runs the module's task, the fit is the minimum-norm one, the peak sits at n."""
from pathlib import Path

import numpy as np

from graders import problems
from graders.problems.tds_practice import tds_p1_random_features as module
from tests.problems.notebook_cells import cell_sources

P = problems.get("tds-p1-random-features")
NOTEBOOK = Path(__file__).resolve().parents[3] / "source" / "tds-practice" / "tds-p1-random-features.pct.py"


def test_the_notebook_holds_make_task_verbatim():
    import inspect
    assert inspect.getsource(module.make_task).strip() in cell_sources(NOTEBOOK)["setup"]


def test_reference_fit_is_numpys_minimum_norm_least_squares():
    for A, b in module.probe_calls(P.variants["A"]):
        expected = np.linalg.lstsq(np.array(A), np.array(b), rcond=None)[0]
        assert np.allclose(module.reference_fit(A, b), expected, rtol=1e-9, atol=1e-12)


def test_the_peak_is_at_the_interpolation_threshold_and_training_error_vanishes_past_it():
    # Belkin et al. 2019, Fig. 2: the test-risk peak of random-features least squares sits at N = n.
    # The item's point is that peak, so in every variant the threshold is in the sweep and the
    # largest test error is there, not at a neighbouring count (variant A with seed 31 peaked at 36).
    for name, q in P.variants.items():
        assert q["n_train"] in q["feature_counts"], name
        r = P.solve(q)
        assert r["peak_features"] == q["n_train"], (name, r["peak_features"], q["n_train"])
        for p, train in zip(q["feature_counts"], r["train_errors"]):
            assert (train < 1e-12) == (p >= q["n_train"])
        assert r["test_errors"][-1] < 0.5 * max(r["test_errors"])     # the second descent


def test_ridge_removes_the_peak():
    q = P.variants["B"]
    ridge = module.errors(q, "ridge")[0]
    assert max(ridge) < 0.2 * max(P.solve(q)["test_errors"])
