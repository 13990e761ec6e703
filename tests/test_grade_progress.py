"""`course progress`: visible checks of the learner's notebooks in work/, a row per lesson."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import nbformat
import pytest

from course_lib.machinery import cli, progress
from course_lib.machinery.grading import fill_cells, solution_sources
from tests.adversarial import LESSON
from tests.conftest import ROOT
from tests.test_build import GOOD

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture lesson built, one lesson without a work copy, and a learner's work/ folder."""
    from course_lib.machinery import build as chain

    course = tmp_path_factory.mktemp("progress")
    shutil.copy(ROOT / "nbgrader_config.py", course)
    (course / "notebooks").mkdir()
    shutil.copy(ROOT / "tests" / "fixtures" / "grading" / f"{LESSON}.py", course / "notebooks")
    chain.build(course, [LESSON])
    (course / "notebooks" / "cost98_later.py").write_text(GOOD)  # a lesson not copied yet
    return course


def _work_copy(course: Path, cells: dict[str, str] | None) -> Path:
    source = nbformat.read(course / "source" / LESSON / f"{LESSON}.ipynb", as_version=4)
    release = nbformat.read(course / "release" / LESSON / f"{LESSON}.ipynb", as_version=4)
    nb = release if cells is None else fill_cells(release, {**solution_sources(source), **cells})
    path = course / "work" / LESSON / f"{LESSON}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def test_progress_counts_passed_and_failed_and_caches(course: Path, monkeypatch) -> None:
    """3 of 4 exercises pass (one answer in ms); the learner's file is untouched; a second
    call with the same notebook runs nothing."""
    path = _work_copy(course, {"total_answer": "total_time = float(durations.sum() * 1000)"})
    before = path.read_bytes()
    table = progress.progress_table(course / "work", root=course, jobs=1)
    row = table.set_index("lesson").loc[LESSON]
    assert (row.exercises, row.passed, row.failed, row.not_started) == (4, 3, 1, 0)
    assert (row.points_passed, row.points, row.explained, row.status) == (
        4.0,
        6.0,
        "1/1",
        "in progress",
    )
    assert table.set_index("lesson").loc["cost98_later", "status"] == "not copied"
    assert path.read_bytes() == before

    def boom(*args, **kwargs):
        raise AssertionError("an unchanged notebook must not run again")

    monkeypatch.setattr(progress, "run_visible_checks", boom)
    again = progress.progress_table(course / "work", root=course, jobs=1)
    assert again.equals(table)


def test_progress_from_a_running_event_loop_as_in_jupyter(course: Path) -> None:
    """progress_table works where an event loop already runs (a notebook); the untouched
    release has every exercise not started."""
    _work_copy(course, None)

    async def in_notebook():
        return progress.progress_table(course / "work", root=course, jobs=1, fresh=True)

    table = asyncio.run(in_notebook())
    row = table.set_index("lesson").loc[LESSON]
    assert (row.passed, row.not_started, row.status) == (0, 4, "not started")


def test_progress_command_prints_the_table(course: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("COURSE_ROOT", str(course))
    assert cli.main(["progress", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert LESSON in out and "cost98_later" in out and "lessons complete" in out
