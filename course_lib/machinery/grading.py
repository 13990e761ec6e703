"""Autograding in a course directory of nbgrader's layout, with the scores read back per grade cell.

`open_course` sets up a temporary (or given) nbgrader course with this course's configuration and
a gradebook of its own; `autograde` grades submissions there with plain nbgrader (grade cells run
in the student's kernel) and `grade_trusted` with `course grade` (the sandbox and the trusted
checker, as an instructor grades); both return one row per (student, grade cell).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pandas as pd

from course_lib.machinery import build as chain


@dataclass(frozen=True)
class Course:
    """An nbgrader course directory and the API object that works on it."""

    root: Path
    api: object

    @property
    def db_url(self) -> str:
        return f"sqlite:///{self.root / 'gradebook.db'}"


def open_course(course_root: Path, config_root: Path | None = None) -> Course:
    """An nbgrader API bound to `course_root`, configured from the course's nbgrader_config.py."""
    from course_lib.machinery._nbgrader import course_api, course_config

    config = course_config(config_root or chain.find_root())
    return Course(Path(course_root), course_api(config, Path(course_root)))


def setup_lesson(course: Course, source_notebook: Path, lesson: str) -> None:
    """Put the instructor notebook into the course and record the lesson in its gradebook."""
    target = course.root / "source" / lesson / f"{lesson}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source_notebook, target)
    result = course.api.generate_assignment(lesson, force=True, create=True)
    if not result.get("success"):
        raise RuntimeError(
            f"{lesson}: generate_assignment failed:\n{result.get('error') or result.get('log')}"
        )


def submit(course: Course, lesson: str, student: str, nb: nbformat.NotebookNode) -> Path:
    """Place a student's notebook where nbgrader's autograde looks for it."""
    path = course.root / "submitted" / student / lesson / f"{lesson}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def autograde(course: Course, lesson: str, students: list[str]) -> pd.DataFrame:
    """Autograde each student; one row per (student, grade cell) with score and max_score."""
    from nbgrader.api import Gradebook

    for student in students:
        result = course.api.autograde(lesson, student, force=True, create=True)
        if not result.get("success"):
            raise RuntimeError(
                f"{lesson}/{student}: autograde failed:\n{result.get('error') or result.get('log')}"
            )
    rows = []
    with Gradebook(course.db_url) as gb:
        for student in students:
            nb = gb.find_submission_notebook(lesson, lesson, student)
            for grade in nb.grades:
                rows.append(
                    {
                        "student": student,
                        "grade_id": grade.name,
                        "score": float(grade.score or 0.0),
                        "max_score": float(grade.max_score),
                        "auto": grade.auto_score is not None,
                        "needs_manual_grade": bool(grade.needs_manual_grade),
                    }
                )
    return pd.DataFrame(rows)


def fill_cells(
    release_nb: nbformat.NotebookNode, sources: Mapping[str, str]
) -> nbformat.NotebookNode:
    """A copy of the student notebook with the named cells' sources replaced (as a student would)."""
    nb = nbformat.from_dict(release_nb)
    found = set()
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in sources:
            cell.source = sources[gid]
            found.add(gid)
    missing = set(sources) - found
    if missing:
        raise KeyError(f"no cells with grade_id {sorted(missing)} in the notebook")
    return nb


def solution_sources(source_nb: nbformat.NotebookNode) -> dict[str, str]:
    """The instructor's solution cells, by grade_id, with the solution markers stripped."""
    out = {}
    for cell in source_nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            lines = [
                line
                for line in cell.source.splitlines()
                if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION")
            ]
            out[meta["grade_id"]] = "\n".join(lines)
    return out


def graded_cells_only(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of a notebook with only its nbgrader cells (setup, solutions, grade cells, the
    explained answer): what a mutant needs, since solutions read only the setup and earlier
    solutions (tests/test_lesson_budget.py) — and it grades in a fraction of the time."""
    nb = nbformat.from_dict(nb)
    nb.cells = [c for c in nb.cells if "nbgrader" in c.get("metadata", {})]
    return nb


def grade_trusted(
    course_root: Path,
    lesson: str,
    source_notebook: Path,
    submissions: Mapping[str, nbformat.NotebookNode],
    jobs: int = 2,
    config_root: Path | None = None,
) -> pd.DataFrame:
    """Grade submissions with `course grade` (the sandbox and the trusted checker) in a fresh
    course at `course_root`; one row per (student, grade cell), as `autograde` returns."""
    from nbgrader.api import Gradebook

    from course_lib.machinery.grader.runner import GradeOptions, grade_lesson

    root = Path(course_root)
    (root / "source" / lesson).mkdir(parents=True, exist_ok=True)
    shutil.copyfile(
        (config_root or chain.find_root()) / "nbgrader_config.py", root / "nbgrader_config.py"
    )
    shutil.copyfile(source_notebook, root / "source" / lesson / f"{lesson}.ipynb")
    for student, nb in submissions.items():
        path = root / "submitted" / student / lesson / f"{lesson}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, path)
    options = GradeOptions(jobs=jobs, sandbox="auto", progress=False, timeout=600.0)
    report = grade_lesson(root, lesson, options)
    failed = report.rows[report.rows.status.isin(["error", "error_student"])]
    if len(failed):
        raise RuntimeError(f"{lesson}: course grade failed for\n{failed.to_string()}")
    rows = []
    with Gradebook(report.db_url) as gb:
        for student in submissions:
            nb = gb.find_submission_notebook(lesson, lesson, student)
            for grade in nb.grades:
                rows.append(
                    {
                        "student": student,
                        "grade_id": grade.name,
                        "score": float(grade.score or 0.0),
                        "max_score": float(grade.max_score),
                        "auto": grade.auto_score is not None,
                        "needs_manual_grade": bool(grade.needs_manual_grade),
                    }
                )
    return pd.DataFrame(rows)
