"""e04-clipping: the reference against the printed rule, and the grade against mistakes and bad input."""
import math

import numpy as np
import pytest
import sympy

from graders import problems
from graders.notebook import gather
from graders.problems.exercises.e04_clipping import Outputs

P = problems.get("e04-clipping")

# Printed thresholds (data, with their places): GPT-3, Brown et al. 2020, Appendix B
# ("We clip the global norm of the gradient at 1.0"); LLaMA, Touvron et al. 2023, §2.3
# (gradient clipping of 1.0); OPT-175B, Zhang et al. 2022, §2.5 (lowered from 1.0 to 0.3).
PRINTED_THRESHOLDS = {"GPT-3": 1.0, "LLaMA": 1.0, "OPT-175B (after the change)": 0.3}


def full(params):
    return P.grade(params, P.solve(params))


def test_interface():
    assert P.kind == "exercise" and P.assignment == "exercises" and P.strand == "mathematics"
    for key in ("total_norm", "clip_coef"):
        assert key in P.checks
    assert any(k.endswith("_expr") for k in P.checks)


def test_variants_use_printed_thresholds_and_differ():
    assert {v["max_norm"] for v in P.variants.values()} <= set(PRINTED_THRESHOLDS.values())
    coefs = [P.solve(v)["clip_coef"] for v in P.variants.values()]
    assert len({round(c, 6) for c in coefs}) == 4
    assert any(c == 1.0 for c in coefs) and any(c < 1.0 for c in coefs)   # clipped and not


def test_pascanu_rule_on_a_known_triangle():
    # 3-4-5 and 5-12-13: the global norm of [[3, 4], [12]] is exactly 13.
    params = {"grads": [[3.0, 4.0], [12.0]], "max_norm": 1.0}
    out = P.solve(params)
    assert out["total_norm"] == pytest.approx(13.0, rel=1e-12)
    # Pascanu et al. 2013, Algorithm 1: g <- (threshold / ||g||) g when ||g|| >= threshold;
    # torch's documented form adds 1e-6 to the norm.
    assert out["clip_coef"] == pytest.approx(1.0 / 13.0, rel=1e-6)
    assert out["clip_coef"] == pytest.approx(1.0 / (13.0 + 1e-6), rel=1e-12)
    # under the threshold nothing changes
    assert P.solve({"grads": [[3.0, 4.0], [12.0]], "max_norm": 20.0})["clip_coef"] == 1.0


def test_reference_agrees_with_independent_numpy():
    rng = np.random.default_rng(7)
    for _ in range(5):
        grads = [list(rng.standard_normal(rng.integers(1, 7)) * 3) for _ in range(rng.integers(1, 5))]
        c = float(rng.uniform(0.1, 5))
        out = P.solve({"grads": grads, "max_norm": c})
        norm = float(np.linalg.norm(np.concatenate([np.asarray(g) for g in grads])))
        assert out["total_norm"] == pytest.approx(norm, rel=1e-12)
        assert out["clip_coef"] == pytest.approx(min(c / (norm + 1e-6), 1.0), rel=1e-12)


def test_probe_reference_is_pre_clip_norm_and_scaled_grads():
    params = P.variants["A"]
    calls = P.probes(params)["clip_probe"].calls
    ref = P.solve(params)["clip_probe"]
    assert len(calls) == len(ref) >= 4
    assert calls == P.probes(params)["clip_probe"].calls           # deterministic
    assert calls != P.probes(P.variants["B"])["clip_probe"].calls  # differs per variant
    clipped_some = unclipped_some = False
    for (grads, c), (clipped, total) in zip(calls, ref):
        flat = np.concatenate([np.asarray(g, dtype=float) for g in grads])
        norm = float(np.linalg.norm(flat))
        assert total == pytest.approx(norm, rel=1e-12, abs=1e-15)    # returned before clipping
        coef = min(c / (norm + 1e-6), 1.0)
        np.testing.assert_allclose(np.concatenate(clipped), flat * coef, rtol=1e-12, atol=1e-15)
        clipped_some |= coef < 1
        unclipped_some |= coef == 1 and norm > 0
    assert clipped_some and unclipped_some
    assert any(not any(any(g) for g in grads) for grads, _ in calls)    # the all-zero step


@pytest.mark.parametrize("label", "ABCD")
def test_reference_scores_full_marks(label):
    result = full(P.variants[label])
    assert result.full_marks, result.feedback


def test_every_mistake_loses_points_with_its_feedback():
    for mistake in P.mistakes:
        hit = False
        for params in P.variants.values():
            answers = dict(P.solve(params))
            answers.update(mistake.wrong(params))
            result = P.grade(params, answers)
            if result.score < result.max_score:
                assert any(mistake.feedback in line for line in result.feedback), (mistake.name, result.feedback)
                hit = True
        assert hit, mistake.name


def _student_namespace(fn):
    return {"clip_grad_norm": fn}


def test_gathered_student_function_is_graded():
    params = P.variants["C"]

    def good(grads, max_norm):
        ts = [np.asarray(t, dtype=float) for t in grads]
        n = math.sqrt(sum(float((t * t).sum()) for t in ts))
        return [t * min(max_norm / (n + 1e-6), 1.0) for t in ts], n

    def naive(grads, max_norm):   # divides by the norm: the all-zero step raises
        ts = [np.asarray(t, dtype=float) for t in grads]
        n = math.sqrt(sum(float((t * t).sum()) for t in ts))
        return [t * min(max_norm / n, 1.0) for t in ts], n

    def per_tensor(grads, max_norm):
        ts = [np.asarray(t, dtype=float) for t in grads]
        n = math.sqrt(sum(float((t * t).sum()) for t in ts))
        return [t * min(max_norm / (float(np.linalg.norm(t)) + 1e-6), 1.0) for t in ts], n

    keys = ("clip_probe",)
    ok = P.grade(params, gather(P, params, keys, _student_namespace(good)), keys=keys)
    assert ok.full_marks, ok.feedback
    bad = P.grade(params, gather(P, params, keys, _student_namespace(naive)), keys=keys)
    assert bad.score == 0 and "raised ZeroDivisionError" in bad.feedback[0]
    bent = P.grade(params, gather(P, params, keys, _student_namespace(per_tensor)), keys=keys)
    assert bent.score == 0 and "Likely mistake" in bent.feedback[0]
    missing = P.grade(params, gather(P, params, keys, {}), keys=keys)
    assert missing.score == 0 and "missing" in missing.feedback[0]


@pytest.mark.parametrize("bad", [
    {},                                                        # everything missing
    {"total_norm": "2.4", "clip_coef": float("nan"), "clip_probe": "no",
     "clip_coef_expr": "c/(sqrt(L)*g)"},                      # strings and NaN
    {"total_norm": [1.0], "clip_coef": None, "clip_probe": [1, 2],
     "clip_coef_expr": sympy.Symbol("x") / sympy.Symbol("c")},  # wrong kinds, unknown symbol
    {"clip_coef_expr": sympy.Symbol("c", positive=True)
     / (sympy.sqrt(sympy.Symbol("L", positive=True)) * sympy.Symbol("g", positive=True))},  # the old letters
    {"clip_probe": [{"error": "raised ValueError"}] * 5},      # the function raised
    {"clip_probe": [[[[float("nan")]], 1.0]] * 5},              # NaN inside an output
])
def test_bad_answers_score_zero_without_raising(bad):
    params = P.variants["A"]
    result = P.grade(params, bad)
    assert result.score == 0
    assert len(result.feedback) == len(P.checks)


def test_outputs_check_shapes():
    check = Outputs(rtol=1e-6)
    ref = [[[1.0, 2.0], 3.0], 0.5]
    assert check.judge(ref, [[[1.0, 2.0], 3.0], 0.5]).passed
    assert not check.judge(ref, [[[1.0, 2.0, 0.0], 3.0], 0.5]).passed
    assert not check.judge(ref, [[[1.0, 2.0], 3.0]]).passed
    assert check.judge(ref, [[[1.0, {"str": "x"}], 3.0], 0.5]).status == "invalid"


def test_solve_rejects_nonsense_parameters():
    with pytest.raises(ValueError):
        P.solve({"grads": [], "max_norm": 1.0})
    with pytest.raises(ValueError):
        P.solve({"grads": [[1.0]], "max_norm": 0.0})


def test_notebook_variants_are_the_problems():
    import ast
    from pathlib import Path
    text = (Path(__file__).resolve().parents[3] / "source/exercises/e04-clipping.pct.py").read_text()
    start = text.index("VARIANTS = {")
    node = ast.parse(text[start:text.index("\nSTUDENT", start)])
    assert ast.literal_eval(node.body[0].value) == P.variants
