"""A sandbox sees the Python installation at every name it is reached by."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graders.sandbox.zygote import sandbox_binds
from tests.namespaces import namespaces_permitted

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import json
from graders.sandbox.zygote import Limits, Zygote
source = ("import os, numpy\\n"
          "here = os.path.exists(numpy.__file__)\\n"
          "real = os.path.exists(os.path.realpath(numpy.__file__))\\n")
job = {"cells": [{"index": 0, "source": source},
                 {"index": 1, "source": "pass", "test": "t", "keys": ["here", "real"]}], "env": {}}
with Zygote(preload=()) as zygote:
    run = zygote.run(job, Limits(cell_seconds=20, notebook_seconds=60))
print(json.dumps(run.cells[1]["answers"]))
"""


def test_the_real_path_of_a_symlinked_installation_is_bound(tmp_path, monkeypatch):
    link = tmp_path / "venv"
    link.symlink_to(os.path.realpath(sys.prefix))
    monkeypatch.setattr(sys, "prefix", str(link))
    binds = sandbox_binds()
    assert str(link) in binds
    real = os.path.realpath(link)
    assert any(real == p or real.startswith(p.rstrip("/") + "/") for p in binds)


@pytest.mark.skipif(not namespaces_permitted(), reason="needs namespaces")
def test_a_sandbox_started_through_a_symlinked_venv_reaches_its_files(tmp_path):
    """Modules and caches name files by their real paths (matplotlib's font list, torch's lazy
    imports): inside the sandbox both the venv's name and its real path must resolve."""
    link = tmp_path / "venv"
    link.symlink_to(os.path.realpath(sys.prefix))
    python = link / "bin" / Path(sys.executable).name
    done = subprocess.run([str(python), "-c", CHILD], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"here": True, "real": True}
