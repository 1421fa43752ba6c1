"""The course on a real JupyterHub, as its students meet it, in headless chromium.

Real unix users log in on the hub's own login page (PAM, their passwords); each gets JupyterLab
from the course's venv, running as themselves, with nbgrader's student tools and the hub's groups
as nbgrader's course list (JupyterHubAuthPlugin). The instructor releases `worked` from a shell in
the course folder, which is theirs alone. alice, bob and mallory each fetch it in the Assignment
List, run w1-memory's setup cell and see the variant the graders give their login; alice submits a
blank notebook, bob the solution (mallory only looks); `chapter serve`, a hub service, grades each
submission and Fetch Feedback brings back its feedback, with the student's score and variant. The
instructor, logged in on the hub, opens formgrader (a hub service named after the course, run as
the instructor in the course folder) and reads both scores in Manual Grading. From the shell: alice cannot list or read the course,
nor mallory another student's work. Screenshots: tests/artifacts/hub-*.png.
"""
from __future__ import annotations

import os
import pwd
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from playwright import sync_api

from graders.course.demo import fill
from graders.engine import exchange
from graders.variants import variant_for
from tests.course.test_browser import ARTIFACTS, browser, new_page, only_student_tools, run_menu, shot  # noqa: F401
from tests.engine.test_serve_browser import AssignmentList
from tests.hub.conftest import (ASSIGNMENT, COURSE_ID, REPO, SECOND_ASSIGNMENT, SECOND_ID, SECOND_STUDENT,
                                VENV_BIN, as_user)

pytestmark = [pytest.mark.browser, pytest.mark.hub]
if os.geteuid() != 0:
    pytest.skip("the hub tests create unix users and run a setuid spawner: run them as root",
                allow_module_level=True)

NB = "w1-memory"


def log_in(page, hub, login: str, password: str, then: str = "") -> None:
    """Sign in on the hub's login page; without `then`, the hub goes on to start the user's server."""
    page.goto(f"{hub.url}/hub/login" + (f"?next={then}" if then else ""))
    page.locator("#username_input").fill(login)
    page.locator("#password_input").fill(password)
    shot(page, f"hub-{login}-01-login")
    page.locator("#login_submit").click()


def in_lab(page, hub, login: str) -> None:
    """The user's own JupyterLab, once the hub has started it, with nbgrader's menu."""
    page.locator(".jp-LabShell").wait_for(timeout=120_000)
    assert page.url.startswith(f"{hub.url}/user/{login}/lab"), page.url
    page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").wait_for()


def formgrader_scores(page, hub) -> dict:
    """The instructor, through the hub, in formgrader (the course's service): `worked` released
    with its submissions; Manual Grading's overall score of each student's w1-memory."""
    login, password = hub.users["instructor"]
    log_in(page, hub, login, password, then=f"/services/{COURSE_ID}/formgrader")
    row = page.locator("#main-table tr", has=page.locator("td", has_text=re.compile(f"^{ASSIGNMENT}$")))
    row.wait_for(timeout=120_000)
    assert page.url.startswith(f"{hub.url}/services/{COURSE_ID}/formgrader"), page.url
    assert "released" in row.locator("td.status").inner_text().lower(), row.inner_text()
    submissions = row.locator("td.num-submissions").inner_text().strip()
    shot(page, "hub-instructor-01-formgrader")
    page.locator(".nav a", has_text="Manual Grading").click()
    page.get_by_role("link", name=ASSIGNMENT, exact=True).click()
    page.get_by_role("link", name=NB, exact=True).click()
    page.locator("tbody tr", has_text="Submission #").first.wait_for()
    page.locator("#toggle_names").click()
    heads = [h.strip() for h in page.locator("thead th").all_inner_texts()]
    scores = {}
    for student in hub.students:
        cells = page.locator("tbody tr", has_text=student)
        if cells.count():
            scores[student] = cells.locator("td").nth(heads.index("Overall Score")).inner_text().strip()
    shot(page, "hub-instructor-02-manual-grading")
    return {"submissions": submissions, **scores}


def fetch_and_open(page, hub, login: str) -> AssignmentList:
    """In the open Assignment List: Fetch `worked` and open w1-memory; the panel."""
    released = page.locator("#released_assignments_list")
    released.get_by_text(ASSIGNMENT).wait_for()
    shot(page, f"hub-{login}-03-released")
    released.locator(".list_item", has_text=ASSIGNMENT).get_by_role("button", name="Fetch").click()
    panel = AssignmentList(page, Path(f"/home/{login}"), hub.exchange, student=login)
    panel.fetched.get_by_text(ASSIGNMENT).first.wait_for()
    panel.fetched.locator("a.assignment-notebooks-link", has_text=ASSIGNMENT).click()
    panel.fetched.get_by_role("link", name=re.compile(NB)).click()
    return panel


def setup_line(page, login: str) -> str:
    """Run every cell (a blank one stops at the first answer); the setup cell's printed line."""
    notebook = page.locator(".jp-NotebookPanel:visible")
    notebook.locator(".jp-Cell").first.wait_for()
    # JupyterLab may ask which kernel to start (a user's first notebook): the one it offers, Python 3.
    # Or it starts the notebook's own kernel, and the toolbar names it: whichever comes first
    choose = page.locator(".jp-Dialog", has_text="Select Kernel")
    started = notebook.locator(".jp-KernelName", has_text="Python")
    try:
        choose.or_(started).first.wait_for(timeout=10_000)
    except sync_api.TimeoutError:
        pass
    if choose.is_visible():
        choose.get_by_role("button", name="Select", exact=True).click()
        choose.wait_for(state="hidden")
    # the toolbar names the kernel before the page has connected to it, and a Run All sent then can
    # be lost (seen once in five CI runs: no cell ran, no websocket opened): wait for its status
    idle = page.locator(".jp-StatusBar-Widget", has_text="| Idle")
    idle.wait_for(timeout=120_000)
    run_menu(page, "Run", "Run All Cells")
    output = notebook.locator(".jp-OutputArea-output", has_text=f"Student {login}: variant")
    try:
        output.wait_for(timeout=120_000)
        idle.wait_for(timeout=120_000)
        output.evaluate("e => e.scrollIntoView({block: 'center'})")
    finally:
        shot(page, f"hub-{login}-04-variant")
    return output.inner_text()


def close_without_saving(page) -> None:
    run_menu(page, "File", "Close Tab")
    discard = page.locator(".jp-Dialog").get_by_role("button", name=re.compile("Discard|Don't Save"))
    if discard.count() or discard.first.is_visible(timeout=3000):
        discard.first.click()


def test_students_fetch_see_their_variant_submit_and_get_feedback(hub, browser):  # noqa: F811
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots: {ARTIFACTS}/hub-*.png; the hub's log, after the test: {ARTIFACTS}/hub-jupyterhub.log")
    submitted = {}
    # alice and bob are both given variant A: mallory (C) only looks, so that a hub where everyone
    # saw one variant would fail
    answers = {"alice": "blank", "bob": "correct", "mallory": None}
    pages = {}
    for role in answers:        # everyone signs in first: the hub starts their servers side by side
        pages[role] = new_page(browser)      # a context of its own: one login each
        log_in(pages[role], hub, *hub.users[role])

    # meanwhile the instructor releases `worked`, from a shell in the course folder
    released = as_user(hub.instructor, "nbgrader", "release_assignment", ASSIGNMENT, cwd=hub.course)
    assert "Released as: training-at-scale worked" in released.stdout + released.stderr
    # the course is the instructor's alone
    for args in (["ls", str(hub.course)], ["cat", str(hub.course / "gradebook.db")],
                 ["cat", str(hub.course / "source" / ASSIGNMENT / f"{NB}.ipynb")]):
        refused = as_user(hub.students[0], *args, check=False)
        assert refused.returncode != 0 and "Permission denied" in refused.stderr, (args, refused)
    assert (hub.course / "gradebook.db").exists()
    # nor can a student reach the references: their servers run the course's venv, not its library
    for login, reaches in ((hub.students[0], False), (hub.instructor, True)):
        imported = as_user(login, str(VENV_BIN / "python"), "-c", "import graders.problems", check=False)
        assert (imported.returncode == 0) == reaches, (login, imported)

    for role, how in answers.items():
        login, page = hub.users[role][0], pages[role]
        in_lab(page, hub, login)
        only_student_tools(page, f"hub-{login}-02-nbgrader-menu", then_open="Assignment List")
        panel = fetch_and_open(page, hub, login)
        line = setup_line(page, login)
        variant = variant_for(login, ASSIGNMENT)
        assert line.startswith(f"Student {login}: variant {variant}:"), line
        if how is None:
            continue
        close_without_saving(page)
        fill(panel.home / COURSE_ID / ASSIGNMENT / f"{NB}.ipynb", how, REPO)
        submitted[role] = panel, panel.submit(), variant
        shot(page, f"hub-{login}-05-submitted")
    assert len({v for _, _, v in submitted.values()} | {variant_for(hub.users["mallory"][0], ASSIGNMENT)}) > 1

    # nobody reads another student's work: not in their home, not in the exchange's inbound
    alice_nb = f"/home/{hub.users['alice'][0]}/{COURSE_ID}/{ASSIGNMENT}/{NB}.ipynb"
    for args in (["cat", alice_nb], ["ls", str(hub.exchange / COURSE_ID / "inbound")]):
        refused = as_user(hub.users["mallory"][0], *args, check=False)
        assert refused.returncode != 0 and "Permission denied" in refused.stderr, (args, refused)

    for role, (panel, timestamp, variant) in submitted.items():
        login = hub.users[role][0]
        panel.fetch_feedback(timestamp, lambda: hub.log_text()[-4000:])
        text = panel.open_feedback(timestamp, show=re.compile(rf"Variant {variant}: \d+ of \d+ points"))
        shot(panel.page, f"hub-{login}-06-feedback")
        if answers[role] == "correct":
            assert f"{NB} (Score: 4.0 / 4.0)" in text, text[:2000]
            assert "✗" not in text, text[:2000]
        else:
            assert f"{NB} (Score: 0.0 / 4.0)" in text, text[:2000]
            assert "✗" in text, text[:2000]
        assert f"Variant {variant}:" in text and not re.search(r"Variant (?!%s)[ABCD]:" % variant, text)
    for page in pages.values():
        page.context.close()

    alice_timestamp = submitted["alice"][1]
    forgery = mallory_submits_as_alice(hub, browser)
    instructor_collects_alices_own(hub, alice_timestamp, forgery)

    # the instructor sees both graded submissions in formgrader, served by the hub: alice's
    # score is still her own, after mallory's forgery
    page = new_page(browser)
    try:
        seen = formgrader_scores(page, hub)
        released = generate_and_release_feedback(page, hub)
    finally:
        page.context.close()
    alice, bob = hub.users["alice"][0], hub.users["bob"][0]
    assert seen == {"submissions": "2", alice: "0 / 4", bob: "4 / 4"}, seen
    assert released["generate"] == ("success-modal", ""), released
    # chapter serve (root) releases as the exchange's owner, so the instructor's release works too
    assert released["release"] == ("success-modal", ""), released


# -- the forger, as herself -------------------------------------------------------------------
def wait_until(what: str, check, seconds: float, log=lambda: ""):
    deadline = time.monotonic() + seconds
    while not (found := check()):
        assert time.monotonic() < deadline, f"{what}: not in {seconds:g} s\n{log()}"
        time.sleep(0.25)
    return found


def alice_score(hub) -> float:
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{hub.course / 'gradebook.db'}", COURSE_ID) as gb:
        return gb.find_submission(ASSIGNMENT, hub.users["alice"][0]).score


def released_feedback(hub) -> dict:
    """The exchange's released feedback pages, {name: bytes} (read as root)."""
    folder = hub.exchange / COURSE_ID / "feedback"
    return {p.name: p.read_bytes() for p in folder.glob("*.html")}


def inbound_of(hub, login: str, claimed: str) -> list[Path]:
    """The inbound folders of `worked` naming `claimed` that the login `login` made."""
    uid = pwd.getpwnam(login).pw_uid
    return sorted(p for p in (hub.exchange / COURSE_ID / "inbound").glob(f"{claimed}+{ASSIGNMENT}+*")
                  if p.lstat().st_uid == uid)


def mallory_submits_as_alice(hub, browser) -> Path:  # noqa: F811
    """mallory, from her own shell with her own nbgrader config, files her copy of `worked` as
    alice's. chapter serve sets it aside and tells her so; alice's grade, feedback and files stay
    hers. The forgery's inbound folder."""
    alice, mallory = hub.users["alice"][0], hub.users["mallory"][0]
    home = Path(pwd.getpwnam(mallory).pw_dir)
    score, feedback = alice_score(hub), released_feedback(hub)
    (alices_own,) = inbound_of(hub, alice, alice)
    # her own config (she may write what she likes there): the course and the exchange, and none
    # of the hub's course list, which would not let her name another student
    as_user(mallory, "sh", "-c", "mkdir -p ~/.jupyter && cat > ~/.jupyter/nbgrader_config.py", cwd=home,
            input=(f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
                   f"c.Exchange.root = {str(hub.exchange)!r}\n"
                   "c.Exchange.path_includes_course = True\n"))
    forged = as_user(mallory, "nbgrader", "submit", ASSIGNMENT, f"--student={alice}", cwd=home)
    (forgery,) = inbound_of(hub, mallory, alice)
    print(forged.stdout + forged.stderr)

    # chapter serve sets it aside: the ledger names mallory's folder and alice, its log says so
    entry = wait_until("the forgery in the set-aside ledger", lambda: [
        e for e in exchange.read_set_aside(hub.course, ASSIGNMENT) if e.folder == forgery.name],
        90, lambda: hub.log_text()[-4000:])[0]
    assert entry.claimed == alice and mallory in entry.why, entry
    wait_until("SET ASIDE in the service's log", lambda: f"SET ASIDE {forgery.name}" in hub.log_text(), 30)

    # mallory's Fetch Feedback, as herself, as alice: the refusal at most, nothing of alice's
    mine = home / COURSE_ID / ASSIGNMENT / "feedback"

    def fetched():
        as_user(mallory, "nbgrader", "fetch_feedback", ASSIGNMENT, f"--student={alice}", cwd=home)
        return sorted(mine.glob("*/*.html"))
    pages = wait_until("mallory's refusal page", fetched, 60, lambda: hub.log_text()[-4000:])
    for html in pages:
        text = html.read_text()
        assert "was not graded" in text and "another login" in text, text
        assert "Score" not in text and "Variant" not in text, text
    page = new_page(browser)
    try:
        page.set_content(pages[0].read_text())
        shot(page, f"hub-{mallory}-07-forgery-refused")
    finally:
        page.context.close()

    # alice's grade and feedback are unchanged: one new page in the exchange, the refusal
    assert alice_score(hub) == score
    now = released_feedback(hub)
    assert {k: now[k] for k in feedback} == feedback
    (new,) = set(now) - set(feedback)
    assert b"was not graded" in now[new]
    # mallory cannot find alice's page: nbgrader names it by a hash of alice's submission secret,
    # and she can list neither the released feedback, nor the inbound folders (whose names end in
    # 72 random bits), nor alice's home (her nbgrader cache). nbgrader's modes leave a file she
    # could name readable (0644): the names are the lock.
    for args in (["ls", str(hub.exchange / COURSE_ID / "feedback")],
                 ["ls", str(hub.exchange / COURSE_ID / "inbound")],
                 ["ls", str(Path(pwd.getpwnam(alice).pw_dir))]):
        refused = as_user(mallory, *args, check=False)
        assert refused.returncode != 0 and "Permission denied" in refused.stderr, (args, refused)
    return forgery


def instructor_collects_alices_own(hub, alice_timestamp: str, forgery: Path) -> None:
    """Plain `nbgrader collect --update`, as the instructor in the course folder: the forgery is
    newer, but alice's own submission is what stands in submitted/."""
    alice = hub.users["alice"][0]
    (alices_own,) = inbound_of(hub, alice, alice)
    collected = as_user(hub.instructor, "nbgrader", "collect", "--update", ASSIGNMENT, cwd=hub.course,
                        env=hub.instructor_env())
    print(collected.stdout + collected.stderr)
    taken = (hub.course / "submitted" / alice / ASSIGNMENT / "timestamp.txt").read_text().strip()
    assert taken == (alices_own / "timestamp.txt").read_text().strip() == alice_timestamp, taken
    assert taken != (forgery / "timestamp.txt").read_text().strip()


# -- formgrader: Generate Feedback, Release Feedback ----------------------------------------------
def generate_and_release_feedback(page, hub) -> dict:
    """In formgrader's Manage Assignments, `worked`'s Generate Feedback, then Release Feedback;
    {step: (the id of the dialog that answered, its text when it is not success)}."""
    page.goto(f"{hub.url}/services/{COURSE_ID}/formgrader/manage_assignments")
    row = page.locator("#main-table tr", has=page.locator("td", has_text=re.compile(f"^{ASSIGNMENT}$")))
    row.wait_for(timeout=60_000)
    before = {p.name: p.stat().st_mtime_ns for p in (hub.exchange / COURSE_ID / "feedback").glob("*.html")}
    answered = {}
    for step, cell in (("generate", "generate-feedback"), ("release", "release-feedback")):
        row.locator(f"td.{cell} a").click()
        modal = page.locator("#success-modal, #error-modal")
        page.locator(".modal.in .modal-footer button").wait_for(timeout=120_000)
        page.wait_for_timeout(800)          # Bootstrap's fade (and the last dialog's backdrop) is over
        shot(page, f"hub-instructor-0{3 if step == 'generate' else 4}-{step}-feedback")
        answered[step] = (modal.get_attribute("id"), "")
        if answered[step][0] != "success-modal":
            answered[step] = (answered[step][0], modal.inner_text())
            break
        modal.locator(".modal-footer button").click()
        modal.wait_for(state="detached")
    else:
        after = {p.name: p.stat().st_mtime_ns for p in (hub.exchange / COURSE_ID / "feedback").glob("*.html")}
        rewritten = [name for name in before if after.get(name, 0) > before[name]]
        assert len(rewritten) >= 2, (before, after)      # alice's and bob's pages, released again
    return answered


# -- two courses on one hub -----------------------------------------------------------------------
def test_a_student_of_one_course_can_neither_fetch_from_nor_submit_to_another(hub):
    """alice is in nbgrader-training-at-scale only; carol in nbgrader-training-dynamics only (the TDS
    chapter as a course of its own, with its own chapter serve). Each runs nbgrader's own student
    commands from a terminal of their hub server (their login, their hub token, the students'
    config). nbgrader refuses alice the other course; when she switches its check off (it runs in
    her own process), the course's side refuses her submission: set aside, never graded or
    collected. carol fetches, submits and gets her feedback."""
    alice, carol = hub.users["alice"][0], hub.users[SECOND_STUDENT][0]
    tds = hub.courses[1]
    released = as_user(hub.instructor, "nbgrader", "release_assignment", SECOND_ASSIGNMENT, cwd=tds.folder)
    assert f"Released as: {SECOND_ID} {SECOND_ASSIGNMENT}" in released.stdout + released.stderr

    def student(login, *args, check=False):
        return as_user(login, "nbgrader", *args, SECOND_ASSIGNMENT, f"--course={SECOND_ID}",
                       cwd=Path(pwd.getpwnam(login).pw_dir), env=hub.user_env(login), check=check)
    switched_off = "--Authenticator.plugin_class=nbgrader.auth.NoAuthPlugin"

    def carol_submits():
        student(carol, "fetch_assignment", check=True)
        submitted = student(carol, "submit", check=True)
        assert f"Submitted as: {SECOND_ID} {SECOND_ASSIGNMENT}" in submitted.stdout + submitted.stderr

    def alice_tries():
        refused = student(alice, "fetch_assignment")
        assert refused.returncode != 0, refused
        assert "You do not have access to this course." in refused.stdout + refused.stderr, refused
        # nbgrader's exchange leaves every course's release readable by every login (outbound 0755):
        # with the check off, the fetch works (a release holds no solution and no hidden test) ...
        student(alice, "fetch_assignment", switched_off, check=True)
        refused = student(alice, "submit")
        assert refused.returncode != 0, refused
        assert "You do not have access to this course." in refused.stdout + refused.stderr, refused
        # ... and so does the submission (inbound 0733): the course's side refuses it
        student(alice, "submit", switched_off, check=True)

    with ThreadPoolExecutor(2) as pool:     # side by side: each step is a student's nbgrader process
        for done in [pool.submit(carol_submits), pool.submit(alice_tries)]:
            done.result()
    (hers,) = (hub.exchange / SECOND_ID / "inbound").glob(f"{alice}+{SECOND_ASSIGNMENT}+*")
    wait_until("the second course's chapter serve on both", lambda: all(
        line in hub.log_text() for line in (f"{carol} {SECOND_ASSIGNMENT}: ", f"{alice} {SECOND_ASSIGNMENT}: not graded")),
        120, lambda: hub.log_text()[-4000:])
    (entry,) = exchange.read_set_aside(tds.folder, SECOND_ASSIGNMENT)
    assert entry.folder == hers.name and entry.claimed == alice, entry
    assert "not enrolled in training-dynamics" in entry.why, entry
    # what each one's Fetch Feedback brings (the page named by their submission's secret): carol's
    # score; alice (check off) the refusal, nothing graded. Fetching itself is the first test's.
    from nbgrader.utils import notebook_hash

    def page(folder: Path) -> str:
        secret = (folder / "submission_secret.txt").read_text()
        return (hub.exchange / SECOND_ID / "feedback" /
                f"{notebook_hash(secret=secret, notebook_id='tds-w1-double-descent')}.html").read_text()
    (carols,) = (hub.exchange / SECOND_ID / "inbound").glob(f"{carol}+{SECOND_ASSIGNMENT}+*")
    assert "tds-w1-double-descent (Score:" in page(carols), page(carols)[:2000]
    refusal = page(hers)
    assert "not enrolled in the course training-dynamics" in refusal and "Score" not in refusal, refusal
    # neither graded nor collected as alice (plain collect's own refusal: tests/engine/test_identity.py)
    assert sorted(p.name for p in (tds.folder / "submitted").iterdir()) == [carol]
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{tds.folder / 'gradebook.db'}", SECOND_ID) as gb:
        assert [s.id for s in gb.students] == [carol]
