"""tds-b5-width-multiplier: muP's Adam rules (Table 3 of Tensor Programs V) at the variants' widths."""
import numpy as np

from graders import problems

P = problems.get("tds-b5-width-multiplier")


def test_base_width_keeps_the_base_rate_and_rates_fall_as_one_over_m():
    for q in P.variants.values():
        r = P.solve(q)
        for w, m, lr, out in zip(q["widths"], r["width_multipliers"], r["hidden_lrs"], r["output_multipliers"]):
            assert np.isclose(m * q["base_width"], w)
            assert np.isclose(lr * w, q["base_lr"] * q["base_width"])     # eta * fan_in constant
            assert np.isclose(out * m, 1.0)


def test_agrees_with_the_rate_tds_t1_derives():
    t1 = problems.get("tds-t1-mup-transfer")
    q = P.variants["A"]
    assert np.allclose(P.solve(q)["hidden_lrs"], t1.solve(q)["sp_best_lrs"])
