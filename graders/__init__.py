"""The grading library of chapter II.8 "Training at Scale".

It holds the reference solutions, so it belongs to instructors alone: released
notebooks never import it. The public interface (curriculum section 3):

    from graders import problems, variants
    problems.ids(); p = problems.get("w1-memory"); p.solve(params); p.grade(params, answers)
    variants.variant_for(student_id, assignment_id)
"""
from . import problems, variants

__all__ = ["problems", "variants"]
