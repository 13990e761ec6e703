"""The build chain: deterministic, drift-free, and loud about broken masters."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from course_lib.machinery import build as chain

GOOD = '''# %% [markdown]
# # A tiny lesson

# %%
import math

# %% nbgrader={"grade": false, "grade_id": "answer_value", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
answer = math.pi
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "answer_value_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""The answer is pi."""
assert isinstance(answer, float)
### BEGIN HIDDEN TESTS
assert abs(answer - math.pi) < 1e-12
### END HIDDEN TESTS
'''

LESSON = "cost99_tiny"


@pytest.fixture
def course(tmp_path: Path, root: Path) -> Path:
    """A throwaway course root with the real nbgrader_config.py and one tiny master."""
    shutil.copy(root / "nbgrader_config.py", tmp_path / "nbgrader_config.py")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / f"{LESSON}.py").write_text(GOOD)
    return tmp_path


def outputs(course: Path) -> list[Path]:
    return sorted(p for p in course.rglob("*.ipynb"))


def test_build_writes_source_and_release_deterministically(course: Path) -> None:
    """Two builds give byte-identical files; the release has no solution or hidden test."""
    first = chain.build(course)
    assert {p.relative_to(course).as_posix() for p in first.written} == {
        f"source/{LESSON}/{LESSON}.ipynb",
        f"release/{LESSON}/{LESSON}.ipynb",
    }
    before = {p: p.read_bytes() for p in outputs(course)}
    second = chain.build(course)
    assert second.written == () and second.differing == ()
    assert {p: p.read_bytes() for p in outputs(course)} == before
    release = (course / "release" / LESSON / f"{LESSON}.ipynb").read_text()
    assert "math.pi\n" not in release.replace("import math", "")
    assert "HIDDEN" not in release and "BEGIN SOLUTION" not in release
    assert "raise NotImplementedError()" in release
    assert "jupytext" not in release


def test_check_reports_drift_without_writing(course: Path) -> None:
    """--check names a stale file and changes nothing."""
    chain.build(course)
    master = course / "notebooks" / f"{LESSON}.py"
    master.write_text(GOOD.replace("# # A tiny lesson", "# # A tiny lesson, edited"))
    before = {p: p.read_bytes() for p in outputs(course)}
    result = chain.build(course, check=True)
    assert sorted(p.relative_to(course).as_posix() for p in result.differing) == [
        f"release/{LESSON}/{LESSON}.ipynb",
        f"source/{LESSON}/{LESSON}.ipynb",
    ]
    assert {p: p.read_bytes() for p in outputs(course)} == before


def test_check_reports_orphans(course: Path) -> None:
    """A generated folder without a master is drift too, and a build removes it."""
    chain.build(course)
    stray = course / "source" / "cost98_gone"
    stray.mkdir()
    (stray / "cost98_gone.ipynb").write_text("{}")
    assert stray in chain.build(course, check=True).differing
    chain.build(course)
    assert not stray.exists()


BAD = {
    "malformed metadata": (
        GOOD.replace('"grade_id": "answer_value", "locked"', '"grade_id": "answer_value" "locked"'),
        ["cell 2", "malformed cell metadata"],
    ),
    "duplicate grade id": (
        GOOD.replace('"answer_value_tests"', '"answer_value"'),
        ["cell 3", "duplicate grade_id 'answer_value'"],
    ),
    "unbalanced solution markers": (
        GOOD.replace("### END SOLUTION\n", ""),
        ["'answer_value'", "'### BEGIN SOLUTION' without a matching '### END SOLUTION'"],
    ),
    "unbalanced hidden markers": (
        GOOD.replace("### BEGIN HIDDEN TESTS\n", ""),
        ["'answer_value_tests'", "'### END HIDDEN TESTS' without a matching"],
    ),
    "schema version": (
        GOOD.replace(
            '"schema_version": 3, "solution": false', '"schema_version": 2, "solution": false'
        ),
        ["'answer_value_tests'", "schema_version must be 3"],
    ),
    "grade cell without points": (
        GOOD.replace('"points": 1, ', ""),
        ["'answer_value_tests'", "positive 'points'"],
    ),
    "unreadable grade id": (
        GOOD.replace('"answer_value_tests"', '"cell-7f3a"'),
        ["cell-7f3a", "readable snake_case"],
    ),
    "markers outside nbgrader cells": (
        GOOD.replace("import math\n", "import math\n### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n"),
        ["cell 1", "markers in a cell without nbgrader metadata"],
    ),
    "unlocked test cell": (
        GOOD.replace(
            '"answer_value_tests", "locked": true', '"answer_value_tests", "locked": false'
        ),
        ["'answer_value_tests'", "must be locked"],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_master_fails_naming_lesson_cell_problem(course: Path, case: str) -> None:
    """A broken master stops the build with lesson, cell and problem named; nothing is written."""
    chain.build(course)
    before = {p: p.read_bytes() for p in outputs(course)}
    text, expected = BAD[case]
    (course / "notebooks" / f"{LESSON}.py").write_text(text)
    other = course / "notebooks" / "cost98_other.py"
    other.write_text(GOOD)  # a good lesson built alongside must not be written either
    with pytest.raises(chain.BuildError) as info:
        chain.build(course)
    message = str(info.value)
    assert f"notebooks/{LESSON}.py" in message
    for part in expected:
        assert part in message, message
    assert {p: p.read_bytes() for p in outputs(course)} == before


def test_unknown_lesson_is_named(course: Path) -> None:
    with pytest.raises(chain.BuildError, match="cost42_missing"):
        chain.build(course, ["cost42_missing"])


def test_committed_build_is_up_to_date(root: Path) -> None:
    """`course build --check` passes on the repository: committed notebooks match the masters."""
    proc = subprocess.run(
        [sys.executable, "-m", "course_lib.machinery.cli", "build", "--check"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_cli_build_error_exit_code(course: Path) -> None:
    """The CLI exits 2 and says nothing was written when a master is broken."""
    (course / "notebooks" / f"{LESSON}.py").write_text(BAD["duplicate grade id"][0])
    proc = subprocess.run(
        [sys.executable, "-m", "course_lib.machinery.cli", "build"],
        cwd=course,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "duplicate grade_id" in proc.stderr and "nothing was written" in proc.stderr
