"""w1-memory: the reference reproduces what the ZeRO paper prints, and grading discriminates."""
import math

import pytest
import sympy

from graders import problems
from graders.problems.worked.w1_memory import per_device
from tests.problems.worked.mistakes import assert_loses_points_where_made

P1 = problems.get("w1-memory")
GB = 1e9  # the paper's GB are 10^9 bytes: 7.5B x 16 bytes is printed as 120GB

# Rajbhandari et al. 2020, Figure 1: Psi = 7.5B, N_d = 64, K = 12.
FIGURE_1 = {0: 120, 1: 31.4, 2: 16.6, 3: 1.9}

# Rajbhandari et al. 2020, Table 1: per-device GB by DP degree for 7.5B, 128B and 1T
# parameters; columns are stages 1, 2, 3 (P_os, P_os+g, P_os+g+p), as printed.
TABLE_1 = {
    (7.5e9, 1): (120, 120, 120), (7.5e9, 4): (52.5, 41.3, 30), (7.5e9, 16): (35.6, 21.6, 7.5),
    (7.5e9, 64): (31.4, 16.6, 1.88), (7.5e9, 256): (30.4, 15.4, 0.47), (7.5e9, 1024): (30.1, 15.1, 0.12),
    (128e9, 1): (2048, 2048, 2048), (128e9, 4): (896, 704, 512), (128e9, 16): (608, 368, 128),
    (128e9, 64): (536, 284, 32), (128e9, 256): (518, 263, 8), (128e9, 1024): (513, 257, 2),
    (1e12, 1): (16000, 16000, 16000), (1e12, 4): (7000, 5500, 4000), (1e12, 16): (4750, 2875, 1000),
    (1e12, 64): (4187.5, 2218.75, 250), (1e12, 256): (4046.9, 2054.7, 62.5),
    (1e12, 1024): (4011.7, 2013.7, 15.6),
}


def printed_tolerance(value: float) -> float:
    """One unit in the last printed digit: the table shows 3 to 5 significant figures, and its
    128B column drops fractions (513.5 is printed 513, 257.75 is printed 257)."""
    digits = 3 if value < 1000 else 5
    return 10 ** (math.floor(math.log10(abs(value))) - digits + 1) + 1e-9


@pytest.mark.parametrize("stage, printed", FIGURE_1.items())
def test_reproduces_zero_figure_1(stage, printed):
    got = P1.solve({"N": 7.5e9, "P": 64, "K": 12, "stage": stage})["per_device_bytes"] / GB
    assert abs(got - printed) <= 0.05, (stage, got)


@pytest.mark.parametrize("key, printed", TABLE_1.items())
def test_reproduces_zero_table_1(key, printed):
    n, dp = key
    for stage, value in zip((1, 2, 3), printed):
        got = P1.solve({"N": n, "P": dp, "K": 12, "stage": stage})["per_device_bytes"] / GB
        assert abs(got - value) <= printed_tolerance(value) + 0.01 * (value < 1), (n, dp, stage, got, value)


def test_adam_is_sixteen_bytes_per_parameter():
    answers = P1.solve({"N": 1, "P": 1, "K": 12, "stage": 0})
    assert answers["bytes_per_param"] == 16 and answers["total_bytes"] == 16


def test_the_expression_agrees_with_the_numbers_for_every_stage():
    N, P, K = sympy.symbols("N P K", positive=True)
    for stage in range(4):
        params = {"N": 3e9, "P": 48, "K": 12, "stage": stage}
        answers = P1.solve(params)
        value = answers["per_device_expr"].subs({sympy.Symbol("N", positive=True): 3e9,
                                                 sympy.Symbol("P", positive=True): 48,
                                                 sympy.Symbol("K", positive=True): 12})
        assert float(value) == pytest.approx(answers["per_device_bytes"])


def test_stages_only_ever_reduce_memory():
    values = [per_device(7e10, 256, 12, s) for s in range(4)]
    assert values == sorted(values, reverse=True)


def test_unknown_stage_is_refused():
    with pytest.raises(ValueError):
        P1.solve({"N": 1e9, "P": 8, "K": 12, "stage": 4})


def test_variants_give_different_answers():
    per_device_values = {P1.solve(p)["per_device_bytes"] for p in P1.variants.values()}
    assert len(per_device_values) == 4


@pytest.mark.parametrize("mistake", P1.mistakes, ids=lambda m: m.name)
def test_each_mistake_loses_points_and_is_named(mistake):
    named = False
    for params in P1.variants.values():
        answers = {**P1.solve(params), **mistake.wrong(params)}
        result = P1.grade(params, answers)
        if result.score < result.max_score:
            named = named or any(mistake.feedback in line for line in result.feedback)
    assert named


# Issue 27: 'sharded-a-stage-early' gave the right answers in variant D (stage 3), where there is
# no stage beyond to slip into. A mistake that can be made in a variant must lose points there; one
# that cannot says so with an empty wrong answer, decided from the parameters.
@pytest.mark.parametrize("label", "ABCD")
@pytest.mark.parametrize("mistake", P1.mistakes, ids=lambda m: m.name)
def test_a_mistake_that_can_be_made_loses_points_in_every_variant(mistake, label):
    assert_loses_points_where_made(P1, mistake, label)


@pytest.mark.parametrize("stage, early, late", [(0, True, False), (1, True, True), (2, True, True),
                                                (3, False, True)])
def test_stage_slips_exist_only_where_a_neighbouring_stage_does(stage, early, late):
    params = {"N": 1e9, "P": 8, "K": 12, "stage": stage}
    slips = {m.name: m.wrong(params) for m in P1.mistakes if m.name.startswith("sharded-a-stage")}
    assert bool(slips["sharded-a-stage-early"]) is early
    assert bool(slips["sharded-a-stage-late"]) is late


@pytest.mark.parametrize("answers", [
    {}, None, {"bytes_per_param": "16"}, {"total_bytes": float("nan")}, {"per_device_expr": "16*N"},
    {"per_device_expr": sympy.Symbol("x")}, {"per_device_bytes": [1, 2]}, {"bytes_per_param": object()},
])
def test_bad_answers_score_zero_without_raising(answers):
    result = P1.grade(P1.variants["A"], answers)
    assert result.score == 0 and len(result.feedback) == len(P1.checks)


def test_feedback_never_contains_the_reference_value():
    params = P1.variants["B"]
    reference = P1.solve(params)
    result = P1.grade(params, {"bytes_per_param": 12, "total_bytes": 1.0, "per_device_bytes": 2.0,
                               "per_device_expr": sympy.Symbol("N", positive=True)})
    text = "\n".join(result.feedback)
    for value in (reference["total_bytes"], reference["per_device_bytes"]):
        assert f"{value:g}" not in text and str(int(value)) not in text
    assert str(reference["per_device_expr"]) not in text


# --- every variant could run, and the notebook draws it -----------------------------------

import ast
from pathlib import Path

import matplotlib
import nbformat

from graders import hardware
from graders.problems.worked.w1_memory import DEVICES
from tests.problems.notebook_cells import cell_sources

NOTEBOOK = Path(__file__).resolve().parents[3] / "source" / "worked" / "w1-memory.pct.py"


@pytest.mark.parametrize("label", "ABCD")
def test_every_variant_fits_its_device(label):
    """At its stage a variant's model states fit in 80% of its device's memory (datasheet figure),
    and its stage is the lowest one that does: the stage is needed, not arbitrary."""
    q, device = P1.variants[label], DEVICES[label]
    assert device in hardware.ACCELERATORS.values()
    fits = [per_device(q["N"], q["P"], q["K"], s) <= 0.8 * device.memory_bytes for s in range(4)]
    assert fits[q["stage"]]
    assert not any(fits[:q["stage"]])


def _literal(name):
    tree = ast.parse(NOTEBOOK.read_text())
    return ast.literal_eval(next(node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                                 and any(getattr(t, "id", None) == name for t in node.targets)))


def test_notebook_variants_and_devices_match_the_problem():
    """The setup cell's VARIANTS and DEVICES literals are the problem's, with datasheet memory."""
    assert _literal("VARIANTS") == P1.variants
    assert _literal("DEVICES") == {label: {"device": d.name, "memory_bytes": d.memory_bytes}
                                   for label, d in DEVICES.items()}


@pytest.mark.parametrize("label", "ABCD")
def test_notebook_figure_draws_the_variants_four_stages(label, monkeypatch):
    """The figure cell (solution side, no graders) draws per_device at stages 0-3 and the device line."""
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    built = nbformat.read(NOTEBOOK.with_name("w1-memory.ipynb"), as_version=4)
    teaching = [c.source for c in built.cells if c.cell_type == "code"
                and ("example_stages = {" in c.source or "def draw_zero_stages" in c.source)]
    assert len(teaching) == 2
    drawn = []
    monkeypatch.setattr(plt, "show", lambda: drawn.append(plt.gcf()))
    namespace = {}
    for source in teaching:
        exec(compile(source, "teaching", "exec"), namespace)  # noqa: S102 - our own notebook
    namespace.update(params=P1.variants[label], VARIANT=label, DEVICES=_literal("DEVICES"),
                     N=sympy.Symbol("N", positive=True), P=sympy.Symbol("P", positive=True),
                     K=sympy.Symbol("K", positive=True))
    figure_cell = cell_sources(NOTEBOOK)["figure_variant"]
    assert "graders" not in figure_cell
    exec(compile(figure_cell, "figure_variant", "exec"), namespace)  # noqa: S102
    ax = drawn[-1].axes[0]
    heights = [bar.get_height() * GB for bar in ax.patches]
    q = P1.variants[label]
    assert heights == pytest.approx([per_device(q["N"], q["P"], q["K"], s) for s in range(4)], rel=1e-9)
    outlined = [i for i, bar in enumerate(ax.patches) if bar.get_linewidth() == 2]
    assert outlined == [q["stage"]]
    (line,) = ax.get_lines()
    assert line.get_ydata()[0] * GB == pytest.approx(DEVICES[label].memory_bytes)
    plt.close("all")
