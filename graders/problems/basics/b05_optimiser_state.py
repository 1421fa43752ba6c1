"""b05-optimiser-state: what Adam remembers, per parameter and in a state dict.

Adam keeps two running averages per parameter, the first moment m (exp_avg) and
the second moment v (exp_avg_sq), each an fp32 number: 8 bytes per parameter
beside fp32 weights. When the weights themselves are 16-bit (fp16 or bf16, as
in Megatron-LM and DeepSpeed), the optimiser also holds an fp32 master copy of
every weight, and its state is K = 12 bytes per parameter (Rajbhandari et al.,
ZeRO, SC 2020, section 3.1). Autocast runs keep fp32 weights, so they are the
8-byte case.

torch.optim.AdamW creates its state lazily at the first step: per parameter
tensor, `step` (a 0-dimensional float32 tensor), `exp_avg` and `exp_avg_sq`
(fp32, the shape of the parameter), and with amsgrad=True also `max_exp_avg_sq`.
The reference counts the bytes of these tensors in a real state_dict() of the
variant's small model after one step, so it is torch's own account.

The real models of the variants, with N as their architectures give it:
- A: GPT-NeoX-20B, 20,554,567,680 parameters (its model card; configs/20B.yml gives
  44 layers of 12·6144² + 13·6144 and untied 50,432 x 6144 embeddings), trained
  in fp16 with DeepSpeed: "mixed".
- B: GPT-2 124M, 124,439,808 parameters (12 layers of 12·768² + 13·768, token
  and position embeddings, final norm), as nanoGPT trains it under autocast: "fp32".
- C: Llama 2 70B, 68,976,648,192 parameters (80 layers, d 8192, 8 KV heads, FFN
  28672, untied 32000-token embeddings): "mixed".
- D: GPT-2 XL, 1,557,611,200 parameters (48 layers, d 1600): "fp32".
"""
import math

import torch

from graders.numeric import Count, Number
from graders.problem import Mistake, Problem, one_torch_thread
from graders.symbolic import Expr, symbols_for
from graders.units import byte_unit_slips

ADAM_BYTES = {"fp32": 8, "mixed": 12}       # optimiser-state bytes per parameter
FP32 = 4


def _read(q):
    widths = q["widths"]
    if not isinstance(widths, (list, tuple)) or len(widths) < 2 or len(widths) > 12:
        raise ValueError("widths must list 2 to 12 layer widths")
    for w in widths:
        if isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= 4096:
            raise ValueError(f"each width must be an int from 1 to 4096, not {w!r}")
    for flag in ("bias", "amsgrad"):
        if not isinstance(q[flag], bool):
            raise ValueError(f"{flag} must be True or False")
    if q["precision"] not in ADAM_BYTES:
        raise ValueError(f"precision must be one of {sorted(ADAM_BYTES)}, not {q['precision']!r}")
    N = q["N"]
    if isinstance(N, bool) or not isinstance(N, (int, float)) or not math.isfinite(N) or N <= 0:
        raise ValueError(f"N must be a positive number, not {N!r}")
    return list(widths), q["bias"], q["amsgrad"], q["precision"], N


def tiny_model(widths, bias):
    """The variant's small network: Linear layers with ReLU between them."""
    layers = []
    for i in range(len(widths) - 1):
        layers.append(torch.nn.Linear(widths[i], widths[i + 1], bias=bias))
        if i < len(widths) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def state_after_one_step(widths, bias, amsgrad):
    """The `state` part of a real AdamW state_dict() after one step on the tiny model.

    On one intra-op thread (see `one_torch_thread`), leaving the caller's random state alone.
    """
    with one_torch_thread(), torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = tiny_model(widths, bias)
        optimiser = torch.optim.AdamW(model.parameters(), lr=1e-3, amsgrad=amsgrad)
        model(torch.randn(4, widths[0])).square().mean().backward()
        optimiser.step()
        return optimiser.state_dict()["state"]


def _layer_counts(widths, bias):
    weights = sum(a * b for a, b in zip(widths, widths[1:]))
    biases = sum(widths[1:]) if bias else 0
    tensors = (len(widths) - 1) * (2 if bias else 1)
    return weights + biases, tensors


def _answers(q, *, moments=None, with_step=True, weights_too=False, adam_bytes=None):
    """The answers. Without keywords the state is measured in torch; the keywords count it by
    hand the way the declared mistakes do (`moments` fp32 tensors per parameter tensor)."""
    widths, bias, amsgrad, precision, N = _read(q)
    K = ADAM_BYTES[precision] if adam_bytes is None else adam_bytes
    if moments is None and with_step and not weights_too:
        state = state_after_one_step(widths, bias, amsgrad)
        tensors = sum(len(entry) for entry in state.values())
        nbytes = sum(t.numel() * t.element_size() for entry in state.values() for t in entry.values())
    else:
        n, tensors_in_model = _layer_counts(widths, bias)
        moments = moments if moments is not None else (3 if amsgrad else 2)
        tensors = (moments + (1 if with_step else 0)) * tensors_in_model
        nbytes = FP32 * moments * n + (FP32 * tensors_in_model if with_step else 0)
        if weights_too:
            nbytes += FP32 * n
    s = symbols_for(("N",))
    return {
        "state_tensors": tensors,
        "state_dict_bytes": nbytes,
        "adam_bytes_per_param": K,
        "optimizer_bytes": K * N,
        "optimizer_bytes_expr": K * s["N"],
    }


def _only(keys, answers):
    return {k: v for k, v in answers.items() if k in keys}


class OptimiserStateProblem(Problem):
    id = "b05-optimiser-state"
    title = "Optimiser state: what Adam keeps, in bytes"
    strand = "basics"
    kind = "basics"
    assignment = "basics"
    symbols = ("N",)
    variants = {
        "A": {"widths": [16, 32, 4], "bias": True, "amsgrad": False, "N": 20_554_567_680,
              "precision": "mixed"},
        "B": {"widths": [64, 10], "bias": False, "amsgrad": True, "N": 124_439_808,
              "precision": "fp32"},
        "C": {"widths": [8, 8, 8, 2], "bias": True, "amsgrad": True, "N": 68_976_648_192,
              "precision": "mixed"},
        "D": {"widths": [128, 256, 128], "bias": False, "amsgrad": False, "N": 1_557_611_200,
              "precision": "fp32"},
    }
    checks = {
        "state_tensors": Count(),
        "state_dict_bytes": Count(),
        "adam_bytes_per_param": Count(),
        "optimizer_bytes": Number(rtol=1e-3),
        "optimizer_bytes_expr": Expr(symbols=("N",)),
    }
    cells = {
        "check_state_dict": ("state_tensors", "state_dict_bytes"),
        "check_model": ("adam_bytes_per_param", "optimizer_bytes", "optimizer_bytes_expr"),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake(
            "forgot-the-step-counter",
            "the per-tensor step counter was left out; AdamW keeps a 0-dimensional float32 `step` "
            "tensor for every parameter tensor, beside its moment tensors.",
            lambda q: _only(("state_tensors", "state_dict_bytes"),
                            _answers(q, with_step=False)),
            instant="the step counter AdamW keeps for each parameter tensor.",
        ),
        Mistake(
            "counted-the-weights",
            "the parameters themselves were counted in the optimiser's state dict; it refers to "
            "them by index and stores only what the optimiser adds (step and moments).",
            lambda q: _only(("state_dict_bytes",),
                            _answers(q, weights_too=True)),
            instant="what an optimiser's state dict stores, and what it only refers to.",
        ),
        Mistake(
            "ignored-amsgrad",
            "amsgrad was ignored; with amsgrad=True AdamW also keeps max_exp_avg_sq, a third fp32 "
            "tensor the shape of each parameter.",
            lambda q: _only(("state_tensors", "state_dict_bytes"), _answers(q, moments=2))
            if q["amsgrad"] else {},
            instant="the state that amsgrad keeps.",
        ),
        Mistake(
            "no-master-copy",
            "the fp32 master copy was left out; with 16-bit weights the optimiser keeps fp32 "
            "weights beside m and v, K = 4 + 4 + 4 = 12 bytes per parameter.",
            lambda q: _only(("adam_bytes_per_param", "optimizer_bytes", "optimizer_bytes_expr"),
                            _answers(q, adam_bytes=8)) if q["precision"] == "mixed" else {},
            instant="the fp32 master copy of the weights.",
        ),
        Mistake(
            "master-copy-in-fp32",
            "a master copy was added to an fp32 run; when the weights are already fp32 there is no "
            "second copy, and Adam's state is m and v, 8 bytes per parameter.",
            lambda q: _only(("adam_bytes_per_param", "optimizer_bytes", "optimizer_bytes_expr"),
                            _answers(q, adam_bytes=12)) if q["precision"] == "fp32" else {},
            instant="the precision this run's weights already have.",
        ),
        *byte_unit_slips(lambda q: {"optimizer_bytes": _answers(q)["optimizer_bytes"]}),
    )


PROBLEM = OptimiserStateProblem()
