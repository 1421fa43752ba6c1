"""The command line's start-up: what it imports, and what a check's zygote preloads."""
import subprocess
import sys
from pathlib import Path

from graders.engine.warm import preload_for
from graders.sandbox.zygote import PRELOAD

ROOT = Path(__file__).resolve().parents[1]


def test_the_command_line_skips_the_slow_iri_checker_and_still_validates_notebooks():
    code = ("import sys, time; import graders.cli; import nbformat; "
            "nb = nbformat.read('solutions/worked/w1-memory.ipynb', as_version=4); nbformat.validate(nb); "
            "print(sys.modules.get('rfc3987_syntax', 'absent'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "None"


def test_a_check_preloads_what_the_items_notebooks_import():
    def notebooks(item):
        return [ROOT / folder / f"{item}.ipynb" for folder in ("solutions", "release")]
    assert preload_for(notebooks("practice/p9-wsd-vs-cosine")) == ("torch", "torch._dynamo", "matplotlib",
                                                                  "matplotlib.pyplot", "IPython")
    assert "torch._dynamo" not in preload_for(notebooks("concept/c2-number-line"))
    assert "torch" not in preload_for(notebooks("worked/w1-memory"))
    assert preload_for([ROOT / "no-such-notebook.ipynb"]) == PRELOAD
