"""The resume journal: each submission's result kept under a fingerprint of everything that decides it."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path

from graders.digest import code_digest, library_versions
from graders.engine.course_dir import Course
from graders.engine.grading import GRADE_MEMORY_BYTES, GRADE_SECONDS, SubmissionResult
from graders.engine.shared import atomic_write
from graders.engine.time_limits import for_notebook
from graders.sandbox.zygote import Limits


JOURNAL = Path(".chapter") / "autograde"


def fingerprint(course: Course, limits: Limits) -> str:
    """Everything a grade depends on besides the submission.

    The whole grading library's code (a problem imports shared code, and may import
    another), the versions of the libraries it computes with, the course's
    configuration, the instructor's cells and the limits. Any change regrades.
    """
    digest = hashlib.sha256()
    digest.update(code_digest().encode())
    digest.update(json.dumps(library_versions(), sort_keys=True).encode())
    config = Path(course.root) / "nbgrader_config.py"
    if config.exists():
        digest.update(config.read_bytes())
    snapshot = {name: {
        "cells": [vars(c) for c in nb.source_cells], "grades": [vars(c) for c in nb.grade_cells],
        "solutions": [vars(c) for c in nb.solution_cells], "tasks": [vars(c) for c in nb.task_cells],
        "kernelspec": nb.kernelspec} for name, nb in course.notebooks.items()}
    digest.update(json.dumps(snapshot, sort_keys=True, default=str).encode())
    course_settings = {k: getattr(course, k) for k in (
        "course_id", "ignore", "permissions", "begin_hidden", "end_hidden", "max_lines", "max_traceback",
        "exclude_overwriting", "excluded_students", "grades_only")}
    digest.update(json.dumps(course_settings, sort_keys=True, default=str).encode())
    own_limits = {name: for_notebook(limits, seconds).notebook_seconds    # what each notebook is given
                  for name, seconds in course.time_limits.items()}
    digest.update(json.dumps({"instant": course.instant, "time_limits": own_limits},
                             sort_keys=True).encode())
    digest.update(json.dumps(asdict(limits), sort_keys=True).encode())
    digest.update(json.dumps({"grade_seconds": GRADE_SECONDS, "grade_memory": GRADE_MEMORY_BYTES}).encode())
    _source_files(digest, course)
    return digest.hexdigest()


def _source_files(digest, course: Course) -> None:
    """The assignment's own files beside its notebooks (helper modules, data), as the sandbox gets them."""
    from graders.engine.shared import find_all_files
    base = course.source_dir
    if not base or not os.path.isdir(base):
        return
    for path in sorted(find_all_files(base, course.ignore + ["*.ipynb", "timestamp.txt"])):
        if os.path.islink(path) or not os.path.isfile(path):
            continue     # the sandbox is given neither links nor anything but regular files
        _framed(digest, os.fsencode(os.path.relpath(path, base)), _content(Path(path)))


def _framed(digest, *parts: bytes) -> None:
    """Each part with its length before it, so no two different sequences hash alike."""
    for part in parts:
        digest.update(len(part).to_bytes(8, "big") + part)


def submission_key(course: Course, student: str, base: str) -> str:
    digest = hashlib.sha256()
    _framed(digest, base.encode(), os.fsencode(student))
    folder = course.submission_dir(student)
    for path in sorted(p for p in folder.rglob("*") if p.is_file() or p.is_symlink()):
        # a name is the file system's bytes (a student's need not be UTF-8)
        kind, data = (b"link", os.fsencode(os.readlink(path))) if path.is_symlink() else (b"file", _content(path))
        _framed(digest, os.fsencode(path.relative_to(folder)), kind, data)
    return digest.hexdigest()


def _content(path: Path) -> bytes:
    """A file's sha256, read in pieces (a large file is never held whole); for a file that cannot
    be read, its error: one student's unreadable file must not stop the class's run."""
    try:
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").digest()
    except OSError as exc:
        return f"unreadable: {exc.errno}".encode()


def student_file(folder: Path, student: str) -> Path:
    """`student`'s JSON file in `folder`, named by a digest of the name's bytes: a short, safe file
    name for any student name, one in bytes that are not UTF-8 included."""
    return folder / f"{hashlib.sha256(os.fsencode(student)).hexdigest()[:16]}.json"


class Journal:
    """One file per student: {"key", "state": "graded" | "recorded", "result"}; written atomically."""

    def __init__(self, course: Course):
        self.dir = Path(course.root) / JOURNAL / course.assignment

    def path(self, student):
        return student_file(self.dir, student)

    def get(self, student, key):
        """The kept entry for `student` under `key`; None for anything else (another key, or a
        file that is not what `put` wrote: it is graded again)."""
        try:
            entry = json.loads(self.path(student).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("key") != key \
                or entry.get("state") not in ("graded", "recorded") or not isinstance(entry.get("result"), dict):
            return None
        try:
            if SubmissionResult.from_json(entry["result"]).student != student:
                return None
        except (KeyError, TypeError, ValueError):
            return None
        return entry

    def put(self, result: SubmissionResult, state: str, text: str | None = None) -> None:
        """Keep `result` in `state`; `text` is `result_text(result)` when the caller has it already
        (GradingRun.accept puts one unchanged result twice: its notebooks, figures included, are
        serialised once)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        text = self.result_text(result) if text is None else text
        data = f'{{"key": {json.dumps(result.key)}, "state": {json.dumps(state)}, "result": {text}}}'
        atomic_write(self.path(result.student), data.encode())

    @staticmethod
    def result_text(result: SubmissionResult) -> str:
        return json.dumps(result.to_json())
