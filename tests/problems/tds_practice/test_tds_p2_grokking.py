"""tds-p2-grokking: the notebook runs the module's harness, and every variant groks late, with the
norm falling through the delay, and does not grok without weight decay."""
import inspect
from pathlib import Path

from graders import problems
from graders.problems.tds_practice import tds_p2_grokking as module
from tests.problems.notebook_cells import cell_sources

P = problems.get("tds-p2-grokking")
NOTEBOOK = Path(__file__).resolve().parents[3] / "source" / "tds-practice" / "tds-p2-grokking.pct.py"


def test_the_notebook_holds_the_harness_verbatim():
    setup = cell_sources(NOTEBOOK)["setup"]
    for function in (module.make_split, module.grok_run):
        assert inspect.getsource(function).strip() in setup


def test_the_optimiser_is_power_et_als():
    # Power et al. 2022's released code (github.com/openai/grok, grok/training.py,
    # configure_optimizers) builds AdamW with betas=(0.9, 0.98), eps=1e-8; Nanda et al. 2023 use the
    # same betas. The harness must use them, full batch.
    source = inspect.getsource(module.grok_run)
    assert "betas=(0.9, 0.98)" in source and "torch.optim.AdamW" in source
    assert "x[train]" in source                      # every training pair in every step


def test_the_reference_first_step_agrees_with_the_plain_reading():
    for call in module.probe_calls(P.variants["A"]):
        steps, values, thr = call
        plain = next((s for s, v in zip(steps, values) if v >= thr), -1)
        assert module.reference_first_step(*call) == plain
    # the probes can tell every declared slip of first_step from the right function
    calls = module.probe_calls(P.variants["B"])
    right = [module.reference_first_step(*c) for c in calls]
    for kind in ("index", "strict", "never-last"):
        assert [module.slipped_first_step(*c, kind) for c in calls] != right, kind


def test_every_variant_groks_late_with_the_norm_falling_and_not_without_weight_decay():
    # Power et al. 2022, Fig. 1: training accuracy saturates long before validation accuracy;
    # Liu et al. 2023 (Omnigrok), Fig. 1: generalising solutions sit at a smaller weight norm than
    # memorising ones, so a large-norm start generalises only after the norm has fallen;
    # Nanda et al. 2023: no grokking without weight decay within the budget.
    for name, q in P.variants.items():
        r = P.solve(q)
        assert r["fit_step"] >= 0 and r["generalise_step"] > 0, name
        assert r["generalise_step"] >= 5 * r["fit_step"], (name, r["fit_step"], r["generalise_step"])
        assert r["delay_steps"] == r["generalise_step"] - r["fit_step"]
        assert r["norm_at_generalise"] < 0.9 * r["norm_at_fit"], name
        logs, logs_no_wd = module.runs(q)
        at_fit = logs["step"].index(r["fit_step"])
        at_gen = logs["step"].index(r["generalise_step"])
        # the test accuracy is still near chance for a while after the fit: a delayed jump
        assert logs["test_acc"][at_fit + (at_gen - at_fit) // 3] < 0.3, name
        assert r["generalise_step_no_wd"] == -1, name
        assert max(logs_no_wd["test_acc"]) < 0.3, name
        assert r["norm_end_no_wd"] > 1.5 * r["norm_at_generalise"], name
