"""A grading worker: grades one student at a time, each in a private throwaway nbgrader course.

`course grade` starts N of these (``python -m course_lib.machinery.grader.worker``) and sends each a job per
line on stdin; the worker answers one JSON line per job on its original stdout (everything else it
or nbgrader prints goes to its log). A worker never runs student code itself: that happens in the
student's sandbox (the kernel, then probes). For one student it
1. refuses a lesson folder or notebook that is a symbolic link (or leads outside the student's
   folder), finds the notebook (a single renamed notebook is accepted and flagged), reads it
   strictly and repairs its nbgrader metadata against the gradebook's cells;
2. audits the student's cells and .py files statically (flags for review);
3. runs nbgrader's own autograde in a temporary course whose gradebook is a copy of the lesson's
   cells only, with GuardedExecute in place of nbgrader's Execute: the grade cells run in the
   trusted checker here, in this process, on data from the sandbox;
4. renders nbgrader's feedback from a copy of the autograded notebook without hidden tests.
The submission time recorded is when the notebook arrived on this machine, never the student's own
timestamp.txt (which is checked and flagged when it cannot be right).
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
MAX_FILES_BYTES = 200 * 2**20  # all extra files together (the sandbox's /tmp holds a copy)
INTERNAL_STUDENT = "student"  # the student's id inside the throwaway course (any folder name works)


class RefusedSubmission(ValueError):
    """A submission that must not be graded as it stands (a link to elsewhere); says why."""


def check_folder(root: Path, student: str, lesson: str, folder: Path) -> None:
    """Refuse a lesson folder that is a link or resolves outside submitted/<student>/<lesson>/."""
    student_dir = root / "submitted" / student
    for path in (student_dir, folder):
        if path.is_symlink():
            raise RefusedSubmission(f"{path.relative_to(root)} is a symbolic link: not graded")
    real = folder.resolve()
    if real != (student_dir.resolve() / lesson) or not real.is_relative_to(
        (root / "submitted").resolve()
    ):
        raise RefusedSubmission("the lesson folder leads outside submitted/: not graded")


def find_notebook(folder: Path, lesson: str) -> tuple[Path | None, list[str], str]:
    """(notebook, flags, problem): the lesson notebook, or the only notebook under another name."""
    expected = folder / f"{lesson}.ipynb"
    if expected.is_symlink():
        raise RefusedSubmission(f"{expected.name} is a symbolic link: not graded")
    if expected.is_file():
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


SKIPPED_FILES = ("timestamp.txt",)  # never handed to nbgrader: the student wrote it


def copy_files(
    src: Path, dst: Path, skip_notebooks: bool = True, budget: int = MAX_FILES_BYTES
) -> tuple[list[str], list[str]]:
    """Copy a submission folder's regular files (never symlinks, at most MAX_FILE_BYTES each and
    `budget` bytes in all); (copied, flags)."""
    copied, flags = [], []
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if path.is_symlink():
            flags.append("symlink_skipped")
            continue
        if not path.is_file() or (skip_notebooks and path.suffix == ".ipynb"):
            continue
        if ".ipynb_checkpoints" in rel.parts or rel.as_posix() in SKIPPED_FILES:
            continue
        size = path.stat().st_size
        if size > MAX_FILE_BYTES or size > budget:
            flags.append("files_skipped:too_large")
            continue
        budget -= size
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(path, target)
        except OSError:
            flags.append("files_skipped:unreadable")
            continue
        copied.append(rel.as_posix())
    return copied, sorted(set(flags))


def arrival_time(notebook: Path, folder: Path) -> tuple[str, list[str]]:
    """When the submission arrived here (the notebook's inode change time, which its owner cannot
    set), as an ISO UTC string; and flags for a timestamp.txt that cannot be right."""
    from datetime import datetime, timedelta, timezone

    arrived = datetime.fromtimestamp(notebook.stat().st_ctime, tz=timezone.utc)
    flags: list[str] = []
    claim = folder / "timestamp.txt"
    if claim.is_file() and not claim.is_symlink():
        from nbgrader.utils import parse_utc

        try:
            text = claim.read_bytes()[:200].decode("utf-8").strip()
            stated = parse_utc(text) if text else None
        except (ValueError, UnicodeDecodeError, OverflowError, TypeError):
            stated, flags = None, ["timestamp:unparsable"]
        if stated is not None:
            stated = stated if stated.tzinfo else stated.replace(tzinfo=timezone.utc)
            if stated > datetime.now(timezone.utc) + timedelta(minutes=5):
                flags.append("timestamp:future")
            elif stated > arrived + timedelta(minutes=5):
                flags.append("timestamp:after_arrival")
    return arrived.replace(tzinfo=None).isoformat(), flags


def zero_grades(spec: LessonSpec) -> tuple[GradeRecord, ...]:
    """A zero for every grade cell (an unreadable notebook earns nothing)."""
    return tuple(
        GradeRecord(spec.notebook, c.name, 0.0, c.points, False) for c in spec.cells if c.grade
    )


def own_modules(folder: Path, limit: int = 2 * 2**20) -> list[str]:
    """The sources of the .py files in a submission folder (a student's own helper modules)."""
    out = []
    for path in sorted(folder.rglob("*.py")):
        if path.is_symlink() or not path.is_file() or path.stat().st_size > limit:
            continue
        try:
            out.append(path.read_text("utf-8", errors="replace"))
        except OSError:
            continue
    return out[:50]


def student_sources(nb: nbformat.NotebookNode) -> list[str]:
    """Sources of the code cells a student controls (not locked: those nbgrader restores)."""
    return [
        c.source
        for c in nb.cells
        if c.cell_type == "code" and not c.metadata.get("nbgrader", {}).get("locked")
    ]


def feedback_exporter() -> type:
    """nbconvert's HTMLExporter with the Jinja templates compiled once per worker: nbgrader makes
    a new exporter, so a new Jinja environment, for every student's feedback, which would compile
    the same templates each time. The bytecode cache is keyed by template name and source
    checksum (a changed template is compiled anew); the rendered HTML is the same."""
    from jinja2.bccache import BytecodeCache
    from nbconvert.exporters import HTMLExporter

    class MemoryCache(BytecodeCache):
        def __init__(self) -> None:
            self.codes: dict[str, bytes] = {}

        def load_bytecode(self, bucket: Any) -> None:
            code = self.codes.get(bucket.key)
            if code is not None:
                bucket.bytecode_from_string(code)

        def dump_bytecode(self, bucket: Any) -> None:
            self.codes[bucket.key] = bucket.bytecode_to_string()

    cache = MemoryCache()

    class FeedbackExporter(HTMLExporter):
        def _create_environment(self) -> Any:
            environment = super()._create_environment()
            environment.bytecode_cache = cache
            return environment

    return FeedbackExporter


class Worker:
    """Grades jobs for one lesson; holds the nbgrader configuration loaded once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config = nbgrader_config(root)
        self.specs: dict[str, LessonSpec] = {}
        self.exporter = feedback_exporter()

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
        try:
            if folder is not None:
                check_folder(self.root, student, lesson, folder)
            if folder is None or not folder.is_dir():
                return StudentResult(student, "missing", f"no folder submitted/{student}/{lesson}/")
            path, flags, problem = find_notebook(folder, lesson)
        except RefusedSubmission as exc:
            return StudentResult(
                student, "corrupt", str(exc), ("symlink_refused",), zero_grades(spec)
            )
        if path is None:
            return StudentResult(student, "missing", problem, tuple(flags))
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in student):
            flags.append("student_name:control_characters")
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
        if path.stat().st_nlink > 1:
            flags.append("hardlinked_notebook")
        stamp, stamp_flags = arrival_time(path, folder)
        flags += stamp_flags
        locked = [c.source for c in spec.cells if c.locked and c.cell_type == "code"]
        flags += audit_sources(student_sources(nb) + own_modules(folder), bound_names(locked))
        result = self._autograde(job, spec, nb, folder, work, flags)
        return dataclasses.replace(result, timestamp=stamp, seconds=round(monotonic() - start, 3))

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
        internal = INTERNAL_STUDENT
        course = work / "course"
        target = course / "submitted" / internal / lesson
        target.mkdir(parents=True)
        files, link_flags = copy_files(folder, target)
        flags += link_flags
        nbformat.write(nb, target / f"{lesson}.ipynb")
        exec_dir, run_dir = work / "exec", work / "run"
        exec_dir.mkdir()
        copy_files(folder, exec_dir)
        db = course / "gradebook.db"
        shutil.copyfile(job["template"], db)
        config = copy.deepcopy(self.config)
        config.CourseDirectory.course_id = cid
        defaults = Autograde.class_traits()["autograde_preprocessors"].default()
        steps = [GuardedExecute if p is Execute else p for p in defaults]
        config.Autograde.autograde_preprocessors = steps
        config.GenerateFeedback.exporter_class = self.exporter
        report_path = work / "execution.json"
        config.GuardedExecute.budget = float(job["budget"])
        config.GuardedExecute.run_dir = str(run_dir)
        config.GuardedExecute.exec_dir = str(exec_dir)
        config.GuardedExecute.report_path = str(report_path)
        config.GuardedExecute.sandbox_mode = job["sandbox"]
        config.GuardedExecute.spec_path = str(job["spec"])
        if job.get("mpl_cache") and Path(job["mpl_cache"]).is_dir():
            config.GuardedExecute.mpl_cache = str(job["mpl_cache"])
        if job.get("cell_timeout"):
            config.GuardedExecute.timeout = int(job["cell_timeout"])
        api = course_api(config, course, f"sqlite:///{db}")
        outcome = api.autograde(lesson, internal, force=True, create=True)
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
            sub = gb.find_submission(lesson, internal)
            grades = tuple(
                GradeRecord(n.name, g.name, g.auto_score, float(g.max_score), g.needs_manual_grade)
                for n in sub.notebooks
                for g in n.grades
            )
            comments = tuple(
                (n.name, c.name, c.auto_comment) for n in sub.notebooks for c in n.comments
            )
            penalties = tuple((n.name, n.late_submission_penalty) for n in sub.notebooks)
        autograded = course / "autograded" / internal / lesson
        feedback = self._feedback(
            api, spec, autograded / f"{lesson}.ipynb", course, internal, lesson
        )
        return StudentResult(
            student,
            status,
            detail,
            tuple(sorted(set(flags))),
            grades,
            comments,
            None,
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
    os.environ["MPLBACKEND"] = "Agg"  # the trusted checker runs the lesson's setup cells here
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
