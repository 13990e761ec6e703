"""Class-scale grading throughput: `course grade --jobs 1/2` against plain sequential nbgrader.

Makes a throwaway course with N submissions of one lesson (a real lesson from source/ if it exists,
else the grading fixture): mostly the reference solutions, plus every mutant of tests/mutants and
the untouched release, cycled. Grades the same submissions three times from a fresh gradebook:
  1. plain nbgrader:  `nbgrader autograde LESSON` then `nbgrader generate_feedback LESSON`
                      (sequential, one process, nbgrader's own Execute; timed separately),
  2. `course grade LESSON --jobs 1`,
  3. `course grade LESSON --jobs 2`
and prints submissions per minute, the speedups, and whether every submission got the same
autograded score from both graders. Wall-clock and CPU time are both reported, side by side in one
run: on a shared, loaded machine the wall-clock ratios move with the other load, while the CPU
seconds of each run (of the whole process tree: every kernel, worker and probe is reaped, so
RUSAGE_CHILDREN counts it) say what the grading itself cost. "2-core estimate" is the speedup the
CPU times imply on an otherwise idle 2-core machine: plain's CPU seconds over course grade's CPU
seconds spread over --jobs cores.

Run: .venv/bin/python benchmarks/bench_grade.py [--lesson ID] [--n 40] [--sandbox bwrap]
(prints figures; asserts nothing; takes several minutes on 2 cores)
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", default=None)
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--sandbox", default="auto")
    args = parser.parse_args()
    lesson = pick_lesson(args.lesson)
    n = args.n
    print(f"lesson {lesson}, {n} submissions, {os.cpu_count()} cores, sandbox {args.sandbox}")
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
        base = Path(tmp)
        courses = {name: base / name for name in ("plain", "jobs1", "jobs2")}
        for course in courses.values():
            make_course(course, lesson, n)
        plain_auto, plain_feedback = plain_nbgrader(courses["plain"], lesson)
        jobs1 = course_grade(courses["jobs1"], lesson, 1, args.sandbox)
        jobs2 = course_grade(courses["jobs2"], lesson, 2, args.sandbox)
        scores = {name: auto_scores(course, lesson) for name, course in courses.items()}
    print(f"load average after:  {os.getloadavg()}")
    plain_total = (plain_auto[0] + plain_feedback[0], plain_auto[1] + plain_feedback[1])
    rows = [
        ("nbgrader autograde (sequential)", plain_auto),
        ("nbgrader autograde + generate_feedback", plain_total),
        ("course grade --jobs 1 (incl. feedback)", jobs1),
        ("course grade --jobs 2 (incl. feedback)", jobs2),
    ]
    print(f"\n{'run':44s} {'wall s':>8s} {'CPU s':>8s} {'subs/min':>9s}")
    for name, (wall, cpu) in rows:
        print(f"{name:44s} {wall:8.1f} {cpu:8.1f} {60 * n / wall:9.1f}")
    print("\nspeedup of --jobs 2 over                  wall-clock   2-core estimate (CPU)")
    for name, (wall, cpu) in (
        ("plain autograde", plain_auto),
        ("plain autograde + feedback", plain_total),
    ):
        print(f"  {name:38s} {wall / jobs2[0]:8.2f}x   {cpu / (jobs2[1] / 2):8.2f}x")
    print(f"  {'--jobs 1':38s} {jobs1[0] / jobs2[0]:8.2f}x")
    print(f"CPU per submission: plain {plain_auto[1] / n:.2f} s, course grade {jobs2[1] / n:.2f} s")
    for name in ("jobs1", "jobs2"):
        same = sum(scores[name].get(s) == v for s, v in scores["plain"].items())
        print(
            f"{name}: {same}/{len(scores['plain'])} students scored as plain nbgrader scored them"
        )
        for student, value in sorted(scores["plain"].items()):
            if scores[name].get(student) != value:
                print(f"   {student}: nbgrader {value}, course grade {scores[name].get(student)}")


if __name__ == "__main__":
    main()
