"""tds-b7-warmup: eta_t = eta_peak * min(1, t / W), and Ma & Yarats's untuned warmup of 2 / (1 - beta2) steps."""
import numpy as np

from graders import problems

P = problems.get("tds-b7-warmup")


def test_goyal_gradual_warmup_reaches_the_scaled_rate_at_the_end_of_the_ramp():
    # Goyal et al. 2017, sections 2.2 and 5.2: gradual warmup linearly to eta = 3.2 (kn = 8k) over
    # 5 epochs. An epoch of ImageNet's ~1.28M images at 8192 per step is ~156 steps; at the end of
    # the ramp the rate is 3.2, halfway it is 1.6 (their ramp starts from 0.1, this item's from 0).
    w = 5 * 156
    r = P.solve({"peak_lr": 3.2, "warmup_steps": w, "beta1": 0.9, "beta2": 0.999, "at": [0, w // 2, w, 10 * w]})
    assert np.allclose(r["rates"], [0.0, 1.6, 3.2, 3.2])


def test_untuned_warmup_is_two_over_one_minus_beta2():
    # Ma & Yarats 2021 (AAAI), abstract: "linear warmup over 2 / (1 - beta2) training iterations";
    # Adam's default beta2 = 0.999 gives 2000 steps, GPT-3's and Llama 2's 0.95 give 40.
    for beta2, steps in ((0.999, 2000.0), (0.95, 40.0), (0.98, 100.0)):
        r = P.solve({"peak_lr": 1e-3, "warmup_steps": 100, "beta1": 0.9, "beta2": beta2, "at": [1]})
        assert np.isclose(r["untuned_warmup"], steps)
        assert np.isclose(r["warmup_multiple"], 100 / steps)


def test_every_variant_asks_a_step_inside_and_a_step_past_the_ramp():
    for q in P.variants.values():
        assert min(q["at"]) < q["warmup_steps"] < max(q["at"])
        r = P.solve(q)
        assert max(r["rates"]) == q["peak_lr"]
        assert r["warmup_multiple"] > 1        # every published warmup is longer than the untuned floor
