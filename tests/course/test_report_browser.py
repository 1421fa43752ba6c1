"""The class report as an instructor opens it, in headless chromium (Debian's /usr/bin/chromium).

A synthetic class (tests/course/test_report.py's, 15 students per variant) is recorded into a
SQLite gradebook and `chapter report` writes the page. Opened from disk with every
network request refused, its figures must load with a size, no request may leave
the page, and its per-check, per-mistake and item statistics tables must read exactly as
the CSV files. Screenshots go to tests/artifacts/report.png, report-item.png and
report-items.png (the first item's statistics table).
"""
from __future__ import annotations

import csv
import os
import re
from contextlib import contextmanager
from pathlib import Path

import pytest

from graders.course import report
from tests.course.test_report import ASSIGNMENT, build_class, make_class_course

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

sync_api = pytest.importorskip("playwright.sync_api")
if not os.access(CHROMIUM, os.X_OK):
    pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)", allow_module_level=True)


@contextmanager
def opened(page_file: Path, width: int):
    """A headless chromium page showing `page_file`."""
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": width, "height": 1000})
            page.goto(page_file.as_uri())
            yield page
        finally:
            browser.close()


def csv_rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as fh:
        return list(csv.reader(fh))


def test_the_report_page_shows_its_figures_and_the_csv_tables(tmp_path):
    """Every figure loads with a nonzero natural width, nothing is fetched, and the tables equal the CSV."""
    course = make_class_course(tmp_path / "course")
    build_class(course, per_variant=15)
    written = report.build_report(course, ASSIGNMENT, out=tmp_path / "report")
    requests = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1300, "height": 1000})
            context.route(re.compile(r"^https?://"), lambda route: route.abort())
            page = context.new_page()
            page.on("request", lambda request: requests.append(request.url))
            page.goto(written.html.as_uri())
            page.wait_for_load_state("load")
            sizes = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")
            assert len(sizes) == 1 + len(written.tables) and all(w > 0 for w in sizes), sizes
            for kind, path in (("checks", written.checks_csv), ("mistakes", written.mistakes_csv),
                               ("items", written.items_csv)):
                shown = page.eval_on_selector_all(
                    f'table[data-table="{kind}"]',
                    "tables => tables.map(t => [...t.querySelectorAll('tr')].map("
                    "r => [...r.children].map(c => c.textContent)))")
                header = {tuple(t[0]) for t in shown}
                body = [row for t in shown for row in t[1:]]
                rows = csv_rows(path)
                assert header == {tuple(rows[0])}
                assert body == rows[1:] and body, kind
            assert page.locator("text=POSSIBLY UNFAIR").count() <= 1
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=False)
            page.locator("section").first.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "report-item.png"))
            items = page.locator('table[data-table="items"]').first
            items.scroll_into_view_if_needed()
            assert items.is_visible() and "nan" not in items.inner_text().lower()
            items.screenshot(path=str(ARTIFACTS / "report-items.png"))
            context.close()
        finally:
            browser.close()
    assert [u for u in requests if not u.startswith("file:") and not u.startswith("data:")] == []


def test_a_flagged_check_stands_out_in_the_item_statistics(tmp_path):
    """The planted bad check of tests/course/test_report_items.py is shown flagged, on a red row;
    screenshot tests/artifacts/report-items-flagged.png."""
    from graders.course.report import render
    from tests.course.test_report_items import synthetic_class
    data = synthetic_class(80)
    per_item = report.tables(data)
    page_file = tmp_path / "planted.html"
    page_file.write_text(render.render_html(data, per_item, render.figures(per_item)), encoding="utf-8")
    with opened(page_file, 1300) as page:
        table = page.locator('table[data-table="items"]')
        flagged = table.locator("tr.flagged")
        assert flagged.count() == 3 and all(report.NEGATIVE in t for t in flagged.all_inner_texts())
        colour = flagged.first.locator("td").first.evaluate("td => getComputedStyle(td).backgroundColor")
        plain = table.locator("tbody tr:not(.flagged) td").first.evaluate(
            "td => getComputedStyle(td).backgroundColor")
        assert colour != plain, (colour, plain)
        table.scroll_into_view_if_needed()
        ARTIFACTS.mkdir(exist_ok=True)
        table.screenshot(path=str(ARTIFACTS / "report-items-flagged.png"))


def test_the_deadlines_part_shows_each_student_and_marks_what_is_out_of_step(tmp_path, built_deadlines):
    """The report's deadlines part on a small gradebook with an extension granted in deadlines.toml but
    not yet applied: the table reads as deadlines.csv's rows and that student's row is marked;
    screenshot tests/artifacts/report-deadlines.png."""
    from graders.course import deadlines as dl
    from graders.course.report import lateness, render
    from graders.course.report.data import ClassData
    from tests.course.synthetic_gradebook import course_from
    from tests.course.test_deadlines import POLICY
    course = course_from(tmp_path, built_deadlines)
    (course / dl.FILE).write_text(POLICY)
    dl.apply(course, dl.load(course))
    (course / dl.FILE).write_text(POLICY + "\n[extensions.hw1]\nbo = { hours = 48 }\n")
    found = lateness.read(course, "hw1")
    page_file = tmp_path / "deadlines.html"
    page_file.write_text(render.render_html(ClassData("hw1", "c", [], [r[0] for r in found.rows], 0, lateness=found),
                                            [], {"overview": ""}), encoding="utf-8")
    with opened(page_file, 1100) as page:
        table = page.locator('table[data-table="deadlines"]')
        shown = table.evaluate("t => [...t.querySelectorAll('tr')].map(r => [...r.children].map(c => c.textContent))")
        assert shown == [lateness.COLUMNS] + [[str(v) for v in row] for row in found.rows]
        flagged = table.locator("tr.flagged")
        assert flagged.count() == 1 and flagged.first.inner_text().startswith("bo")
        assert "chapter deadlines" in page.locator("h2 + p").first.inner_text()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report-deadlines.png"), full_page=True)


@pytest.fixture(scope="module")
def built_deadlines(tmp_path_factory):
    from tests.course.synthetic_gradebook import built_once
    from tests.course.test_deadlines import CLASS, NOTEBOOKS
    return built_once(tmp_path_factory, NOTEBOOKS, CLASS)
