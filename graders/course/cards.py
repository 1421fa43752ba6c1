"""Flashcards, reading time and the Anki deck of each chapter, all computed from the content.

- **Cards** are data beside each problem: `graders/problems/<assignment>/<module>.cards.toml`
  (the module's stem, e.g. `basics/b01_dataset.cards.toml`, found by the item's id with `_` for `-`), a list of `[[card]]` tables with `front`, `back` and
  `source`. `item_cards(item)` reads and checks them; a chapter's cards are its items' cards.
- **Reading time** is the prose a student reads: the words of the markdown cells of each item's
  released notebook (`release/<assignment>/<id>.ipynb`), with formulas, code spans, HTML tags and
  link targets left out, at WORDS_PER_MINUTE. Nothing is typed in by hand.
- **The deck**: `export_chapter` writes one Anki package per chapter with genanki, and a CSV of
  the same cards. The deck id comes from the chapter id, and each note's guid from the chapter,
  the item and the card's front, by a stable hash; so a re-export updates the cards a student
  already has instead of adding copies.
"""
from __future__ import annotations

import csv
import hashlib
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import nbformat

from graders.course.contract import Chapter

WORDS_PER_MINUTE = 200
CARDS_DIR = Path(__file__).resolve().parents[1] / "problems"
FIELDS = ("front", "back", "source")

_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.DOTALL)
_CODE = re.compile(r"`[^`\n]*`")
_TAG = re.compile(r"<[^>\n]+>")
_LINK_TARGET = re.compile(r"\]\([^)\s]*\)")
_WORD = re.compile(r"[^\W_](?:[\w'’.,:;!?()\-–/]*[^\W_])?")


@dataclass(frozen=True)
class Card:
    item: str
    front: str
    back: str
    source: str


def cards_file(item: str, cards_dir: Path = CARDS_DIR) -> Path:
    """Where an item's cards live: beside its problem module, same stem."""
    name = f"{item.replace('-', '_')}.cards.toml"
    return next(iter(sorted(cards_dir.rglob(name))), cards_dir / name)


def item_cards(item: str, cards_dir: Path = CARDS_DIR) -> list[Card]:
    """The cards an item declares (none when it has no cards file); ValueError when malformed."""
    path = cards_file(item, cards_dir)
    if not path.exists():
        return []
    data = tomllib.loads(path.read_text())
    unknown = set(data) - {"card"}
    if unknown:
        raise ValueError(f"{path.name}: unknown tables {sorted(unknown)}; only [[card]] is read")
    cards = []
    for i, entry in enumerate(data.get("card", [])):
        extra = set(entry) - set(FIELDS)
        if extra:
            raise ValueError(f"{path.name}: card {i} has unknown fields {sorted(extra)}")
        for field in FIELDS:
            value = entry.get(field)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{path.name}: card {i} has no {field}")
        cards.append(Card(item, entry["front"].strip(), entry["back"].strip(), entry["source"].strip()))
    fronts = [c.front for c in cards]
    if len(set(fronts)) != len(fronts):
        raise ValueError(f"{path.name}: two cards share a front (their note ids would collide)")
    return cards


def chapter_cards(chapter: Chapter, cards_dir: Path = CARDS_DIR) -> list[Card]:
    return [card for nb in chapter.notebooks for card in item_cards(nb.split("/")[-1], cards_dir)]


# --- reading time -------------------------------------------------------------------------
def prose_words(markdown: str) -> int:
    """Words of prose in one markdown text: formulas, code spans, tags and link targets left out."""
    text = _LINK_TARGET.sub("]", _TAG.sub(" ", _CODE.sub(" ", _MATH.sub(" ", markdown))))
    text = re.sub(r"^\s*#+\s*", "", text, flags=re.MULTILINE)
    return len(_WORD.findall(text))


def notebook_words(path: Path) -> int:
    """Prose words of the markdown cells of one notebook (0 when it does not exist yet)."""
    if not path.exists():
        return 0
    nb = nbformat.read(path, as_version=4)
    return sum(prose_words(cell.source) for cell in nb.cells if cell.cell_type == "markdown")


def minutes(words: int, wpm: int = WORDS_PER_MINUTE) -> int:
    """Whole minutes of reading, rounded up (any prose at all is at least a minute)."""
    return math.ceil(words / wpm)


def content_counts(root: Path, chapter: Chapter, cards_dir: Path = CARDS_DIR) -> dict:
    """The page's three counts: concepts, flashcards and minutes of reading, with their parts."""
    words = {nb.split("/")[-1]: notebook_words(root / "release" / f"{nb}.ipynb") for nb in chapter.notebooks}
    cards = {nb.split("/")[-1]: len(item_cards(nb.split("/")[-1], cards_dir)) for nb in chapter.notebooks}
    total = sum(words.values())
    return {
        "concepts": len(chapter.concepts),
        "cards": sum(cards.values()),
        "reading": {"words": total, "words_per_minute": WORDS_PER_MINUTE, "minutes": minutes(total)},
        "items": {item: {"cards": cards[item], "words": words[item]} for item in words},
    }


# --- the Anki deck ---------------------------------------------------------------------------
def stable_id(text: str) -> int:
    """A 31-bit id above 2**30 from `text` (Anki's deck and model ids are such ints)."""
    digest = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    return (1 << 30) + digest % (1 << 30)


def note_guid(chapter_id: str, card: Card) -> str:
    """The note's guid: the same card of the same item of the same chapter keeps it across exports."""
    import genanki
    return genanki.guid_for(chapter_id, card.item, card.front)


def _model():
    import genanki
    return genanki.Model(
        stable_id("training-at-scale flashcard model v1"), "Training at Scale card",
        fields=[{"name": "Front"}, {"name": "Back"}, {"name": "Source"}, {"name": "Item"}],
        templates=[{"name": "Card 1", "qfmt": "{{Front}}",
                    "afmt": '{{FrontSide}}<hr id="answer">{{Back}}'
                            '<div style="font-size:small;color:#666">{{Source}} · {{Item}}</div>'}],
    )


def slug(chapter_id: str) -> str:
    """A file name for a chapter id ("II.8" -> "II-8")."""
    return re.sub(r"[^A-Za-z0-9]+", "-", chapter_id).strip("-")


def export_chapter(chapter: Chapter, out_dir: Path, cards_dir: Path = CARDS_DIR) -> tuple[Path, Path, int]:
    """Write `<slug>.apkg` and `<slug>.csv` for one chapter; return both paths and the card count."""
    import html

    import genanki

    from graders import problems
    cards = chapter_cards(chapter, cards_dir)
    deck = genanki.Deck(stable_id(f"deck:{chapter.id}"), f"{chapter.id} {chapter.title}")
    model = _model()
    out_dir.mkdir(parents=True, exist_ok=True)
    apkg, table = out_dir / f"{slug(chapter.id)}.apkg", out_dir / f"{slug(chapter.id)}.csv"
    rows = []
    for card in cards:
        try:
            strand = problems.get(card.item).strand
        except KeyError:
            strand = "unregistered"
        guid = note_guid(chapter.id, card)
        deck.add_note(genanki.Note(model=model, guid=guid,
                                   fields=[html.escape(card.front), html.escape(card.back),
                                           html.escape(card.source), card.item],
                                   tags=[slug(chapter.id), card.item, strand]))
        rows.append({"chapter": chapter.id, "item": card.item, "strand": strand, "front": card.front,
                     "back": card.back, "source": card.source, "guid": guid})
    genanki.Package(deck).write_to_file(str(apkg))
    with table.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["chapter", "item", "strand", "front", "back", "source", "guid"])
        writer.writeheader()
        writer.writerows(rows)
    return apkg, table, len(cards)
