"""`chapter`: the course's command line.

  chapter status [CHAPTER] [--json]   what each chapter has against its contract
  chapter gate [CHAPTER] [--only ID]  prove every item; exit 1 with one line per reason
  chapter check ID                    the gate for one item, with its verdicts
  chapter publish CHAPTER             build, gate, then mark the chapter published and render site/
  chapter build [--check]             regenerate (or check) source .ipynb, release/ and solutions/
  chapter site [--out DIR] [--only ID ...]  render solutions/ as a static site (default: site/)
  chapter autograde ASSIGNMENT [--scheduler ADDRESS]   grade every submission, sandboxed
  chapter report ASSIGNMENT [--out DIR]   what the class got wrong: HTML, CSV and a summary
  chapter demo                        a small class through the exchange, graded, with feedback
  chapter cards [CHAPTER] [--out DIR]  each chapter's flashcards as an Anki deck and a CSV (default: decks/)
  chapter course CHAPTER DIR --id COURSE_ID   one chapter as a course of its own (several courses on one hub)
  chapter deadlines                   apply deadlines.toml: due dates, extensions, late penalties (no regrading)
  chapter export ASSIGNMENT|all [--lms canvas|moodle] [--ids ids.csv] [--out DIR]   grades as the LMS imports them
"""
from __future__ import annotations

import argparse
import os
import sys

# nbformat validates notebooks with jsonschema, which imports every optional format checker
# it finds. One of them, rfc3987_syntax (the "iri" format), compiles some 35 Earley parsers
# when it is imported: 2.4 s of each command here (python-jsonschema/jsonschema#1428). No
# notebook schema has an "iri" field, so a chapter command does without that one checker.
if "jsonschema" not in sys.modules:
    sys.modules.setdefault("rfc3987_syntax", None)

from graders.course import commands, contract  # noqa: E402


def main(argv=None) -> int:
    # a name in bytes that are not UTF-8 (a student's file or folder) prints escaped, never stops a command
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    # nbgrader runs `alembic` by name when it creates a gradebook: find the one beside this Python
    bin_dir = os.path.dirname(sys.executable)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    parser = argparse.ArgumentParser(prog="chapter", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("status", help="each chapter against its contract")
    p.add_argument("chapter", nargs="?")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=commands.cmd_status)
    p = sub.add_parser("gate", help="prove every item of a chapter")
    p.add_argument("chapter", nargs="?")
    p.add_argument("--only", nargs="+", metavar="ID")
    p.add_argument("--refresh", action="store_true", help="ignore cached verdicts")
    p.add_argument("--verbose", "-v", action="store_true")
    p.set_defaults(func=commands.cmd_gate)
    p = sub.add_parser("check", help="the gate for one item")
    p.add_argument("item")
    p.set_defaults(func=commands.cmd_check)
    p = sub.add_parser("publish", help="build, gate, then mark a chapter published and render site/")
    p.add_argument("chapter")
    p.set_defaults(func=commands.cmd_publish)
    p = sub.add_parser("site", help="render solutions/ as a static site, each variant executed")
    p.add_argument("--out", metavar="DIR", help="where to write it (default: site/ in the course)")
    p.add_argument("--only", nargs="+", metavar="ID", help="execute only these items' solutions")
    p.set_defaults(func=commands.cmd_site)
    p = sub.add_parser("build", help="regenerate notebooks from source/*/*.pct.py")
    p.add_argument("--check", action="store_true")
    p.set_defaults(func=commands.cmd_build)
    p = sub.add_parser("autograde", help="grade every submission of an assignment, sandboxed")
    p.add_argument("assignment")
    p.add_argument("--workers", "-j", type=int, help="parallel graders (default: every core)")
    p.add_argument("--force", action="store_true", help="regrade submissions the journal says are done")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="grade on a Dask cluster (tcp://host:8786); default: this machine's cores")
    p.add_argument("--cell-timeout", type=float, help="seconds per cell (default: Execute.timeout)")
    p.add_argument("--notebook-timeout", type=float, help="seconds per notebook")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--no-isolation", action="store_true",
                   help="skip namespaces (debugging only: student code can then see the course)")
    p.add_argument("--allow-degraded", action="store_true",
                   help="grade a notebook even where an isolation layer (namespaces, uid drop, seccomp, "
                        "control group, rlimits) cannot be applied, instead of reporting it NOT GRADED; "
                        "the summary lists the layers that were not in force")
    p.set_defaults(func=commands.cmd_autograde)
    p = sub.add_parser("serve", help="grade each submission as it arrives in the exchange, and release "
                                     "its feedback")
    p.add_argument("assignment", nargs="+")
    p.add_argument("--workers", "-j", type=int, help="parallel graders (default: every core)")
    p.add_argument("--poll", action="store_true", help="poll the exchange (for network filesystems)")
    p.add_argument("--history", action="store_true", help="print every attempt, with times and scores")
    p.set_defaults(func=commands.cmd_serve)
    p = sub.add_parser("report", help="what the class got wrong, after grading: HTML, CSV, summary")
    p.add_argument("assignment")
    p.add_argument("--out", metavar="DIR", help="where to write it (default: reports/ASSIGNMENT in the course)")
    p.set_defaults(func=commands.cmd_report)
    p = sub.add_parser("demo", help="release, fetch, submit, collect, autograde and report a small class")
    p.set_defaults(func=commands.cmd_demo)
    p = sub.add_parser("cards", help="write each chapter's flashcards as an Anki deck (.apkg) and a CSV")
    p.add_argument("chapter", nargs="?")
    p.add_argument("--out", metavar="DIR", help="where to write them (default: decks/ in the course)")
    p.set_defaults(func=commands.cmd_cards)
    p = sub.add_parser("course", help="write a course folder holding one chapter alone, under its own course id")
    p.add_argument("chapter")
    p.add_argument("into", metavar="DIR")
    p.add_argument("--id", dest="course_id", required=True, help="the new course's id (its hub groups are "
                   "nbgrader-ID and formgrade-ID)")
    p.set_defaults(func=commands.cmd_course)
    p = sub.add_parser("deadlines", help="apply deadlines.toml (due dates, extensions, late-penalty schedule) "
                                         "to the gradebook, recomputing penalties without regrading")
    p.add_argument("--dry-run", action="store_true", help="say what would change, change nothing")
    p.set_defaults(func=commands.cmd_deadlines)
    p = sub.add_parser("export", help="grades, late penalties applied, as a CSV Canvas or Moodle imports; "
                                      "students without a final grade listed apart")
    p.add_argument("assignment", help="an assignment, or all")
    p.add_argument("--lms", choices=["canvas", "moodle"], default="canvas")
    p.add_argument("--ids", metavar="CSV", help="course_id,lms_id[,sis_id,section,name,sis_login_id]: the LMS's ids")
    p.add_argument("--out", metavar="DIR", help="where to write it (default: exports/ in the course)")
    p.set_defaults(func=commands.cmd_export)
    for command in sub.choices.values():   # every command works on one course: contract.course_root
        command.add_argument("--course", metavar="DIR", help="the course directory (default: the folder at "
                             "or above this one holding nbgrader_config.py and chapters.toml, else $CHAPTER_ROOT)")
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except contract.CourseNotFound as error:
        print(f"chapter: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
