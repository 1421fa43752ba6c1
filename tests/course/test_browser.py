"""The course as its users see it, in headless chromium (Debian's /usr/bin/chromium).

- a student fetches `worked` in JupyterLab, sees their own variant, answers w1-memory,
  validates and submits it through the course exchange;
- the instructor collects and autogrades, reads the scores in formgrader, grades a theory
  task cell by its rubric, generates feedback and reads what the student will get;
- the solutions site: every link resolves and every figure loads.

Every server binds 127.0.0.1 and is stopped at teardown. Screenshots go to tests/artifacts/.
Run with `pytest -m browser`; the tests skip when chromium or playwright is missing.
"""
from __future__ import annotations

import functools
import http.server
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from tests.warm_nbgrader import nbgrader
from graders.variants import variant_for
from graders.engine.course_dir import exchange_root

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
COURSE_ID = "training-at-scale"
STUDENT = "ada"
THEORY = "t1-range-before-speed"
# the student's answers: the right expression, and wrong numbers (the fp32 master copy forgotten)
ANSWER_EXPR = ('per_device_expr = {0: (2 + 2 + K) * N, 1: 4 * N + K * N / P, '
               '2: 2 * N + (2 + K) * N / P, 3: (2 + 2 + K) * N / P}[params["stage"]]')
ANSWER_NUMBERS = ("bytes_per_param = 2 + 2 + (params['K'] - 4)\n"
                  "total_bytes = bytes_per_param * params['N']\n"
                  "per_device_bytes = float(per_device_expr.subs({N: params['N'], P: params['P'], "
                  "K: params['K'] - 4}))")

FIGURE_SKIPPED = "# the figure left for later (not graded)\nNone"

sync_api = pytest.importorskip("playwright.sync_api")
if not os.access(CHROMIUM, os.X_OK):
    pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium chromium-driver)",
                allow_module_level=True)


# --- servers ---------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serving(url: str, proc: subprocess.Popen, seconds: float) -> bool:
    """Whether `url` answers before `proc` exits or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return True
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                return False
            time.sleep(0.3)


class Lab:
    """One JupyterLab server from the venv, on 127.0.0.1, with a token."""

    def __init__(self, root_dir: Path, env: dict, log: Path):
        self.port, self.token = free_port(), secrets.token_hex(16)
        self.base = f"http://127.0.0.1:{self.port}"
        bin_dir = Path(sys.executable).parent
        self.log = log.open("w")
        self.proc = subprocess.Popen(
            [str(bin_dir / "jupyter"), "lab", "--no-browser", "--ServerApp.ip=127.0.0.1",
             f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
             f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root_dir}",
             "--allow-root", "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
            cwd=root_dir, env={**env, "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"},
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        if not serving(f"{self.base}/api/status?token={self.token}", self.proc, 120):
            self.stop()
            raise RuntimeError(f"jupyter lab did not start; see {log}")

    def url(self, path: str) -> str:
        sep = "&" if "?" in path else "?"
        return f"{self.base}{path}{sep}token={self.token}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A scratch course (as graders.course.demo makes one) with `worked` released, and `theory` too."""
    course = tmp_path_factory.mktemp("browser-course")
    shutil.copy(REPO / "nbgrader_config.py", course / "nbgrader_config.py")
    for notebook in ("worked/w1-memory", f"theory/{THEORY}"):
        target = course / "source" / f"{notebook}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / "source" / f"{notebook}.ipynb", target)
    for assignment in ("worked", "theory"):
        nbgrader("generate_assignment", assignment, "--force", cwd=course)
        nbgrader("release_assignment", assignment, "--force", cwd=course)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return course


def quiet_news(config_dir: Path) -> None:
    """No "Would you like to get notified about Jupyter news?" toast over the page."""
    settings = config_dir / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')


def student_env(course: Path) -> tuple[dict, Path]:
    """A scratch home for the student, whose nbgrader config points at the course exchange."""
    home = course / "students" / STUDENT
    (home / ".jupyter").mkdir(parents=True, exist_ok=True)
    (home / ".jupyter" / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.Exchange.root = {str(exchange_root(course))!r}\n"
        "c.Exchange.path_includes_course = True\n"
        f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
        f"c.CourseDirectory.student_id = {STUDENT!r}\n")
    quiet_news(home / ".jupyter")
    env = {**os.environ, "HOME": str(home), "JUPYTERHUB_USER": STUDENT,
           "JUPYTER_CONFIG_DIR": str(home / ".jupyter"), "PYTHONWARNINGS": "ignore"}
    env.pop("CHAPTER_ROOT", None)
    return env, home


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


def new_page(browser):
    """A page in a browser context of its own (its own cookies: one user's login)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    # nothing leaves the machine: CDN scripts (MathJax, require.js) and any other host are refused
    context.route(re.compile(r"^https?://(?!127\.0\.0\.1)"), lambda route: route.abort())
    page = context.new_page()
    page.set_default_timeout(60_000)
    return page


@pytest.fixture
def page(browser):
    page = new_page(browser)
    yield page
    page.context.close()


def shot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def only_student_tools(page, screenshot: str, then_open: str) -> None:
    """JupyterLab's Nbgrader menu offers the Assignment List and none of the instructor's tools;
    then the menu item `then_open` is chosen, straight from the open menu. (Closed with an Escape,
    the menu sometimes stayed open on a loaded machine, and the next click on Nbgrader closed it.)"""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile("^Nbgrader$")).click()
    page.locator(".lm-Menu-itemLabel", has_text="Assignment List").wait_for()
    labels = [t.strip() for t in page.locator(".lm-Menu:visible .lm-Menu-itemLabel").all_inner_texts()]
    shot(page, screenshot)
    assert "Assignment List" in labels, labels
    for absent in ("Formgrader", "Create Assignment", "Course List"):
        assert not any(absent.lower() in label.lower() for label in labels), (absent, labels)
    page.locator(".lm-Menu:visible .lm-Menu-itemLabel", has_text=re.compile(f"^{then_open}$")).click()


def run_menu(page, menu: str, item: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{menu}$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{item}$")).first.click()


# --- the student -----------------------------------------------------------------------

SUBMITTED = {}


def test_student_fetches_answers_validates_and_submits(course, page):
    env, home = student_env(course)
    lab = Lab(home, env, ARTIFACTS / "student-lab.log")
    try:
        page.goto(lab.url("/lab"))
        page.locator(".jp-LabShell").wait_for()
        page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").wait_for()
        shot(page, "student-01-lab")

        # the Assignments panel: fetch the released assignment
        run_menu(page, "Nbgrader", "Assignment List")
        released = page.locator("#released_assignments_list")
        released.get_by_text("worked").wait_for()
        shot(page, "student-02-assignments")
        released.locator(".list_item", has_text="worked").get_by_role("button", name="Fetch").click()
        fetched = page.locator("#fetched_assignments_list")
        fetched.get_by_text("worked").first.wait_for()
        mine = home / COURSE_ID / "worked" / "w1-memory.ipynb"   # the exchange keeps the course id
        assert mine.exists()
        shot(page, "student-03-fetched")

        # open w1-memory from the fetched assignment
        fetched.locator("a.assignment-notebooks-link", has_text="worked").click()
        fetched.get_by_role("link", name=re.compile("w1-memory")).click()
        notebook = page.locator(".jp-NotebookPanel:visible")
        notebook.locator(".jp-Cell").first.wait_for()
        page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle'], "
                     ".jp-mod-kernelStatus, .jp-Toolbar-kernelStatus").first.wait_for()
        shot(page, "student-04-notebook")

        # fill in the answers (insert_text: no auto-indent, no auto-closed brackets)
        for marker, answer in (("per_device_expr", ANSWER_EXPR), ("bytes_per_param", ANSWER_NUMBERS),
                               ("figure left for later", FIGURE_SKIPPED)):
            cell = notebook.locator(".jp-CodeCell", has_text="YOUR CODE HERE").first
            cell.scroll_into_view_if_needed()
            editor = cell.locator(".cm-content")
            editor.click()
            page.keyboard.press("Control+a")
            page.keyboard.insert_text(answer)
            page.keyboard.press("Escape")
            notebook.locator(".jp-CodeCell", has_text=marker).first.wait_for()

        # run every cell; the setup cell shows this student's own variant
        run_menu(page, "Run", "Run All Cells")
        variant = variant_for(STUDENT, "worked")
        setup_output = notebook.locator(".jp-OutputArea-output", has_text=f"Student {STUDENT}: variant")
        setup_output.wait_for()
        assert f"Student {STUDENT}: variant {variant}:" in setup_output.inner_text()
        page.wait_for_function(
            "() => [...document.querySelectorAll('.jp-NotebookPanel .jp-InputPrompt')]"
            ".every(p => !p.textContent.includes('*'))", timeout=120_000)
        setup_output.evaluate("e => e.scrollIntoView({block: 'center'})")
        shot(page, "student-05-variant")
        assert not notebook.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']") \
            .filter(has_text="Error").count(), "the student's answers raised an error"

        # save, then Validate, and read what it says
        page.keyboard.press("Control+s")
        deadline = time.monotonic() + 30
        while "bytes_per_param = 2 + 2" not in mine.read_text():
            assert time.monotonic() < deadline, "the notebook was not saved"
            time.sleep(0.5)
        page.locator(".jp-NotebookPanel:visible .jp-Toolbar").get_by_role("button", name="Validate").click()
        dialog = page.locator(".jp-Dialog")
        dialog.wait_for(timeout=180_000)
        dialog.get_by_text(re.compile("Success|fail|error", re.I)).first.wait_for()
        result = dialog.inner_text()
        shot(page, "student-06-validate")
        assert "Success! Your notebook passes all the tests." in result, result
        dialog.locator(".jp-Dialog-button.jp-mod-accept").first.click()

        # submit from the Assignments panel; it arrives in the exchange's inbound folder
        page.locator(".lm-TabBar-tab", has_text="Assignments").first.click()
        fetched.locator(".list_item", has_text="worked").get_by_role("button", name="Submit").click()
        page.locator("#submitted_assignments_list").get_by_text("worked").first.wait_for()
        shot(page, "student-07-submitted")
        inbound = exchange_root(course) / COURSE_ID / "inbound"
        arrived = sorted(p.name for p in inbound.glob(f"{STUDENT}+worked+*"))
        assert arrived, f"nothing in {inbound}"
        assert list(inbound.glob(f"{STUDENT}+worked+*/w1-memory.ipynb"))
        SUBMITTED["worked"] = arrived
    finally:
        lab.stop()


# --- the instructor --------------------------------------------------------------------

THEORY_ANSWER = ("1. fp16 loses my smallest gradients below 2^-25; bf16's floor is far lower.\n"
                 "2. A static scale works only if k_rescue <= k_max.\n"
                 "3. Skips come from start-up and from growing into the ceiling.\n"
                 "4. bf16 has 7 fraction bits, so the fp32 master copy stays.\n\n"
                 # a tag a student writes: text on the instructor's page, never an element that runs
                 '<img src=x onerror="document.body.dataset.ran = 1">')


def student_nbgrader(env: dict, home: Path, *args: str) -> None:
    """nbgrader as the student runs it: in their home, with their config."""
    bin_dir = Path(sys.executable).parent
    result = subprocess.run([str(bin_dir / "nbgrader"), *args], cwd=home, capture_output=True, text=True,
                            env={**env, "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"})
    assert result.returncode == 0, result.stdout + result.stderr


def formgrader_action(page, assignment: str, column: str, done: str) -> None:
    """Press one of the Manage Assignments row's actions (collect, generate feedback)."""
    row = page.locator("#main-table tr", has=page.locator("td", has_text=re.compile(f"^{assignment}$")))
    row.locator(f"td.{column} a").click()
    modal = page.locator(".modal-dialog:visible")
    modal.get_by_text(done).wait_for(timeout=180_000)
    modal.locator(".modal-footer button").first.click()
    modal.wait_for(state="hidden")


def test_instructor_collects_grades_and_returns_feedback(course, page):
    if "worked" not in SUBMITTED:
        pytest.skip("the student flow did not submit; nothing to grade")
    # the same student hands in the theory notebook too, with a written answer, from the command line
    env, home = student_env(course)
    theory_ids = {}
    student_nbgrader(env, home, "fetch_assignment", "theory")
    import nbformat
    mine = home / COURSE_ID / "theory" / f"{THEORY}.ipynb"
    nb = nbformat.read(mine, as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        theory_ids[grade_id] = cell.metadata["nbgrader"] if grade_id else None
        if cell.cell_type == "markdown" and cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = THEORY_ANSWER
    nbformat.write(nb, mine)
    student_nbgrader(env, home, "submit", "theory")
    tasks = [g for g, meta in theory_ids.items() if meta and meta.get("task")]

    home_i = course / "instructor"
    quiet_news(home_i / ".jupyter")
    env_i = {k: v for k, v in os.environ.items() if k not in ("JUPYTERHUB_USER", "CHAPTER_ROOT")}
    env_i.update(HOME=str(home_i), JUPYTER_CONFIG_DIR=str(home_i / ".jupyter"), PYTHONWARNINGS="ignore")
    lab = Lab(course, env_i, ARTIFACTS / "instructor-lab.log")
    try:
        page.goto(lab.url("/formgrader"))
        page.locator("#main-table").get_by_text("worked").first.wait_for()
        shot(page, "instructor-01-manage-assignments")

        # collect through formgrader, then autograde (the course's own command line)
        for assignment in ("worked", "theory"):
            formgrader_action(page, assignment, "collect", "Successfully collected")
        assert (course / "submitted" / STUDENT / "worked" / "w1-memory.ipynb").exists()
        for assignment in ("worked", "theory"):
            nbgrader("autograde", assignment, "--force", cwd=course)

        # the submission's scores, as formgrader shows them
        from nbgrader.api import Gradebook
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
            scored = gb.find_submission_notebook("w1-memory", "worked", STUDENT)
            score, max_score = scored.score, scored.max_score
        assert 0 < score < max_score, (score, max_score)   # right expression, wrong numbers
        page.goto(lab.url("/formgrader/gradebook/worked/w1-memory"))
        row = page.locator("tr", has_text=STUDENT)
        row.wait_for()
        assert re.search(rf"{score:g}(\.0+)?\s*/\s*{max_score:g}", row.inner_text()), row.inner_text()
        shot(page, "instructor-02-scores")

        # grade the theory task cell by hand, reading its rubric
        assert tasks, f"no task cell in source/theory/{THEORY}: nothing to grade by hand"
        task = tasks[0]
        page.goto(lab.url(f"/formgrader/gradebook/theory/{THEORY}"))
        page.locator("tr", has_text=STUDENT).locator("a").first.click()
        page.locator(f"input.score#{task}").wait_for()
        page.get_by_text("MARK SCHEME").first.wait_for()   # the rubric is on the page
        page.get_by_text("k_rescue <= k_max").first.wait_for()  # and the student's answer
        page.get_by_text('<img src=x onerror="document.body.dataset.ran = 1">').first.wait_for()
        assert page.evaluate("document.body.dataset.ran") is None, "a student's markup ran in formgrader"
        score_box = page.locator(f"input.score#{task}")
        score_box.scroll_into_view_if_needed()
        score_box.fill("3")
        page.locator(f"textarea#{task}-comment").fill("Items 1, 2 and 4 right; 3 without your numbers.")
        score_box.press("Tab")
        page.wait_for_timeout(1500)
        shot(page, "instructor-03-manual-grade")
        deadline = time.monotonic() + 30
        while True:
            with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
                grade = gb.find_grade(task, THEORY, "theory", STUDENT)
                manual = grade.manual_score
            if manual == 3 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert manual == 3, manual

        # feedback, generated through formgrader
        page.goto(lab.url("/formgrader"))
        page.locator("#main-table").get_by_text("worked").first.wait_for()
        for assignment in ("worked", "theory"):
            formgrader_action(page, assignment, "generate-feedback", "Successfully generated feedback")
        shot(page, "instructor-04-feedback-generated")
        feedback = course / "feedback" / STUDENT / "worked" / "w1-memory.html"
        text = feedback.read_text()
        assert re.search(r"✗[^<]*Likely mistake", text) or ("✗" in text and "Likely mistake" in text)
        for hidden in ("BEGIN HIDDEN TESTS", "graders"):
            assert hidden not in text, f"feedback shows {hidden!r}"
        page.goto(feedback.as_uri())
        page.get_by_text("Likely mistake").first.scroll_into_view_if_needed()
        shot(page, "instructor-05-student-feedback")
    finally:
        lab.stop()


# --- the solutions site ----------------------------------------------------------------

@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site of a scratch course holding w1-memory and e01-batching (which draws a figure),
    served on 127.0.0.1."""
    from graders.course.site import render_site
    from tests.conftest import copy_course
    root = copy_course(tmp_path_factory.mktemp("site-course"), ["worked/w1-memory", "exercises/e01-batching"])
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CHAPTER_ROOT", str(root))
        assert render_site(root, root / "site", items=["w1-memory", "e01-batching"]) == []
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root / "site"))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_site_links_resolve_and_figures_load(site, page):
    failed = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}")
            if r.url.startswith(site) and r.status >= 400 else None)
    seen, queue, figures, external = set(), [site + "index.html"], 0, set()
    while queue:
        url = queue.pop()
        if url in seen:
            continue
        seen.add(url)
        if not url.endswith((".html", "/")):   # a file to download (the Anki deck, a CSV): fetched, not shown
            download = page.request.get(url)
            assert download.ok and download.body(), f"{url}: {download.status}"
            continue
        response = page.goto(url)
        assert response is not None and response.ok, f"{url}: {response and response.status}"
        page.wait_for_load_state("load")
        if url == site + "index.html":
            assert "II.8 Training at Scale" in page.locator("pre.status").inner_text()
            shot(page, "site-01-index")
        # every figure has loaded and has a size
        broken = page.eval_on_selector_all(
            "img", "imgs => imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src.slice(0, 80))")
        assert not broken, f"{url}: figures that did not load: {broken}"
        figures += page.locator("img").count()
        if page.locator("img").count() and "site-02-figure" not in seen:
            seen.add("site-02-figure")
            page.locator("img").first.scroll_into_view_if_needed()
            shot(page, "site-02-figure")
        for href in page.eval_on_selector_all("a[href]", "links => links.map(a => a.href)"):
            target = href.split("#")[0]
            if target.startswith(site):
                queue.append(target)
            elif target.startswith("http"):
                external.add(target)      # references in the text; not fetched (no network in tests)
    pages = [u for u in seen if u.startswith(site)]
    assert not failed, failed
    assert len(pages) >= 1 + 2 * (1 + 4), sorted(pages)   # index, and per item its page and 4 variants
    assert figures >= 4, "e01-batching draws a figure in each of its 4 variants"
