"""Formgrader's and the feedback's pages as the course's nbgrader_config.py makes them: formulas
typeset with no script or network, styles in the page, a test cell's points shown once."""
import random
import re
from pathlib import Path

import nbformat
import pytest

from graders.engine.course_dir import load_config
from graders.course.pages import PAGE_STYLE, markdown_pieces, render_math
from tests.conftest import must_finish_within

REPO = Path(__file__).resolve().parents[2]
LONG_LINE = ("✗ per_device_bytes: does not match your variant within 0.001 relative (too small). "
             "Likely mistake: the fp32 master copy of the weights was left out; " * 3)


def raw_formulas(page: str) -> list[str]:
    """`$…$` left in the text of a page, outside code, styles and scripts."""
    text = re.sub(r"<(pre|code|style|script)\b.*?</\1>", "", page, flags=re.S)
    return re.findall(r"\$[^$\s<][^$<]*\$", text)


def graded_notebook():
    """An autograded notebook as the engine writes it: a formula, a table, a judged test cell."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("One parameter costs $2 + 2 + K$ bytes; with $P$ devices\n\n"
                                      "$$\\frac{(2 + K) N}{P}$$\n\n| what | bytes |\n|---|---|\n"
                                      "| optimiser state | $K$ |\n\nA shell variable: `$HOME`."),
        nbformat.v4.new_code_cell("assert isinstance(total_bytes, int)", metadata={"nbgrader": {
            "grade": True, "solution": False, "locked": True, "grade_id": "check_numbers",
            "points": 3, "schema_version": 3}}),
        nbformat.v4.new_code_cell("sp.Symbol('N') / 2"),
    ]
    nb.cells[1].outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="Variant C: 2 of 3 points in this cell\n" + LONG_LINE),
        nbformat.v4.new_output("execute_result", data={"text/plain": "2.0"}, execution_count=2)]
    nb.cells[2].outputs = [nbformat.v4.new_output(
        "execute_result", data={"text/plain": "N/2", "text/latex": "$\\displaystyle \\frac{N}{2}$"},
        execution_count=3)]
    return nb


def test_formulas_become_mathml_outside_code():
    """Inline and display formulas turn into MathML; code spans, fences and money stay text."""
    out = render_math("cost $2 + 2 + K$ bytes\n\n$$\\frac{a}{b}$$\n\n`$HOME` and $5 or $6\n\n"
                      "```\necho $PATH $x$\n```\n")
    assert out.count("<math") == 2 and 'display="block"' in out and "<mfrac>" in out
    assert "`$HOME`" in out and "$5 or $6" in out and "echo $PATH $x$" in out


# the pieces as one regular expression: what markdown_pieces must find. It is the reference on
# short text only: on a run of n backticks it tries every split, n**3 steps (1,000 took 1.9 s)
PIECES_AS_ONE_PATTERN = re.compile(
    r"(?P<fence>^[ \t]*(?P<ticks>```+|~~~+)[^\n]*\n.*?^[ \t]*(?P=ticks)[ \t]*$)"
    r"|(?P<code>(?P<bt>`+).+?(?<!`)(?P=bt)(?!`))"
    r"|(?P<escaped>\\\$)"
    r"|\$\$(?P<display>.+?)\$\$"
    r"|\$(?P<inline>[^\s$`](?:[^$\n`]|\n(?!\s*\n))*?(?<!\\))\$(?!\d)",
    re.MULTILINE | re.DOTALL)
KINDS = ("fence", "code", "escaped", "display", "inline")


def test_markdown_pieces_are_the_patterns_on_any_short_text():
    rng = random.Random(3)
    pieces = ["`", "``", "```", "~~~", "~", "$", "$$", "\\", "\n", "\n\n", " ", "\t", "a", "1", "x y", "\u2028",
              "\r", "\u00a0", "\u0663"]
    for _ in range(30_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 25)))
        expected = []
        for match in PIECES_AS_ONE_PATTERN.finditer(text):
            kind = next(k for k in KINDS if match.group(k) is not None)
            expected.append((match.start(), match.end(), kind,
                             match.group(kind) if kind in ("display", "inline") else ""))
        assert list(markdown_pieces(text)) == expected, repr(text)


@pytest.mark.parametrize("text", [
    "`" * 200_000,                                            # the pattern: hours
    "".join("`" * k + "a" for k in range(1, 1_500)),         # runs that nothing closes
    "".join("`" * k + "\n" for k in range(3, 1_500)),        # fences that nothing closes
    "$$" + "a" * 1_000_000, "$a\n" * 100_000, "\\$" * 500_000, "$`" * 500_000,
], ids=["backticks", "growing runs", "unclosed fences", "unclosed display", "lines", "escaped", "mixed"])
def test_a_students_markdown_is_typeset_in_linear_time(text):
    with must_finish_within(20):
        out = render_math(text)
    assert len(out) >= len(text), "the text is kept (typeset formulas only grow)"


def test_a_students_markup_never_reaches_the_page():
    """Formgrader's exporter, from the course config: a tag a student writes (in prose, in a
    formula's \\text, or in a LaTeX output of their code) is shown as text, never made an
    element of the instructor's page; the instructor's own (locked) cell keeps its HTML."""
    from bs4 import BeautifulSoup
    from nbconvert import HTMLExporter
    student = nbformat.v4.new_markdown_cell(
        'Answer <img src=x onerror="alert(1)"> <svg onload="alert(2)"></svg> <script>alert(3)</script> '
        "and $\\text{<script>alert(4)</script>}$; a < b, `<code>` and $a < b$.")
    # code to this module that mistune does not read as code: a span across a blank line, and a
    # fence that a longer one closes first
    spans = nbformat.v4.new_markdown_cell('`a\n\n<img src=x onerror="alert(6)">\n\n`\n\n'
                                          '```\nx\n````\n<img src=x onerror="alert(7)">\n```\n')
    instructor = nbformat.v4.new_markdown_cell("<b>instructions</b>", metadata={"nbgrader": {
        "locked": True, "grade": False, "solution": False, "grade_id": "intro", "schema_version": 3}})
    latex = nbformat.v4.new_output("display_data", data={
        "text/plain": "x", "text/latex": "$\\text{</mtext><script>alert(5)</script>}$"})
    nb = nbformat.v4.new_notebook(cells=[student, spans, instructor,
                                         nbformat.v4.new_code_cell("show()", outputs=[latex])])
    page, _ = HTMLExporter(config=load_config(REPO), template_name="classic").from_notebook_node(nb)
    soup = BeautifulSoup(page, "html.parser")
    assert not [s for s in soup.find_all("script") if "alert" in s.get_text()]
    assert not soup.find_all(attrs={"onerror": True}) and not soup.find_all(attrs={"onload": True})
    text = soup.get_text()
    assert '<img src=x onerror="alert(1)">' in text and "<script>alert(3)</script>" in text, text[-2000:]
    assert "a < b" in text and soup.find("b", string="instructions")
    assert soup.find("code", string="<\u200bcode>")                # a real code span shows "<"
    assert page.count("<math") >= 1                 # a < b, typeset


def test_a_page_typesets_at_most_its_share_of_formulas():
    """A student's 5,100 formulas: the first MOST_FORMULAS become MathML, the rest stay as written
    (each is work; a cell of 1,000,000 characters could hold 250,000 of them)."""
    from nbconvert import HTMLExporter
    from graders.course.pages import MOST_FORMULAS
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("$x < 1$ " * 5_100)])
    page, _ = HTMLExporter(config=load_config(REPO), template_name="classic").from_notebook_node(nb)
    assert page.count("<math") == MOST_FORMULAS == 5_000
    assert page.count("$x &amp;lt; 1$") == 100      # as written, and inert: "&lt;" shown as such


def test_every_formula_of_the_course_converts():
    """Each `$…$` in the course's markdown becomes MathML without an error element."""
    count = 0
    for path in sorted((REPO / "source").glob("*/*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                out = render_math(cell.source)
                count += out.count("<math")
                assert "merror" not in out and 'class="tex"' not in out, path
                assert not raw_formulas(out), (path, raw_formulas(out))
    assert count > 500


def test_formgrader_page_has_mathml_and_points_once():
    """Formgrader's exporter (HTMLExporter built from the course config) typesets the formulas,
    sympy's LaTeX outputs too, and drops the repeated points (the cell header shows them)."""
    from nbconvert import HTMLExporter
    exporter = HTMLExporter(config=load_config(REPO), template_name="lab")
    page, _ = exporter.from_notebook_node(graded_notebook())
    assert page.count("<math") >= 4, "formulas and the sympy output as MathML"
    assert not raw_formulas(page), raw_formulas(page)
    assert "`$HOME`" not in page and "$HOME" in page
    assert not re.search(r">\s*2\.0\s*<", page), "the points are not repeated as an Out[ ] line"
    assert "Variant C: 2 of 3 points" in page


def test_autograded_notebook_keeps_its_points_for_nbgrader():
    """Only the page drops the points: nbgrader reads a test cell's partial credit from its
    execute_result and gives full marks to a cell without one."""
    from nbgrader.utils import determine_grade
    nb = graded_notebook()
    from nbconvert import HTMLExporter
    HTMLExporter(config=load_config(REPO), template_name="lab").from_notebook_node(nb)
    assert determine_grade(nb.cells[1])[0] == 2.0


def test_feedback_is_styled_without_scripts():
    """generate_feedback's preprocessors, registered as nbgrader registers them (not enabled),
    put the page's styles (tables, wrapping feedback lines) in a <style> element, after the
    CSS that CSSHTMLHeaderPreprocessor writes, and the formulas need no script."""
    from nbconvert import HTMLExporter
    config = load_config(REPO)
    exporter = HTMLExporter(config=config, template_name="lab")
    for pp in config.GenerateFeedback.preprocessors:
        if "GetGrades" not in pp:   # it reads the gradebook, and adds no styles
            exporter.register_preprocessor(pp)
    page, _ = exporter.from_notebook_node(graded_notebook())
    styles = "".join(re.findall(r"<style[^>]*>(.*?)</style>", page, re.S))
    assert PAGE_STYLE.strip() in styles
    assert "white-space: pre-wrap" in PAGE_STYLE and "border: 1px solid" in PAGE_STYLE
    assert "<math" in page and not raw_formulas(page)


def test_every_unmarked_prompt_has_a_cell_to_answer_in():
    """A "(Not graded: a sentence for yourself.)" prompt is followed by a cell the student can write in."""
    prompts = 0
    for path in sorted((REPO / "release").glob("*/*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        for index, cell in enumerate(cells):
            if cell.cell_type == "markdown" and re.search(r"[Nn]ot graded[:;].{0,40}for yourself", cell.source):
                prompts += 1
                after = cells[index + 1] if index + 1 < len(cells) else None
                assert after is not None, f"{path.name}: the prompt is the last cell, with nowhere to write"
                assert not after.metadata.get("nbgrader", {}).get("locked"), f"{path.name}: the next cell is locked"
    assert prompts >= 10
