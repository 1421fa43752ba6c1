"""tds-p4-metric-artefacts: the notebook runs the module's run, and in every variant the same model's exact
match tracks p^L from its own per-token accuracy while looking abrupt.

The claim checked is Schaeffer, Miranda and Koyejo 2023 (NeurIPS), §2: with independent token errors, exact
match on L-token answers is p^L, near zero while p is well above chance, then steep. There is no printed number
to compare a toy run with; the test checks the effect itself, in every variant.
"""
from pathlib import Path

import numpy as np

from graders import problems
from graders.problems.tds_practice import tds_p4_metric_artefacts as module
from tests.problems.notebook_cells import cell_sources

P = problems.get("tds-p4-metric-artefacts")
NOTEBOOK = Path(__file__).resolve().parents[3] / "source" / "tds-practice" / "tds-p4-metric-artefacts.pct.py"


def test_the_notebook_holds_the_run_verbatim():
    import inspect
    setup = cell_sources(NOTEBOOK)["setup"]
    for function in (module.make_task, module.train_checkpoints):
        assert inspect.getsource(function).strip() in setup


def test_reference_scores_on_a_small_table():
    pred, true = [[1, 2, 3], [4, 5, 6]], [[1, 2, 3], [4, 0, 6]]
    assert module.reference_token_accuracy(pred, true) == 5 / 6
    assert module.reference_exact_match(pred, true) == 1 / 2


def test_exact_match_tracks_independence_and_looks_abrupt_in_every_variant():
    for name, q in P.variants.items():
        r = P.solve(q)
        p, em, ind = map(np.array, (r["token_accuracies"], r["exact_matches"], r["independent_exact"]))
        assert np.max(np.abs(em - ind)) < 0.05, (name, em, ind)             # tracks p^L
        hidden = p[em < 0.02]                                              # checkpoints that read as no ability
        assert hidden.size >= 2 and hidden.max() >= 0.3, (name, p, em)    # ... while p is 3x chance or more
        assert em[-1] > 0.8 and p[-1] > 0.95, (name, p, em)                # and the ability is there at the end
        rise = np.diff(em)
        assert rise.max() > 0.4, (name, em)                                # one doubling of steps does most of it
        assert np.all(np.diff(p) > -0.01), (name, p)                       # p improves steadily


def test_the_cross_entropy_probability_is_not_the_accuracy():
    # exp(-CE) lags the arg-max accuracy while the model is unsure: the probability mistake is a real one.
    for q in P.variants.values():
        rows = module.measured(q)
        assert any(acc - prob > 0.2 for acc, _, _, prob in rows)
