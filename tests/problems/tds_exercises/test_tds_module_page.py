"""The TDS module page against its seed (issue 28): the counts the seed page prints are met by the
content, the ten concepts it names come first and in its order, each taught by items of the module
itself (not only by II.8's), and every concept's items exist. Issue 27's limits (a concept the
module only mentioned said so) are replaced by the items that now teach those concepts."""
import re
import tomllib

from graders.course.cards import content_counts
from graders.course.contract import find_chapter
from tests.conftest import REPO

SEED = REPO.parent / "shared" / "seeds" / "module-training-dynamics-and-scaling.txt"
# the seed page's own words, kept here so the test runs where ../shared is absent
PRINTED = {"concepts": 16, "flashcards": 157, "minutes": 135}
NAMED = ["Double Descent", "Emergent Abilities and Metric Artefacts", "Grokking and Delayed Generalisation",
         "Loss Spikes and Divergence", "Scaling Laws and the Chinchilla Correction", "The Critical Batch Size",
         "The Edge of Stability", "The Neural Tangent Kernel and Feature Learning",
         "Warmup-Stable-Decay Schedules", "muP and Hyperparameter Transfer"]


def _tds_concepts():
    chapters = tomllib.loads((REPO / "chapters.toml").read_text())["chapter"]
    return next(c for c in chapters if c["id"] == "TDS")["concept"]


def test_the_seed_page_says_what_this_test_holds_it_to():
    if not SEED.exists():
        return
    text = SEED.read_text()
    for label, number in PRINTED.items():
        assert re.search(rf"\b{number}\s*{label}", text), (label, number)
    for name in NAMED:
        assert name in text, name


def test_the_module_meets_the_counts_its_page_prints():
    tds = find_chapter("TDS", REPO)
    counts = content_counts(REPO, tds)
    assert counts["concepts"] >= PRINTED["concepts"], counts["concepts"]
    assert counts["cards"] >= PRINTED["flashcards"], counts["cards"]
    assert counts["reading"]["minutes"] >= PRINTED["minutes"], counts["reading"]


def test_the_named_concepts_come_first_and_each_is_taught_by_the_module_itself():
    """Each of the ten concepts the page names links at least three TDS items (a definition, a derivation
    or theory, an experiment), or, where II.8 teaches it, one of its own beside at least two of II.8's;
    a concept only pointing elsewhere would be named, not taught."""
    concepts = _tds_concepts()
    assert [c["name"] for c in concepts[:len(NAMED)]] == NAMED
    tds_items = {nb.split("/")[-1] for nb in find_chapter("TDS", REPO).notebooks}
    for concept in concepts:
        own = [item for item in concept["items"] if item in tds_items]
        linked = [item for item in concept["items"] if item not in tds_items]
        enough = len(own) >= 3 or (own and len(linked) >= 2) if concept["name"] in NAMED else own
        assert enough, (concept["name"], own, linked)


def test_every_module_item_teaches_a_concept():
    taught = {item for c in _tds_concepts() for item in c["items"]}
    missing = [nb for nb in find_chapter("TDS", REPO).notebooks if nb.split("/")[-1] not in taught]
    assert not missing, missing
