"""Issue 27: tds-e1, tds-e2 and tds-t1 printed the derivations they grade (the multiplier, 2/S and
the step count; p = exp(-L_CE), the exact-match formula, the emergence size and τ^(1/L); η·n0/n),
and e1's worked example computed all four graded numbers from code a student could rerun on their
own `params`. What a student reads before answering (the released notebook's markdown and given
code) must leave the derivation to them."""
import re

import nbformat
import pytest

from tests.conftest import REPO

GIVEN_AWAY = {
    "tds-exercises/tds-e1-edge-of-stability": [
        r"1 - \\eta", r"1-\\eta", r"2\s*/\s*S", r"2/\\eta", r"\\ln g", r"\\ln\|",
        r"2 / max", r"math\.log\(", r"abs\(m\) > 1"],
    "tds-exercises/tds-e2-metric-artefacts": [
        r"e\^\{-L", r"exp\(-", r"p\(N\)\^\{?L", r"\\tau\^\{1/L\}", r"1/\\alpha", r"-\\ln\\tau",
        r"math\.log\(", r"\*\* \(1 /"],
    "tds-theory/tds-t1-mup-transfer": [r"n_0/n", r"n/n_0\$ times", r"\\eta/m", r"eta\s*\*\s*n0"],
}


def _given_text(notebook):
    nb = nbformat.read(REPO / "release" / f"{notebook}.ipynb", as_version=4)
    return "\n".join(c.source for c in nb.cells
                     if not c.metadata.get("nbgrader", {}).get("solution", False)
                     and not c.metadata.get("nbgrader", {}).get("grade", False))


@pytest.mark.parametrize("notebook", sorted(GIVEN_AWAY))
def test_the_released_notebook_leaves_the_derivation_to_the_student(notebook):
    text = _given_text(notebook)
    said = [pattern for pattern in GIVEN_AWAY[notebook] if re.search(pattern, text)]
    assert not said, f"{notebook} states what it grades: {said}"
