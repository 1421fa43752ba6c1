"""tds-b4-grokking: the fit and generalisation steps are read at 'at least the threshold', in logged steps."""
import pytest

from graders import problems

P = problems.get("tds-b4-grokking")


def test_power_et_al_figure_one_shape():
    # Power et al. 2022, Fig. 1's caption: training accuracy close to perfect at < 10^3 steps,
    # "close to 10^6 steps for validation accuracy to reach that level", and "very little evidence
    # of any generalization until 10^5 steps": a delay of about a thousand times
    q = {"steps": [10, 100, 1000, 10000, 100000, 1000000], "train_acc": [0.1, 0.7, 1.0, 1.0, 1.0, 1.0],
         "val_acc": [0.01, 0.01, 0.02, 0.03, 0.3, 0.99], "threshold": 0.99}
    r = P.solve(q)
    assert (r["fit_step"], r["generalise_step"], r["delay_factor"]) == (1000, 1000000, 1000.0)


def test_a_log_that_never_generalises_is_an_error():
    with pytest.raises(ValueError):
        P.solve({"steps": [1, 2], "train_acc": [1.0, 1.0], "val_acc": [0.1, 0.2], "threshold": 0.9})


def test_variants_differ():
    assert len({P.solve(q)["delay_factor"] for q in P.variants.values()}) >= 2
    assert len({P.solve(q)["fit_step"] for q in P.variants.values()}) == 4
