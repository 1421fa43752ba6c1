"""`chapter course`: one chapter as a course of its own (several courses on one hub)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from graders.course import contract
from graders.engine.course_dir import load_config

REPO = Path(__file__).resolve().parents[2]


def test_the_tds_chapter_becomes_the_course_training_dynamics(tmp_path):
    into = tmp_path / "training-dynamics"
    made = subprocess.run([sys.executable, "-m", "graders.cli", "course", "TDS", str(into), "--id",
                           "training-dynamics", "--course", str(REPO)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    assert [c.id for c in contract.load_chapters(into)] == ["TDS"]
    assert contract.find_chapter("TDS", into) == contract.find_chapter("TDS", REPO)
    assert load_config(into).CourseDirectory.course_id == "training-dynamics"
    assert load_config(REPO).CourseDirectory.course_id == "training-at-scale"
    tds = sorted({nb.split("/")[0] for nb in contract.find_chapter("TDS", REPO).notebooks})
    for folder in ("source", "release", "solutions"):
        assert sorted(p.name for p in (into / folder).iterdir()) == tds, folder
        assert (into / folder / "tds-worked" / "tds-w1-double-descent.ipynb").read_bytes() == \
            (REPO / folder / "tds-worked" / "tds-w1-double-descent.ipynb").read_bytes()
    # nothing is written over, and a course id is a folder name of the exchange
    again = subprocess.run([sys.executable, "-m", "graders.cli", "course", "TDS", str(into), "--id", "x",
                            "--course", str(REPO)], capture_output=True, text=True)
    assert again.returncode == 2 and "is not empty" in again.stderr
    bad = subprocess.run([sys.executable, "-m", "graders.cli", "course", "TDS", str(tmp_path / "b"), "--id",
                          "../up", "--course", str(REPO)], capture_output=True, text=True)
    assert bad.returncode == 2 and "course id" in bad.stderr and not (tmp_path / "b").exists()


def test_a_course_folder_keeps_its_notebooks_measured_solution_times(tmp_path):
    """Each notebook's time limit in `chapter autograde` follows its solution's measured time
    (graders/engine/time_limits.py): the measurements of the chapter's notebooks go with them."""
    from graders.course.course_folder import make_course_folder
    from graders.engine import time_limits
    from tests.conftest import copy_course
    (tmp_path / "root").mkdir()
    root = copy_course(tmp_path / "root", ["worked/w1-memory"])
    time_limits.record_measured(root, {"worked/w1-memory": 1.5, "elsewhere/x": 2.0})
    make_course_folder(root, "II.8", tmp_path / "one", "one")
    assert time_limits.measured_seconds(tmp_path / "one", "worked", "w1-memory") == 1.5
    assert set(time_limits.read_measured(tmp_path / "one")) == {"worked/w1-memory"}
