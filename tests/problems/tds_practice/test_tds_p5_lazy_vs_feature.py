"""tds-p5-lazy-vs-feature: the harness is the notebook's, follows Tensor Programs V's Table 3 for muP,
and in every variant the hidden weights' relative change falls like width^-1/2 under NTK and stays
flat under muP."""
import inspect
import math
from pathlib import Path

import numpy as np

from graders import problems
from graders.problems.tds_practice import tds_p5_lazy_vs_feature as module
from tests.problems.notebook_cells import cell_sources

P = problems.get("tds-p5-lazy-vs-feature")
NOTEBOOK = Path(__file__).resolve().parents[3] / "source" / "tds-practice" / "tds-p5-lazy-vs-feature.pct.py"


def test_the_notebook_holds_the_harness_verbatim():
    setup = cell_sources(NOTEBOOK)["setup"]
    for function in (module.make_task, module.train_width):
        assert inspect.getsource(function).strip() in setup


def test_the_mup_branch_follows_table_3_of_tensor_programs_v():
    # Yang et al. 2022 (arXiv 2203.03466), Table 3, muP for SGD: input weights init variance
    # 1/fan_in and SGD LR eta * fan_out; output weights init variance 1/fan_in^2 and SGD LR
    # eta / fan_in. Here fan_in of the input layer is dim, its fan_out and the output's fan_in the width.
    q = dict(P.variants["A"], steps=1)
    width, d = 4096, q["dim"]
    W0, WT = module.train_width(q, width, "mup")
    assert abs(float(W0.var()) - 1 / d) < 0.05 / d
    # one step of the input weights is eta * fan_out times the gradient: reproduce it by hand
    import torch
    x, y = module.make_task(q)
    gen = torch.Generator().manual_seed(q["seed"] + width)
    W = torch.randn(width, d, generator=gen, dtype=torch.float64) / d ** 0.5
    a = torch.randn(width, generator=gen, dtype=torch.float64) / width
    assert abs(float(a.var()) - 1 / width ** 2) < 0.05 / width ** 2
    W.requires_grad_()
    loss = 0.5 * ((torch.tanh(x @ W.T) @ a - y) ** 2).mean()
    (g,) = torch.autograd.grad(loss, [W])
    assert torch.allclose(WT, W.detach() - q["lr_mup"] * width * g, rtol=1e-12, atol=1e-14)


def test_the_measures_are_the_plain_ones():
    for final, initial in module.probe_change_calls(P.variants["B"]):
        f, i = np.array(final), np.array(initial)
        assert math.isclose(module.reference_change(final, initial),
                            np.linalg.norm(f - i) / np.linalg.norm(i), rel_tol=1e-12)
    for widths, values in module.probe_slope_calls(P.variants["B"]):
        lx, ly = np.log(widths), np.log(values)
        slope = ((lx - lx.mean()) * (ly - ly.mean())).sum() / ((lx - lx.mean()) ** 2).sum()
        assert math.isclose(module.reference_slope(widths, values), slope, rel_tol=1e-9, abs_tol=1e-12)


def test_every_variant_is_lazy_under_ntk_and_learns_features_under_mup():
    # Lee et al. 2019 (NeurIPS, arXiv 1902.06720): under the NTK parametrisation the relative change
    # of the weights over training is O(width^-1/2) (the section and figure that print it were not
    # verified here); Yang and Hu 2021: under muP the features move by a width-independent amount.
    # The item's point is that contrast, in every variant.
    for name, q in P.variants.items():
        r = P.solve(q)
        assert -0.6 < r["slope_ntk"] < -0.4, (name, r["slope_ntk"])
        assert abs(r["slope_mup"]) < 0.1, (name, r["slope_mup"])
        assert r["changes_ntk"][-1] < 0.5 * r["changes_ntk"][0], name
        assert min(r["changes_mup"]) > 0.5 * max(r["changes_mup"]), name
        assert min(r["changes_mup"]) > 5 * r["changes_ntk"][-1], name
