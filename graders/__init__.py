"""The grading library of chapter II.8 "Training at Scale".

It holds the reference solutions, so it belongs to instructors alone: released
notebooks never import it. The public interface (curriculum section 3):

    from graders import problems, variants
    problems.ids(); p = problems.get("w1-memory"); p.solve(params); p.grade(params, answers)
    variants.variant_for(student_id, assignment_id)

This package's own modules are the problem library (the Problem base, checks, feedback,
variants, transport) and `problems/`, the graded items. Above them, in layers that import
downward only: `sandbox/` (the zygote and its Linux layers), `engine/` (chapter autograde and
serve), `course/` (contracts, build, gate, status, site, demo, report) and `cli.py`.
"""
from graders import problems, variants

__all__ = ["problems", "variants"]
