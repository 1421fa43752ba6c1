"""nbconvert filters replaced where a student's text can make them take hours, or stop the page.

Formgrader's pages and nbgrader's feedback are made from each student's notebook by nbconvert,
and three of its filters take time that grows with the square of a line's length:

- `strip_files_prefix`, which every markdown cell goes through, rewrites `[caption](files/x)`
  as `[caption](x)` with a regular expression that searches from each `[` of a line to the
  line's end. One markdown line of 100,000 `[` took 44 s to render; a million, over an hour.
- `highlight_code` colours code with pygments, whose IPython lexer slows the same way on one
  long line: 17 s for a line of 40,000 characters of `...`.
- `markdown2html` colours a fenced block of a markdown cell with whichever of pygments' lexers
  its first word names (the student's choice among hundreds), so the same line of `...` in
  a block marked `ipython3` took as long; and it stops the whole page, for that student's
  feedback and formgrader's view, at `![x](attachment:a)` when the cell has no attachment `a`.

Such a page stalls the one student's feedback, `nbgrader generate_feedback` for the whole
class, and formgrader's view. Here `strip_files_prefix` gives the same text in time linear in
its length. `BoundedHighlight` colours a cell only when it has no line over 1,000 characters and
fits in the page's 50,000 coloured characters (the largest released notebook holds 15,000
characters of code). Within those bounds pygments' Python lexers take about linear time, but
up to 10 s a page for 100,000 characters of their worst shapes (`a.a.a…` lines); any other
cell is shown as it is, uncoloured. `BoundedMarkdown` is nbconvert's markdown, whose fenced
blocks are coloured from the same page budget and only by the Python lexers, whose mermaid
blocks are escaped, and where a missing attachment is a missing image. (Grading itself refuses
a notebook whose cells hold more than 1,000,000 characters: see `snapshot.read_submission`.)

The course's `nbgrader_config.py` names all three (`c.HTMLExporter.filters`, `FILTERS`), so that
nbgrader's feedback and formgrader use them; `chapter serve` sets them on the feedback it
makes in any course (`bounded`).
"""
from __future__ import annotations

import copy
import re
from html import escape

import jinja2
import mistune
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbconvert.filters.strings import files_url_pattern, markdown_url_pattern
from traitlets.config import LoggingConfigurable

FILTERS = {"strip_files_prefix": f"{__name__}.strip_files_prefix", "highlight_code": f"{__name__}.BoundedHighlight",
           "markdown2html": f"{__name__}.BoundedMarkdown"}
HIGHLIGHT_PAGE = 50_000         # characters a page colours, code cells and fenced blocks together
HIGHLIGHT_LINE = 1_000          # characters in the longest line of a cell or block that is coloured
_SPENT = "coloured_characters"  # the page's count, kept in the resources of its making
# the lexers a fenced block of markdown is coloured with (IPython's and pygments' Python)
FENCE_LEXERS = frozenset({"python", "python3", "py", "py3", "ipython", "ipython3"})


# what nbgrader_config.py also names for those pages: student markup made inert, formulas bounded
PREPROCESSOR = "graders.course.pages.MathMLPreprocessor"


def page_warnings(config) -> list[str]:
    """A warning when the course's nbgrader config leaves formgrader's and the feedback's pages
    without this module's filters or the inert markup of `PREPROCESSOR` ([] when it names all)."""
    exporter = config.get("HTMLExporter") or {}
    given = exporter.get("filters") or {}
    missing = [f"c.HTMLExporter.filters[{name!r}]" for name, value in FILTERS.items()
               if _dotted(given.get(name)) != value]
    if not any(PREPROCESSOR in str(p) for p in exporter.get("preprocessors") or ()):
        missing.append(f"{PREPROCESSOR} in c.HTMLExporter.preprocessors")
    if not missing:
        return []
    return ["formgrader's and the feedback's pages are not protected in this course: its nbgrader_config.py "
            f"does not name {', '.join(missing)}. A student's markdown would be HTML on the instructor's page, "
            "and one notebook could take hours to show (README: \"A student's markup never runs on the "
            "instructor's page\")"]


def _dotted(value) -> str:
    """A filter as the config may name it (a dotted path, or the function or class itself), as its
    dotted path."""
    if isinstance(value, str):
        return value
    return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', '')}"


def bounded(config):
    """A copy of the traitlets `config` in which HTMLExporter takes `FILTERS` (over any filter of
    the same name it set)."""
    config = copy.deepcopy(config)
    config.HTMLExporter.filters = {**config.HTMLExporter.get("filters", {}), **FILTERS}
    return config


class BoundedHighlight(Highlight2HTML):
    """nbconvert's `highlight_code` for a cell within the page's budget (`colour_within_budget`);
    any other cell is shown as its text, in the same block, uncoloured.

    Named in the config, it is made without the notebook's `language_info`, so it colours with
    the IPython lexer (`ipython3`), which is what a Python notebook saved by JupyterLab names;
    nbconvert's own would take `python` from a notebook that never ran in a kernel."""

    jinja_pass_arg = jinja2.pass_context(lambda: None).jinja_pass_arg    # called with the template's context

    def __call__(self, context, source, language=None, metadata=None):
        if colour_within_budget(context, source):
            return super().__call__(source, language, metadata)
        css = escape(f" highlight hl-{language or self.pygments_lexer}")
        return f'<div class="{css}"><pre><span></span>{escape(source, quote=False)}\n</pre></div>\n'


def colour_within_budget(context, code: str) -> bool:
    """True, and counted against the page, when `code` has no line over HIGHLIGHT_LINE and fits in
    what is left of the page's HIGHLIGHT_PAGE. `context` is the template's: its `resources` are
    the page's own, whichever exporter makes it and however many pages that exporter makes."""
    resources = context.get("resources")
    spent = resources.get(_SPENT, 0)
    if spent + len(code) > HIGHLIGHT_PAGE or max(map(len, code.split("\n"))) > HIGHLIGHT_LINE:
        return False
    resources[_SPENT] = spent + len(code)
    return True


class BoundedMarkdown(LoggingConfigurable):
    """nbconvert's `markdown2html` (HTMLExporter's, with its settings), except that:

    - a fenced block is coloured only by a lexer of FENCE_LEXERS and only within the page's
      budget (`colour_within_budget`); any other is shown as its text, in mistune's plain block;
    - a mermaid block's text is escaped, as any other block's (mermaid reads it back as text);
    - `![x](attachment:a)` with no usable attachment `a` in the cell is an image that does not
      load, with its words, where nbconvert stops the page."""

    jinja_pass_arg = jinja2.pass_context(lambda: None).jinja_pass_arg    # called with the template's context

    def __call__(self, context, source):
        exporter = self.parent
        renderer = _BoundedRenderer(
            escape=False, attachments=context.get("cell", {}).get("attachments", {}),
            embed_images=exporter.embed_images, path=context.get("resources", {}).get("metadata", {}).get("path", ""),
            anchor_link_text=exporter.anchor_link_text, exclude_anchor_links=exporter.exclude_anchor_links,
            **exporter.lexer_options)
        renderer.context = context
        return MarkdownWithMath(renderer=renderer).render(source)


class _BoundedRenderer(IPythonRenderer):
    context = None        # the template's, set by BoundedMarkdown before each rendering

    def block_code(self, code: str, info: str | None = None) -> str:
        if info and info.startswith("mermaid"):
            return self.block_mermaidjs(escape(code, quote=False))
        words = (info or "").split(maxsplit=1)
        if words and words[0] in FENCE_LEXERS and colour_within_budget(self.context, code):
            return super().block_code(code, info)
        return mistune.HTMLRenderer.block_code(self, code, info)

    def _embed_image_or_attachment(self, src: str) -> str:
        if src.startswith("attachment:"):
            bundle = self.attachments.get(src[len("attachment:"):]) if isinstance(self.attachments, dict) else None
            if not (isinstance(bundle, dict) and bundle and all(isinstance(v, str) for v in bundle.values())):
                return src
        return super()._embed_image_or_attachment(src)


# where a match of markdown_url_pattern can end its caption: "](files/" or "](/files/"
_TARGET = re.compile(r"\]\(/?files/")


def strip_files_prefix(text: str) -> str:
    """nbconvert's `strip_files_prefix`, exactly, without searching a line once per `[`."""
    text = files_url_pattern.sub(r"\1=\2", text)     # linear already
    if "files/" not in text:
        return text
    return "\n".join(_links_in_line(line) for line in text.split("\n"))   # `.` stops at "\n" only


def _links_in_line(line: str) -> str:
    """markdown_url_pattern.sub(r"\\1[\\2](\\3)", line), where every search is bounded.

    A match ends at the first ")" after its target. So only a target with a ")" somewhere after it
    can be used, and a `[` before the last such target always starts a match (that target, if no
    earlier one, completes it), while a `[` after it never does. Searching only from a `[` before
    that target, each search succeeds at that `[`, and costs the length of what it matches.
    """
    close = line.rfind(")")
    last = None
    for target in _TARGET.finditer(line):
        if target.end() > close:
            break
        last = target
    if last is None:
        return line
    out, pos = [], 0
    while pos < last.start() and line.find("[", pos, last.start()) >= 0:
        match = markdown_url_pattern.search(line, pos)
        out += [line[pos:match.start()], match.expand(r"\1[\2](\3)")]
        pos = match.end()
    out.append(line[pos:])
    return "".join(out)
