"""A real JupyterHub for the hub tests (tests/hub/machinery.py): real unix users, PAM logins,
two courses owned by their instructor on a shared exchange, each with its `chapter serve` as a
hub service, and formgrader for the first.

- training-at-scale (`worked`, w1-memory alone): alice, bob and mallory;
- training-dynamics (`tds-worked`, the TDS chapter as a course of its own, made by `chapter
  course`): carol alone.

Everything binds 127.0.0.1 on free ports. The hub's state and the courses live in one folder
under /tmp that is removed afterwards, as are the users (with their homes and processes) and
any permission the test granted. The users are named after their roles; where one of those names
is taken on this machine, or where $CHAPTER_TEST_USER_PREFIX says so (a machine shared with
other runs), every login gets a prefix (`chtest-`, or that one).

Needs root (useradd, the hub's setuid spawner), the venv's jupyterhub and the proxy that `make
setup` installs under .hub/; skips without them, fails without them in CI.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from graders.course.course_folder import make_course_folder
from tests.conftest import copy_course
from tests.course.test_browser import ARTIFACTS, quiet_news
from tests.hub.machinery import (PROXY, REPO, VENV_BIN, Hub, HubCourse, accounts, as_user, exists,  # noqa: F401
                                 instructors_only, python_paths, run, traversable)

COURSE_ID = "training-at-scale"
STUDENTS = ("alice", "bob", "mallory")
INSTRUCTOR = "instructor"
ASSIGNMENT = "worked"
# the second course: the TDS chapter alone, with a student of its own
SECOND_ID, SECOND_ASSIGNMENT, SECOND_STUDENT = "training-dynamics", "tds-worked", "carol"


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why, allow_module_level=True)


@pytest.fixture(scope="session")
def hub_users():
    """{role: (login, password)} for alice, bob, mallory, carol and instructor: real unix users with
    homes, made for the session and removed afterwards whatever happens."""
    if os.geteuid() != 0:
        pytest.skip("the hub tests create unix users and run a setuid spawner: run them as root")
    roles = (*STUDENTS, SECOND_STUDENT, INSTRUCTOR)
    prefix = os.environ.get("CHAPTER_TEST_USER_PREFIX") or ("" if not any(exists(r) for r in roles) else "chtest-")
    if any(exists(prefix + r) for r in roles):
        _unavailable(f"unix users {', '.join(prefix + r for r in roles)} exist already; not touching them")
    # no news toast over the screenshots
    with accounts([prefix + r for r in roles], lambda home: quiet_news(home / ".jupyter")) as passwords:
        yield {role: (prefix + role, passwords[prefix + role]) for role in roles}


@pytest.fixture(scope="module")
def hub(hub_users):
    if not os.access(PROXY, os.X_OK):
        _unavailable(f"no configurable-http-proxy at {PROXY}: run `make setup`")
    if shutil.which("jupyterhub", path=str(VENV_BIN)) is None:
        _unavailable("jupyterhub is not installed in the venv: run `make setup`")
    top = Path(tempfile.mkdtemp(prefix="chapter-hub-"))
    top.chmod(0o755)            # the users reach the exchange and their config through it
    courses = [
        HubCourse(COURSE_ID, ASSIGNMENT, [hub_users[s][0] for s in STUDENTS],
                  lambda folder: copy_course(folder, [f"{ASSIGNMENT}/w1-memory"]), folder=top / "course"),
        HubCourse(SECOND_ID, SECOND_ASSIGNMENT, [hub_users[SECOND_STUDENT][0]],
                  lambda folder: make_course_folder(REPO, "TDS", folder, SECOND_ID), service="chapter-serve-tds"),
    ]
    hub = Hub(top, hub_users, courses)
    try:
        with traversable(*python_paths()), instructors_only(REPO / "graders", hub_users["instructor"][0]):
            hub.start()
            yield hub
    finally:
        hub.stop()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / "hub-jupyterhub.log").write_text(hub.log_text())    # the hub's, its servers' and services'
        for login, _ in hub_users.values():
            run("pkill", "-KILL", "-u", login, check=False)
        shutil.rmtree(top, ignore_errors=True)
