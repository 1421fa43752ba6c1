"""A real JupyterHub for the hub tests: real unix users, PAM logins, the course owned by its
instructor, a shared exchange, and `chapter serve` as a hub service.

Everything binds 127.0.0.1 on free ports. The hub's state (sqlite, cookie secret, proxy pid) and
the course live in one folder under /tmp that is removed afterwards, as are the users (with their
homes and processes) and any permission the test granted.

Needs root (useradd, the hub's setuid spawner), the venv's jupyterhub and the proxy that `make
setup` installs under .hub/; skips without them, fails without them in CI.
"""
from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import _free_port, copy_course
from tests.course.test_browser import ARTIFACTS, quiet_news, serving

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
PROXY = REPO / ".hub" / "node_modules" / ".bin" / "configurable-http-proxy"
COURSE_ID = "training-at-scale"
STUDENTS = ("alice", "bob", "mallory")
INSTRUCTOR = "instructor"
ASSIGNMENT = "worked"


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why, allow_module_level=True)


def _exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def run(*args: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(list(args), capture_output=True, text=True, **kwargs)
    if check and result.returncode:
        raise RuntimeError(f"{' '.join(args)} exited {result.returncode}:\n{result.stdout}{result.stderr}")
    return result


def as_user(user: str, *args: str, cwd: Path | None = None, check: bool = True,
            **kwargs) -> subprocess.CompletedProcess:
    """`args` run as the unix user `user`, with the venv's scripts first on PATH (`kwargs`, such as
    `input`, go to subprocess.run)."""
    env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin", "LANG": "C.UTF-8"}
    return run("runuser", "-u", user, "--", "env", *[f"{k}={v}" for k, v in env.items()], *args,
               cwd=cwd, check=check, **kwargs)


@pytest.fixture(scope="session")
def hub_users():
    """{role: (login, password)} for alice, bob, mallory and instructor: real unix users with homes,
    made for the session and removed afterwards (userdel -r) whatever happens. If one of those
    names is already taken on this machine, all four are prefixed `chtest-`."""
    if os.geteuid() != 0:
        pytest.skip("the hub tests create unix users and run a setuid spawner: run them as root")
    roles = (*STUDENTS, INSTRUCTOR)
    prefix = "" if not any(_exists(r) for r in roles) else "chtest-"
    if any(_exists(prefix + r) for r in roles):
        _unavailable(f"unix users {', '.join(prefix + r for r in roles)} exist already; not touching them")
    made, users = [], {}
    try:
        for role in roles:
            login, password = prefix + role, secrets.token_urlsafe(12)
            # a home only its owner can enter (Debian's useradd makes it 0755 from UMASK)
            run("useradd", "-m", "-K", "HOME_MODE=0700", "-s", "/bin/bash", login)
            made.append(login)
            run("chpasswd", input=f"{login}:{password}\n")
            home = Path(pwd.getpwnam(login).pw_dir)
            quiet_news(home / ".jupyter")      # no news toast over the screenshots
            run("chown", "-R", f"{login}:{login}", str(home / ".jupyter"))
            users[role] = (login, password)
        yield users
    finally:
        for login in made:
            run("pkill", "-KILL", "-u", login, check=False)
        for login in made:
            for _ in range(20):             # a process killed just now may still hold the user
                if run("userdel", "-r", login, check=False).returncode in (0, 6):
                    break
                time.sleep(0.25)


@contextmanager
def traversable(*paths: Path):
    """Other users may pass through (o+x, never read) every folder above and at `paths` while this
    lasts: the hub's users run the venv's python, whose interpreter may lie under root's home (a
    pyenv build under /root, 0700), and the course's code, whose CI clone lives in a mktemp -d
    folder (0700). The old modes come back afterwards."""
    changed = {}
    for path in paths:
        for folder in (path, *path.parents):
            mode = folder.stat().st_mode
            if folder not in changed and not mode & stat.S_IXOTH:
                changed[folder] = stat.S_IMODE(mode)
                folder.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)
    try:
        yield sorted(changed)
    finally:
        for folder, mode in changed.items():
            folder.chmod(mode)


def _write(path: Path, text: str, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


class Hub:
    """A JupyterHub on 127.0.0.1 with the course on it; see the module docstring."""

    def __init__(self, top: Path, users: dict):
        self.top, self.users = top, users
        self.instructor = users[INSTRUCTOR][0]
        self.students = [users[s][0] for s in STUDENTS]
        self.course = top / "course"
        self.exchange = top / "exchange"
        self.state = top / "state"
        self.student_config = top / "student-config"
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = self.state / "jupyterhub.log"
        self.proc = None

    # -- the course, the exchange and the configs --------------------------------------------
    def make_course(self) -> None:
        """The instructor's copy of the course (0700, theirs alone) on the hub's exchange."""
        self.course.mkdir()
        copy_course(self.course, [f"{ASSIGNMENT}/w1-memory"])
        with open(self.course / "nbgrader_config.py", "a") as config:
            config.write(f"\n# on the hub: the exchange every user's server shares\n"
                         f"c.Exchange.root = {str(self.exchange)!r}\n")
        run("chown", "-R", f"{self.instructor}:{self.instructor}", str(self.course))
        self.course.chmod(0o700)
        # nbgrader's exchange root: everyone may write, no one may remove another's files
        self.exchange.mkdir()
        self.exchange.chmod(0o777 | stat.S_ISVTX)

    def write_student_config(self) -> None:
        """What every single-user server reads (JUPYTER_CONFIG_PATH): the course and its exchange,
        the hub's groups as nbgrader's course list, and no instructor tools. No student_id: on a
        hub it is the login."""
        _write(self.student_config / "nbgrader_config.py",
               "c = get_config()\n"
               f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
               f"c.Exchange.root = {str(self.exchange)!r}\n"
               "c.Exchange.path_includes_course = True\n"
               "c.Authenticator.plugin_class = 'nbgrader.auth.JupyterHubAuthPlugin'\n")
        _write(self.student_config / "jupyter_server_config.json",
               '{"ServerApp": {"jpserver_extensions": {"nbgrader.server_extensions.formgrader": false,\n'
               '                                      "nbgrader.server_extensions.course_list": false}}}\n')
        _write(self.student_config / "labconfig" / "page_config.json",
               '{"disabledExtensions": {"@jupyter/nbgrader:formgrader": true,\n'
               '                        "@jupyter/nbgrader:create-assignment": true,\n'
               '                        "@jupyter/nbgrader:course-list": true}}\n')
        for folder in (self.student_config, self.student_config / "labconfig"):
            folder.chmod(0o755)

    def write_hub_config(self) -> Path:
        path_env = f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin"
        students, everyone = self.students, [*self.students, self.instructor]
        config = f"""
c = get_config()
c.JupyterHub.bind_url = {self.url!r}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {_free_port()}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{_free_port()}"
c.ConfigurableHTTPProxy.command = [{str(PROXY)!r}]
c.ConfigurableHTTPProxy.pid_file = {str(self.state / "proxy.pid")!r}
c.JupyterHub.db_url = "sqlite:///{self.state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = {str(self.state / "cookie_secret")!r}
c.JupyterHub.cleanup_servers = True
c.JupyterHub.cleanup_proxy = True

# PAM (the default authenticator): the users' unix passwords
c.Authenticator.allowed_users = {set(everyone)!r}

c.JupyterHub.load_groups = {{
    "nbgrader-{COURSE_ID}": {{"users": {students!r}}},
    "formgrade-{COURSE_ID}": {{"users": [{self.instructor!r}]}},
}}

# each user's JupyterLab, as that user, from the course's venv
c.Spawner.cmd = [{str(VENV_BIN / "jupyterhub-singleuser")!r}]
c.Spawner.default_url = "/lab"
c.Spawner.args = ["--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
c.Spawner.environment = {{"PATH": {path_env!r}, "JUPYTER_CONFIG_PATH": {str(self.student_config)!r}}}
c.Spawner.start_timeout = 90
c.Spawner.http_timeout = 90
# a Jupyter server waits 5 s for a confirmation after SIGINT: the hub's SIGTERM, after 1 s, stops it
c.LocalProcessSpawner.interrupt_timeout = 1

# formgrader: the instructor's JupyterLab server in the course folder, a service named after the
# course, at /services/{COURSE_ID}/formgrader, for the formgrade- group
c.JupyterHub.load_roles = [{{
    "name": "formgrade-{COURSE_ID}",
    "groups": ["formgrade-{COURSE_ID}"],
    "scopes": ["access:services!service={COURSE_ID}"],
}}]
formgrader = {{
    "name": {COURSE_ID!r},
    "url": "http://127.0.0.1:{_free_port()}",
    "command": [{str(VENV_BIN / "jupyterhub-singleuser")!r}, *c.Spawner.args],
    "user": {self.instructor!r},
    "cwd": {str(self.course)!r},
    "environment": {{"PATH": {path_env!r}, "JUPYTERHUB_DEFAULT_URL": "/formgrader"}},
    "oauth_no_confirm": True,
}}

# instant feedback; as root, not as the instructor: its sandbox needs root (namespaces, control
# groups, a leased uid), and as the instructor every notebook would be NOT GRADED
c.JupyterHub.services = [{{
    "name": "chapter-serve",
    "command": [{str(VENV_BIN / "chapter")!r}, "serve", {ASSIGNMENT!r}],
    "cwd": {str(self.course)!r},
    "environment": {{"PATH": {path_env!r}}},
}}, formgrader]
"""
        return _write(self.state / "jupyterhub_config.py", config, 0o600)

    # -- running --------------------------------------------------------------------------
    def start(self) -> None:
        self.state.mkdir(mode=0o700)
        self.make_course()
        self.write_student_config()
        config = self.write_hub_config()
        env = {"PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(self.state)}
        self.log = self.log_path.open("w")
        self.proc = subprocess.Popen([str(VENV_BIN / "jupyterhub"), "-f", str(config)], cwd=self.state, env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        if not serving(f"{self.url}/hub/api", self.proc, 60):
            raise RuntimeError(f"the hub did not start:\n{self.log_text()[-4000:]}")

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        """SIGTERM the hub: it stops the users' servers, its services and its proxy; whatever
        outlives that is killed with the process group."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.log.close()
        for pid in self.leftovers():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def leftovers(self) -> list[int]:
        """What a hub that died without cleaning up leaves, each in a session of its own: its proxy
        (its pid file) and root's processes in the hub's folder (chapter serve, its sandboxes'
        zygote). The users' own processes are the user fixture's to kill."""
        found = []
        try:
            found.append(int((self.state / "proxy.pid").read_text().strip()))
        except (OSError, ValueError):
            pass
        for proc in Path("/proc").iterdir():
            try:
                if proc.name.isdigit() and Path(os.readlink(proc / "cwd")).is_relative_to(self.top):
                    found.append(int(proc.name))
            except OSError:
                pass
        return [pid for pid in found if pid != os.getpid()]


@pytest.fixture(scope="module")
def hub(hub_users):
    if not os.access(PROXY, os.X_OK):
        _unavailable(f"no configurable-http-proxy at {PROXY}: run `make setup`")
    if shutil.which("jupyterhub", path=str(VENV_BIN)) is None:
        _unavailable("jupyterhub is not installed in the venv: run `make setup`")
    top = Path(tempfile.mkdtemp(prefix="chapter-hub-"))
    top.chmod(0o755)            # the users reach the exchange and their config through it
    hub = Hub(top, hub_users)
    try:
        # the venv, the interpreter it links to and its standard library, the editable `graders`
        with traversable(VENV_BIN, Path(os.path.realpath(sys.executable)).parent, Path(sys.base_prefix), REPO):
            hub.start()
            yield hub
    finally:
        hub.stop()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / "hub-jupyterhub.log").write_text(hub.log_text())    # the hub's, its servers' and services'
        for login in (*hub.students, hub.instructor):
            run("pkill", "-KILL", "-u", login, check=False)
        shutil.rmtree(top, ignore_errors=True)
