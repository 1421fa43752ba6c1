"""e03-weight-decay: the reference against torch's AdamW and Adam, the grade, mistakes, bad inputs."""
import math

import pytest
import sympy
import torch

from graders import problems
from graders.problems.exercises.e03_weight_decay import TORCH_STEPS, adam_l2_value, torch_steps

P = problems.get("e03-weight-decay")


def _idle_path(optimizer_class, lr, weight_decay, n, dtype=torch.float64):
    """A weight started at 1 whose gradient is zero on every step, after each of 0..n steps."""
    w = torch.nn.Parameter(torch.ones(1, dtype=dtype))
    opt = optimizer_class([w], lr=lr, weight_decay=weight_decay)
    path = [w.item()]
    for _ in range(n):
        w.grad = torch.zeros_like(w)
        opt.step()
        path.append(w.item())
    return path


def _idle_weight(optimizer_class, lr, weight_decay, n, dtype=torch.float64):
    """The same weight after n steps."""
    return _idle_path(optimizer_class, lr, weight_decay, n, dtype)[-1]


# --- (a) torch is the primary source for what AdamW does ------------------------------------

@pytest.mark.parametrize("label", "ABCD")
def test_adamw_factor_matches_torch_adamw_with_zero_gradients(label):
    # torch.optim.AdamW documentation: theta_t <- theta_{t-1} - gamma * lambda * theta_{t-1},
    # then the Adam step, which is 0 when the gradient has always been 0.
    q = P.variants[label]
    n = torch_steps(q)
    measured = _idle_weight(torch.optim.AdamW, q["lr"], q["weight_decay"], n)
    assert math.isclose(P.solve(q)["adamw_factor"], measured, rel_tol=1e-9)


@pytest.mark.parametrize("label", "AB")
def test_shrink_factor_over_the_whole_run_matches_torch(label):
    # the two short runs are cheap enough to take every step in torch
    q = P.variants[label]
    measured = _idle_weight(torch.optim.AdamW, q["lr"], q["weight_decay"], q["steps"])
    assert math.isclose(P.solve(q)["shrink_factor"], measured, rel_tol=1e-9)


@pytest.mark.parametrize("label", "CD")
def test_shrink_factor_of_long_runs_matches_stepwise_multiplication(label):
    # what torch does, one multiplication per step, in float64
    q = P.variants[label]
    value, factor = 1.0, 1.0 - q["lr"] * q["weight_decay"]
    for _ in range(q["steps"]):
        value *= factor
    assert math.isclose(P.solve(q)["shrink_factor"], value, rel_tol=1e-9)


@pytest.mark.parametrize("label", "ABCD")
def test_l2_first_step_matches_torch_adam(label):
    # torch.optim.Adam(weight_decay=lambda) adds lambda * theta to the gradient (an L2 penalty)
    q = P.variants[label]
    moved = 1.0 - _idle_weight(torch.optim.Adam, q["lr"], q["weight_decay"], 1)
    assert math.isclose(P.solve(q)["l2_first_step"], moved, rel_tol=1e-9)
    # Loshchilov & Hutter's point: the L2 step is normalised to about lr, whatever lambda is
    assert math.isclose(moved, q["lr"], rel_tol=1e-6)
    assert moved > 5 * q["lr"] * q["weight_decay"]


def test_adam_l2_recursion_matches_torch_adam():
    # the generator of the "adam-not-adamw" mistake must be what torch.optim.Adam computes
    for lr, wd in ((6e-4, 0.1), (1e-3, 0.01)):
        measured = _idle_weight(torch.optim.Adam, lr, wd, 2000)
        assert math.isclose(adam_l2_value(lr, wd, 2000), measured, rel_tol=1e-9, abs_tol=1e-15)


def test_float32_drift_stays_inside_the_tolerance():
    # a student who forgets dtype=float64 still passes adamw_factor (the check allows 2e-3)
    q = P.variants["B"]
    n = torch_steps(q)
    measured = _idle_weight(torch.optim.AdamW, q["lr"], q["weight_decay"], n, dtype=torch.float32)
    r = P.grade(q, {"adamw_factor": measured}, keys=["adamw_factor"])
    assert r.full_marks, r.feedback


def test_printed_settings_and_timescales():
    # GPT-3 (Brown et al. 2020, Appendix B) and Llama 2 (Touvron et al. 2023, section 2.2)
    # both print weight decay 0.1; GPT-3 175B lr 0.6e-4 (Table 2.1), Llama 2 7B 3.0e-4.
    gpt3, llama2 = P.solve(P.variants["C"]), P.solve(P.variants["D"])
    assert math.isclose(gpt3["timescale_steps"], 1 / (0.6e-4 * 0.1), rel_tol=1e-12)
    # GPT-3's decay timescale is longer than its 81,250-step cosine; Llama 2's is 1/15 of its run
    assert gpt3["timescale_steps"] > P.variants["C"]["steps"]
    assert math.isclose(P.variants["D"]["steps"] / llama2["timescale_steps"], 15.0, rel_tol=1e-12)
    assert math.isclose(llama2["shrink_factor"], math.exp(-15), rel_tol=1e-3)


def test_shrink_expr_is_the_compound_factor():
    e = P.solve(P.variants["A"])["shrink_expr"]
    eta, lam, t = (sympy.Symbol(n, positive=True) for n in ("eta", "lambda", "t"))
    assert sympy.simplify(e.subs(t, 3) - (1 - eta * lam) ** 3) == 0


def test_solve_accepts_any_valid_parameters_and_rejects_invalid_ones():
    r = P.solve({"lr": 1e-4, "weight_decay": 0.05, "steps": 0})
    assert r["shrink_factor"] == 1.0 and r["adamw_factor"] == 1.0
    assert torch_steps({"lr": 1e-4, "weight_decay": 0.05, "steps": 10**7}) == TORCH_STEPS
    for bad in ({"lr": -1e-3, "weight_decay": 0.1, "steps": 10},
                {"lr": 1e-3, "weight_decay": 0.1, "steps": 2.5},
                {"lr": 20.0, "weight_decay": 0.1, "steps": 10},
                {"lr": 1e-3, "weight_decay": float("nan"), "steps": 10}):
        with pytest.raises(ValueError):
            P.solve(bad)


# --- (b) the grade ----------------------------------------------------------------------------

def test_variants_differ():
    answers = [P.solve(q) for q in P.variants.values()]
    for key in ("shrink_factor", "timescale_steps", "adamw_factor", "l2_first_step"):
        assert len({round(a[key], 12) for a in answers}) == 4, key


@pytest.mark.parametrize("mistake", P.mistakes, ids=lambda m: m.name)
def test_every_mistake_loses_points_with_its_feedback(mistake):
    lost = False
    for label in "AD":
        q = P.variants[label]
        answers = P.solve(q)
        answers.update(mistake.wrong(q))
        r = P.grade(q, answers)
        if r.score < r.max_score:
            lost = True
            assert any(mistake.feedback in line for line in r.feedback), r.feedback
    assert lost, f"{mistake.name} never loses points"


def test_continuous_approximation_passes_numbers_but_not_the_expression():
    q = P.variants["D"]
    n, rate = q["steps"], q["lr"] * q["weight_decay"]
    r = P.grade(q, {"shrink_factor": math.exp(-rate * n)}, keys=["shrink_factor"])
    assert r.full_marks


@pytest.mark.parametrize("bad", [None, "0.6", float("inf"), [0.6], {"str": "x"}, torch.ones(2)])
def test_bad_numbers_score_zero_without_raising(bad):
    q = P.variants["B"]
    answers = P.solve(q)
    answers["shrink_factor"] = bad
    r = P.grade(q, answers, keys=["shrink_factor", "timescale_steps"])
    assert r.score == 1 and not r.outcomes["shrink_factor"].passed


def test_missing_key_and_foreign_symbol_score_zero():
    q = P.variants["C"]
    answers = P.solve(q)
    del answers["l2_first_step"]
    answers["shrink_expr"] = (1 - sympy.Symbol("eta") * sympy.Symbol("wd")) ** sympy.Symbol("t")
    r = P.grade(q, answers)
    assert r.score == r.max_score - 2
    assert any("wd" in line for line in r.feedback)


def test_the_figures_idle_weight_is_torchs_adam_step_by_step():
    # the notebook's figure draws idle_weight_path (held verbatim in its cell) instead of
    # stepping torch.optim.Adam 10,000 times per curve; it must be torch's Adam, every step
    import inspect
    from pathlib import Path

    import nbformat

    from graders.problems.exercises.e03_weight_decay import idle_weight_path
    built = Path(__file__).resolve().parents[3] / "source" / "exercises" / "e03-weight-decay.ipynb"
    cells = [c.source for c in nbformat.read(built, as_version=4).cells if "def idle_weight_path" in c.source]
    assert len(cells) == 1 and inspect.getsource(idle_weight_path) in cells[0]
    defaults = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))]).defaults
    signature = inspect.signature(idle_weight_path).parameters
    assert signature["betas"].default == defaults["betas"] and signature["eps"].default == defaults["eps"]
    for lr, wd in ((1e-3, 0.1), (6e-5, 0.01)):
        by_torch = _idle_path(torch.optim.Adam, lr, wd, 300)
        assert all(math.isclose(a, b, rel_tol=1e-12) for a, b in zip(idle_weight_path(lr, wd, 300), by_torch))
