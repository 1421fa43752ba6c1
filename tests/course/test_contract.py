"""Chapters and contracts are data; status is computed from verdicts."""
import json

import pytest

from graders.course import contract
from graders.course.gate import ItemReport
from graders.course.status import chapter_status, render, shortfalls

from tests.conftest import REPO


def test_the_chapter_file_lists_ii8_with_its_strands():
    chapter = contract.find_chapter("II.8", REPO)
    assert chapter.title == "Training at Scale" and chapter.maturity == "M3"
    assert len(chapter.strands["mathematics"]) == 15


def test_m3_owes_what_the_curriculum_says():
    owes = contract.load_contracts(REPO)["levels"]["M3"]["owes"]
    assert owes == {"basics": 11, "concept": 2, "theory": 4, "mathematics": 15, "practice": 9,
                    "worked": 5, "exercises": 10, "variants": 4}


def _reports(passing):
    return {i: ItemReport(i, f"x/{i}", solution={v: True for v in "ABCD"}) for i in passing}


def test_an_item_counts_only_with_a_passing_solution_in_all_four_variants():
    assert ItemReport("w1-memory", "worked/w1-memory", solution={v: True for v in "ABCD"}).counts
    assert not ItemReport("w1-memory", "worked/w1-memory", solution={"A": True, "B": False}).counts
    assert not ItemReport("w1-memory", "worked/w1-memory", solution={v: True for v in "ABC"}).counts


def test_status_with_only_w1_owes_fourteen(scratch_course):
    chapter = contract.find_chapter("II.8", scratch_course)
    chapter = contract.Chapter(chapter.id, chapter.title, chapter.maturity, chapter.state,
                               {**chapter.strands, "mathematics": contract.find_chapter("II.8", REPO)
                                .strands["mathematics"]})
    status = chapter_status(scratch_course, chapter, _reports(["w1-memory"]))
    assert status["strands"]["mathematics"] == {"have": 1, "owed": 15}
    assert status["worked"] == {"have": 1, "owed": 5}
    assert status["owes"] == 14
    assert status["state"] == "draft"
    json.dumps(status)
    assert any("mathematics has 1 of 15" in line for line in shortfalls(status))


def test_a_failing_item_does_not_count(scratch_course):
    chapter = contract.find_chapter("II.8", scratch_course)
    reports = {"w1-memory": ItemReport("w1-memory", "worked/w1-memory",
                                       solution={"A": True, "B": True, "C": False, "D": True})}
    assert chapter_status(scratch_course, chapter, reports)["strands"]["mathematics"]["have"] == 0


def test_the_table_reads_like_the_chapter_page(scratch_course):
    chapter = contract.find_chapter("II.8", scratch_course)
    text = render(chapter_status(scratch_course, chapter, _reports(["w1-memory"])), scratch_course)
    lines = text.splitlines()
    assert lines[0] == "II.8 Training at Scale · M3 Load-bearing · draft"
    assert lines[4].split()[:2] == ["mathematics", "1/15"]
    assert "owes 14 more" in next(line for line in lines if line.lstrip().startswith("worked problems"))
    assert "flashcards" in lines[-1] and "minutes of reading" in lines[-1]


def test_set_state_rewrites_only_that_line(scratch_course):
    before = (scratch_course / "chapters.toml").read_text()
    contract.set_state("II.8", "published", scratch_course)
    after = (scratch_course / "chapters.toml").read_text()
    assert contract.find_chapter("II.8", scratch_course).state == "published"
    assert [a for a, b in zip(after.splitlines(), before.splitlines()) if a != b] == ['state = "published"']


def test_a_state_other_than_draft_or_published_is_refused(scratch_course):
    path = scratch_course / "chapters.toml"
    path.write_text(path.read_text().replace('state = "draft"', 'state = "done"'))
    with pytest.raises(ValueError):
        contract.load_chapters(scratch_course)
