"""The course gradebook: make sure a lesson is in it, copy its cells out, write results back.

Only the parent `course grade` process writes the course gradebook (SQLite or PostgreSQL, nbgrader's
own schema through nbgrader's Gradebook API). Workers grade against a private SQLite copy of the
lesson's cells (`make_template`), so student code and worker crashes never touch the real one.
`record` writes one student's result in one transaction while holding an exclusive file lock, so
two `course grade` runs on one machine cannot interleave; with PostgreSQL, runs on several machines
are safe as long as each grades its own students (`--student`).
"""

from __future__ import annotations

import contextlib
import fcntl
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from course_lib.machinery._nbgrader import course_api
from course_lib.machinery._nbgrader import course_config as nbgrader_config


@dataclass(frozen=True)
class GradeRecord:
    """One grade cell's result for one student, as a worker found it."""

    notebook: str
    name: str
    auto_score: float | None
    max_score: float
    needs_manual_grade: bool


@dataclass(frozen=True)
class StudentResult:
    """Everything a worker reports about one student."""

    student: str
    status: str
    detail: str = ""
    flags: tuple[str, ...] = ()
    grades: tuple[GradeRecord, ...] = ()
    comments: tuple[tuple[str, str, str | None], ...] = ()  # (notebook, cell, auto_comment)
    timestamp: str | None = None
    penalties: tuple[tuple[str, float | None], ...] = ()  # (notebook, late penalty)
    seconds: float = 0.0
    autograded: str | None = None  # folder with the autograded notebook (instructor's copy)
    feedback: str | None = None  # feedback HTML file
    files: tuple[str, ...] = field(default=())  # submission files copied to autograded/

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        from dataclasses import asdict

        return asdict(self)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> StudentResult:
        """Inverse of to_dict."""
        data = dict(data)
        data["grades"] = tuple(GradeRecord(**g) for g in data.get("grades", ()))
        data["comments"] = tuple(tuple(c) for c in data.get("comments", ()))
        data["flags"] = tuple(data.get("flags", ()))
        data["files"] = tuple(data.get("files", ()))
        data["penalties"] = tuple(tuple(p) for p in data.get("penalties", ()))
        return StudentResult(**data)


def default_db_url(root: Path) -> str:
    """The gradebook URL: nbgrader_config.py's CourseDirectory.db_url, else root/gradebook.db."""
    config = nbgrader_config(root)
    url = config.CourseDirectory.get("db_url") if "CourseDirectory" in config else None
    return str(url) if url else f"sqlite:///{root / 'gradebook.db'}"


def course_id(root: Path) -> str:
    """The course id nbgrader_config.py sets (nbgrader's default if it sets none)."""
    config = nbgrader_config(root)
    cid = config.CourseDirectory.get("course_id") if "CourseDirectory" in config else None
    return str(cid) if cid else "default_course"


def has_lesson(db_url: str, cid: str, lesson: str) -> bool:
    """Whether the gradebook already records `lesson`."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url, cid) as gb:
        try:
            gb.find_assignment(lesson)
        except MissingEntry:
            return False
    return True


def ensure_lesson(root: Path, db_url: str, lesson: str) -> bool:
    """Record `lesson` in the gradebook from source/ if it is missing; True if it was added.

    nbgrader's generate_assignment runs in a throwaway course so release/ is not touched.
    """

    cid = course_id(root)
    if has_lesson(db_url, cid, lesson):
        return False
    source = root / "source" / lesson / f"{lesson}.ipynb"
    if not source.is_file():
        raise FileNotFoundError(f"{lesson}: not in the gradebook and no {source} to set it up from")
    with tempfile.TemporaryDirectory(prefix="course-setup-") as tmp:
        course = Path(tmp)
        (course / "source" / lesson).mkdir(parents=True)
        (course / "source" / lesson / source.name).write_bytes(source.read_bytes())
        api = course_api(nbgrader_config(root), course, db_url)
        with gradebook_lock(root):
            result = api.generate_assignment(lesson, force=True, create=True)
    if not result.get("success"):
        if has_lesson(db_url, cid, lesson):  # another machine set it up at the same moment
            return False
        raise RuntimeError(f"{lesson}: generate_assignment failed:\n{result.get('error')}")
    return True


def make_template(db_url: str, cid: str, lesson: str, path: Path) -> None:
    """A private SQLite gradebook at `path` holding only `lesson` and its cells."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url, cid) as src, Gradebook(f"sqlite:///{path}", cid) as dst:
        assignment = src.find_assignment(lesson)
        dst.update_or_create_assignment(lesson, duedate=assignment.duedate)
        for nb in assignment.notebooks:
            dst.update_or_create_notebook(nb.name, lesson, kernelspec=nb.kernelspec)
            for c in nb.grade_cells:
                dst.update_or_create_grade_cell(
                    c.name, nb.name, lesson, max_score=c.max_score, cell_type=c.cell_type
                )
            for c in nb.solution_cells:
                dst.update_or_create_solution_cell(c.name, nb.name, lesson)
            for c in nb.task_cells:
                dst.update_or_create_task_cell(
                    c.name, nb.name, lesson, max_score=c.max_score, cell_type=c.cell_type
                )
            for c in nb.source_cells:
                dst.update_or_create_source_cell(
                    c.name,
                    nb.name,
                    lesson,
                    source=c.source,
                    checksum=c.checksum,
                    locked=c.locked,
                    cell_type=c.cell_type,
                )


@contextlib.contextmanager
def gradebook_lock(root: Path) -> Iterator[None]:
    """An exclusive lock (fcntl) on root/.gradebook.lock for the duration of a write."""
    path = root / ".gradebook.lock"
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def record(root: Path, db_url: str, cid: str, lesson: str, result: StudentResult) -> None:
    """Write one student's grades, comments and flag into the gradebook (keeps manual grades)."""
    from nbgrader.api import Gradebook

    if result.status == "missing":
        return
    with gradebook_lock(root), Gradebook(db_url, cid) as gb:
        gb.update_or_create_student(result.student)
        kwargs = {"timestamp": result.timestamp} if result.timestamp else {}
        submission = gb.update_or_create_submission(lesson, result.student, **kwargs)
        grades = {(g.notebook, g.name): g for g in result.grades}
        comments = {(n, c): text for n, c, text in result.comments}
        penalties = dict(result.penalties)
        for nb in submission.notebooks:
            for grade in nb.grades:
                found = grades.get((nb.name, grade.name))
                grade.auto_score = found.auto_score if found else 0.0
                grade.needs_manual_grade = grade.manual_score is not None or (
                    found is not None and found.needs_manual_grade
                )
            for comment in nb.comments:
                comment.auto_comment = comments.get((nb.name, comment.name))
            nb.flagged = bool(result.flags) or result.status != "graded"
            nb.late_submission_penalty = penalties.get(nb.name)
        gb.db.commit()


def scores(db_url: str, cid: str, lesson: str) -> dict[str, tuple[float, float, float]]:
    """(score, max_score, points awaiting manual grading) per student with a submission."""
    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(db_url, cid) as gb:
        assignment = gb.find_assignment(lesson)
        for sub in assignment.submissions:
            pending = sum(
                g.max_score for nb in sub.notebooks for g in nb.grades if g.needs_manual_grade
            )
            out[sub.student.id] = (float(sub.score), float(sub.max_score), float(pending))
    return out


def max_score(db_url: str, cid: str, lesson: str) -> float:
    """Points available in `lesson`."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url, cid) as gb:
        return float(gb.find_assignment(lesson).max_score)
