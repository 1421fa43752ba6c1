"""tds-e9-sharpness-power-iteration: the convergence counts against a real power iteration on torch
Hessian-vector products, and PyHessian's stopping rule as its code prints it."""
import math

import sympy
import torch

from graders import problems

P = problems.get("tds-e9-sharpness-power-iteration")


def power_iteration_on_a_quadratic(eigenvalues, products, seed=0):
    """Rayleigh quotients R_0..R_products of power iteration on Hessian-vector products (Pearlmutter)
    of a quadratic loss whose Hessian has these eigenvalues in a random basis, started with equal
    weight on every eigendirection."""
    torch.manual_seed(seed)
    n = len(eigenvalues)
    Q, _ = torch.linalg.qr(torch.randn(n, n, dtype=torch.float64))
    H = Q @ torch.diag(torch.tensor(eigenvalues, dtype=torch.float64)) @ Q.T
    theta = torch.randn(n, dtype=torch.float64, requires_grad=True)
    grad = torch.autograd.grad(0.5 * theta @ H @ theta, theta, create_graph=True)[0]
    v = Q @ torch.ones(n, dtype=torch.float64) / math.sqrt(n)
    out = []
    for _ in range(products + 1):
        Hv = torch.autograd.grad(grad @ v, theta, retain_graph=True)[0]
        out.append(float(v @ Hv))
        v = Hv / Hv.norm()
    return out


def test_counts_and_stop_match_a_real_power_iteration():
    for q in P.variants.values():
        r = P.solve(q)
        R = power_iteration_on_a_quadratic(q["eigenvalues"], max(r["iterations_needed"], r["stop_iteration"]) + 1)
        lam = r["found_eigenvalue"]
        err = [abs(x - lam) / abs(lam) for x in R]
        k = r["iterations_needed"]
        assert err[k] <= q["tol"] and (k == 0 or err[k - 1] > q["tol"])
        s = r["stop_iteration"]
        changes = [abs(R[i] - R[i - 1]) / abs(R[i - 1]) for i in range(1, s + 1)]
        assert changes[-1] < q["tol"] or s == q["max_iter"] - 1
        assert all(c >= q["tol"] for c in changes[:-1])
        assert math.isclose(err[s], r["error_at_stop"], rel_tol=1e-6)


def test_it_finds_the_largest_magnitude_and_the_near_tie_stops_early():
    assert P.solve(P.variants["C"])["found_eigenvalue"] < 0          # negative, larger in size
    b = P.solve(P.variants["B"])
    assert b["error_at_stop"] > 5 * P.variants["B"]["tol"]          # the rule stopped far from converged


def test_error_expression_is_exact_for_two_directions():
    r = P.solve(P.variants["A"])
    rho, k = sympy.Rational(3, 4), 7
    R = power_iteration_on_a_quadratic([1.0, 0.75], k)
    expr = r["rayleigh_error_expr"].subs({sympy.Symbol("rho", positive=True): rho, sympy.Symbol("k", positive=True): k})
    assert math.isclose(float(expr), 1.0 - R[k], rel_tol=1e-9)


def test_pyhessian_defaults_as_its_code_prints_them():
    """PyHessian's pyhessian/hessian.py: `def eigenvalues(self, maxIter=100, tol=1e-3, top_n=1)`, stopping when
    abs(eigenvalue - tmp_eigenvalue) / (abs(eigenvalue) + 1e-6) < tol (read in amirgholami/PyHessian).
    Variants A-C use those defaults. The paper (Yao et al. 2020) prints no iteration count that this test
    could check, so none is asserted."""
    for v in "ABC":
        assert (P.variants[v]["tol"], P.variants[v]["max_iter"]) == (1e-3, 100)
    # with those defaults and ρ = 0.5 the leading-order count is ln(1e-3)/(2 ln 0.5) = 4.98 -> 5 products
    assert P.solve({"eigenvalues": [2.0, 1.0], "tol": 1e-3, "max_iter": 100})["iterations_estimate"] == 5
