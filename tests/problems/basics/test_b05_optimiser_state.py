"""b05-optimiser-state: Adam's state against ZeRO's account and torch's state_dict, and the grade."""
import pytest
import sympy
import torch

from graders import problems
from graders.problems.basics.b05_optimiser_state import state_after_one_step

P = problems.get("b05-optimiser-state")
GB = 1e9


def test_zero_section_3_1_gpt2_1_5b():
    # Rajbhandari et al. 2020, §3.1: mixed-precision Adam holds "an fp32 copy of the
    # parameters, momentum and variance" (K = 12); "2Ψ + 2Ψ + KΨ = 16Ψ bytes"; "For a model
    # such as GPT-2 with 1.5 Billion parameters, this leads to a memory requirement of at
    # least 24 GB", against "3 GB ... to hold the fp16 parameters alone".
    q = {**P.variants["A"], "N": 1.5e9, "precision": "mixed"}
    r = P.solve(q)
    assert r["adam_bytes_per_param"] == 12
    assert (r["optimizer_bytes"] + 2 * 1.5e9 + 2 * 1.5e9) / GB == pytest.approx(24)
    assert 2 * 1.5e9 / GB == pytest.approx(3)
    # fp32 weights and gradients with Adam's m and v: also 16 bytes per parameter
    fp32 = P.solve({**q, "precision": "fp32"})
    assert (fp32["optimizer_bytes"] + 4 * 1.5e9 + 4 * 1.5e9) / GB == pytest.approx(24)


@pytest.mark.parametrize("label", "ABCD")
def test_state_dict_bytes_match_an_independent_count(label):
    # torch.optim.AdamW keeps, per parameter tensor, a 0-d float32 `step` and fp32 `exp_avg`
    # and `exp_avg_sq` (+ `max_exp_avg_sq` with amsgrad): 8n (or 12n) + 4 per tensor.
    q = P.variants[label]
    widths, bias = q["widths"], q["bias"]
    n = sum(a * b for a, b in zip(widths, widths[1:])) + (sum(widths[1:]) if bias else 0)
    tensors = (len(widths) - 1) * (2 if bias else 1)
    moments = 3 if q["amsgrad"] else 2
    r = P.solve(q)
    assert r["state_dict_bytes"] == 4 * moments * n + 4 * tensors
    assert r["state_tensors"] == (moments + 1) * tensors


def test_state_dict_holds_the_documented_keys_and_no_weights():
    state = state_after_one_step([3, 5, 2], True, False)
    assert sorted(state) == [0, 1, 2, 3]
    assert all(set(entry) == {"step", "exp_avg", "exp_avg_sq"} for entry in state.values())
    assert all(entry["step"].dim() == 0 and entry["step"].dtype == torch.float32
               for entry in state.values())
    with_ams = state_after_one_step([3, 5, 2], True, True)
    assert all("max_exp_avg_sq" in entry for entry in with_ams.values())


def test_state_is_empty_before_the_first_step():
    model = torch.nn.Linear(3, 2)
    assert torch.optim.AdamW(model.parameters()).state_dict()["state"] == {}


def _gpt2_params(layers, d, vocab=50257, context=1024):
    return vocab * d + context * d + layers * (12 * d * d + 13 * d) + 2 * d


def test_real_models_parameter_counts_follow_from_their_configs():
    # GPT-2 124M and XL (HF configs: 12 x 768 and 48 x 1600, vocab 50257, context 1024)
    assert P.variants["B"]["N"] == _gpt2_params(12, 768)
    assert P.variants["D"]["N"] == _gpt2_params(48, 1600)
    # GPT-NeoX-20B (configs/20B.yml: 44 layers, hidden 6144, untied embeddings, padded
    # vocabulary 50,432); its model card prints 20,554,567,680
    d = 6144
    assert P.variants["A"]["N"] == 44 * (12 * d * d + 13 * d) + 2 * 50_432 * d + 2 * d
    # Llama 2 70B (80 layers, d 8192, 8 KV heads of 128, FFN 28672, vocab 32000, RMSNorm)
    d, kv, ffn = 8192, 8 * 128, 28_672
    layer = 2 * d * d + 2 * d * kv + 3 * d * ffn + 2 * d
    assert P.variants["C"]["N"] == 80 * layer + 2 * 32_000 * d + d


@pytest.mark.parametrize("bad", [{"widths": [4]}, {"widths": [4, 0]}, {"widths": "4,3"},
                                 {"bias": 1}, {"precision": "bf16"}, {"N": -1}])
def test_invalid_parameters_raise(bad):
    with pytest.raises(ValueError):
        P.solve({**P.variants["B"], **bad})


# --- the grade ---------------------------------------------------------------------------

def test_interface():
    assert (P.strand, P.kind, P.assignment) == ("basics", "basics", "basics")


def test_variants_differ():
    answers = [P.solve(q) for q in P.variants.values()]
    for key in ("state_tensors", "state_dict_bytes", "optimizer_bytes"):
        assert len({a[key] for a in answers}) == 4, key
    assert {a["adam_bytes_per_param"] for a in answers} == {8, 12}


def test_expression_and_symbols():
    q = P.variants["C"]
    N = sympy.Symbol("N", positive=True)
    answers = P.solve(q)
    answers["optimizer_bytes_expr"] = 4 * N + 4 * N + 4 * N
    assert P.grade(q, answers, keys=["optimizer_bytes_expr"]).full_marks
    answers["optimizer_bytes_expr"] = 12 * sympy.Symbol("Psi")
    assert P.grade(q, answers, keys=["optimizer_bytes_expr"]).score == 0


@pytest.mark.parametrize("bad", [None, "5424", float("nan"), [5424], {"str": "x"}, True, 5424.5])
def test_bad_answers_score_zero_without_raising(bad):
    q = P.variants["A"]
    r = P.grade(q, {**P.solve(q), "state_dict_bytes": bad})
    assert not r.outcomes["state_dict_bytes"].passed
    assert r.score == r.max_score - 1


def test_missing_key_and_non_dict_score_zero():
    q = P.variants["D"]
    answers = P.solve(q)
    del answers["optimizer_bytes"]
    r = P.grade(q, answers)
    assert r.score == r.max_score - 1 and "missing" in " ".join(r.feedback)
    assert P.grade(q, "x").score == 0


def test_reference_leaves_threads_and_random_state_alone_and_survives_fork():
    # graders fork worker processes; a child whose parent has used torch's OpenMP pool
    # deadlocks on its first parallel op unless it runs on one thread
    import os
    import time

    threads = torch.get_num_threads()
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    P.solve(P.variants["D"])
    assert torch.get_num_threads() == threads
    assert torch.equal(torch.rand(3), expected)
    a = torch.randn(256, 256)
    (a @ a).sum()                                   # the parent now has a live thread pool
    pid = os.fork()
    if pid == 0:                                    # pragma: no cover - runs in the child
        ok = P.solve(P.variants["D"])["state_dict_bytes"] == 8 * (128 * 256 + 256 * 128) + 4 * 2
        os._exit(0 if ok else 1)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    raise AssertionError("the reference deadlocked in a forked process")
