"""The evidence through the real engine: sandboxed grading, locally into SQLite and on a Dask cluster
into PostgreSQL, keeps the same verdicts and mistakes, once per check, and a rerun replaces them.

The course holds `worked`'s first notebook only (demo.NOTEBOOK, the one the class fills in): the
assignment's other notebooks would be handed in blank by every student, adding only more blank
checks, which the blank student's first notebook already has."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select

from graders.engine import course_dir
from graders.engine import autograde as ag
from graders.course import demo, report
from graders import evidence
from tests.engine.test_cluster import course_with

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
ASSIGNMENT = "worked"
CLASS = {"ada": "correct", "grace": "wrong", "alan": "blank"}


def submit(course: Path) -> None:
    for student, how in CLASS.items():
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        shutil.copy(ROOT / "release" / ASSIGNMENT / f"{demo.NOTEBOOK}.ipynb", folder)
        demo.fill(folder / f"{demo.NOTEBOOK}.ipynb", how, ROOT)


def kept(db_url: str) -> list[tuple]:
    engine = create_engine(db_url)
    table = evidence.checks_table
    with engine.connect() as conn:
        rows = sorted(tuple(r) for r in conn.execute(select(
            table.c.student, table.c.notebook, table.c.grade_id, table.c.answer_key, table.c.status,
            table.c.mistake, table.c.variant)))
    engine.dispose()
    return rows


def test_local_and_cluster_grading_keep_the_same_evidence(tmp_path, postgres_db, dask_cluster):
    """Each check's verdict and mistake is kept once, equal on SQLite (local) and PostgreSQL (cluster)."""
    local = course_with(tmp_path / "local", None, only=[demo.NOTEBOOK])
    remote = course_with(tmp_path / "remote", postgres_db(), only=[demo.NOTEBOOK])
    submit(local)
    submit(remote)
    ag.autograde(local, ASSIGNMENT, workers=2, progress=False, out=None)
    ag.autograde(remote, ASSIGNMENT, progress=False, out=None, scheduler=dask_cluster.address)
    local_rows = kept(course_dir.load_course(local, ASSIGNMENT).db_url)
    assert local_rows == kept(course_dir.load_course(remote, ASSIGNMENT).db_url)
    w1 = {(s, k): (status, mistake) for s, nb, _, k, status, mistake, _ in local_rows if nb == demo.NOTEBOOK}
    assert w1[("ada", "per_device_bytes")] == ("pass", None)
    assert w1[("grace", "bytes_per_param")] == ("fail", "no-master-copy")
    assert w1[("grace", "per_device_expr")] == ("pass", None)
    assert any(s == "alan" for s, _ in w1) and all(s != "alan" or status != "pass" for (s, _), (status, _) in w1.items())
    keys = [r[:4] for r in local_rows]
    assert len(keys) == len(set(keys))
    rerun = ag.autograde(local, ASSIGNMENT, workers=2, progress=False, out=None, force=True)
    assert not rerun.failed, rerun.failed   # a rerun that could not replace the evidence says so
    assert kept(course_dir.load_course(local, ASSIGNMENT).db_url) == local_rows
    written = report.build_report(local, ASSIGNMENT, out=tmp_path / "report")
    t = next(t for t in written.tables if t.item.name == demo.NOTEBOOK)
    assert {r[1]: r[2] for r in t.mistakes} == {"no-master-copy": 1}
    assert not t.item.detailed and all(r[9] == "" for r in t.checks)
