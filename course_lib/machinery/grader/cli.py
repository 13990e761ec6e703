"""The `course grade` and `course progress` subcommands (wired into course_lib.machinery.cli)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from course_lib.machinery import build as chain


def _grade(args: argparse.Namespace) -> int:
    from course_lib.machinery.grader.runner import GradeOptions, grade_lesson, summary
    from course_lib.machinery.grader.sandbox import SandboxError

    root = chain.find_root()
    options = GradeOptions(
        jobs=args.jobs,
        timeout=args.timeout,
        cell_timeout=args.cell_timeout,
        sandbox=args.sandbox,
        students=tuple(args.student or ()),
        db_url=args.db_url,
        progress=not args.quiet,
    )
    try:
        report = grade_lesson(root, args.lesson, options)
    except (ValueError, FileNotFoundError, SandboxError) as exc:
        print(f"course grade: {exc}", file=sys.stderr)
        return 2
    print(summary(report))
    return 1 if (report.rows.status == "error").any() else 0


def _progress(args: argparse.Namespace) -> int:
    from course_lib.machinery.progress import progress_table

    root = chain.find_root()
    work = Path(args.work).resolve() if args.work else root / "work"
    frame = progress_table(work, root=root, jobs=args.jobs, fresh=args.fresh)
    print(frame.to_string(index=False))
    done = frame[frame.status == "complete"]
    print(
        f"\n{len(done)} of {len(frame)} lessons complete; "
        f"{int(frame.passed.sum())} of {int(frame.exercises.sum())} exercises pass their "
        "visible checks (hidden tests run only when an instructor grades)."
    )
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Add `grade` and `progress` to the `course` command's subcommands."""
    g = sub.add_parser(
        "grade",
        help="autograde every submission of a lesson in submitted/, in parallel and isolated",
    )
    g.add_argument("lesson", help="lesson id; submissions in submitted/<student>/<lesson>/")
    g.add_argument("--jobs", "-j", type=int, default=2, help="students graded at a time")
    g.add_argument(
        "--timeout", type=float, default=600.0, help="wall-clock seconds per student (default 600)"
    )
    g.add_argument(
        "--cell-timeout", type=int, default=None, help="seconds per cell (nbgrader_config.py)"
    )
    g.add_argument("--student", action="append", help="grade only this student (repeatable)")
    g.add_argument(
        "--sandbox",
        choices=("auto", "bwrap", "none"),
        default="auto",
        help="kernel isolation: bubblewrap if it works (auto), required (bwrap), or none",
    )
    g.add_argument("--db-url", default=None, help="gradebook URL (default: nbgrader_config.py)")
    g.add_argument("--quiet", action="store_true", help="no progress bar")
    g.set_defaults(run=_grade)
    p = sub.add_parser(
        "progress", help="run the visible checks of your notebooks in work/; table per lesson"
    )
    p.add_argument("--work", default=None, help="the learner's folder (default: work/)")
    p.add_argument("--jobs", "-j", type=int, default=2, help="notebooks run at a time")
    p.add_argument("--fresh", action="store_true", help="ignore cached results; run everything")
    p.set_defaults(run=_progress)
