"""The feedback policy (graders.giveaway) for the basics strand: every declared mistake has an
instant text the gate accepts, no card or released notebook hands over a graded answer, and a
mistake that cannot be made in a variant says so from the variant's parameters only."""
import json
import re
from pathlib import Path

import pytest

from graders import problems
from graders.course import gate

ROOT = Path(__file__).resolve().parents[3]
BASICS = [pid for pid in problems.ids() if re.match(r"b\d\d-", pid)]   # II.8's basics strand


@pytest.mark.parametrize("pid", BASICS)
def test_instant_texts_cards_and_notebook_keep_the_policy(pid):
    problem = problems.get(pid)
    assert gate.giveaway_reasons(ROOT, f"{problem.assignment}/{pid}", problem) == []


@pytest.mark.parametrize("pid", BASICS)
def test_instant_texts_are_each_mistakes_own(pid):
    """Two mistakes share an instant text only when they miss the same idea: here, only the
    GiB and GB slips of graders.units do."""
    own = [m.instant for m in problems.get(pid).mistakes if m.name not in ("gib-not-bytes", "gb-not-bytes")]
    assert len(own) == len(set(own))


def _released_text(pid):
    nb = json.loads((ROOT / "release" / "basics" / f"{pid}.ipynb").read_text())
    return "\n".join("".join(cell["source"]) for cell in nb["cells"])


def test_b02_notebook_does_not_work_out_variant_c():
    """GPT-NeoX-20B is variant C: its replicas and accumulation steps are that variant's answers."""
    text = _released_text("b02-batch")
    assert "12 replicas" not in text and "32\n# accumulation" not in text and "× 32" not in text


def test_b04_notebook_does_not_state_the_micro_step_count():
    text = _released_text("b04-step")
    assert "kB}{bP}" not in text and "B/(bP)" not in text


# --- mistakes that the variant's configuration rules out, decided from its parameters --------
def _wrong(pid, name, params):
    problem = problems.get(pid)
    mistake = next(m for m in problem.mistakes if m.name == name)
    return mistake.wrong(params)


def test_b07_schedule_ignored_needs_warmup_inside_the_idle_stretch():
    D = dict(problems.get("b07-weight-decay").variants["D"])
    assert D["start"] >= D["warmup"] and _wrong("b07-weight-decay", "schedule-ignored", D) == {}
    assert _wrong("b07-weight-decay", "schedule-ignored", {**D, "start": 5000}) != {}


def test_b09_overflow_rule_needs_a_value_between_max_and_the_rounding_point():
    C = dict(problems.get("b09-mixed-precision").variants["C"])
    assert _wrong("b09-mixed-precision", "overflow-above-max", C) == {}
    assert _wrong("b09-mixed-precision", "overflow-above-max",
                  {**C, "values": C["values"] + [65510.0]}) != {}


def test_b10_step_counters_need_an_optimiser_that_keeps_them():
    B = dict(problems.get("b10-checkpoint").variants["B"])
    assert B["optimizer"] == "sgd_momentum" and _wrong("b10-checkpoint", "step-tensors-forgotten", B) == {}
    assert _wrong("b10-checkpoint", "step-tensors-forgotten", {**B, "optimizer": "adamw"}) != {}


@pytest.mark.parametrize("name", ["mean-over-bytes", "ratio-inverted"])
def test_b11_byte_mistakes_need_a_tokenizer_with_several_bytes_a_token(name):
    A = dict(problems.get("b11-evaluation").variants["A"])
    assert A["tokens"] == A["bytes"] and _wrong("b11-evaluation", name, A) == {}
    assert _wrong("b11-evaluation", name, {**A, "tokens": 36_059}) != {}
