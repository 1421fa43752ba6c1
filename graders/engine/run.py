"""One grading run's state in one object: what `chapter autograde`, its local pool, its Dask
cluster and `chapter serve` share, instead of a dozen values handed down by hand.

A `GradingRun` is built once, in the trusted grading process (`autograde._grade_course`, or
`serve.Service` once per assignment), and handed to whatever grades: the pool
(`local_pool.grade_locally`), the cluster (`cluster.grade_on_cluster`) and the service's
workers, which inherit it when they are forked. `accept` is the one way a graded submission
is kept: the run's journal, nbgrader's gradebook, the autograded folder, the run's report.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from graders.engine import feedback as say
from graders.engine.course_dir import Course
from graders.engine.grading import SubmissionResult
from graders.engine.journal import Journal
from graders.engine.record_io import record, write_autograded
from graders.engine.signals import uninterrupted
from graders.engine.summary import Report
from graders.sandbox.zygote import Limits


@dataclass
class GradingRun:
    """Everything one assignment's grading needs besides the submissions themselves."""
    course: Course
    limits: Limits
    journal: Journal
    report: Report
    late: object = None                           # nbgrader's late-penalty plugin (None: no penalties)
    keys: dict = field(default_factory=dict)      # student -> submission key (what the journal files under)
    progress: object = None                       # a progress bar (tqdm): one step per student finished
    workers: int = 1                              # local processes, or the cluster's workers once known
    scheduler: str | None = None                  # a Dask scheduler's address: grade on that cluster
    isolate: bool = True                          # sandbox namespaces and seccomp (False: tests only)
    allow_degraded: bool = False                  # grade even where an isolation layer is unavailable

    def finished(self) -> None:
        """One more student done (graded, reused or reported), for the progress bar."""
        if self.progress is not None:
            self.progress.update(1)

    def not_graded(self, student: str, why: str) -> None:
        """`student` is reported NOT GRADED, with why (no grade is recorded, never a 0)."""
        self.report.failed[student] = str(why)[:300]
        self.finished()

    def accept(self, gb, result: SubmissionResult, fresh: bool = True) -> bool:
        """Keep one graded submission: journal it (when `fresh`: not yet in the journal), record it
        in the gradebook, write its notebooks.

        A failure to record it is that student's alone: they are reported NOT GRADED, "could not
        be recorded" (no grade, never a 0), the others go on, and the journal keeps the grading,
        so the next run records it again without grading it again. False when it could not be
        recorded.
        """
        with uninterrupted():
            text = self.journal.result_text(result)     # recording reads the result, never changes it
            if fresh:
                self.journal.put(result, "graded", text)
            try:
                why = record(gb, self.course, result, self.late)
                write_autograded(self.course, result)
            except Exception as exc:  # noqa: BLE001 - one student's bad data never stops the class
                self.report.failed[result.student] = say.could_not_be_recorded(exc)
                return False
            if why:
                self.report.untimed[result.student] = why
            self.journal.put(result, "recorded", text)
            self.report.results[result.student] = without_text(result)
            return True


def without_text(result: SubmissionResult) -> SubmissionResult:
    """The result as the run's report keeps it: the autograded notebooks' text (figures included)
    is in autograded/ and the journal by now, so a class of any size costs this process no more
    than its scores and feedback."""
    return replace(result, notebooks=[replace(nb, notebook=None) for nb in result.notebooks])


def late_penalties(config):
    """nbgrader's late-penalty plugin as the course's nbgrader_config.py sets it up
    (`AssignLatePenalties.plugin_class`), for `record_io.record`."""
    from nbgrader.preprocessors import AssignLatePenalties

    from graders.engine.shared import silent_log
    late = AssignLatePenalties(config=config, log=silent_log)
    late.init_plugin()
    return late.plugin_inst
