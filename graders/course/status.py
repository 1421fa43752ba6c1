"""What a chapter has against what its maturity level owes."""
from __future__ import annotations

from pathlib import Path

from graders import problems
from graders.course.cards import content_counts
from graders.course.contract import STRANDS, Chapter, load_contracts
from graders.course.gate import ItemReport, verdicts
from graders.variants import LABELS


def kind_of(item: str) -> str | None:
    try:
        return problems.get(item).kind
    except KeyError:
        return None


def chapter_status(root: Path, chapter: Chapter, reports: dict[str, ItemReport] | None = None) -> dict:
    """The status record of `chapter status --json`, computed from running the solutions."""
    contracts = load_contracts(root)
    owed = contracts["levels"][chapter.maturity]["owes"]
    if reports is None:
        reports = verdicts(root, chapter.notebooks)
    counting = {item for item, r in reports.items() if r.counts}

    def have(notebooks):
        return sum(1 for nb in notebooks if nb.split("/")[-1] in counting)

    strands = {s: {"have": have(chapter.strands[s]), "owed": owed[s]} for s in STRANDS}
    maths = [nb.split("/")[-1] for nb in chapter.strands["mathematics"]]
    worked = [i for i in maths if kind_of(i) == "worked"]
    exercises = [i for i in maths if kind_of(i) == "exercise"]
    worked_have = sum(1 for i in worked if i in counting)
    exercises_have = sum(1 for i in exercises if i in counting)
    # a variant label counts when every owed worked problem has a passing solution in it
    variant_have = 0
    if len(worked) >= owed["worked"] and worked:
        variant_have = sum(1 for label in LABELS
                           if all(i in reports and reports[i].solution.get(label) for i in worked))
    owes = max(0, owed["worked"] - worked_have) + max(0, owed["exercises"] - exercises_have)
    return {
        "id": chapter.id, "title": chapter.title, "maturity": chapter.maturity, "state": chapter.state,
        "strands": strands,
        "worked": {"have": worked_have, "owed": owed["worked"]},
        "variants": {"have": variant_have, "owed": owed["variants"]},
        "exercises": {"have": exercises_have, "owed": owed["exercises"]},
        "owes": owes,
        **content_counts(root, chapter),
    }


def shortfalls(status: dict) -> list[str]:
    """One line per way the chapter falls short of its contract."""
    lines = []
    for strand, count in status["strands"].items():
        if count["have"] < count["owed"]:
            lines.append(f"{status['id']}: {strand} has {count['have']} of {count['owed']} owed")
    for part in ("worked", "variants", "exercises"):
        if status[part]["have"] < status[part]["owed"]:
            lines.append(f"{status['id']}: {part} {status[part]['have']} of {status[part]['owed']} owed")
    return lines


def render(status: dict, root: Path) -> str:
    contracts = load_contracts(root)
    level = contracts["levels"][status["maturity"]]["name"]
    out = [f"{status['id']} {status['title']} · {status['maturity']} {level} · {status['state']}"]
    for strand in STRANDS:
        count = status["strands"][strand]
        fraction = f"{count['have']}/{count['owed']}"
        out.append(f"  {strand:<12} {fraction:>5}  {contracts['strands'][strand]}")
    w, v, e = status["worked"], status["variants"], status["exercises"]
    out.append(f"  worked problems {w['have']}/{w['owed']} problems · {v['have']}/{v['owed']} variants · "
               f"{e['have']}/{e['owed']} exercises · owes {status['owes']} more")
    if "reading" in status:
        reading = status["reading"]
        out.append(f"  {status['concepts']} concepts · {status['cards']} flashcards · "
                   f"{reading['minutes']} minutes of reading ({reading['words']:,} words at "
                   f"{reading['words_per_minute']} words a minute)")
    return "\n".join(out)
