"""Class-scale grading throughput: `course grade --jobs 1/2` against plain sequential nbgrader.

Makes a throwaway course with N submissions of one lesson (a real lesson from source/ if it exists,
else the grading fixture): mostly the reference solutions, plus every mutant of tests/mutants and
the untouched release, cycled. Each round grades the same submissions, each contender from a fresh course and gradebook:
  1. plain nbgrader:  `nbgrader autograde LESSON` then `nbgrader generate_feedback LESSON`
                      (sequential, one process, nbgrader's own Execute; timed separately),
  2. `course grade LESSON --jobs 2` (and `--jobs 1` with --with-jobs1).
The order alternates between rounds (plain first, then course grade first, ...), so a change in
the machine's speed during the run does not land on one contender only; the figures printed are
per-round ratios and medians over rounds. It also checks that every submission got the same
autograded score from both graders. Wall-clock and CPU time are both reported, side by side in one
run: on a shared, loaded machine the wall-clock ratios move with the other load, while the CPU
seconds of each run (of the whole process tree: every kernel, worker and probe is reaped, so
RUSAGE_CHILDREN counts it) say what the grading itself cost. "2-core estimate" is the speedup the
CPU times imply on an otherwise idle 2-core machine: plain's CPU seconds over course grade's CPU
seconds spread over --jobs cores.

Run: .venv/bin/python benchmarks/bench_grade.py [--lesson ID] [--n 40] [--rounds 3] [--sandbox bwrap]
(prints figures; asserts nothing; about 3.5 minutes per round of 40 on 2 cores)
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from course_lib.machinery import grading  # noqa: E402
from course_lib.machinery.grader import gradebook as gbk  # noqa: E402
from tests.mutants import mutants_for  # noqa: E402

FIXTURE = "cost99_grading_fixture"
BIN = Path(sys.executable).parent


def pick_lesson(wanted: str | None) -> str:
    """The lesson to grade: the one asked for, else cost01/pipe02 if built, else the fixture."""
    if wanted:
        return wanted
    for lesson in ("cost01_critical_path", "pipe02_fill_drain"):
        if (ROOT / "source" / lesson / f"{lesson}.ipynb").is_file():
            return lesson
    return FIXTURE


def make_course(dest: Path, lesson: str, n: int) -> list[str]:
    """A course at `dest` with `n` submissions of `lesson`; returns the student ids."""
    dest.mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", dest)
    (dest / "notebooks").mkdir()
    if lesson == FIXTURE:
        from course_lib.machinery import build as chain

        fixture = ROOT / "tests" / "fixtures" / "grading" / f"{lesson}.py"
        shutil.copy(fixture, dest / "notebooks")
        chain.build(dest, [lesson])
    else:
        for top in ("source", "release"):
            shutil.copytree(ROOT / top / lesson, dest / top / lesson)
    source = nbformat.read(dest / "source" / lesson / f"{lesson}.ipynb", as_version=4)
    release = nbformat.read(dest / "release" / lesson / f"{lesson}.ipynb", as_version=4)
    solutions = grading.solution_sources(source)
    variants = [("solutions", solutions)] * 3
    variants += [(f"mutant-{m.name}", {**solutions, **m.cells}) for m in mutants_for(lesson)]
    variants += [("untouched", None)]
    students = []
    for i in range(n):
        kind, cells = variants[i % len(variants)]
        student = f"s{i:03d}-{kind}"[:60]
        nb = release if cells is None else grading.fill_cells(release, cells)
        path = dest / "submitted" / student / lesson / f"{lesson}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(nb, path)
        students.append(student)
    return students


def _env(course: Path) -> dict[str, str]:
    return {
        **os.environ,
        "COURSE_ROOT": str(course),
        "PATH": f"{BIN}:{os.environ.get('PATH', '')}",
        "JUPYTER_CONFIG_DIR": str(course / ".jupyter"),
    }


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd: list, **kw) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall seconds, CPU seconds of the whole process tree, result) of one command."""
    cpu, start = _children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, **kw)
    return time.perf_counter() - start, _children_cpu() - cpu, proc


def plain_nbgrader(course: Path, lesson: str) -> tuple[tuple[float, float], tuple[float, float]]:
    """(wall, CPU) of `nbgrader autograde` and of `nbgrader generate_feedback` (sequential)."""
    env = _env(course)
    run = {"cwd": course, "env": env, "capture_output": True, "text": True}
    subprocess.run([BIN / "nbgrader", "generate_assignment", lesson, "--force"], **run, check=True)
    wall, cpu, _ = timed([BIN / "nbgrader", "autograde", lesson, "--force"], **run)
    fwall, fcpu, _ = timed([BIN / "nbgrader", "generate_feedback", lesson, "--force"], **run)
    return (wall, cpu), (fwall, fcpu)


def course_grade(course: Path, lesson: str, jobs: int, sandbox: str) -> tuple[float, float]:
    """(wall, CPU) of `course grade LESSON --jobs N` (includes setting the lesson up)."""
    cmd = [BIN / "course", "grade", lesson, "--jobs", str(jobs), "--sandbox", sandbox, "--quiet"]
    wall, cpu, proc = timed(cmd, cwd=course, env=_env(course), capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stdout[-2000:], proc.stderr[-2000:])
    return wall, cpu


def auto_scores(course: Path, lesson: str) -> dict[str, float]:
    """Autograded points per student in the course's gradebook."""
    url = f"sqlite:///{course / 'gradebook.db'}"
    return {s: v[0] for s, v in gbk.scores(url, gbk.course_id(course), lesson).items()}


def _median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", default=None)
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--with-jobs1", action="store_true", help="also time --jobs 1 each round")
    args = parser.parse_args()
    lesson = pick_lesson(args.lesson)
    n = args.n
    print(
        f"lesson {lesson}, {n} submissions, {args.rounds} rounds, {os.cpu_count()} cores, "
        f"sandbox {args.sandbox}"
    )
    names = ["plain", "jobs2"] + (["jobs1"] if args.with_jobs1 else [])
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    feedback: list[tuple[float, float]] = []
    mismatches: list[str] = []
    for r in range(args.rounds):
        # alternate the order (plain first, then course grade first, ...) so a drift in the
        # machine's speed during the run does not land on one contender only
        order = names if r % 2 == 0 else names[::-1]
        load = os.getloadavg()[0]
        with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
            courses = {name: Path(tmp) / name for name in names}
            for course in courses.values():
                make_course(course, lesson, n)
            for name in order:
                if name == "plain":
                    auto, fb = plain_nbgrader(courses[name], lesson)
                    runs[name].append(auto)
                    feedback.append(fb)
                else:
                    runs[name].append(
                        course_grade(courses[name], lesson, int(name[-1]), args.sandbox)
                    )
            scores = {name: auto_scores(course, lesson) for name, course in courses.items()}
        for name in names[1:]:
            for student, value in sorted(scores["plain"].items()):
                if scores[name].get(student) != value:
                    mismatches.append(
                        f"round {r + 1} {name} {student}: nbgrader {value}, "
                        f"course grade {scores[name].get(student)}"
                    )
        ratio = runs["plain"][-1][0] / runs["jobs2"][-1][0]
        print(
            f"round {r + 1} ({' then '.join(order)}, load {load:.1f} -> "
            f"{os.getloadavg()[0]:.1f}): plain {runs['plain'][-1][0]:.1f} s, "
            f"jobs2 {runs['jobs2'][-1][0]:.1f} s, wall ratio {ratio:.2f}x",
            flush=True,
        )

    plain_total = [(a[0] + f[0], a[1] + f[1]) for a, f in zip(runs["plain"], feedback, strict=True)]
    rows = [
        ("nbgrader autograde (sequential)", runs["plain"]),
        ("nbgrader autograde + generate_feedback", plain_total),
        ("course grade --jobs 2 (incl. feedback)", runs["jobs2"]),
    ]
    if args.with_jobs1:
        rows.append(("course grade --jobs 1 (incl. feedback)", runs["jobs1"]))
    print(f"\nmedians over {args.rounds} rounds")
    print(f"{'run':44s} {'wall s':>8s} {'CPU s':>8s} {'subs/min':>9s}")
    for name, values in rows:
        wall, cpu = _median([v[0] for v in values]), _median([v[1] for v in values])
        print(f"{name:44s} {wall:8.1f} {cpu:8.1f} {60 * n / wall:9.1f}")
    print("\nspeedup of --jobs 2 over       per-round wall ratios      median   2-core est. (CPU)")
    for name, values in (
        ("plain autograde", runs["plain"]),
        ("plain autograde + feedback", plain_total),
    ):
        ratios = [p[0] / j[0] for p, j in zip(values, runs["jobs2"], strict=True)]
        cpu_ratios = [p[1] / (j[1] / 2) for p, j in zip(values, runs["jobs2"], strict=True)]
        print(
            f"  {name:28s} {' '.join(f'{x:.2f}' for x in ratios):24s} "
            f"{_median(ratios):6.2f}x   {_median(cpu_ratios):6.2f}x"
        )
    cpu_plain = _median([v[1] for v in runs["plain"]]) / n
    cpu_ours = _median([v[1] for v in runs["jobs2"]]) / n
    print(f"CPU per submission (median): plain {cpu_plain:.2f} s, course grade {cpu_ours:.2f} s")
    total = args.rounds * n * (len(names) - 1)
    print(f"{total - len(mismatches)}/{total} gradings scored as plain nbgrader scored them")
    for line in mismatches:
        print("   " + line)


if __name__ == "__main__":
    main()
