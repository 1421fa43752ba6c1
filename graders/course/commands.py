"""What each `chapter` command does, given its parsed arguments (graders/cli.py parses them)."""
from __future__ import annotations

import dataclasses
import json
import sys

from graders.course import contract

# The commands import the tooling they use when they run, so that `chapter check` can start
# the engine's zygote before anything heavy is imported.


def existing(root, chapter, reports) -> set[str]:
    """Those of the reported items that have been started: a notebook in source/ or a
    registered problem."""
    from graders import problems
    return {item for item in reports
            if problems.known(item) or any(nb.split("/")[-1] == item and (root / "source" / f"{nb}.ipynb").exists()
                                           for nb in chapter.notebooks)}


def chosen_chapters(root, wanted):
    """Every chapter, or the one named; an empty list (with a message) when it is unknown."""
    chapters = [c for c in contract.load_chapters(root) if not wanted or c.id == wanted]
    if not chapters:
        print(f"no chapter {wanted!r}", file=sys.stderr)
    return chapters


def cmd_status(args) -> int:
    from graders.course.status import chapter_status, render
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
    from graders.course.gate import gate
    from graders.course.status import chapter_status, shortfalls
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
    from graders.engine.warm import preload_for, start_zygote
    root = contract.course_root(args.course)
    for chapter in contract.load_chapters(root):
        notebooks = [nb for nb in chapter.notebooks if nb.endswith("/" + args.item)]
        if notebooks:
            # a check always grades: the zygote imports what the item's notebooks use while
            # this process imports the rest
            start_zygote(preload=preload_for([root / folder / f"{nb}.ipynb" for nb in notebooks
                                              for folder in ("solutions", "release")]))
            return run_gate(root, chapter, only=[args.item], refresh=True, verbose=True)
    print(f"{args.item} is not listed in chapters.toml", file=sys.stderr)
    return 2


def cmd_publish(args) -> int:
    from graders.course.build import build
    root = contract.course_root(args.course)
    chapter = contract.find_chapter(args.chapter, root)
    from graders.course.deadlines import DeadlineError
    try:
        build(root, write=True)
    except DeadlineError as error:
        print(f"publish {chapter.id}: refused; {error}")
        return 1
    candidate = dataclasses.replace(chapter, state="published")
    if run_gate(root, candidate) != 0:
        print(f"publish {chapter.id}: refused; it stays {chapter.state}")
        return 1
    contract.set_state(chapter.id, "published", root)
    print(f"publish {chapter.id}: published")
    return publish_site(root, root / "site")


def publish_site(root, out, only=None) -> int:
    from graders.course.site import render_site
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
    from graders.course.build import build
    from graders.course.deadlines import DeadlineError
    root = contract.course_root(args.course)
    try:
        reasons = build(root, write=not args.check)
    except DeadlineError as error:
        print(f"chapter build: {error}\nnothing was written", file=sys.stderr)
        return 2
    for reason in reasons:
        print(reason)
    if args.check:
        return 1 if reasons else 0
    print("built source/*.ipynb, release/ and solutions/ from source/*/*.pct.py")
    return 0


def cmd_demo(args) -> int:
    from graders.course.demo import run
    run(root=contract.course_root(args.course))   # the site is `chapter site`'s: minutes, each variant run
    return 0


def cmd_autograde(args) -> int:
    root = contract.course_root(args.course)
    zygote = None
    if not args.scheduler:   # its imports (seconds with torch) run beside this process's own
        from graders.engine.warm import zygote_for
        zygote = zygote_for(root, args.assignment, not args.no_isolation, args.allow_degraded)
    try:
        from graders.engine.autograde import autograde
        from graders.engine.course_dir import limits_from, load_config
        limits = limits_from(load_config(root), cell_seconds=args.cell_timeout,
                             notebook_seconds=args.notebook_timeout)
        report = autograde(root, args.assignment, workers=args.workers, limits=limits, force=args.force,
                           progress=not args.no_progress, isolate=not args.no_isolation,
                           scheduler=args.scheduler, allow_degraded=args.allow_degraded, zygote=zygote)
    finally:
        if zygote is not None:
            zygote.close()
    from graders.course.deadlines import DeadlineError, load
    try:   # nbgrader's late-penalty plugin reads it too, but only into a log nobody sees
        load(root)
    except DeadlineError as error:
        print(f"LATE PENALTIES NOT GIVEN: {error}; fix deadlines.toml, then run `chapter deadlines` "
              "(`chapter export` refuses until then)", file=sys.stderr)
    return 1 if report.failed else 0


def cmd_serve(args) -> int:
    import signal

    from graders.engine.exchange import set_aside_lines
    from graders.engine.serve import Service, history
    from graders.unicode import shown_name
    root = contract.course_root(args.course)
    if args.history:
        for assignment in args.assignment:
            for student, attempt in history(root, assignment):
                score = "" if attempt.score is None else f"{attempt.score:g}/{attempt.max_score:g}"
                print(shown_name(f"{assignment}  {student:<16} {attempt.timestamp:<34} {attempt.state:<8} "
                                 f"{score:>9}  {attempt.why[:80]}"))
            for line in set_aside_lines(root, assignment):      # kept apart from every student's history
                print(f"{assignment}  {line}")
        return 0
    from graders.course.deadlines import OwnDueDates
    own_due = OwnDueDates(root)
    problem = own_due.refresh()
    if problem:
        raise SystemExit(f"chapter serve: {problem}\nFix deadlines.toml: the attempt that counts depends on "
                         "each student's due date.")
    service = Service(root, args.assignment, workers=args.workers, poll=args.poll, out=sys.stdout,
                      own_due=own_due)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: service.stop())
    service.run()
    return 0


def cmd_report(args) -> int:
    from pathlib import Path

    from graders.course.report import build_report
    root = contract.course_root(args.course)
    written = build_report(root, args.assignment, out=Path(args.out).resolve() if args.out else None)
    print(written.text)
    print(f"\nreport: {written.html}\nCSV: {written.checks_csv} {written.mistakes_csv} {written.items_csv}"
          + (f" {written.deadlines_csv}" if written.deadlines_csv else ""))
    from graders.course.similarity import build_similarity, summary
    alike = build_similarity(root, args.assignment, written.html.parent)
    print(f"\n{summary(alike.result)}\nsimilarity: {alike.html}\nCSV: {alike.csv}")
    return 0


def cmd_course(args) -> int:
    from pathlib import Path

    from graders.course.course_folder import make_course_folder
    root = contract.course_root(args.course)
    into = Path(args.into).resolve()
    try:
        assignments = make_course_folder(root, args.chapter, into, args.course_id)
    except (KeyError, ValueError, FileExistsError) as error:
        print(f"chapter course: {error.args[0]}", file=sys.stderr)
        return 2
    print(f"{into}: the course {args.course_id}, chapter {args.chapter}: {', '.join(assignments)}")
    return 0


def cmd_cards(args) -> int:
    from pathlib import Path

    from graders.course.cards import export_chapter
    root = contract.course_root(args.course)
    chapters = chosen_chapters(root, args.chapter)
    if not chapters:
        return 2
    out = Path(args.out).resolve() if args.out else root / "decks"
    for chapter in chapters:
        apkg, table, count = export_chapter(chapter, out)
        print(f"{chapter.id}: {count} cards -> {apkg} and {table}")
    return 0


def cmd_export(args) -> int:
    from pathlib import Path

    from graders.course.export import ExportError, export
    root = contract.course_root(args.course)
    try:
        written = export(root, args.assignment, lms=args.lms, ids=Path(args.ids) if args.ids else None,
                         out=Path(args.out).resolve() if args.out else None)
    except ExportError as error:
        print(f"chapter export: {error}", file=sys.stderr)
        return 2
    for line in written.apart_lines:
        print(line)
    print(f"{written.exported} grades -> {written.export}\n{len(written.apart_lines)} held apart (empty cells, "
          f"never 0) -> {written.apart}")
    return 0


def cmd_deadlines(args) -> int:
    from graders.course import deadlines
    root = contract.course_root(args.course)
    try:
        policy = deadlines.load(root)
    except deadlines.DeadlineError as error:
        print(f"chapter deadlines: {error}\nnothing was changed", file=sys.stderr)
        return 2
    if policy is None:
        print(f"chapter deadlines: no {deadlines.FILE} in {root}; nothing to apply", file=sys.stderr)
        return 2
    notes, changes = deadlines.apply(root, policy, dry_run=args.dry_run)
    for line in notes + [c.line() for c in changes]:
        print(line)
    print(f"{len(changes)} penalties {'would change (dry run: nothing written)' if args.dry_run else 'changed'}, "
          f"nothing regraded")
    return 0
