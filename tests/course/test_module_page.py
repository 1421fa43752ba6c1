"""The chapter and module pages of the site: the seed's layout, with counts computed from the content.

The browser test opens the TDS page in headless chromium (Debian's /usr/bin/chromium), served
from 127.0.0.1, and leaves a screenshot in tests/artifacts/.
"""
from __future__ import annotations

import functools
import http.server
import os
import re
import threading
from pathlib import Path

import pytest

from graders.course.cards import content_counts
from graders.course.contract import course_root, load_chapters
from graders.course.site import module_page, write_module_pages

ROOT = course_root()
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
CHROMIUM = "/usr/bin/chromium"


def _chapter(chapter_id):
    return next(c for c in load_chapters(ROOT) if c.id == chapter_id)


def test_module_page_lists_every_concept_with_its_summary_and_counts():
    """The page names the title, subtitle, the three computed counts and each concept in order."""
    tds = _chapter("TDS")
    counts = content_counts(ROOT, tds)
    page = module_page(tds, counts, {"p5-loss-spike": "../practice/p5-loss-spike/index.html"})
    assert "<h1>Training Dynamics &amp; Scaling</h1>" in page and tds.subtitle.split(":")[0] in page
    for number, label in ((counts["concepts"], "concepts"), (counts["cards"], "flashcards"),
                          (counts["reading"]["minutes"], "minutes of reading")):
        assert f"<b>{number}</b>{label}" in page
    assert page.count('<li class="concept">') == len(tds.concepts) == 16
    positions = [page.index(f"<strong>{name.replace('&', '&amp;')}</strong>") for name in tds.concepts]
    assert positions == sorted(positions)
    assert '<span class="number">01</span>' in page and '<span class="number">16</span>' in page
    assert '<a href="../practice/p5-loss-spike/index.html">p5-loss-spike</a>' in page
    assert '<span class="missing">e09-chinchilla</span>' in page     # no page built: named, not linked


def test_every_concept_has_a_summary_and_names_only_known_items():
    """Concepts are data: each has a one-line summary, and every item it names is in chapters.toml."""
    known = {nb.split("/")[-1] for c in load_chapters(ROOT) for nb in c.notebooks}
    tds = _chapter("TDS")
    assert len(tds.concept_notes) == 16
    for concept in tds.concept_notes:
        assert concept.summary and "\n" not in concept.summary, concept.name
        assert set(concept.items) <= known, (concept.name, set(concept.items) - known)


def test_the_edge_of_stability_is_at_or_just_above_two_over_eta():
    """Cohen et al. 2021 find full-batch training's sharpness at, or just above, 2/η, not exactly
    at it. Neither the concept's summary nor a card of its items puts it exactly there."""
    import tomllib
    concept = next(c for c in _chapter("TDS").concept_notes if c.name == "The Edge of Stability")
    assert "exactly" not in concept.summary and "just above" in concept.summary, concept.summary
    for item in concept.items:
        for path in ROOT.glob(f"graders/problems/*/{item.replace('-', '_')}.cards.toml"):
            for card in tomllib.loads(path.read_text())["card"]:
                if re.search(r"hover|drift", card["back"]):
                    assert "exactly" not in card["back"].lower(), card["back"]


@pytest.fixture
def served_pages(tmp_path):
    """Module pages written into a scratch site (one item page stubbed), served on 127.0.0.1."""
    stub = tmp_path / "practice" / "p5-loss-spike" / "index.html"
    stub.parent.mkdir(parents=True)
    stub.write_text("<!DOCTYPE html><title>p5-loss-spike</title><h1>p5-loss-spike</h1>")
    write_module_pages(ROOT, tmp_path, load_chapters(ROOT))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", tmp_path
    server.shutdown()
    server.server_close()


@pytest.mark.browser
def test_module_page_in_a_browser(served_pages):
    """In chromium, the TDS page shows its counts and sixteen numbered concepts, and an item link works."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"{CHROMIUM} is not installed")
    base, out = served_pages
    tds = _chapter("TDS")
    counts = content_counts(ROOT, tds)
    assert (out / "cards" / "TDS.apkg").exists() and (out / "module" / "II-8.html").exists()
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 1400})
            page.route(re.compile(r"^https?://(?!127\.0\.0\.1)"), lambda route: route.abort())
            page.goto(base + "module/TDS.html")
            assert page.locator("h1").inner_text() == "Training Dynamics & Scaling"
            shown = page.locator(".counts .count").all_inner_texts()
            assert [t.split()[0] for t in shown] == [str(counts["concepts"]), str(counts["cards"]),
                                                    str(counts["reading"]["minutes"])]
            items = page.locator("li.concept")
            assert items.count() == 16
            assert items.nth(0).locator(".number").inner_text() == "01"
            assert items.nth(6).locator("strong").inner_text() == "The Edge of Stability"
            page.screenshot(path=str(ARTIFACTS / "module-TDS.png"), full_page=True)
            page.locator("a", has_text="p5-loss-spike").first.click()
            page.wait_for_load_state()
            assert page.locator("h1").inner_text() == "p5-loss-spike"
        finally:
            browser.close()
