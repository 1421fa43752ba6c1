"""The pages people read, made readable offline and untrusted: formgrader, feedback, the site.

nbconvert's templates load MathJax from a CDN, which a course machine, a student's laptop
on a train or a sandboxed viewer may not reach. And JupyterLab opens a feedback `.html`
untrusted, in an iframe without `allow-scripts`, so no copy of MathJax (local or not)
would run there. So the formulas are typeset when the page is made, not when it is read:
`MathMLPreprocessor` turns each `$…$` and `$$…$$` of the markdown cells, and each
`text/latex` output, into MathML (with latex2mathml), which every current browser lays
out natively, with no script and no network. A student's markdown reaches it (formgrader's
pages, the feedback), so the formulas, code spans and fences are found by `markdown_pieces`,
in time linear in the text: one regular expression for the same pieces tried every split of a
run of backticks (1.9 s for 1,000 of them, hours for 20,000).

Formgrader shows a student's cells on the instructor's own page, where a script of theirs would
act as the instructor. So in every markdown cell that is not locked (grading restores a locked
cell to the instructor's text), each "<" outside formulas is written "&lt;" (in code, followed
by an invisible U+200B, since mistune may not read as code what this module does): the text
reads the same, and no tag of the student's becomes an element. A formula is kept only when
latex2mathml's output is MathML alone (`only_mathml`); `\text{<script>…}` is shown as its TeX.
Outputs were already limited to text, PNG, JPEG and LaTeX by grading.

`FeedbackStyle` adds the styles the feedback needs as a `<style>` element in the page
(nbgrader's feedback template drops nbconvert's notebook stylesheet, so markdown tables
come out bare) and makes long feedback lines wrap instead of running off the right edge.

`PointsShownOnce` drops, from the page only, a test cell's `execute_result` that is
nbgrader's partial-credit number: the autograded notebook keeps it (nbgrader's
`utils.determine_grade` reads a test cell's points from it, and gives full marks to a
test cell without one), while formgrader and the feedback already print "Score: x / y"
in the cell's header.

nbgrader_config.py puts the first and last on `HTMLExporter` (formgrader's and
generate_feedback's exporter) and `FeedbackStyle` on `GenerateFeedback`; the site
(`graders.course.site`) uses the first two.
"""
from __future__ import annotations

import bisect
import html
import re
import xml.etree.ElementTree as ET

from nbconvert.preprocessors import Preprocessor as _NbconvertPreprocessor
from traitlets import Bool


class Preprocessor(_NbconvertPreprocessor):
    """nbconvert's preprocessor, on by default: nbgrader registers a converter's preprocessors
    without enabling them, and nbconvert's base class is off until enabled."""
    enabled = Bool(True).tag(config=True)

_MATHML_TEXT = re.compile(r">([^<]+)<")
_MARKS = re.compile(r"[|*_`~\\\[\]]")


def tex_to_mathml(tex: str, display: bool = False) -> str:
    """One formula as a MathML element; TeX that cannot be read stays visible as TeX."""
    from latex2mathml.converter import convert
    try:
        mathml = convert(tex.strip(), display="block" if display else "inline")
    except Exception:  # noqa: BLE001 - a formula the converter cannot read is shown as written
        mathml = f'<code class="tex">{html.escape(tex)}</code>'
    # markdown reads on between the tags: no blank line (it would end the HTML there), no '|'
    # (a table cell's end) and no emphasis or code marks in the text of the formula
    mathml = _MATHML_TEXT.sub(lambda m: ">" + _MARKS.sub(lambda c: f"&#x{ord(c.group()):05X};", m.group(1)) + "<",
                              mathml)
    if not mathml.startswith("<code") and not only_mathml(mathml):
        # latex2mathml copies the text of \text{...} as it is: "<script>" there would be a script
        mathml = f'<code class="tex">{html.escape(tex)}</code>'
    return mathml.replace("\n", " ")


MATHML = "http://www.w3.org/1998/Math/MathML"
# MathML's presentation elements, less those that can hold HTML (annotation-xml) or act (maction)
MATHML_ELEMENTS = frozenset(
    "math menclose merror mfenced mfrac mglyph mi mlabeledtr mmultiscripts mn mo mover mpadded "
    "mphantom mprescripts mroot mrow ms mspace msqrt mstyle msub msubsup msup mtable mtd mtext mtr "
    "munder munderover none semantics annotation".split())


def only_mathml(markup: str) -> bool:
    """Whether `markup` is one well-formed MathML element holding MathML elements and text only,
    with no attribute that could run or fetch anything (on..., href, src, style, other namespaces)."""
    try:
        root = ET.fromstring(markup)
    except (ET.ParseError, ValueError):
        return False
    for element in root.iter():
        namespace, _, name = element.tag.rpartition("}")
        if namespace != "{" + MATHML or name not in MATHML_ELEMENTS:
            return False
        for attribute in element.attrib:
            if ("}" in attribute or ":" in attribute or attribute.lower().startswith("on")
                    or attribute.lower() in ("href", "src", "style")):
                return False
    return True


def render_math(markdown: str, inert_html: bool = False) -> str:
    """Markdown with every formula outside code replaced by MathML. With `inert_html` (a cell a
    student could write), every "<" outside formulas starts no tag: written "&lt;" in the text,
    and followed by an invisible U+200B in code. The text reads the same, and no tag of theirs
    reaches the page."""
    return typeset(markdown, inert_html)[0]


def typeset(markdown: str, inert_html: bool = False, most: int | None = None) -> tuple[str, int]:
    """`render_math`, converting at most `most` formulas (the others stay as written, as text);
    and how many it converted."""
    out, done, converted = [], 0, 0

    def text(upto: int) -> str:
        plain = markdown[done:upto]
        return plain.replace("<", "&lt;") if inert_html else plain
    for start, end, kind, tex in markdown_pieces(markdown):
        if kind in ("display", "inline") and most is not None and converted >= most:
            continue                     # left in the text around it
        out.append(text(start))
        if kind == "display":
            out.append(f'<div class="math-display">{tex_to_mathml(tex, True)}</div>')
        elif kind == "inline":
            out.append(tex_to_mathml(tex))
        elif inert_html:
            # code as this scanner reads it, which mistune may not (a span across a blank line, a
            # fence that a longer one closed): a "<" followed by U+200B starts no tag in either,
            # and reads as "<" in code, where "&lt;" would show as written
            out.append(markdown[start:end].replace("<", "<\u200b"))
        else:
            out.append(markdown[start:end])
        converted += kind in ("display", "inline")
        done = end
    return "".join(out) + text(len(markdown)), converted


# where a piece can start: a "`", "\\" or "$", or a line that opens with a fence of three or more
_MAY_START = re.compile(r"[`\\$]|^[ \t]*(?:```|~~~)", re.MULTILINE)
# a line that can close a fence: spaces or tabs, one run of "`" or of "~", spaces or tabs
_FENCE_LINE = re.compile(r"^[ \t]*(`+|~+)[ \t]*$", re.MULTILINE)
_BACKTICKS = re.compile(r"`+")
# a line that opens a fence: spaces or tabs, then three or more "`" or "~"
_FENCE_OPEN = re.compile(r"[ \t]*(`{3,}|~{3,})")


def markdown_pieces(text: str):
    """(start, end, kind, tex) of each piece of `text`, left to right: a fenced block, a code span,
    an escaped dollar, display math `$$…$$` or inline math `$…$` (kind "fence", "code",
    "escaped", "display", "inline"; tex is the formula's, else "").

    At each place, in that order, the first piece that can start there is taken:
    - a fence: at a line's start, spaces or tabs, a run of three or more "`" (or "~"), the rest
      of that line, and every line up to the first that holds, between spaces or tabs, exactly as
      many (a run longer than any closing line's is read as the longest that one closes);
    - a code span: a run of backticks, at least one character, the next run of exactly as many (a
      run that no later run matches is read as the longest that one does);
    - display math: `$$`, at least one character, the next `$$`;
    - inline math: `$`, a first character that is no space, `$` or backtick, then no `$` or
      backtick and no blank line, up to a `$` that no backslash precedes and no digit follows.
    Each place is looked at once, and each search is remembered or bounded, so the time is
    linear in the text (a run of backticks is matched by its length, never by trying each split).
    """
    n = len(text)
    fences: dict = {}                    # (char, length) -> [(line start, line end)], in order
    for line in _FENCE_LINE.finditer(text):
        run = line.group(1)
        fences.setdefault((run[0], len(run)), []).append((line.start(), line.end()))
    runs: dict = {}                      # length -> [start of each maximal run of backticks], in order
    for run in _BACKTICKS.finditer(text):
        runs.setdefault(len(run.group()), []).append(run.start())
    no_double_from = n + 1               # no "$$" at or after this place (a search that failed)
    pos = 0
    while True:
        may = _MAY_START.search(text, pos)
        if may is None:
            return
        pos = may.start()
        piece = (_fence(text, pos, fences) if pos == 0 or text[pos - 1] == "\n" else None)
        if piece is None and text[pos] == "`":
            piece = _code(text, pos, runs)
            if piece is None:            # no later run closes any part of this one
                pos = _BACKTICKS.match(text, pos).end()
                continue
        if piece is None and text.startswith("\\$", pos):
            piece = (pos, pos + 2, "escaped", "")
        if piece is None and text.startswith("$$", pos) and pos + 3 < no_double_from:
            close = text.find("$$", pos + 3)
            if close < 0:
                no_double_from = pos + 3
            else:
                piece = (pos, close + 2, "display", text[pos + 2:close])
        if piece is None and text[pos] == "$":
            piece = _inline(text, pos)
        if piece is None:
            pos += 1
            continue
        yield piece
        pos = piece[1]


def _fence(text: str, pos: int, fences: dict):
    """The fenced block opening at the line that starts at `pos`, or None."""
    opening = _FENCE_OPEN.match(text, pos)
    newline = text.find("\n", pos)
    if opening is None or newline < 0:
        return None
    run = opening.group(1)
    for length in range(len(run), 2, -1):
        lines = fences.get((run[0], length), [])
        at = bisect.bisect_right(lines, (newline, len(text) + 1))      # the first line after this one
        if at < len(lines):
            return pos, lines[at][1], "fence", ""
    return None


def _code(text: str, pos: int, runs: dict):
    """The code span whose backticks start at `pos`, or None."""
    run = _BACKTICKS.match(text, pos).end() - pos
    for length in range(run, 0, -1):
        starts = runs.get(length, [])
        at = bisect.bisect_right(starts, pos + run)
        if at < len(starts):
            return pos, starts[at] + length, "code", ""
    return None


def _inline(text: str, pos: int):
    """Inline math opening with the `$` at `pos`, or None."""
    n, end = len(text), pos + 2
    if end > n or text[pos + 1].isspace() or text[pos + 1] in "$`":
        return None
    while end < n:
        char = text[end]
        if char == "$":
            if text[end - 1] != "\\" and not (end + 1 < n and text[end + 1].isdecimal()):
                return pos, end + 1, "inline", text[pos + 1:end]
            return None
        if char == "`":
            return None
        if char == "\n":
            after = end + 1
            while after < n and text[after].isspace():
                if text[after] == "\n":
                    return None          # a blank line ends the paragraph
                after += 1
        end += 1
    return None


_LATEX_OUTPUT = re.compile(r"^\s*(\$\$?)(?P<tex>.*?)\1\s*$", re.DOTALL)


def latex_output_as_mathml(latex: str) -> str:
    """A `text/latex` output (sympy writes `$\\displaystyle …$`) as MathML."""
    match = _LATEX_OUTPUT.match(latex)
    tex = match.group("tex") if match else latex
    tex = tex.replace(r"\displaystyle", "")
    return f'<div class="math-display">{tex_to_mathml(tex, display=True)}</div>'


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


# formulas typeset on one page: a notebook of the course has a few hundred; each takes about 20 us,
# and a student's 1,000,000 characters of "$a$ " would be 250,000 of them
MOST_FORMULAS = 5_000


class MathMLPreprocessor(Preprocessor):
    """Formulas as MathML in the page, so that they render with no script and no network (at
    most MOST_FORMULAS of them a page; any after those stay as written)."""
    left = MOST_FORMULAS

    def preprocess(self, nb, resources):
        self.left = MOST_FORMULAS
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "markdown":
            # a locked cell is the instructor's own (grading restores it); any other, a student's
            grading = cell.get("metadata", {}).get("nbgrader")
            locked = isinstance(grading, dict) and grading.get("locked") is True
            cell.source, converted = typeset(_text(cell.source), not locked, self.left)
            self.left -= converted
        elif cell.cell_type == "code":
            for output in cell.get("outputs", []):
                data = output.get("data") or {}
                if "text/latex" in data and "text/html" not in data and self.left > 0:
                    data["text/html"] = latex_output_as_mathml(_text(data["text/latex"]))
                    self.left -= 1
        return cell, resources


class PointsShownOnce(Preprocessor):
    """A test cell's points appear once on the page: in its header, not again as `Out[n]:`."""

    def preprocess_cell(self, cell, resources, index):
        grading = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type == "code" and grading.get("grade") and not grading.get("solution"):
            cell.outputs = [o for o in cell.get("outputs", []) if not _is_points(o)]
        return cell, resources


def _is_points(output) -> bool:
    if output.get("output_type") != "execute_result":
        return False
    try:
        float(_text((output.get("data") or {}).get("text/plain")).strip())
    except ValueError:
        return False
    return True


PAGE_STYLE = """
/* markdown tables, as a notebook shows them */
.rendered_html table, .text_cell_render table { border-collapse: collapse; margin: .75em 0; }
.rendered_html th, .rendered_html td, .text_cell_render th, .text_cell_render td {
  border: 1px solid #cfcfcf; padding: .3em .7em; text-align: left; vertical-align: top; }
.rendered_html thead th, .text_cell_render thead th { background: #f5f5f5; font-weight: bold; }
.rendered_html tbody tr:nth-child(odd), .text_cell_render tbody tr:nth-child(odd) { background: #fafafa; }
/* feedback lines wrap at the page's edge instead of being cut off */
.output_area pre, .output_subarea pre, .output_text pre, .jp-OutputArea-output pre {
  white-space: pre-wrap; word-break: normal; overflow-wrap: anywhere; }
.output_subarea { overflow-x: visible; max-width: 100%; }
/* formulas typeset as MathML when the page was made */
math { font-size: 1.1em; }
div.math-display { margin: .6em 0; overflow-x: auto; }
"""


class FeedbackStyle(Preprocessor):
    """The feedback's own styles, in a `<style>` element of the page (no script, no link)."""

    def preprocess(self, nb, resources):
        inlining = resources.setdefault("inlining", {})
        css = inlining.get("css") or []
        inlining["css"] = ([css] if isinstance(css, str) else list(css)) + [PAGE_STYLE]
        return nb, resources
