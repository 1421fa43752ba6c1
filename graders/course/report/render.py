"""Drawing and writing the class report: matplotlib figures, the HTML page, plain text and CSV.

Rows come from `stats.py` as lists in the order of their columns' names; this module reads
them by those names (`cell(row, "fail")`), never by a position of its own.
"""
from __future__ import annotations

import base64
import csv
import html
import io
from pathlib import Path

import numpy as np

from graders.course.report.data import MIN_CLASS, MIN_VARIANT, ClassData, Item
from graders.course.report.lateness import COLUMNS as LATENESS_COLUMNS
from graders.course.report.stats import (ALPHA, CHECK_COLUMNS, DECIDED, DRAWS, ITEM_COLUMNS, MISTAKE_COLUMNS,
                                         NEGATIVE, ItemTables, number, top_mistakes)


def cell(row: list, name: str, columns: list = CHECK_COLUMNS):
    """The value of column `name` in a table row laid out as `columns`."""
    return row[columns.index(name)]


def _figure_png(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=72)
    return base64.b64encode(buffer.getvalue()).decode()


def figures(per_item: list) -> dict:
    """Base64 PNGs: one overview, and per item one figure of three panels (histogram, check
    failures, variant means). matplotlib's object API, without pyplot: no global state, less to load."""
    from matplotlib.figure import Figure
    out = {}
    height = 0.9 + 0.35 * max(1, len(per_item))
    fig = Figure(figsize=(6, height))
    ax = fig.subplots(gridspec_kw=dict(left=0.3, right=0.95, bottom=0.6 / height, top=1 - 0.2 / height))
    names = [t.item.name for t in per_item]
    means = [float(np.mean(list(t.item.scores.values()))) / t.item.max_score if t.item.students and t.item.max_score
             else 0.0 for t in per_item]
    ax.barh(names, means, color="#4c72b0")
    ax.set_xlim(0, 1)
    ax.invert_yaxis()
    ax.set_xlabel("mean score / maximum")
    out["overview"] = _figure_png(fig)
    for t in per_item:
        item = t.item
        top = max(item.max_score, 1)
        height = 1.2 + 0.22 * max(6, len(t.checks))
        # fixed margins: a layout engine would draw every figure twice
        fig = Figure(figsize=(13, height))
        scores_ax, checks_ax, variants_ax = fig.subplots(1, 3, gridspec_kw=dict(
            left=0.05, right=0.98, wspace=0.6, bottom=0.65 / height, top=1 - 0.35 / height))
        if t.histogram:
            scores_ax.bar([s for s, _ in t.histogram], [c for _, c in t.histogram], width=top / 25, color="#4c72b0")
        scores_ax.set_xlim(-0.05 * top, 1.05 * top)
        scores_ax.set_xlabel("points")
        scores_ax.set_ylabel("students")
        scores_ax.set_title("scores")

        labels = [cell(r, "check") for r in t.checks]
        failed = [cell(r, "fail") + cell(r, "invalid") for r in t.checks]
        if item.detailed:
            values = [f / cell(r, "checked") if cell(r, "checked") else 0.0 for f, r in zip(failed, t.checks)]
            checks_ax.set_xlim(0, 1)
            checks_ax.set_xlabel("(fail + invalid) / checked")
        else:
            values = failed
            checks_ax.set_xlabel("students failing (too few for rates)")
        checks_ax.barh(labels or ["(no checks)"], values or [0], color="#c44e52")
        checks_ax.invert_yaxis()
        checks_ax.tick_params(axis="y", labelsize=8)
        checks_ax.set_title("failed checks")

        for i, (label, entry) in enumerate(t.variants.items()):
            colour = "#c44e52" if entry["flagged"] else "#4c72b0"
            if entry["ci"] is not None:
                low, high = entry["ci"]
                variants_ax.errorbar([i], [entry["mean"]], yerr=[[entry["mean"] - low], [high - entry["mean"]]],
                                     fmt="o", color=colour, capsize=4)
            else:
                variants_ax.plot([i], [entry["mean"]], "o", color=colour)
        variants_ax.set_xticks(range(len(t.variants)), list(t.variants))
        variants_ax.set_ylim(-0.05 * top, 1.05 * top)
        variants_ax.set_xlabel("variant (red: possibly unfair)")
        variants_ax.set_ylabel("mean points")
        variants_ax.set_title("variants" + (", 95% intervals" if item.detailed else ""))
        out[item.name] = _figure_png(fig)
    return out


# ============================================================================ writing
def _variant_rows(t: ItemTables) -> list:
    rows = []
    for label, e in t.variants.items():
        ci = f"[{number(e['ci'][0])}, {number(e['ci'][1])}]" if e["ci"] else ""
        diff = number(e["difference"]) if e["difference"] is not None else ""
        diff_ci = f"[{number(e['difference_ci'][0])}, {number(e['difference_ci'][1])}]" if e["difference_ci"] else ""
        rows.append([label, e["n"], number(e["mean"]), ci, diff, diff_ci, "POSSIBLY UNFAIR" if e["flagged"] else ""])
    return rows


VARIANT_COLUMNS = ["variant", "students", "mean", "95% interval", "minus the others", "flag interval", "flag"]
OVERVIEW_COLUMNS = ["item", "students", "max", "mean", "median", "full marks", "zero", "technical zeros"]


def manual_rows(item: Item) -> list:
    rows = []
    for entry in item.manual:
        graded = entry["scores"]
        rows.append([entry["cell"], number(entry["max"]), len(graded), number(sum(graded) / len(graded)) if graded else "",
                     " ".join(number(s) for s in sorted(graded)) if not item.detailed else "", entry["waiting"]])
    return rows


MANUAL_COLUMNS = ["cell", "max", "graded", "mean manual score", "manual scores", "awaiting grading"]


def _html_table(columns, rows, kind="", marked=lambda row: False):
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = "".join(("<tr class=\"flagged\">" if marked(row) else "<tr>")
                   + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in rows)
    return f'<table data-table="{kind}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _text_table(columns, rows, width: int = 60) -> str:
    cells = [[str(c) for c in columns]] + [[str(v) if len(str(v)) <= width else str(v)[:width - 1] + "…"
                                            for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


RULES = (f"Failure rate = (fail + invalid) / checked. A mistake counts once per student. Each variant's "
         f"interval is a 95% percentile bootstrap interval of its mean ({DRAWS} resamples). Fairness is a "
         f"step-down test: among the variants not yet flagged (at least three), the one whose mean is "
         f"furthest from the pooled mean of the others' students is flagged as possibly unfair when the "
         f"percentile bootstrap interval of that difference, at level 1 - {ALPHA}/k for the k variants "
         f"compared (Bonferroni), excludes 0; this repeats until one is not flagged. 'Minus the others' "
         f"compares a variant with the variants left unflagged. Below {MIN_CLASS} students in an item (or {MIN_VARIANT} in a variant) "
         f"only counts are shown: no percentages, intervals or flags. "
         f"Item statistics count the students whose check gave a verdict ({', '.join(DECIDED)}): a check's "
         f"difficulty is the share of them passing; its discrimination is the point-biserial correlation "
         f"(scipy.stats.pointbiserialr) of passing with the rest of the score, the assignment total minus the "
         f"points of the cell holding the check. A check is flagged {NEGATIVE} when that correlation is "
         f"negative with a one-sided p below {ALPHA}/m, m the correlations computed in the same table "
         f"(the class's rows of an item, or its per-variant rows; Bonferroni). Below {MIN_CLASS} students "
         f"(or {MIN_VARIANT} in a variant) only counts are given; a check everyone passes (or fails) has no "
         f"correlation, and the row says so.")


def render_html(data: ClassData, per_item: list, images: dict) -> str:
    img = lambda key, alt: f'<img src="data:image/png;base64,{images[key]}" alt="{html.escape(alt)}">'  # noqa: E731
    parts = [f"<h1>{html.escape(data.assignment)}: what the class got wrong</h1>",
             f"<p>{len(data.students)} students with a submission; "
             f"{data.evidence_rows} check verdicts kept by the grading engine.</p>",
             f'<p class="rules">{html.escape(RULES)}</p>']
    if data.set_aside:
        parts += ["<h2>Submissions set aside</h2>",
                  "<p>Each names a student other than the login that submitted it. None was collected, "
                  "graded or served as the student it names; that student's own submission stands.</p>",
                  _html_table(["inbound folder", "names", "why"], [list(row) for row in data.set_aside],
                              "set-aside")]
    late = data.lateness
    if late is not None and late.shown:
        parts += ["<h2>Deadlines and late penalties</h2>", f"<p>{html.escape(late.summary())}</p>",
                  _html_table(LATENESS_COLUMNS, late.rows, "deadlines",
                              lambda row: "chapter deadlines" in cell(row, "note", LATENESS_COLUMNS))]
    if not data.evidence_rows:
        parts.append("<p><strong>No check evidence was found</strong>: this assignment was graded by plain "
                     "<code>nbgrader autograde</code>. Grade it with <code>chapter autograde</code> to see "
                     "checks and mistakes.</p>")
    parts += ["<h2>Class overview</h2>", img("overview", "mean score per item"),
              _html_table(OVERVIEW_COLUMNS, [list(t.overview.values()) for t in per_item], "overview"),
              "<h3>The five most common mistakes</h3>",
              _html_table(["item", "mistake", "students", "feedback"], top_mistakes(per_item), "top")]
    for t in per_item:
        item = t.item
        parts += [f'<section id="{html.escape(item.name)}"><h2>{html.escape(item.name)}</h2>',
                  f"<p>{item.students} students, maximum {number(item.max_score)} points.</p>",
                  img(item.name, f"{item.name}: score histogram, failed checks, variant means"),
                  "<h3>Checks</h3>", _html_table(CHECK_COLUMNS, t.checks, "checks"),
                  "<h3>Declared mistakes, by how many students made them</h3>",
                  _html_table(MISTAKE_COLUMNS, t.mistakes, "mistakes"),
                  "<h3>Variants</h3>", _html_table(VARIANT_COLUMNS, _variant_rows(t), "variants"),
                  "<h3>Item statistics: which checks separate stronger students from weaker ones</h3>",
                  _html_table(ITEM_COLUMNS, t.statistics, "items", lambda row: cell(row, "flag", ITEM_COLUMNS))]
        if item.manual:
            parts += ["<h3>Manually graded cells</h3>", _html_table(MANUAL_COLUMNS, manual_rows(item), "manual")]
        parts += ["<h3>Technical zeros</h3>",
                  _html_table(["student", "status", "why"],
                              [[s, status, "; ".join(r)] for s, status, r in item.technical], "technical"),
                  "</section>"]
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
             "table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:2px 6px;"
             "text-align:left;vertical-align:top}th{background:#eee}img{max-width:100%}"
             ".rules{font-size:90%;color:#444}section{border-top:2px solid #888;margin-top:2em}"
             "tr.flagged td{background:#fbe3e4;font-weight:bold}")
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(data.assignment)}: '
            f'class report</title><style>{style}</style></head><body>{"".join(parts)}</body></html>')


def render_text(data: ClassData, per_item: list) -> str:
    out = [f"{data.assignment}: what the class got wrong ({len(data.students)} students)"]
    if data.set_aside:
        out += ["", "submissions set aside (another login named this student):"]
        out += [f"  {folder}: names {student}; {why}" for folder, student, why in data.set_aside]
    late = data.lateness
    if late is not None and late.shown:     # first, as on the page: the deadlines
        out += ["", late.summary()]
        noted = [row for row in late.rows if cell(row, "hours late", LATENESS_COLUMNS)
                 or cell(row, "penalty (points)", LATENESS_COLUMNS) or cell(row, "note", LATENESS_COLUMNS)]
        if noted:
            out += ["late, extended or out of step (every student in deadlines.csv):",
                    _text_table(LATENESS_COLUMNS, noted)]
    out += ["", _text_table(OVERVIEW_COLUMNS, [list(t.overview.values()) for t in per_item]), "",
            "the five most common mistakes:",
            _text_table(["item", "mistake", "students", "feedback"], top_mistakes(per_item))]
    for t in per_item:
        out += ["", f"== {t.item.name}", _text_table(CHECK_COLUMNS[1:], [r[1:] for r in t.checks])]
        if t.mistakes:
            out += ["", _text_table(MISTAKE_COLUMNS[1:], [r[1:] for r in t.mistakes])]
        out += ["", _text_table(VARIANT_COLUMNS, _variant_rows(t))]
        shown = [r for r in t.statistics if cell(r, "variant", ITEM_COLUMNS) == "all" or cell(r, "flag", ITEM_COLUMNS)]
        if shown:
            out += ["", "item statistics (the class, and any flagged variant; every variant in items.csv):",
                    _text_table(ITEM_COLUMNS[1:], [r[1:] for r in shown])]
        if t.item.manual:
            out += ["", _text_table(MANUAL_COLUMNS, manual_rows(t.item))]
        if t.item.technical:
            out += ["", "technical zeros:"] + [f"  {s} ({status}): {'; '.join(r)[:160]}"
                                               for s, status, r in t.item.technical]
    out += ["", RULES]
    return "\n".join(out)


def write_csv(path: Path, columns, rows) -> None:
    with open(path, "w", newline="", encoding="utf-8", errors="backslashreplace") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        writer.writerows(rows)


