"""The one preprocessor the course adds to nbgrader's autograde step.

nbgrader does not tell a notebook whose submission it is grading. The hidden
tests need that to find the student's variant, so this preprocessor, run
before Execute, puts the student id into the environment the grading kernel
inherits: as CHAPTER_GRADED_STUDENT for the hidden tests, and as
JUPYTERHUB_USER, so that the notebook's own (locked) variant cell shows the
graded student's parameters, exactly as it did on that student's hub server. It also turns Python warnings off in that kernel: nbgrader scores a
test cell 0 for any output on stderr, and a harmless torch or sympy warning
must not cost a correct answer its marks.
"""
import os

from nbgrader.preprocessors import NbGraderPreprocessor

STUDENT_ENV = "CHAPTER_GRADED_STUDENT"


class GradedStudent(NbGraderPreprocessor):
    def preprocess(self, nb, resources):
        os.environ[STUDENT_ENV] = resources["nbgrader"]["student"]
        os.environ["JUPYTERHUB_USER"] = resources["nbgrader"]["student"]
        os.environ["PYTHONWARNINGS"] = "ignore"
        return nb, resources
