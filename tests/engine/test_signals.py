"""signals.py on its own: SIGTERM and SIGINT stop a run cleanly, but never halfway through
recording one submission. Real signals, sent by this process to itself; no sandbox."""
from __future__ import annotations

import os
import signal
import threading

import pytest

from graders.engine import signals
from graders.engine.signals import Stopped, _on_stop_signal, stop_signals, uninterrupted


@pytest.fixture(autouse=True)
def clean_state():
    assert signals._STOP == {"critical": 0, "pending": None}
    yield
    assert signals._STOP == {"critical": 0, "pending": None}, "a run left its stop state behind"


def test_a_stop_outside_recording_stops_at_once():
    with pytest.raises(Stopped) as stop:
        _on_stop_signal(signal.SIGTERM, None)
    assert stop.value.signum == signal.SIGTERM
    assert not isinstance(stop.value, Exception)    # `except Exception` in a grader never swallows it


def test_a_stop_while_recording_waits_for_the_end_of_the_block():
    done = []
    with pytest.raises(Stopped) as stop:
        with uninterrupted():
            _on_stop_signal(signal.SIGINT, None)
            done.append("journal")
            done.append("gradebook")
    assert done == ["journal", "gradebook"] and stop.value.signum == signal.SIGINT


def test_nested_blocks_stop_only_when_the_outer_one_ends():
    done = []
    with pytest.raises(Stopped):
        with uninterrupted():
            with uninterrupted():
                _on_stop_signal(signal.SIGTERM, None)
            done.append("after the inner block")
    assert done == ["after the inner block"]


def test_the_last_of_two_stops_is_the_one_reported():
    with pytest.raises(Stopped) as stop:
        with uninterrupted():
            _on_stop_signal(signal.SIGINT, None)
            _on_stop_signal(signal.SIGTERM, None)
    assert stop.value.signum == signal.SIGTERM


def test_a_failure_inside_the_block_with_a_stop_pending_still_stops_and_keeps_the_failure():
    with pytest.raises(Stopped) as stop:
        with uninterrupted():
            _on_stop_signal(signal.SIGTERM, None)
            raise OSError("the disk is full")
    assert isinstance(stop.value.__context__, OSError)


def test_a_block_without_a_stop_ends_quietly():
    with uninterrupted():
        pass


def test_real_signals_are_turned_into_stopped_and_the_handlers_put_back():
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    for sig in (signal.SIGTERM, signal.SIGINT):
        with pytest.raises(Stopped) as stop:
            with stop_signals():
                assert signal.getsignal(sig) is _on_stop_signal
                os.kill(os.getpid(), sig)
                for _ in range(1000):       # the handler runs between bytecodes
                    pass
        assert stop.value.signum == sig
    assert {sig: signal.getsignal(sig) for sig in before} == before


def test_a_real_signal_while_recording_lets_the_recording_finish():
    done = []
    with pytest.raises(Stopped):
        with stop_signals():
            with uninterrupted():
                os.kill(os.getpid(), signal.SIGTERM)
                for _ in range(1000):
                    pass
                done.append("recorded")
            done.append("never")
    assert done == ["recorded"]


def test_outside_the_main_thread_the_handlers_are_left_alone():
    seen = []

    def run():
        with stop_signals():
            seen.append(signal.getsignal(signal.SIGTERM))

    before = signal.getsignal(signal.SIGTERM)
    worker = threading.Thread(target=run)
    worker.start()
    worker.join(10)
    assert seen == [before]


@pytest.mark.parametrize("arrives_after, sent", [(1, signal.SIGTERM), (3, signal.SIGINT)],
                         ids=["while-installing", "while-restoring"])
def test_a_stop_while_the_handlers_change_still_leaves_the_callers_handlers(monkeypatch, arrives_after, sent):
    """A signal between two `signal.signal` calls (after the first of the two installs, or the first
    of the two restores) must not leave `_on_stop_signal` installed for whoever runs next."""
    real = signal.signal
    seen = []
    originals = {sig: (lambda signum, frame: seen.append(signum)) for sig in (signal.SIGTERM, signal.SIGINT)}
    saved = {sig: real(sig, handler) for sig, handler in originals.items()}
    calls = []

    def interrupted(sig, handler):
        old = real(sig, handler)
        calls.append(sig)
        if len(calls) == arrives_after:
            os.kill(os.getpid(), sent)      # by then, `_on_stop_signal` is the handler of `sent`
        return old

    monkeypatch.setattr(signal, "signal", interrupted)
    try:
        with pytest.raises(Stopped) as stop:
            with stop_signals():
                for _ in range(1000):
                    pass
        assert stop.value.signum == sent
        assert {sig: signal.getsignal(sig) for sig in originals} == originals
        assert seen == []
    finally:
        for sig, handler in saved.items():
            real(sig, handler)
