"""Formgrader, the feedback and the solutions site read in headless chromium with the network
unreachable (every request to a host other than 127.0.0.1 is aborted): formulas are typeset,
no `$…$` is left raw, the feedback is styled while untrusted in JupyterLab and its long lines
wrap. Screenshots go to tests/artifacts/offline-*.png. Run with `pytest -m browser`.
"""
from __future__ import annotations

import functools
import http.server
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.course.test_browser import ARTIFACTS, Lab, browser, page, quiet_news  # noqa: F401 (fixtures)
from tests.course.test_site import render_site

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
# the MathJax <script> that nbconvert's templates (and so nbgrader's feedback) still carry: the only
# request to the network a page may try, since the MathML formulas do not need it
NBCONVERT_MATHJAX = "https://cdnjs.cloudflare.com/ajax/libs/mathjax/"

# text of the page outside code, with a formula still written as TeX
RAW_FORMULAS = r"""el => {
  const copy = el.cloneNode(true);
  copy.querySelectorAll('pre, code, script, style, math').forEach(n => n.remove());
  return copy.textContent.match(/\$[^$\s][^$]*\$/g) || [];
}"""
# MathML laid out by the browser: a subscript sits lower than its base
SUBSCRIPT_LOWERED = r"""el => {
  const sub = el.querySelector('msub');
  if (!sub || sub.children.length < 2) return false;
  const base = sub.children[0].getBoundingClientRect(), index = sub.children[1].getBoundingClientRect();
  return base.width > 0 && index.width > 0 && index.bottom > base.bottom;
}"""


@pytest.fixture(scope="module")
def graded_course(tmp_path_factory):
    """The demo's class (a correct, a wrong and a blank w1-memory), graded by `chapter autograde`,
    with nbgrader's generate_feedback run on the course config."""
    from graders.course import demo
    from tests.warm_nbgrader import nbgrader
    course = tmp_path_factory.mktemp("offline") / "course"
    demo.run(course, root=REPO)
    # the course's own grading, as the demo tells an instructor to run it (its own process, --course)
    env = {k: v for k, v in os.environ.items() if k != "CHAPTER_ROOT"}
    graded = subprocess.run([sys.executable, "-m", "graders.cli", "autograde", "worked", "--course", str(course)],
                            cwd=course, env=env, capture_output=True, text=True)
    assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-2000:]
    nbgrader("generate_feedback", "worked", "--force", cwd=course)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return course


def offline(page) -> list[str]:
    """The hosts other than loopback that the page tried to reach (all were refused)."""
    tried = []
    page.on("requestfailed", lambda r: tried.append(r.url) if "127.0.0.1" not in r.url else None)
    return tried


def test_formgrader_and_feedback_read_offline(graded_course, page):
    home = graded_course / "instructor"
    quiet_news(home / ".jupyter")
    env = {k: v for k, v in os.environ.items() if k not in ("JUPYTERHUB_USER", "CHAPTER_ROOT")}
    env.update(HOME=str(home), JUPYTER_CONFIG_DIR=str(home / ".jupyter"), PYTHONWARNINGS="ignore")
    lab = Lab(graded_course, env, ARTIFACTS / "offline-lab.log")
    tried = offline(page)
    try:
        # formgrader: grace's submission (right expression, wrong numbers)
        page.goto(lab.url("/formgrader"))    # sets the login cookie for the whole server
        page.goto(lab.url("/formgrader/gradebook/worked/w1-memory"))
        page.locator("tr", has_text="Submission #").first.wait_for()
        # "Tests Failed?" is ticked for the wrong and the blank submission, not the correct one
        ticked = page.evaluate("""() => {
          const heads = [...document.querySelectorAll('thead th')].map(th => th.textContent.trim());
          const column = heads.indexOf('Tests Failed?');
          return [...document.querySelectorAll('tbody tr')]
            .filter(tr => tr.children[column] && tr.children[column].querySelector('.glyphicon-ok')).length;
        }""")
        assert ticked == 2, ticked
        page.screenshot(path=str(ARTIFACTS / "offline-formgrader-gradebook.png"))
        from nbgrader.api import Gradebook
        with Gradebook(f"sqlite:///{graded_course / 'gradebook.db'}") as gb:
            submission_id = gb.find_submission_notebook("w1-memory", "worked", "grace").id
        page.goto(lab.url(f"/formgrader/submissions/{submission_id}"))
        page.locator("math").first.wait_for(state="attached")
        body = page.locator("body")
        assert page.locator("math").count() >= 10
        assert body.evaluate(RAW_FORMULAS) == []
        assert body.evaluate(SUBSCRIPT_LOWERED), "the formulas are laid out as mathematics"
        page.locator("math").first.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "offline-formgrader.png"))

        # the feedback, opened in JupyterLab and left untrusted (no scripts run in its frame)
        page.goto(lab.url("/lab/tree/feedback/grace/worked/w1-memory.html"))
        page.get_by_text("Trust HTML").wait_for()
        frame_element = page.locator("iframe").first
        frame_element.wait_for()
        sandbox = frame_element.get_attribute("sandbox") or ""
        assert "allow-scripts" not in sandbox, sandbox
        frame = page.frame_locator("iframe").first
        mistake = frame.locator("pre", has_text="Likely mistake").first
        mistake.wait_for()
        feedback = frame.locator("body")
        assert frame.locator("math").count() >= 10
        assert feedback.evaluate(RAW_FORMULAS) == []
        assert feedback.evaluate(SUBSCRIPT_LOWERED)
        cell_border = frame.locator(".rendered_html td, .text_cell_render td").first.evaluate(
            "td => parseFloat(getComputedStyle(td).borderBottomWidth)")
        assert cell_border > 0, "markdown tables are styled while untrusted"
        assert mistake.evaluate("p => p.scrollWidth <= p.clientWidth + 1"), "long feedback lines wrap"
        assert not feedback.evaluate(
            "b => [...b.querySelectorAll('.output_prompt, .jp-OutputPrompt')].some(p => /Out/.test(p.textContent))"), \
            "no Out[ ] line repeats a test cell's points"
        frame.locator("table").first.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "offline-feedback-table.png"))
        mistake.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "offline-feedback-mistake.png"))
        # nothing but the MathJax <script> of nbconvert's templates (which the MathML does not need)
        assert all(url.startswith(NBCONVERT_MATHJAX) for url in tried), tried
    finally:
        lab.stop()


@pytest.fixture(scope="module")
def w1_site(graded_course):
    """The site of the course with w1-memory rendered, served on 127.0.0.1."""
    from tests.conftest import copy_course
    root = graded_course.parent / "site-course"
    root.mkdir()
    copy_course(root, ["worked/w1-memory", "exercises/e01-batching"])
    out = root / "site"
    problems, _ = render_site(root, out, ["w1-memory"])
    assert problems == []
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(out))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_site_reads_offline(w1_site, page):
    tried = offline(page)
    page.goto(w1_site + "worked/w1-memory/C.html")
    page.locator("math").first.wait_for(state="attached")
    body = page.locator("body")
    assert page.locator("math").count() >= 10
    assert body.evaluate(RAW_FORMULAS) == []
    assert body.evaluate(SUBSCRIPT_LOWERED)
    assert "BEGIN SOLUTION" not in body.inner_text()
    page.get_by_text(re.compile(r"^total_bytes = \d+")).first.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "offline-site-variant.png"))
    page.get_by_role("link", name="chapter index").click()
    page.locator("pre.status").wait_for()
    assert page.get_by_text("not rendered in this partial build").count() > 0
    page.screenshot(path=str(ARTIFACTS / "offline-site-index.png"))
    assert tried == [], tried     # the site carries what it needs
