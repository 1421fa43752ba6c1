"""tds-e1-edge-of-stability: multipliers, the threshold and the blow-up time against gradient descent itself."""
import math

import numpy as np
import torch

from graders import problems

P = problems.get("tds-e1-edge-of-stability")


def test_steps_to_grow_is_the_first_step_past_the_growth_factor():
    for q in P.variants.values():
        r = P.solve(q)
        a = torch.tensor(q["curvatures"], dtype=torch.float64)
        x = torch.ones_like(a, requires_grad=True)
        opt = torch.optim.SGD([x], lr=q["lr"])
        sizes = []
        for _ in range(r["steps_to_grow"]):
            opt.zero_grad()
            (0.5 * (a * x * x).sum()).backward()
            opt.step()
            sizes.append(float(x.detach().abs().max()))
        assert sizes[-1] >= q["growth"] and (len(sizes) < 2 or sizes[-2] < q["growth"])
        assert np.allclose(x.detach().numpy(), np.array(r["multipliers"]) ** r["steps_to_grow"])


def test_threshold_is_two_over_the_sharpness():
    # Cohen et al. 2021, §2: "if eta > 2/a, gradient descent diverges" on a quadratic of curvature a.
    for q in P.variants.values():
        r = P.solve(q)
        assert math.isclose(r["threshold_lr"] * max(q["curvatures"]), 2.0)
        assert r["unstable"] == [i for i, a in enumerate(q["curvatures"]) if q["lr"] * a > 2]


def test_the_hovering_mechanism_is_credited_to_damian_nichani_and_lee():
    """Cohen et al. 2021 observed that the sharpness hovers at the threshold; the account of how
    (growth along the top direction lowers the sharpness itself: self-stabilisation) is Damian,
    Nichani and Lee, ICLR 2023. The notebook credits each with its own part."""
    import re

    from tests.conftest import REPO
    text = (REPO / "source" / "tds-exercises" / "tds-e1-edge-of-stability.pct.py").read_text()
    prose = " ".join(re.sub(r"^\s*#\s?", "", line) for line in text.splitlines())
    mechanism = re.search(r"[^.]*(?:its own sharpness|the sharpness itself)[^.]*\.(?:[^.]*\.){0,2}", prose)
    assert mechanism, "the notebook explains why a run past the threshold can hover"
    assert "Damian, Nichani and Lee" in mechanism.group(0) and "ICLR 2023" in mechanism.group(0), mechanism.group(0)
    assert not re.search(r"(?:its own sharpness|the sharpness itself)[^.]{0,40}\(Cohen", prose)
