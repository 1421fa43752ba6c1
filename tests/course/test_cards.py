"""Flashcards, reading time and the Anki deck: sources named, no answer given away, ids stable."""
import json
import math
import re
import sqlite3
import tomllib
import zipfile
from pathlib import Path

import pytest
import sympy

from graders.course import cards
from graders import problems
from graders.course.contract import Chapter, course_root, load_chapters

ROOT = course_root()
IDS = problems.ids()
NUMBER = re.compile(r"(?<![\w.])[-−]?\d[\d,]*(?:\.\d+)?(?:[eE][-+−]?\d+)?")
POWER = re.compile(r"(\d+)\s*\^\s*([-−]?\d+)")


@pytest.mark.parametrize("pid", IDS)
def test_every_item_declares_cards_with_their_sources(pid):
    """Each item has a cards file; each card has a front, a back and a named source."""
    found = cards.item_cards(pid)
    assert found, f"{cards.cards_file(pid).name} declares no cards"
    for card in found:
        assert card.front and card.back and len(card.source) >= 8, card


@pytest.mark.parametrize("pid", [i for i in IDS if problems.get(i).strand == "basics"])
def test_every_basics_item_defines_its_term(pid):
    """A basics item carries at least one definition card ("What is/are ...?")."""
    assert any(re.match(r"What (is|are) ", c.front) for c in cards.item_cards(pid)), pid


def _numbers_in(text: str) -> list[float]:
    """Every number written in a card: plain, with thousands commas, in e-notation, or as a^b."""
    text = text.replace("−", "-").replace("×", "x")
    found = [float(a) ** float(b) for a, b in POWER.findall(text) if abs(float(b)) < 400]
    for token in NUMBER.findall(POWER.sub(" ", text)):
        try:
            found.append(float(token.replace(",", "")))
        except ValueError:
            continue
    return found


def _reference_values(value):
    """The numbers and expressions a reference answer is made of (lists flattened)."""
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield float(value)
    elif isinstance(value, sympy.Basic):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _reference_values(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _reference_values(v)


def _gives_away(card_text: str, reference) -> str | None:
    squeezed = re.sub(r"[\s*·]", "", card_text)
    numbers = _numbers_in(card_text)
    for value in _reference_values(reference):
        if isinstance(value, sympy.Basic):
            if value.free_symbols and re.sub(r"[\s*]", "", str(value)) in squeezed:
                return str(value)
            continue
        # small whole numbers (2 bytes, 8 bits, 1 epoch) are vocabulary, not answers
        if not math.isfinite(value) or (value == int(value) and abs(value) <= 16):
            continue
        for n in numbers:
            if n == int(n) and abs(n) <= 16:
                continue
            if math.isclose(n, value, rel_tol=2e-3):
                return f"{value!r} (written {n:g})"
    return None


@pytest.mark.parametrize("pid", IDS)
def test_no_card_gives_away_a_graded_answer(pid):
    """No card's text holds any variant's reference answer, number or expression."""
    problem = problems.get(pid)
    found = cards.item_cards(pid)
    for label, params in problem.variants.items():
        reference = problem.solve(params)
        for key in problem.checks:
            for card in found:
                leaked = _gives_away(f"{card.front} {card.back}", reference[key])
                assert leaked is None, f"{pid} variant {label}: a card shows {key} = {leaked}: {card.front}"


def test_the_leak_check_catches_a_number_and_an_expression():
    """The give-away check itself: a card quoting an answer, in any of its spellings, is caught."""
    N, D = sympy.symbols("N D", positive=True)
    assert _gives_away("It costs 6*D*N FLOPs.", 6 * N * D)
    assert _gives_away("It is 4,194,304 tokens.", 4194304)
    assert _gives_away("about 1.5e-3 of it", [0.0015])
    assert _gives_away("scale 2^16 then", 65536.0)
    assert _gives_away("nothing to see", 65536.0) is None
    assert _gives_away("8 bytes", 8) is None


def test_a_card_without_a_source_is_refused(tmp_path):
    """A cards file whose card has no source (or an unknown field) is an error, not a silent skip."""
    (tmp_path / "x1_thing.cards.toml").write_text('[[card]]\nfront = "Q?"\nback = "A."\n')
    with pytest.raises(ValueError, match="no source"):
        cards.item_cards("x1-thing", tmp_path)
    (tmp_path / "x1_thing.cards.toml").write_text(
        '[[card]]\nfront = "Q?"\nback = "A."\nsource = "S 2020"\nanswer = "x"\n')
    with pytest.raises(ValueError, match="unknown fields"):
        cards.item_cards("x1-thing", tmp_path)


# --- counts computed from the content ------------------------------------------------------

def _tiny_course(tmp_path):
    nb = {"cells": [
        {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": "# A title\nOne two three $x^2 + y$ four `code here`."},
        {"cell_type": "code", "id": "c1", "metadata": {}, "source": "print('not prose at all')", "outputs": [],
         "execution_count": None},
        {"cell_type": "markdown", "id": "m2", "metadata": {}, "source": "$$\\sum_i a_i$$\nFive [six](https://x.org/y) <b>seven</b>"},
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "release" / "a").mkdir(parents=True)
    (tmp_path / "release" / "a" / "x1-thing.ipynb").write_text(json.dumps(nb))
    cards_dir = tmp_path / "cards"
    cards_dir.mkdir()
    (cards_dir / "x1_thing.cards.toml").write_text(
        "".join(f'[[card]]\nfront = "Q{i}?"\nback = "A."\nsource = "S 2020"\n' for i in range(3)))
    chapter = Chapter("X", "Tiny", "M1", "draft", {"basics": ("a/x1-thing",)}, ("one", "two"))
    return chapter, cards_dir


def test_counts_are_computed_from_the_notebook_and_the_cards(tmp_path):
    """Words are the markdown prose only (formulas, code, tags, link targets left out); cards are counted."""
    chapter, cards_dir = _tiny_course(tmp_path)
    counts = cards.content_counts(tmp_path, chapter, cards_dir)
    # "A title One two three four" + "Five six seven"
    assert counts["reading"]["words"] == 9
    assert counts["reading"]["minutes"] == 1 and counts["reading"]["words_per_minute"] == 200
    assert counts["cards"] == 3 and counts["concepts"] == 2
    assert cards.minutes(200) == 1 and cards.minutes(201) == 2 and cards.minutes(0) == 0


def test_chapter_counts_equal_the_declared_cards_and_the_released_prose():
    """Each chapter's card count is the number of [[card]] tables of its items; words add up per item."""
    for chapter in load_chapters(ROOT):
        counts = cards.content_counts(ROOT, chapter)
        declared = 0
        for nb in chapter.notebooks:
            path = cards.cards_file(nb.split("/")[-1])
            if path.exists():
                declared += len(tomllib.loads(path.read_text()).get("card", []))
        assert counts["cards"] == declared
        assert counts["concepts"] == len(chapter.concepts)
        words = sum(cards.notebook_words(ROOT / "release" / f"{nb}.ipynb") for nb in chapter.notebooks)
        assert counts["reading"]["words"] == words
        assert counts["reading"]["minutes"] == math.ceil(words / 200)
        if chapter.id == "II.8":
            assert counts["cards"] > 0 and counts["reading"]["minutes"] > 30


# --- the Anki deck ---------------------------------------------------------------------------

def _read_apkg(path: Path, tmp_path: Path) -> dict:
    """Open the package as Anki would: a zip holding an SQLite collection."""
    with zipfile.ZipFile(path) as z:
        z.extract("collection.anki2", tmp_path)
    con = sqlite3.connect(tmp_path / "collection.anki2")
    try:
        guids = [row[0] for row in con.execute("select guid from notes")]
        decks = json.loads(con.execute("select decks from col").fetchone()[0])
        models = json.loads(con.execute("select models from col").fetchone()[0])
        card_count = con.execute("select count(*) from cards").fetchone()[0]
    finally:
        con.close()
    return {"guids": guids, "decks": {int(k): v["name"] for k, v in decks.items()},
            "models": set(map(int, models)), "cards": card_count}


def test_deck_ids_are_stable_across_exports(tmp_path):
    """Exporting twice gives the same deck id, model id and note guids; every card becomes one note."""
    chapter = next(c for c in load_chapters(ROOT) if c.id == "II.8")
    first = cards.export_chapter(chapter, tmp_path / "one")
    second = cards.export_chapter(chapter, tmp_path / "two")
    a = _read_apkg(first[0], tmp_path / "a")
    b = _read_apkg(second[0], tmp_path / "b")
    expected = len(cards.chapter_cards(chapter))
    assert len(a["guids"]) == expected == a["cards"] == first[2]
    assert len(set(a["guids"])) == expected          # no two notes share a guid
    assert sorted(a["guids"]) == sorted(b["guids"])
    assert a["decks"] == b["decks"] and a["models"] == b["models"]
    deck_id = cards.stable_id("deck:II.8")
    assert deck_id == 1485369842     # pinned: a student's Anki keeps one deck across the course's releases
    assert a["decks"][deck_id] == "II.8 Training at Scale"
    rows = (tmp_path / "one" / "II-8.csv").read_text().splitlines()
    assert len(rows) == expected + 1 and rows[0].startswith("chapter,item,strand,front,back,source,guid")
    assert (tmp_path / "one" / "II-8.csv").read_text() == (tmp_path / "two" / "II-8.csv").read_text()


def test_a_card_keeps_its_guid_when_its_back_is_edited():
    """The guid is made from chapter, item and front: mending a back updates the student's note."""
    card = cards.Card("b01-dataset", "What is a dataset?", "old", "S")
    mended = cards.Card("b01-dataset", "What is a dataset?", "new", "S2")
    other = cards.Card("b02-batch", "What is a dataset?", "old", "S")
    assert cards.note_guid("II.8", card) == cards.note_guid("II.8", mended)
    assert cards.note_guid("II.8", card) != cards.note_guid("II.8", other)
    assert cards.note_guid("II.8", card) != cards.note_guid("TDS", card)


def test_status_prints_the_three_counts():
    """`chapter status` shows concepts, flashcards and minutes of reading, and states the rate."""
    from graders.course.status import render
    chapter = next(c for c in load_chapters(ROOT) if c.id == "II.8")
    strands = {s: {"have": 0, "owed": 1} for s in ("basics", "concept", "theory", "mathematics", "practice")}
    record = {"id": "II.8", "title": "Training at Scale", "maturity": "M3", "state": "draft", "strands": strands,
              "worked": {"have": 0, "owed": 5}, "variants": {"have": 0, "owed": 4},
              "exercises": {"have": 0, "owed": 10}, "owes": 15, **cards.content_counts(ROOT, chapter)}
    text = render(record, ROOT)
    words = record["reading"]["words"]
    assert (f"{len(chapter.concepts)} concepts · {record['cards']} flashcards · "
            f"{math.ceil(words / 200)} minutes of reading ({words:,} words at 200 words a minute)") in text


def test_the_cards_command_writes_each_chapters_deck(tmp_path, capsys):
    """`chapter cards --out DIR`, as the README gives it, writes an .apkg and a CSV per chapter."""
    from graders.cli import main
    assert main(["cards", "--out", str(tmp_path)]) == 0
    written = capsys.readouterr().out
    for chapter in load_chapters(course_root()):
        assert f"{chapter.id}:" in written
    assert sorted(p.suffix for p in tmp_path.iterdir()).count(".apkg") == len(load_chapters(course_root()))
