"""tds-b10-loss-spike: spikes flagged against a moving average that skips them, recovery in steps.

The PaLM numbers (about 20 spikes; restart roughly 100 steps before; skip roughly 200-500
batches, Chowdhery et al. 2022, section 5.1) are prose, not graded values; the test checks the
detector's definition on hand-made logs."""
import pytest

from graders import problems

P = problems.get("tds-b10-loss-spike")


def _q(losses, **kw):
    return {"first_step": 1000, "interval": 10, "ema_beta": 0.9, "spike_factor": 1.2, "tolerance": 0.02,
            "losses": losses, **kw}


def test_a_flat_log_has_no_spikes():
    assert P.solve(_q([2.0] * 10)) == {"spike_steps": [], "recovery_steps": []}


def test_a_two_row_spike_is_flagged_in_steps_and_recovery_is_counted_from_its_start():
    # reference 2.0; rows 3 and 4 are above 2.4; row 5 (2.3) is not flagged but not back within
    # 2% of 2.0; row 6 (2.03) is.
    r = P.solve(_q([2.0, 2.0, 2.0, 3.0, 2.6, 2.3, 2.03, 2.0]))
    assert r == {"spike_steps": [1030, 1040], "recovery_steps": [30]}


def test_flagged_losses_stay_out_of_the_reference():
    # a long spike: if the reference absorbed it, the fourth spike row would no longer be flagged
    losses = [2.0] * 4 + [4.0, 3.6, 3.2, 2.6] + [2.0] * 3
    assert P.solve(_q(losses))["spike_steps"] == [1040, 1050, 1060, 1070]


def test_a_log_that_never_recovers_is_an_error():
    with pytest.raises(ValueError):
        P.solve(_q([2.0, 2.0, 3.0, 3.0]))


def test_every_variant_has_two_spikes_of_several_rows():
    for q in P.variants.values():
        r = P.solve(q)
        assert len(r["recovery_steps"]) == 2 and len(r["spike_steps"]) >= 5
        assert all(s % q["interval"] == q["first_step"] % q["interval"] for s in r["spike_steps"])
