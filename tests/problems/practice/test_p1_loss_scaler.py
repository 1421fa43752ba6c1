"""p1-loss-scaler: the reference against GradScaler itself, the notebook's harness, and the grade."""
import ast
import inspect
import json
import math
from pathlib import Path

import pytest
import torch

from graders import problems
from graders.notebook import gather
from graders.problem import one_torch_thread
from graders.problems.practice import p1_loss_scaler as mod
from graders.problems.common.loss_scaling import torch_run

from tests.problems.notebook_cells import cell_sources, run_cells

P = problems.get("p1-loss-scaler")
ROOT = Path(__file__).resolve().parents[3]
SOURCE = ROOT / "source/practice/p1-loss-scaler.pct.py"

# Printed defaults (data): torch.amp.GradScaler's signature and documentation;
# Megatron-LM's --initial-loss-scale (2**32); fairseq's --fp16-init-scale (2**7).
GRADSCALER_DEFAULTS = {"init_scale": 2.0 ** 16, "growth_factor": 2.0, "backoff_factor": 0.5,
                       "growth_interval": 2000}
PRINTED_INITIAL_SCALES = {"torch GradScaler": 2.0 ** 16, "Megatron-LM": 2.0 ** 32, "fairseq": 2.0 ** 7}
FP16_MAX = 65504.0          # IEEE 754 binary16, largest finite value


def harness_namespace(scaler_class):
    """The notebook's locked harness cell, executed with `scaler_class` as DynamicLossScaler."""
    namespace = {"DynamicLossScaler": scaler_class}
    return run_cells(SOURCE, ["harness"], namespace)


def test_interface():
    assert P.kind == "practice" and P.assignment == "practice" and P.strand == "practice"


def test_gradscaler_defaults_are_the_printed_ones():
    s = torch.amp.GradScaler("cpu")
    assert s.get_scale() == GRADSCALER_DEFAULTS["init_scale"]
    assert s.get_growth_factor() == GRADSCALER_DEFAULTS["growth_factor"]
    assert s.get_backoff_factor() == GRADSCALER_DEFAULTS["backoff_factor"]
    assert s.get_growth_interval() == GRADSCALER_DEFAULTS["growth_interval"]
    assert torch.finfo(torch.float16).max == FP16_MAX


def test_variants_start_from_printed_defaults_and_differ():
    assert {v["init_scale"] for v in P.variants.values()} <= set(PRINTED_INITIAL_SCALES.values())
    outs = [P.solve(v) for v in P.variants.values()]
    assert len({json.dumps(o["skipped_steps"]) for o in outs}) == 4
    assert len({json.dumps(o["scale_trajectory"]) for o in outs}) == 4


def test_notebook_harness_is_the_modules():
    tree = ast.parse(cell_sources(SOURCE)["harness"])
    notebook_fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "amp_run")
    module_fn = ast.parse(inspect.getsource(mod.amp_run)).body[0]
    assert ast.dump(notebook_fn) == ast.dump(module_fn)


def test_notebook_variants_are_the_problems():
    text = SOURCE.read_text()
    start = text.index("VARIANTS = {")
    node = ast.parse(text[start:text.index("\nSTUDENT", start)])
    assert ast.literal_eval(node.body[0].value) == P.variants


@pytest.mark.parametrize("label", "ABCD")
def test_reference_scale_follows_torchs_update_op(label):
    # The trajectory GradScaler produced, replayed through torch._amp_update_scale_ (e05's
    # reference) on the overflow pattern that the run itself produced.
    q = P.variants[label]
    out = P.solve(q)
    overflow = [i in out["skipped_steps"] for i in range(q["steps"])]
    trajectory, final = torch_run(overflow, q["init_scale"], q["growth_factor"], q["backoff_factor"],
                                  q["growth_interval"])
    assert trajectory == out["scale_trajectory"] and final == out["final_scale"]


def test_a_correct_scratch_scaler_matches_gradscaler_bit_for_bit_on_any_thread_count():
    # The harness run in the student's process (default threads) against the reference
    # (one thread): same overflow decisions, same weights.
    for call in P.probes(P.variants["A"])["scaler_weights"].calls[:2]:
        q = dict(zip(mod.ARGS, call))
        scaler = mod.ScratchScaler(None, **{k: q[k] for k in mod.SETTINGS})
        scales, skipped, weights = mod.amp_run(scaler, *(q[k] for k in mod.RUN))
        ref = mod.run_with(mod.torch_scaler, q)
        assert (scales, skipped, weights) == (ref[0], ref[1], ref[2])


def _first_batch(seed):
    """The harness's model and first batch for `seed` (same generator calls as amp_run)."""
    gen = torch.Generator().manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=gen))
    teacher = torch.randn(8, 1, generator=gen)
    x = torch.randn(64, 8, generator=gen)
    return model, x, torch.tanh(x @ teacher)


def _grads(model, x, y, scale):
    model.zero_grad()
    with torch.autocast("cpu", dtype=torch.float16):
        out = model(x)
    scaled = torch.nn.functional.mse_loss(out.float(), y) * scale
    scaled.backward()
    return scaled, [p.grad for p in model.parameters()]


def test_the_notebooks_claims_about_overflow():
    # As the scale doubles, the fp16 backward pass overflows near fp16's 65504, while the
    # fp32 loss stays finite; often only some tensors overflow at first (here, in at least
    # two of the four variants' first batches), so every gradient has to be checked.
    partial = 0
    for q in P.variants.values():
        model, x, y = _first_batch(q["seed"])
        for k in range(8, 40):
            scaled, grads = _grads(model, x, y, 2.0 ** k)
            finite = [bool(torch.isfinite(g).all()) for g in grads]
            if not all(finite):
                break
        assert bool(torch.isfinite(scaled))
        assert 2.0 ** 10 < 2.0 ** k < 2.0 ** 24
        partial += any(finite)
        # ... and a corrupt input gives NaN, not inf, which torch.isinf does not see
        x[0, 0] = float("nan")
        _, grads = _grads(model, x, y, 1.0)
        assert not any(bool(torch.isinf(g).any()) for g in grads)
        assert all(bool(torch.isnan(g).any()) for g in grads)
    assert partial >= 2


def test_megatron_start_costs_one_skipped_step_per_halving():
    q = P.variants["B"]                  # 2**32: every step skips until the scale fits fp16's range
    out = P.solve(q)
    first_clean = next(i for i in range(q["steps"]) if i not in out["skipped_steps"])
    assert out["skipped_steps"][:first_clean] == list(range(first_clean))
    assert out["scale_trajectory"][first_clean] == 2.0 ** 32 / 2.0 ** first_clean
    assert out["scale_trajectory"][first_clean] * 1e-3 < FP16_MAX < out["scale_trajectory"][first_clean] * 1e3


def test_probe_calls_are_deterministic_and_varied():
    calls = P.probes(P.variants["A"])["scaler_schedule"].calls
    assert calls == P.probes(P.variants["A"])["scaler_schedule"].calls
    assert calls != P.probes(P.variants["C"])["scaler_schedule"].calls
    assert any(c[1] != 2.0 or c[2] != 0.5 for c in calls)
    assert all(c[7] for c in calls)                     # every hidden run has a corrupt batch
    json.dumps(calls)                                    # plain data


def test_a_hidden_run_shows_whether_clipping_saw_the_true_gradients():
    # At a clip threshold of 0.5 or 1 this MLP's true gradients are clipped at nearly every step,
    # and a clipped update is the same with or without unscaling: the hidden runs must include
    # one whose threshold the true gradients fall beneath, or 'no-unscale' passes unseen.
    no_unscale = next(m for m in P.mistakes if m.name == "no-unscale")
    check = P.checks["scaler_weights"]
    for label, q in P.variants.items():
        right = P.solve(q)["scaler_weights"]
        assert not check.judge(right, no_unscale.wrong(q)["scaler_weights"]).passed, label


class _Good(mod.ScratchScaler):
    def __init__(self, **settings):
        super().__init__(None, **settings)


class _DividesInstead(_Good):
    """Unscales by division rather than by the float32 reciprocal: allowed."""

    def unscale_(self, optimizer):
        grads = [p.grad for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
        self.found_inf = any(not bool(torch.isfinite(g).all()) for g in grads)
        with torch.no_grad():
            for g in grads:
                g.div_(self.scale_value)


class _TorchDefaultsOnly(_Good):
    """Ignores the factors it is given and uses 2 and 0.5."""

    def __init__(self, **settings):
        settings.update(growth_factor=2.0, backoff_factor=0.5)
        super().__init__(**settings)


def test_gathered_student_classes():
    q = P.variants["C"]
    keys = P.cells["check_scaler"]
    with one_torch_thread():
        for cls in (_Good, _DividesInstead):
            result = P.grade(q, gather(P, q, keys, harness_namespace(cls)), keys=keys)
            assert result.full_marks, (cls.__name__, result.feedback)
        bad = P.grade(q, gather(P, q, keys, harness_namespace(_TorchDefaultsOnly)), keys=keys)
    assert bad.score < bad.max_score

    class Unwritten:
        def __init__(self, **settings):
            raise NotImplementedError

    blank = P.grade(q, gather(P, q, keys, harness_namespace(Unwritten)), keys=keys)
    assert blank.score == 0


@pytest.mark.parametrize("bad", [
    {},
    {"scale_trajectory": "65536", "final_scale": float("nan"), "skipped_steps": 7,
     "scaler_schedule": None, "scaler_weights": "w"},
    {"scale_trajectory": [1.0, 2.0], "final_scale": [8192.0], "skipped_steps": ["0"],
     "scaler_schedule": [{"error": "raised KeyError"}] * 4, "scaler_weights": [[math.inf]] * 4},
])
def test_bad_answers_score_zero_without_raising(bad):
    q = P.variants["B"]
    result = P.grade(q, bad)
    assert result.score == 0
    assert len(result.feedback) == len(P.checks)


def test_solve_rejects_nonsense_parameters():
    base = dict(P.variants["A"])
    for change in ({"backoff_factor": 1.5}, {"growth_factor": 0.5}, {"growth_interval": 0},
                   {"init_scale": -1.0}, {"lr": 0.0}, {"steps": 2.5}, {"spikes": [[3, -1.0]]}):
        with pytest.raises(ValueError):
            P.solve(dict(base, **change))
