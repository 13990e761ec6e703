"""`course grade`: grade every submission of a lesson, N students at a time, each in isolation.

The parent process finds the students in submitted/, makes sure the lesson is in the gradebook,
copies the lesson's cells into a private template gradebook, and hands one student at a time to
each of N worker processes. A worker that does not answer within the student's time limit (plus a
grace period) is killed with everything it started and replaced; the student gets status
"timeout". The parent alone writes the course: the gradebook (under a lock), autograded/,
feedback/ and grades/<lesson>.csv, and prints a summary table.
"""

from __future__ import annotations

import dataclasses
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from queue import Queue
from time import monotonic

import pandas as pd

from course_lib.machinery.grader import gradebook as gbk
from course_lib.machinery.grader import limits as tree_limits
from course_lib.machinery.grader.gradebook import StudentResult
from course_lib.machinery.grader.notebook import read_spec
from course_lib.machinery.grader.sandbox import make_sandbox

CSV_COLUMNS = [
    "student",
    "score",
    "max_score",
    "status",
    "flags",
    "manual_pending",
    "seconds",
    "detail",
]
GRACE = 90.0  # seconds a worker may take beyond a student's limit (nbgrader setup, feedback)


@dataclass(frozen=True)
class GradeOptions:
    """How `grade_lesson` runs."""

    jobs: int = 2
    timeout: float = 600.0  # wall-clock seconds per student (execution of the whole notebook)
    cell_timeout: int | None = None  # per cell; default: nbgrader_config.py's timeout
    sandbox: str = "auto"  # "auto", "bwrap" or "none"
    students: tuple[str, ...] = ()
    db_url: str | None = None
    progress: bool = True


@dataclass(frozen=True)
class GradeReport:
    """What `grade_lesson` did: one row per student, where the CSV is, the isolation used."""

    lesson: str
    rows: pd.DataFrame
    csv: Path
    isolation: str
    seconds: float
    db_url: str


def find_students(root: Path, only: Iterable[str] = ()) -> list[str]:
    """Every student folder in submitted/ (optionally only the named ones), sorted."""
    folder = root / "submitted"
    found = (
        sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
        if folder.is_dir()
        else []
    )
    only = set(only)
    if only:
        unknown = only - set(found)
        if unknown:
            raise ValueError(f"no folder submitted/<student> for {sorted(unknown)}")
        found = [s for s in found if s in only]
    return found


def warm_matplotlib_cache(folder: Path) -> Path:
    """A matplotlib config/cache folder with the font list built (copied into each kernel)."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "MPLCONFIGDIR": str(folder), "MPLBACKEND": "Agg"}
    subprocess.run(
        [sys.executable, "-c", "import matplotlib.font_manager"],
        env=env,
        capture_output=True,
        check=False,
        timeout=300,
    )
    return folder


class _Worker:
    """One worker subprocess and a line protocol with a deadline."""

    def __init__(self, log: Path) -> None:
        self.log = open(log, "ab")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "course_lib.machinery.grader.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            start_new_session=True,
        )
        self.buffer = b""

    def ask(self, job: dict, deadline: float) -> dict | None:
        """Send a job; the reply, or None if none came before `deadline` (monotonic)."""
        assert self.proc.stdin and self.proc.stdout
        try:
            self.proc.stdin.write((json.dumps(job) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            return None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], min(left, 5.0))
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return None  # the worker died
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def kill(self) -> None:
        """Kill the worker and everything in its process group (its kernels die with it)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.log.close()

    def stop(self) -> None:
        """Let the worker finish (close its input), then make sure it is gone."""
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except (subprocess.TimeoutExpired, BrokenPipeError):
            pass
        self.kill()


def run_pool(
    jobs: list[dict], n: int, log_dir: Path, on_result: Callable[[dict, StudentResult], None]
) -> None:
    """Grade `jobs` with `n` workers; call on_result (in this thread) for each, in any order."""
    todo: Queue = Queue()
    done: Queue = Queue()
    live: dict[int, _Worker] = {}
    for job in jobs:
        todo.put(job)

    def slot(k: int) -> None:
        worker: _Worker | None = None
        while True:
            job = todo.get()
            if job is None:
                break
            if worker is None or worker.proc.poll() is not None:
                worker = live[k] = _Worker(log_dir / f"worker-{k}.log")
            reply = worker.ask(job, monotonic() + job["budget"] + GRACE)
            if reply is None:
                worker.kill()
                worker = None
                result = StudentResult(
                    job["student"],
                    "timeout",
                    f"grading did not finish in {job['budget'] + GRACE:.0f} s; the worker was killed",
                    ("killed",),
                )
            else:
                result = StudentResult.from_dict(reply["result"])
            done.put((job, result))
        if worker is not None:
            worker.stop()

    threads = [threading.Thread(target=slot, args=(k,), daemon=True) for k in range(n)]
    for t in threads:
        t.start()
    for _ in range(n):
        todo.put(None)
    try:
        for _ in jobs:
            job, result = done.get()
            on_result(job, result)
    except BaseException:  # Ctrl-C or a failed gradebook write: stop every worker now
        while not todo.empty():
            todo.get_nowait()
        for worker in list(live.values()):
            worker.kill()
        raise
    for t in threads:
        t.join()


def _replace_dir(src: Path, dst: Path) -> None:
    """Put a copy of folder `src` at `dst`, replacing what was there (never half-written)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dst.parent, prefix=f".{dst.name}.new-"))
    shutil.rmtree(tmp)
    shutil.copytree(src, tmp)
    old = dst.with_name(f".{dst.name}.old")
    if old.exists():
        shutil.rmtree(old)
    if dst.exists():
        os.replace(dst, old)
    os.replace(tmp, dst)
    shutil.rmtree(old, ignore_errors=True)


def install(root: Path, lesson: str, result: StudentResult) -> None:
    """Copy a result's autograded notebook and feedback into the course folders."""
    autograded = root / "autograded" / result.student / lesson
    feedback = root / "feedback" / result.student / lesson
    if result.status == "missing":
        return  # nothing new: an earlier result (if any) stays as it is
    if result.autograded and Path(result.autograded).is_dir():
        _replace_dir(Path(result.autograded), autograded)
    else:  # corrupt, error, killed: no stale notebook may contradict the gradebook
        shutil.rmtree(autograded, ignore_errors=True)
    if result.feedback and Path(result.feedback).is_file():
        _replace_dir(Path(result.feedback).parent, feedback)
    else:
        shutil.rmtree(feedback, ignore_errors=True)


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """A text cell made safe for spreadsheets: control characters shown as escapes, and a leading
    =, +, -, @ (a formula to Excel or LibreOffice) behind an apostrophe."""
    if not isinstance(value, str):
        return value
    text = "".join(ch if ch >= " " and ch != "\x7f" else repr(ch)[1:-1] for ch in value)
    return "'" + text if text.startswith(FORMULA_START) else text


def csv_uncell(value: object) -> object:
    """Inverse of csv_cell's apostrophe (reading an earlier CSV back)."""
    if isinstance(value, str) and value.startswith("'") and value[1:].startswith(FORMULA_START):
        return value[1:]
    return value


def _write_csv(path: Path, rows: pd.DataFrame) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    safe = rows.copy()
    for column in ("student", "status", "flags", "detail"):
        safe[column] = safe[column].map(csv_cell)
    safe.to_csv(tmp, index=False)
    os.replace(tmp, path)


def read_csv(path: Path) -> pd.DataFrame | None:
    """An earlier grades CSV, with csv_cell's apostrophes taken off (None if unreadable)."""
    try:
        rows = pd.read_csv(path, keep_default_na=False, dtype={"student": str})
    except (OSError, ValueError, pd.errors.ParserError):
        return None
    for column in ("student", "status", "flags", "detail"):
        if column in rows:
            rows[column] = rows[column].map(csv_uncell)
    return rows


def table(
    students: list[str],
    results: dict[str, StudentResult],
    scores: dict[str, tuple[float, float, float]],
    max_score: float,
    previous: pd.DataFrame | None,
) -> pd.DataFrame:
    """One row per student found in submitted/ (students not graded now keep their last row)."""
    old = {} if previous is None else {str(r.student): r for r in previous.itertuples()}
    rows = []
    for student in students:
        result = results.get(student)
        score, top, pending = scores.get(student, (0.0, max_score, 0.0))
        if result is None:
            prev = old.get(student)
            status = prev.status if prev is not None else "not_graded"
            flags = prev.flags if prev is not None and isinstance(prev.flags, str) else ""
            detail = prev.detail if prev is not None and isinstance(prev.detail, str) else ""
            seconds = 0.0
        else:
            status, flags, detail = result.status, ";".join(result.flags), result.detail
            seconds = result.seconds
            if status == "missing":
                score, top, pending = 0.0, max_score, 0.0
        rows.append(
            {
                "student": student,
                "score": round(score, 4),
                "max_score": round(top, 4),
                "status": status,
                "flags": flags,
                "manual_pending": round(pending, 4),
                "seconds": round(seconds, 2),
                "detail": detail,
            }
        )
    return pd.DataFrame(rows, columns=CSV_COLUMNS)


def grade_lesson(root: Path, lesson: str, options: GradeOptions = GradeOptions()) -> GradeReport:
    """Grade every submission of `lesson` in submitted/; write gradebook, feedback and CSV."""
    import warnings

    warnings.filterwarnings("ignore", message=".*not in session.*")  # nbgrader's SQLAlchemy noise
    if options.jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {options.jobs}")
    if options.timeout <= 0:
        raise ValueError(f"timeout must be positive seconds, got {options.timeout}")
    start = monotonic()
    db_url = options.db_url or gbk.default_db_url(root)
    cid = gbk.course_id(root)
    students = find_students(root, options.students)
    if not students:
        raise ValueError(f"no submissions: {root / 'submitted'} has no student folders")
    gbk.ensure_lesson(root, db_url, lesson)
    sandbox, isolation = make_sandbox(options.sandbox)
    tree_limits.remove_stale()
    isolation += "; " + tree_limits.describe()
    with tempfile.TemporaryDirectory(prefix=f"course-grade-{lesson}-") as tmp:
        tmp_path = Path(tmp)
        template = tmp_path / "template.db"
        gbk.make_template(db_url, cid, lesson, template)
        source = root / "source" / lesson / f"{lesson}.ipynb"
        spec = read_spec(db_url, cid, lesson, source)
        (tmp_path / "spec.json").write_text(spec.to_json(), "utf-8")
        mpl = warm_matplotlib_cache(tmp_path / "mpl")
        jobs = [
            {
                "id": i,
                "root": str(root),
                "lesson": lesson,
                "student": student,
                "submission": str(root / "submitted" / student / lesson),
                "spec": str(tmp_path / "spec.json"),
                "template": str(template),
                "work_dir": str(tmp_path / "jobs" / f"{i:05d}"),
                "budget": float(options.timeout),
                "cell_timeout": options.cell_timeout,
                "sandbox": sandbox.mode,
                "course_id": cid,
                "mpl_cache": str(mpl),
            }
            for i, student in enumerate(students)
        ]
        results: dict[str, StudentResult] = {}
        bar = _progress(len(jobs), lesson, options.progress)

        def on_result(job: dict, result: StudentResult) -> None:
            try:
                install(root, lesson, result)
                gbk.record(root, db_url, cid, lesson, result)
            except Exception as exc:  # noqa: BLE001 - this student is marked; the run goes on
                why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                result = dataclasses.replace(
                    result,
                    status="error_student",
                    detail=f"results could not be written: {why}"[:500],
                    flags=tuple(sorted({*result.flags, "write_failed"})),
                )
            shutil.rmtree(job["work_dir"], ignore_errors=True)
            results[result.student] = result
            bar.update(1)
            counts = pd.Series([r.status for r in results.values()]).value_counts()
            bar.set_postfix_str(" ".join(f"{k} {v}" for k, v in counts.items()))

        logs = root / "grades" / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        try:
            run_pool(jobs, min(options.jobs, len(jobs)), logs, on_result)
        finally:
            bar.close()
    csv = root / "grades" / f"{lesson}.csv"
    previous = read_csv(csv) if csv.is_file() else None
    rows = table(
        find_students(root),
        results,
        gbk.scores(db_url, cid, lesson),
        gbk.max_score(db_url, cid, lesson),
        previous,
    )
    _write_csv(csv, rows)
    return GradeReport(lesson, rows, csv, isolation, monotonic() - start, db_url)


def _progress(total: int, lesson: str, enabled: bool):
    from tqdm import tqdm

    return tqdm(
        total=total, desc=f"grading {lesson}", unit="student", file=sys.stderr, disable=not enabled
    )


def summary(report: GradeReport) -> str:
    """The table printed at the end of `course grade`."""
    rows = report.rows
    n = len(rows)
    minutes = report.seconds / 60
    lines = [
        f"course grade {report.lesson}: {n} students in {report.seconds:.0f} s "
        f"({n / minutes if minutes else 0:.1f} per minute)",
        f"isolation: {report.isolation}",
        "",
        rows.status.value_counts().rename_axis("status").to_frame("students").to_string(),
    ]
    graded = rows[rows.status.isin(["graded", "timeout", "kernel_died"])]
    if len(graded):
        lines.append(
            f"\nmean score {graded.score.mean():.2f} of {rows.max_score.max():g} "
            f"over {len(graded)} graded submissions"
        )
    attention = rows[(rows.status != "graded") | (rows["flags"].fillna("") != "")]
    if len(attention):
        lines.append("\nneeds attention (flags are for manual review; they do not change scores):")
        shown = attention[["student", "score", "status", "flags", "detail"]].copy()
        shown["flags"] = shown["flags"].fillna("").str.slice(0, 70)
        shown["detail"] = shown.detail.fillna("").str.slice(0, 70)
        lines.append(shown.to_string(index=False))
    lines += [
        "",
        f"gradebook: {_redact(report.db_url)}",
        f"scores: {report.csv}",
        f"feedback: feedback/<student>/{report.lesson}/{report.lesson}.html (hidden tests removed)",
    ]
    return "\n".join(lines)


def _redact(url: str) -> str:
    """A database URL without its password."""
    if "://" in url and "@" in url:
        scheme, rest = url.split("://", 1)
        cred, host = rest.rsplit("@", 1)
        if ":" in cred:
            return f"{scheme}://{cred.split(':', 1)[0]}:***@{host}"
    return url
