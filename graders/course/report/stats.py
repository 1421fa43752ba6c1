"""The class's statistics: per-item tables, variant fairness by bootstrap, and item statistics.

Pure functions of the data read by `data.py`; nothing here reads a database or draws a page.
Definitions are stated in `graders.course.report`'s docstring and on the page.
"""
from __future__ import annotations

import hashlib
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np

from graders.course.report.data import MIN_CLASS, MIN_VARIANT, ClassData, Item

ALPHA = 0.05          # family-wise level of the fairness flag over the variants of one item
DRAWS = 4000          # bootstrap resamples
CHECK_COLUMNS = ["item", "cell", "check", "checked", "pass", "fail", "invalid", "undecided",
                 "not checked", "failure rate"]
MISTAKE_COLUMNS = ["item", "mistake", "students", "share", "checks", "feedback"]
ITEM_COLUMNS = ["item", "cell", "check", "variant", "students", "passing", "difficulty", "discrimination",
                "p (r < 0)", "flag", "note"]
NEGATIVE = "NEGATIVE DISCRIMINATION"
DECIDED = ("pass", "fail", "invalid")   # the verdicts item statistics count; undecided and not checked are left out


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


def number(x: float) -> str:
    """A score or statistic as the report prints it: at most two decimals, no trailing zeros."""
    return f"{x:.2f}".rstrip("0").rstrip(".") if x == x else ""


@dataclass
class ItemTables:
    item: Item
    overview: dict
    checks: list            # rows, CHECK_COLUMNS
    mistakes: list          # rows, MISTAKE_COLUMNS
    variants: dict
    histogram: list         # (score, count)
    statistics: list = field(default_factory=list)   # rows, ITEM_COLUMNS


def tables(data: ClassData) -> list:
    out = []
    totals = assignment_totals(data.items)
    for item in data.items:
        scores = np.asarray(list(item.scores.values()), dtype=float)
        n = item.students
        overview = {"item": item.name, "students": n, "max": number(item.max_score),
                    "mean": number(float(scores.mean())) if n else "",
                    "median": number(float(np.median(scores))) if n else "",
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
        out.append(ItemTables(item, overview, checks, mistakes, variants, histogram,
                              item_statistics(item, totals)))
    return out


def top_mistakes(per_item: list, count: int = 5) -> list:
    """The `count` mistakes of the whole assignment made by most students: (item, name, students, feedback)."""
    at = {name: MISTAKE_COLUMNS.index(name) for name in ("mistake", "students", "feedback")}
    rows = [(t.item.name, r[at["mistake"]], r[at["students"]], r[at["feedback"]]) for t in per_item for r in t.mistakes]
    return sorted(rows, key=lambda r: -r[2])[:count]



# ---------------------------------------------------------------------------- item statistics
def assignment_totals(items: list) -> dict:
    """student -> points over every item of the assignment."""
    totals = defaultdict(float)
    for item in items:
        for student, score in item.scores.items():
            totals[student] += score
    return dict(totals)


def point_biserial(passed, rest) -> tuple:
    """(r, one-sided p for r < 0, note) of pass/fail against the rest of the score.

    scipy.stats.pointbiserialr gives r and its two-sided p; the one-sided p of a negative
    correlation is half of it when r < 0 and 1 - half when r >= 0. A column that does not vary
    (everyone passed, nobody passed, or the same rest score for all) has no correlation: r and p
    are None and the note says why, so no NaN ever reaches the page.
    """
    from scipy.stats import pointbiserialr
    passed, rest = np.asarray(passed, dtype=float), np.asarray(rest, dtype=float)
    if passed.min() == passed.max():
        return None, None, ("everyone passed" if passed[0] else "nobody passed") + ": no correlation to compute"
    if np.ptp(rest) < 1e-12:
        return None, None, "the rest of the score is the same for every student: no correlation to compute"
    r, two_sided = pointbiserialr(passed, rest)
    r, two_sided = float(r), float(two_sided)
    if not (math.isfinite(r) and math.isfinite(two_sided)):
        return None, None, "no correlation to compute"
    return r, (two_sided / 2 if r < 0 else 1 - two_sided / 2), ""


def item_statistics(item: Item, totals: dict, alpha: float = ALPHA) -> list:
    """Per check of `item`, over the whole class and then per variant: difficulty, discrimination, flag.

    - students: those whose check gave a decided verdict (pass, fail or invalid); a check
      that did not run or could not be decided says nothing about the student;
    - difficulty: the share of them passing;
    - discrimination: the point-biserial correlation of passing with the rest of the student's
      score, that is the assignment total minus the points of the cell that holds the check
      (a check's own points are not kept apart from its cell's, so the whole cell is left out);
    - flag NEGATIVE DISCRIMINATION when r < 0 and its one-sided p is below alpha / m, m the
      checks whose correlation was computed in the same table (the class's rows of this item,
      or its per-variant rows): Bonferroni, so on a sound item the chance of any flag is at
      most alpha;
    - under MIN_CLASS students (MIN_VARIANT in a variant) only the counts are given.
    """
    rows, family = [], {"all": [], "variant": []}
    labels = sorted({item.variants.get(s) or "?" for s in item.scores})
    for cell, key in item.checks:
        outcomes = item.outcomes.get((cell, key), {})
        decided = {s: status for s, status in outcomes.items() if status in DECIDED and s in item.scores}
        groups = [("all", sorted(decided), MIN_CLASS)]
        groups += [(v, sorted(s for s in decided if (item.variants.get(s) or "?") == v), MIN_VARIANT)
                   for v in labels] if len(labels) > 1 else []
        for label, students, minimum in groups:
            passed = [decided[s] == "pass" for s in students]
            row = {"item": item.name, "cell": cell, "check": key, "variant": label, "students": len(students),
                   "passing": sum(passed), "difficulty": "", "discrimination": "", "p (r < 0)": "", "flag": "",
                   "note": ""}
            if len(students) < minimum:
                row["note"] = (f"too few students (under {minimum}) for a share or a correlation to mean "
                               "anything: counts only")
            else:
                row["difficulty"] = f"{sum(passed) / len(students):.2f}"
                rest = [totals.get(s, 0.0) - item.cell_scores.get(s, {}).get(cell, 0.0) for s in students]
                r, p, row["note"] = point_biserial(passed, rest)
                if r is not None:
                    row["discrimination"] = f"{r:+.2f}" if abs(r) >= 0.005 else "0.00"   # never "-0.00"
                    row["p (r < 0)"] = f"{p:.2g}"
                    family["all" if label == "all" else "variant"].append((row, r, p))
            rows.append(row)
    for members in family.values():
        for row, r, p in members:
            if r < 0 and p < alpha / len(members):
                row["flag"] = NEGATIVE
    return [[row[c] for c in ITEM_COLUMNS] for row in rows]
