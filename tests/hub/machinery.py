"""A real JupyterHub on loopback, for the hub tests and bench/hub_bench.py.

Real unix users with homes only they can enter; PAM logins; the courses owned by their
instructor (0700), each on the hub's shared exchange, with its nbgrader groups
(`nbgrader-<course>`, `formgrade-<course>`) and its `chapter serve` as a hub service (as root);
formgrader for the first course, as a service run by the instructor. Everything binds 127.0.0.1
on free ports; the hub's state (sqlite, cookie secret, proxy pid) and the courses live in one
folder, `top`, which the caller removes, as it removes the users (`accounts`).

Plain functions and classes, no pytest: tests/hub/conftest.py wraps them in fixtures.
"""
from __future__ import annotations

import json
import os
import pwd
import secrets
import signal
import stat
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tests.conftest import _free_port
from tests.course.test_browser import serving

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
PROXY = REPO / ".hub" / "node_modules" / ".bin" / "configurable-http-proxy"


def run(*args: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(list(args), capture_output=True, text=True, **kwargs)
    if check and result.returncode:
        raise RuntimeError(f"{' '.join(args)} exited {result.returncode}:\n{result.stdout}{result.stderr}")
    return result


def as_user(user: str, *args: str, cwd: Path | None = None, check: bool = True, env: dict | None = None,
            **kwargs) -> subprocess.CompletedProcess:
    """`args` run as the unix user `user`, with the venv's scripts first on PATH and `env` besides
    (`kwargs`, such as `input`, go to subprocess.run)."""
    env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin", "LANG": "C.UTF-8", **(env or {})}
    return run("runuser", "-u", user, "--", "env", *[f"{k}={v}" for k, v in env.items()], *args,
               cwd=cwd, check=check, **kwargs)


def exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


@contextmanager
def accounts(logins, prepare_home: Callable[[Path], None] | None = None):
    """Real login accounts with homes only they can enter (Debian's useradd makes them 0755 from
    UMASK) and random passwords, {login: password}; removed (userdel -r, their processes killed)
    afterwards whatever happens. `prepare_home(home)` runs as root in each new home, which is then
    given to its user."""
    made, passwords = [], {}
    try:
        for login in logins:
            run("useradd", "-m", "-K", "HOME_MODE=0700", "-s", "/bin/bash", login)
            made.append(login)
            passwords[login] = secrets.token_urlsafe(12)
            run("chpasswd", input=f"{login}:{passwords[login]}\n")
            if prepare_home is not None:
                home = Path(pwd.getpwnam(login).pw_dir)
                prepare_home(home)
                run("chown", "-R", f"{login}:{login}", str(home))
        yield passwords
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


@contextmanager
def instructors_only(folder: Path, instructor: str):
    """`folder` (the grading library, which holds every reference answer) readable by root and
    the instructor's group alone while this lasts, as it is in a course the instructor cloned
    0700: the students' servers run the same venv, and must not be able to import it. The old
    owner and mode come back afterwards."""
    before = folder.stat()
    os.chown(folder, 0, pwd.getpwnam(instructor).pw_gid)
    folder.chmod(0o750)
    try:
        yield folder
    finally:
        os.chown(folder, before.st_uid, before.st_gid)
        folder.chmod(stat.S_IMODE(before.st_mode))


def python_paths() -> tuple[Path, ...]:
    """What the hub's users must pass through to run the course's code: the venv, the interpreter
    it links to and its standard library, the editable `graders`."""
    return VENV_BIN, Path(os.path.realpath(sys.executable)).parent, Path(sys.base_prefix), REPO


def _write(path: Path, text: str, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


@dataclass
class HubCourse:
    """One nbgrader course on the hub: its id, the assignment its `chapter serve` grades, its
    students (the hub group nbgrader-<id>), and how its folder is filled (`make(folder)`)."""
    course_id: str
    assignment: str
    students: list[str]
    make: Callable[[Path], object]
    service: str = "chapter-serve"
    folder: Path = field(default=None)


class Hub:
    """A JupyterHub on 127.0.0.1 with `courses` on it (the first has formgrader); see the module
    docstring. `users` is {role: (login, password)}, the instructor's role "instructor"."""

    def __init__(self, top: Path, users: dict, courses: list[HubCourse]):
        self.top, self.users, self.courses = top, users, courses
        self.instructor = users["instructor"][0]
        for course in courses:
            course.folder = course.folder or top / course.course_id
        self.course = courses[0].folder
        self.students = list(courses[0].students)
        self.exchange = top / "exchange"
        self.state = top / "state"
        self.student_config = top / "student-config"
        self.port, self.hub_port = _free_port(), _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.api_url = f"http://127.0.0.1:{self.hub_port}/hub/api"
        # formgrader's token (a terminal of formgrader's JupyterLab has it): the instructor's
        # commands ask the hub with it who is enrolled; and the harness's own, that makes users' tokens
        self.formgrader_token, self.harness_token = secrets.token_hex(32), secrets.token_hex(32)
        self.log_path = self.state / "jupyterhub.log"
        self.proc = None
        self._tokens = {}

    # -- the courses, the exchange and the configs --------------------------------------------
    def make_courses(self) -> None:
        """Each course: the instructor's (0700, theirs alone), on the hub's exchange, taking work
        only from the logins the hub enrols in it."""
        self.exchange.mkdir()
        # nbgrader's exchange root: everyone may write, no one may remove another's files
        self.exchange.chmod(0o777 | stat.S_ISVTX)
        for course in self.courses:
            course.folder.mkdir()
            course.make(course.folder)
            with open(course.folder / "nbgrader_config.py", "a") as config:
                config.write(f"\n# on the hub: the exchange every user's server shares, and the hub's groups\n"
                             f"c.Exchange.root = {str(self.exchange)!r}\n"
                             "c.CheckedCollect.hub_enrolment = True\n")
            run("chown", "-R", f"{self.instructor}:{self.instructor}", str(course.folder))
            course.folder.chmod(0o700)

    def write_student_config(self) -> None:
        """What every single-user server reads (JUPYTER_CONFIG_PATH): the exchange, the hub's
        groups as nbgrader's course list, and no instructor tools. No course id (each student's
        groups say which courses they see) and no student_id: on a hub it is the login."""
        _write(self.student_config / "nbgrader_config.py",
               "c = get_config()\n"
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
        first = self.courses[0].course_id
        everyone = sorted({s for c in self.courses for s in c.students} | {self.instructor})
        groups = {}
        for course in self.courses:
            groups[f"nbgrader-{course.course_id}"] = {"users": list(course.students)}
            groups[f"formgrade-{course.course_id}"] = {"users": [self.instructor]}
        serves = [{"name": c.service, "command": [str(VENV_BIN / "chapter"), "serve", c.assignment],
                   "cwd": str(c.folder), "environment": {"PATH": path_env}} for c in self.courses]
        config = f"""
c = get_config()
c.JupyterHub.bind_url = {self.url!r}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {self.hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{_free_port()}"
c.ConfigurableHTTPProxy.command = [{str(PROXY)!r}]
c.ConfigurableHTTPProxy.pid_file = {str(self.state / "proxy.pid")!r}
c.JupyterHub.db_url = "sqlite:///{self.state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = {str(self.state / "cookie_secret")!r}
c.JupyterHub.cleanup_servers = True
c.JupyterHub.cleanup_proxy = True

# PAM (the default authenticator): the users' unix passwords
c.Authenticator.allowed_users = {set(everyone)!r}

# nbgrader's course groups: who sees a course (nbgrader-), who grades it (formgrade-)
c.JupyterHub.load_groups = {json.dumps(groups, indent=4)}

# each user's JupyterLab, as that user, from the course's venv
c.Spawner.cmd = [{str(VENV_BIN / "jupyterhub-singleuser")!r}]
c.Spawner.default_url = "/lab"
c.Spawner.args = ["--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
c.Spawner.environment = {{"PATH": {path_env!r}, "JUPYTER_CONFIG_PATH": {str(self.student_config)!r}}}
c.Spawner.start_timeout = 90
c.Spawner.http_timeout = 90
# a Jupyter server waits 5 s for a confirmation after SIGINT: the hub's SIGTERM, after 1 s, stops it
c.LocalProcessSpawner.interrupt_timeout = 1

# formgrader: the instructor's JupyterLab server in the first course's folder, a service named after
# the course, at /services/{first}/formgrader, for the formgrade- group. Each course's chapter serve
# and formgrader may read the users' groups: they take work only from logins enrolled in the course.
c.JupyterHub.load_roles = [
    {{"name": "formgrade-{first}", "groups": ["formgrade-{first}"],
      "scopes": ["access:services!service={first}"]}},
    {{"name": "course-rosters", "services": {[c.service for c in self.courses] + [first]!r},
      "scopes": ["read:users:groups"]}},
    {{"name": "hub-harness", "services": ["hub-harness"], "scopes": ["tokens", "read:users:groups"]}},
]
formgrader = {{
    "name": {first!r},
    "url": "http://127.0.0.1:{_free_port()}",
    "command": [{str(VENV_BIN / "jupyterhub-singleuser")!r}, *c.Spawner.args],
    "user": {self.instructor!r},
    "cwd": {str(self.course)!r},
    "environment": {{"PATH": {path_env!r}, "JUPYTERHUB_DEFAULT_URL": "/formgrader"}},
    "api_token": {self.formgrader_token!r},
    "oauth_no_confirm": True,
    "timeout": 120,             # the hub waits this long for it at start (a loaded machine, two zygotes warming)
}}

# instant feedback, one service a course; as root, not as the instructor: its sandbox needs root
# (namespaces, control groups, a leased uid), and as the instructor every notebook would be NOT GRADED
c.JupyterHub.services = {json.dumps(serves, indent=4)} + [formgrader,
    # the harness: it makes each user the token their own server would have
    {{"name": "hub-harness", "api_token": {self.harness_token!r}}}]
"""
        return _write(self.state / "jupyterhub_config.py", config, 0o600)

    # -- the users' side ----------------------------------------------------------------------
    def user_env(self, login: str) -> dict:
        """What a terminal of `login`'s own JupyterLab on this hub has: their login, a token of
        theirs for the hub's API (nbgrader's JupyterHubAuthPlugin reads their groups with it), the
        students' shared config."""
        if login not in self._tokens:
            self._tokens[login] = self.api("POST", f"/users/{login}/tokens", self.harness_token,
                                           {"note": "hub harness", "expires_in": 3600,
                                            "scopes": [f"read:users:groups!user={login}",
                                                       f"read:users:name!user={login}"]})["token"]
        return {"JUPYTERHUB_USER": login, "JUPYTERHUB_API_URL": self.api_url,
                "JUPYTERHUB_API_TOKEN": self._tokens[login], "JUPYTER_CONFIG_PATH": str(self.student_config)}

    def instructor_env(self) -> dict:
        """What a terminal of formgrader's JupyterLab has: the hub's API, formgrader's token."""
        return {"JUPYTERHUB_API_URL": self.api_url, "JUPYTERHUB_API_TOKEN": self.formgrader_token}

    def api(self, method: str, path: str, token: str, body: dict | None = None) -> dict:
        request = urllib.request.Request(self.api_url + path, method=method,
                                         data=None if body is None else json.dumps(body).encode(),
                                         headers={"Authorization": f"token {token}"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.loads(answer.read() or b"{}")

    # -- running --------------------------------------------------------------------------
    def start(self) -> None:
        self.state.mkdir(mode=0o700)
        self.make_courses()
        self.write_student_config()
        config = self.write_hub_config()
        env = {"PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(self.state)}
        self.log = self.log_path.open("w")
        self.proc = subprocess.Popen([str(VENV_BIN / "jupyterhub"), "-f", str(config)], cwd=self.state, env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        if not serving(f"{self.url}/hub/api", self.proc, 150):
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
        zygote). The users' own processes are the caller's to kill."""
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
