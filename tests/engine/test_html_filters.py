"""html_filters.py: the pages made from a student's notebook take time linear in its text.

`strip_files_prefix` must give nbconvert's own text on every input (compared on thousands of
random lines made of the pieces its pattern looks for), and the shapes that make nbconvert's
search each line once per `[` must finish in moments. `BoundedHighlight` colours a cell as
nbconvert does, and shows one with a line over its limit, or past the page's budget, as plain
text. `BoundedMarkdown` renders markdown as nbconvert does, but colours fenced blocks only as
Python and within the same budget, escapes mermaid blocks, and shows a missing attachment as a
missing image. The course's nbgrader_config.py and `chapter serve`'s feedback use them all.
"""
from __future__ import annotations

import random
import time
from pathlib import Path

import nbformat
import pytest
from nbconvert import HTMLExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.strings import strip_files_prefix as nbconvert_strip
from traitlets.config import Config

from graders.engine.course_dir import load_config
from graders.engine.html_filters import (BoundedHighlight, BoundedMarkdown, FILTERS, HIGHLIGHT_PAGE, bounded,
                                         page_warnings, strip_files_prefix)
from tests.conftest import must_finish_within

ROOT = Path(__file__).resolve().parents[2]
PIECES = ["[", "]", "(", ")", "!", "/", "files/", "](files/", "](/files/", "x", " ", "\n", "\r",
          'src="files/', "href='/files/", "![a](files/b.png)", "[c](/files/d)", ")(", "]("]


def test_strip_files_prefix_gives_nbconverts_text_on_any_line():
    rng = random.Random(8)
    for _ in range(20_000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 30)))
        assert strip_files_prefix(text) == nbconvert_strip(text), repr(text)
    for text in ("![a](files/b.png) and [c](/files/d)", '<img src="files/e.png">', "[x](files/y) ](files/[[[)",
                 "[a](files/", "no link at all", ""):
        assert strip_files_prefix(text) == nbconvert_strip(text), text


HOSTILE = {   # a line of n `[`, around the targets nbconvert's pattern needs
    "brackets": lambda n: "[" * n,
    "before an unclosed target": lambda n: "[" * n + "](files/",
    "after the last target": lambda n: "[a](files/b) ](files/" + "[" * n + ")",
    "before a closed target": lambda n: "[" * n + "](files/x)",
    "images": lambda n: "![" * (n // 2) + "](/files/y",
}


@pytest.mark.parametrize("shape", HOSTILE)
def test_strip_files_prefix_takes_moments_where_nbconvert_takes_hours(shape):
    small = HOSTILE[shape](3_000)
    assert strip_files_prefix(small) == nbconvert_strip(small)
    with must_finish_within(20):     # nbconvert's: ~44 s for 100,000, over an hour for 1,000,000
        strip_files_prefix(HOSTILE[shape](1_000_000))


def page() -> dict:
    """A template's context for one page, as the filters see it."""
    return {"resources": {}}


def test_a_cell_is_coloured_as_nbconvert_colours_it_or_shown_plain():
    ours, theirs = BoundedHighlight(), Highlight2HTML()
    code = "def f(x):\n    return [x ** 2 for x in range(3)]  # <squares>\n"
    assert ours(page(), code) == theirs(code)
    assert ours(page(), "x" * 1_000) == theirs("x" * 1_000)
    with must_finish_within(20):     # pygments: 17 s for 40,000 characters of "...", growing as their square
        long_line = ours(page(), "..." * 300_000 + " <b>&")
    assert long_line.startswith('<div class=" highlight hl-ipython3"><pre>')
    assert long_line.count("...") == 300_000 and "&lt;b&gt;&amp;" in long_line and "<b>" not in long_line
    assert "<span class=" not in ours(page(), "y = 1\n" * (HIGHLIGHT_PAGE // 5))    # over the budget: plain


def test_a_page_colours_its_budget_and_no_more():
    """Lines of `a.a.a…` cost pygments seconds per 100,000 characters at any line length: a page
    colours HIGHLIGHT_PAGE characters in all, code cells and fenced blocks together."""
    ours, one_page = BoundedHighlight(), page()
    third = "\n".join(["a." * 400] * (HIGHLIGHT_PAGE // 2_403))      # lines of 800 characters
    assert 3 * len(third) <= HIGHLIGHT_PAGE < 4 * len(third)
    assert [("<span class=" in ours(one_page, third)) for _ in range(4)] == [True, True, True, False]
    assert "<span class=" in ours(page(), third)          # the next page has its own budget
    markdown, fenced = BoundedMarkdown(parent=HTMLExporter()), f"```python\n{third}\n```\n"
    assert "<span class=" not in markdown(one_page, fenced)       # the budget is the page's, cells and blocks
    assert "<span class=" in markdown(page(), fenced)


def render(source: str, **cell) -> str:
    """A markdown cell's HTML, as the course's page renders it."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(source, **cell)])
    return HTMLExporter(config=load_config(ROOT)).from_notebook_node(nb)[0]


def test_markdown_is_rendered_as_nbconverts_with_fenced_blocks_coloured_only_as_python():
    theirs = HTMLExporter()
    text = "A *word*, $x^2$, a [link](https://example.org), and:\n\n```python\nx = [1, 2]  # <list>\n```\n"
    context = {"cell": {}, "resources": {}}
    assert BoundedMarkdown(parent=theirs)(context, text) == theirs.markdown2html(context, text)
    assert "<span" in render("```ipython3\nprint(1)\n```")
    bash = render("```bash\nls -l <dir>\n```")
    assert '<code class="language-bash">ls -l &lt;' in bash and '<span class="nb">' not in bash
    with must_finish_within(20):   # nbconvert's: 7 s for 20,000 characters marked ipython3, growing as their square
        hostile = render("```ipython3\n" + "." * 990_000 + "\n```\n")
    assert hostile.count(".") >= 990_000


def test_a_mermaid_block_is_text_and_a_missing_attachment_a_missing_image():
    mermaid = render("```mermaid\ngraph TD; A-->B; C[\"<img src=x onerror=alert(1)>\"]\n```")
    assert '<pre class="mermaid">' in mermaid and "<img src=x" not in mermaid and "A--&gt;B" in mermaid
    for attachments in (None, {}, {"a": {}}, {"b": {"image/png": "AAAA"}}):
        made = render("![a figure](attachment:a)", **({"attachments": attachments} if attachments is not None else {}))
        assert '<img alt="a figure" src="attachment:a"' in made
    kept = render("![a figure](attachment:a)", attachments={"a": {"image/png": "AAAA"}})
    assert 'src="data:image/png;base64,AAAA"' in kept


def test_the_course_and_the_services_feedback_use_them():
    assert dict(load_config(ROOT).HTMLExporter.filters) == FILTERS
    mine = Config()
    mine.HTMLExporter.filters = {"mine": "a.b", "highlight_code": "a.c"}
    got = bounded(mine)
    assert got.HTMLExporter.filters == {"mine": "a.b", **FILTERS}
    assert mine.HTMLExporter.filters == {"mine": "a.b", "highlight_code": "a.c"}      # a copy


def test_a_course_whose_config_leaves_its_pages_unprotected_is_warned():
    assert page_warnings(load_config(ROOT)) == []
    (bare,) = page_warnings(Config())
    assert "c.HTMLExporter.filters['strip_files_prefix']" in bare and "highlight_code" in bare
    assert "markdown2html" in bare
    assert "MathMLPreprocessor in c.HTMLExporter.preprocessors" in bare
    no_inert = load_config(ROOT)
    no_inert.HTMLExporter.preprocessors = ["graders.course.pages.PointsShownOnce"]
    (warning,) = page_warnings(no_inert)
    assert "MathMLPreprocessor" in warning and "filters" not in warning
    assert page_warnings(bounded(no_inert)) == page_warnings(no_inert)      # serve's filters: not the markup
    as_objects = load_config(ROOT)                  # a config may name a filter by the object itself
    as_objects.HTMLExporter.filters = {"strip_files_prefix": strip_files_prefix, "highlight_code": BoundedHighlight,
                                       "markdown2html": BoundedMarkdown}
    assert page_warnings(as_objects) == []
    as_objects.HTMLExporter.filters["strip_files_prefix"] = nbconvert_strip
    assert "c.HTMLExporter.filters['strip_files_prefix']" in page_warnings(as_objects)[0]


def test_a_hostile_notebooks_page_is_made_in_seconds_with_the_courses_config():
    """The whole page, as nbgrader's feedback template makes it, from a notebook within the grading
    limits (under 10,000 cells and 1,000,000 characters) built to stall nbconvert's own filters."""
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("[" * 600_000),
        nbformat.v4.new_code_cell("..." * 130_000),
        nbformat.v4.new_markdown_cell("A [link](files/notes.txt)."),
    ])
    exporter = HTMLExporter(config=load_config(ROOT), template_name="classic")
    started = time.monotonic()
    with must_finish_within(60):
        page, _ = exporter.from_notebook_node(nb)
    print(f"page made in {time.monotonic() - started:.1f} s")
    assert page.count("[") >= 600_000 and 'href="notes.txt"' in page
