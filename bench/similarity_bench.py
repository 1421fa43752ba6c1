"""Benchmark: the similarity part of `chapter report` for a class of 200 students x 5 notebooks.

    .venv/bin/python bench/similarity_bench.py [--repeat 3] [--students 200]

The class is tests/course/similarity_class.py's, with all five notebooks (a code cell and a
symbolic cell each: 2000 answer cells) and two planted copies, laid out as a course
folder under bench/out/similarity-class/ (rewritten each time: it takes a second). It
then runs `build_similarity` (read the notebooks, fingerprint, compare every pair, write
the page and the CSV) `--repeat` times and prints each run's wall and CPU time (and the
machine's load), split into reading, code and symbolic, the CPU time against the target
of 10 s (on this shared machine the wall time mostly measures the other tenants), and whether both planted pairs ranked in the top 3. The imports (copydetect,
pygments, sympy, nbgrader's configuration) are timed once, apart.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

TARGET_SECONDS = 10.0                        # CPU seconds of one run, 200 students x 5 notebooks
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _class import ROOT, load_line, similarity_answers  # noqa: E402   (ROOT: the checkout, put on sys.path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=200, help="the class's size")
    parser.add_argument("--repeat", type=int, default=3, help="runs timed")
    args = parser.parse_args()
    started, cpu = time.perf_counter(), time.process_time()
    import copydetect  # noqa: F401
    import nbgrader.coursedir  # noqa: F401
    import sympy  # noqa: F401
    from pygments.lexers import get_lexer_by_name

    from graders.course.similarity import build_similarity
    from tests.course.similarity_class import ALL_NOTEBOOKS, write_course
    get_lexer_by_name("python")
    print(f"imports (copydetect, pygments, sympy, nbgrader; once per process): {time.perf_counter() - started:.2f} s "
          f"wall, {time.process_time() - cpu:.2f} s CPU")
    course = ROOT / "bench" / "out" / "similarity-class"
    shutil.rmtree(course, ignore_errors=True)
    n = args.students          # the copies are (3, 150) and (77, 190) in the class of 200
    answers, planted = similarity_answers(n, copies=((3, n * 3 // 4), (n * 3 // 8 + 2, n - 10)))
    write_course(course, answers)
    print(f"class: {args.students} students x {len(ALL_NOTEBOOKS)} notebooks, "
          f"{sum(len(c) for c in answers.cells.values())} answer cells; planted copies {planted}")
    print(load_line())
    worst, found = 0.0, True
    for run in range(args.repeat):
        started, cpu = time.perf_counter(), time.process_time()
        written = build_similarity(course, answers.assignment, course / "reports")
        total, cpu = time.perf_counter() - started, time.process_time() - cpu
        worst = max(worst, cpu)
        result = written.result
        parts = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in result.seconds.items())
        top = [(p.a, p.b) for p in result.pairs[:3]]
        found = found and set(planted) <= set(top)
        marked = sum(p.stands_out for p in result.pairs)
        print(f"run {run + 1}: {total:.2f} s wall, {cpu:.2f} s CPU ({parts}); top 3 {top}; {marked} marked")
    print(f"similarity for {result.students} students: most CPU {worst:.2f} s "
          f"(target < {TARGET_SECONDS:g} s: {'met' if worst < TARGET_SECONDS else 'MISSED'}); "
          f"both planted pairs in the top 3: {'yes' if found else 'NO'}; {written.html}")
    return 0 if worst < TARGET_SECONDS and found else 1


if __name__ == "__main__":
    sys.exit(main())
