"""e06-checkpointing: the reference against the printed sources, the variants, the mistakes, bad inputs."""
import ast
import math
import pathlib

import pytest
import sympy

from graders import problems

PROBLEM = problems.get("e06-checkpointing")
NOTEBOOK = pathlib.Path(__file__).resolve().parents[3] / "source" / "exercises" / "e06-checkpointing.pct.py"

# Daly 2006 (FGCS 22, 303-312), captions of Figs. 3, 4 and 5: delta = 5 min, R = 10 min,
# Ts = 500 h, and "The new model predicts tau_opt = ..." for three values of M.
# (M in hours, tau_opt in minutes as printed, half a unit of the last printed digit).
DALY_PRINTED = [
    (24.0, 117.0, 0.5),
    (6.0, 57.0, 0.5),
    (0.25, 9.1, 0.05),
]

# Kokolis et al. 2025 (HPCA; arXiv 2410.21680), failure model MTTF = 1/(N_nodes r_f) with
# RSC-1's r_f = 6.50 failures per 1000 node-days, projected to 16,384 GPUs ("1.8 hours")
# and 131,072 GPUs ("0.23 hours"); 8 GPUs per node. (gpus, printed hours, rounding).
KOKOLIS_PRINTED = [
    (16_384, 1.8, 0.05),
    (131_072, 0.23, 0.005),
]
RSC1_RATE_PER_NODE_DAY = 6.50 / 1000


def _params(delta_seconds=300.0, mtbf_seconds=86_400.0):
    """Parameters that give a chosen write time and job MTBF (one node, one byte per 'parameter')."""
    return {"N": delta_seconds, "bytes_per_param": 1, "write_bandwidth": 1.0,
            "n_nodes": 1, "failure_rate": 86_400.0 / mtbf_seconds}


@pytest.mark.parametrize("mtbf_hours, printed_minutes, rounding", DALY_PRINTED)
def test_daly_interval_matches_daly_figures(mtbf_hours, printed_minutes, rounding):
    """Daly's higher-order interval reproduces the optimum his paper prints for delta = 5 min."""
    answers = PROBLEM.solve(_params(300.0, mtbf_hours * 3600))
    assert abs(answers["daly_interval_seconds"] / 60 - printed_minutes) <= rounding


@pytest.mark.parametrize("gpus, printed_hours, rounding", KOKOLIS_PRINTED)
def test_job_mtbf_matches_kokolis_projection(gpus, printed_hours, rounding):
    """The job MTBF from a per-node-day rate reproduces Kokolis et al.'s projected MTTFs."""
    params = {"N": 1, "bytes_per_param": 1, "write_bandwidth": 1.0,
              "n_nodes": gpus // 8, "failure_rate": RSC1_RATE_PER_NODE_DAY}
    assert abs(PROBLEM.solve(params)["job_mtbf_seconds"] / 3600 - printed_hours) <= rounding


def test_young_interval_minimises_first_order_waste():
    """Young's interval is the minimum of delta/tau + tau/(2M): nearby intervals waste more."""
    answers = PROBLEM.solve(_params(57.0, 6_490.0))
    delta, mtbf, tau = 57.0, 6_490.0, answers["young_interval_seconds"]

    def waste(t):
        return delta / t + t / (2 * mtbf)

    assert waste(tau) == pytest.approx(answers["waste_fraction"], rel=1e-12)
    assert waste(tau) < waste(tau * 0.99) and waste(tau) < waste(tau * 1.01)
    assert answers["waste_fraction"] == pytest.approx(math.sqrt(2 * delta / mtbf), rel=1e-12)


def test_daly_tends_to_young_minus_two_thirds_delta():
    """For delta << Theta Daly's series is Young's interval minus about 2 delta / 3."""
    answers = PROBLEM.solve(_params(10.0, 1e7))
    assert answers["young_interval_seconds"] - answers["daly_interval_seconds"] \
        == pytest.approx(2 * 10.0 / 3, rel=1e-3)


def test_daly_uses_mtbf_when_the_write_is_too_long():
    """Daly's interval is the MTBF Theta itself once delta >= 2 Theta."""
    answers = PROBLEM.solve(_params(1000.0, 400.0))
    assert answers["daly_interval_seconds"] == pytest.approx(400.0)


def test_interval_expr_is_youngs():
    """interval_expr is sqrt(2 delta Theta) in the problem's symbols (Theta the MTBF)."""
    delta, mtbf = sympy.symbols("delta Theta", positive=True)
    expr = PROBLEM.solve(PROBLEM.variants["A"])["interval_expr"]
    assert sympy.simplify(expr - sympy.sqrt(2 * delta * mtbf)) == 0


def test_variants_differ():
    """The four variants give four different sets of numbers."""
    keys = ("checkpoint_bytes", "write_seconds", "job_mtbf_seconds", "young_interval_seconds")
    rows = {tuple(round(PROBLEM.solve(p)[k], 6) for k in keys) for p in PROBLEM.variants.values()}
    assert len(rows) == 4


def test_notebook_variants_match_problem():
    """The setup cell's VARIANTS literal is the problem's variants, exactly."""
    tree = ast.parse(NOTEBOOK.read_text())
    literal = next(node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                   and any(getattr(t, "id", None) == "VARIANTS" for t in node.targets))
    assert ast.literal_eval(literal) == PROBLEM.variants


@pytest.mark.parametrize("mistake", PROBLEM.mistakes, ids=lambda m: m.name)
def test_every_mistake_loses_points_with_its_feedback(mistake):
    """In some variant the mistake's wrong answers lose points and earn its feedback line."""
    hits = []
    for params in PROBLEM.variants.values():
        wrong = mistake.wrong(params)
        if not wrong:
            continue
        answers = dict(PROBLEM.solve(params), **wrong)
        result = PROBLEM.grade(params, answers, keys=list(wrong))
        if result.score < result.max_score:
            hits.append(any(mistake.feedback in line for line in result.feedback))
    assert hits and all(hits)


@pytest.mark.parametrize("bad", [
    {},                                                   # every key missing
    {"checkpoint_bytes": "98 GB"},                        # a string
    {"write_seconds": float("nan")},                      # NaN
    {"job_mtbf_seconds": [1.0, 2.0]},                     # a list
    {"interval_expr": sympy.sqrt(2 * sympy.Symbol("x") * sympy.Symbol("M"))},   # unknown symbol
    {"interval_expr": "sqrt(2*delta*M)"},                 # a string, never parsed
    {"interval_expr": sympy.sqrt(2 * sympy.Symbol("delta", positive=True)
                                 * sympy.Symbol("M", positive=True))},   # Daly's letter, not the notebook's
])
def test_bad_answers_score_zero_without_raising(bad):
    """Missing, mistyped or foreign answers score 0 on their keys and say why."""
    params = PROBLEM.variants["B"]
    keys = list(bad) or list(PROBLEM.checks)
    result = PROBLEM.grade(params, bad, keys=keys)
    assert result.score == 0
    assert len(result.feedback) == len(keys)
    reference = PROBLEM.solve(params)
    for line in result.feedback:
        assert repr(reference["young_interval_seconds"]) not in line


@pytest.mark.parametrize("key, value", [("n_nodes", 0), ("failure_rate", -1.0),
                                        ("write_bandwidth", float("nan")), ("N", "7B")])
def test_solve_refuses_invalid_parameters(key, value):
    """solve says which parameter is unusable instead of returning nonsense."""
    params = dict(PROBLEM.variants["A"], **{key: value})
    with pytest.raises(ValueError, match=key):
        PROBLEM.solve(params)


# The variant D this item shipped before issue 27: a 405B model on 16,384 nodes saved by one
# rank at 2 GB/s. Young's interval (1,986 s) is shorter than one write (2,430 s).
UNRUNNABLE = {"N": 405_000_000_000, "bytes_per_param": 12, "write_bandwidth": 2e9,
              "n_nodes": 16384, "failure_rate": 6.50e-3}


def test_breakdown_names_a_configuration_the_model_cannot_describe():
    """Young and Daly assume a write much shorter than the MTBF; past it the item says so."""
    reasons = PROBLEM.breakdown(UNRUNNABLE)
    assert any("above 1" in r for r in reasons)
    assert any("shorter than one checkpoint write" in r for r in reasons)


@pytest.mark.parametrize("label", "ABCD")
def test_every_variant_is_inside_the_model(label):
    """No variant asks for an interval the model itself says has broken down."""
    params = PROBLEM.variants[label]
    assert PROBLEM.breakdown(params) == []
    answers = PROBLEM.solve(params)
    assert answers["young_interval_seconds"] > 10 * answers["write_seconds"]


def test_variant_d_is_llama_3():
    """D is Llama 3 405B's run: 419 unexpected interruptions in 54 days on 2,048 nodes of 8 H100
    (about one every three hours) and Tectonic's sustained 2 TB/s (Llama Team 2024, 3.3)."""
    q = PROBLEM.variants["D"]
    assert q["n_nodes"] * 8 == 16_384
    assert q["failure_rate"] == pytest.approx(419 / (54 * 2048), rel=2e-3)
    assert PROBLEM.solve(q)["job_mtbf_seconds"] / 3600 == pytest.approx(54 * 24 / 419, rel=2e-3)
