"""`chapter serve` as a student meets it: JupyterLab's Assignment List, in headless chromium.

The grading service runs on a scratch course (two graded attempts, no minimum interval)
with the course-local exchange; a student's JupyterLab with nbgrader's extensions fetches
`worked`, submits a wrong w1-memory, presses *Fetch Feedback* until the service's feedback
arrives and reads the failed check; submits a fixed one and reads full marks; submits once
more and reads the refusal. No feedback page shows hidden-test source, a reference value of
the student's variant or a direction. Screenshots go to tests/artifacts/serve-*.png.
"""
from __future__ import annotations

import html
import re
import time
from pathlib import Path

import nbformat
import pytest

from graders.course.demo import fill
from graders.variants import variant_for
from tests.course.test_browser import (ARTIFACTS, COURSE_ID, STUDENT, Lab, browser, page, run_menu,  # noqa: F401
                                shot, student_env)
from tests.engine.test_serve import ASSIGNMENT, NB, Course
from graders.engine.course_dir import exchange_root

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
POLICY = "c.ChapterServe.attempts = 2\nc.ChapterServe.min_interval = 0"
FEEDBACK_WAIT = 240.0          # seconds of pressing Fetch Feedback before the test gives up
DIRECTIONS = ("too large", "too small", "too high", "too low")


def hidden_test_lines() -> list[str]:
    """Every line of source/worked/w1-memory.ipynb between BEGIN and END HIDDEN TESTS."""
    nb = nbformat.read(REPO / "source" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    lines = []
    for cell in nb.cells:
        for block in re.findall(r"BEGIN HIDDEN TESTS(.*?)END HIDDEN TESTS", cell.source, re.S):
            lines += [line.strip() for line in block.splitlines() if line.strip().strip("#")]
    assert lines, "w1-memory has no hidden tests to look for"
    return lines


def reference_spellings() -> list[str]:
    """The ways a page could spell a reference answer of the student's variant (the large ones:
    a small integer such as 16 bytes per parameter occurs in any page for other reasons)."""
    from graders import problems
    problem = problems.get(NB)
    answers = problem.solve(problem.variants[variant_for(STUDENT, ASSIGNMENT)])
    spellings = set()
    for value in answers.values():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) > 100:
            spellings |= {str(value), f"{value:g}", f"{value:,}", f"{value:.4g}", f"{value:.3e}",
                          f"{int(value)}", f"{int(value):,}"}
    assert spellings, "the variant's reference has no large number to look for"
    return sorted(spellings)


def leaks(page: str, markup: bool = True) -> list[str]:
    """What a feedback page (its HTML, or with markup=False its visible text) gives away."""
    text = html.unescape(re.sub(r"<[^>]+>", " ", page) if markup else page)
    # syntax highlighting splits a code line into spans: compare the hidden tests without spaces
    squeezed = re.sub(r"\s+", "", html.unescape(re.sub(r"<[^>]+>", "", page) if markup else page))
    found = [f"hidden-test source {line!r}" for line in HIDDEN if re.sub(r"\s+", "", line) in squeezed]
    found += [f"the reference value {spelling}" for spelling in REFERENCES
              if re.search(rf"(?<![\d.]){re.escape(spelling)}(?!\d)", text)]
    found += [f"a direction ({word!r})" for word in DIRECTIONS if word in text.lower()]
    return found


HIDDEN, REFERENCES = hidden_test_lines(), reference_spellings()
VARIANT = variant_for(STUDENT, ASSIGNMENT)


class AssignmentList:
    """nbgrader's Assignment List panel in the student's JupyterLab."""

    def __init__(self, page, home: Path, exchange: Path, student: str = STUDENT):
        self.page, self.home, self.student = page, home, student
        self.inbound = exchange / COURSE_ID / "inbound"
        self.fetched = page.locator("#fetched_assignments_list")
        self.submitted = page.locator("#submitted_assignments_list")

    def show(self) -> None:
        self.page.locator(".lm-TabBar-tab", has_text="Assignments").first.click()
        self.fetched.wait_for()

    def submit(self) -> str:
        """Press Submit; the timestamp of the submission that lands in the exchange's inbound."""
        before = set(self.inbound.glob(f"{self.student}+{ASSIGNMENT}+*"))
        self.show()
        self.fetched.locator(".list_item", has_text=ASSIGNMENT).get_by_role("button", name="Submit").click()
        deadline = time.monotonic() + 60
        while not (new := set(self.inbound.glob(f"{self.student}+{ASSIGNMENT}+*")) - before):
            assert time.monotonic() < deadline, f"Submit put nothing in {self.inbound}"
            time.sleep(0.3)
        (folder,) = new
        timestamp = folder.name.split("+")[2]
        self.row(timestamp).wait_for()
        return timestamp

    def row(self, timestamp: str):
        """The submitted list's line for one submission."""
        return self.submitted.locator(".nested_list_item", has_text=timestamp)

    def feedback_file(self, timestamp: str) -> Path:
        return self.home / COURSE_ID / ASSIGNMENT / "feedback" / timestamp / f"{NB}.html"

    def fetch_feedback(self, timestamp: str, service_log) -> None:
        """Press Fetch Feedback until this submission's feedback is fetched (bounded)."""
        self.show()
        deadline = time.monotonic() + FEEDBACK_WAIT
        while True:
            self.submitted.get_by_role("button", name="Fetch Feedback", exact=True).first.click()
            # the list is redrawn when the fetch returns: "Fetching Feedback..." reads "Fetch Feedback" again
            self.submitted.get_by_role("button", name="Fetch Feedback", exact=True).first.wait_for()
            # "(view feedback)" shows once the fetched copy equals the released one (nbgrader compares
            # checksums): a page fetched while it was still being copied is fetched again
            if self.feedback_file(timestamp).exists() and self.row(timestamp).get_by_text("(view feedback)").count():
                break
            assert time.monotonic() < deadline, \
                f"no feedback for the submission of {timestamp} in {FEEDBACK_WAIT:g} s:\n{service_log()}"
            time.sleep(2)

    def open_feedback(self, timestamp: str, show: str) -> str:
        """Follow "(view feedback)", open the page in JupyterLab, scroll to the line `show`;
        the page's visible text."""
        self.show()
        self.row(timestamp).get_by_text("(view feedback)").click()
        listing = self.page.locator(".jp-DirListing-content")
        # the file browser has moved to this submission's folder (not still showing the last one)
        self.page.locator(".jp-BreadCrumbs", has_text=timestamp.split(" ")[1]).wait_for()
        listing.locator(".jp-DirListing-item", has_text=f"{NB}.html").dblclick()
        frame = self.page.frame_locator(".jp-HTMLViewer:visible iframe")
        frame.locator("body").wait_for()
        line = frame.get_by_text(show).first
        line.wait_for()
        line.evaluate("e => e.scrollIntoView({block: 'center'})")
        return frame.locator("body").inner_text()

    def close_tab(self) -> None:
        run_menu(self.page, "File", "Close Tab")


def hand_in(panel: AssignmentList, course: Course, step: int, name: str, show: str) -> str:
    """Submit, press Fetch Feedback until it comes, open it: its text, screenshots on the way."""
    timestamp = panel.submit()
    shot(panel.page, f"serve-{step:02d}-submitted-{name}")
    panel.fetch_feedback(timestamp, course.log)
    shot(panel.page, f"serve-{step + 1:02d}-feedback-fetched-{name}")
    text = panel.open_feedback(timestamp, show)
    shot(panel.page, f"serve-{step + 2:02d}-feedback-{name}")
    assert not leaks(text, markup=False), f"the {name} feedback shows {leaks(text, markup=False)}"
    return text


def test_student_submits_fetches_feedback_fixes_and_is_refused(tmp_path, page):  # noqa: F811
    """Wrong w1-memory: the failed check; fixed: full marks; past the limit: the refusal; no leak."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    course = Course(tmp_path / "course", policy=POLICY)
    env, home = student_env(course.root)
    service, lab = course.start(), None
    try:
        lab = Lab(home, env, ARTIFACTS / "serve-student-lab.log")
        course.wait_for(lambda: "chapter serve: grading" in course.log(), what="the service to start")
        page.goto(lab.url("/lab"))
        page.locator(".jp-LabShell").wait_for()
        page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").wait_for()
        run_menu(page, "Nbgrader", "Assignment List")
        panel = AssignmentList(page, home, exchange_root(course.root))
        page.locator("#released_assignments_list").get_by_text(ASSIGNMENT).wait_for()
        shot(page, "serve-01-released")

        # fetch worked, and answer w1-memory wrongly (the fp32 master copy forgotten)
        page.locator("#released_assignments_list .list_item", has_text=ASSIGNMENT) \
            .get_by_role("button", name="Fetch").click()
        panel.fetched.get_by_text(ASSIGNMENT).first.wait_for()
        mine = home / COURSE_ID / ASSIGNMENT / f"{NB}.ipynb"
        assert mine.exists()
        fill(mine, "wrong", REPO)
        text = hand_in(panel, course, 2, "wrong", show="✗ per_device_bytes")
        assert "w1-memory (Score: 1.0 / 4.0)" in text, text[:3000]
        assert f"Variant {VARIANT}: 0 of 3 points in this cell" in text and "✓ per_device_expr: correct" in text
        for key in ("bytes_per_param", "total_bytes", "per_device_bytes"):   # the failed checks, named
            assert re.search(rf"✗ {key}: does not match your variant\. Look again at: the fp32 master copy",
                             text), text[:3000]
        panel.close_tab()

        # fix it and submit again: full marks
        fill(mine, "correct", REPO)
        text = hand_in(panel, course, 5, "correct", show="3 of 3 points")
        assert "w1-memory (Score: 4.0 / 4.0)" in text, text[:3000]
        assert f"Variant {VARIANT}: 3 of 3 points in this cell" in text, text[:3000]
        assert f"Variant {VARIANT}: 1 of 1 points" in text and "✓ per_device_bytes: correct" in text
        assert "✗" not in text, text[:3000]
        panel.close_tab()

        # once more, past the limit of two graded attempts: not graded, and told so
        text = hand_in(panel, course, 8, "past-limit", show="was not graded")
        assert "was not graded" in text and "all 2 graded attempts" in text, text[:3000]
        assert [a.state for a in course.attempts(STUDENT)] == ["graded", "graded", "refused"]

        # no feedback page the student can read gives away the hidden tests, an answer or a direction
        pages = sorted((home / COURSE_ID / ASSIGNMENT / "feedback").glob(f"*/{NB}.html"))
        pages += sorted((exchange_root(course.root) / COURSE_ID / "feedback").glob("*.html"))
        assert len(pages) == 6, pages            # three fetched, and the three released in the exchange
        for path in pages:
            assert not leaks(path.read_text()), f"{path} gives away {leaks(path.read_text())}"
    finally:
        if lab is not None:
            lab.stop()
        if service.poll() is None:
            course.stop()
