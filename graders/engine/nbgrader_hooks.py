"""The preprocessors the course adds to nbgrader's autograde and feedback steps.

nbgrader does not tell a notebook whose submission it is grading. The hidden
tests need that to find the student's variant, so this preprocessor, run
before Execute, puts the student id into the environment the grading kernel
inherits: as CHAPTER_GRADED_STUDENT for the hidden tests, and as
JUPYTERHUB_USER, so that the notebook's own (locked) variant cell shows the
graded student's parameters, exactly as it did on that student's hub server. It also turns Python warnings off in that kernel: nbgrader scores a
test cell 0 for any output on stderr, and a harmless torch or sympy warning
must not cost a correct answer its marks.

SaveAutoGradesForAPerson is nbgrader's SaveAutoGrades, except that a test cell whose hidden test
could not decide an answer (it leaves a mark in the cell's outputs, graders.notebook) gets no
automatic score and waits in formgrader, as `chapter autograde` leaves it: nbgrader would record
the points the undecided answer lacks as lost. A mark a student's code forges buys a person's
look at the cell, never points.

GetGradesMarkingWaits and FeedbackPage make the feedback page say "not graded yet" where nbgrader's
says "Score: 0.0": a cell no one has scored (a written answer before the instructor reads it, or a
test cell waiting for a person) has neither an automatic nor a manual score, and nbgrader's
`Grade.score` is then 0, so its page showed a 0 beside the cell's own line that it is not scored 0.
`chapter serve` releases this page seconds after a submission, before anyone grades by hand.

HiddenTestsOutOfTracebacks, run after Execute and again before feedback is made,
keeps the hidden tests out of what a student can read: when a test cell raises,
IPython's traceback quotes the lines around the failing one, the hidden region
among them, and nbgrader's ClearHiddenTests clears only the cell's source.
"""
import os
import re

from nbconvert.exporters import HTMLExporter
from nbgrader.preprocessors import ClearHiddenTests, GetGrades, NbGraderPreprocessor, SaveAutoGrades

from graders.feedback import UNDECIDED_MIME, points
from graders.notebook import STUDENT_ENV


class GradedStudent(NbGraderPreprocessor):
    def preprocess(self, nb, resources):
        os.environ[STUDENT_ENV] = resources["nbgrader"]["student"]
        os.environ["JUPYTERHUB_USER"] = resources["nbgrader"]["student"]
        os.environ["PYTHONWARNINGS"] = "ignore"
        return nb, resources


ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
GRADERS = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
QUOTED = re.compile(r"^\s*(?:-*>\s*)?\d+\s")   # "      4 " or "----> 2 " before a quoted line


class HiddenTestsOutOfTracebacks(ClearHiddenTests):
    """Every line of a cell's hidden-test region dropped from the tracebacks in its outputs.

    The delimiters are ClearHiddenTests' own (configured there); the source is left as it is,
    for ClearHiddenTests to clear where the step clears it.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type != "code" or self.begin_test_delimeter not in cell.source:
            return cell, resources
        hidden, inside = set(), False
        for line in cell.source.split("\n"):
            if self.begin_test_delimeter in line:
                inside = True
            if inside and line.strip():
                hidden.add(line.strip())
            if self.end_test_delimeter in line:
                inside = False
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":   # and no frame of the grading library's own code
                output["traceback"] = [self._visible(entry, hidden) for entry in output.get("traceback", [])
                                       if GRADERS not in ANSI.sub("", entry)]
        return cell, resources

    @staticmethod
    def _visible(entry: str, hidden: set) -> str:
        def shown(line):
            plain = ANSI.sub("", line)
            return QUOTED.sub("", plain, count=1).strip() not in hidden and plain.strip() not in hidden
        return "\n".join(line for line in entry.split("\n") if shown(line))


class SaveAutoGradesForAPerson(SaveAutoGrades):
    def _add_score(self, cell, resources):
        super()._add_score(cell, resources)
        if not any(output.get("output_type") == "display_data" and UNDECIDED_MIME in output.get("data", {})
                   for output in cell.get("outputs", [])):
            return
        grade = self.gradebook.find_grade(cell.metadata["nbgrader"]["grade_id"], self.notebook_id,
                                          self.assignment_id, self.student_id)
        grade.auto_score = None
        grade.needs_manual_grade = True
        self.gradebook.db.commit()


NOT_GRADED = "not_graded_yet"    # in the page's resources: {grade id: points} of the cells no one scored


class GetGradesMarkingWaits(GetGrades):
    """nbgrader's GetGrades, noting in the resources each cell that no one has scored yet."""

    def _get_score(self, cell, resources):
        grade = self.gradebook.find_grade(cell.metadata["nbgrader"]["grade_id"], self.notebook_id,
                                          self.assignment_id, self.student_id)
        cell.metadata.nbgrader["score"] = grade.score
        cell.metadata.nbgrader["points"] = grade.max_score
        if grade.auto_score is None and grade.manual_score is None:
            resources["nbgrader"].setdefault(NOT_GRADED, {})[grade.name] = float(grade.max_score or 0)


class FeedbackPage(HTMLExporter):
    """nbgrader's feedback page, where each cell noted by GetGradesMarkingWaits reads "not graded
    yet" (in the list at the top and in the cell's header), and the notebook's score says how many
    points wait. The page is nbgrader's template's; only those three places change."""

    def from_notebook_node(self, nb, resources=None, **kw):
        page, resources = super().from_notebook_node(nb, resources, **kw)   # the preprocessors run here
        waits = (resources.get("nbgrader") or {}).get(NOT_GRADED)
        return not_graded_shown(page, waits or {}), resources


_SCORE = r"Score: -?[0-9.]+ / ([0-9.]+)"
_TOTAL = re.compile(r"(<h4>[^<]*)\(Score: (-?[0-9.]+) / ([0-9.]+)\)(</h4>)")


def not_graded_shown(page: str, waits: dict[str, float]) -> str:
    """The feedback page with each cell of `waits` (grade id: points) shown as not graded yet."""
    if not waits:
        return page
    for grade_id in waits:
        anchor = re.escape(grade_id)
        page = re.sub(rf'(<a href="#{anchor}">[^<]*</a>) \({_SCORE}\)', r"\1 (not graded yet, out of \2)", page, count=1)
        page = re.sub(rf'(<a name="{anchor}"></a>\s*<div class="panel-heading">(?:(?!</div>).)*?){_SCORE}',
                      r"\1Not graded yet (out of \2)", page, count=1, flags=re.DOTALL)
    waiting = sum(waits.values())
    return _TOTAL.sub(lambda m: f"{m[1]}(Score: {m[2]} / {m[3]}; {points(waiting)} not graded yet){m[4]}", page, count=1)
