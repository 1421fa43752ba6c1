"""nbgrader configuration for the course "II.8 Training at Scale".

Every nbgrader setting the course relies on is written out here, even where it
equals nbgrader's default, so that an instructor can read the whole setup in one place.
The engine's own sections (`c.ChapterSandbox`, `c.ChapterServe`) name only what this
course sets; README.md gives the others and their defaults.
The course folder is the instructor's alone (solutions, gradebook, submissions,
feedback): students never enter it. The exchange, which every student writes into,
is a folder of its own beside it (`<course>-exchange`), or wherever CHAPTER_EXCHANGE
names: on a hub, one root that several courses share, one folder per course under it,
as nbgrader lays out a shared exchange.
"""
import os
import tomllib

c = get_config()  # noqa: F821  (provided by traitlets when nbgrader loads this file)

here = os.path.dirname(os.path.abspath(__file__))

# --- the course and its folders ---------------------------------------------
# The course id is chapters.toml's `course_id`: this folder's, so that a folder made by
# `chapter course TDS DIR --id ID` (one chapter as a course of its own, beside this one on
# a hub) is the course ID. A folder whose chapters.toml names none is training-at-scale.
try:
    with open(os.path.join(here, "chapters.toml"), "rb") as listed:
        course_id = tomllib.load(listed).get("course_id", "training-at-scale")
except FileNotFoundError:
    course_id = "training-at-scale"
c.CourseDirectory.course_id = course_id
c.CourseDirectory.root = here
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "release"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.autograded_directory = "autograded"
c.CourseDirectory.feedback_directory = "feedback"
c.CourseDirectory.solution_directory = "solutions"
# The gradebook: SQLite in the course folder by default. A large course points
# CHAPTER_DB_URL at PostgreSQL (postgresql+psycopg://user:password@host/db) so
# that several graders and formgrader can write to it at once.
c.CourseDirectory.db_url = os.environ.get("CHAPTER_DB_URL") or "sqlite:///" + os.path.join(here, "gradebook.db")
# Percent-format source text (*.pct.py) carries the solutions: never copy it
# into a release, a submission or an autograded folder.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "*.pct.py"]
c.CourseDirectory.include = ["*"]
c.CourseDirectory.max_file_size = 100000  # kB

# --- the exchange: a folder of its own, outside the course ------------------------
# On a hub, name the root every single-user server mounts (and every course on the hub
# shares), e.g. CHAPTER_EXCHANGE=/srv/nbgrader/exchange, or write the path here.
c.Exchange.root = os.environ.get("CHAPTER_EXCHANGE") or here.rstrip(os.sep) + "-exchange"
c.Exchange.path_includes_course = True
# Every folder a student puts in the exchange is hostile: collect takes a submission only
# from the login it names (or the instructor's own account), follows no link, and sets the
# rest aside where `chapter autograde`, `chapter serve` and `chapter report` show it.
c.ExchangeFactory.collect = "graders.engine.exchange.CheckedCollect"
# On a hub serving several courses, every login can write into every course's inbound; set
# c.CheckedCollect.hub_enrolment = True there, and collect takes work only from logins the
# hub enrols in this course (its groups nbgrader-<course>, formgrade-<course>).

# --- delimiters (nbgrader's defaults, stated) -----------------------------------
c.ClearSolutions.begin_solution_delimeter = "BEGIN SOLUTION"
c.ClearSolutions.end_solution_delimeter = "END SOLUTION"
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
c.ClearHiddenTests.begin_test_delimeter = "BEGIN HIDDEN TESTS"
c.ClearHiddenTests.end_test_delimeter = "END HIDDEN TESTS"

# --- execution -------------------------------------------------------------------
c.Execute.timeout = 60          # seconds per cell
c.Execute.interrupt_on_timeout = True
c.Execute.execute_retries = 0
# Each notebook's CPU time in `chapter autograde`: this multiple of what its published solution
# takes in its slowest variant (measured by the gate), at least the floor, at most the
# sandbox's notebook_seconds (graders/engine/time_limits.py).
c.ChapterSandbox.time_multiple = 10.0
c.ChapterSandbox.time_floor = 30.0
c.LimitOutput.max_lines = 200
c.LimitOutput.max_traceback = 40

# --- autograding --------------------------------------------------------------------
c.Autograde.create_student = True
# GradedStudent tells the hidden tests which student (and so which variant) is
# being graded, and silences Python warnings, since nbgrader scores a test cell
# 0 for any output on stderr. HiddenTestsOutOfTracebacks drops the hidden tests'
# lines from a failing test cell's traceback, which formgrader and feedback show.
# SaveAutoGradesForAPerson is nbgrader's SaveAutoGrades, except that a test cell holding an
# answer the grader could neither prove right nor refute waits in formgrader, unscored.
c.Autograde.autograde_preprocessors = [
    "graders.engine.nbgrader_hooks.GradedStudent",
    "nbgrader.preprocessors.Execute",
    "graders.engine.nbgrader_hooks.HiddenTestsOutOfTracebacks",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "graders.engine.nbgrader_hooks.SaveAutoGradesForAPerson",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# Late penalties follow deadlines.toml's schedule (none without one): the same numbers that
# `chapter deadlines` gives when it recomputes them after an extension or a moved deadline.
c.AssignLatePenalties.plugin_class = "graders.course.deadlines.DeadlinePenalty"

# --- solutions: the source with hidden tests removed, not executed -------------------
c.GenerateSolution.preprocessors = [
    "nbgrader.preprocessors.IncludeHeaderFooter",
    "nbgrader.preprocessors.LockCells",
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.ClearMarkScheme",
    "nbgrader.preprocessors.ClearHiddenTests",
]
c.GenerateAssignment.create_assignment = True
# --- the release: nbgrader's own steps (its default list, whole), and a first cell with the
# assignment's due date and late-penalty schedule when deadlines.toml gives one (nothing otherwise)
c.GenerateAssignment.preprocessors = [
    "nbgrader.preprocessors.IncludeHeaderFooter",
    "graders.course.deadlines.DueDateInRelease",
    "nbgrader.preprocessors.InstantiateTests",
    "nbgrader.preprocessors.LockCells",
    "nbgrader.preprocessors.ClearSolutions",
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.CheckCellMetadata",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.SaveCells",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbgrader.preprocessors.ClearMarkScheme",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# --- feedback: what the student gets back shows results, never the hidden tests' source ---
c.GenerateFeedback.preprocessors = [
    # nbgrader's GetGrades, marking the cells no one has scored yet, which FeedbackPage shows as
    # "not graded yet" instead of nbgrader's "Score: 0.0" (chapter serve releases the page at once)
    "graders.engine.nbgrader_hooks.GetGradesMarkingWaits",
    # a first cell with the student's own due date (extension included), hand-in time and late penalty
    "graders.course.deadlines.DueDateInFeedback",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "graders.engine.nbgrader_hooks.HiddenTestsOutOfTracebacks",   # also for notebooks autograded before it was configured
    "nbgrader.preprocessors.ClearHiddenTests",
    # the page's styles in a <style> element: JupyterLab opens feedback untrusted, with no scripts
    "graders.course.pages.FeedbackStyle",
]
c.GenerateFeedback.exporter_class = "graders.engine.nbgrader_hooks.FeedbackPage"

# --- pages: formgrader's and the feedback's HTML render offline, with no script ---------------
# Formulas are typeset as MathML when the page is made (nbconvert's templates would load MathJax
# from a CDN), and a test cell's points are shown once, in its header.
c.HTMLExporter.preprocessors = ["graders.course.pages.MathMLPreprocessor", "graders.course.pages.PointsShownOnce"]
# Three of nbconvert's filters slow with the square of a line's length on a student's text (one
# markdown line of 100,000 "[" took 44 s): these give the same page in linear time, and show a
# code cell or a fenced block with a line over 1,000 characters uncoloured; a block is coloured
# only as Python, and a missing attachment is a missing image (graders/engine/html_filters.py).
c.HTMLExporter.filters = {
    "strip_files_prefix": "graders.engine.html_filters.strip_files_prefix",
    "highlight_code": "graders.engine.html_filters.BoundedHighlight",
    "markdown2html": "graders.engine.html_filters.BoundedMarkdown",
}
