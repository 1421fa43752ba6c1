"""tds-b9-repeated-epochs: epochs D / U, repetitions D / U - 1, and the four-epoch budget 4 U.

Galactica's "4.25 epochs" (450B tokens over its 106B-token corpus, Taylor et al. 2022) is quoted
from the paper as remembered; the stored copies searched did not show that sentence, so it is
checked here only as arithmetic on those two counts."""
import numpy as np

from graders import problems

P = problems.get("tds-b9-repeated-epochs")


def test_galactica_epochs():
    r = P.solve({"unique_tokens": 106e9, "budgets": [450e9]})
    assert round(r["epochs"][0], 2) == 4.25
    assert np.isclose(r["repetitions"][0], r["epochs"][0] - 1)


def test_one_pass_has_no_repetition_and_four_epochs_are_three_repetitions():
    for q in P.variants.values():
        u = q["unique_tokens"]
        r = P.solve({"unique_tokens": u, "budgets": [u, 4 * u]})
        assert np.allclose(r["epochs"], [1, 4]) and np.allclose(r["repetitions"], [0, 3])
        assert np.isclose(P.solve(q)["four_epoch_budget"], 4 * u)


def test_every_variant_has_a_budget_inside_and_outside_four_epochs():
    for q in P.variants.values():
        epochs = P.solve(q)["epochs"]
        assert min(epochs) <= 4 < max(epochs)
