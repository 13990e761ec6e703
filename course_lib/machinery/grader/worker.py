"""A grading worker: grades one student at a time, each in a private throwaway nbgrader course.

`course grade` starts N of these (``python -m course_lib.machinery.grader.worker``) and sends each a job per
line on stdin; the worker answers one JSON line per job on its original stdout (everything else it
or nbgrader prints goes to its log). A worker never runs student code itself: that happens in the
sandboxed kernel. For one student it
1. finds the notebook (a single renamed notebook is accepted and flagged), reads it strictly
   and repairs its nbgrader metadata against the gradebook's cells;
2. audits the student's cells statically;
3. runs nbgrader's own autograde in a temporary course whose gradebook is a copy of the lesson's
   cells only, with GuardedExecute in place of nbgrader's Execute;
4. renders nbgrader's feedback from a copy of the autograded notebook without hidden tests.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import shutil
import sys
import traceback
from pathlib import Path
from time import monotonic
from typing import Any

import nbformat

from course_lib.machinery._nbgrader import course_api
from course_lib.machinery.grader.audit import audit_sources, bound_names
from course_lib.machinery.grader.gradebook import GradeRecord, StudentResult, nbgrader_config
from course_lib.machinery.grader.notebook import (
    CorruptNotebook,
    LessonSpec,
    read_submission,
    repair,
    strip_hidden_tests,
)

MAX_FILE_BYTES = 50 * 2**20  # larger extra files in a submission folder are not copied


def find_notebook(folder: Path, lesson: str) -> tuple[Path | None, list[str], str]:
    """(notebook, flags, problem): the lesson notebook, or the only notebook under another name."""
    expected = folder / f"{lesson}.ipynb"
    if expected.is_file() and not expected.is_symlink():
        return expected, [], ""
    found = sorted(
        p
        for p in folder.glob("*.ipynb")
        if p.is_file() and not p.is_symlink() and not p.name.startswith(".")
    )
    if len(found) == 1:
        return found[0], ["renamed_notebook"], ""
    if not found:
        return None, [], f"no notebook in submitted/<student>/{lesson}/"
    names = ", ".join(p.name for p in found)
    return None, [], f"{len(found)} notebooks ({names}) and none named {lesson}.ipynb"


def copy_files(src: Path, dst: Path, skip_notebooks: bool = True) -> tuple[list[str], list[str]]:
    """Copy a submission folder's regular files (never symlinks); (copied, flags)."""
    copied, flags = [], []
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if path.is_symlink():
            flags.append("symlink_skipped")
            continue
        if not path.is_file() or (skip_notebooks and path.suffix == ".ipynb"):
            continue
        if ".ipynb_checkpoints" in rel.parts or path.stat().st_size > MAX_FILE_BYTES:
            continue
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        copied.append(rel.as_posix())
    return copied, sorted(set(flags))


def zero_grades(spec: LessonSpec) -> tuple[GradeRecord, ...]:
    """A zero for every grade cell (an unreadable notebook earns nothing)."""
    return tuple(
        GradeRecord(spec.notebook, c.name, 0.0, c.points, False) for c in spec.cells if c.grade
    )


def student_sources(nb: nbformat.NotebookNode) -> list[str]:
    """Sources of the code cells a student controls (not locked: those nbgrader restores)."""
    return [
        c.source
        for c in nb.cells
        if c.cell_type == "code" and not c.metadata.get("nbgrader", {}).get("locked")
    ]


class Worker:
    """Grades jobs for one lesson; holds the nbgrader configuration loaded once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config = nbgrader_config(root)
        self.specs: dict[str, LessonSpec] = {}

    def spec(self, path: str) -> LessonSpec:
        """The lesson spec stored at `path` (read once)."""
        if path not in self.specs:
            self.specs[path] = LessonSpec.from_json(Path(path).read_text("utf-8"))
        return self.specs[path]

    def grade(self, job: dict[str, Any]) -> StudentResult:
        """Grade one student as `job` describes; never raises for anything the student did."""
        start = monotonic()
        student, lesson = job["student"], job["lesson"]
        spec = self.spec(job["spec"])
        work = Path(job["work_dir"])
        folder = Path(job["submission"]) if job.get("submission") else None
        if folder is None or not folder.is_dir():
            return StudentResult(student, "missing", f"no folder submitted/{student}/{lesson}/")
        path, flags, problem = find_notebook(folder, lesson)
        if path is None:
            return StudentResult(student, "missing", problem, tuple(flags))
        try:
            nb, repairs = repair(read_submission(path), spec)
        except (CorruptNotebook, nbformat.ValidationError) as exc:
            detail = f"{path.name}: {str(exc).splitlines()[0][:300]}"
            return StudentResult(
                student,
                "corrupt",
                detail,
                tuple(flags),
                zero_grades(spec),
                seconds=monotonic() - start,
            )
        flags += repairs
        locked = [c.source for c in spec.cells if c.locked and c.cell_type == "code"]
        flags += audit_sources(student_sources(nb), bound_names(locked))
        result = self._autograde(job, spec, nb, folder, work, flags)
        return dataclasses.replace(result, seconds=round(monotonic() - start, 3))

    def _autograde(
        self,
        job: dict[str, Any],
        spec: LessonSpec,
        nb: nbformat.NotebookNode,
        folder: Path,
        work: Path,
        flags: list[str],
    ) -> StudentResult:
        from nbgrader.api import Gradebook
        from nbgrader.converters import Autograde
        from nbgrader.preprocessors import Execute

        from course_lib.machinery.grader.execute import GuardedExecute

        student, lesson, cid = job["student"], job["lesson"], job["course_id"]
        course = work / "course"
        target = course / "submitted" / student / lesson
        target.mkdir(parents=True)
        files, link_flags = copy_files(folder, target)
        flags += link_flags
        nbformat.write(nb, target / f"{lesson}.ipynb")
        exec_dir, run_dir = work / "exec", work / "run"
        exec_dir.mkdir()
        copy_files(folder, exec_dir)
        if job.get("mpl_cache") and Path(job["mpl_cache"]).is_dir():
            shutil.copytree(job["mpl_cache"], run_dir / "mpl")
        db = course / "gradebook.db"
        shutil.copyfile(job["template"], db)
        config = copy.deepcopy(self.config)
        config.CourseDirectory.course_id = cid
        defaults = Autograde.class_traits()["autograde_preprocessors"].default()
        steps = [GuardedExecute if p is Execute else p for p in defaults]
        config.Autograde.autograde_preprocessors = steps
        report_path = work / "execution.json"
        config.GuardedExecute.budget = float(job["budget"])
        config.GuardedExecute.run_dir = str(run_dir)
        config.GuardedExecute.exec_dir = str(exec_dir)
        config.GuardedExecute.report_path = str(report_path)
        config.GuardedExecute.sandbox_mode = job["sandbox"]
        if job.get("cell_timeout"):
            config.GuardedExecute.timeout = int(job["cell_timeout"])
        api = course_api(config, course, f"sqlite:///{db}")
        outcome = api.autograde(lesson, student, force=True, create=True)
        report = json.loads(report_path.read_text()) if report_path.is_file() else {}
        flags += report.get("flags", [])
        status, detail = report.get("status", "error"), report.get("detail", "")
        if not outcome.get("success"):
            lines = (outcome.get("error") or outcome.get("log") or "").strip().splitlines()
            status, detail = "error", "nbgrader autograde failed: " + (lines[-1] if lines else "")
            return StudentResult(
                student, status, detail[:500], tuple(sorted(set(flags))), zero_grades(spec)
            )
        with Gradebook(f"sqlite:///{db}", cid) as gb:
            sub = gb.find_submission(lesson, student)
            grades = tuple(
                GradeRecord(n.name, g.name, g.auto_score, float(g.max_score), g.needs_manual_grade)
                for n in sub.notebooks
                for g in n.grades
            )
            comments = tuple(
                (n.name, c.name, c.auto_comment) for n in sub.notebooks for c in n.comments
            )
            stamp = sub.timestamp.isoformat() if sub.timestamp else None
            penalties = tuple((n.name, n.late_submission_penalty) for n in sub.notebooks)
        autograded = course / "autograded" / student / lesson
        feedback = self._feedback(
            api, spec, autograded / f"{lesson}.ipynb", course, student, lesson
        )
        return StudentResult(
            student,
            status,
            detail,
            tuple(sorted(set(flags))),
            grades,
            comments,
            stamp,
            penalties=penalties,
            autograded=str(autograded),
            feedback=str(feedback) if feedback else None,
            files=tuple(files),
        )

    @staticmethod
    def _feedback(
        api: Any, spec: LessonSpec, notebook: Path, course: Path, student: str, lesson: str
    ) -> Path | None:
        """nbgrader's feedback HTML rendered from a copy of the notebook without hidden tests."""
        if not notebook.is_file():
            return None
        original = notebook.read_bytes()
        clean = strip_hidden_tests(nbformat.reads(original.decode("utf-8"), as_version=4), spec)
        nbformat.write(clean, notebook)
        try:
            api.generate_feedback(lesson, student, force=True)
        finally:
            notebook.write_bytes(original)
        html = course / "feedback" / student / lesson / f"{lesson}.html"
        return html if html.is_file() else None


def _error_result(job: dict[str, Any], exc: BaseException) -> StudentResult:
    last = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return StudentResult(job.get("student", "?"), "error", f"grader error: {last}"[:500])


def main() -> None:
    """Serve jobs from stdin (one JSON object per line) until stdin closes."""
    import warnings

    warnings.filterwarnings("ignore", message=".*not in session.*")  # nbgrader's SQLAlchemy noise
    reply = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # stray prints from libraries go to the log, not into the protocol
    sys.stdout = sys.stderr
    workers: dict[str, Worker] = {}
    for line in sys.stdin:
        job = json.loads(line)
        try:
            worker = workers.get(job["root"]) or workers.setdefault(
                job["root"], Worker(Path(job["root"]))
            )
            result = worker.grade(job)
        except Exception as exc:  # a grader bug for one student must not stop the others
            traceback.print_exc()
            result = _error_result(job, exc)
        reply.write(json.dumps({"id": job["id"], "result": result.to_dict()}) + "\n")


if __name__ == "__main__":
    main()
