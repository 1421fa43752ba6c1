"""The plan `make test` runs the suite by (tests/conftest.py) names files that exist.

A file renamed or moved would otherwise lose its group without a word: two files that add the same
real accounts would run side by side on the two workers, or a long file would start last.
"""
from tests import conftest


def test_every_file_the_plan_names_exists():
    named = [f for files in conftest.SHARED.values() for f in files] + list(conftest.FIRST)
    missing = [f for f in named if not (conftest.REPO / "tests" / f).is_file()]
    assert not missing, f"tests/conftest.py names files that do not exist: {missing}"


def test_a_file_of_a_shared_group_runs_with_its_group_and_another_file_alone():
    group, files = next(iter(conftest.SHARED.items()))
    assert conftest._unit(f"tests/{files[0]}::test_x") == group
    assert conftest._unit("tests/test_suite_plan.py::test_x") == "tests/test_suite_plan.py"
