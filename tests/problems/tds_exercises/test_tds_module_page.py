"""Issue 27: the TDS module page (chapters.toml's concepts) claimed the NTK for tds-t1, which
mentions it in one sentence, and more about grokking and emergence than tds-b4 and tds-e2 teach."""
import re
import tomllib

from tests.conftest import REPO


def _tds_concepts():
    chapters = tomllib.loads((REPO / "chapters.toml").read_text())["chapter"]
    return next(c for c in chapters if c["id"] == "TDS")["concept"]


def test_the_module_page_claims_only_what_its_items_teach():
    """tds-t1 mentions the NTK in one sentence; tds-b4 reads grokking off a log; tds-e2 derives
    emergence for a model, not from measured language models. Their concepts say so."""
    limits = {"Neural Tangent Kernel": r"not derived", "Grokking": r"not taught",
              "Emergent Abilities": r"not measured"}
    concepts = _tds_concepts()
    for topic, limit in limits.items():
        concept = next(c for c in concepts if topic in c["name"])
        assert re.search(limit, concept["summary"]), (concept["name"], concept["summary"])
