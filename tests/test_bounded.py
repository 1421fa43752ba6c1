"""Bounded calls: a time, memory and size bound on a forked child, nested ones included."""
import pytest

from graders.bounded import TooLarge, run_bounded


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
