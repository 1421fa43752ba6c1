"""Which variant (A to D) a student is given, per student and per assignment.

The rule is a hash, so it is deterministic, needs no stored table, and is
uniform over the four labels. Released notebooks carry the same two lines of
stdlib code so that a student sees their own variant without this package.
"""
import hashlib

LABELS = ("A", "B", "C", "D")


def variant_for(student_id: str, assignment_id: str) -> str:
    """The variant label graded for `student_id` on `assignment_id`."""
    digest = hashlib.sha256(f"{assignment_id}:{student_id}".encode()).digest()
    return "ABCD"[int.from_bytes(digest[:8], "big") % 4]


def student_for(label: str, assignment_id: str, prefix: str = "student") -> str:
    """The first id of the form `{prefix}-{label}-{i}` that is given `label`.

    The gate and the solutions site use it to grade, or to run, "as a student of variant X".
    """
    if label not in LABELS:
        raise ValueError(f"unknown variant {label!r}; expected one of {LABELS}")
    i = 0
    while variant_for(f"{prefix}-{label}-{i}", assignment_id) != label:
        i += 1
    return f"{prefix}-{label}-{i}"
