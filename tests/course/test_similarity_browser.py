"""The similarity page as an instructor opens it, in headless chromium (Debian's /usr/bin/chromium).

The synthetic class of tests/course/similarity_class.py (30 students, two planted copies)
is laid out as a course folder and `build_similarity` writes the page. Opened from disk
with every network request refused: nothing may leave the page, its table must read
exactly as similarity.csv, the planted pairs must be the marked rows, each top pair's link
must lead to its side-by-side view with highlighted code, and nowhere may the page say
more than "look closer". Screenshots go to tests/artifacts/similarity*.png.
"""
from __future__ import annotations

import csv
import re

import pytest

from graders.course import similarity
from tests.course.similarity_class import class_answers, write_course
from tests.course.test_report_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, sync_api  # skips as it does

pytestmark = pytest.mark.browser


def test_the_similarity_page_ranks_the_copies_and_shows_them_side_by_side(tmp_path):
    answers, planted = class_answers(30)
    course = write_course(tmp_path / "course", answers)
    written = similarity.build_similarity(course, answers.assignment, tmp_path / "report")
    with open(written.csv, newline="") as fh:
        rows = list(csv.reader(fh))
    left = []            # every request the page makes that is not to a file or data: URL
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.route(re.compile(r"^(?!file:|data:)"), lambda route: (left.append(route.request.url),
                                                                       route.abort()))
            page.goto(written.html.as_uri(), wait_until="load")
            shown = page.eval_on_selector_all(
                "table[data-table='similarity'] tr", "rows => rows.map(r => [...r.children].map(c => c.textContent))")
            assert shown == rows and len(shown) > 3
            marked = page.eval_on_selector_all("tr.out", "rows => rows.map(r => [r.children[1].textContent, "
                                                         "r.children[2].textContent])")
            assert sorted(tuple(m) for m in marked) == planted
            body = page.inner_text("body")
            assert "not a verdict" in body and "look closer" in body
            assert not re.search(r"\b(cheat|plagiar|guilty|copied)", body, re.I)
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "similarity.png"))
            page.click("table[data-table='similarity'] a[href='#pair-1']")
            section = page.locator("section[data-pair='1']")
            assert section.is_visible() and "unusually alike - look closer" in section.locator("h2").inner_text()
            assert section.locator("mark").count() >= 4
            assert section.locator(".side").count() >= 3
            page.screenshot(path=str(ARTIFACTS / "similarity-pair.png"))
        finally:
            browser.close()
    assert left == []
