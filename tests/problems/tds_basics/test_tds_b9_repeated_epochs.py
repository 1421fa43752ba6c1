"""tds-b9-repeated-epochs: epochs D / U, repetitions D / U - 1, and the four-epoch budget 4 U."""
import numpy as np

from graders import problems

P = problems.get("tds-b9-repeated-epochs")


def test_galactica_epochs():
    # Taylor et al. 2022 (Galactica), section 5.1: "We train the models for 450 billion tokens, or
    # approximately 4.25 epochs", over a corpus of 106 billion tokens.
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
