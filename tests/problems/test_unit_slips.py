"""Every byte count the chapter asks for names both unit slips: GiB (2**30) and GB (10**9)."""
import pytest

from graders import problems
from graders.numeric import Number
from graders.units import GB, GIB

SLIPS = {"gib-not-bytes": GIB, "gb-not-bytes": GB}
LARGE = 1e6     # a byte count a student would think of converting (smaller ones are exact counts)


def byte_counts():
    """(problem id, variant, answer key) for each large numeric byte count, in every variant."""
    found = []
    for pid in problems.ids():
        problem = problems.get(pid)
        keys = [k for k, check in problem.checks.items()
                if "bytes" in k and not k.endswith("_expr") and isinstance(check, Number)]
        if not keys:     # nothing to look at: solving it would only cost time (some train a model)
            continue
        for label, params in problem.variants.items():
            reference = problem.reference(params)
            found += [(pid, label, k) for k in keys if abs(reference[k]) >= LARGE]
    return found


BYTE_COUNTS = byte_counts()


def test_the_chapter_asks_for_byte_counts():
    """The scan finds the byte counts of w1, w4, e06, e07, b05, b09 and b10."""
    assert {pid for pid, _, _ in BYTE_COUNTS} >= {
        "w1-memory", "w4-activations", "e06-checkpointing", "e07-communication",
        "b05-optimiser-state", "b09-mixed-precision", "b10-checkpoint"}


@pytest.mark.parametrize("slip", SLIPS)
@pytest.mark.parametrize("pid, label, key", BYTE_COUNTS)
def test_each_slip_earns_its_own_feedback(pid, label, key, slip):
    """The answer divided by 2**30, or by 10**9, fails and names that slip, not the other."""
    problem = problems.get(pid)
    params = problem.variants[label]
    feedback = {m.name: m.feedback for m in problem.mistakes}
    assert set(SLIPS) <= set(feedback), f"{pid} declares {sorted(feedback)}"
    wrong = problem.reference(params)[key] / SLIPS[slip]
    result = problem.grade(params, {key: wrong}, keys=[key])
    assert result.score == 0
    (text,) = result.feedback
    assert feedback[slip] in text
    other = next(name for name in SLIPS if name != slip)
    assert feedback[other] not in text
