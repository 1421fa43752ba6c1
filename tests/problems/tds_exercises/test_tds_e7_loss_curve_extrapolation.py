"""tds-e7-loss-curve-extrapolation: the closed-form fit against the printed laws the variants are
read from, and against a numerical least-squares fit."""
import math

import numpy as np

from graders import problems

P = problems.get("tds-e7-loss-curve-extrapolation")


def kaplan(n, s):
    """Kaplan et al. 2020, eq. (1.6) with Table 3: alpha_N = 0.077, N_c = 6.5e13, alpha_S = 0.76, S_c = 2.1e3."""
    return (6.5e13 / n) ** 0.077 + (2.1e3 / s) ** 0.76


def chinchilla(n, d):
    """Hoffmann et al. 2022, App. D.2 eq. (10): E = 1.69, A = 406.4, B = 410.7, alpha = 0.34, beta = 0.28."""
    return 1.69 + 406.4 / n**0.34 + 410.7 / d**0.28


def test_exact_points_of_kaplans_law_give_back_its_printed_constants():
    n, steps = 1.5e9, [1000.0, 2000.0, 4000.0]
    r = P.solve({"t": steps, "loss": [kaplan(n, s) for s in steps], "t_end": 2.5e5})
    assert math.isclose(r["alpha"], 0.76, rel_tol=1e-9)
    assert math.isclose(r["A"], 2.1e3**0.76, rel_tol=1e-8)
    assert math.isclose(r["E"], (6.5e13 / n) ** 0.077, rel_tol=1e-9)
    assert math.isclose(r["loss_end"], kaplan(n, 2.5e5), rel_tol=1e-9)


def test_exact_points_of_chinchillas_law_give_back_its_printed_constants():
    n, tokens = 7e10, [1e10, 4e10, 1.6e11]
    r = P.solve({"t": tokens, "loss": [chinchilla(n, d) for d in tokens], "t_end": 1.4e12})
    assert math.isclose(r["alpha"], 0.28, rel_tol=1e-9)
    assert math.isclose(r["A"], 410.7, rel_tol=1e-8)
    assert math.isclose(r["E"], 1.69 + 406.4 / n**0.34, rel_tol=1e-9)


def test_the_variants_are_the_printed_laws_rounded_as_a_log_prints_them():
    laws = {"A": (kaplan, 1.5e9), "B": (kaplan, 1.2e8), "C": (chinchilla, 7e10), "D": (chinchilla, 2.8e11)}
    for label, (law, n) in laws.items():
        q = P.variants[label]
        assert q["loss"] == [round(law(n, t), 4) for t in q["t"]]
        r = P.solve(q)
        assert abs(r["loss_end"] - law(n, q["t_end"])) < 2e-3     # rounding costs little at the end
        assert r["error_without_floor"] < 0                       # no floor: too optimistic


def test_closed_form_matches_a_numerical_fit_through_the_points():
    for q in P.variants.values():
        r = P.solve(q)
        t, losses = np.array(q["t"], dtype=float), np.array(q["loss"])
        fitted = r["E"] + r["A"] * t ** -r["alpha"]
        assert np.allclose(fitted, losses, rtol=0, atol=1e-10)
