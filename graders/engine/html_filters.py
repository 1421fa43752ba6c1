"""nbconvert filters replaced where a student's text can make them take hours.

Formgrader's pages and nbgrader's feedback are made from each student's notebook by nbconvert,
and two of its filters take time that grows with the square of a line's length:

- `strip_files_prefix`, which every markdown cell goes through, rewrites `[caption](files/x)`
  as `[caption](x)` with a regular expression that searches from each `[` of a line to the
  line's end. One markdown line of 100,000 `[` took 44 s to render; a million, over an hour.
- `highlight_code` colours code with pygments, whose IPython lexer slows the same way on one
  long line: 17 s for a line of 40,000 characters of `...`.

Such a page stalls the one student's feedback, `nbgrader generate_feedback` for the whole
class, and formgrader's view. Here `strip_files_prefix` gives the same text in time linear in
its length, and `BoundedHighlight` colours a cell only when it is at most 100,000 characters with
no line over 1,000; a longer one is shown as it is, uncoloured. (Grading itself refuses a
notebook whose cells hold more than 1,000,000 characters: see `snapshot.read_submission`.)

The course's `nbgrader_config.py` names both (`c.HTMLExporter.filters`, `FILTERS`), so that
nbgrader's feedback and formgrader use them; `chapter serve` sets them on the feedback it
makes in any course (`bounded`).
"""
from __future__ import annotations

import copy
import re
from html import escape

from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.strings import files_url_pattern, markdown_url_pattern

FILTERS = {"strip_files_prefix": f"{__name__}.strip_files_prefix", "highlight_code": f"{__name__}.BoundedHighlight"}
HIGHLIGHT_CELL = 100_000        # characters in a code cell that is coloured
HIGHLIGHT_LINE = 1_000          # characters in its longest line


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
    """nbconvert's `highlight_code` for a cell pygments colours in time about linear in its length
    (at most HIGHLIGHT_CELL characters, no line over HIGHLIGHT_LINE); any other cell is shown as
    its text, in the same block, uncoloured.

    Named in the config, it is made without the notebook's `language_info`, so it colours with
    the IPython lexer (`ipython3`), which is what a Python notebook saved by JupyterLab names;
    nbconvert's own would take `python` from a notebook that never ran in a kernel."""

    def __call__(self, source, language=None, metadata=None):
        if len(source) <= HIGHLIGHT_CELL and max(map(len, source.split("\n"))) <= HIGHLIGHT_LINE:
            return super().__call__(source, language, metadata)
        css = escape(f" highlight hl-{language or self.pygments_lexer}")
        return f'<div class="{css}"><pre><span></span>{escape(source, quote=False)}\n</pre></div>\n'


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
