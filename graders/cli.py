"""`chapter`: the course's command line.

  chapter status [CHAPTER] [--json]   what each chapter has against its contract
  chapter gate [CHAPTER] [--only ID]  prove every item; exit 1 with one line per reason
  chapter check ID                    the gate for one item, with its verdicts
  chapter publish CHAPTER             gate, then build and mark the chapter published
  chapter build [--check]             regenerate (or check) source .ipynb, release/ and solutions/
  chapter site [--out DIR] [--only ID ...]  render solutions/ as a static site (default: site/)
  chapter autograde ASSIGNMENT [--scheduler ADDRESS]   grade every submission, sandboxed
  chapter report ASSIGNMENT [--out DIR]   what the class got wrong: HTML, CSV and a summary
  chapter demo                        a small class through the exchange, graded, with feedback
  chapter cards [CHAPTER] [--out DIR]  each chapter's flashcards as an Anki deck and a CSV (default: decks/)
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

from . import contract
from .build import build
from .gate import gate
from .status import chapter_status, render, shortfalls


def existing(root, chapter, reports) -> set[str]:
    """Items that have been started: a notebook in source/ or a registered problem."""
    from . import problems
    started = set(problems.ids())
    started |= {nb.split("/")[-1] for nb in chapter.notebooks if (root / "source" / f"{nb}.ipynb").exists()}
    return started


def chosen_chapters(root, wanted):
    """Every chapter, or the one named; an empty list (with a message) when it is unknown."""
    chapters = [c for c in contract.load_chapters(root) if not wanted or c.id == wanted]
    if not chapters:
        print(f"no chapter {wanted!r}", file=sys.stderr)
    return chapters


def cmd_status(args) -> int:
    root = contract.course_root(args.course)
    chapters = chosen_chapters(root, args.chapter)
    if not chapters:
        return 2
    records = [chapter_status(root, c) for c in chapters]
    if args.json:
        print(json.dumps({"chapters": records}, indent=2))
    else:
        print("\n\n".join(render(r, root) for r in records))
    return 0


def run_gate(root, chapter, only=None, refresh=False, verbose=False) -> int:
    reasons, reports = gate(root, chapter, only=only, refresh=refresh)
    started = existing(root, chapter, reports)
    failures = [r for r in reasons if r.split(":")[0] not in reports or r.split(":")[0] in started]
    missing = sorted(set(reports) - started)
    short = [] if only else shortfalls(chapter_status(root, chapter, reports))
    if verbose:
        for item, report in reports.items():
            marks = " ".join(f"{v}:{'ok' if ok else 'FAIL'}" for v, ok in sorted(report.solution.items()))
            print(f"{item}: solution {marks or '-'} · blank {'0' if report.blank_zero else 'NOT 0'}")
    for reason in failures:
        print(reason)
    if chapter.state == "published":
        for line in short:
            print(line)
        ok = not failures and not short
    else:
        if missing:
            print(f"{chapter.id} is a draft; not yet written: {', '.join(missing)}")
        for line in short:
            print(f"{line} (draft: reported, not failing)")
        ok = not failures
    print(f"gate {chapter.id}: {'passed' if ok else 'REFUSED'}")
    return 0 if ok else 1


def cmd_gate(args) -> int:
    root = contract.course_root(args.course)
    chapters = [c for c in contract.load_chapters(root) if not args.chapter or c.id == args.chapter]
    code = 0
    for chapter in chapters:
        code |= run_gate(root, chapter, only=args.only, refresh=args.refresh, verbose=args.verbose)
    return code


def cmd_check(args) -> int:
    root = contract.course_root(args.course)
    for chapter in contract.load_chapters(root):
        if any(nb.endswith("/" + args.item) for nb in chapter.notebooks):
            return run_gate(root, chapter, only=[args.item], refresh=True, verbose=True)
    print(f"{args.item} is not listed in chapters.toml", file=sys.stderr)
    return 2


def cmd_publish(args) -> int:
    root = contract.course_root(args.course)
    chapter = contract.find_chapter(args.chapter, root)
    build(root, write=True)
    candidate = dataclasses.replace(chapter, state="published")
    if run_gate(root, candidate) != 0:
        print(f"publish {chapter.id}: refused; it stays {chapter.state}")
        return 1
    contract.set_state(chapter.id, "published", root)
    print(f"publish {chapter.id}: published")
    return publish_site(root, root / "site")


def publish_site(root, out, only=None) -> int:
    from .site import render_site
    problems = render_site(root, out, items=only)
    for line in problems:
        print(f"site: {line}")
    print(f"site: {out / 'index.html'}")
    return 1 if problems else 0


def cmd_site(args) -> int:
    from pathlib import Path
    root = contract.course_root(args.course)
    return publish_site(root, Path(args.out).resolve() if args.out else root / "site", only=args.only)


def cmd_build(args) -> int:
    root = contract.course_root(args.course)
    reasons = build(root, write=not args.check)
    for reason in reasons:
        print(reason)
    if args.check:
        return 1 if reasons else 0
    print("built source/*.ipynb, release/ and solutions/ from source/*/*.pct.py")
    return 0


def cmd_demo(args) -> int:
    from .demo import run
    run(root=contract.course_root(args.course))   # the site is `chapter site`'s: minutes, each variant run
    return 0


def cmd_autograde(args) -> int:
    from pathlib import Path

    from .autograde import autograde, limits_from, load_config
    root = contract.course_root(args.course)
    limits = limits_from(load_config(root), cell_seconds=args.cell_timeout,
                         notebook_seconds=args.notebook_timeout)
    report = autograde(root, args.assignment, workers=args.workers, limits=limits, force=args.force,
                       progress=not args.no_progress, isolate=not args.no_isolation, scheduler=args.scheduler,
                       allow_degraded=args.allow_degraded)
    return 1 if report.failed else 0


def cmd_serve(args) -> int:
    import signal

    from .serve import Service, history
    root = contract.course_root(args.course)
    if args.history:
        for assignment in args.assignment:
            for student, attempt in history(root, assignment):
                score = "" if attempt.score is None else f"{attempt.score:g}/{attempt.max_score:g}"
                print(f"{assignment}  {student:<16} {attempt.timestamp:<34} {attempt.state:<8} {score:>9}  "
                      f"{attempt.why[:80]}")
        return 0
    service = Service(root, args.assignment, workers=args.workers, poll=args.poll, out=sys.stdout)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: service.stop())
    service.run()
    return 0


def cmd_report(args) -> int:
    from pathlib import Path

    from .report import build_report
    root = contract.course_root(args.course)
    written = build_report(root, args.assignment, out=Path(args.out).resolve() if args.out else None)
    print(written.text)
    print(f"\nreport: {written.html}\nCSV: {written.checks_csv} {written.mistakes_csv}")
    return 0


def cmd_cards(args) -> int:
    from pathlib import Path

    from .cards import export_chapter
    root = contract.course_root(args.course)
    chapters = chosen_chapters(root, args.chapter)
    if not chapters:
        return 2
    out = Path(args.out).resolve() if args.out else root / "decks"
    for chapter in chapters:
        apkg, table, count = export_chapter(chapter, out)
        print(f"{chapter.id}: {count} cards -> {apkg} and {table}")
    return 0


def main(argv=None) -> int:
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
    p.set_defaults(func=cmd_status)
    p = sub.add_parser("gate", help="prove every item of a chapter")
    p.add_argument("chapter", nargs="?")
    p.add_argument("--only", nargs="+", metavar="ID")
    p.add_argument("--refresh", action="store_true", help="ignore cached verdicts")
    p.add_argument("--verbose", "-v", action="store_true")
    p.set_defaults(func=cmd_gate)
    p = sub.add_parser("check", help="the gate for one item")
    p.add_argument("item")
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("publish", help="gate, build and mark a chapter published")
    p.add_argument("chapter")
    p.set_defaults(func=cmd_publish)
    p = sub.add_parser("site", help="render solutions/ as a static site, each variant executed")
    p.add_argument("--out", metavar="DIR", help="where to write it (default: site/ in the course)")
    p.add_argument("--only", nargs="+", metavar="ID", help="execute only these items' solutions")
    p.set_defaults(func=cmd_site)
    p = sub.add_parser("build", help="regenerate notebooks from source/*/*.pct.py")
    p.add_argument("--check", action="store_true")
    p.set_defaults(func=cmd_build)
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
    p.set_defaults(func=cmd_autograde)
    p = sub.add_parser("serve", help="grade each submission as it arrives in the exchange, and release "
                                     "its feedback")
    p.add_argument("assignment", nargs="+")
    p.add_argument("--workers", "-j", type=int, help="parallel graders (default: every core)")
    p.add_argument("--poll", action="store_true", help="poll the exchange (for network filesystems)")
    p.add_argument("--history", action="store_true", help="print every attempt, with times and scores")
    p.set_defaults(func=cmd_serve)
    p = sub.add_parser("report", help="what the class got wrong, after grading: HTML, CSV, summary")
    p.add_argument("assignment")
    p.add_argument("--out", metavar="DIR", help="where to write it (default: reports/ASSIGNMENT in the course)")
    p.set_defaults(func=cmd_report)
    p = sub.add_parser("demo", help="release, fetch, submit, collect, autograde and report a small class")
    p.set_defaults(func=cmd_demo)
    for command in sub.choices.values():   # every command works on one course: contract.course_root
        command.add_argument("--course", metavar="DIR", help="the course directory (default: the folder at "
                             "or above this one holding nbgrader_config.py and chapters.toml, else $CHAPTER_ROOT)")
    p = sub.add_parser("cards", help="write each chapter's flashcards as an Anki deck (.apkg) and a CSV")
    p.add_argument("chapter", nargs="?")
    p.add_argument("--out", metavar="DIR", help="where to write them (default: decks/ in the course)")
    p.set_defaults(func=cmd_cards)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except contract.CourseNotFound as error:
        print(f"chapter: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
