"""The build gate: an item counts only when its published solution passes.

For every item of a chapter the gate proves, by running them:
- the published solution (`solutions/`) gets full marks from the grader
  students face, as a student of each of its variants;
- the blank release (`release/`) scores 0;
- every declared mistake gives a wrong answer in every variant, loses points there,
  and is named in the feedback;
- no variant is one its own item says has broken down (`Problem.breakdown`);
- the texts students read keep the feedback policy (graders.giveaway): each mistake's
  instant text, the item's cards, and the prose of its released notebook;
- the notebook agrees with its problem (variants, test cells, points);
and, for the chapter, that `release/` and `solutions/` match `source/`.

Verdicts are cached in `.chapter/verdicts.json` under a fingerprint of every
file they depend on, so `chapter status` re-runs only what changed; the in-sync
check, in `.chapter/build-check.json`, likewise. Both fingerprints read paths
inside the course and contents only, so a copy of the course keeps its cache.
"""
from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

from graders import problems, variants
from graders.course.build import build
from graders.course.contract import Chapter
from graders.course.verify import autograde, warm_engine
from graders.engine.exchange import private_folder
from graders.engine.time_limits import record_measured
from graders.sandbox.tempdirs import owned_scratch

CACHE = Path(".chapter") / "verdicts.json"


@dataclass
class ItemReport:
    id: str
    notebook: str                                        # "assignment/id"
    solution: dict[str, bool] = field(default_factory=dict)   # variant -> full marks
    blank_zero: bool = False
    reasons: list[str] = field(default_factory=list)
    fingerprint: str = ""
    seconds: dict[str, float] = field(default_factory=dict)   # variant -> the solution's CPU time in the sandbox

    @property
    def counts(self) -> bool:
        """Counts toward the contract: a published solution passing in all four variants."""
        return len(self.solution) == 4 and all(self.solution.values())

    @property
    def ok(self) -> bool:
        return self.counts and not self.reasons


def fingerprint(root: Path, notebook: str) -> str:
    """A hash of everything an item's verdict may depend on: the whole grading library
    (problem modules share code), the course configuration and the item's three notebooks."""
    from graders.digest import code_digest
    digest = hashlib.sha256(code_digest().encode())
    from graders.course.cards import cards_file
    files = [root / "nbgrader_config.py"]
    files += [root / folder / f"{notebook}.ipynb" for folder in ("source", "release", "solutions")]
    card_path = cards_file(notebook.split("/")[-1])
    digest.update(card_path.read_bytes() if card_path.exists() else b"<no cards>")
    for path in files:
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes() if path.exists() else b"<absent>")
    return digest.hexdigest()


# --- static agreement between notebook and problem -----------------------------------
def notebook_reasons(root: Path, notebook: str, problem) -> list[str]:
    path = root / "source" / f"{notebook}.ipynb"
    nb = nbformat.read(path, as_version=4)
    reasons, test_cells, notebook_variants = [], {}, None
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade_id") == "setup":
            notebook_variants = _variants_literal(cell.source)
            if f'"{problem.assignment}:' not in cell.source:
                reasons.append(f"{notebook}: the setup cell does not hash the assignment {problem.assignment!r}")
        if meta.get("grade") and cell.cell_type == "code":
            test_cells[meta["grade_id"]] = float(meta.get("points", 0))
    if notebook_variants != problem.variants:
        reasons.append(f"{notebook}: the setup cell's VARIANTS differ from the problem's variants")
    for grade_id, keys in problem.cells.items():
        if grade_id not in test_cells:
            reasons.append(f"{notebook}: no test cell {grade_id!r}")
        elif test_cells[grade_id] != problem.points(keys):
            reasons.append(f"{notebook}: test cell {grade_id!r} is worth {test_cells[grade_id]:g} points, "
                           f"its checks {problem.points(keys):g}")
    unchecked = set(problem.checks) - {k for keys in problem.cells.values() for k in keys}
    if unchecked:
        reasons.append(f"{notebook}: no test cell checks {', '.join(sorted(unchecked))}")
    return reasons


def _variants_literal(source: str):
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "VARIANTS" for t in node.targets):
            try:
                return ast.literal_eval(node.value)
            except ValueError:
                return None
    return None


# --- declared mistakes ----------------------------------------------------------------
def mistake_reasons(problem) -> list[str]:
    reasons = []
    if len(problem.mistakes) < 3:
        reasons.append(f"{problem.id}: declares {len(problem.mistakes)} common mistakes; at least 3 are owed")
    for index, mistake in enumerate(problem.mistakes):
        shown = False
        for label, params in problem.variants.items():
            right, wrong = problem.reference(params), problem.mistaken(params)[index][1]
            answers = {**right, **wrong}
            changed = [k for k in wrong if not problem.checks[k].judge(right[k], answers[k]).passed]
            if not wrong:
                continue   # it cannot be made in this variant (its `wrong` says so from the parameters)
            if not changed:   # a student who makes it is right here: the variant does not test the idea
                reasons.append(f"{problem.id}: mistake {mistake.name!r} gives the right answers in variant {label}")
                continue
            shown = True
            result = problem.grade(params, answers)
            if result.score >= result.max_score:
                reasons.append(f"{problem.id}: mistake {mistake.name!r} loses no points in variant {label}")
            elif not any(mistake.feedback in text for text in result.feedback):
                reasons.append(f"{problem.id}: mistake {mistake.name!r} is not named in the feedback "
                               f"in variant {label}")
        if not shown:
            reasons.append(f"{problem.id}: mistake {mistake.name!r} gives the right answers in every variant")
    return reasons


# --- what students read: the feedback policy (graders.giveaway) ------------------------------
def giveaway_reasons(root: Path, notebook: str, problem) -> list[str]:
    """Every way the item's texts give an answer away, and every variant its item says has
    broken down."""
    from graders import giveaway
    from graders.course.cards import item_cards
    from graders.symbolic import Expr
    item = problem.id
    reasons = []
    for label, params in problem.variants.items():
        reasons += [f"{item}: variant {label} cannot run: {why}" for why in problem.breakdown(params)]
    for mistake in problem.mistakes:
        reasons += [f"{item}: mistake {mistake.name!r}'s instant text {why}"
                    for why in giveaway.instant_reasons(mistake.instant)]
    references = [problem.reference(params) for params in problem.variants.values()]
    symbolic = {key: check for key, check in problem.checks.items() if isinstance(check, Expr)}
    numbers = {key: check for key, check in problem.checks.items() if key not in symbolic}
    values = {key: {_real(ref.get(key)) for ref in references} - {None} for key in numbers}
    expressions = {key: [ref[key] for ref in references if key in ref] for key in symbolic}
    try:
        cards = item_cards(item)
    except ValueError as exc:
        return reasons + [f"{item}: {exc}"]
    for number, card in enumerate(cards, 1):
        text = f"{card.front}\n{card.back}"
        for printed in giveaway.printed_values(text):
            for key, check in numbers.items():
                if any(giveaway.gives_value(printed, value, getattr(check, "rtol", 1e-3)) for value in values[key]):
                    reasons.append(f"{item}: card {number} prints {printed.text!r}, the reference {key} "
                                   "of a variant")
                    break
        for key, check in symbolic.items():
            said = giveaway.states_expression(text, key, check, expressions[key])
            if said is not None:
                reasons.append(f"{item}: card {number} states {key} ({said})")
    if problem.kind == "worked":   # a worked problem derives its expressions in the open
        return reasons
    prose = _released_prose(root, notebook)
    for key, check in symbolic.items():
        said = giveaway.states_expression(prose, key, check, expressions[key])
        if said is not None:
            reasons.append(f"{item}: the released notebook states {key} ({said})")
    return reasons


def _real(value):
    """A reference value as a float, when it is one real number (lists and texts are not)."""
    import numbers
    if isinstance(value, bool) or not (isinstance(value, numbers.Real) or getattr(value, "is_Number", False)):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _released_prose(root: Path, notebook: str) -> str:
    """What a student reads in the released notebook before answering: its markdown and the code
    it gives (its answer cells as released, its tests' visible parts)."""
    path = root / "release" / f"{notebook}.ipynb"
    if not path.exists():
        return ""
    nb = nbformat.read(path, as_version=4)
    return "\n\n".join(cell.source for cell in nb.cells)


# --- running solutions and blanks -------------------------------------------------------
def mistakes_of(ids: list[str]) -> dict[str, list[str]]:
    """`mistake_reasons` of each item (run in the gate's helper process)."""
    return {item: mistake_reasons(problems.get(item)) for item in ids}


def references_of(ids: list[str]) -> None:
    """Every variant's reference of each item, remembered in this process (`Problem.reference`),
    so that the processes forked from it afterwards (the mistakes' helper, the engine's workers)
    share them instead of each computing its own. A failure shows again where it is graded."""
    for item in ids:
        problem = problems.get(item)
        for params in problem.variants.values():
            with contextlib.suppress(Exception):
                problem.reference(params)


def evaluate(root: Path, notebooks: list[str], helper=None) -> dict[str, ItemReport]:
    """Verdicts for `notebooks` ("assignment/id"), from real grading runs; when `helper` (an
    executor factory) is given, the declared mistakes are checked in it while the engine grades."""
    reports: dict[str, ItemReport] = {}
    by_assignment: dict[str, list[str]] = {}
    for notebook in notebooks:
        assignment, item = notebook.split("/")
        report = reports[item] = ItemReport(item, notebook, fingerprint=fingerprint(root, notebook))
        try:
            problem = problems.get(item)
        except KeyError:
            report.reasons.append(f"{item}: no problem is registered in graders/problems")
            continue
        for folder in ("source", "release", "solutions"):
            if not (root / folder / f"{notebook}.ipynb").exists():
                report.reasons.append(f"{item}: {folder}/{notebook}.ipynb does not exist")
        if report.reasons:
            continue
        if len(problem.variants) != 4:
            report.reasons.append(f"{item}: has {len(problem.variants)} variants; 4 are owed")
        report.reasons += notebook_reasons(root, notebook, problem)
        report.reasons += giveaway_reasons(root, notebook, problem)
        by_assignment.setdefault(assignment, []).append(item)
    checked = [item for items in by_assignment.values() for item in items]
    references_of(checked)
    if helper is None:
        for item in checked:
            reports[item].reasons += mistake_reasons(problems.get(item))
        grade_all(root, by_assignment, reports)
        return reports
    with helper() as mistakes_helper:   # forked now: it has the references
        mistakes = mistakes_helper.submit(mistakes_of, checked)
        grade_all(root, by_assignment, reports)
        for item, reasons in mistakes.result().items():
            reports[item].reasons += reasons
    return reports


def grade_all(root: Path, by_assignment: dict[str, list[str]], reports: dict[str, ItemReport]) -> None:
    """Each item's solution in every variant, and its blank release, through the engine."""
    for assignment, items in by_assignment.items():
        submissions = {}
        for label in variants.LABELS:
            student = variants.student_for(label, assignment, prefix="gate")
            submissions[student] = {i: root / "solutions" / assignment / f"{i}.ipynb"
                                    for i in items if label in problems.get(i).variants}
        submissions["gate-blank"] = {i: root / "release" / assignment / f"{i}.ipynb" for i in items}
        with owned_scratch("chapter-gate-") as tmp:
            scores = autograde(root, Path(tmp), assignment, submissions)
        for label in variants.LABELS:
            student = variants.student_for(label, assignment, prefix="gate")
            for item, got in scores.get(student, {}).items():
                # a test cell left for a person (undecided, or blamed on the sandbox) is not a pass
                passed = got.max_score > 0 and abs(got.score - got.max_score) < 1e-9 and not got.waiting
                reports[item].solution[label] = passed
                if got.cpu_seconds is not None:
                    reports[item].seconds[label] = got.cpu_seconds
                if passed and got.raised:
                    # full marks, but Validate would fail a student who wrote this solution
                    reports[item].reasons.append(
                        f"{item}: the published solution raises in variant {label} "
                        f"({'; '.join(got.raised[:3])}), so Validate fails a correct answer")
                if got.waiting:
                    reports[item].reasons.append(
                        f"{item}: the published solution leaves {', '.join(got.waiting[:3])} for a person "
                        f"in variant {label} (an answer the grader could not decide, or an error the sandbox "
                        "may have caused), so every student who writes it waits for a grade")
                elif not passed:
                    failed = [t for t in got.feedback if t.startswith(("✗", "?")) or "Error" in t][:3]
                    reports[item].reasons.append(
                        f"{item}: the published solution scores {got.score:g}/{got.max_score:g} in variant "
                        f"{label}" + (f" ({'; '.join(failed)})" if failed else ""))
        for item, got in scores["gate-blank"].items():
            reports[item].blank_zero = got.score == 0
            if got.score != 0:
                reports[item].reasons.append(f"{item}: the blank release scores {got.score:g}, not 0")


# --- cache ---------------------------------------------------------------------------------
def verdicts(root: Path, notebooks: list[str], refresh: bool = False, helper=None) -> dict[str, ItemReport]:
    """Cached verdicts where nothing they depend on changed; fresh runs for the rest."""
    cache_path = root / CACHE
    cached = {} if refresh else _read_cache(cache_path)
    reports = current_verdicts(root, notebooks, cached)
    stale = [notebook for notebook in notebooks if notebook.split("/")[-1] not in reports]
    if stale:
        # minutes when many are stale: said first, so that a silent terminal is not taken for a hang
        print(f"checking {len(stale)} of {len(notebooks)} items whose verdict is not current (each one's "
              f"solution and blank release graded in every variant; a few minutes for many) ...",
              file=sys.stderr, flush=True)
        fresh = evaluate(root, stale, helper)
        reports.update(fresh)
        cached.update({item: asdict(report) for item, report in fresh.items()})
        private_folder(cache_path.parent)
        cache_path.write_text(json.dumps(cached, indent=1, sort_keys=True))
        # each notebook's time limit in `chapter autograde` follows its slowest variant's solution
        record_measured(root, {report.notebook: max(report.seconds.values()) for report in fresh.values()
                               if report.counts and len(report.seconds) == len(report.solution)})
    return reports


def _read_cache(cache_path: Path) -> dict:
    try:
        return json.loads(cache_path.read_text()) if cache_path.exists() else {}
    except ValueError:
        return {}


def current_verdicts(root: Path, notebooks: list[str], cached: dict | None = None) -> dict[str, ItemReport]:
    """The cached verdicts (by item id) of those `notebooks` that nothing they depend on changed
    since; `cached` is the cache's contents when the caller has read them already."""
    cached = _read_cache(root / CACHE) if cached is None else cached
    reports = {}
    for notebook in notebooks:
        item = notebook.split("/")[-1]
        entry = cached.get(item)
        if entry and entry.get("fingerprint") == fingerprint(root, notebook):
            reports[item] = ItemReport(**entry)
    return reports


BUILD_CACHE = Path(".chapter") / "build-check.json"


def build_fingerprint(root: Path) -> str:
    """A hash of everything `chapter build --check` reads: the grading library, nbgrader's and
    jupytext's versions, the course configuration and every file under source/, release/ and
    solutions/, by path inside the course and content (so a copy of the course has the same)."""
    import jupytext
    import nbgrader
    from graders.digest import code_digest
    digest = hashlib.sha256(f"{code_digest()} {nbgrader.__version__} {jupytext.__version__}".encode())
    files = [root / "nbgrader_config.py"] + [p for p in [root / "deadlines.toml"] if p.exists()]
    for folder in ("source", "release", "solutions"):
        files += sorted(p for p in (root / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts
                        and ".ipynb_checkpoints" not in p.parts)
    for path in files:
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(path.read_bytes() if path.exists() else b"<absent>")
    return digest.hexdigest()


def build_reasons(root: Path, refresh: bool = False, only: list[str] | None = None) -> list[str]:
    """`build(root, write=False)`, whose answer is cached under the build's fingerprint; for the
    items `only`, just their drift, regenerated afresh with `refresh`. A malformed deadlines.toml
    (the release's due-date header comes from it) is the one reason, as `chapter build` gives it."""
    from graders.course.deadlines import DeadlineError
    try:
        return _build_reasons(root, refresh, only)
    except DeadlineError as error:
        return [f"{DEADLINES_REASON}{error}"]


DEADLINES_REASON = "release/ cannot be checked: "


def _build_reasons(root: Path, refresh: bool, only: list[str] | None) -> list[str]:
    if only:
        return build(root, write=False, only=only, cache=not refresh)
    cache_path, key = root / BUILD_CACHE, build_fingerprint(root)
    try:
        cached = json.loads(cache_path.read_text())
        if cached.get("fingerprint") == key and not refresh:
            return list(cached["reasons"])
    except (OSError, ValueError, KeyError, AttributeError):
        pass
    reasons = build(root, write=False, cache=not refresh)
    private_folder(cache_path.parent)
    cache_path.write_text(json.dumps({"fingerprint": key, "reasons": reasons}, indent=1))
    return reasons


def drift_reasons(root: Path, refresh: bool, only: list[str] | None) -> list[str]:
    """`build_reasons` (run in the gate's helper process)."""
    return build_reasons(root, refresh=refresh, only=only)


def gate(root: Path, chapter: Chapter, only: list[str] | None = None,
         refresh: bool = False) -> tuple[list[str], dict[str, ItemReport]]:
    """Every reason the chapter (or the `only` items) falls short, and the item verdicts.

    When items must be graded afresh, helper processes check the drift and the declared
    mistakes (trusted, single-threaded work) while the engine grades on the other cores; the
    references are computed once, here, before the mistakes' helper and the engine's workers fork."""
    notebooks = [nb for nb in chapter.notebooks if not only or nb.split("/")[-1] in only]
    current = {} if refresh else current_verdicts(root, notebooks)
    if not refresh and len(current) == len(notebooks):
        reasons, reports = build_reasons(root, only=only), current
    else:
        with helper_process() as helper:   # forked at its first task, with what this process has imported
            drift = helper.submit(drift_reasons, root, refresh, only)
            warm_engine()
            # the mistakes get a helper of their own, forked once the references are computed
            reports = verdicts(root, notebooks, refresh=refresh, helper=helper_process)
            reasons = drift.result()
    if only:
        reasons = [r for r in reasons if any(f"/{i}." in r for i in only) or r.startswith(DEADLINES_REASON)]
    for notebook in notebooks:
        reasons += reports[notebook.split("/")[-1]].reasons
    return reasons, reports


def helper_process():
    """An executor of one process, forked from this one (it has the libraries imported already)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    return ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"))
