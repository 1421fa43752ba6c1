"""e07-communication: the reference against printed measurements and sources, simulations, the gate."""
import ast
import pathlib

import numpy as np
import pytest
import sympy

from graders import hardware, problems
from graders.problems.exercises.e07_communication import SYSTEMS, plain_dp_state_bytes
from graders.problems.worked.w4_activations import per_layer

PROBLEM = problems.get("e07-communication")
NOTEBOOK = pathlib.Path(__file__).resolve().parents[3] / "source" / "exercises" / "e07-communication.pct.py"

# Rows of all_reduce_perf output (float32, out-of-place), as printed in NVIDIA's trackers:
# (ranks, size in bytes, time in us, algbw GB/s, busbw GB/s).
# - NVIDIA/nccl issue #1161: 2 x H100 PCIe joined by NVLink, `-b 1G -e 8G -f 2 -g 2`.
# - NVIDIA/nccl issue #1411: 8 ranks, 4 GPUs on each node (busbw/algbw = 1.75 = 2*7/8).
NCCL_TESTS_ROWS = [
    (2, 1_073_741_824, 9306.7, 115.37, 115.37),
    (8, 268_435_456, 2946.6, 91.10, 159.43),
]

# NVIDIA/nccl-tests issue #212, NCCL maintainer's comment: on 8 H100 with NVLink SHARP,
# "a peak busBw of ~480GB/s (algbw ~275GB/s)".
H100_NVLS_BUSBW, H100_NVLS_ALGBW = 480e9, 275e9

# ZeRO (Rajbhandari et al., SC 2020) §7.2.2: "The total volume is therefore 3Psi which is
# 1.5x compared to the baseline" (baseline data parallelism: 2Psi, §7.1).
ZERO3_PRINTED_RATIO = 1.5


def _params(**overrides):
    base = {"N": 1_000_000, "bytes_per_grad": 4, "weight_bytes": 4, "P": 8, "bus_bandwidth": 100e9,
            "stages": 4, "microbatches": 8}
    return dict(base, **overrides)


@pytest.mark.parametrize("ranks, size, time_us, algbw, busbw", NCCL_TESTS_ROWS)
def test_allreduce_time_matches_nccl_tests_rows(ranks, size, time_us, algbw, busbw):
    """Bytes per device over the printed busbw gives the printed time (and busbw/algbw = 2(n-1)/n)."""
    assert busbw / algbw == pytest.approx(2 * (ranks - 1) / ranks, rel=2e-3)
    answers = PROBLEM.solve(_params(N=size // 4, bytes_per_grad=4, P=ranks, bus_bandwidth=busbw * 1e9))
    assert answers["allreduce_seconds"] * 1e6 == pytest.approx(time_us, rel=1e-3)


def test_algbw_from_busbw_matches_the_maintainers_h100_figures():
    """On 8 ranks a busbw of ~480 GB/s is an algbw of ~275 GB/s (message size / time)."""
    size = 8 * 2**30
    answers = PROBLEM.solve(_params(N=size // 2, bytes_per_grad=2, P=8, bus_bandwidth=H100_NVLS_BUSBW))
    assert size / answers["allreduce_seconds"] == pytest.approx(H100_NVLS_ALGBW, rel=0.01)


def test_zero3_ratio_is_the_papers_when_both_are_16_bit():
    """With 16-bit parameters and gradients the byte ratio is ZeRO's printed 1.5 (3 Psi / 2 Psi)."""
    for p in (2, 8, 1024):
        ratio = PROBLEM.solve(_params(weight_bytes=2, bytes_per_grad=2, P=p))["zero3_volume_ratio"]
        assert ratio == pytest.approx(ZERO3_PRINTED_RATIO)


@pytest.mark.parametrize("weight_bytes, bytes_per_grad, ratio", [
    (2, 4, (2 + 2 + 4) / (4 + 4)),     # bf16 parameters gathered, fp32 gradients reduced: 1
    (4, 4, (4 + 4 + 4) / (4 + 4)),     # all fp32: the paper's 1.5 again
    (1, 4, (1 + 1 + 4) / (4 + 4)),     # FP8 all-gather, fp32 gradients
    (4, 2, (4 + 4 + 2) / (2 + 2)),     # fp32 parameters, bf16 gradient reduction
])
def test_zero3_ratio_weighs_each_collective_by_its_width(weight_bytes, bytes_per_grad, ratio):
    """Two all-gathers at weight_bytes and a reduce-scatter at bytes_per_grad, over an all-reduce."""
    answers = PROBLEM.solve(_params(weight_bytes=weight_bytes, bytes_per_grad=bytes_per_grad))
    assert answers["zero3_volume_ratio"] == pytest.approx(ratio, rel=1e-12)


def test_zero3_ratio_at_one_device_is_an_error():
    """With P = 1 nothing moves; the ratio is 0/0 and solve says so."""
    with pytest.raises(ValueError, match="P = 1"):
        PROBLEM.solve(_params(P=1))


def test_zero3_ratio_differs_across_variants():
    """The ratio is hard to memorise: the variants give three different values. Real recipes
    gather at a width no wider than they reduce (fp8/fp32, bf16/fp32, equal widths), so only
    three ratios are real; A and D share the paper's 1.5 and differ in every other answer."""
    ratios = {round(PROBLEM.solve(q)["zero3_volume_ratio"], 9) for q in PROBLEM.variants.values()}
    assert len(ratios) >= 3
    for q in PROBLEM.variants.values():
        assert q["weight_bytes"] <= q["bytes_per_grad"]


@pytest.mark.parametrize("label", "ABCD")
def test_every_variant_reduces_with_a_ring(label):
    """The ring count is what goes on the wire only where no switch reduces: no variant runs its
    data parallelism over NVLink SHARP (nccl-tests issues #212, #366; NCCL issue #1455), and the
    bus bandwidth is a ring's, not the ~480 GB/s NVLink SHARP figure."""
    assert "SHARP" not in SYSTEMS[label]["layout"]
    assert PROBLEM.variants[label]["bus_bandwidth"] < H100_NVLS_BUSBW


@pytest.mark.parametrize("label", "ABCD")
def test_every_variant_could_run(label):
    """Parallel degrees multiply to the device count, N is the model over its shards, and
    plain data parallelism's model states fit in 80% of the named device's memory."""
    q, system = PROBLEM.variants[label], SYSTEMS[label]
    device = hardware.ACCELERATORS[system["device"]]
    devices = system["nodes"] * system["devices_per_node"]
    assert q["P"] * q["stages"] * system["tensor_parallel"] == devices
    shards = q["stages"] * system["tensor_parallel"]
    assert q["N"] == pytest.approx(system["model_params"] / shards, abs=1)
    assert system["device_memory_bytes"] == device.memory_bytes
    assert plain_dp_state_bytes(q) <= 0.8 * device.memory_bytes
    assert q["microbatches"] >= q["stages"]      # every stage has work in the steady state


# Each variant's model as its sources print it: (layers, width h, heads a, key-value heads, SwiGLU
# width f or None for a GPT's 4h GeLU MLP, sequence length s).
# - A, "a 13B GPT": GPT-3 13B, Brown et al. 2020, Table 2.1 (40 layers, d_model 5140, 40 heads),
#   with GPT-3's context of 2048 tokens.
# - B, Llama 2 7B: Touvron et al. 2023, Table 1 (4k context) on Llama 1's 7B shape (32 layers,
#   4096 wide, 32 heads), with the released model's SwiGLU width 11008.
# - C, "a 70B model", taken as Llama 2 70B's shape (80 layers, 8192 wide, 64 heads sharing 8
#   key-value heads (grouped-query attention, section 2.2), SwiGLU 28672, 4k).
# - D, GPT-3 175B: Table 2.1 (96 layers, 12288 wide, 96 heads), context 2048.
MODELS = {"A": (40, 5140, 40, 40, None, 2048), "B": (32, 4096, 32, 32, 11008, 4096),
          "C": (80, 8192, 64, 8, 28672, 4096), "D": (96, 12288, 96, 96, None, 2048)}


def layer_activation_bytes(h, a, f, s):
    """What backward keeps of one layer for one sequence, 16-bit. A GPT (dropout, materialised
    attention scores): Korthikanti et al. 2022, eq. 1, as w4-activations counts it. A Llama layer
    (no dropout, flash attention): 2s(8h + 4f), as b09-mixed-precision counts it (with
    grouped-query attention its K and V are smaller, so this is an upper bound)."""
    return per_layer(s, 1, h, a, "none") if f is None else 2 * s * (8 * h + 4 * f)


@pytest.mark.parametrize("label", "ABCD")
def test_every_variants_activations_fit_beside_its_model_states(label):
    """The notebook leaves 20% of the device for activations. Under GPipe's own schedule (Huang et
    al. 2019, section 2.3: re-materialisation keeps only each micro-batch's activations at the
    stage's boundary, 2sh bytes, and recomputes the stage's forward during its backward), a stage
    holds every micro-batch's boundary and one micro-batch's layers: with micro-batches of one
    sequence, that fits beside plain data parallelism's model states in the device's memory."""
    q, system = PROBLEM.variants[label], SYSTEMS[label]
    layers, h, a, kv, f, s = MODELS[label]
    assert layers % q["stages"] == 0
    per_stage = layers // q["stages"]
    attention = 2 * h * h + 2 * h * (h * kv // a)                 # Q and O, then K and V
    shape_params = layers * (attention + (8 * h * h if f is None else 3 * h * f))
    assert q["N"] * q["stages"] == pytest.approx(shape_params, rel=0.08)          # the model is the one named
    boundary = per_layer(s, 1, h, a, "full")                      # one 16-bit copy of the stage's input
    activations = q["microbatches"] * boundary + per_stage * layer_activation_bytes(h, a, f, s)
    assert plain_dp_state_bytes(q) + activations <= system["device_memory_bytes"]


def test_notebook_systems_match_problem():
    """The notebook's SYSTEMS literal (what each variant runs on) is the problem's, exactly."""
    tree = ast.parse(NOTEBOOK.read_text())
    literal = next(node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                   and any(getattr(t, "id", None) == "SYSTEMS" for t in node.targets))
    assert ast.literal_eval(literal) == SYSTEMS


def _ring_allreduce(buffers):
    """Ring reduce-scatter then all-gather on P equal buffers; returns (results, elements sent per device)."""
    p = len(buffers)
    chunks = [np.array_split(b.copy(), p) for b in buffers]
    sent = [0] * p
    scattered = None
    for step in range(p - 1):                      # reduce-scatter
        moves = [(i, (i - step) % p) for i in range(p)]
        payload = [chunks[i][c].copy() for i, c in moves]
        for (i, c), data in zip(moves, payload):
            chunks[(i + 1) % p][c] += data
            sent[i] += data.size
    scattered = list(sent)
    for step in range(p - 1):                      # all-gather
        moves = [(i, (i + 1 - step) % p) for i in range(p)]
        payload = [chunks[i][c].copy() for i, c in moves]
        for (i, c), data in zip(moves, payload):
            chunks[(i + 1) % p][c] = data
            sent[i] += data.size
    return [np.concatenate(c) for c in chunks], sent, scattered


@pytest.mark.parametrize("p", [2, 3, 8, 12])
def test_ring_simulation_sends_what_solve_counts(p):
    """A simulated ring all-reduce sums correctly and each device sends 2(P-1)/P of the buffer."""
    rng = np.random.default_rng(p)
    length = 24 * p
    buffers = [rng.integers(-1000, 1000, length) for _ in range(p)]
    results, sent, _ = _ring_allreduce(buffers)
    for result in results:
        np.testing.assert_array_equal(result, sum(buffers))
    expected = PROBLEM.solve(_params(N=length, bytes_per_grad=1, P=p))["allreduce_bytes_per_device"]
    assert sent == [pytest.approx(expected)] * p


@pytest.mark.parametrize("p, weight_bytes, bytes_per_grad", [(2, 2, 2), (4, 2, 4), (8, 1, 4), (6, 4, 2)])
def test_zero3_ratio_matches_simulated_collectives(p, weight_bytes, bytes_per_grad):
    """Bytes of two simulated ring all-gathers and one reduce-scatter, over a simulated all-reduce."""
    length = 12 * p
    rng = np.random.default_rng(p)
    _, allreduce_sent, scatter_sent = _ring_allreduce([rng.integers(0, 9, length) for _ in range(p)])
    gather_sent = [a - s for a, s in zip(allreduce_sent, scatter_sent)]   # the all-gather phase alone
    zero3 = 2 * gather_sent[0] * weight_bytes + scatter_sent[0] * bytes_per_grad
    plain = allreduce_sent[0] * bytes_per_grad
    answers = PROBLEM.solve(_params(N=length, P=p, weight_bytes=weight_bytes, bytes_per_grad=bytes_per_grad))
    assert answers["zero3_volume_ratio"] == pytest.approx(zero3 / plain, rel=1e-12)


def _gpipe_makespan(stages, microbatches, t_forward, t_backward):
    """Finish time of a GPipe step: all forwards, then all backwards, each waiting on its inputs."""
    forward = np.zeros((stages, microbatches))
    for s in range(stages):
        for j in range(microbatches):
            ready = max(forward[s - 1][j] if s else 0.0, forward[s][j - 1] if j else 0.0)
            forward[s][j] = ready + t_forward
    backward = np.zeros((stages, microbatches))
    for s in reversed(range(stages)):
        for j in range(microbatches):
            ready = max(backward[s + 1][j] if s < stages - 1 else forward[s][-1],
                        backward[s][j - 1] if j else forward[s][-1])
            backward[s][j] = ready + t_backward
    return backward[0][-1]


@pytest.mark.parametrize("stages, microbatches", [(1, 4), (4, 1), (4, 8), (8, 32), (12, 12)])
def test_bubble_matches_a_simulated_gpipe_step(stages, microbatches):
    """The idle share of a simulated GPipe schedule is (n_stages-1)/(n_micro+n_stages-1)."""
    t_f, t_b = 1.0, 2.0
    makespan = _gpipe_makespan(stages, microbatches, t_f, t_b)
    idle_share = 1 - microbatches * (t_f + t_b) / makespan
    answers = PROBLEM.solve(_params(stages=stages, microbatches=microbatches))
    assert answers["bubble_fraction"] == pytest.approx(idle_share, abs=1e-12)


@pytest.mark.parametrize("stages, microbatches", [(4, 8), (8, 32), (16, 64)])
def test_bubble_relates_to_narayanans_ratio(stages, microbatches):
    """GPipe's idle share is r/(1+r) where r = (p-1)/m is Narayanan et al.'s bubble time fraction."""
    r = (stages - 1) / microbatches
    answers = PROBLEM.solve(_params(stages=stages, microbatches=microbatches))
    assert answers["bubble_fraction"] == pytest.approx(r / (1 + r))


def test_bubble_expr_is_gpipes():
    """bubble_expr is (n_stages-1)/(n_micro+n_stages-1) in the problem's symbols."""
    k, m = sympy.symbols("n_stages n_micro", positive=True)
    expr = PROBLEM.solve(PROBLEM.variants["A"])["bubble_expr"]
    assert sympy.simplify(expr - (k - 1) / (m + k - 1)) == 0


def test_variants_differ():
    """The four variants give four different sets of numbers."""
    keys = ("allreduce_bytes_per_device", "allreduce_seconds", "bubble_fraction")
    rows = {tuple(round(PROBLEM.solve(p)[k], 9) for k in keys) for p in PROBLEM.variants.values()}
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
        answers = dict(PROBLEM.solve(params), **wrong)
        result = PROBLEM.grade(params, answers, keys=list(wrong))
        if result.score < result.max_score:
            hits.append(any(mistake.feedback in line for line in result.feedback))
    assert hits and all(hits)


@pytest.mark.parametrize("bad", [
    {},                                                     # every key missing
    {"allreduce_seconds": "0.02 s"},                        # a string
    {"bubble_fraction": float("nan")},                      # NaN
    {"allreduce_bytes_per_device": {"bytes": 1}},           # a dict
    {"bubble_expr": (sympy.Symbol("p") - 1) / sympy.Symbol("m")},   # Narayanan's letters
    {"bubble_expr": "(K-1)/(M+K-1)"},                       # a string, never parsed
    {"bubble_expr": (sympy.Symbol("K", positive=True) - 1)  # GPipe's letters, not the notebook's
     / (sympy.Symbol("M", positive=True) + sympy.Symbol("K", positive=True) - 1)},
])
def test_bad_answers_score_zero_without_raising(bad):
    """Missing, mistyped or foreign answers score 0 on their keys and say why."""
    params = PROBLEM.variants["C"]
    keys = list(bad) or list(PROBLEM.checks)
    result = PROBLEM.grade(params, bad, keys=keys)
    assert result.score == 0
    assert len(result.feedback) == len(keys)


@pytest.mark.parametrize("key, value", [("P", 0), ("stages", 2.5), ("bus_bandwidth", float("inf")),
                                        ("N", "13B"), ("microbatches", True),
                                        ("weight_bytes", 0), ("weight_bytes", "bf16")])
def test_solve_refuses_invalid_parameters(key, value):
    """solve says which parameter is unusable instead of returning nonsense."""
    with pytest.raises(ValueError, match=key):
        PROBLEM.solve(dict(PROBLEM.variants["A"], **{key: value}))
