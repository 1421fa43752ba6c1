"""p10-collectives: the ring factor and the stage-3 formula against what their sources print, the
reference against real gloo runs of the notebook's code, the launcher's failures, and the grader."""
import re
import time
from pathlib import Path

import pytest
import torch

from graders import problems
from graders.course.contract import load_chapters
from graders.course.gate import ItemReport
from graders.problem import one_torch_thread
from graders.problems.practice import p10_collectives as p10
from graders.course.status import chapter_status, render, shortfalls

from tests.problems.notebook_cells import run_cells

P = problems.get("p10-collectives")
ROOT = Path(__file__).resolve().parents[3]
SOURCE = ROOT / "source/practice/p10-collectives.pct.py"

# --- (a) what the sources print ------------------------------------------------------------------
# nccl-tests, doc/PERFORMANCE.md, "AllReduce": "busBW = algBW * 2(n-1)/n" (n ranks); the same
# factor in src/all_reduce.cu, `double factor = ((double)(2*(nranks - 1)))/((double)nranks);`.
def nccl_tests_allreduce_factor(nranks):
    return (2 * (nranks - 1)) / nranks


# ZeRO (Rajbhandari et al., SC 2020), Figure 1 and §5.3: Psi = 7.5B parameters, N_d = 64 devices,
# K = 12, mixed-precision Adam: baseline (2+2+K)Psi = 120 GB, stage 3 (2+2+K)Psi/N_d = 1.9 GB.
ZERO_FIGURE_1 = {"psi": 7.5e9, "n_d": 64, "k": 12, "baseline_gb": 120, "stage3_gb": 1.9}


def notebook_namespace():
    """The notebook's locked harness with its published ring and byte count."""
    return run_cells(SOURCE, ["harness", "answer_ring", "answer_state_bytes"])


@pytest.fixture(scope="module")
def notebook():
    with one_torch_thread():
        yield notebook_namespace()


def test_interface():
    """The practice item is registered where the chapter lists it, with its two probes."""
    assert (P.kind, P.strand, P.assignment) == ("practice", "practice", "practice")
    assert set(P.probes(P.variants["A"])) == {"ring_probe", "fsdp_probe"}
    assert "p10-collectives" in problems.ids()


@pytest.mark.parametrize("label", "ABCD")
def test_bus_factor_and_ring_bytes_are_nccl_tests_definition(label):
    """bus_factor is nccl-tests' all-reduce factor, and the ranks' mean traffic is exactly that times S."""
    q = P.variants[label]
    out = P.solve(q)
    assert out["bus_factor"] == nccl_tests_allreduce_factor(q["world"])
    assert out["ring_formula_bytes"] == pytest.approx(out["bus_factor"] * out["allreduce_input_bytes"], rel=1e-12)
    assert sum(out["ring_sent_bytes"]) / q["world"] == pytest.approx(out["ring_formula_bytes"], rel=1e-12)


def test_ring_traffic_is_the_formula_when_the_chunks_are_equal():
    """With P equal chunks every rank sends exactly 2(P-1)/P of the tensor; with unequal ones they differ."""
    for world in (2, 3, 4, 8):
        sent, received = p10.ring_traffic(24 * world, world, "float32")
        assert sent == received == [nccl_tests_allreduce_factor(world) * 24 * world * 4] * world
    sent, _ = p10.ring_traffic(1000, 3, "float32")
    assert len(set(sent)) > 1 and sum(sent) == 2 * 2 * 1000 * 4


def test_stage3_formula_reproduces_zero_figure_1():
    """(2+2+K)N/P with ZeRO's printed Psi, N_d and K gives its printed 120 GB and 1.9 GB."""
    z = ZERO_FIGURE_1
    assert (2 + 2 + z["k"]) * z["psi"] / 1e9 == z["baseline_gb"]
    assert round(p10.stage3_bytes(z["psi"], z["n_d"], 2, 2, z["k"]) / 1e9, 1) == z["stage3_gb"]


@pytest.mark.parametrize("label", "ABCD")
def test_stage3_formula_adapted_agrees_with_w1(label):
    """The adaptation (e+e+2e)N/P is w1's stage 3 with the run's own bytes: K=2e for 16-bit runs;
    in fp32 the 16 bytes per parameter coincide with ZeRO's 2+2+12."""
    q = P.variants[label]
    out = P.solve(q)
    w1 = problems.get("w1-memory")
    e = p10.ELEMENT_BYTES[q["model_dtype"]]
    k = 2 * e if e == 2 else 12
    expected = w1.solve({"N": out["n_params"], "P": q["world"], "K": k, "stage": 3})["per_device_bytes"]
    assert out["stage3_formula_bytes"] == pytest.approx(expected, rel=1e-12)
    torch.manual_seed(0)
    assert out["n_params"] == sum(p.numel() for p in p10.make_mlp(q["widths"], "float32", 0).parameters())


def test_shard_rows_follow_torch_chunk():
    """FSDP2's dim-0 cut is torch.chunk's, with empty shards on the ranks torch.chunk leaves out."""
    for rows in (1, 2, 3, 5, 7, 10, 30, 64):
        for world in (2, 3, 4):
            sizes = [c.shape[0] for c in torch.chunk(torch.zeros(rows), world)]
            assert p10.shard_rows(rows, world) == sizes + [0] * (world - len(sizes))
            assert p10.chunk_sizes(rows, world) == [c.numel() for c in torch.tensor_split(torch.zeros(rows), world)]


# --- (b) the reference against real runs on gloo -------------------------------------------------
@pytest.mark.parametrize("label", "ABCD")
def test_reference_is_what_the_real_run_measures(notebook, label):
    """The notebook's ring and FSDP runs, on gloo, measure exactly what the reference computes."""
    q = P.variants[label]
    out = P.solve(q)
    ring = notebook["ring_run"](q["world"], q["numel"], q["dtype"], q["seed"])
    assert ring[0] == out["ring_sent_bytes"]
    assert ring[1] == p10.ring_traffic(q["numel"], q["world"], q["dtype"])[1]
    assert ring[2] <= p10.SUM_TOLERANCE[q["dtype"]]
    held = notebook["fsdp_run"](q["world"], q["widths"], q["model_dtype"], q["seed"])
    assert [row[0] for row in held] == out["param_bytes_per_rank"]
    assert [row[1] for row in held] == out["grad_bytes_per_rank"]
    assert [row[2] for row in held] == out["optim_bytes_per_rank"]


def test_hidden_calls_pass_with_the_published_solution(notebook):
    """The published ring and count pass the hidden calls, judged against the reference."""
    q = P.variants["B"]
    calls = p10.probe_calls(q)
    answers = {"ring_probe": [notebook["ring_run"](*c) for c in calls["ring"]],
               "fsdp_probe": [notebook["fsdp_run"](*c) for c in calls["fsdp"]]}
    result = P.grade(q, answers, keys=["ring_probe", "fsdp_probe"])
    assert result.full_marks, result.feedback


# --- (c) real mistakes lose points, with their feedback ------------------------------------------
def reduce_scatter_only(tensor, rank, world, send, recv):
    """A ring that forgets the all-gather (the 'one-phase' mistake, as a student would write it)."""
    chunks = torch.tensor_split(tensor, world)
    for s in range(world - 1):
        buffer = torch.empty_like(chunks[(rank - s - 1) % world])
        handle = send(chunks[(rank - s) % world], (rank + 1) % world)
        recv(buffer, (rank - 1) % world)
        handle.wait()
        chunks[(rank - s - 1) % world].add_(buffer)


def global_numel(model, optimizer):
    """A count that takes p.numel() of a DTensor, the whole parameter (the 'unsharded' mistake)."""
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    moments = sum(v.numel() * v.element_size() for s in optimizer.state.values()
                  for k, v in s.items() if k in ("exp_avg", "exp_avg_sq"))
    return [params, params, moments]


def test_real_mistakes_lose_points_and_are_named(notebook):
    """A ring without its all-gather and a count of global sizes score 0 and get their mistake's hint."""
    q = P.variants["C"]
    calls = p10.probe_calls(q)
    ring = [notebook["ring_run"](*c, all_reduce=reduce_scatter_only) for c in calls["ring"]]
    fsdp = [notebook["fsdp_run"](*c, count=global_numel) for c in calls["fsdp"]]
    mine = notebook["ring_run"](q["world"], q["numel"], q["dtype"], q["seed"], all_reduce=reduce_scatter_only)
    answers = {"ring_probe": ring, "fsdp_probe": fsdp, "ring_sent_bytes": mine[0]}
    result = P.grade(q, answers, keys=["ring_probe", "fsdp_probe", "ring_sent_bytes"])
    assert result.score == 0
    hints = {m.name: m.feedback for m in P.mistakes}
    text = "\n".join(result.feedback)
    assert hints["unsharded"] in text
    assert "bytes sent or received differ" in text and "differs from gloo's all_reduce" in text
    assert text.count(hints["one-phase"]) == 1          # ring_sent_bytes; the probe also fails on its sum


@pytest.mark.parametrize("label", "ABCD")
def test_declared_mistakes_give_wrong_answers(label):
    """Each declared mistake, where it changes an answer, loses that answer's points with its feedback."""
    q = P.variants[label]
    right = P.solve(q)
    for mistake in P.mistakes:
        wrong = mistake.wrong(q)
        if not wrong:
            continue
        changed = {k: v for k, v in wrong.items() if v != right[k]}
        assert changed, mistake.name      # where it cannot be made, `wrong` is empty (below)
        result = P.grade(q, {**right, **changed})
        assert result.score < result.max_score, mistake.name
        assert any(mistake.feedback in line for line in result.feedback), mistake.name


def test_the_printed_zero_count_is_a_mistake_only_in_a_run_narrower_than_fp32():
    # ZeRO's 2+2+12 bytes a parameter and an fp32 run's 4+4+8 are the same 16: in an fp32 variant
    # the mistake cannot be made (its `wrong` is empty, decided from model_dtype), in a bf16 one it
    # gives another stage-3 count
    k12 = next(m for m in P.mistakes if m.name == "mixed-precision-k12")
    for label, q in P.variants.items():
        wrong = k12.wrong(q)
        if q["model_dtype"] == "float32":
            assert wrong == {}, label
        else:
            assert wrong["stage3_formula_bytes"] != P.solve(q)["stage3_formula_bytes"], label
    assert {q["model_dtype"] for q in P.variants.values()} >= {"float32", "bfloat16"}


def test_the_ring_bound_leaves_out_in_network_reduction():
    # Patarasuk and Yuan's bound is for all-reduces built from messages between the ranks; with
    # NVLink SHARP the switch reduces, and neither the ring's count nor busbw is what goes on the
    # wire (nccl-tests issues #212 and #366, NCCL #1455). Wherever p10 states the bound or what
    # busbw measures, it says so.
    text = SOURCE.read_text()
    bound = text.index("can do with less")
    nearby = " ".join(re.sub(r"(?m)^# ?", "", text[bound - 200:bound + 700]).split())
    assert "built from messages between the ranks" in nearby
    assert "in-network reduction" in nearby and "NVLink SHARP" in nearby
    assert "#212" in nearby and "#366" in nearby and "#1455" in nearby
    assert text.count("can do with less") == 1
    import tomllib
    cards = tomllib.loads((ROOT / "graders/problems/practice/p10_collectives.cards.toml").read_text())["card"]
    busbw = [c for c in cards if "bus bandwidth" in c["front"]]
    assert busbw and all("SHARP" in c["back"] for c in busbw)


# --- (d) hostile answers and a hostile notebook --------------------------------------------------
@pytest.mark.parametrize("answer", ["1000", float("nan"), None, {"error": "raised X"}, [[1, 2]], [1.5, 2.0],
                                    list(range(1000)), [{"str": "a"}]])
def test_bad_answers_score_zero_and_never_raise(answer):
    """Strings, NaN, error markers, wrong shapes and floods are invalid or wrong, never a crash."""
    q = P.variants["D"]
    keys = list(P.checks)
    result = P.grade(q, {k: answer for k in keys})
    assert result.score == 0 and len(result.feedback) == len(keys)


def test_feedback_never_shows_the_reference_counts():
    """A wrong per-rank list is told which ranks are wrong, not their counts nor how many ranks."""
    q = P.variants["D"]
    ref = P.solve(q)
    result = P.grade(q, {"param_bytes_per_rank": [1, 2]}, keys=["param_bytes_per_rank"])
    text = " ".join(result.feedback)
    assert not any(str(v) in text for v in ref["param_bytes_per_rank"])
    assert str(q["world"]) not in text.replace("rank 0", "").replace("rank 1", "")


def test_launch_reports_a_failing_rank_and_kills_a_hanging_one(monkeypatch, notebook):
    """A rank that raises makes launch raise its error; a rank stuck in recv is killed in time."""
    def broken(tensor, rank, world, send, recv):
        raise ValueError("no ring here")
    with pytest.raises(RuntimeError, match="no ring here"):
        notebook["ring_run"](2, 4, "float32", 0, all_reduce=broken)

    def waits_for_ever(tensor, rank, world, send, recv):
        recv(torch.empty_like(tensor), (rank - 1) % world)
    notebook["LAUNCH_SECONDS"] = 3.0
    start = time.monotonic()
    try:
        with pytest.raises(TimeoutError):
            notebook["ring_run"](2, 4, "float32", 0, all_reduce=waits_for_ever)
    finally:
        notebook["LAUNCH_SECONDS"] = p10.LAUNCH_SECONDS
    assert time.monotonic() - start < 20


# --- (e) the bank may hold more than the contract owes -------------------------------------------
def test_a_strand_holding_more_than_owed_owes_nothing():
    """Ten practice items against the nine M3 owes: no shortfall, and the page shows 10/9."""
    chapter = next(c for c in load_chapters(ROOT) if c.id == "II.8")
    assert len(chapter.strands["practice"]) == 10
    reports = {nb.split("/")[-1]: ItemReport(id=nb.split("/")[-1], notebook=nb,
                                             solution=dict.fromkeys("ABCD", True), blank_zero=True)
               for nb in chapter.notebooks}
    status = chapter_status(ROOT, chapter, reports)
    assert status["strands"]["practice"] == {"have": 10, "owed": 9}
    assert status["owes"] == 0 and shortfalls(status) == []
    assert "10/9" in render(status, ROOT)


def test_no_loopback_is_a_clear_error():
    """Where 127.0.0.1 cannot be reached (a network namespace whose lo is down), launch says so."""
    import shutil
    import subprocess
    import sys
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-n", "true"]).returncode != 0:
        pytest.skip("no unprivileged or root `unshare -n` here")
    code = ("from graders.problems.practice import p10_collectives as m\n"
            "try:\n    m.launch(None, 2)\nexcept RuntimeError as e:\n    print(e)\n")
    out = subprocess.run(["unshare", "-n", sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert "gloo needs the loopback interface" in out.stdout, out.stderr[-2000:]
