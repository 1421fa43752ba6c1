"""p6-resume-bit-for-bit: the checkpoint's contents and size against what torch documents and
the papers print, the broken resumes against full runs, the notebook against the module, and the grader."""
import ast
import copy
from pathlib import Path

import pytest
import sympy
import torch

from graders import problems
from graders.notebook import gather
from graders.problems.practice import p6_resume_bit_for_bit as p6

from tests.problems.notebook_cells import cell_sources, run_cells

P = problems.get("p6-resume-bit-for-bit")
ROOT = Path(__file__).resolve().parents[3]
SOURCE = ROOT / "source/practice/p6-resume-bit-for-bit.pct.py"

# --- (a) what the primary sources print ---------------------------------------------------------
# PyTorch, nn.Module.state_dict docstring: "The returned object is a shallow copy. It contains
# references to the module's parameters and buffers."
STATE_DICT_NOTE = "It contains references to the module's parameters and buffers"
# Matsumoto and Nishimura, "Mersenne Twister" (ACM TOMACS 1998): MT19937 has n = 624 words of state.
# torch's CPU generator keeps them as 64-bit slots plus 64 bytes of bookkeeping (CPUGeneratorImpl).
MT19937_WORDS = 624
# Loshchilov and Hutter, Decoupled Weight Decay Regularization (ICLR 2019), Algorithm 2: AdamW
# keeps two moment estimates m_t and v_t per parameter (torch adds a step counter per tensor).
ADAMW_MOMENTS = 2


def notebook_namespace(save=None, load=None):
    """A fresh namespace with the locked harness and the published save/load (or replacements)."""
    namespace = run_cells(SOURCE, ["setup", "harness", "answer_checkpoint"])
    if save is not None:
        namespace["save_checkpoint"] = save
    if load is not None:
        namespace["load_checkpoint"] = load
    return namespace


def test_interface():
    assert (P.kind, P.strand, P.assignment) == ("practice", "practice", "practice")
    assert any(k.endswith("_expr") for k in P.checks)


def test_state_dicts_hold_references_as_documented():
    assert STATE_DICT_NOTE in " ".join(torch.nn.Module.state_dict.__doc__.split())
    with p6.quiet_torch():
        model, optimizer, scheduler = p6.make_run(0, 8, 1e-3, 2, 10)
        p6.train_step(model, optimizer, scheduler, p6.make_data(0))
        weights = model.state_dict()
        moments = optimizer.state_dict()["state"][0]["exp_avg"]
        p6.train_step(model, optimizer, scheduler, p6.make_data(0))
    assert weights["0.weight"].data_ptr() == model[0].weight.data_ptr()
    assert moments.data_ptr() == optimizer.state[model[0].weight]["exp_avg"].data_ptr()


def test_rng_state_size_is_the_mersenne_twister_state():
    state = torch.get_rng_state()
    assert state.dtype == torch.uint8
    assert state.numel() == p6.RNG_STATE_BYTES == MT19937_WORDS * 8 + 64


@pytest.mark.parametrize("hidden", [4, 16, 40])
def test_checkpoint_bytes_formula_against_a_real_checkpoint(hidden):
    q = dict(P.variants["A"], hidden=hidden)
    with p6.quiet_torch():
        checkpoint = p6.checkpoint_at(q)
        model, _, _ = p6.make_run(0, hidden, 1e-3, 2, 10)
    n = sum(p.numel() for p in model.parameters())
    k = len(list(model.parameters()))
    assert n == p6.parameter_count(hidden)
    state = checkpoint["optimizer"]["state"][0]
    assert sum(key.startswith("exp_avg") for key in state) == ADAMW_MOMENTS
    expr = P.solve(P.variants["A"])["checkpoint_bytes_expr"]
    value = expr.subs({sympy.Symbol("N", positive=True): n, sympy.Symbol("n_tensors", positive=True): k})
    assert int(value) == p6.tensor_bytes(checkpoint)


@pytest.mark.parametrize("label", "ABCD")
def test_resume_is_bit_for_bit_and_each_forgotten_piece_shows_at_its_step(label):
    q = P.variants[label]
    out = P.solve(q)
    assert out["max_gap"] == 0.0
    for straight, resumed in out["resume_probe"]:
        assert straight == resumed
    s = q["save_at"]
    assert out["first_diverging_steps"] == [s, s + 1, s + 2]
    with p6.quiet_torch():     # the truncated runs in solve agree with full runs through the harness
        full = [p6.first_difference(*p6.curves(q, kind)) for kind in ("no-rng", "no-optimizer", "no-scheduler")]
    assert full == out["first_diverging_steps"]


def test_a_checkpoint_without_copies_is_overwritten():
    q = P.variants["D"]
    with p6.quiet_torch():
        straight, resumed = p6.curves(q, "no-copy")
    assert straight[:q["save_at"]] == resumed[:q["save_at"]]
    assert resumed[q["save_at"]] != straight[q["save_at"]]


def test_variants_differ():
    outs = [P.solve(q) for q in P.variants.values()]
    assert len({o["checkpoint_bytes"] for o in outs}) == 4
    assert len({tuple(o["first_diverging_steps"]) for o in outs}) == 4


def test_probe_calls_are_deterministic_and_save_in_and_after_warmup():
    calls = P.probes(P.variants["A"])["resume_probe"].calls
    assert calls == P.probes(P.variants["A"])["resume_probe"].calls
    assert calls != P.probes(P.variants["C"])["resume_probe"].calls
    (_, _, _, save1, _, warm1), (_, _, _, save2, _, warm2) = calls
    assert save1 < warm1 and save2 > warm2


def test_notebook_solution_scores_full_marks():
    namespace = notebook_namespace()
    cells = cell_sources(SOURCE)
    for label in "AB":
        q = P.variants[label]
        namespace["params"] = q
        for grade_id in ("answer_curve", "answer_broken", "answer_bytes"):
            exec(cells[grade_id], namespace)
        result = P.grade(q, gather(P, q, list(P.checks), namespace))
        assert result.full_marks, result.feedback


@pytest.mark.parametrize("piece", ["rng", "scheduler", "copy"])
def test_a_student_who_forgets_a_piece_fails_visibly(piece):
    def save(model, optimizer, scheduler):
        checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                      "scheduler": scheduler.state_dict(), "rng": torch.get_rng_state()}
        return checkpoint if piece == "copy" else copy.deepcopy(checkpoint)

    def load(checkpoint, model, optimizer, scheduler):
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        if piece != "scheduler":
            scheduler.load_state_dict(checkpoint["scheduler"])
        if piece != "rng":
            torch.set_rng_state(checkpoint["rng"])

    q = P.variants["C"]
    namespace = notebook_namespace(save, load)
    result = P.grade(q, gather(P, q, ("resume_probe",), namespace), keys=("resume_probe",))
    assert result.score == 0
    name = {"rng": "no-rng", "scheduler": "no-scheduler", "copy": "no-copy"}[piece]
    assert any(m.feedback in result.feedback[0] for m in P.mistakes if m.name == name), result.feedback


@pytest.mark.parametrize("bad", [
    {},
    {"resume_probe": None, "resumed_losses": "1.2", "max_gap": float("nan"), "first_diverging_steps": [12, 13],
     "checkpoint_bytes": 22792.5, "checkpoint_bytes_expr": "12*N"},
    {"resume_probe": [{"error": "raised KeyError"}] * 2, "max_gap": 1e-12, "checkpoint_bytes": True,
     "checkpoint_bytes_expr": 12 * sympy.Symbol("d") + 5056},
])
def test_bad_answers_score_zero_without_raising(bad):
    q = P.variants["A"]
    result = P.grade(q, bad)
    assert result.score == 0
    assert len(result.feedback) == len(P.checks)


def test_solve_rejects_nonsense_parameters():
    base = dict(P.variants["A"])
    for change in ({"save_at": 0}, {"save_at": 28}, {"hidden": 0}, {"lr": 0.0}, {"warmup_steps": 2.5}):
        with pytest.raises(ValueError):
            P.solve(dict(base, **change))


def test_notebook_variants_are_the_problems():
    text = SOURCE.read_text()
    start = text.index("VARIANTS = {")
    node = ast.parse(text[start:text.index("\nSTUDENT", start)])
    assert ast.literal_eval(node.body[0].value) == P.variants
