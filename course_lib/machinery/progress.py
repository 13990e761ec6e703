"""`course progress`: which exercises pass their visible checks, lesson by lesson.

For self-learners. Each of the learner's notebooks in work/<lesson>/<lesson>.ipynb is executed in a
throwaway copy (the learner's file is never touched) and every autograded cell is classed as
passed (it ran without an error, as nbgrader would score it), failed, or not started (its answer
cell still raises NotImplementedError). Hidden tests are not in work/ — they run only when an
instructor grades — so "passed" means "passes the visible checks". Results are cached by the
notebook's content in work/.progress.json, so an unchanged notebook is not run again.

Use it from a notebook too: ``from course_lib.machinery.progress import progress_table; progress_table()``.
"""

from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import nbformat
import pandas as pd

COLUMNS = [
    "lesson",
    "exercises",
    "passed",
    "failed",
    "not_started",
    "points_passed",
    "points",
    "explained",
    "status",
]
CACHE = ".progress.json"
CELL_TIMEOUT = 120


@dataclass(frozen=True)
class LessonProgress:
    """Visible-check results of one lesson notebook."""

    lesson: str
    exercises: int
    passed: int
    failed: int
    not_started: int
    points_passed: float
    points: float
    explained: str  # written explained answers, "k/n"
    status: str  # complete, in progress, not started, not copied, error

    @property
    def row(self) -> dict:
        """The table row."""
        return asdict(self)


def _nbgrader(cell: dict) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def _failed(cell: dict) -> bool:
    return any(
        o.get("output_type") == "error"
        or (o.get("output_type") == "stream" and o.get("name") == "stderr")
        for o in cell.get("outputs", [])
    )


def _not_implemented(cell: dict) -> bool:
    return any(o.get("ename") == "NotImplementedError" for o in cell.get("outputs", []))


def score_executed(lesson: str, nb: nbformat.NotebookNode) -> LessonProgress:
    """Class every autograded cell of an executed notebook as passed, failed or not started."""
    passed = failed = not_started = 0
    points = points_passed = 0.0
    manual = written = 0
    untouched_answer = False
    for cell in nb.cells:
        meta = _nbgrader(cell)
        if meta.get("solution") and cell.cell_type == "code":
            untouched_answer = untouched_answer or _not_implemented(cell)
        if meta.get("grade") and meta.get("solution") and cell.cell_type == "markdown":
            manual += 1
            text = cell.source.strip()
            written += bool(text) and "YOUR ANSWER HERE" not in text
        if not (meta.get("grade") and cell.cell_type == "code" and not meta.get("solution")):
            continue
        value = float(meta.get("points", 0) or 0)
        points += value
        if untouched_answer or _not_implemented(cell):
            not_started += 1
        elif _failed(cell):
            failed += 1
        else:
            passed += 1
            points_passed += value
        untouched_answer = False
    total = passed + failed + not_started
    if total and passed == total:
        status = "complete"
    elif passed or failed:
        status = "in progress"
    else:
        status = "not started"
    return LessonProgress(
        lesson,
        total,
        passed,
        failed,
        not_started,
        points_passed,
        points,
        f"{written}/{manual}",
        status,
    )


def run_visible_checks(path: Path, timeout: int = CELL_TIMEOUT) -> nbformat.NotebookNode:
    """Execute a copy of the learner's notebook (errors allowed) in its own folder."""
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        allow_errors=True,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    return nb


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _load_cache(work: Path) -> dict:
    try:
        return json.loads((work / CACHE).read_text("utf-8"))
    except (OSError, ValueError):
        return {}


def _save_cache(work: Path, cache: dict) -> None:
    tmp = work / f"{CACHE}.tmp"
    tmp.write_text(json.dumps(cache, indent=1, sort_keys=True), "utf-8")
    os.replace(tmp, work / CACHE)


def lesson_progress(lesson: str, path: Path) -> LessonProgress:
    """Run one notebook's visible checks (an unreadable or crashing notebook is status error)."""
    try:
        return score_executed(lesson, run_visible_checks(path))
    except Exception as exc:  # a broken notebook is reported, the others still run
        return LessonProgress(lesson, 0, 0, 0, 0, 0.0, 0.0, "0/0", f"error: {type(exc).__name__}")


def progress_table(
    work: Path | None = None, root: Path | None = None, jobs: int = 2, fresh: bool = False
) -> pd.DataFrame:
    """One row per lesson: exercises passing their visible checks in work/ (cached by content)."""
    from course_lib.machinery import build as chain

    root = root or chain.find_root()
    work = work or root / "work"
    lessons = chain.lesson_ids(root)
    found = {p.parent.name: p for p in sorted(work.glob("*/*.ipynb")) if p.stem == p.parent.name}
    lessons += [lesson for lesson in sorted(found) if lesson not in lessons]
    cache = {} if fresh else _load_cache(work)
    todo = {
        lesson: path
        for lesson, path in found.items()
        if cache.get(lesson, {}).get("digest") != _digest(path)
    }
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = pool.map(lambda kv: lesson_progress(*kv), todo.items())
        fresh_rows = dict(zip(todo, results, strict=True))
    for lesson, row in fresh_rows.items():
        if not row.status.startswith("error"):
            cache[lesson] = {"digest": _digest(found[lesson]), "row": row.row}
    if work.is_dir() and fresh_rows:
        _save_cache(work, cache)
    rows = []
    for lesson in lessons:
        if lesson in fresh_rows:
            rows.append(fresh_rows[lesson].row)
        elif lesson in found:
            rows.append(cache[lesson]["row"])
        else:
            rows.append(LessonProgress(lesson, 0, 0, 0, 0, 0.0, 0.0, "0/0", "not copied").row)
    return pd.DataFrame(rows, columns=COLUMNS)
