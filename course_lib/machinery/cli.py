"""The `course` command: build the lessons, open the course in JupyterLab.

course build [LESSON ...] [--check]   masters -> source/ -> release/ (deterministic)
course lab [--no-browser] [--port N]  copy new lessons to work/ and start JupyterLab there
course grade LESSON [--jobs N] [--timeout S]  autograde submitted/, isolated and in parallel
course progress                       run the visible checks in work/; a table per lesson
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from course_lib.machinery import build as chain
from course_lib.machinery import home
from course_lib.machinery.grader import cli as grade_cli


def _build(args: argparse.Namespace) -> int:
    root = chain.find_root()
    try:
        result = chain.build(root, args.lessons or None, check=args.check)
    except chain.BuildError as exc:
        print(f"course build: {exc}", file=sys.stderr)
        print("course build: nothing was written.", file=sys.stderr)
        return 2
    if args.check:
        if result.differing:
            print("course build --check: these files differ from what the build produces:")
            for path in result.differing:
                print(f"  {path.relative_to(root)}")
            print("Run `course build` (or `make build`) and commit the result.")
            return 1
        print(f"course build --check: {len(result.lessons)} lessons up to date.")
        return 0
    for path in result.written:
        print(f"wrote {path.relative_to(root)}")
    print(
        f"course build: {len(result.lessons)} lessons built, {len(result.written)} files changed."
    )
    return 0


def copy_new_lessons(root: Path, work: Path) -> list[Path]:
    """Copy release/<id>/ lessons into work/<id>/ without ever overwriting the learner's files."""
    added = []
    for lesson in chain.lesson_ids(root):
        release = root / "release" / lesson / f"{lesson}.ipynb"
        target = work / lesson / f"{lesson}.ipynb"
        if release.is_file() and not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.tmp")
            shutil.copyfile(release, tmp)
            os.replace(tmp, target)
            added.append(target)
    return added


def lab_command(work: Path, extra: list[str]) -> list[str]:
    """The JupyterLab command line for serving `work` (adds --allow-root when run as root)."""
    cmd = [sys.executable, "-m", "jupyter", "lab", f"--ServerApp.root_dir={work}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    return cmd + extra


LEARNER_LAB_CONFIG = Path(__file__).resolve().parent / "learner_lab"


def lab_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` with the learner's JupyterLab config (course_lib/machinery/learner_lab) first on the path."""
    env = dict(environ)
    rest = env.get("JUPYTER_CONFIG_PATH", "")
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(x for x in (str(LEARNER_LAB_CONFIG), rest) if x)
    return env


def _lab(args: argparse.Namespace, extra: list[str]) -> int:
    root = chain.find_root()
    work = Path(args.work).resolve() if args.work else root / "work"
    work.mkdir(exist_ok=True)
    added = copy_new_lessons(root, work)
    for path in added:
        print(f"added {path.relative_to(work.parent)}")
    print(f"course lab: {len(added)} new lessons copied; your own edits in {work} are kept.")
    home_result = home.write_home(work)
    if home_result.status == "kept":
        print(
            f"course lab: {home.HOME_NAME} left as it is ({home_result.reason}); "
            "delete it to get the current course map."
        )
    else:
        print(f"course lab: {home.HOME_NAME} {home_result.status}: start there.")
    if args.no_start:
        return 0
    lab_args = list(extra)
    if args.no_browser:
        lab_args.append("--no-browser")
    if args.port:
        lab_args.append(f"--ServerApp.port={args.port}")
    cmd = lab_command(work, lab_args)
    print("starting:", " ".join(cmd), flush=True)
    os.execve(cmd[0], cmd, lab_environment(os.environ))
    return 0  # not reached


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="course", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="generate source/ and release/ from the masters in notebooks/")
    b.add_argument("lessons", nargs="*", help="lesson ids (default: all)")
    b.add_argument("--check", action="store_true", help="change nothing; exit 1 if files differ")
    lab = sub.add_parser("lab", help="copy new lessons into work/ and start JupyterLab there")
    lab.add_argument("--no-browser", action="store_true", help="do not open a browser")
    lab.add_argument("--port", type=int, default=None, help="port for JupyterLab")
    lab.add_argument("--work", default=None, help="the learner's folder (default: work/)")
    lab.add_argument("--no-start", action="store_true", help="only copy lessons; do not start")
    grade_cli.add_parsers(sub)
    args, extra = parser.parse_known_args(argv)
    if getattr(args, "run", None):
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        return args.run(args)
    if args.command == "build":
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        return _build(args)
    return _lab(args, extra)


if __name__ == "__main__":
    sys.exit(main())
