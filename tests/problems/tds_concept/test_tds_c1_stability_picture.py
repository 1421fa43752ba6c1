"""tds-c1-stability-picture: the trajectories are torch SGD's on the quadratic, and the regimes what they do."""
import torch

from graders import problems

P = problems.get("tds-c1-stability-picture")


def test_trajectories_are_torch_sgd_iterates():
    for q in P.variants.values():
        r = P.solve(q)
        for lr, path in zip(q["lrs"], r["trajectories"]):
            x = torch.tensor(q["x0"], dtype=torch.float64, requires_grad=True)
            opt = torch.optim.SGD([x], lr=lr)
            got = [float(x.detach())]
            for _ in range(q["steps"]):
                opt.zero_grad()
                (0.5 * q["curvature"] * x * x).backward()
                opt.step()
                got.append(float(x.detach()))
            assert all(abs(a - b) <= 1e-9 * max(1.0, abs(b)) for a, b in zip(got, path))


def test_regimes_match_what_the_trajectories_do():
    for q in P.variants.values():
        r = P.solve(q)
        for path, regime in zip(r["trajectories"], r["regimes"]):
            flips = any(a * b < 0 for a, b in zip(path, path[1:]))
            grows = abs(path[-1]) > abs(path[0])
            assert regime == (2 if grows else 1 if flips else 0)
        assert sorted(set(r["regimes"])) == [0, 1, 2]
