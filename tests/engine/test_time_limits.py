"""Each notebook's time limit follows its solution's measured CPU time (issue 29).

The gate measures the solution; `chapter autograde` gives each notebook
min(ceiling, max(floor, multiple x measured)). A notebook that spins is stopped at its own
limit, not the course's ceiling; without a current measurement the ceiling holds."""
from __future__ import annotations

import json
import math
from pathlib import Path

import nbformat
import pytest

from graders.engine import time_limits
from graders.engine.autograde import autograde
from graders.engine.course_dir import load_config
from graders.engine.time_limits import TimePolicy, for_notebook
from graders.sandbox.zygote import Limits
from tests.namespaces import namespaces_permitted
from graders import variants
from tests.conftest import one_notebook_course

ROOT = Path(__file__).resolve().parents[2]
ASSIGNMENT, NB = "worked", "w1-memory"


def test_the_policy_takes_a_multiple_with_a_floor_under_the_ceiling():
    policy = TimePolicy(multiple=10, floor=30)
    assert policy.seconds(0.2, 300) == 30          # the floor
    assert policy.seconds(6.3, 300) == pytest.approx(63)
    assert policy.seconds(45, 300) == 300          # the ceiling is the last word
    assert policy.seconds(None, 300) == 300        # nothing measured
    limits = Limits(cell_seconds=60, notebook_seconds=300)
    own = for_notebook(limits, 20.0)
    assert (own.notebook_seconds, own.cell_seconds) == (20.0, 20.0)
    assert for_notebook(limits, 400.0) is limits and for_notebook(limits, None) is limits
    assert for_notebook(limits, math.inf) is limits


def test_the_policy_is_read_from_the_config_and_checked(tmp_path):
    (tmp_path / "nbgrader_config.py").write_text(
        "c = get_config()\nc.ChapterSandbox.time_multiple = 4\nc.ChapterSandbox.time_floor = 12\n")
    assert TimePolicy.from_config(load_config(tmp_path)) == TimePolicy(4.0, 12.0)
    assert TimePolicy.from_config(None) == TimePolicy()
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\nc.ChapterSandbox.time_multiple = 0.5\n")
    with pytest.raises(ValueError, match="time_multiple"):
        TimePolicy.from_config(load_config(tmp_path))


def test_every_sandbox_limit_is_read_from_the_config(tmp_path):
    """README: any field of Limits may be set as c.ChapterSandbox.<field>; notebook_seconds is 300 s
    unless set, or three times c.Execute.timeout when that is more."""
    from graders.engine.course_dir import limits_from
    config = tmp_path / "nbgrader_config.py"
    config.write_text("c = get_config()\nc.Execute.timeout = 60\n")
    assert limits_from(load_config(tmp_path)) == Limits()
    config.write_text("c = get_config()\nc.Execute.timeout = 200\n")
    limits = limits_from(load_config(tmp_path))
    assert (limits.cell_seconds, limits.notebook_seconds) == (200.0, 600.0)
    config.write_text("c = get_config()\nc.Execute.timeout = 200\nc.ChapterSandbox.notebook_seconds = 100\n"
                      "c.ChapterSandbox.tmp_bytes = 512 << 20\nc.ChapterSandbox.processes = 8\n")
    limits = limits_from(load_config(tmp_path))
    assert (limits.notebook_seconds, limits.tmp_bytes, limits.processes) == (100.0, 512 << 20, 8)
    assert isinstance(limits.notebook_seconds, float) and isinstance(limits.processes, int)
    assert limits_from(load_config(tmp_path), processes=4).processes == 4     # a command's own flag wins


def test_a_measurement_counts_only_for_the_source_it_was_taken_from(tmp_path):
    source = tmp_path / "source" / ASSIGNMENT / f"{NB}.ipynb"
    source.parent.mkdir(parents=True)
    source.write_text("{}")
    time_limits.record_measured(tmp_path, {f"{ASSIGNMENT}/{NB}": 1.25})
    assert time_limits.measured_seconds(tmp_path, ASSIGNMENT, NB) == 1.25
    assert time_limits.notebook_limits(tmp_path, ASSIGNMENT, [NB, "other"], TimePolicy(10, 3)) == \
        {NB: 12.5, "other": None}
    source.write_text('{"changed": 1}')                 # the solution changed since it was measured
    assert time_limits.measured_seconds(tmp_path, ASSIGNMENT, NB) is None
    for junk in ("[1, 2]", "not json", json.dumps({f"{ASSIGNMENT}/{NB}": {"seconds": "fast"}}),
                 json.dumps({f"{ASSIGNMENT}/{NB}": {"seconds": -1.0, "source": None}})):
        (tmp_path / time_limits.MEASURED).write_text(junk)
        assert time_limits.measured_seconds(tmp_path, ASSIGNMENT, NB) is None


SPIN = "import time\nwhile True:\n    pass\n"


@pytest.mark.skipif(not namespaces_permitted(), reason="needs namespaces and control groups")
def test_a_spinning_notebook_is_stopped_at_its_own_limit(tmp_path):
    course = one_notebook_course(tmp_path / "course", ASSIGNMENT, NB)
    with open(course / "nbgrader_config.py", "a") as config:
        config.write("\nc.ChapterSandbox.time_multiple = 10\nc.ChapterSandbox.time_floor = 3\n")
    time_limits.record_measured(course, {f"{ASSIGNMENT}/{NB}": 0.05})   # 10 x 0.05 s: the 3 s floor
    solution = nbformat.read(ROOT / "solutions" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    spinner = nbformat.read(ROOT / "solutions" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    spinner.cells.insert(1, nbformat.v4.new_code_cell(SPIN))
    honest, hostile = (variants.student_for("A", ASSIGNMENT, prefix=p) for p in ("honest", "spinner"))
    for sid, nb in ((honest, solution), (hostile, spinner)):
        folder = course / "submitted" / sid / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{NB}.ipynb")
    limits = Limits(cell_seconds=60, notebook_seconds=120)
    report = autograde(course, ASSIGNMENT, workers=2, limits=limits, progress=False, out=None)
    good, bad = (report.results[s].notebooks[0] for s in (honest, hostile))
    assert good.score == good.max_score > 0
    assert bad.run["limit_seconds"] == 3 and bad.run["status"] == "timeout", bad.run
    assert bad.run["cpu_seconds"] < 10, bad.run          # not the 60 s cell limit, nor the 120 s ceiling
    assert "w1-memory 3 s (from their solutions' measured time)" in report.summary()

    # a changed source notebook makes the measurement stale: the ceiling holds, and the summary says so
    source = course / "source" / ASSIGNMENT / f"{NB}.ipynb"
    source.write_bytes(source.read_bytes() + b"\n")
    stale = autograde(course, ASSIGNMENT, workers=1, limits=limits, progress=False, out=None,
                      students=[honest], force=True)
    assert stale.results[honest].notebooks[0].run["limit_seconds"] == 120
    assert "w1-memory at the configured 120 s" in stale.summary()
