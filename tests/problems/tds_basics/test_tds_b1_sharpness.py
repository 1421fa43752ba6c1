"""tds-b1-sharpness: the sharpness is torch's Hessian eigenvalue, and GD diverges exactly past 2/sharpness."""
import numpy as np
import torch

from graders import problems

P = problems.get("tds-b1-sharpness")


def test_sharpness_is_the_top_eigenvalue_of_the_autograd_hessian():
    for q in P.variants.values():
        H = torch.tensor(q["hessian"], dtype=torch.float64)
        hessian = torch.autograd.functional.hessian(lambda x: 0.5 * x @ H @ x, torch.zeros(3, dtype=torch.float64))
        assert np.isclose(P.solve(q)["sharpness"], float(torch.linalg.eigvalsh(hessian)[-1]), rtol=1e-12)


def test_gradient_descent_converges_below_and_diverges_above_the_limit():
    # Cohen et al. 2021, §2: GD on a quadratic diverges along the top eigenvector once eta > 2/sharpness.
    for q in P.variants.values():
        H, limit = np.array(q["hessian"]), P.solve(q)["stable_lr_limit"]
        for lr, grows in ((0.98 * limit, False), (1.02 * limit, True)):
            x = np.ones(3)
            for _ in range(2000):
                x = x - lr * H @ x
            assert (np.linalg.norm(x) > 1.0) == grows


def test_stable_rates_agree_with_simulation():
    for q in P.variants.values():
        H = np.array(q["hessian"])
        for i, lr in enumerate(q["lrs"]):
            x = np.ones(3)
            for _ in range(3000):
                x = x - lr * H @ x
                if np.linalg.norm(x) > 1e6:      # diverged: stop before it overflows
                    break
            assert (i in P.solve(q)["stable_lrs"]) == (np.linalg.norm(x) < 1e-3)


def test_bad_answers_score_zero_without_raising():
    q = P.variants["A"]
    for bad in (None, "5.1", float("nan"), [1, 2], {"x": 1}):
        r = P.grade(q, {"sharpness": bad, "stable_lr_limit": bad, "stable_lrs": bad})
        assert r.score == 0 and len(r.feedback) == 3
