"""The published solutions site: a small static site made from `solutions/`.

`render_site(root, out_dir)` writes
- `index.html`: the chapter status table, then every item of the chapter by strand,
  with a link to each variant's worked solution where one exists;
- `<assignment>/<id>/index.html`: the item, with links to its variants;
- `<assignment>/<id>/<label>.html`: the solution executed as a student of variant
  `label` (JUPYTERHUB_USER set to `graders.variants.student_for(label, assignment)`),
  exported with nbconvert's HTMLExporter, figures (outputs) as data URIs: the code without
  nbgrader's BEGIN/END SOLUTION lines, every output, and after each solution cell the
  values it bound for that variant; a line at the top links back to the item and the index.
  Formulas are MathML made at build time (`graders.course.pages`), so the site reads offline.

With `items` (`chapter site --only`), the index says it is a partial build, and an item
left out is labelled "not rendered in this partial build", never "no published solution".

Each (item, variant) is one job, executed with nbclient in its own process, so the
site builds in parallel on every core. Nothing here is committed: `site/` is ignored.
"""
from __future__ import annotations

import ast
import html
import multiprocessing
import os
import re
import shutil
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from graders.course.cards import slug
from graders.course.contract import STRANDS, Concept, load_chapters, load_contracts
from graders.variants import LABELS, student_for

CELL_TIMEOUT = 120  # seconds; a solution that takes longer is a bug in the solution
# nbconvert's lab page without the scripts it loads from a CDN (require.js, MathJax, and mermaid
# when a cell has a diagram): the formulas are MathML already, and the site reads offline
PAGE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}"""

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem;
       color: #1d1d1f; line-height: 1.45; }
pre.status { background: #f5f5f7; padding: 1rem; overflow-x: auto; }
table { border-collapse: collapse; margin: .5rem 0 1.5rem; }
td, th { padding: .25rem .75rem; border-bottom: 1px solid #ddd; text-align: left; }
.missing { color: #888; }
.partial { background: #fff4d6; padding: .5rem 1rem; }
nav a { margin-right: .75rem; }
"""


@dataclass(frozen=True)
class Job:
    notebook: str      # "assignment/id"
    label: str         # variant A-D
    source: Path       # solutions/<assignment>/<id>.ipynb
    target: Path       # <out>/<assignment>/<id>/<label>.html


def _page(title: str, body: str, up: str = "") -> str:
    crumbs = f'<nav><a href="{up}index.html">chapter index</a></nav>' if up else ""
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>"
            f"<body>{crumbs}{body}</body></html>\n")


_MARKERS = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", re.MULTILINE)


def without_markers(source: str) -> str:
    """A solution cell as a reader should see it: nbgrader's BEGIN/END SOLUTION lines removed."""
    return _MARKERS.sub("", source)


def assigned_names(source: str) -> list[str]:
    """Names a cell binds at top level, in order (what a reader wants to see the value of)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names = []

    def bind(target):
        if isinstance(target, ast.Name) and not target.id.startswith("_"):
            names.append(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                bind(element)
    for node in tree.body:
        for target in getattr(node, "targets", None) or [getattr(node, "target", None)]:
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                bind(target)
    return list(dict.fromkeys(names))


# Run in the solution's kernel after a solution cell: one output per value the cell bound,
# sympy objects also as LaTeX (typeset into MathML when the page is made).
_SHOW_VALUES = r"""
def __site_show(names, namespace):
    from IPython.display import display
    for name in names:
        if name not in namespace or callable(namespace[name]):
            continue
        value = namespace[name]
        text = repr(value)
        text = text if len(text) <= {limit} else text[:{limit}] + " ..."
        bundle = {{"text/plain": name + " = " + text}}
        if hasattr(value, "_repr_latex_") and len(text) <= {limit}:
            import sympy
            bundle["text/latex"] = "$$\\text{{" + name + "}} = " + sympy.latex(value) + "$$"
        display(bundle, raw=True)
__site_show({names!r}, globals())
del __site_show
"""
VALUE_LIMIT = 2000  # characters of one value's repr shown on the page


def _nav(job: Job) -> str:
    item = job.notebook.split("/")[-1]
    siblings = " · ".join(f"**{label}**" if label == job.label else f"[{label}]({label}.html)" for label in LABELS)
    return (f"[chapter index](../../index.html) › [{item}](index.html) › variant {job.label} "
            f"(as student `{student_for(job.label, job.notebook.split('/')[0])}`) · variants: {siblings}")


def render_variant(job: Job) -> str:
    """Execute one solution as a student of one variant and write its HTML page: the solution
    code without nbgrader's markers, each cell's outputs and figures, and after each solution
    cell the values it computed for this variant."""
    import nbformat
    from jinja2 import DictLoader
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    from graders.course.pages import FeedbackStyle, MathMLPreprocessor

    assignment = job.notebook.split("/")[0]
    nb = nbformat.read(job.source, as_version=4)
    env = {**os.environ, "JUPYTERHUB_USER": student_for(job.label, assignment),
           "MPLBACKEND": "module://matplotlib_inline.backend_inline", "PYTHONWARNINGS": "ignore"}
    # the kernel runs from the venv of this process, in the solution's folder
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    sockets = tempfile.mkdtemp(prefix="site-kernel-")
    # IPC (unix sockets in a private folder), not TCP on loopback: nothing to eavesdrop on,
    # and ipykernel has no "running over TCP without encryption" warning to print
    config = Config({"KernelManager": {"transport": "ipc", "ip": os.path.join(sockets, "kernel")}})
    client = NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3", allow_errors=False,
                            resources={"metadata": {"path": str(job.source.parent)}}, config=config)
    try:
        client.reset_execution_trackers()
        with client.setup_kernel(env=env):
            info = client.wait_for_reply(client.kc.kernel_info())
            if info is not None and "language_info" in info["content"]:
                nb.metadata["language_info"] = info["content"]["language_info"]
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                client.execute_cell(cell, index, execution_count=client.code_cells_executed + 1)
                names = assigned_names(cell.source) if cell.metadata.get("nbgrader", {}).get("solution") else []
                if names:
                    probe = nbformat.v4.new_code_cell(_SHOW_VALUES.format(names=names, limit=VALUE_LIMIT))
                    client.execute_cell(probe, index, store_history=False)
                    nb.cells[index] = cell     # nbclient stores the cell it ran at that index
                    cell.outputs.extend(probe.outputs)
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = without_markers(cell.source)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(_nav(job)))
    nb.metadata["title"] = f"{job.notebook.split('/')[-1]} · variant {job.label}"
    # figures are outputs, embedded as data URIs anyway; embed_images would re-parse each markdown
    # cell's HTML to inline <img> files (the chapter's markdown has none) and empty its MathML
    exporter = HTMLExporter(template_name="lab", template_file="site.html.j2", embed_images=False,
                            extra_loaders=[DictLoader({"site.html.j2": PAGE_TEMPLATE})])
    exporter.register_preprocessor(MathMLPreprocessor, enabled=True)
    exporter.register_preprocessor(FeedbackStyle, enabled=True)
    body, _ = exporter.from_notebook_node(nb)
    job.target.parent.mkdir(parents=True, exist_ok=True)
    job.target.write_text(body)
    return str(job.target)


def _run(job: Job) -> tuple[Job, str | None]:
    try:
        render_variant(job)
        return job, None
    except Exception as error:  # reported, and the item's page says so
        return job, f"{type(error).__name__}: {str(error).strip().splitlines()[-1] if str(error).strip() else ''}"


def _item_page(notebook: str, done: dict[str, bool], errors: dict[str, str]) -> str:
    item = notebook.split("/")[-1]
    rows = []
    for label in LABELS:
        if done.get(label):
            rows.append(f'<tr><td><a href="{label}.html">variant {label}</a></td>'
                        f'<td>as {html.escape(student_for(label, notebook.split("/")[0]))}</td></tr>')
        else:
            reason = html.escape(errors.get(label, "not built"))
            rows.append(f'<tr><td class="missing">variant {label}</td><td class="missing">{reason}</td></tr>')
    body = (f"<h1>{html.escape(item)}</h1><p>The worked solution, executed once for each variant: "
            f"each page shows the code, its outputs and figures, and the values it computed.</p>"
            f"<table>{''.join(rows)}</table>")
    return _page(item, body, up="../../")


def notation_table(root: Path, chapter_id: str) -> list[str]:
    """The chapter's notation (chapters.toml, [chapter.notation]) as an HTML table, if it has one."""
    import tomllib
    entries = next((c.get("notation", {}) for c in tomllib.loads((Path(root) / "chapters.toml").read_text())
                    .get("chapter", []) if c.get("id") == chapter_id), {})
    if not entries:
        return []
    rows = "".join(f"<tr><td>{html.escape(symbol)}</td><td>{html.escape(meaning)}</td></tr>"
                   for symbol, meaning in entries.items())
    return [f'<h2>Notation</h2><table class="notation">{rows}</table>']


def _why_not_built(root: Path, notebook: str, items, errors) -> str:
    if errors.get(notebook):
        return "could not be rendered: " + html.escape("; ".join(errors[notebook].values()) or "see the log")
    if not (root / "solutions" / f"{notebook}.ipynb").exists():
        return "no published solution"
    if items is not None and notebook.split("/")[-1] not in items:
        return "not rendered in this partial build"
    return "not rendered"


def render_site(root: Path, out_dir: Path, items: list[str] | None = None,
                workers: int | None = None, status: dict | None = None) -> list[str]:
    """Write the site into `out_dir`; return one line per solution that could not be rendered.

    `items` limits the solutions executed (ids such as "w1-memory"); the index still lists
    the whole chapter, linking only what was built. `status` is the chapter status record
    if the caller has it (otherwise it is computed, from cached verdicts where possible).
    """
    from graders.course.status import chapter_status, render

    root, out_dir = Path(root), Path(out_dir)
    chapters = load_chapters(root)
    if out_dir.exists():
        if any(out_dir.iterdir()) and not (out_dir / "index.html").exists():
            raise ValueError(f"{out_dir} is not empty and holds no site: refusing to replace it")
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)

    wanted = [nb for chapter in chapters for nb in chapter.notebooks
              if (items is None or nb.split("/")[-1] in items)
              and (root / "solutions" / f"{nb}.ipynb").exists()]
    jobs = [Job(nb, label, root / "solutions" / f"{nb}.ipynb", out_dir / nb / f"{label}.html")
            for nb in wanted for label in LABELS]
    done: dict[str, dict[str, bool]] = {nb: {} for nb in wanted}
    errors: dict[str, dict[str, str]] = {nb: {} for nb in wanted}
    problems = []
    if jobs:
        workers = max(1, min(workers or os.cpu_count() or 1, len(jobs)))
        # spawned, not forked: the caller may hold threads (a browser driver, a server)
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            for job, error in pool.map(_run, jobs):
                done[job.notebook][job.label] = error is None
                if error:
                    errors[job.notebook][job.label] = error
                    problems.append(f"{job.notebook.split('/')[-1]} variant {job.label}: {error}")
    for nb in wanted:
        (out_dir / nb / "index.html").parent.mkdir(parents=True, exist_ok=True)
        (out_dir / nb / "index.html").write_text(_item_page(nb, done[nb], errors[nb]))

    contracts = load_contracts(root)
    sections = []
    for chapter in chapters:
        record = status if status is not None and status.get("id") == chapter.id else chapter_status(root, chapter)
        parts = [f"<h1>{html.escape(chapter.id)} {html.escape(chapter.title)}</h1>",
                 f'<pre class="status">{html.escape(render(record, root))}</pre>']
        parts += notation_table(root, chapter.id)
        if items is not None:
            built = sorted(nb.split("/")[-1] for nb in wanted if nb in chapter.notebooks)
            parts.append(f'<p class="partial">A partial build (<code>chapter site --only</code>): '
                         f'solutions rendered for {html.escape(", ".join(built) or "no item")} only. '
                         f'The status above is the chapter\'s; <code>chapter site</code> renders every '
                         f'published solution.</p>')
        for strand in STRANDS:
            notebooks = chapter.strands.get(strand, ())
            if not notebooks:
                continue
            rows = []
            for nb in notebooks:
                item = nb.split("/")[-1]
                built = [label for label in LABELS if done.get(nb, {}).get(label)]
                if built:
                    links = " ".join(f'<a href="{nb}/{label}.html">{label}</a>' for label in built)
                    rows.append(f'<tr><td><a href="{nb}/index.html">{html.escape(item)}</a></td>'
                                f'<td>{links}</td></tr>')
                else:
                    rows.append(f'<tr><td class="missing">{html.escape(item)}</td>'
                                f'<td class="missing">{_why_not_built(root, nb, items, errors)}</td></tr>')
            blurb = html.escape(contracts.get("strands", {}).get(strand, ""))
            parts.append(f'<h2 id="{strand}">{strand}</h2><p>{blurb}</p><table>{"".join(rows)}</table>')
        sections.append("".join(parts))
    sections = [f'<p><a href="module/{slug(c.id)}.html">{html.escape(c.id)} page</a></p>' + text
                for c, text in zip(chapters, sections)]
    (out_dir / "index.html").write_text(_page("Solutions", "<hr>".join(sections)))
    write_module_pages(root, out_dir, chapters)
    return problems


MODULE_STYLE = """
.subtitle { font-size: 1.15rem; color: #444; margin-top: -.5rem; }
.counts { display: flex; gap: 2.5rem; margin: 1.5rem 0; }
.counts div { font-size: .95rem; color: #555; }
.counts b { display: block; font-size: 2rem; color: #1d1d1f; }
ol.concepts { list-style: none; padding: 0; }
ol.concepts li { margin: 0 0 1.1rem; }
ol.concepts .number { font-variant-numeric: tabular-nums; color: #888; margin-right: .6rem; }
ol.concepts .items { font-size: .9rem; }
"""


def module_page(chapter, counts: dict, item_links: dict[str, str], deck: str | None = None) -> str:
    """A chapter's (or module's) page, like the seed's: title, subtitle, its three counts, and the
    numbered concepts, each with its one-line summary and links to the items that teach it.

    `counts` is `cards.content_counts(...)`; `item_links` maps an item id to its page (relative),
    items without one are named unlinked.
    """
    reading = counts["reading"]
    figures = [(counts["concepts"], "concepts"), (counts["cards"], "flashcards"),
               (reading["minutes"], "minutes of reading")]
    parts = [f"<h1>{html.escape(chapter.title)}</h1>",
             f'<p class="subtitle">{html.escape(chapter.subtitle)}</p>' if chapter.subtitle else "",
             '<div class="counts">' + "".join(f'<div class="count"><b>{n}</b>{label}</div>' for n, label in figures)
             + "</div>",
             f'<p class="rate">Reading time: {reading["words"]:,} words of notebook prose at '
             f'{reading["words_per_minute"]} words a minute.</p>']
    if deck:
        parts.append(f'<p><a href="{html.escape(deck)}">the flashcards as an Anki deck</a></p>')
    notes = chapter.concept_notes or tuple(Concept(name) for name in chapter.concepts)
    rows = []
    for number, concept in enumerate(notes, 1):
        links = [f'<a href="{html.escape(item_links[i])}">{html.escape(i)}</a>' if i in item_links
                 else f'<span class="missing">{html.escape(i)}</span>' for i in concept.items]
        rows.append(f'<li class="concept"><span class="number">{number:02d}</span>'
                    f'<strong>{html.escape(concept.name)}</strong> '
                    f'<span class="summary">{html.escape(concept.summary)}</span>'
                    + (f'<div class="items">items: {" · ".join(links)}</div>' if links else "") + "</li>")
    parts.append(f'<ol class="concepts">{"".join(rows)}</ol>')
    title = f"{chapter.id} {chapter.title}"
    return _page(title, "".join(parts), up="../").replace("</style>", MODULE_STYLE + "</style>", 1)


def write_module_pages(root: Path, out_dir: Path, chapters) -> None:
    """`module/<chapter>.html` for every chapter, with its Anki deck beside it in `cards/`."""
    from graders.course.cards import content_counts, export_chapter
    where = {nb.split("/")[-1]: nb for chapter in chapters for nb in chapter.notebooks}
    links = {item: f"../{nb}/index.html" for item, nb in where.items() if (out_dir / nb / "index.html").exists()}
    (out_dir / "module").mkdir(exist_ok=True)
    for chapter in chapters:
        apkg, _, _ = export_chapter(chapter, out_dir / "cards")
        page = module_page(chapter, content_counts(root, chapter), links, deck=f"../cards/{apkg.name}")
        (out_dir / "module" / f"{slug(chapter.id)}.html").write_text(page)
