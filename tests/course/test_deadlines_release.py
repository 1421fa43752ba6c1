"""The due date in each released notebook's header (issue 30): `chapter build` puts it there from
deadlines.toml, `chapter build --check` sees it go stale, `chapter deadlines` says when the release
shows an old date, and the header changes no grade, kept, edited or deleted."""
from datetime import datetime

import nbformat
import pytest

from graders.course import deadlines as dl
from tests.conftest import REPO, copy_course

ITEM = "worked/w1-memory"
RELEASED = f"release/{ITEM}.ipynb"
POLICY = """
[penalty]
per = "day"
kind = "fraction"
amount = 0.1
cap = 0.5
grace_minutes = 5

[due]
worked = 2026-11-20T17:00:00Z
"""


def test_the_header_says_the_due_date_the_schedule_and_the_extension():
    policy = dl.parse(POLICY)
    text = dl.release_text(policy, "worked")
    assert text.startswith("**Due:** 2026-11-20 17:00 UTC.")
    assert ("Work handed in more than 5 minutes after the due date loses 10% of the notebook's score for "
            "each day, or part of a day, late, at most 50%, and never more than it scored.") in text
    assert "extension granted to you moves your own due date; your feedback shows it" in text
    assert dl.release_text(policy, "basics") == "" and dl.release_text(None, "worked") == ""
    assert dl.release_cell(policy, "basics") is None
    cell = dl.release_cell(policy, "worked")
    assert cell.id == dl.HEADER_ID and cell.cell_type == "markdown" and "nbgrader" not in cell.metadata
    assert cell.metadata["editable"] is False and cell.metadata["deletable"] is False
    assert cell.metadata["deadline"] == {"due": "2026-11-20T17:00:00"}
    # a date alone is 23:59:59 that day, shown to the second
    assert dl.release_text(dl.parse("[due]\nworked = 2026-11-20\n"), "worked").startswith(
        "**Due:** 2026-11-20 23:59:59 UTC.")


@pytest.mark.parametrize("penalty, sentence", [
    ("", "Work handed in after the due date loses nothing for being late."),
    ('per = "hour"\nkind = "points"\namount = 1\ncap = 4\n',
     "Work handed in after the due date loses 1 point for each hour, or part of an hour, late, at most 4 points, "
     "and never more than it scored."),
    ('per = "hour"\nkind = "points"\namount = 0.5\n',
     "Work handed in after the due date loses 0.5 points for each hour, or part of an hour, late, "
     "and never more than it scored."),
    ('kind = "fraction"\namount = 0.25\n',
     "Work handed in after the due date loses 25% of the notebook's score for each day, or part of a day, late, "
     "and never more than it scored."),
    ('amount = 0\n', "Work handed in after the due date loses nothing for being late."),
])
def test_the_schedule_in_one_sentence(penalty, sentence):
    text = (f"[penalty]\n{penalty}" if penalty else "") + "[due]\nhw = 2026-11-20T17:00:00Z\n"
    assert dl.schedule_sentence(dl.parse(text).schedule) == sentence


def test_the_release_steps_are_nbgraders_own_with_the_header_added():
    """nbgrader_config.py lists nbgrader's default GenerateAssignment steps whole, in order."""
    from nbgrader.converters import GenerateAssignment

    from graders.engine.course_dir import load_config
    configured = list(load_config(REPO).GenerateAssignment.preprocessors)
    default = [f"{p.__module__.rsplit('.', 1)[0]}.{p.__name__}" for p in GenerateAssignment.preprocessors.default()]
    assert configured.count("graders.course.deadlines.DueDateInRelease") == 1
    assert [p for p in configured if p != "graders.course.deadlines.DueDateInRelease"] == default


def release_cells(root):
    return nbformat.read(root / RELEASED, as_version=4).cells


@pytest.mark.slow
def test_build_puts_the_due_date_in_the_release_and_the_check_follows_deadlines_toml(tmp_path, capsys):
    """No deadlines.toml: the release is the committed one, byte for byte. A due date: `chapter build
    --check` says the release is out of date (not the solution), `chapter build` writes the header
    as the first cell, the rest unchanged; a moved date is stale again, and `chapter deadlines`
    says so; a malformed file is an error and nothing is written."""
    from graders.cli import main
    from graders.course.gate import build_fingerprint
    root = copy_course(tmp_path, [ITEM])
    committed = (REPO / RELEASED).read_bytes()
    assert main(["build", "--check", "--course", str(root)]) == 0
    assert main(["build", "--course", str(root)]) == 0
    assert (root / RELEASED).read_bytes() == committed
    fingerprint = build_fingerprint(root)

    (root / dl.FILE).write_text(POLICY)
    assert build_fingerprint(root) != fingerprint                 # the gate's cached check is stale too
    capsys.readouterr()
    assert main(["build", "--check", "--course", str(root)]) == 1
    out = capsys.readouterr().out
    assert f"{RELEASED} is out of date with source/" in out and "solutions/" not in out
    assert main(["build", "--course", str(root)]) == 0
    first, *rest = release_cells(root)
    assert first.id == dl.HEADER_ID and first.source == dl.release_text(dl.parse(POLICY), "worked")
    assert rest == nbformat.read(REPO / RELEASED, as_version=4).cells
    assert (root / f"solutions/{ITEM}.ipynb").read_bytes() == (REPO / f"solutions/{ITEM}.ipynb").read_bytes()
    assert main(["build", "--check", "--course", str(root)]) == 0

    # chapter deadlines: silent about a release that shows the date it applies ...
    capsys.readouterr()
    assert main(["deadlines", "--course", str(root)]) == 0
    assert "release/worked" not in capsys.readouterr().out
    # ... and says when it applies another one
    (root / dl.FILE).write_text(POLICY.replace("2026-11-20T17", "2026-11-22T17"))
    assert main(["deadlines", "--course", str(root)]) == 0
    assert ("release/worked shows the old due date: run chapter build, then nbgrader release_assignment worked"
            in capsys.readouterr().out.splitlines())
    assert main(["build", "--check", "--course", str(root)]) == 1
    assert f"{RELEASED} is out of date" in capsys.readouterr().out
    (root / dl.FILE).write_text(POLICY.replace("amount = 0.1", "amount = 0.2"))   # the schedule alone
    assert main(["deadlines", "--course", str(root)]) == 0
    assert "release/worked shows the old late-penalty schedule" in capsys.readouterr().out
    assert main(["build", "--check", "--course", str(root)]) == 1

    # malformed: a clear error, nothing written
    before = (root / RELEASED).read_bytes()
    (root / dl.FILE).write_text("[penalty\n")
    capsys.readouterr()
    for check in ([], ["--check"]):
        assert main(["build", *check, "--course", str(root)]) == 2
        err = capsys.readouterr().err
        assert "not valid TOML" in err and "nothing was written" in err and "Traceback" not in err
    assert (root / RELEASED).read_bytes() == before

    # no due date for this assignment: the release is the committed one again
    (root / dl.FILE).write_text("[due]\nbasics = 2026-11-20T17:00:00Z\n")
    assert main(["deadlines", "--course", str(root)]) == 0
    assert ("release/worked still shows a due date deadlines.toml no longer gives: run chapter build, "
            "then nbgrader release_assignment worked") in capsys.readouterr().out
    assert main(["build", "--course", str(root)]) == 0
    assert (root / RELEASED).read_bytes() == committed


@pytest.mark.slow
def test_the_header_comes_from_nbgraders_own_command(tmp_path):
    """`nbgrader generate_assignment` run in the course (as an instructor may) gives the same header."""
    from graders.engine.scratch import make_course
    from tests.warm_nbgrader import nbgrader
    (tmp_path / "root").mkdir()
    root = copy_course(tmp_path / "root", [ITEM])
    (root / dl.FILE).write_text(POLICY)
    course = make_course(root, tmp_path / "course", only=["worked"])
    nbgrader("generate_assignment", "worked", "--force", cwd=course)
    first = release_cells(course)[0]
    assert first.id == dl.HEADER_ID and first.source.startswith("**Due:** 2026-11-20 17:00 UTC.")
    assert dl.parse(POLICY).due["worked"] == datetime.fromisoformat(first.metadata["deadline"]["due"])


def test_the_gate_and_publish_name_a_malformed_deadlines_toml(tmp_path, capsys):
    """The gate's drift check, whole or for one item, gives a malformed file as its reason (no
    traceback), and `chapter publish` refuses before building anything."""
    import json

    from graders.cli import main
    from graders.course import contract
    from graders.course.gate import CACHE, build_reasons, fingerprint, gate
    root = copy_course(tmp_path, [ITEM])
    (root / dl.FILE).write_text("[due]\nworked = 'friday'\n")
    [reason] = build_reasons(root)
    assert reason.startswith("release/ cannot be checked:") and "not a date" in reason
    assert build_reasons(root, only=["w1-memory"]) == [reason]
    # one item whose verdict is current: the gate grades nothing, and still says it
    verdict = {"id": "w1-memory", "notebook": ITEM, "solution": dict.fromkeys("ABCD", True),
               "blank_zero": True, "reasons": [], "fingerprint": fingerprint(root, ITEM)}
    (root / CACHE).parent.mkdir(exist_ok=True)
    (root / CACHE).write_text(json.dumps({"w1-memory": verdict}))
    [chapter] = contract.load_chapters(root)
    reasons, _ = gate(root, chapter, only=["w1-memory"])
    assert reasons == [reason]
    before = (root / RELEASED).read_bytes()
    assert main(["publish", "II.8", "--course", str(root)]) == 1
    out = capsys.readouterr().out
    assert "publish II.8: refused;" in out and "not a date" in out
    assert (root / RELEASED).read_bytes() == before


@pytest.mark.parametrize("minor", [4, 5])
def test_the_preprocessor_on_any_nbformat_4_notebook(tmp_path, minor):
    """Once, first, valid: a notebook older than nbformat 4.5 gets the cell without an id (found by
    its metadata); run twice, there is still one header; no due date or no assignment: unchanged;
    a malformed file: the error, as nbgrader shows it."""
    from traitlets.config import Config
    config = Config()
    config.CourseDirectory.root = str(tmp_path)
    (tmp_path / dl.FILE).write_text(POLICY)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("the work")])
    nb.nbformat_minor = minor
    if minor < 5:
        del nb.cells[0]["id"]
    step = dl.DueDateInRelease(config=config)
    for _ in range(2):
        nb, _ = step(nb, {"nbgrader": {"assignment": "worked"}})
    nbformat.validate(nb)
    assert [dl.is_release_header(c) for c in nb.cells] == [True, False]
    assert ("id" in nb.cells[0]) == (minor >= 5)
    assert nb.cells[0].source.startswith("**Due:** 2026-11-20 17:00 UTC.")
    for resources in ({"nbgrader": {"assignment": "basics"}}, {}):
        plain = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("x")])
        assert len(step(plain, resources)[0].cells) == 1
    (tmp_path / dl.FILE).write_text("[penalty\n")
    with pytest.raises(dl.DeadlineError, match="not valid TOML"):
        step(nbformat.v4.new_notebook(), {"nbgrader": {"assignment": "worked"}})
