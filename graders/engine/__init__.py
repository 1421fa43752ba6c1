"""The grading engine: `chapter autograde` and `chapter serve`, in the style of nbgrader's apps.

It depends on the problem library (graders.*) and the sandbox (graders.sandbox), never on
the course tooling above it.
"""
