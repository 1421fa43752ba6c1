"""e05-loss-scaling: the reference against GradScaler itself, and the grade against mistakes and bad input."""
import ast
from pathlib import Path

import pytest
import sympy
import torch

from graders import problems
from graders.notebook import gather

P = problems.get("e05-loss-scaling")
ROOT = Path(__file__).resolve().parents[3]

# Printed defaults (data): torch.amp.GradScaler's signature and documentation;
# Megatron-LM's --initial-loss-scale (2**32); fairseq's --fp16-init-scale (2**7).
GRADSCALER_DEFAULTS = {"init_scale": 2.0 ** 16, "growth_factor": 2.0, "backoff_factor": 0.5,
                       "growth_interval": 2000}
PRINTED_INITIAL_SCALES = {"torch GradScaler": 2.0 ** 16, "Megatron-LM": 2.0 ** 32, "fairseq": 2.0 ** 7}


def run_real_gradscaler(overflow, init_scale, growth_factor, backoff_factor, growth_interval):
    """Drive torch.amp.GradScaler on a one-parameter model, planting an inf where asked.

    Returns (scale in force at each step, final scale, steps whose optimizer step was skipped).
    """
    w = torch.nn.Parameter(torch.tensor([1.0]))
    opt = torch.optim.SGD([w], lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_factor=growth_factor,
                                  backoff_factor=backoff_factor, growth_interval=growth_interval)
    trajectory, skipped = [], []
    for i, bad in enumerate(overflow):
        trajectory.append(scaler.get_scale())
        opt.zero_grad()
        loss = (w * (float("inf") if bad else 1.0)).sum()
        scaler.scale(loss).backward()
        before = w.detach().clone()
        scaler.step(opt)
        scaler.update()
        if torch.equal(before, w.detach()):
            skipped.append(i)
    return trajectory, scaler.get_scale(), skipped


def test_interface():
    assert P.kind == "exercise" and P.assignment == "exercises" and P.strand == "mathematics"
    for key in ("scale_trajectory", "final_scale", "skipped_steps"):
        assert key in P.checks
    assert any(k.endswith("_expr") for k in P.checks)


def test_gradscaler_defaults_are_the_printed_ones():
    s = torch.amp.GradScaler("cpu")
    assert s.get_scale() == GRADSCALER_DEFAULTS["init_scale"]
    assert s.get_growth_factor() == GRADSCALER_DEFAULTS["growth_factor"]
    assert s.get_backoff_factor() == GRADSCALER_DEFAULTS["backoff_factor"]
    assert s.get_growth_interval() == GRADSCALER_DEFAULTS["growth_interval"]


def test_variants_start_from_printed_defaults_and_differ():
    assert {v["init_scale"] for v in P.variants.values()} <= set(PRINTED_INITIAL_SCALES.values())
    finals = [P.solve(v)["final_scale"] for v in P.variants.values()]
    assert len(set(finals)) == 4


@pytest.mark.parametrize("label", "ABCD")
def test_reference_matches_a_real_gradscaler(label):
    q = P.variants[label]
    trajectory, final, skipped = run_real_gradscaler(q["overflow"], q["init_scale"], q["growth_factor"],
                                                     q["backoff_factor"], q["growth_interval"])
    out = P.solve(q)
    assert out["scale_trajectory"] == trajectory
    assert out["final_scale"] == final
    assert out["skipped_steps"] == skipped


def test_reference_with_gradscaler_defaults_grows_after_2000_clean_steps():
    q = dict(GRADSCALER_DEFAULTS, overflow=[True] + [False] * 2001)
    out = P.solve(q)
    assert out["scale_trajectory"][1] == 2.0 ** 15              # halved after the overflow
    assert out["scale_trajectory"][2000] == 2.0 ** 15           # 1999 clean steps: not yet
    assert out["scale_trajectory"][2001] == 2.0 ** 16           # the 2000th clean step grew it
    assert out["final_scale"] == 2.0 ** 16


def test_no_floor_under_the_scale():
    out = P.solve({"init_scale": 4.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                   "growth_interval": 5, "overflow": [True] * 6})
    assert out["final_scale"] == 2.0 ** -4


@pytest.mark.parametrize("interval", [7, 50, 2000])
def test_skip_fraction_against_a_ceiling_simulation(interval):
    # A steady ceiling: overflow exactly when the scale exceeds 2**12; start at the ceiling.
    scale = torch.full((), 2.0 ** 12)
    tracker = torch.zeros((), dtype=torch.int32)
    cycles, steps, skipped = 4, 0, 0
    while skipped < cycles:
        bad = float(scale) > 2.0 ** 12
        torch._amp_update_scale_(scale, tracker, torch.full((), float(bad)), 2.0, 0.5, interval)
        steps += 1
        skipped += bad
    expr = P.solve(P.variants["A"])["skip_fraction_expr"]
    W = next(iter(expr.free_symbols))
    assert float(expr.subs(W, interval)) == pytest.approx(skipped / steps, rel=1e-12)


def test_probe_calls_are_deterministic_and_use_other_factors():
    calls = P.probes(P.variants["A"])["scaler_probe"].calls
    assert calls == P.probes(P.variants["A"])["scaler_probe"].calls
    assert calls != P.probes(P.variants["B"])["scaler_probe"].calls
    assert any(c[2] != 2.0 or c[3] != 0.5 for c in calls)
    ref = P.solve(P.variants["A"])["scaler_probe"]
    for call, (trajectory, final) in zip(calls, ref):
        t, f, _ = run_real_gradscaler(*call)
        assert (trajectory, final) == (t, f)


def test_every_mistake_loses_points_with_its_feedback():
    for mistake in P.mistakes:
        hit = False
        for q in P.variants.values():
            answers = dict(P.solve(q))
            answers.update(mistake.wrong(q))
            result = P.grade(q, answers)
            if result.score < result.max_score:
                assert any(mistake.feedback in line for line in result.feedback), (mistake.name, result.feedback)
                hit = True
        assert hit, mistake.name


def test_gathered_student_functions():
    q = P.variants["D"]
    keys = ("scaler_probe",)

    def good(overflow, init_scale, growth_factor, backoff_factor, growth_interval):
        s, k, traj = init_scale, 0, []
        for o in overflow:
            traj.append(s)
            if o:
                s, k = s * backoff_factor, 0
            else:
                k += 1
                if k == growth_interval:
                    s, k = s * growth_factor, 0
        return traj, s

    def hard_coded(overflow, init_scale, growth_factor, backoff_factor, growth_interval):
        return good(overflow, init_scale, 2.0, 0.5, growth_interval)

    ok = P.grade(q, gather(P, q, keys, {"run_scaler": good}), keys=keys)
    assert ok.full_marks, ok.feedback
    bad = P.grade(q, gather(P, q, keys, {"run_scaler": hard_coded}), keys=keys)
    assert bad.score == 0


@pytest.mark.parametrize("bad", [
    {},
    {"scale_trajectory": "65536", "final_scale": float("nan"), "skipped_steps": 7,
     "skip_fraction_expr": "1/(W+1)", "scaler_probe": None},
    {"scale_trajectory": [1.0, 2.0], "final_scale": [8192.0], "skipped_steps": ["0"],
     "skip_fraction_expr": 1 / (sympy.Symbol("N") + 1), "scaler_probe": [{"error": "raised KeyError"}] * 4},
    {"skip_fraction_expr": 1 / (sympy.Symbol("W", positive=True) + 1)},   # the old letter, now warmup's
])
def test_bad_answers_score_zero_without_raising(bad):
    q = P.variants["B"]
    result = P.grade(q, bad)
    assert result.score == 0
    assert len(result.feedback) == len(P.checks)


def test_solve_rejects_nonsense_parameters():
    base = dict(P.variants["A"])
    for change in ({"backoff_factor": 1.5}, {"growth_factor": 0.5}, {"growth_interval": 0},
                   {"init_scale": -1.0}, {"overflow": [1, 0, 1]}):
        with pytest.raises(ValueError):
            P.solve(dict(base, **change))


def test_notebook_variants_are_the_problems():
    text = (ROOT / "source/exercises/e05-loss-scaling.pct.py").read_text()
    start = text.index("VARIANTS = {")
    node = ast.parse(text[start:text.index("\nSTUDENT", start)])
    assert ast.literal_eval(node.body[0].value) == P.variants
