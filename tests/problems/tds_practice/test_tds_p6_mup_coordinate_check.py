"""tds-p6-mup-coordinate-check: the harness is the notebook's, the settings are Table 8's, and the
coordinate check and the sweep show muP's effect in every variant.

Primary source: Yang et al., "Tensor Programs V" (2022, arXiv 2203.03466). Table 8 (the Adam column
of the multiplier form, which microsoft/mup's MuAdam and MuReadout implement) prints: input weights
and all biases, Adam LR 1; output weights, multiplier 1/fan_in and Adam LR 1; hidden weights, Adam
LR 1/fan_in. Relative to a base width n0 the fan_in factors become the width multiplier m = n/n0.
The coordinate statistic is mup/coord_check.py's default `l1`, `torch.abs(x).mean()`. The section
number of the paper's own description of coordinate checking was not verified here.
"""
import inspect
import math
from pathlib import Path

import torch

from graders import problems
from graders.problems.tds_practice import tds_p6_mup_coordinate_check as module
from tests.problems.notebook_cells import cell_sources

P = problems.get("tds-p6-mup-coordinate-check")
NOTEBOOK = Path(__file__).resolve().parents[3] / "source" / "tds-practice" / "tds-p6-mup-coordinate-check.pct.py"


def test_the_notebook_holds_the_harness_verbatim():
    setup = cell_sources(NOTEBOOK)["setup"]
    for fn in (module.make_batch, module.make_mlp, module.train_mlp):
        assert inspect.getsource(fn).strip() in setup


def test_settings_follow_table_8_relative_to_the_base_width():
    # Table 8, Adam: hidden LR ∝ 1/fan_in, output multiplier ∝ 1/fan_in, input/bias/output LR ∝ 1.
    # With fan_in = n for hidden and output weights, the ratio to the base model is m = n / n0.
    for n, n0, lr in ((1024, 64, 1e-3), (32, 128, 3e-4), (96, 96, 0.01)):
        m = n / n0
        assert module.reference_settings(n, n0, lr) == [lr, lr / m, lr, 1 / m]
    assert module.reference_settings(64, 64, 0.5) == module.sp_settings(0.5)


def test_measure_is_the_mup_packages_l1():
    x = torch.tensor([[1.0, -3.0], [0.5, -0.5]])
    assert math.isclose(module.reference_measure(x), float(torch.abs(x).mean()))


def _slope(widths, values):
    """Least-squares slope of log(value) against log(width)."""
    lx = [math.log(w) for w in widths]
    ly = [math.log(v) for v in values]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def test_every_variant_shows_the_blow_up_under_sp_and_flat_coordinates_under_mup():
    # The check's signature: under SP the logits climb with width at least in proportion to it
    # over the range (the update of the readout sums n correlated terms, and the hidden layer's
    # growth feeds it), the hidden layer climbs too; under muP both stay within a factor 2.
    for name, q in P.variants.items():
        r = P.solve(q)
        widths = q["coord_widths"]
        assert _slope(widths, r["output_coords_sp"]) > 0.8, name
        assert r["hidden_coords_sp"][-1] > 1.3 * r["hidden_coords_sp"][0], name
        for key in ("output_coords_mup", "hidden_coords_mup"):
            assert abs(_slope(widths, r[key])) < 0.2, (name, key)
            assert max(r[key]) < 2 * min(r[key]), (name, key)


def test_every_variant_moves_the_best_rate_under_sp_and_not_under_mup():
    for name, q in P.variants.items():
        r = P.solve(q)
        narrow, wide = r["best_lrs_sp"]
        assert wide <= narrow / 4, name          # at least two grid points (factors of 2) lower
        assert r["best_lrs_mup"][0] == r["best_lrs_mup"][1] == narrow, name


def test_a_scaling_mistake_breaks_the_check():
    # dividing every rate by m (input weights and biases too) starves the wide models: the logits
    # no longer stay flat, which is what the check is for
    q = P.variants["B"]
    wrong = module._answers(q, settings_kind="all-scaled")
    assert max(wrong["output_coords_mup"]) > 2 * min(wrong["output_coords_mup"])
