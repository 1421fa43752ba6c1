"""The published solutions site, built for w1-memory only (each variant executed once)."""
import json
import re
import subprocess
import sys

import pytest

from graders.variants import LABELS, student_for


def render_site(root, out, items):
    """The site built in a process of its own, as `chapter site` would build it, so that the
    worker pools it starts leave nothing behind in the test process."""
    code = ("import json, sys; from pathlib import Path; from graders.site import render_site; "
            "print(json.dumps(render_site(Path(sys.argv[1]), Path(sys.argv[2]), items=sys.argv[3:])))")
    done = subprocess.run([sys.executable, "-c", code, str(root), str(out), *items],
                          capture_output=True, text=True, env={**__import__("os").environ,
                                                                "CHAPTER_ROOT": str(root)})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_site_for_w1_memory(scratch_course):
    out = scratch_course / "site"
    assert render_site(scratch_course, out, items=["w1-memory"]) == []
    index = (out / "index.html").read_text()
    assert "II.8 Training at Scale" in index and "mathematics" in index and "worked problems" in index
    for label in LABELS:
        assert f'href="worked/w1-memory/{label}.html"' in index
        page = (out / "worked" / "w1-memory" / f"{label}.html").read_text()
        # executed as a student of that variant: the setup cell's output names it
        assert f"Student {student_for(label, 'worked')}: variant {label}:" in page
        assert "BEGIN HIDDEN TESTS" not in page and "graders" not in page
        assert not re.search(r'<img[^>]+src="(?!data:)', page), "figures are embedded"
    assert (out / "worked" / "w1-memory" / "index.html").exists()
