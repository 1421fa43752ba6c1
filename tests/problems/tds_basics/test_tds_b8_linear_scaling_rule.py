"""tds-b8-linear-scaling-rule: eta = eta_0 * k (linear) and eta_0 * sqrt(k) (square root), k = B / B_0."""
import numpy as np

from graders import problems

P = problems.get("tds-b8-linear-scaling-rule")


def test_goyal_et_al_reference_rates():
    # Goyal et al. 2017, section 5.1: eta = 0.1 * kn / 256; Table 1 and section 5.2: kn = 8k (8192)
    # gives eta = 3.2; Fig. 3 legends: 16k -> 6.4, 32k -> 12.8, 64k -> 25.6; Table 2a: the
    # square-root alternative at 8k is 0.1 * sqrt(32).
    r = P.solve({"base_lr": 0.1, "base_batch": 256, "new_batches": [8192, 16384, 32768, 65536]})
    assert np.allclose(r["linear_lrs"], [3.2, 6.4, 12.8, 25.6])
    assert np.isclose(r["sqrt_lrs"][0], 0.1 * np.sqrt(32))


def test_the_two_rules_agree_at_the_base_batch_and_part_beyond_it():
    for q in P.variants.values():
        same = P.solve({**q, "new_batches": [q["base_batch"]]})
        assert np.isclose(same["linear_lrs"][0], q["base_lr"]) and np.isclose(same["sqrt_lrs"][0], q["base_lr"])
        r = P.solve(q)
        for b, lin, sq in zip(q["new_batches"], r["linear_lrs"], r["sqrt_lrs"]):
            assert np.isclose(lin / q["base_lr"], (sq / q["base_lr"]) ** 2)
            assert (lin > sq) == (b > q["base_batch"])


def test_variant_a_is_goyal_and_reaches_the_8k_rate():
    r = P.solve(P.variants["A"])
    assert 3.2 in [round(x, 9) for x in r["linear_lrs"]]
