"""tds-c2-lazy-versus-rich: real two-layer networks show the exponents the picture predicts, and the
variants' runs are real runs."""
import math

from graders import problems
from graders.problems.tds_concept.tds_c2_lazy_versus_rich import feature_movement

P = problems.get("tds-c2-lazy-versus-rich")

# (parametrisation, width1, width2, seed) behind each variant's runs, in order.
RUNS = {
    "A": [("ntk", 128, 2048, 0), ("mup", 128, 2048, 0), ("mup", 64, 1024, 1)],
    "B": [("mup", 256, 4096, 2), ("ntk", 64, 1024, 2), ("ntk", 256, 1024, 3)],
    "C": [("ntk", 512, 4096, 4), ("mup", 64, 512, 4), ("mup", 128, 2048, 5)],
    "D": [("mup", 64, 256, 6), ("ntk", 128, 512, 6), ("mup", 256, 2048, 7), ("ntk", 64, 4096, 7)],
}


def test_ntk_movement_falls_like_one_over_sqrt_width_and_mup_stays_put():
    # Lee et al. 2019 (arXiv 1902.06720), §2: relative change of the weights ~ n^(-1/2) under the
    # NTK parametrisation (the figure that plots it was not read by the search tool); Yang & Hu 2021 (arXiv 2011.14522), §3: Theta(1) feature updates under muP.
    ntk = [feature_movement(n, "ntk") for n in (256, 1024)]
    mup = [feature_movement(n, "mup") for n in (256, 1024)]
    assert abs(ntk[1] / ntk[0] - 0.5) < 0.05
    assert abs(mup[1] / mup[0] - 1) < 0.1
    r = P.solve({"base_width": 256, "widths": [256, 1024], "base_movement": ntk[0], "target_movement": 0.001,
                 "runs": [[256, ntk[0], 1024, ntk[1]], [256, mup[0], 1024, mup[1]]]})
    assert abs(r["ntk_movements"][1] / ntk[1] - 1) < 0.05
    assert r["run_regimes"] == [0, 1]


def test_the_variants_runs_are_real_runs_and_both_regimes_appear():
    for label, q in P.variants.items():
        regimes = P.solve(q)["run_regimes"]
        for (p, n1, n2, seed), run, regime in zip(RUNS[label], q["runs"], regimes):
            if max(n1, n2) <= 1024:   # the widest runs take seconds each; the narrow ones check the data
                assert run[0] == n1 and run[2] == n2
                assert math.isclose(feature_movement(n1, p, seed=seed), run[1], rel_tol=1e-3)
                assert math.isclose(feature_movement(n2, p, seed=seed), run[3], rel_tol=1e-3)
            assert regime == (0 if p == "ntk" else 1)
        assert sorted(set(regimes)) == [0, 1]
