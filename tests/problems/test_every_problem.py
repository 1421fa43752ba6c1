"""What every registered problem owes, whatever its strand: checked once here for all of them.

Each problem's own test file checks its mathematics against the primary sources;
here, the contract they share: four variants, checks that are exactly the cells'
keys, a reference that earns full marks in every variant, and declared mistakes
that each lose points somewhere with their own feedback (the gate's rule).
"""
import pytest

from graders import problems
from graders.gate import mistake_reasons

IDS = problems.ids()


@pytest.mark.parametrize("pid", IDS)
def test_shape(pid):
    P = problems.get(pid)
    assert set(P.variants) == set("ABCD")
    assert set(P.checks) == {k for keys in P.cells.values() for k in keys}
    assert len(P.mistakes) >= 3


@pytest.mark.parametrize("label", "ABCD")
@pytest.mark.parametrize("pid", IDS)
def test_reference_gets_full_marks(pid, label):
    P = problems.get(pid)
    q = P.variants[label]
    result = P.grade(q, P.solve(q))
    assert result.full_marks, result.feedback


@pytest.mark.parametrize("pid", IDS)
def test_declared_mistakes_pass_the_gate_rule(pid):
    assert mistake_reasons(problems.get(pid)) == []
