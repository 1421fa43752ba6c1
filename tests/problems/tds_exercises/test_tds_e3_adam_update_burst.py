"""tds-e3-adam-update-burst: the derived step sizes against PyTorch's Adam itself, and PaLM's β2 schedule."""
import math

import sympy
import torch

from graders import problems

P = problems.get("tds-e3-adam-update-burst")


def adam_steps(b1, b2, burst, quiet, loud):
    """|Δw|/η for each step of a burst after `quiet` steps of unit gradient, with torch's Adam."""
    w = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([w], lr=1.0, betas=(b1, b2), eps=0.0)
    out = []
    for step in range(quiet + loud):
        w.grad = torch.full((1,), 1.0 if step < quiet else burst, dtype=torch.float64)
        before = float(w.detach())
        opt.step()
        if step >= quiet:
            out.append(abs(float(w.detach()) - before))
    return out


def test_first_and_peak_steps_match_torch_adam():
    for q in P.variants.values():
        r = P.solve(q)
        # a quiet stretch long enough that Adam's bias correction is 1 to ~1e-9
        quiet = math.ceil(21 / -math.log10(q["beta2"]))
        steps = adam_steps(q["beta1"], q["beta2"], q["burst"], quiet, r["peak_step"] + 3)
        assert math.isclose(steps[0], r["first_update_ratio"], rel_tol=1e-6)
        assert math.isclose(max(steps), r["peak_update_ratio"], rel_tol=1e-6)
        assert steps.index(max(steps)) + 1 == r["peak_step"]


def test_catch_up_is_the_first_step_with_v_within_tolerance():
    for q in P.variants.values():
        r = P.solve(q)
        k2, b2, j = q["burst"] ** 2, q["beta2"], r["catch_up_steps"]
        v = lambda n: k2 - (k2 - 1) * b2 ** n   # noqa: E731
        assert v(j) >= (1 - q["tol"]) * k2 > v(j - 1)


def test_limit_and_the_two_regimes():
    """β2 = 0.95 (LLaMA, Touvron et al. 2023 §2.3) gives a first step below η for a tenfold burst;
    Adam's default 0.999 (Kingma and Ba 2015, Algorithm 1) gives one well above it."""
    r = P.solve(P.variants["A"])
    b1, b2, k = sympy.symbols("beta1 beta2 k", positive=True)
    assert sympy.simplify(sympy.limit(r["first_update_expr"].subs({b1: sympy.Rational(9, 10), b2: sympy.Rational(19, 20)}),
                                      k, sympy.oo) - r["burst_limit_expr"].subs({b1: sympy.Rational(9, 10), b2: sympy.Rational(19, 20)})) == 0
    assert P.solve(P.variants["A"])["first_update_ratio"] < 1 < P.solve(P.variants["B"])["first_update_ratio"]


def test_palm_schedule_printed_in_the_paper():
    """PaLM (Chowdhery et al. 2022, §5, Training setup) prints β1 = 0.9 and β2 = 1.0 - k^-0.8 with k the
    step number, 'more stable than the standard β2 = 0.99'. At step 10,000 that is 0.99937 (variant C);
    its memory 1/(1 - β2) = 10000^0.8 ≈ 1585 steps is sixteen times 0.99's hundred, and the large-burst
    limit of the first step grows as 1/sqrt(1 - β2)."""
    beta2_palm = 1.0 - 10_000 ** -0.8
    assert abs(beta2_palm - P.variants["C"]["beta2"]) < 1e-5
    assert round(1 / (1 - beta2_palm)) == 1585
    lim = P.solve({"beta1": 0.9, "beta2": beta2_palm, "burst": 1e6, "tol": 0.01})["first_update_ratio"]
    lim_099 = P.solve({"beta1": 0.9, "beta2": 0.99, "burst": 1e6, "tol": 0.01})["first_update_ratio"]
    assert math.isclose(lim, 0.1 / math.sqrt(10_000 ** -0.8), rel_tol=1e-4)
    assert math.isclose(lim_099, 1.0, rel_tol=1e-4)     # (1 - 0.9)/sqrt(0.01) = 1: the burst's first step is η
