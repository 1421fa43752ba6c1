"""p4-fp16-underflow: the reference against torch's own autocast and GradScaler, the fp16 limits
against what the sources print, the notebook's harness against the module's, and the grader."""
import ast
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from graders import problems
from graders.notebook import gather
from graders.problems.practice import p4_fp16_underflow as p4

from tests.problems.notebook_cells import cell_sources, run_cells

P = problems.get("p4-fp16-underflow")
ROOT = Path(__file__).resolve().parents[3]
SOURCE = ROOT / "source/practice/p4-fp16-underflow.pct.py"

# --- (a) what the primary sources print ---------------------------------------------------------
# Micikevicius et al., Mixed Precision Training (ICLR 2018): §3.1 "any value whose magnitude is
# smaller than 2^-24 becomes zero in FP16"; §3.2 gives 65,504 as the largest FP16 value. IEEE
# 754-2008 binary16: smallest normal 2^-14. Stored as printed (exact powers of two and an integer).
PRINTED = {"min_subnormal": 2.0 ** -24, "max": 65504.0, "min_normal": 2.0 ** -14}


def notebook_namespace(step=None):
    """A fresh namespace with the notebook's locked harness and its published step (or `step`)."""
    namespace = run_cells(SOURCE, ["harness", "answer_step"])
    if step is not None:
        namespace["mixed_precision_step"] = step
    return namespace


@pytest.fixture(scope="module")
def notebook():
    return notebook_namespace()


def test_interface():
    assert (P.kind, P.strand, P.assignment) == ("practice", "practice", "practice")
    assert "run_probe" in P.probes(P.variants["A"])


def test_fp16_limits_are_the_printed_ones():
    info = torch.finfo(torch.float16)
    assert p4.FP16_MIN_SUBNORMAL == PRINTED["min_subnormal"] == info.smallest_normal * 2.0 ** -10
    assert p4.FP16_MAX == PRINTED["max"] == info.max
    assert info.tiny == PRINTED["min_normal"]
    # round to nearest, ties to even: 2^-25 rounds to 0, anything above it to 2^-24
    half = torch.tensor([2.0 ** -25, 2.0 ** -25 * 1.01, 2.0 ** -24 * 0.99], dtype=torch.float32).half().float()
    assert half.tolist() == [0.0, 2.0 ** -24, 2.0 ** -24]


def autocast_run(seed, steps, weight_exp, scale_exp, lr=0.1):
    """The same run through torch.autocast(cpu, float16) and a GradScaler that never changes its scale."""
    data = p4.make_data(seed)
    x, y = data
    model = p4.make_model(seed)
    weight = 2.0 ** -weight_exp
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** scale_exp, growth_interval=10 ** 9)
    opt = torch.optim.SGD(model.parameters(), lr=lr / weight)
    order = torch.Generator().manual_seed(seed + 1)
    zeros = []
    for _ in range(steps):
        idx = torch.randint(0, p4.N_EXAMPLES, (p4.BATCH,), generator=order)
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.float16):
            out = model(x[idx])
        loss = F.mse_loss(out.float(), y[idx]) * weight
        scaler.scale(loss).backward()
        grads = torch.cat([p.grad.flatten() for p in model.parameters()])
        zeros.append(int((grads == 0).sum()) / grads.numel())
        scaler.step(opt)
        scaler.update()
    return zeros, p4.full_loss(model, data)


@pytest.mark.parametrize("label", "ABCD")
def test_reference_matches_torch_autocast_and_gradscaler(label):
    q = P.variants[label]
    out = P.solve(q)
    with p4.quiet_torch():
        zeros_scaled, final_scaled = autocast_run(q["seed"], q["steps"], q["weight_exp"], q["scale_exp"], q["lr"])
        zeros_plain, final_plain = autocast_run(q["seed"], q["steps"], q["weight_exp"], 0, q["lr"])
    assert out["zero_fraction_scaled"] == zeros_scaled[0]
    assert out["zero_fraction_unscaled"] == zeros_plain[0]
    assert out["loss_scaled"] == pytest.approx(final_scaled, rel=1e-6)
    assert out["loss_unscaled"] == pytest.approx(final_plain, rel=1e-6)


@pytest.mark.parametrize("label", "AB")
def test_loss_weight_changes_nothing_in_fp32(label):
    # the notebook's claim: a power-of-two loss weight with the inverse learning rate is exact in fp32
    q = P.variants[label]
    with p4.quiet_torch():
        data = p4.make_data(q["seed"])
        x, y = data
        model = p4.make_model(q["seed"])
        weight = 2.0 ** -q["weight_exp"]
        order = torch.Generator().manual_seed(q["seed"] + 1)
        for _ in range(q["steps"]):
            idx = torch.randint(0, p4.N_EXAMPLES, (p4.BATCH,), generator=order)
            loss = F.mse_loss(model(x[idx]), y[idx]) * weight
            model.zero_grad(set_to_none=True)
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= (q["lr"] / weight) * p.grad
        weighted = p4.full_loss(model, data)
    assert weighted == P.solve(q)["loss_fp32"]


def test_only_the_product_of_weight_and_scale_matters():
    with p4.quiet_torch():
        a = p4.run_fp16(4, 1, 21, 9)[1][0]
        b = p4.run_fp16(4, 1, 24, 12)[1][0]
        c = p4.run_fp16(4, 1, 21, 0)[1][0]
    assert a == b and c > 0.5 > a


def test_the_story_holds_in_every_variant():
    for q in P.variants.values():
        out = P.solve(q)
        assert out["zero_fraction_unscaled"] > 0.95 and out["zero_fraction_scaled"] < 0.05
        assert out["loss_unscaled"] > 3 * out["loss_scaled"]
        assert out["loss_scaled"] == pytest.approx(out["loss_fp32"], rel=1e-2)
        assert 0 < out["min_scale_exp"] < q["weight_exp"]


def test_variants_differ():
    outs = [P.solve(q) for q in P.variants.values()]
    for key in ("loss_fp32", "loss_unscaled", "loss_scaled"):
        assert len({o[key] for o in outs}) == 4


def first_batch_gradients(seed, weight_exp, scale_exp):
    """fp32 gradients of the first batch of a run, times the loss weight and the scale."""
    with p4.quiet_torch():
        x, y = p4.make_data(seed)
        model = p4.make_model(seed)
        idx = torch.randint(0, p4.N_EXAMPLES, (p4.BATCH,), generator=torch.Generator().manual_seed(seed + 1))
        (F.mse_loss(model(x[idx]), y[idx]) * 2.0 ** (scale_exp - weight_exp)).backward()
        return torch.cat([p.grad.flatten() for p in model.parameters()]).abs()


@pytest.mark.parametrize("label", "ABCD")
def test_zero_fractions_against_the_printed_floor(label):
    # every entry whose fp32 value is below half the printed floor 2^-24 must be zero in fp16
    # (fp16's backward pass loses more on the way, never fewer); with the scale, far fewer are zero
    q = P.variants[label]
    out = P.solve(q)
    for exp, key in ((0, "zero_fraction_unscaled"), (q["scale_exp"], "zero_fraction_scaled")):
        grads = first_batch_gradients(q["seed"], q["weight_exp"], exp)
        below = float((grads < PRINTED["min_subnormal"] / 2).float().mean())
        assert below <= out[key] + 1e-12
    assert out["zero_fraction_scaled"] < 0.1 and out["zero_fraction_unscaled"] > 0.9


def test_the_overflow_call_exceeds_the_printed_maximum():
    seed, _, k, e, _ = P.probes(P.variants["A"])["run_probe"].calls[2]
    assert float(first_batch_gradients(seed, k, e).max()) > PRINTED["max"]


def test_probe_calls_are_deterministic_and_include_an_overflow():
    calls = P.probes(P.variants["A"])["run_probe"].calls
    assert calls == P.probes(P.variants["A"])["run_probe"].calls
    assert calls != P.probes(P.variants["B"])["run_probe"].calls
    overflow = P.solve(P.variants["A"])["run_probe"][2]
    with p4.quiet_torch():
        start = p4.full_loss(p4.make_model(calls[2][0]), p4.make_data(calls[2][0]))
    assert overflow[2] == start          # every step skipped: the weights never moved


def test_notebook_harness_and_step_score_full_marks(notebook):
    q = P.variants["C"]
    keys = ("run_probe",)
    result = P.grade(q, gather(P, q, keys, notebook), keys=keys)
    assert result.full_marks, result.feedback


def test_notebook_step_with_a_mistake_loses_the_probe():
    def unscale_in_fp16(master, half, x, y, loss_weight, loss_scale, lr):
        return p4.reference_step(master, half, x, y, loss_weight, loss_scale, lr, kind="unscale-in-fp16")

    namespace = notebook_namespace(unscale_in_fp16)
    q = P.variants["B"]
    result = P.grade(q, gather(P, q, ("run_probe",), namespace), keys=("run_probe",))
    assert result.score == 0
    assert any(m.feedback in result.feedback[0] for m in P.mistakes if m.name == "unscale-in-fp16")


def test_notebook_answers_are_the_reference(notebook):
    cells = cell_sources(SOURCE)
    for label in "AD":
        namespace = notebook
        namespace["params"] = P.variants[label]
        exec(cells["answer_zeros"], namespace)
        exec(cells["answer_losses"], namespace)
        result = P.grade(P.variants[label], {k: namespace[k] for k in P.checks if k in namespace},
                         keys=[k for k in P.checks if k != "run_probe"])
        assert result.full_marks, result.feedback


@pytest.mark.parametrize("bad", [
    {},
    {"run_probe": None, "zero_fraction_unscaled": "0.98", "zero_fraction_scaled": float("nan"),
     "loss_fp32": [0.02], "loss_unscaled": None, "loss_scaled": {"str": "x"}, "min_scale_exp": 10.5},
    {"run_probe": [{"error": "raised RuntimeError"}] * 4, "min_scale_exp": True},
    {"run_probe": [[[0.1], [0.5], {"float": "nan"}]] * 4},
])
def test_bad_answers_score_zero_without_raising(bad):
    q = P.variants["A"]
    result = P.grade(q, bad)
    assert result.score == 0
    assert len(result.feedback) == len(P.checks)


def test_solve_rejects_nonsense_parameters():
    base = dict(P.variants["A"])
    for change in ({"steps": 0}, {"weight_exp": -1}, {"scale_exp": 2.5}, {"lr": 0.0}, {"seed": True}):
        with pytest.raises(ValueError):
            P.solve(dict(base, **change))


def test_notebook_variants_are_the_problems():
    text = SOURCE.read_text()
    start = text.index("VARIANTS = {")
    node = ast.parse(text[start:text.index("\nSTUDENT", start)])
    assert ast.literal_eval(node.body[0].value) == P.variants
