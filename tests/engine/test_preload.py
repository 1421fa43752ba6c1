"""`chapter autograde`'s zygote preloads what the assignment's own notebooks import, not every library."""
import json

from graders.engine.warm import preload_for_assignment as _preload
from graders.sandbox.zygote import PRELOAD


def notebook(path, *sources):
    cells = [{"cell_type": "code", "metadata": {}, "source": s, "outputs": [], "execution_count": None}
             for s in sources]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))


def test_an_assignment_without_torch_does_not_preload_it(tmp_path):
    folder = tmp_path / "source" / "light"
    folder.mkdir(parents=True)
    notebook(folder / "a.ipynb", "import numpy as np\nx = np.arange(3)")
    notebook(folder / "b.ipynb", "from sympy import symbols")
    chosen = _preload(tmp_path, "light")
    assert "torch" not in chosen and "matplotlib" not in " ".join(chosen)
    assert {"numpy", "sympy", "IPython"} <= set(chosen)
    assert set(chosen) < set(PRELOAD)


def test_an_assignment_that_imports_torch_preloads_it(tmp_path):
    folder = tmp_path / "source" / "heavy"
    folder.mkdir(parents=True)
    notebook(folder / "a.ipynb", "import torch")
    assert "torch" in _preload(tmp_path, "heavy")


def test_without_a_source_to_read_everything_is_preloaded(tmp_path):
    assert _preload(tmp_path, "nowhere") == PRELOAD


def test_torch_dynamo_is_preloaded_only_for_notebooks_that_call_what_imports_it(tmp_path):
    """An optimizer's first call imports torch._dynamo (0.8 s): preloaded for an assignment that
    makes one, not for one that only uses tensors (nor for a word in a comment or a string)."""
    folder = tmp_path / "source" / "tensors"
    folder.mkdir(parents=True)
    notebook(folder / "a.ipynb", "import torch\n# the optimiser comes later: checkpoint_bytes = 12",
             "print('the GradScaler is not made here')")
    assert "torch" in _preload(tmp_path, "tensors") and "torch._dynamo" not in _preload(tmp_path, "tensors")
    for i, call in enumerate(("opt = torch.optim.AdamW(params)", "from torch.utils.checkpoint import checkpoint",
                              "from torch import optim", "scaler = torch.amp.GradScaler('cpu')")):
        folder = tmp_path / "source" / f"training{i}"
        folder.mkdir(parents=True)
        notebook(folder / "a.ipynb", "import torch", call)
        assert "torch._dynamo" in _preload(tmp_path, f"training{i}"), call
    folder = tmp_path / "source" / "no-torch"
    folder.mkdir(parents=True)
    notebook(folder / "a.ipynb", "import numpy as np\nx = optim.step")
    assert "torch._dynamo" not in _preload(tmp_path, "no-torch")
