"""course_lib.machinery.home: the course map, the learner's saved progress, and START_HERE's safe regeneration."""

from __future__ import annotations

import inspect
import json
import re
import shutil
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from hypothesis import given

from course_lib.machinery import build, cli, home
from tests.conftest import ROOT, lessons
from tests.strategies import CHECK_CELL_STATES

CATALOG = {lesson.id: lesson for lesson in home.all_lessons()}


# ------------------------------------------------------------------------------------- catalog
def test_catalog_has_the_twenty_syllabus_lessons() -> None:
    """Two modules of ten lessons; ids are lesson ids, unique, cost* in module 1, pipe* in 2."""
    assert [m.number for m in home.MODULES] == [1, 2]
    ids = [x.id for x in home.all_lessons()]
    assert len(ids) == len(set(ids)) == 20
    assert all(build.LESSON_ID.match(x) for x in ids)
    assert [x.short for x in home.MODULES[0].lessons] == [f"cost{i:02d}" for i in range(1, 11)]
    assert [x.short for x in home.MODULES[1].lessons] == [f"pipe{i:02d}" for i in range(1, 11)]
    assert all(25 <= x.minutes <= 35 for x in home.all_lessons())


def test_every_question_routes_to_known_lessons_and_every_lesson_is_reached() -> None:
    """'Begin with a question' names only real lessons, and no lesson is unreachable from it."""
    routed = [x for q in home.QUESTIONS for x in q.lessons]
    assert set(routed) <= set(CATALOG), set(routed) - set(CATALOG)
    assert set(routed) == set(CATALOG), f"never routed to: {set(CATALOG) - set(routed)}"
    assert all(q.text.strip() and q.why.strip() and q.lessons for q in home.QUESTIONS)


def test_every_lesson_with_a_master_is_in_the_catalog() -> None:
    """A new lesson cannot be missing from the course map."""
    assert set(lessons()) <= set(CATALOG), set(lessons()) - set(CATALOG)


@pytest.mark.parametrize("lesson", lessons())
def test_lesson_first_screen_states_the_catalog_claim_and_objective(lesson: str) -> None:
    """The released lesson's first cell holds the claim and objective START_HERE shows, verbatim."""
    path = ROOT / "release" / lesson / f"{lesson}.ipynb"
    if not path.is_file():
        pytest.skip(f"{lesson} is not built yet")
    first = nbformat.read(path, as_version=4).cells[0]
    text = " ".join(first.source.split())
    entry = CATALOG[lesson]
    assert first.cell_type == "markdown"
    assert entry.claim in text, f"{lesson}: the claim differs from SYLLABUS.md / home.MODULES"
    assert entry.objective in text, f"{lesson}: the objective differs from SYLLABUS.md"
    assert re.search(rf"\b{entry.minutes}\s*min", text), (
        f"{lesson}: time is not {entry.minutes} min"
    )


# ------------------------------------------------------------------------------------- progress
def _save(nb: nbformat.NotebookNode, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def _learner_notebook(states: list[str], explained: list[str] = ()) -> nbformat.NotebookNode:
    """A learner's saved notebook: one answer + check cell per state, then explained answers."""
    cells = [nbformat.v4.new_markdown_cell("# lesson")]
    for i, state in enumerate(states):
        cells.append(nbformat.v4.new_code_cell(f"x{i} = 1"))
        check = nbformat.v4.new_code_cell(f"check(x{i})")
        check.metadata["nbgrader"] = {"grade": True, "grade_id": f"x{i}_tests", "points": 1}
        if state != "not run":
            check.execution_count = i + 1
            check.outputs = [nbformat.v4.new_output("stream", text="✔ Exercise\n")]
        if state == "failed":
            check.outputs = [nbformat.v4.new_output("error", ename="AnswerError", evalue="no")]
        cells.append(check)
    for i, text in enumerate(explained):
        cell = nbformat.v4.new_markdown_cell(text)
        cell.metadata["nbgrader"] = {"grade": True, "solution": True, "grade_id": f"explain_{i}"}
        cells.append(cell)
    return nbformat.v4.new_notebook(cells=cells)


@given(CHECK_CELL_STATES)
def test_lesson_progress_counts_each_saved_check_cell_once(states: list[str]) -> None:
    """passed = run without error, failed = run with an error, exercises = all check cells."""
    counts = home.lesson_progress(_learner_notebook(states))
    assert counts["exercises"] == len(states)
    assert counts["passed"] == states.count("passed")
    assert counts["failed"] == states.count("failed")
    assert counts["passed"] + counts["failed"] <= counts["exercises"]


def test_lesson_progress_ignores_ungraded_cells_and_counts_written_explanations() -> None:
    """Only grade cells count; an explained answer counts as written once the stub is replaced."""
    nb = _learner_notebook(["passed"], explained=["YOUR ANSWER HERE", "Because the path shifts."])
    nb.cells.append(nbformat.v4.new_code_cell("1/0", execution_count=9))  # not a grade cell
    counts = home.lesson_progress(nb)
    assert counts == dict(exercises=1, passed=1, failed=0, explained=2, written=1)


def test_saved_progress_reads_work_and_marks_missing_or_unreadable_lessons(tmp_path: Path) -> None:
    """One row per lesson; a lesson without a readable copy is not available and counts 0."""
    _save(_learner_notebook(["passed", "failed"]), home.lesson_path(tmp_path, "a01_x"))
    bad = home.lesson_path(tmp_path, "b01_y")
    bad.parent.mkdir()
    bad.write_text("{ not json")
    table = home.saved_progress(tmp_path, ["a01_x", "b01_y", "c01_z"]).set_index("lesson")
    assert list(table.columns) == list(home.PROGRESS_COLUMNS[1:])
    assert table.loc["a01_x", ["available", "exercises", "passed", "failed"]].tolist() == [
        True,
        2,
        1,
        1,
    ]
    assert not table.loc["b01_y", "available"] and not table.loc["c01_z", "available"]
    assert table.loc["c01_z", "exercises"] == 0


def test_saved_progress_defaults_to_every_lesson(tmp_path: Path) -> None:
    """Without lesson ids the table covers the whole course, in syllabus order."""
    table = home.saved_progress(tmp_path)
    assert table["lesson"].tolist() == list(CATALOG)
    assert not table["available"].any()


def test_an_exercise_whose_answer_was_never_written_is_not_started_not_failed() -> None:
    """NotImplementedError in the answer cell (or its check) means not started, as course progress."""
    nb = _learner_notebook(["failed", "failed", "failed"])
    answer = nb.cells[1]
    answer.metadata["nbgrader"] = {"solution": True, "grade": False, "grade_id": "x0_answer"}
    answer.execution_count = 1
    answer.outputs = [nbformat.v4.new_output("error", ename="NotImplementedError", evalue="")]
    nb.cells[4].outputs = [nbformat.v4.new_output("error", ename="NotImplementedError", evalue="")]
    assert home.lesson_progress(nb) == dict(exercises=3, passed=0, failed=1, explained=0, written=0)


def test_start_here_live_cell_runs_course_progress(tmp_path: Path) -> None:
    """START_HERE's last cell calls course_lib.machinery.progress.progress_table on the learner's folder."""
    from course_lib.machinery import progress

    cell = home.home_notebook([]).cells[-1]
    assert cell.cell_type == "code"
    assert "from course_lib.machinery.progress import progress_table" in cell.source
    assert "progress_table(Path.cwd())" in cell.source
    assert "work" in inspect.signature(progress.progress_table).parameters


# ------------------------------------------------------------------------------------- START_HERE
def _markdown(nb: nbformat.NotebookNode) -> str:
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def test_home_notebook_shows_the_map_links_available_lessons_only() -> None:
    """Both modules with objectives, every claim and time; links only to lessons the learner has."""
    progress = home.saved_progress(Path("/nonexistent"))
    nb = home.home_notebook(["cost01_critical_path"], progress)
    nbformat.validate(nb)
    text = _markdown(nb)
    for module in home.MODULES:
        assert module.objective in text
        for lesson in module.lessons:
            row = next(line for line in text.splitlines() if lesson.claim in line)
            assert f"{lesson.minutes}\u00a0min" in row
            linked = f"]({lesson.id}/{lesson.id}.ipynb" in row
            assert linked == (lesson.id == "cost01_critical_path"), row
    assert "cost02 (coming)" in text
    for question in home.QUESTIONS:
        assert question.text in text
    assert "Validate" in text and "✔" in text
    assert all(c.metadata.get("editable") is False for c in nb.cells)


def test_home_notebook_states_progress_from_the_table() -> None:
    """The map's progress column reflects passed, failing and not-started lessons."""
    counts = {
        "cost01_critical_path": (5, 5, 0, 1),
        "pipe02_fill_drain": (5, 2, 1, 0),
        "cost03_overlap": (4, 0, 0, 0),
    }
    table = pd.DataFrame(
        [
            dict(lesson=x, available=True, exercises=n, passed=ok, failed=bad, explained=1,
                 written=w)
            for x, (n, ok, bad, w) in counts.items()
        ]
    )  # fmt: skip
    text = _markdown(home.home_notebook(list(counts), table))
    rows = [line for line in text.splitlines() if line.startswith("| [")]
    lines = {x: next(r for r in rows if f"({x}/{x}.ipynb" in r) for x in counts}
    assert "all 5 checks pass" in lines["cost01_critical_path"]
    assert "explained answer written" in lines["cost01_critical_path"]
    assert "2 of 5 checks pass" in lines["pipe02_fill_drain"]
    assert "1 failing" in lines["pipe02_fill_drain"]
    assert "not started" in lines["cost03_overlap"]


def _work_with_lesson(tmp_path: Path, lesson: str = "cost01_critical_path") -> Path:
    work = tmp_path / "work"
    _save(_learner_notebook(["not run", "not run"]), home.lesson_path(work, lesson))
    return work


def test_write_home_creates_then_leaves_an_unchanged_home_alone(tmp_path: Path) -> None:
    """First call creates START_HERE; a second call with nothing new does not rewrite it."""
    work = _work_with_lesson(tmp_path)
    first = home.write_home(work)
    assert first.status == "created" and first.path == work / home.HOME_NAME
    before = first.path.stat().st_mtime_ns
    assert home.write_home(work).status == "unchanged"
    assert first.path.stat().st_mtime_ns == before


def test_write_home_regenerates_when_the_course_or_progress_changes(tmp_path: Path) -> None:
    """A new lesson or new progress rewrites an untouched START_HERE, outputs of its cell included."""
    work = _work_with_lesson(tmp_path)
    home.write_home(work)
    path = work / home.HOME_NAME
    nb = nbformat.read(path, as_version=4)
    nb.cells[-1].outputs = [nbformat.v4.new_output("stream", text="old table")]  # ran the cell
    nb.cells[-1].execution_count = 1
    nbformat.write(nb, path)
    _save(_learner_notebook(["passed"]), home.lesson_path(work, "pipe02_fill_drain"))
    assert home.write_home(work).status == "updated"
    text = _markdown(nbformat.read(path, as_version=4))
    assert "](pipe02_fill_drain/pipe02_fill_drain.ipynb" in text
    assert "all 1 checks pass" in text


@pytest.mark.parametrize(
    "edit",
    ["edit a cell", "add a cell", "delete a cell", "not json", "learner's own notebook"],
)
def test_write_home_never_overwrites_what_the_learner_wrote(tmp_path: Path, edit: str) -> None:
    """An edited, extended, shortened, unreadable or foreign START_HERE is kept byte for byte."""
    work = _work_with_lesson(tmp_path)
    home.write_home(work)
    path = work / home.HOME_NAME
    nb = nbformat.read(path, as_version=4)
    if edit == "edit a cell":
        nb.cells[0].source += "\n\nMy note: do pipe02 first."
    elif edit == "add a cell":
        nb.cells.append(nbformat.v4.new_markdown_cell("my notes"))
    elif edit == "delete a cell":
        del nb.cells[1]
    elif edit == "learner's own notebook":
        del nb.metadata[home.META_KEY]
    if edit == "not json":
        path.write_text('{"cells": [ half-saved')
    else:
        nbformat.write(nb, path)
    before = path.read_bytes()
    _save(_learner_notebook(["passed"]), home.lesson_path(work, "pipe02_fill_drain"))
    result = home.write_home(work)
    assert result.status == "kept" and result.reason
    assert path.read_bytes() == before
    assert not list(work.glob(".*.tmp")), "no temporary file is left behind"


def test_course_lab_writes_start_here_and_says_when_it_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """`course lab --no-start` copies the lessons and writes START_HERE; an edit is kept, and said."""
    course = tmp_path / "course"
    (course / "notebooks").mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", course)
    lesson = "cost01_critical_path"
    (course / "notebooks" / f"{lesson}.py").write_text("# %%\n")
    (course / "release" / lesson).mkdir(parents=True)
    _save(_learner_notebook(["not run"]), course / "release" / lesson / f"{lesson}.ipynb")
    monkeypatch.chdir(course)
    monkeypatch.delenv("COURSE_ROOT", raising=False)
    assert cli.main(["lab", "--no-start"]) == 0
    out = capsys.readouterr().out
    start = course / "work" / home.HOME_NAME
    assert start.is_file() and f"{home.HOME_NAME} created" in out
    assert f"]({lesson}/{lesson}.ipynb" in _markdown(nbformat.read(start, as_version=4))
    nb = nbformat.read(start, as_version=4)
    nb.cells[0].source = "mine"
    nbformat.write(nb, start)
    assert cli.main(["lab", "--no-start"]) == 0
    assert "left as it is (you have edited it)" in capsys.readouterr().out
    assert nbformat.read(start, as_version=4).cells[0].source == "mine"


# ------------------------------------------------------------------------------------- learner lab
def test_learner_lab_config_hides_instructor_ui_and_keeps_validate() -> None:
    """course_lib/machinery/learner_lab turns off formgrader/exchange extensions, not Validate."""
    folder = cli.LEARNER_LAB_CONFIG
    server = json.loads((folder / "jupyter_server_config.d" / "course_learner.json").read_text())
    ext = server["ServerApp"]["jpserver_extensions"]
    assert ext["nbgrader.server_extensions.validate_assignment"] is True
    for name in ("formgrader", "assignment_list", "course_list"):
        assert ext[f"nbgrader.server_extensions.{name}"] is False
    page = json.loads((folder / "labconfig" / "page_config.json").read_text())
    disabled = page["disabledExtensions"]
    assert "@jupyter/nbgrader:validate-assignment" not in disabled
    for plugin in ("formgrader", "assignment-list", "course-list", "create-assignment"):
        assert disabled[f"@jupyter/nbgrader:{plugin}"] is True


def test_lab_environment_puts_the_learner_config_first() -> None:
    """JUPYTER_CONFIG_PATH gets course_lib/machinery/learner_lab first; an existing path is kept after it."""
    env = cli.lab_environment({"JUPYTER_CONFIG_PATH": "/elsewhere", "HOME": "/h"})
    assert env["JUPYTER_CONFIG_PATH"].split(":") == [str(cli.LEARNER_LAB_CONFIG), "/elsewhere"]
    assert env["HOME"] == "/h"
    assert cli.lab_environment({})["JUPYTER_CONFIG_PATH"] == str(cli.LEARNER_LAB_CONFIG)
