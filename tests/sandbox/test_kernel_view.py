"""Student code sees what a Jupyter kernel would show it (issue 29): the notebook's folder on
sys.path, so a helper module an assignment ships beside its notebook imports; `!cmd` shell escapes
that run although the sandbox has no pseudo-terminal; and the notebook's own file in its folder.
Before, the import raised ModuleNotFoundError and `!ls` raised "out of pty devices", and the engine
scored a correct notebook 0 where plain nbgrader scored it full."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.namespaces import namespaces_permitted

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import json, sys
from graders.sandbox.zygote import Limits, Zygote
files = json.loads(sys.argv[1])
cells = [
    {"index": 0, "source": "import shipped_helper\\ncharge = shipped_helper.charge(3)"},
    {"index": 1, "source": "!echo from-the-shell; exit 3\\ncode = _exit_code\\nlisted = !ls\\nlisted = list(listed)"},
    {"index": 2, "source": "import os\\nhere = sorted(os.listdir('.'))"},
    {"index": 3, "source": "pass", "test": "t", "keys": ["charge", "code", "listed", "here"]},
]
with Zygote(preload=()) as zygote:
    run = zygote.run({"cells": cells, "env": {}, "files": files}, Limits(cell_seconds=20, notebook_seconds=60))
print(json.dumps({"raised": [run.cells[i]["raised"] for i in range(4)],
                  "shell": run.cells[1]["outputs"], "answers": run.cells[3]["answers"]}, default=str))
"""


@pytest.mark.skipif(not namespaces_permitted(), reason="needs namespaces")
def test_the_sandbox_gives_student_code_a_kernels_view(tmp_path):
    helper = tmp_path / "shipped_helper.py"
    helper.write_text("def charge(n):\n    return 1.602e-19 * n\n")
    notebook = tmp_path / "submitted.ipynb"
    notebook.write_text("{}")
    files = {"shipped_helper.py": str(helper), "hw.ipynb": str(notebook)}
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(files)], capture_output=True, text=True,
                          timeout=180, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["raised"] == [False, False, False, False], seen
    answers = seen["answers"]
    assert answers["charge"] == pytest.approx(3 * 1.602e-19)
    assert answers["code"] == 3                                    # `!cmd` records its exit status
    assert [o.get("text") for o in seen["shell"]] == ["from-the-shell\n"]
    listed = [entry["str"] for entry in answers["listed"]]             # `x = !cmd` reads its lines
    here = [entry["str"] for entry in answers["here"]]
    assert {"hw.ipynb", "shipped_helper.py"} <= set(listed) == set(here), (listed, here)
