"""The published solutions site, built for w1-memory only (each variant executed once)."""
import json
import re
import subprocess
import sys

import pytest

from graders.course.site import assigned_names, without_markers
from graders.variants import LABELS, student_for


def render_site(root, out, items):
    """The site built in a process of its own, as `chapter site` would build it, so that the
    worker pools it starts leave nothing behind in the test process. Returns (problems, stderr)."""
    code = ("import json, sys; from pathlib import Path; from graders.course.site import render_site; "
            "print(json.dumps(render_site(Path(sys.argv[1]), Path(sys.argv[2]), items=sys.argv[3:])))")
    done = subprocess.run([sys.executable, "-c", code, str(root), str(out), *items],
                          capture_output=True, text=True, env={**__import__("os").environ,
                                                                "CHAPTER_ROOT": str(root)})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


@pytest.fixture
def two_item_course(tmp_path, monkeypatch):
    """A scratch course holding w1-memory and e01-batching, of which only w1-memory is built."""
    from tests.conftest import copy_course
    root = copy_course(tmp_path, ["worked/w1-memory", "exercises/e01-batching"])
    monkeypatch.setenv("CHAPTER_ROOT", str(root))
    return root


@pytest.mark.slow
def test_site_for_w1_memory(two_item_course):
    """Each variant page shows the solution without markers, its values for that variant and
    links both ways; a partial build says so; no kernel prints ipykernel's TCP warning."""
    from graders.problems import get
    out = two_item_course / "site"
    problems, stderr = render_site(two_item_course, out, items=["w1-memory"])
    assert problems == []
    assert "without encryption" not in stderr, stderr[-2000:]
    index = (out / "index.html").read_text()
    assert "II.8 Training at Scale" in index and "mathematics" in index
    problem = get("w1-memory")
    for label in LABELS:
        assert f'href="worked/w1-memory/{label}.html"' in index
        page = (out / "worked" / "w1-memory" / f"{label}.html").read_text()
        # executed as a student of that variant: the setup cell's output names it
        assert f"Student {student_for(label, 'worked')}: variant {label}:" in page
        assert "BEGIN HIDDEN TESTS" not in page and "graders" not in page
        assert "BEGIN SOLUTION" not in page and "END SOLUTION" not in page
        assert "__site_show" not in page and "per_device_expr</span> <span class=\"o\">=" in page, \
            "the solution's own code is shown, not the code that shows its values"
        assert not re.search(r'<img[^>]+src="(?!data:)', page), "figures are embedded"
        assert not re.search(r'<script[^>]+src=|https?://cdn', page), "nothing is loaded from a CDN"
        # the reader sees the numbers of this variant, as the reference computes them
        answers = problem.solve(problem.variants[label])
        assert f"bytes_per_param = {answers['bytes_per_param']}" in page
        assert f"total_bytes = {answers['total_bytes']}" in page
        # links back to the item and the chapter index, and across to the other variants
        assert 'href="../../index.html"' in page and 'href="index.html"' in page
        assert all(f'href="{other}.html"' in page for other in LABELS if other != label)
        assert not re.search(r"<math[^>]*></math>", page), "formulas keep their MathML content"
        assert "<msub>" in page and not re.search(r"\$[^$\s<]+\$", re.sub(r"<(pre|code|style|script).*?</\1>", "",
                                                                          page, flags=re.S))
    item_page = (out / "worked" / "w1-memory" / "index.html").read_text()
    assert 'href="../../index.html"' in item_page
    # the item left out of this build is not called unpublished
    row = re.search(r"<tr>(?:(?!</tr>).)*e01-batching(?:(?!</tr>).)*</tr>", index, re.S).group(0)
    assert "not rendered in this partial build" in row and "no published solution" not in row
    assert "partial build" in index


def test_solution_markers_dropped_and_bound_names_found():
    """The site's view of a solution cell: markers gone, the names it binds listed in order."""
    source = "### BEGIN SOLUTION\na = 1\nb, (c, _d) = 2, (3, 4)\nx: int = 5\ny += 1\ndef f():\n    z = 1\n### END SOLUTION\n"
    assert without_markers(source) == "a = 1\nb, (c, _d) = 2, (3, 4)\nx: int = 5\ny += 1\ndef f():\n    z = 1\n"
    assert assigned_names(source) == ["a", "b", "c", "x", "y"]
    assert assigned_names("this is not python(") == []
