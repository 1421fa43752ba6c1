"""The tests' warm nbgrader runs nbgrader's own commands exactly as the command line does."""
from __future__ import annotations

import pytest

from graders.engine import scratch
from tests.conftest import REPO
from tests.warm_nbgrader import nbgrader as warm


def test_the_warm_command_writes_what_the_command_line_writes(tmp_path):
    outputs = {}
    for name, run in (("cold", scratch.nbgrader), ("warm", warm)):
        course = scratch.make_course(REPO, tmp_path / name, only=["worked"])
        result = run("generate_assignment", "worked", "--force", "--notebook=w1-memory", cwd=course)
        assert result.returncode == 0
        outputs[name] = ((course / "release" / "worked" / "w1-memory.ipynb").read_bytes(),
                         result.stderr.replace(str(course), "COURSE"))
        with pytest.raises(RuntimeError, match="nbgrader generate_assignment nosuch failed"):
            run("generate_assignment", "nosuch", cwd=course)
        listed = run("db", "student", "list", cwd=course).stdout
        assert "There are 0 students in the database" in listed
    assert outputs["warm"] == outputs["cold"]
