"""Autograding on a Dask cluster into a PostgreSQL gradebook, against real servers on loopback.

One synthetic class (honest students in every variant, a blank, partial work, a
damaged notebook, a link, a missing notebook) is graded twice from the same
source: by the local engine into SQLite, and on a Dask cluster (a scheduler and
two worker processes) into PostgreSQL, with one worker killed while it grades.
The two gradebooks must agree, row for row, and hold every grade exactly once.
"""
from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

import nbformat
import pytest
from sqlalchemy import create_engine, text

from graders.engine import course_dir
from graders.engine import grading
from graders.engine import record_io
from graders.engine import autograde as ag
from graders.engine import cluster
from graders import variants
from graders.engine.scratch import make_course
from tests.warm_nbgrader import nbgrader
from tests.namespaces import namespaces_permitted

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
ASSIGNMENT = "worked"
# three of the assignment's five notebooks: the class's cases (a damaged, a linked, a missing and a
# partly solved notebook) need two; every path the cluster and the gradebook take is the same for more
NOTEBOOKS = sorted(p.stem for p in (ROOT / "solutions" / ASSIGNMENT).glob("*.ipynb"))[:3]

GRADES = text("""
    SELECT st.id, nb.name, bc.name, g.auto_score, g.needs_manual_grade
    FROM grade g
    JOIN submitted_notebook sn ON g.notebook_id = sn.id
    JOIN notebook nb ON sn.notebook_id = nb.id
    JOIN submitted_assignment sa ON sn.assignment_id = sa.id
    JOIN student st ON sa.student_id = st.id
    JOIN base_cell bc ON g.cell_id = bc.id""")


def course_with(into: Path, db_url: str | None, only: list[str] | None = None) -> Path:
    """A scratch course of ASSIGNMENT (its notebooks `only`, if named) with its gradebook at `db_url`."""
    course = make_course(ROOT, into, only=[ASSIGNMENT])
    for path in (course / "source" / ASSIGNMENT).glob("*.ipynb") if only else ():
        if path.stem not in only:
            path.unlink()
    if db_url:
        with open(course / "nbgrader_config.py", "a") as fh:
            fh.write(f"\nc.CourseDirectory.db_url = {db_url!r}\n")
    nbgrader("generate_assignment", ASSIGNMENT, "--force", cwd=course)
    return course


def reach(port: int) -> str:
    """A cell that tries to talk to the Dask scheduler from inside the sandbox."""
    return ("import socket\ntry:\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=2).close()\n"
            "    print('SCHEDULER REACHED')\n"
            "except OSError as exc:\n    print('SCHEDULER UNREACHABLE', type(exc).__name__)\n")


def submit_class(course: Path, port: int = 1) -> dict[str, str]:
    """Write the synthetic class's submissions; returns student -> what they handed in."""
    solutions, release = ROOT / "solutions" / ASSIGNMENT, ROOT / "release" / ASSIGNMENT
    cls = {variants.student_for(label, ASSIGNMENT, prefix="honest"): "solutions" for label in "ABCD"}
    cls.update({"blank": "release", "partial": "w1,w2 solved", "damaged": "w1 not JSON",
                "linked": "w1 a link", "lonely": "only w1", "snoop": "w1 calls the scheduler"})
    for student, what in cls.items():
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / "timestamp.txt").write_text("2026-11-30 12:00:00.000000 UTC")
        for name in NOTEBOOKS:
            target = folder / f"{name}.ipynb"
            if what == "release" or (what == "w1,w2 solved" and name[:2] not in ("w1", "w2")):
                shutil.copy(release / f"{name}.ipynb", target)
            elif what == "w1 not JSON" and name.startswith("w1"):
                target.write_text('{"cells": [ this is not json')
            elif what == "w1 a link" and name.startswith("w1"):
                target.symlink_to(solutions / f"{name}.ipynb")
            elif what == "only w1" and not name.startswith("w1"):
                continue
            elif what == "w1 calls the scheduler" and name.startswith("w1"):
                nb = nbformat.read(solutions / f"{name}.ipynb", as_version=4)
                nb.cells.insert(2, nbformat.v4.new_code_cell(reach(port)))
                nbformat.write(nb, target)
            else:
                shutil.copy(solutions / f"{name}.ipynb", target)
    return cls


def rows(db_url: str) -> list[tuple]:
    engine = create_engine(db_url)
    with engine.connect() as conn:
        found = sorted(tuple(r) for r in conn.execute(GRADES))
    engine.dispose()
    return found


def results(report) -> dict:
    return {s: {nb.name: (nb.status, nb.score, nb.grades, nb.feedback, nb.reasons, nb.notes)
                for nb in r.notebooks} for s, r in report.results.items()}


class WorkerKiller(threading.Thread):
    """Kills one worker process (SIGKILL) while it is grading a submission."""

    def __init__(self, address: str, settle: float = 1.0):
        super().__init__(daemon=True)
        from distributed import Client
        self.client = Client(address, timeout="30s", set_as_default=False)
        self.pids = self.client.run(os.getpid)
        self.settle, self.killed, self.keys = settle, None, []
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            busy = {w: ks for w, ks in self.client.processing().items() if ks}
            if busy:
                time.sleep(self.settle)     # let it get well into the task
                busy = {w: ks for w, ks in self.client.processing().items() if ks and w in self.pids}
                if busy:
                    worker, keys = sorted(busy.items())[0]
                    os.kill(self.pids[worker], signal.SIGKILL)
                    self.killed, self.keys = worker, list(keys)
                    return
            time.sleep(0.05)


@pytest.fixture(scope="module")
def both(tmp_path_factory, postgres_db, dask_cluster):
    local_course = course_with(tmp_path_factory.mktemp("local"), None, only=NOTEBOOKS)
    pg_url = postgres_db()
    cluster_course = course_with(tmp_path_factory.mktemp("cluster"), pg_url, only=NOTEBOOKS)
    port = int(dask_cluster.address.rsplit(":", 1)[1])
    cls = submit_class(local_course, port)
    submit_class(cluster_course, port)
    local = ag.autograde(local_course, ASSIGNMENT, workers=2, progress=False, out=None)
    killer = WorkerKiller(dask_cluster.address)
    killer.start()
    try:
        remote = ag.autograde(cluster_course, ASSIGNMENT, progress=False, out=None,
                              scheduler=dask_cluster.address)
    finally:
        killer.done.set()
        killer.join()
    story = dask_cluster.client.story(*killer.keys) if killer.keys else []
    killer.client.close()
    yield {"local": local, "remote": remote, "cls": cls, "killer": killer, "story": story,
           "local_db": f"sqlite:///{local_course / 'gradebook.db'}", "pg_url": pg_url,
           "local_course": local_course, "cluster_course": cluster_course}


def test_a_worker_was_killed_while_grading(both):
    killer = both["killer"]
    assert killer.killed is not None and killer.keys, "the run ended before a worker could be killed"
    scheduler = [event[1:4] for event in both["story"] if event[0] == "scheduler"]
    # the scheduler took the killed worker's task back, and it then finished exactly once
    taken_back = {key for key, start, end in scheduler if (start, end) == ("processing", "released")}
    assert taken_back, both["story"]
    for key in taken_back:
        assert [(s, e) for k, s, e in scheduler if k == key].count(("processing", "memory")) == 1


def test_cluster_scores_equal_local_scores(both):
    local, remote = both["local"], both["remote"]
    assert not local.failed and not remote.failed, (local.failed, remote.failed)
    assert set(remote.results) == set(both["cls"])
    assert results(remote) == results(local)
    honest = [s for s, what in both["cls"].items() if what == "solutions"]
    for student in honest:
        assert all(nb.score == nb.max_score > 0 for nb in remote.results[student].notebooks), student
    assert sum(nb.score for nb in remote.results["blank"].notebooks) == 0
    by_name = {nb.name: nb for nb in remote.results["damaged"].notebooks}
    assert by_name[NOTEBOOKS[0]].status == "broken" and "JSON" in by_name[NOTEBOOKS[0]].reasons[0]
    by_name = {nb.name: nb for nb in remote.results["linked"].notebooks}
    assert by_name[NOTEBOOKS[0]].status == "broken" and "link" in by_name[NOTEBOOKS[0]].reasons[0]


def test_the_sandbox_holds_on_every_worker(both):
    layers = both["remote"].layers_in_effect()
    if namespaces_permitted():
        for layer in ("pid namespace", "mount namespace", "network namespace", "pivot root", "rlimits"):
            assert layer in layers, layers
    notebook = both["cluster_course"] / "autograded" / "snoop" / ASSIGNMENT / f"{NOTEBOOKS[0]}.ipynb"
    text_out = "".join(o.get("text", "") for c in nbformat.read(notebook, as_version=4).cells
                       for o in c.get("outputs", []))
    assert "SCHEDULER REACHED" not in text_out
    if namespaces_permitted():
        assert "SCHEDULER UNREACHABLE" in text_out
    assert both["remote"].results["snoop"].notebooks[0].score == both["remote"].results["snoop"] \
        .notebooks[0].max_score


def test_postgresql_holds_every_grade_exactly_once_and_equal_to_sqlite(both):
    pg, sqlite = rows(both["pg_url"]), rows(both["local_db"])
    keys = [r[:3] for r in pg]
    assert len(keys) == len(set(keys)), "a grade was written twice"
    assert pg == sqlite
    expected = len(both["cls"]) * sum(len(nb.grade_cells) for nb in
                                      course_dir.load_course(both["local_course"], ASSIGNMENT).notebooks.values())
    assert len(pg) == expected


def test_autograded_notebooks_match(both):
    for student in both["cls"]:
        for name in NOTEBOOKS:
            a = both["local_course"] / "autograded" / student / ASSIGNMENT / f"{name}.ipynb"
            b = both["cluster_course"] / "autograded" / student / ASSIGNMENT / f"{name}.ipynb"
            assert a.exists() == b.exists(), (student, name)
            if a.exists():
                left, right = nbformat.read(a, as_version=4), nbformat.read(b, as_version=4)
                strip = lambda nb: [(c.cell_type, c.source, [o.get("text") for o in c.get("outputs", [])  # noqa: E731
                                                             if o.get("output_type") == "stream"])
                                    for c in nb.cells]
                assert strip(left) == strip(right), (student, name)


def test_export_and_feedback_work_on_postgresql(both):
    honest = next(s for s, what in both["cls"].items() if what == "solutions")

    def export_and_feedback(course: Path) -> tuple:
        """nbgrader export, then generate_feedback, in `course`: (the csv's header, its sorted rows, the
        honest student's first feedback page)."""
        nbgrader("export", "--to", str(course / "grades.csv"), cwd=course)
        lines = (course / "grades.csv").read_text().splitlines()
        nbgrader("generate_feedback", ASSIGNMENT, cwd=course)
        html = (course / "feedback" / honest / ASSIGNMENT / f"{NOTEBOOKS[0]}.html").read_text()
        return (lines[0], sorted(lines[1:])), html

    # the two courses share nothing (folders, gradebooks): their commands run side by side
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(2) as pool:
        runs = {label: pool.submit(export_and_feedback, both[course])
                for label, course in (("sqlite", "local_course"), ("postgresql", "cluster_course"))}
        tables = {}
        for label, run in runs.items():
            tables[label], html = run.result()
            assert "BEGIN HIDDEN TESTS" not in html
    assert tables["postgresql"] == tables["sqlite"]
    assert len(tables["postgresql"][1]) == len(both["cls"])


def formgrader_views(course: Path) -> dict:
    """What formgrader's pages show, through the API they are built on (nbgrader's NbGraderAPI)."""
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    config = course_dir.load_config(course)
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    local = {"id", "source_path", "release_path", "index"}    # row ids and paths differ between courses

    def clean(items, key):
        return sorted(({k: v for k, v in item.items() if k not in local} for item in items), key=key)

    views = {"assignments": clean(api.get_assignments(), lambda a: a["name"]),
             "submissions": clean(api.get_submissions(ASSIGNMENT), lambda s: s["student"]),
             "students": sorted(api.get_students(), key=lambda s: s["id"])}
    for name in NOTEBOOKS:
        views[name] = clean(api.get_notebook_submissions(ASSIGNMENT, name), lambda s: s["student"])
    for student in submitted_students(course):
        views[student] = clean(api.get_student_submissions(student), lambda s: s["name"])
    return views


def submitted_students(course: Path) -> list[str]:
    return sorted(p.name for p in (course / "submitted").iterdir())


def test_formgrader_shows_the_same_on_postgresql(both):
    sqlite, pg = formgrader_views(both["local_course"]), formgrader_views(both["cluster_course"])
    assert pg == sqlite
    assert len(pg["submissions"]) == len(both["cls"])
    assert {s["student"] for s in pg["submissions"] if s["score"] == s["max_score"] > 0} >= \
        {s for s, what in both["cls"].items() if what == "solutions"}


def test_a_rerun_on_the_cluster_changes_nothing(both, dask_cluster):
    before = rows(both["pg_url"])
    again = ag.autograde(both["cluster_course"], ASSIGNMENT, progress=False, out=None,
                         scheduler=dask_cluster.address)
    assert again.reused == len(both["cls"]) and not again.failed
    assert rows(both["pg_url"]) == before


def test_the_command_line_grades_on_the_cluster(both, dask_cluster):
    """`chapter autograde ASSIGNMENT --scheduler ADDRESS`, as an instructor types it."""
    import subprocess
    import sys
    chapter = Path(sys.executable).parent / "chapter"
    run = subprocess.run([str(chapter), "autograde", ASSIGNMENT, "--course", str(both["cluster_course"]),
                          "--scheduler", dask_cluster.address, "--no-progress"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"{len(both['cls'])} submissions" in run.stdout and "unchanged since the last run" in run.stdout
    assert "with 2 workers" in run.stdout


# ---------------------------------------------------------------------- concurrent writers
def _record_all(course: str, results_json: list, seed: int, barrier) -> None:
    course_obj = course_dir.load_course(Path(course), ASSIGNMENT)
    order = list(results_json)
    if seed % 2:     # half the graders go in the same order (every new student collides), half shuffled
        random.Random(seed).shuffle(order)
    from nbgrader.api import Gradebook
    barrier.wait()
    with Gradebook(course_obj.db_url, course_obj.course_id) as gb:
        for data in order:
            record_io.record(gb, course_obj, grading.SubmissionResult.from_json(data))


def test_concurrent_graders_on_postgresql_lose_nothing(both, tmp_path, postgres_db):
    """Four graders record the same class at once, in different orders, into one new gradebook."""
    course = course_with(tmp_path / "course", postgres_db(), only=NOTEBOOKS)
    submit_class(course)
    results_json = []
    for copy in range(4):        # the class four times over, each copy under new names
        for result in both["local"].results.values():
            data = result.to_json()
            data["student"] = f"{data['student']}-{copy}"
            results_json.append(data)
    # four processes of their own, each with its own connections; forked from the server that
    # tests/warm_nbgrader.py started (course_with ran nbgrader through it), which has nbgrader's
    # gradebook and SQLAlchemy imported already, instead of four new interpreters importing them
    context = multiprocessing.get_context("forkserver")
    barrier = context.Barrier(4)
    procs = [context.Process(target=_record_all, args=(str(course), results_json, seed, barrier))
             for seed in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(180)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    expected = sorted((f"{r[0]}-{copy}",) + r[1:] for r in rows(both["local_db"]) for copy in range(4))
    assert rows(course_db(course)) == expected


def course_db(course: Path) -> str:
    return course_dir.load_course(course, ASSIGNMENT).db_url


def test_a_manual_score_saved_during_recording_is_not_lost(both, tmp_path, postgres_db):
    """formgrader saves a manual score while a regrade records the same submission.

    The regrade must wait for it and then flag the cell for review, as nbgrader does
    when an autograded cell already has a manual score; reading the score before the
    save and writing after it would silently drop that flag.
    """
    from nbgrader.api import Gradebook
    course = course_with(tmp_path / "course", postgres_db(), only=NOTEBOOKS)
    submit_class(course)
    course_obj = course_dir.load_course(course, ASSIGNMENT)
    student = next(s for s, what in both["cls"].items() if what == "solutions")
    result = both["local"].results[student]
    with Gradebook(course_obj.db_url, course_obj.course_id) as gb:
        record_io.record(gb, course_obj, result)
    engine = create_engine(course_obj.db_url)
    pick = text("SELECT g.id FROM grade g JOIN submitted_notebook sn ON g.notebook_id = sn.id "
                "JOIN submitted_assignment sa ON sn.assignment_id = sa.id "
                "WHERE sa.student_id = :s AND g.auto_score > 0 LIMIT 1")
    with engine.connect() as formgrader:
        grade_id = formgrader.execute(pick, {"s": student}).scalar_one()
        formgrader.execute(text("UPDATE grade SET manual_score = 0.5, needs_manual_grade = false "
                                "WHERE id = :g"), {"g": grade_id})      # saved, not yet committed

        def regrade():
            with Gradebook(course_obj.db_url, course_obj.course_id) as gb:
                record_io.record(gb, course_obj, result)

        recorder = threading.Thread(target=regrade)
        recorder.start()
        recorder.join(1.5)
        assert recorder.is_alive(), "recording did not wait for the grade being saved"
        formgrader.commit()
    recorder.join(60)
    with engine.connect() as conn:
        manual, flagged = conn.execute(text("SELECT manual_score, needs_manual_grade FROM grade "
                                            "WHERE id = :g"), {"g": grade_id}).one()
    engine.dispose()
    assert (manual, flagged) == (0.5, True)


# ---------------------------------------------------------------------- shipping and refusing
def test_pack_ships_links_as_links_and_unpack_stays_inside(tmp_path):
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "a.ipynb").write_text("{}")
    (src / "sub" / "data.txt").write_text("x")
    (src / "secret").symlink_to("/etc/passwd")
    packed = cluster.pack(src)
    assert packed["secret"] == {"link": "/etc/passwd"}
    packed["../escape.txt"] = {"data": "eA=="}
    packed["/abs.txt"] = {"data": "eA=="}
    cluster.unpack(packed, tmp_path / "dst")
    assert (tmp_path / "dst" / "sub" / "data.txt").read_text() == "x"
    assert (tmp_path / "dst" / "secret").is_symlink()
    assert not (tmp_path / "escape.txt").exists() and not Path("/abs.txt").exists()


def test_oversized_files_travel_as_their_size(tmp_path, monkeypatch):
    monkeypatch.setattr(cluster, "MAX_FILE_BYTES", 10)
    (tmp_path / "big.ipynb").write_bytes(b"x" * 100)
    packed = cluster.pack(tmp_path)
    assert packed["big.ipynb"] == {"size": 100}
    cluster.unpack(packed, tmp_path / "out")
    assert (tmp_path / "out" / "big.ipynb").stat().st_size == 100


def test_a_worker_with_other_grader_code_refuses(tmp_path):
    with pytest.raises(cluster.GraderMismatch):
        cluster.grade_task(None, "s", "k", None, {}, {}, "0" * 64)


def _folders_of(pid: int) -> list[Path]:
    """The scratch folders that process `pid` made and owns (its zygote's and its staging folder)."""
    from graders.sandbox.tempdirs import owner_of
    tmp = Path(tempfile.gettempdir())
    return sorted(p for prefix in ("chapter-zygote-", "chapter-staging-") for p in tmp.glob(prefix + "*")
                  if (owner_of(str(p)) or "").split(".")[0] == str(pid))


def test_workers_leave_no_scratch_behind_stopped_or_killed(tmp_path):
    """A worker killed with SIGKILL cannot remove its folders: its restarted successor sweeps them.
    Stopping the cluster (SIGTERM to each command) tears every worker's sandbox down."""
    with cluster.LoopbackCluster(tmp_path / "dask", workers=1) as dask:
        plugin = cluster.SandboxPlugin(isolate=False, digest="leftovers")
        dask.client.register_plugin(plugin, name=plugin.name)
        (killed,) = dask.client.run(os.getpid).values()
        assert len(_folders_of(killed)) == 2, "the worker made its zygote and staging folders"
        os.kill(killed, signal.SIGKILL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                pids = list(dask.client.run(os.getpid).values())
            except Exception:  # noqa: BLE001  (the worker is still restarting)
                pids = []
            if pids and pids[0] != killed and len(_folders_of(pids[0])) == 2:
                break
            time.sleep(0.5)
        (successor,) = pids
        assert successor != killed and _folders_of(successor)
        assert _folders_of(killed) == [], "the killed worker's folders were left behind"
    assert _folders_of(successor) == [], "stopping the cluster left the worker's folders behind"
