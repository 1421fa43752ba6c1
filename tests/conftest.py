"""Shared fixtures: the repository, scratch copies of it that tests may break, and real servers."""
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------- running on both cores
# `make test` runs the suite on two workers (pytest-xdist, --dist loadfile): each file stays on
# one worker (its module fixtures are built once), and the files that share something of the
# machine's stay together on one worker, one after the other:
SHARED = {
    # the session's Dask cluster (a scheduler and two workers with warm zygotes: tens of seconds)
    "dask": ("engine/test_cluster.py", "engine/test_autograde_signals.py", "course/test_report_engine.py"),
    # real unix accounts of fixed names (login_for below), which each of these files adds and removes
    "unix-users": ("engine/test_identity.py", "engine/test_serve.py", "engine/test_submission_time.py"),
    # every problem's references and declared mistakes in every variant (some train models: minutes,
    # cold), which each process computes once and remembers (Problem._memo): on one worker, once
    "every-problem": ("problems/test_every_problem.py", "course/test_cards.py", "problems/test_unit_slips.py"),
}
# the longest files start first, so that neither worker is left with one of them at the end. The
# hub's first of all: it waits on its servers and browser more than it computes, so the other
# worker has a core to itself meanwhile. While it runs, graders/ is its instructor's group's alone
# (0750) and the folders above the interpreter may be passed through (o+x): a test beside it never
# reads graders/ as another user (the sandboxes' code is loaded by their zygote, as root).
FIRST = ("hub/test_hub.py", "test_readme_browser.py", "engine/test_cluster.py", "problems/test_every_problem.py",
         "engine/test_serve.py", "course/test_gate.py", "course/test_browser.py", "course/test_report.py",
         "test_readme_paths.py")
_TOGETHER = {f"tests/{file}": group for group, files in SHARED.items() for file in files}


def _unit(nodeid: str) -> str:
    """What runs on one worker: the test's file, or the group of files it shares the machine with."""
    file = nodeid.split("::", 1)[0]
    return _TOGETHER.get(file, file)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """--dist loadfile, with the files of a SHARED group as one unit. (xdist's own --dist loadgroup
    renames the tests' ids, which pytest 9.2's items no longer take.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid)
    return ByUnit(config, log)


def pytest_collection_modifyitems(config, items):
    """On a worker, the units in FIRST come first (the scheduler hands them out in this order)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return

    def rank(item) -> int:
        unit = _unit(item.nodeid)
        files = SHARED.get(unit, (unit.removeprefix("tests/"),))
        return min(FIRST.index(f) if f in FIRST else len(FIRST) for f in files)
    items.sort(key=rank)      # stable: the order within a file is kept


def copy_course(into: Path, items: list[str]) -> Path:
    """A scratch course holding only `items` ("assignment/id"), with a one-chapter chapters.toml."""
    shutil.copy(REPO / "nbgrader_config.py", into / "nbgrader_config.py")
    shutil.copy(REPO / "contracts.toml", into / "contracts.toml")
    for item in items:
        for folder in ("source", "release", "solutions"):
            for path in (REPO / folder).glob(f"{item}.*"):
                target = into / folder / path.relative_to(REPO / folder)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, target)
    listed = ", ".join(f'"{i}"' for i in items)
    (into / "chapters.toml").write_text(
        '[[chapter]]\nid = "II.8"\ntitle = "Training at Scale"\nmaturity = "M3"\nstate = "draft"\n\n'
        f'[chapter.strands]\nbasics = []\nconcept = []\ntheory = []\nmathematics = [{listed}]\n'
        'practice = []\n')
    return into


def one_notebook_course(into: Path, assignment: str = "worked", notebook: str = "w1-memory") -> Path:
    """A scratch course whose assignment holds `notebook` alone, generated into its gradebook."""
    from graders.engine.scratch import make_course
    from tests.warm_nbgrader import nbgrader
    course = make_course(REPO, into, only=[assignment])
    for path in (course / "source" / assignment).iterdir():
        if path.name != f"{notebook}.ipynb":
            path.unlink()
    nbgrader("generate_assignment", assignment, "--force", cwd=course)
    return course


@pytest.fixture
def scratch_course(tmp_path, monkeypatch):
    """A scratch course with w1-memory only, used as the chapter root: the tests stand in it, as an
    instructor would (the course is found from the current folder before $CHAPTER_ROOT)."""
    root = copy_course(tmp_path, ["worked/w1-memory"])
    monkeypatch.setenv("CHAPTER_ROOT", str(root))
    monkeypatch.chdir(root)
    return root


# ---------------------------------------------------------------------- real servers on loopback
# PostgreSQL: `.ci/run` starts Debian's server and names it in CHAPTER_TEST_POSTGRES (a URL
# whose role may create databases). Without it, the fixture starts a private server of its
# own in a temporary folder, or skips where PostgreSQL is not installed - except in CI,
# where a missing server is a failure, never a skip.


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _private_postgres(tmp: Path):
    """initdb + pg_ctl start in `tmp`, on 127.0.0.1 only; yields an admin URL; stops it after."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not found:
        return None
    bin_dir = found[-1].parent
    data, port = tmp / "data", _free_port()
    as_user = []
    if os.geteuid() == 0:          # PostgreSQL will not run as root
        shutil.chown(tmp, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    subprocess.run(as_user + [str(bin_dir / "initdb"), "-D", str(data), "-U", "chapter", "--auth=trust",
                              "-E", "UTF8"], check=True, capture_output=True)
    subprocess.run(as_user + [str(bin_dir / "pg_ctl"), "-D", str(data), "-w", "-l", str(tmp / "log"),
                              "-o", f"-c listen_addresses=127.0.0.1 -p {port} -k {tmp}", "start"],
                   check=True, capture_output=True)
    stop = as_user + [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]
    return f"postgresql+psycopg://chapter@127.0.0.1:{port}/postgres", (stop, tmp)


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory):
    url = os.environ.get("CHAPTER_TEST_POSTGRES")
    stop = None
    if not url:
        # its own folder directly under /tmp: the postgres user cannot enter pytest's (0700)
        started = _private_postgres(Path(tempfile.mkdtemp(prefix="chapter-postgres-")))
        if started is None:
            if os.environ.get("CI"):
                pytest.fail("PostgreSQL is not installed and CHAPTER_TEST_POSTGRES is not set "
                            "(.ci/run installs and starts it)")
            pytest.skip("PostgreSQL is not installed here (.ci/run installs it)")
        url, stop = started
    yield url
    if stop:
        subprocess.run(stop[0], capture_output=True)
        shutil.rmtree(stop[1], ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_db(postgres_server):
    """A factory of fresh, empty PostgreSQL databases (dropped afterwards); returns their URLs."""
    from sqlalchemy import create_engine, text
    admin = create_engine(postgres_server, isolation_level="AUTOCOMMIT")
    made = []

    def make() -> str:
        name = f"chapter_test_{secrets.token_hex(6)}"
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        made.append(name)
        return postgres_server.rsplit("/", 1)[0] + f"/{name}"

    yield make
    with admin.connect() as conn:
        for name in made:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="session")
def _loopback_cluster(tmp_path_factory):
    """One scheduler and two worker processes on 127.0.0.1 for the whole run: starting them and
    warming each worker's sandbox zygote takes tens of seconds, and grading leaves nothing on a
    worker (results are written by the grading process; the sandbox plugin is registered
    idempotently, so the next module finds the same zygotes warm)."""
    from graders.engine.cluster import LoopbackCluster
    cluster = LoopbackCluster(tmp_path_factory.mktemp("dask"), workers=2)
    yield cluster
    cluster.close()


@pytest.fixture(scope="module")
def dask_cluster(_loopback_cluster):
    """A scheduler and two worker processes on 127.0.0.1, both up when a test module starts (a
    module may have killed a worker: its nanny restarts it, and this waits for it to rejoin)."""
    _loopback_cluster.client.wait_for_workers(2, timeout=120)
    return _loopback_cluster


@contextmanager
def must_finish_within(seconds):
    """Fail (instead of hanging the suite) if the block has not returned after `seconds`."""
    def expired(signum, frame):
        raise AssertionError(f"did not finish within {seconds} s")
    before = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)


@contextmanager
def code_never_run(*names: str):
    """The names of the builtins (and `system` for `os.system`) called while the block runs, which
    reading untrusted text must never call: the block gets the list, empty when it stayed clean."""
    import builtins
    calls = []
    with pytest.MonkeyPatch.context() as patch:
        for name in names:
            owner = os if name == "system" else builtins
            real = getattr(owner, name)
            patch.setattr(owner, name, lambda *a, _n=name, _r=real, **k: calls.append(_n) or _r(*a, **k))
        yield calls


def running(pid: int) -> bool:
    """Alive and not a zombie waiting to be reaped by whoever inherited it."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:][:1] != b"Z"


# ---------------------------------------------------------------------- real unix accounts
def login_for(role: str) -> str:
    """The login of a test's real unix account playing `role`: `chx-<role>`, or with the prefix
    $CHAPTER_TEST_USER_PREFIX names (on a machine shared with other runs of the tests)."""
    return os.environ.get("CHAPTER_TEST_USER_PREFIX", "chx-") + role


def unix_users(*names: str):
    """Real login accounts `names` for students to be, removed afterwards whatever happens;
    {name: uid}. A context manager; a test that cannot create users (not root) is skipped."""
    import contextlib
    import pwd

    @contextlib.contextmanager
    def accounts():
        if os.geteuid() != 0:
            pytest.skip("creating real unix users needs root")
        made = []
        try:
            for name in names:
                with contextlib.suppress(KeyError):      # left by a run killed before its clean-up
                    pwd.getpwnam(name)
                    subprocess.run(["userdel", "-f", name], capture_output=True)
                subprocess.run(["useradd", "-M", "-s", "/bin/bash", name], check=True, capture_output=True)
                made.append(name)
            yield {name: pwd.getpwnam(name).pw_uid for name in names}
        finally:
            for name in made:
                subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
                subprocess.run(["userdel", "-f", name], capture_output=True)
    return accounts()
