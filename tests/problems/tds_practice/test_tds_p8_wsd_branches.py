"""tds-p8-wsd-branches: the harness is the notebook's, a branch is the stand-alone WSD run it
stands for, and every variant shows comparable losses, a decay drop and the compute saving.

Primary sources: Hu et al., MiniCPM (2024, arXiv 2404.06395), §4 (a decay of about 10% of the run);
Hägele et al. (2024, arXiv 2405.18392) (a linear cooldown of about 20% matches cosine). Those two
fractions are the ones II.8's p9-wsd-vs-cosine already cites; their section and figure numbers
were not re-verified here. The compute formula is checked on a sweep with both fractions.
"""
import inspect
import json
from pathlib import Path

import torch

from graders import problems
from graders.problems.common.schedules import wsd_lr
from graders.problems.tds_practice import tds_p8_wsd_branches as module
from tests.problems.notebook_cells import cell_sources

P = problems.get("tds-p8-wsd-branches")
NOTEBOOK = Path(__file__).resolve().parents[3] / "source" / "tds-practice" / "tds-p8-wsd-branches.pct.py"


def test_the_notebook_holds_the_harness_verbatim():
    setup = cell_sources(NOTEBOOK)["setup"]
    for fn in (module.make_task, module.cosine_lr, module.train_steps, module.evaluate, module.run_cosine,
               module.run_branches):
        assert inspect.getsource(fn).strip() in setup


def test_the_branch_schedule_is_ii8s_wsd_of_that_length():
    # II.8's wsd_lr(t, peak, floor, W, T, decay) with T = start + decay is the branch's schedule
    for start, decay in ((80, 20), (288, 32), (45, 15)):
        for t in range(0, start + decay + 10):
            assert abs(module.reference_lr(t, 0.05, 0.005, 12, start, decay)
                       - float(wsd_lr(t, 0.05, 0.005, 12, start + decay, decay))) < 1e-15


def test_compute_of_a_doubling_sweep_at_minicpm_and_hagele_fractions():
    lengths = [1000, 2000, 4000, 8000]
    for fraction in (0.1, 0.2):
        plan = module.reference_plan(lengths, fraction)
        wsd, cosine = module.reference_cost(plan, lengths)
        assert cosine == 15_000
        assert wsd == round(8000 * (1 - fraction) + fraction * 15_000)   # 8,700 at 10%, 9,400 at 20%


def test_a_branch_reproduces_a_stand_alone_wsd_run():
    q = module._read(P.variants["C"])
    plan = module.reference_plan(q["lengths"], q["decay_fraction"])
    torch.set_num_threads(1)
    results, updates = module.run_branches(q, plan, module.reference_lr)
    assert updates == module.reference_cost(plan, q["lengths"])[0]
    for (start, decay), (_, end) in zip(plan, results):
        alone, _ = module.run_branches(q, [[start, decay]], module.reference_lr)
        assert abs(alone[0][1] - end) <= 1e-12 * end


def test_every_variant_shows_the_effect():
    for name, q in P.variants.items():
        r = P.solve(q)
        for w, c in zip(r["wsd_losses"], r["cosine_losses"]):
            assert w < 1.2 * c, name                               # comparable: never far behind
        assert all(d > 0.05 * w for d, w in zip(r["decay_drops"], r["wsd_losses"])), name   # the drop
        wsd, cosine = r["compute_steps"]
        assert wsd < 0.7 * cosine, name                            # the saving
        key = json.dumps(module._read(q), sort_keys=True)
        assert module._branches(key, "right", "right")[1] == wsd, name
