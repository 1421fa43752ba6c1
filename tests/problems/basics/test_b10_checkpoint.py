"""b10-checkpoint: sizes against torch.save's own archive, parameter counts, and the grader."""
import io
import random
import zipfile

import numpy as np
import pytest
import torch

from graders import problems
from graders.course.gate import mistake_reasons

P = problems.get("b10-checkpoint")

OPTIMIZERS = {
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-3, weight_decay=0.1),
    "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    "rmsprop_momentum": lambda p: torch.optim.RMSprop(p, lr=1e-3, alpha=0.9, momentum=0.9),
}


def archive_payload(obj):
    """Bytes of tensor data torch.save writes: the sizes of its archive/data/<k> entries."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    archive = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    return sum(i.file_size for i in archive.infolist() if "/data/" in i.filename)


def trained_tiny(layers, optimizer):
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(a, b) for a, b in layers])
    opt = OPTIMIZERS[optimizer](model.parameters())
    for _ in range(2):
        opt.zero_grad()
        model(torch.randn(4, layers[0][0])).pow(2).mean().backward()
        opt.step()
    return model, opt


# --- (a) primary sources ------------------------------------------------------------------------

@pytest.mark.parametrize("label", "ABCD")
def test_tiny_payload_is_what_torch_save_writes(label):
    q = P.variants[label]
    model, opt = trained_tiny(q["tiny_layers"], q["optimizer"])
    measured = archive_payload({"model": model.state_dict(), "optimizer": opt.state_dict()})
    assert P.solve(q)["tiny_payload_bytes"] == measured


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_big_model_bytes_per_parameter_match_torch_state(optimizer):
    # one large tensor: the step counter is negligible, so payload / N is the bytes per parameter
    q = dict(P.variants["A"], optimizer=optimizer, N=1)
    per_param = P.solve(q)["checkpoint_bytes"]
    model, opt = trained_tiny([[300, 300]], optimizer)
    n = sum(p.numel() for p in model.parameters())
    measured = archive_payload({"model": model.state_dict(), "optimizer": opt.state_dict()})
    assert measured / n == pytest.approx(per_param, rel=1e-4)


def test_a_full_checkpoint_adds_only_small_items():
    model, opt = trained_tiny([[64, 64], [64, 8]], "adamw")
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: 1.0)
    core = {"model": model.state_dict(), "optimizer": opt.state_dict()}
    full = dict(core, scheduler=sched.state_dict(), data={"epoch": 1, "batch": 7},
                rng={"torch": torch.get_rng_state(), "numpy": np.random.get_state(),
                     "python": random.getstate()})
    # the only extra tensor is torch's CPU generator state (5056 bytes)
    assert archive_payload(full) - archive_payload(core) == torch.get_rng_state().numel() == 5056


def test_parameter_counts_from_the_architectures():
    # GPT-2 XL (Radford et al. 2019, Table 2: 48 layers, d_model 1600; vocabulary 50257, context
    # 1024; tied output head). The paper prints "1542M"; the architecture gives 1,557,611,200.
    d, layers = 1600, 48
    gpt2_xl = 50257 * d + 1024 * d + layers * (12 * d * d + 13 * d) + 2 * d
    assert P.variants["A"]["N"] == gpt2_xl
    assert round(gpt2_xl / 1e6) != 1542
    # Llama 2 7B (Touvron et al. 2023; the released config: vocabulary 32000, width 4096, 32
    # layers, SwiGLU width 11008, RMSNorm, untied output head)
    d, layers, ffn = 4096, 32, 11008
    llama = 2 * 32000 * d + layers * (4 * d * d + 3 * d * ffn + 2 * d) + d
    assert P.variants["C"]["N"] == llama
    # ResNet-50: torchvision's count 25,557,032; EfficientNet-B4: Tan and Le 2019, Table 2, 19M
    assert P.variants["B"]["N"] == 25_557_032 and P.variants["D"]["N"] == 19_000_000


def test_adam_checkpoint_is_twelve_bytes_per_parameter():
    # ZeRO (Rajbhandari et al. 2020, section 3.1): K = 12 bytes of fp32 master weights, momentum
    # and variance per parameter for mixed-precision Adam; the checkpoint holds exactly those.
    q = P.variants["C"]
    assert P.solve(q)["checkpoint_bytes"] == 12 * q["N"]


def test_must_hold_depends_on_the_scaler_only():
    for q in P.variants.values():
        held = P.solve(q)["must_hold"]
        assert {0, 2, 3, 4, 5} <= set(held) and not {1, 6, 7} & set(held)
        assert (8 in held) == (q["precision"] == "fp16")


def test_bad_parameters_are_refused():
    for change in ({"N": 0}, {"optimizer": "lion"}, {"precision": "fp8"}, {"tiny_layers": []},
                   {"tiny_layers": [[3, 0]]}, {"tiny_layers": [[3, 4, 5]]}):
        with pytest.raises(ValueError):
            P.solve(dict(P.variants["A"], **change))


# --- (b) the grader -----------------------------------------------------------------------------

def test_interface():
    assert P.strand == "basics" and P.kind == "basics" and P.assignment == "basics"


def test_variants_differ():
    answers = [P.solve(q) for q in P.variants.values()]
    assert len({(a["checkpoint_bytes"], a["tiny_payload_bytes"]) for a in answers}) == 4
    assert len({tuple(a["must_hold"]) for a in answers}) == 2


def test_every_mistake_loses_points_and_is_named_wherever_it_is_wrong():
    assert mistake_reasons(P) == []


@pytest.mark.parametrize("answers", [
    {}, None, {"must_hold": "0,2,3"}, {"checkpoint_bytes": float("nan")},
    {"tiny_payload_bytes": 8128.5}, {"must_hold": [0.5]}, {"checkpoint_bytes": [1e9]},
])
def test_bad_answers_score_zero_without_raising(answers):
    result = P.grade(P.variants["A"], answers)
    assert result.score == 0 and len(result.feedback) == len(P.checks)


def test_feedback_never_contains_the_reference_value():
    q = P.variants["A"]
    ref = P.solve(q)
    text = "\n".join(P.grade(q, {"must_hold": [0], "checkpoint_bytes": 1.0, "tiny_payload_bytes": 1}).feedback)
    for key in ("checkpoint_bytes", "tiny_payload_bytes"):
        assert str(ref[key]) not in text and f"{ref[key]:g}" not in text
