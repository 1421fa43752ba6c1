"""tds-p7-loss-spike-recovery: the harness is the notebook's, the plan is PaLM's recipe, and every
variant shows the spike and the three responses' difference.

Primary source: Chowdhery et al., "PaLM" (2022, arXiv 2204.02311), §5.1: "We re-started training
from a checkpoint roughly 100 steps before the spike started, and skipped roughly 200-500 data
batches, which cover the batches that were seen before and during the spike" (text checked against
a quotation of the section; the numbers are "roughly", so the test checks the plan against them
as a range).
"""
import inspect
import json
from pathlib import Path

from graders import problems
from graders.problems.tds_practice import tds_p7_loss_spike_recovery as module
from tests.problems.notebook_cells import cell_sources

P = problems.get("tds-p7-loss-spike-recovery")
NOTEBOOK = Path(__file__).resolve().parents[3] / "source" / "tds-practice" / "tds-p7-loss-spike-recovery.pct.py"


def test_the_notebook_holds_the_harness_verbatim():
    setup = cell_sources(NOTEBOOK)["setup"]
    for fn in (module.make_data, module.make_model, module.batch_of, module.train):
        assert inspect.getsource(fn).strip() in setup


def test_the_plan_at_palms_scale_lands_in_palms_ranges():
    # a spike at step 20,000, checkpoints every 100 steps, a margin of 100 and 100-400 batches past it
    for skip in (100, 250, 400):
        restore, skipped = module.reference_plan(20_000, 100, 100, skip)
        assert restore == 19_900                     # "roughly 100 steps before the spike"
        assert 200 <= skipped <= 500                 # "roughly 200-500 data batches"
        assert skipped >= 20_000 - restore           # covers the batches seen before the spike


def test_the_plan_never_restores_before_step_zero_or_after_the_margin():
    for spike, every, margin in ((7, 10, 20), (57, 10, 5), (130, 25, 20), (99, 20, 0)):
        restore, skipped = module.reference_plan(spike, every, margin, 3)
        assert 0 <= restore <= max(0, spike - margin) and restore % every == 0
        assert restore + skipped == spike + 3


def test_every_variant_spikes_and_the_responses_differ_as_the_notebook_says():
    for name, q in P.variants.items():
        r = P.solve(q)
        none, clip, rollback = r["spike_heights"]
        assert none > 5 and clip > 2, name                  # a real spike, and clipping does not remove it
        assert clip < none, name                            # clipping lowers it
        assert rollback < 2 and rollback < clip / 2, name   # the rollback keeps it off the held-out loss
        assert all(k > 0 for k in r["recovery_steps"]), name  # every run gets back below its base
        assert r["recovery_steps"][2] < r["recovery_steps"][0], name
        assert r["wasted_updates"] > 0, name
        key = json.dumps(module._read(q), sort_keys=True)
        rollbacks = module._run(key, "rollback")[2]
        assert [s for s, _, _ in rollbacks] == [q["poison_start"]], name   # fires once, at the onset


def test_replaying_the_batches_spikes_again():
    q = P.variants["A"]
    key = json.dumps(module._read(q), sort_keys=True)
    rollbacks = module._run(key, "rollback", "right", "replay")[2]
    assert len(rollbacks) == q["max_rollbacks"]
