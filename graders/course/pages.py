"""The pages people read, made readable offline and untrusted: formgrader, feedback, the site.

nbconvert's templates load MathJax from a CDN, which a course machine, a student's laptop
on a train or a sandboxed viewer may not reach. And JupyterLab opens a feedback `.html`
untrusted, in an iframe without `allow-scripts`, so no copy of MathJax (local or not)
would run there. So the formulas are typeset when the page is made, not when it is read:
`MathMLPreprocessor` turns each `$…$` and `$$…$$` of the markdown cells, and each
`text/latex` output, into MathML (with latex2mathml), which every current browser lays
out natively, with no script and no network.

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

import html
import re

from nbconvert.preprocessors import Preprocessor as _NbconvertPreprocessor
from traitlets import Bool


class Preprocessor(_NbconvertPreprocessor):
    """nbconvert's preprocessor, on by default: nbgrader registers a converter's preprocessors
    without enabling them, and nbconvert's base class is off until enabled."""
    enabled = Bool(True).tag(config=True)

# fenced code, inline code, an escaped dollar, display math, inline math, in that order; inline
# math opens on a non-space and closes on a dollar not followed by a digit, so "$5 and $6" stays text
_MARKDOWN_PIECES = re.compile(
    r"(?P<fence>^[ \t]*(?P<ticks>```+|~~~+)[^\n]*\n.*?^[ \t]*(?P=ticks)[ \t]*$)"
    r"|(?P<code>(?P<bt>`+).+?(?<!`)(?P=bt)(?!`))"
    r"|(?P<escaped>\\\$)"
    r"|\$\$(?P<display>.+?)\$\$"
    r"|\$(?P<inline>[^\s$`](?:[^$\n`]|\n(?!\s*\n))*?(?<!\\))\$(?!\d)",
    re.MULTILINE | re.DOTALL)


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
    return mathml.replace("\n", " ")


def render_math(markdown: str) -> str:
    """Markdown with every formula outside code replaced by MathML."""
    def piece(match: re.Match) -> str:
        if match.group("fence") or match.group("code") or match.group("escaped"):
            return match.group(0)
        if match.group("display") is not None:
            return f'<div class="math-display">{tex_to_mathml(match.group("display"), True)}</div>'
        return tex_to_mathml(match.group("inline"))
    return _MARKDOWN_PIECES.sub(piece, markdown)


_LATEX_OUTPUT = re.compile(r"^\s*(\$\$?)(?P<tex>.*?)\1\s*$", re.DOTALL)


def latex_output_as_mathml(latex: str) -> str:
    """A `text/latex` output (sympy writes `$\\displaystyle …$`) as MathML."""
    match = _LATEX_OUTPUT.match(latex)
    tex = match.group("tex") if match else latex
    tex = tex.replace(r"\displaystyle", "")
    return f'<div class="math-display">{tex_to_mathml(tex, display=True)}</div>'


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


class MathMLPreprocessor(Preprocessor):
    """Formulas as MathML in the page, so that they render with no script and no network."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "markdown":
            cell.source = render_math(_text(cell.source))
        elif cell.cell_type == "code":
            for output in cell.get("outputs", []):
                data = output.get("data") or {}
                if "text/latex" in data and "text/html" not in data:
                    data["text/html"] = latex_output_as_mathml(_text(data["text/latex"]))
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
