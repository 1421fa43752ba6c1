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
