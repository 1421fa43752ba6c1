"""b02-batch: batch accounting against the printed configs, and the grade against mistakes and bad input."""
import pytest

from graders import problems

P = problems.get("b02-batch")


def test_llama3_table4_rows():
    # Llama Team 2024, Table 4: GPUs, TP, CP, PP, DP, Seq. Len., Batch size/DP, Tokens/Batch.
    # Rows 1 and 2 (CP = 1): 8,192 | 8 | 1 | 16 | 64 | 8,192 | 32 | 16M and
    # 16,384 | 8 | 1 | 16 | 128 | 8,192 | 16 | 16M.
    for gpus, tp, pp, dp, seq, per_dp in ((8192, 8, 16, 64, 8192, 32), (16384, 8, 16, 128, 8192, 16)):
        r = P.solve({"B": dp * per_dp, "T": seq, "micro_batch": 1, "gpus": gpus,
                     "tensor_parallel": tp, "pipeline_parallel": pp})
        assert r["data_parallel"] == dp
        assert r["sequences_per_replica"] == per_dp
        assert round(r["tokens_per_batch"] / 2**20) == 16        # printed "16M" (binary M)


def test_bloom_launch_script():
    # bigscience tr11-176B-ml.slurm: 48 nodes x 8 GPUs, TP_SIZE=4, PP_SIZE=12,
    # MICRO_BATCH_SIZE=2, GLOBAL_BATCH_SIZE=2048 "# 4.2M tokens", SEQ_LEN=2048; and the
    # BigScience notes: "one copy of the model takes 48 GPUs".
    r = P.solve(P.variants["A"])
    assert r["data_parallel"] == 48 * 8 // 48
    assert round(r["tokens_per_batch"] / 1e6, 1) == 4.2


def test_gpt_neox_20b_config_and_the_papers_1538():
    # configs/20B.yml: 96 GPUs, model-parallel 2, pipe-parallel 4, micro-batch 4 per GPU,
    # gradient_accumulation_steps 32. Black et al. 2022 print "1538 contexts of 2048 tokens"
    # (~3.15M tokens); the config's batch is 1536, and 1538 does not split over 12 replicas.
    r = P.solve(P.variants["C"])
    assert r["accumulation_steps"] == 32
    assert r["data_parallel"] * r["sequences_per_replica"] == 1536
    assert round(r["tokens_per_batch"] / 1e6, 2) == 3.15
    with pytest.raises(ValueError):
        P.solve({**P.variants["C"], "B": 1538})


def test_build_nanogpt_needs_no_accumulation_on_eight_gpus():
    # build-nanogpt train_gpt2.py: total_batch_size = 524288, B = 64, T = 1024,
    # grad_accum_steps = total_batch_size // (B * T * ddp_world_size) -> 1 on 8 GPUs, 8 on 1.
    assert P.solve(P.variants["D"])["accumulation_steps"] == 524288 // (64 * 1024 * 8)
    one_gpu = {**P.variants["D"], "gpus": 1}
    assert P.solve(one_gpu)["accumulation_steps"] == 524288 // (64 * 1024 * 1)


def test_pythia_12b_config():
    # EleutherAI/pythia models/12B/pythia-12b.yml: 256 GPUs, model-parallel 4, pipe 1,
    # micro-batch 8, gradient_accumulation_steps 2 (1024 sequences of 2048 per step).
    r = P.solve({"B": 1024, "T": 2048, "micro_batch": 8, "gpus": 256, "tensor_parallel": 4,
                 "pipeline_parallel": 1})
    assert r["accumulation_steps"] == 2 and r["tokens_per_batch"] == 2_097_152


@pytest.mark.parametrize("bad", [{"gpus": 100}, {"B": 2047}, {"micro_batch": 3}, {"T": 0},
                                 {"gpus": 38.5}, {"B": "2048"}])
def test_uneven_or_invalid_parameters_raise(bad):
    with pytest.raises(ValueError):
        P.solve({**P.variants["A"], **bad})


# --- the grade ---------------------------------------------------------------------------

def test_interface():
    assert (P.strand, P.kind, P.assignment) == ("basics", "basics", "basics")


def test_variants_differ():
    answers = [P.solve(q) for q in P.variants.values()]
    for key in P.checks:
        assert len({a[key] for a in answers}) >= 3, key


def test_all_gpus_as_replicas_is_caught_where_model_parallelism_is_used():
    mistake = next(m for m in P.mistakes if m.name == "every-gpu-a-replica")
    assert mistake.wrong(P.variants["D"]) == {}          # no TP or PP: the same answer
    assert mistake.wrong(P.variants["A"])["data_parallel"] == 384


@pytest.mark.parametrize("bad", [None, "128", float("nan"), [1, 2], {"str": "x"}, True, 127.5])
def test_bad_answers_score_zero_without_raising(bad):
    q = P.variants["B"]
    r = P.grade(q, {**P.solve(q), "accumulation_steps": bad})
    assert not r.outcomes["accumulation_steps"].passed
    assert r.score == r.max_score - 1


def test_missing_key_and_non_dict_score_zero():
    q = P.variants["C"]
    answers = P.solve(q)
    del answers["data_parallel"]
    r = P.grade(q, answers)
    assert r.score == r.max_score - 1 and "missing" in " ".join(r.feedback)
    assert P.grade(q, ["not", "a", "dict"]).score == 0


def test_feedback_never_shows_the_reference():
    q = P.variants["A"]
    ref = P.solve(q)
    r = P.grade(q, {k: 1 for k in ref})
    text = " ".join(r.feedback)
    for key in ("tokens_per_batch", "accumulation_steps", "sequences_per_replica"):
        assert f" {ref[key]} " not in f" {text} " and f"{ref[key]:,}" not in text
