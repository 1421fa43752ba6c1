"""The run's summary as the instructor reads it."""
from graders.engine.grading import NotebookResult, SubmissionResult
from graders.engine.summary import Report


def test_a_technical_zero_says_how_many_reasons_it_does_not_print():
    """Two reasons a line; a third is counted, never dropped without a word."""
    blank = NotebookResult("w1-memory", max_score=4.0, reasons=[
        "cell 11 raised NotImplementedError", "cell 14 raised NotImplementedError",
        "cell 17 raised NotImplementedError"])
    two = NotebookResult("w2-compute", max_score=4.0, reasons=["cell 14 raised NotImplementedError",
                                                                "cell 17 raised NotImplementedError"])
    report = Report("worked", results={"bob": SubmissionResult("bob", "k", [blank, two])})
    lines = [line for line in report.summary().splitlines() if "raised" in line]
    assert lines == [
        "  bob  w1-memory: cell 11 raised NotImplementedError; cell 14 raised NotImplementedError; and 1 more "
        "(`chapter report` lists them)",
        "  bob  w2-compute: cell 14 raised NotImplementedError; cell 17 raised NotImplementedError"]
