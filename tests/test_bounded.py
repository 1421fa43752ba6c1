"""Bounded calls: a time, memory and size bound on a forked child, nested ones included."""
import os
import time

import pytest

from graders.bounded import BoundedChild, Timeout, TooLarge, run_bounded


def _inner():
    return 1


def _outer_that_grew():
    hog = bytearray(300 << 20)   # the grading child allocates after its own cap was set
    return run_bounded(_inner, timeout=10), len(hog) > 0


def test_a_bounded_call_inside_a_grown_bounded_call_still_answers():
    """A comparison inside a problem's grading is answered, not lost as 'the computation died'."""
    assert run_bounded(_outer_that_grew, timeout=30) == [1, True]


def _hog():
    return len(bytearray(3 << 30))


def test_the_inner_call_keeps_the_outer_memory_bound():
    """Nested, the inner child cannot allocate past the outer child's cap."""
    def outer():
        try:
            run_bounded(_hog, timeout=10)
        except RuntimeError as exc:
            return str(exc)
        return "allocated"
    assert run_bounded(outer, timeout=30, memory_bytes=1 << 30) == "ran out of memory"


def test_an_answer_past_its_size_bound_is_refused():
    with pytest.raises(TooLarge):
        run_bounded(lambda: "x" * 5000, max_output=1000)


def _answer(request):
    if request.get("sleep"):
        time.sleep(request["sleep"])
    if request.get("hog"):
        return len(bytearray(3 << 30))
    if request.get("big"):
        return "x" * request["big"]
    if request.get("raise"):
        raise ValueError("refused")
    if request.get("exit"):
        os._exit(3)
    return {"pid": os.getpid(), "twice": request["n"] * 2}


def test_one_child_answers_many_requests_with_one_fork():
    with BoundedChild(_answer) as child:
        answers = [child.ask({"n": n}, timeout=10) for n in range(5)]
        pid = child.pid
    assert [a["twice"] for a in answers] == [0, 2, 4, 6, 8]
    assert {a["pid"] for a in answers} == {pid} and pid != os.getpid() and child.forks == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)      # killed and reaped: no zombie left


def test_a_request_past_a_bound_kills_the_child_and_the_next_gets_a_fresh_one():
    """Each request keeps run_bounded's bounds (time, size, memory); past one, the child is
    killed, and the next request is answered by a new child."""
    with BoundedChild(_answer, memory_bytes=1 << 30, max_output=1000) as child:
        first = child.ask({"n": 1}, timeout=10)["pid"]
        with pytest.raises(Timeout):
            child.ask({"sleep": 30}, timeout=0.5)
        assert child.pid is None
        second = child.ask({"n": 1}, timeout=10)["pid"]
        with pytest.raises(TooLarge):
            child.ask({"big": 5000}, timeout=10)
        with pytest.raises(RuntimeError, match="memory"):
            child.ask({"hog": True}, timeout=30)
        third = child.ask({"n": 1}, timeout=10)["pid"]
        assert len({first, second, third}) == 3 and child.forks == 3   # out of memory: an answer, not a kill


def test_an_error_is_reported_and_the_child_lives_on():
    with BoundedChild(_answer) as child:
        with pytest.raises(RuntimeError, match="refused"):
            child.ask({"raise": True}, timeout=10)
        pid = child.pid
        assert child.ask({"n": 2}, timeout=10)["pid"] == pid
        with pytest.raises(TypeError):   # not JSON: refused here, the child untouched
            child.ask({"n": object()}, timeout=10)
        assert child.pid == pid


def test_a_child_that_dies_is_told_at_once_and_replaced():
    with BoundedChild(_answer) as child:
        started = time.monotonic()
        with pytest.raises(RuntimeError, match="died"):
            child.ask({"exit": True}, timeout=30)
        assert time.monotonic() - started < 10 and child.pid is None
        assert child.ask({"n": 3}, timeout=10)["twice"] == 6


def test_a_child_whose_parent_closed_its_end_leaves():
    child = BoundedChild(_answer)
    pid = child.ask({"n": 1}, timeout=10)["pid"]
    os.close(child.to_child)
    deadline = time.monotonic() + 10
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        assert time.monotonic() < deadline, "the child did not leave at the end of its requests"
        time.sleep(0.05)
    child.pid = None
    os.close(child.from_child)
