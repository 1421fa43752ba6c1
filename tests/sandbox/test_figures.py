"""A run for its grades only builds every figure but leaves out its image; nothing else changes."""
import json

import pytest

from graders.sandbox import zygote as zygote_module
from graders.sandbox.zygote import Limits, Zygote
from tests.namespaces import namespaces_permitted

FIGURE = ("import matplotlib.pyplot as plt\n"
          "fig, ax = plt.subplots()\n"
          "ax.plot([1, 2, 3], [1, 4, 9]); ax.set_yscale('log'); ax.set_title('$x^2$')\n"
          "plt.show()\n"
          "lines = len(fig.axes[0].lines)\n"
          "bottom = round(float(fig.axes[0].get_ylim()[0]), 6)\n")


def job(source, keys):
    """A job of one cell, then a test cell that reads `keys` back."""
    return {"cells": [{"index": 0, "source": source},
                      {"index": 1, "source": "pass", "test": "t", "keys": keys}], "env": {}}


JOB = job(FIGURE, ["lines", "bottom"])
LIMITS = Limits(cell_seconds=30, notebook_seconds=60)


def mimes(run):
    return [set(o.get("data", {})) for o in run.cells[0]["outputs"] if o.get("output_type") == "display_data"]


@pytest.mark.skipif(not namespaces_permitted(), reason="needs namespaces")
def test_figures_drawn_only_leave_out_the_image_and_nothing_else():
    with Zygote(preload=("matplotlib.pyplot",)) as zygote:
        rendered = zygote.run(JOB, LIMITS)
        drawn = zygote.run({**JOB, "figures": "drawn"}, LIMITS)
    assert not rendered.cells[0]["raised"] and not drawn.cells[0]["raised"]
    assert any("image/png" in m for m in mimes(rendered))
    assert mimes(drawn) and not any("image/png" in m for m in mimes(drawn))
    assert all("text/plain" in m for m in mimes(drawn))          # the figure is still displayed, as text
    assert drawn.cells[1]["answers"] == rendered.cells[1]["answers"]
    assert drawn.cells[1]["answers"]["lines"] == 1


@pytest.mark.skipif(not namespaces_permitted(), reason="needs namespaces")
def test_a_zygote_that_did_not_preload_matplotlib_still_shows_a_notebooks_figure():
    """The light preload: a course's zygote imports only what its notebooks use; a cell that imports
    matplotlib anyway gets the inline backend, and its figure, on first import."""
    with Zygote(preload=("IPython",)) as zygote:
        run = zygote.run(JOB, LIMITS)
    assert not run.cells[0]["raised"], run.cells[0]["outputs"]
    assert any("image/png" in m for m in mimes(run))
    assert run.cells[1]["answers"]["lines"] == 1


TRAINING = ("import sys, torch\n"
            "before = 'torch._dynamo' in sys.modules\n"
            "w = torch.nn.Parameter(torch.ones(2)); w.grad = torch.ones(2)\n"
            "opt = torch.optim.SGD([w], lr=0.5); opt.step()\n"
            "after = float(w.detach().sum())\n")
TRAINING_JOB = job(TRAINING, ["before", "after"])


@pytest.mark.skipif(not namespaces_permitted(), reason="needs namespaces")
def test_torch_dynamo_is_warmed_only_when_preloaded_and_an_optimizer_works_either_way():
    """Only an assignment whose notebooks make an optimizer pays for torch._dynamo in the zygote;
    a cell that makes one anyway imports it itself and gets the same answer."""
    answers = {}
    for preload in (("torch", "IPython"), ("torch", "torch._dynamo", "IPython")):
        with Zygote(preload=preload) as zygote:
            run = zygote.run(TRAINING_JOB, LIMITS)
        assert not run.cells[0]["raised"], run.cells[0]["outputs"]
        answers[preload] = run.cells[1]["answers"]
    light, full = answers.values()
    assert light["before"] is False and full["before"] is True
    assert light["after"] == full["after"] == 1.0


COLLECTOR = ("import gc\n"
             "enabled = gc.isenabled()\n"
             "class Node:\n"
             "    pass\n"
             "a, b = Node(), Node(); a.other, b.other = b, a\n"
             "del a, b\n"
             "freed = gc.collect() > 0\n")


@pytest.mark.skipif(not namespaces_permitted(), reason="needs namespaces")
def test_the_cyclic_collector_is_on_in_the_sandbox_as_in_a_kernel():
    """The zygote preloads with the cyclic collector off (it would walk the growing heap over and
    over): the notebook's own process has it on, and a cycle the student drops is freed."""
    with Zygote(preload=("IPython",)) as zygote:
        run = zygote.run(job(COLLECTOR, ["enabled", "freed"]), LIMITS)
    assert not run.cells[0]["raised"], run.cells[0]["outputs"]
    assert run.cells[1]["answers"] == {"enabled": True, "freed": True}


MARKER = ("from matplotlib import font_manager\n"
          "seen = any(f.name == 'ChapterMarker' for f in font_manager.fontManager.ttflist)\n")


@pytest.mark.skipif(not namespaces_permitted(), reason="needs namespaces")
def test_matplotlibs_font_list_is_kept_from_one_zygote_to_the_next(tmp_path, monkeypatch):
    """Each zygote starts in a fresh scratch folder, where matplotlib would build its font list
    again: the first one's list is kept (FONT_CACHE) and the next zygote preloads with it."""
    cache = tmp_path / "cache"
    monkeypatch.setattr(zygote_module, "FONT_CACHE", str(cache))
    with Zygote(preload=("matplotlib.pyplot",)):
        pass
    kept = list(cache.glob("fontlist-v*.json"))
    assert len(kept) == 1
    listed = json.loads(kept[0].read_text())
    listed["ttflist"].append({**listed["ttflist"][0], "name": "ChapterMarker"})   # only a kept list has it
    kept[0].write_text(json.dumps(listed))
    with Zygote(preload=("matplotlib.pyplot",)) as zygote:
        run = zygote.run(job(MARKER, ["seen"]), LIMITS)
    assert not run.cells[0]["raised"], run.cells[0]["outputs"]
    assert run.cells[1]["answers"]["seen"] is True
