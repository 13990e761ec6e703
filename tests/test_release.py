"""What reaches students: no solutions, no hidden tests, no stored outputs, sound nbgrader metadata."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from course_lib.machinery.build import GRADE_ID
from tests.conftest import ROOT, lessons

LESSONS = lessons()


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _secret_lines(source_cells: list[dict]) -> set[str]:
    """Lines inside solution and hidden-test blocks that are specific enough to count as a leak.

    A line the lesson also shows outside those blocks (a call the worked example makes too, an
    argument name) is not a secret: it is in the student's notebook by design.
    """
    secrets: set[str] = set()
    public: set[str] = set()
    for cell in source_cells:
        inside = False
        for line in "".join(cell["source"]).splitlines():
            s = line.strip()
            if s in ("### BEGIN SOLUTION", "### BEGIN HIDDEN TESTS"):
                inside = True
            elif s in ("### END SOLUTION", "### END HIDDEN TESTS"):
                inside = False
            elif inside and len(s) >= 16 and not s.startswith("#"):
                secrets.add(s)
            elif not inside:
                public.add(s)
    return secrets - public


def test_every_lesson_has_source_and_release() -> None:
    """Each master has both generated notebooks (the build ran and was committed)."""
    assert LESSONS, "no lessons found in notebooks/"
    for lesson in LESSONS:
        assert (ROOT / "source" / lesson / f"{lesson}.ipynb").is_file()
        assert (ROOT / "release" / lesson / f"{lesson}.ipynb").is_file()


@pytest.mark.parametrize("lesson", LESSONS)
def test_release_leaks_nothing(lesson: str) -> None:
    """No markers, no solution line and no hidden-test line of the source appears in release/."""
    release_dir = ROOT / "release" / lesson
    assert [p.name for p in release_dir.iterdir() if not p.name.startswith(".")] == [
        f"{lesson}.ipynb"
    ], "release/ holds only the student notebook (no masters, data or answers)"
    text = (release_dir / f"{lesson}.ipynb").read_text()
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
        assert marker not in text
    release_lines = {
        line.strip()
        for c in _cells(release_dir / f"{lesson}.ipynb")
        for line in "".join(c["source"]).splitlines()
    }
    secrets = _secret_lines(_cells(ROOT / "source" / lesson / f"{lesson}.ipynb"))
    assert secrets, "the lesson has no solution or hidden-test lines to protect?"
    leaked = sorted(secrets & release_lines)
    assert not leaked, f"solution/hidden-test lines in release/{lesson}: {leaked[:5]}"


@pytest.mark.parametrize("lesson", LESSONS)
@pytest.mark.parametrize("kind", ["source", "release"])
def test_no_outputs_no_jupytext_metadata(lesson: str, kind: str) -> None:
    """Committed notebooks store no outputs and no notebook-level jupytext metadata."""
    nb = json.loads((ROOT / kind / lesson / f"{lesson}.ipynb").read_text())
    assert "jupytext" not in nb["metadata"]
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None


@pytest.mark.parametrize("lesson", LESSONS)
def test_grading_metadata(lesson: str) -> None:
    """Grade ids unique and readable, schema_version 3, points on every grade cell; enough exercises."""
    cells = _cells(ROOT / "source" / lesson / f"{lesson}.ipynb")
    ids, auto, hidden, manual = [], [], [], []
    for cell in cells:
        meta = cell["metadata"].get("nbgrader")
        if not meta:
            continue
        ids.append(meta["grade_id"])
        assert GRADE_ID.match(meta["grade_id"]), meta["grade_id"]
        assert meta["schema_version"] == 3
        if meta["grade"]:
            assert isinstance(meta["points"], (int, float)) and meta["points"] > 0, meta
            source = "".join(cell["source"])
            if cell["cell_type"] == "code" and not meta["solution"]:
                auto.append(meta["grade_id"])
                assert meta["locked"]
                assert re.match(r'\s*"""', source), (
                    f"{meta['grade_id']}: a grade cell starts with a docstring"
                )
                if "### BEGIN HIDDEN TESTS" in source:
                    hidden.append(meta["grade_id"])
            elif meta["solution"]:
                manual.append(meta["grade_id"])
    assert len(ids) == len(set(ids)), "duplicate grade ids"
    assert 4 <= len(auto) <= 6, f"{lesson}: {len(auto)} autograded cells (want 4-6)"
    assert 2 * len(hidden) >= len(auto), f"{lesson}: hidden tests in {len(hidden)} of {len(auto)}"
    assert manual, f"{lesson}: no manually graded explained answer"


@pytest.mark.parametrize("lesson", LESSONS)
def test_lesson_anatomy(lesson: str) -> None:
    """The first cell states claim, objective and time (verbatim from SYLLABUS.md); the lesson ends with takeaways."""
    cells = _cells(ROOT / "source" / lesson / f"{lesson}.ipynb")
    first = "".join(cells[0]["source"])
    markdown = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
    # The lesson ends with takeaways; an optional "## Going further" may follow them.
    core = [m for m in markdown if not m.lstrip().startswith("## Going further")]
    last_md = core[-1]
    syllabus = ROOT.parent / "shared" / "SYLLABUS.md"
    if syllabus.is_file():
        text = syllabus.read_text()
        block = re.search(
            rf"### {lesson} — ([^\n]+)\nTime: (\d+) min[^\n]*\nObjective: (.+?)\n- ", text, re.S
        )
        assert block, f"{lesson} not in SYLLABUS.md"
        claim, minutes, objective = block.group(1), block.group(2), " ".join(block.group(3).split())
        assert claim in first, "the claim appears verbatim in the first cell"
        assert objective in " ".join(first.split()), (
            "the objective appears verbatim in the first cell"
        )
        assert f"{minutes} min" in first
    assert "Takeaways" in last_md
    sources = "".join("".join(c["source"]) for c in cells)
    assert "widgets" in sources or "explore" in sources.lower()
