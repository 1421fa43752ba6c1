"""`chapter report ASSIGNMENT`: what the class got wrong, after grading.

It reads two things from the gradebook's own database, and nothing else:
nbgrader's grades (each cell's score, the manual score where formgrader has
given one) and the engine's evidence (`graders.evidence`: each check's verdict,
the declared mistake it matched, the variant, the technical zeros). From them it
writes, in `reports/<assignment>/` of the course:

- `report.html`, one self-contained page (figures are matplotlib PNGs embedded as
  base64; no script, no network): a class overview, then per item the score
  histogram, each check's failure rate, the declared mistakes ranked by how many
  students made them (with each one's feedback line), the per-variant means with
  their intervals and the fairness flag, the technical zeros and the manual cells;
- `checks.csv` and `mistakes.csv`: the per-check and per-mistake tables, exactly as
  the page shows them;
and it prints the same tables as plain text.

Definitions (stated on the page too):
- a check's failure rate = (fail + invalid) / checked, where checked counts the
  students whose check ran (pass, fail, invalid or undecided); a check that did not
  run (cell not reached, notebook missing or broken) is counted as "not checked";
- a mistake is counted once per student, however many checks it matched;
- the interval of a variant's mean is a 95% percentile bootstrap interval (4000
  resamples of that variant's students, seeded from the item's name);
- a variant is flagged as possibly unfair by a step-down test: among the variants not
  yet flagged (at least three), the one whose mean is furthest from the pooled mean of
  the others' students is flagged when the percentile bootstrap interval of that
  difference, at level 1 - 0.05/k (k: the variants compared; Bonferroni), excludes 0;
  this repeats until one is not flagged. On equal variants the chance of any flag stays
  near 5% or below; one hard variant does not make the others look easy;
- below MIN_CLASS students (or MIN_VARIANT in a variant) only counts are shown: no
  percentages, no intervals, no flags.
"""
from __future__ import annotations

import base64
import csv
import hashlib
import html
import io
import math
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from graders.engine.exchange import close_folder, read_set_aside

MIN_CLASS = 10        # students with a submission of the item: fewer, and only counts are shown
MIN_VARIANT = 5       # students in a variant: fewer, and that variant has no interval and no flag
ALPHA = 0.05          # family-wise level of the fairness flag over the variants of one item
DRAWS = 4000          # bootstrap resamples
CHECK_COLUMNS = ["item", "cell", "check", "checked", "pass", "fail", "invalid", "undecided",
                 "not checked", "failure rate"]
MISTAKE_COLUMNS = ["item", "mistake", "students", "share", "checks", "feedback"]


# ============================================================================ reading
@dataclass
class Item:
    """One notebook of the assignment, as the class did it."""
    name: str
    max_score: float
    scores: dict = field(default_factory=dict)       # student -> points (nbgrader's, manual included)
    variants: dict = field(default_factory=dict)     # student -> variant label
    checks: list = field(default_factory=list)       # (grade_id, answer key) in the problem's order
    verdicts: dict = field(default_factory=dict)     # (grade_id, key) -> Counter of statuses
    mistakes: dict = field(default_factory=dict)     # mistake name -> {student: set of keys}
    feedback: dict = field(default_factory=dict)     # mistake name -> its feedback line
    declared: list = field(default_factory=list)     # the problem's mistake names, in order
    technical: list = field(default_factory=list)    # (student, status, reasons)
    manual: list = field(default_factory=list)       # {"cell", "max", "scores": [...], "waiting": n}

    @property
    def students(self) -> int:
        return len(self.scores)

    @property
    def detailed(self) -> bool:
        """Large enough for percentages and intervals."""
        return self.students >= MIN_CLASS


@dataclass
class ClassData:
    assignment: str
    course_id: str
    items: list
    students: list
    evidence_rows: int
    seconds: dict = field(default_factory=dict)
    set_aside: list = field(default_factory=list)    # (inbound folder, student it names, why)


def _problem(name: str):
    """The registered problem of notebook `name` (`problems.get` imports only its own module), or None."""
    from graders import problems
    try:
        return problems.get(name)
    except KeyError:
        return None


def collect(root, assignment: str) -> ClassData:
    """Grades and evidence of `assignment` from the course at `root`'s gradebook."""
    from nbgrader.api import (Assignment, BaseCell, Grade, Gradebook, Notebook, SubmittedAssignment,
                              SubmittedNotebook)

    from graders import evidence
    from graders.engine.course_dir import load_course
    from graders.variants import variant_for
    course = load_course(Path(root), assignment)
    with Gradebook(course.db_url, course.course_id) as gb:
        rows = (gb.db.query(SubmittedAssignment.student_id, Notebook.name, BaseCell.name, Grade.auto_score,
                            Grade.manual_score, Grade.extra_credit, Grade.needs_manual_grade)
                .select_from(Grade)
                .join(SubmittedNotebook, Grade.notebook_id == SubmittedNotebook.id)
                .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
                .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
                .join(Notebook, SubmittedNotebook.notebook_id == Notebook.id)
                .join(BaseCell, Grade.cell_id == BaseCell.id)
                .filter(Assignment.name == assignment).all())
        students = sorted({r[0] for r in (gb.db.query(SubmittedAssignment.student_id)
                                          .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
                                          .filter(Assignment.name == assignment).all())})
        check_rows, notebook_rows = evidence.read(gb.db.get_bind(), course.course_id, assignment)

    items = {}
    for name, nb in course.notebooks.items():
        cells = nb.grade_cells + nb.task_cells
        item = items[name] = Item(name, float(sum(c.max_score for c in cells)))
        problem = _problem(name)
        if problem is not None:
            item.checks = [(cell, key) for cell, keys in problem.cells.items() for key in keys]
            item.feedback = {m.name: m.feedback for m in problem.mistakes}
            item.declared = [m.name for m in problem.mistakes]
        solutions = {c.name for c in nb.solution_cells}
        manual = [c for c in nb.task_cells] + [c for c in nb.grade_cells if c.name in solutions]
        item.manual = [{"cell": c.name, "max": float(c.max_score), "scores": [], "waiting": 0} for c in manual]
        for student in students:
            item.scores[student] = 0.0
            item.variants[student] = variant_for(student, problem.assignment if problem and problem.assignment
                                                 else assignment)
    for student, notebook, cell, auto, manual, extra, needs in rows:
        item = items.get(notebook)
        if item is None:
            continue
        score = manual if manual is not None else auto
        item.scores[student] = item.scores.get(student, 0.0) + float(score or 0) + float(extra or 0)
        for entry in item.manual:
            if entry["cell"] == cell:
                if manual is not None:
                    entry["scores"].append(float(manual))
                elif needs:
                    entry["waiting"] += 1
    for row in notebook_rows:
        item = items.get(row["notebook"])
        if item is None or row["student"] not in item.scores:
            continue
        if row["variant"]:
            item.variants[row["student"]] = row["variant"]
        if row["technical_zero"]:
            item.technical.append((row["student"], row["status"], row["reasons"]))
    for row in check_rows:
        item = items.get(row["notebook"])
        if item is None or row["student"] not in item.scores:
            continue
        where = (row["grade_id"], row["answer_key"])
        if where not in item.checks:
            item.checks.append(where)
        item.verdicts.setdefault(where, Counter())[row["status"]] += 1
        if row["mistake"]:
            item.mistakes.setdefault(row["mistake"], {}).setdefault(row["student"], set()).add(row["answer_key"])
    for item in items.values():
        item.technical.sort()
    return ClassData(assignment, course.course_id, list(items.values()), students, len(check_rows))


# ============================================================================ statistics
def _rng(name: str):
    return np.random.default_rng(int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big"))


def _boot_means(values: np.ndarray, rng, draws: int = DRAWS) -> np.ndarray:
    return values[rng.integers(0, len(values), size=(draws, len(values)))].mean(axis=1)


def variant_fairness(groups: dict, seed: str = "", draws: int = DRAWS, alpha: float = ALPHA) -> dict:
    """Per variant: n, mean, 95% bootstrap interval, and the fairness test against the others.

    `groups` maps a variant label to its students' scores. The test steps down: among the
    variants not yet flagged (at least three), take the one whose mean is furthest from the
    pooled mean of the others' students, and flag it when the percentile bootstrap interval
    of that difference, at level 1 - alpha/k (k: the variants compared), excludes 0; repeat
    until one is not flagged. (Compared with all the others at once, one hard variant would
    make every other look easy.) Variants under MIN_VARIANT students get no interval or flag.
    """
    rng = _rng(seed)
    arrays = {v: np.asarray(s, dtype=float) for v, s in sorted(groups.items())}
    compared = [v for v, a in arrays.items() if len(a) >= MIN_VARIANT]
    level = alpha / max(1, len(compared))
    means = {v: _boot_means(arrays[v], rng, draws) for v in compared}

    def against(label, reference):
        pooled = np.concatenate([arrays[v] for v in reference])
        difference = means[label] - _boot_means(pooled, rng, draws)
        low, high = (float(q) for q in np.quantile(difference, [level / 2, 1 - level / 2]))
        return float(arrays[label].mean() - pooled.mean()), (low, high)

    tested, remaining = {}, list(compared)
    while len(remaining) >= 3:
        def gap(v):
            rest = np.concatenate([arrays[u] for u in remaining if u != v])
            return abs(arrays[v].mean() - rest.mean())
        worst = max(remaining, key=gap)
        difference, (low, high) = against(worst, [u for u in remaining if u != worst])
        if not (low > 1e-12 or high < -1e-12):
            break
        tested[worst] = (difference, (low, high), True)
        remaining.remove(worst)
    out = {}
    for label, values in arrays.items():
        entry = {"n": len(values), "mean": float(values.mean()) if len(values) else math.nan,
                 "ci": None, "difference": None, "difference_ci": None, "flagged": False}
        if label in compared:
            entry["ci"] = tuple(float(q) for q in np.quantile(means[label], [0.025, 0.975]))
            if label in tested:
                entry["difference"], entry["difference_ci"], entry["flagged"] = tested[label]
            elif len(remaining) >= 2:
                entry["difference"], entry["difference_ci"] = against(label, [u for u in remaining if u != label])
        out[label] = entry
    return out


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else ""


def _g(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".") if x == x else ""


@dataclass
class ItemTables:
    item: Item
    overview: dict
    checks: list            # rows, CHECK_COLUMNS
    mistakes: list          # rows, MISTAKE_COLUMNS
    variants: dict
    histogram: list         # (score, count)


def tables(data: ClassData) -> list:
    out = []
    for item in data.items:
        scores = np.asarray(list(item.scores.values()), dtype=float)
        n = item.students
        overview = {"item": item.name, "students": n, "max": _g(item.max_score),
                    "mean": _g(float(scores.mean())) if n else "",
                    "median": _g(float(np.median(scores))) if n else "",
                    "full marks": int(np.sum(np.abs(scores - item.max_score) < 1e-9)) if n else 0,
                    "zero": int(np.sum(scores == 0)) if n else 0,
                    "technical zeros": len(item.technical)}
        checks = []
        for cell, key in item.checks:
            counts = item.verdicts.get((cell, key), Counter())
            checked = sum(counts.values())
            failed = counts["fail"] + counts["invalid"]
            checks.append([item.name, cell, key, checked, counts["pass"], counts["fail"], counts["invalid"],
                           counts["undecided"], max(0, n - checked),
                           _pct(failed, checked) if item.detailed else ""])
        order = {name: i for i, name in enumerate(item.declared)}
        ranked = sorted(item.mistakes.items(), key=lambda kv: (-len(kv[1]), order.get(kv[0], len(order)), kv[0]))
        mistakes = []
        for name, who in ranked:
            keys = sorted({k for ks in who.values() for k in ks})
            mistakes.append([item.name, name, len(who), _pct(len(who), n) if item.detailed else "",
                             " ".join(keys), item.feedback.get(name, "(not declared by the problem now)")])
        groups = defaultdict(list)
        for student, score in item.scores.items():
            groups[item.variants.get(student) or "?"].append(score)
        variants = variant_fairness(groups, seed=f"{data.assignment}/{item.name}") if item.detailed else \
            {v: {"n": len(s), "mean": float(np.mean(s)), "ci": None, "difference": None,
                 "difference_ci": None, "flagged": False} for v, s in sorted(groups.items())}
        histogram = sorted(Counter(float(s) for s in scores).items())
        out.append(ItemTables(item, overview, checks, mistakes, variants, histogram))
    return out


def top_mistakes(per_item: list, count: int = 5) -> list:
    """The `count` mistakes of the whole assignment made by most students: (item, name, students, feedback)."""
    rows = [(t.item.name, r[1], r[2], r[5]) for t in per_item for r in t.mistakes]
    return sorted(rows, key=lambda r: -r[2])[:count]


# ============================================================================ figures
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

        labels = [r[2] for r in t.checks]
        failed = [r[5] + r[6] for r in t.checks]
        if item.detailed:
            values = [f / r[3] if r[3] else 0.0 for f, r in zip(failed, t.checks)]
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
        ci = f"[{_g(e['ci'][0])}, {_g(e['ci'][1])}]" if e["ci"] else ""
        diff = _g(e["difference"]) if e["difference"] is not None else ""
        diff_ci = f"[{_g(e['difference_ci'][0])}, {_g(e['difference_ci'][1])}]" if e["difference_ci"] else ""
        rows.append([label, e["n"], _g(e["mean"]), ci, diff, diff_ci, "POSSIBLY UNFAIR" if e["flagged"] else ""])
    return rows


VARIANT_COLUMNS = ["variant", "students", "mean", "95% interval", "minus the others", "flag interval", "flag"]
OVERVIEW_COLUMNS = ["item", "students", "max", "mean", "median", "full marks", "zero", "technical zeros"]


def _manual_rows(item: Item) -> list:
    rows = []
    for entry in item.manual:
        graded = entry["scores"]
        rows.append([entry["cell"], _g(entry["max"]), len(graded), _g(sum(graded) / len(graded)) if graded else "",
                     " ".join(_g(s) for s in sorted(graded)) if not item.detailed else "", entry["waiting"]])
    return rows


MANUAL_COLUMNS = ["cell", "max", "graded", "mean manual score", "manual scores", "awaiting grading"]


def _html_table(columns, rows, kind=""):
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in rows)
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
         f"only counts are shown: no percentages, intervals or flags.")


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
                  f"<p>{item.students} students, maximum {_g(item.max_score)} points.</p>",
                  img(item.name, f"{item.name}: score histogram, failed checks, variant means"),
                  "<h3>Checks</h3>", _html_table(CHECK_COLUMNS, t.checks, "checks"),
                  "<h3>Declared mistakes, by how many students made them</h3>",
                  _html_table(MISTAKE_COLUMNS, t.mistakes, "mistakes"),
                  "<h3>Variants</h3>", _html_table(VARIANT_COLUMNS, _variant_rows(t), "variants")]
        if item.manual:
            parts += ["<h3>Manually graded cells</h3>", _html_table(MANUAL_COLUMNS, _manual_rows(item), "manual")]
        parts += ["<h3>Technical zeros</h3>",
                  _html_table(["student", "status", "why"],
                              [[s, status, "; ".join(r)] for s, status, r in item.technical], "technical"),
                  "</section>"]
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
             "table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:2px 6px;"
             "text-align:left;vertical-align:top}th{background:#eee}img{max-width:100%}"
             ".rules{font-size:90%;color:#444}section{border-top:2px solid #888;margin-top:2em}")
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(data.assignment)}: '
            f'class report</title><style>{style}</style></head><body>{"".join(parts)}</body></html>')


def render_text(data: ClassData, per_item: list) -> str:
    out = [f"{data.assignment}: what the class got wrong ({len(data.students)} students)", "",
           _text_table(OVERVIEW_COLUMNS, [list(t.overview.values()) for t in per_item]), "",
           "the five most common mistakes:",
           _text_table(["item", "mistake", "students", "feedback"], top_mistakes(per_item))]
    if data.set_aside:
        out += ["", "submissions set aside (another login named this student):"]
        out += [f"  {folder}: names {student}; {why}" for folder, student, why in data.set_aside]
    for t in per_item:
        out += ["", f"== {t.item.name}", _text_table(CHECK_COLUMNS[1:], [r[1:] for r in t.checks])]
        if t.mistakes:
            out += ["", _text_table(MISTAKE_COLUMNS[1:], [r[1:] for r in t.mistakes])]
        out += ["", _text_table(VARIANT_COLUMNS, _variant_rows(t))]
        if t.item.manual:
            out += ["", _text_table(MANUAL_COLUMNS, _manual_rows(t.item))]
        if t.item.technical:
            out += ["", "technical zeros:"] + [f"  {s} ({status}): {'; '.join(r)[:160]}"
                                               for s, status, r in t.item.technical]
    out += ["", RULES]
    return "\n".join(out)


def _write_csv(path: Path, columns, rows) -> None:
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        writer.writerows(rows)


@dataclass
class Written:
    html: Path
    checks_csv: Path
    mistakes_csv: Path
    text: str
    seconds: dict
    tables: list


def build_report(root, assignment: str, out: Path | None = None) -> Written:
    """Read, compute, draw and write the report of `assignment`; returns the paths and the text."""
    seconds = {}
    started = time.perf_counter()
    data = collect(root, assignment)
    data.set_aside = [(e.folder, e.claimed, e.why) for e in read_set_aside(root, assignment)]
    seconds["reading the database"] = time.perf_counter() - started
    mark = time.perf_counter()
    per_item = tables(data)
    seconds["statistics"] = time.perf_counter() - mark
    mark = time.perf_counter()
    images = figures(per_item)
    seconds["figures"] = time.perf_counter() - mark
    mark = time.perf_counter()
    folder = Path(out) if out else Path(root).resolve() / "reports" / assignment
    folder.mkdir(parents=True, exist_ok=True)
    if not out:      # who made which mistake: the instructor's alone
        close_folder(folder.parent)
    page = folder / "report.html"
    page.write_text(render_html(data, per_item, images), encoding="utf-8")
    _write_csv(folder / "checks.csv", CHECK_COLUMNS, [r for t in per_item for r in t.checks])
    _write_csv(folder / "mistakes.csv", MISTAKE_COLUMNS, [r for t in per_item for r in t.mistakes])
    text = render_text(data, per_item)
    seconds["writing"] = time.perf_counter() - mark
    return Written(page, folder / "checks.csv", folder / "mistakes.csv", text, seconds, per_item)
