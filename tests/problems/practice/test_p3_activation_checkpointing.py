"""p3-activation-checkpointing: the measurement against torch and the printed counts, and the grade."""
import ast
import inspect
import json
import math
import warnings
from pathlib import Path

import pytest
import sympy
import torch

from graders import problems
from graders.notebook import gather
from graders.problem import one_torch_thread
from graders.problems.practice import p3_activation_checkpointing as mod

from tests.problems.notebook_cells import cell_sources, run_cells

P = problems.get("p3-activation-checkpointing")
ROOT = Path(__file__).resolve().parents[3]
SOURCE = ROOT / "source/practice/p3-activation-checkpointing.pct.py"


# Korthikanti et al. 2022, section 4.1 and Table 2 (no parallelism, 16-bit activations), per
# transformer layer, in units of sbh bytes: attention 11 (+ 5as/h), MLP 19 (fc1 input 2, GeLU
# input 8, fc2 input 8, dropout mask 1), two LayerNorms 2 each; total 34 (+ 5as/h).
KORTHIKANTI = {"attention": 11, "mlp": 19, "layernorms": 4, "total": 34,
               "mlp_parts": {"fc1_input": 2, "gelu_input": 8, "fc2_input": 8, "dropout_mask": 1},
               "layernorm_input": 2}


def harness_namespace(run_blocks, saved_tensor_stats):
    namespace = {"run_blocks": run_blocks, "saved_tensor_stats": saved_tensor_stats}
    return run_cells(SOURCE, ["harness"], namespace)


def test_interface():
    assert P.kind == "practice" and P.assignment == "practice" and P.strand == "practice"
    assert any(k.endswith("_expr") for k in P.checks)


def test_notebook_harness_is_the_modules():
    tree = ast.parse(cell_sources(SOURCE)["harness"])
    for obj in (mod.Block, mod.make_stack, mod.loss_of):
        node = next(n for n in tree.body if getattr(n, "name", None) == obj.__name__)
        assert ast.dump(node) == ast.dump(ast.parse(inspect.getsource(obj)).body[0]), obj.__name__
    # the probes in the notebook do what the module's reference does
    ns = harness_namespace(mod.reference_run_blocks, mod.reference_saved_stats)
    with one_torch_thread():
        for call in mod.probe_calls(P.variants["A"])[:3]:
            q = dict(zip(mod.ARGS, call))
            assert ns["saved_probe"](*call) == mod.measure(q)
            assert ns["grad_probe"](*call) == mod.gradients(q)


def test_notebook_variants_are_the_problems():
    text = SOURCE.read_text()
    start = text.index("VARIANTS = {")
    node = ast.parse(text[start:text.index("\nSTUDENT", start)])
    assert ast.literal_eval(node.body[0].value) == P.variants


@pytest.mark.parametrize("label", "ABCD")
def test_measurement_follows_the_count_per_block(label):
    # Per block, float32: LN input, mean, rstd, LN output, fc1 output, GELU output:
    # 4*B*s*(10d + 2) bytes; plus the output the loss saves. Checkpointed: one input per region.
    q = P.variants[label]
    out = P.solve(q)
    L, d, B, s, k = q["n_layers"], q["d"], q["batch"], q["seq"], q["segment"]
    regions = math.ceil(L / k)
    assert out["count_plain"] == 6 * L + 1
    assert out["bytes_plain"] == 4 * B * s * (L * (10 * d + 2) + d)
    assert out["count_ckpt"] == regions + 1
    assert out["bytes_ckpt"] == 4 * B * s * d * (regions + 1)
    assert out["forward_calls_ckpt"] == 2 * L
    S = {str(x): x for x in out["bytes_plain_expr"].free_symbols}
    assert out["bytes_plain_expr"].subs({S["B"]: B, S["s"]: s, S["d"]: d, S["L"]: L}) == out["bytes_plain"]


def test_the_mlp_count_is_the_mlp_half_of_korthikantis_count():
    k = KORTHIKANTI
    assert k["attention"] + k["mlp"] + k["layernorms"] == k["total"]
    assert sum(k["mlp_parts"].values()) == k["mlp"]
    # Our block is their MLP half with its LayerNorm and no dropout: 20 sbh bytes in 16-bit.
    # In fp32 that doubles, and LayerNorm's mean and rstd add 2 floats (8 bytes) per token.
    s_, b_, h_ = 16, 2, 32
    sixteen_bit = (k["mlp"] - k["mlp_parts"]["dropout_mask"] + k["layernorm_input"]) * s_ * b_ * h_
    q = {"n_layers": 1, "d": h_, "batch": b_, "seq": s_, "segment": 1, "seed": 0}
    per_block = mod.measure(dict(q, segment=0))[1] - 4 * b_ * s_ * h_      # minus the loss's tensor
    assert per_block == 2 * sixteen_bit + 8 * s_ * b_


def test_checkpointed_gradients_are_bit_identical_and_blocks_run_twice():
    for call in mod.probe_calls(P.variants["B"]):
        q = dict(zip(mod.ARGS, call))
        calls, identical, _ = mod.gradients(q)
        assert identical == 1
        assert calls == (2 if q["segment"] else 1) * q["n_layers"]


def test_reentrant_checkpointing_loses_the_gradients_when_the_input_needs_none():
    # what the notebook says about use_reentrant=True
    blocks, x = mod.make_stack(3, 8, 1, 4, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h = x
        for block in blocks:
            h = torch.utils.checkpoint.checkpoint(block, h, use_reentrant=True)
    assert not h.requires_grad


def test_checkpoint_sequential_leaves_its_last_segment_plain():
    # what the notebook says about checkpoint_sequential (and the mistake "last-segment-plain")
    q = {"n_layers": 6, "d": 8, "batch": 1, "seq": 4, "segment": 2, "seed": 0}
    blocks, x = mod.make_stack(*(q[k] for k in ("n_layers", "d", "batch", "seq", "seed")))
    count, nbytes = mod.reference_saved_stats(
        lambda: mod.loss_of(torch.utils.checkpoint.checkpoint_sequential(blocks, 3, x, use_reentrant=False)),
        blocks.parameters())
    assert [count, nbytes] == mod.measure(q, "last-segment-plain")
    assert [count, nbytes] != mod.measure(q)


def test_probe_calls_are_deterministic_and_cover_plain_and_uneven_regions():
    calls = P.probes(P.variants["A"])["saved_probe"].calls
    assert calls == P.probes(P.variants["A"])["saved_probe"].calls
    assert calls != P.probes(P.variants["C"])["saved_probe"].calls
    assert any(c[4] == 0 for c in calls)
    assert any(c[4] and c[0] % c[4] for c in calls)       # a shorter last region
    json.dumps(calls)


def test_variants_differ():
    outs = [P.solve(q) for q in P.variants.values()]
    for key in ("bytes_plain", "bytes_ckpt", "memory_ratio", "count_plain"):
        assert len({o[key] for o in outs}) == 4, key


def _isinstance_stats(fn, parameters):
    return mod.reference_saved_stats(fn, parameters, "isinstance-parameter")


def _storage_bytes_stats(fn, parameters):
    """Counts bytes by storage size: the same numbers here (no saved tensor is a partial view)."""
    storages = {p.untyped_storage().data_ptr() for p in parameters}
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        fn()
    kept = [t for t in saved if t.untyped_storage().data_ptr() not in storages]
    return len(kept), sum(t.untyped_storage().nbytes() for t in kept)


def test_gathered_student_functions():
    q = P.variants["D"]
    keys = P.cells["check_functions"]
    with one_torch_thread():
        for run, stats in ((mod.reference_run_blocks, mod.reference_saved_stats),
                           (mod.reference_run_blocks, _storage_bytes_stats)):
            result = P.grade(q, gather(P, q, keys, harness_namespace(run, stats)), keys=keys)
            assert result.full_marks, result.feedback
        bad = P.grade(q, gather(P, q, keys, harness_namespace(mod.reference_run_blocks, _isinstance_stats)),
                      keys=keys)
        assert bad.outcomes["saved_probe"].status == "fail"
        assert any(P.mistakes[1].feedback in line for line in bad.feedback)

        def never_checkpoints(blocks, x, segment):
            return mod.reference_run_blocks(blocks, x, 0)

        lazy = P.grade(q, gather(P, q, keys, harness_namespace(never_checkpoints, mod.reference_saved_stats)),
                       keys=keys)
        assert lazy.score == 0

    def unwritten(*args):
        raise NotImplementedError

    blank = P.grade(q, gather(P, q, keys, harness_namespace(unwritten, unwritten)), keys=keys)
    assert blank.score == 0


@pytest.mark.parametrize("bad", [
    {},
    {"count_plain": 37.5, "bytes_plain": "251392", "count_ckpt": None, "bytes_ckpt": [1], "memory_ratio": math.nan,
     "forward_calls_ckpt": True, "bytes_plain_expr": "4*B*s", "saved_probe": None, "grad_probe": 3},
    {"count_plain": -1, "bytes_plain": 0, "count_ckpt": 0, "bytes_ckpt": 0, "memory_ratio": 0.0,
     "forward_calls_ckpt": 0, "bytes_plain_expr": 4 * sympy.Symbol("N"),
     "saved_probe": [{"error": "raised NotImplementedError"}] * 5, "grad_probe": [[1, 1, [math.inf]]] * 5},
])
def test_bad_answers_score_zero_without_raising(bad):
    q = P.variants["A"]
    result = P.grade(q, bad)
    assert result.score == 0
    assert len(result.feedback) == len(P.checks)


def test_solve_rejects_nonsense_parameters():
    base = dict(P.variants["A"])
    for change in ({"segment": 0}, {"segment": 7}, {"n_layers": 0}, {"d": 2.5}, {"batch": -1}):
        with pytest.raises(ValueError):
            P.solve(dict(base, **change))
