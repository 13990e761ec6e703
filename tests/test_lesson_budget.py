"""Every lesson fits its syllabus time (28-34 min): the length budget of notebooks/AUTHORING.md.

- at most 2,400 words of prose (markdown cells) before an optional closing "## Going further";
- "## Going further", if present, is the last section, at most 450 words, marked optional and
  holds no graded cell;
- at most 6 autograded grade cells and exactly 1 explained answer (a manually graded markdown cell);
- grade cells read only names bound by the locked setup, the solution cells or the grade cell
  itself: the verdict is computed outside the student's kernel, where only these exist.
"""

from __future__ import annotations

import ast
import builtins
import re

import jupytext
import pytest

from tests.conftest import ROOT, lessons

MAX_PROSE_WORDS = 2400
MAX_GOING_FURTHER_WORDS = 450
MAX_AUTOGRADED = 6
GOING_FURTHER = re.compile(r"^## Going further", re.M)


def _nbgrader(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def budget(lesson: str) -> dict:
    """Prose words before and after "## Going further", and the graded cells, of one master."""
    nb = jupytext.read(ROOT / "notebooks" / f"{lesson}.py")
    prose = further = 0
    in_further = False
    graded_after = []
    auto = manual = 0
    for cell in nb.cells:
        meta = _nbgrader(cell)
        if cell.cell_type == "markdown" and GOING_FURTHER.search(cell.source):
            in_further = True
        if cell.cell_type == "markdown" and not (meta.get("solution") and meta.get("grade")):
            words = len(cell.source.split())
            if in_further:
                further += words
            else:
                prose += words
        if meta.get("grade"):
            if in_further:
                graded_after.append(meta.get("grade_id"))
            if cell.cell_type == "code":
                auto += 1
            else:
                manual += 1
    return {
        "prose": prose,
        "going_further": further,
        "graded_in_going_further": graded_after,
        "autograded": auto,
        "explained": manual,
        "has_going_further": in_further,
    }


@pytest.mark.parametrize("lesson", lessons())
def test_lesson_fits_its_time(lesson: str) -> None:
    b = budget(lesson)
    assert b["prose"] <= MAX_PROSE_WORDS, (
        f"notebooks/{lesson}.py: {b['prose']} words of prose before '## Going further' "
        f"(budget {MAX_PROSE_WORDS}): cut, or move side facts into an optional closing section"
    )
    assert b["going_further"] <= MAX_GOING_FURTHER_WORDS, (
        f"notebooks/{lesson}.py: '## Going further' has {b['going_further']} words "
        f"(budget {MAX_GOING_FURTHER_WORDS})"
    )
    assert not b["graded_in_going_further"], (
        f"notebooks/{lesson}.py: graded cells {b['graded_in_going_further']} sit in the optional "
        "'## Going further' section"
    )
    assert 4 <= b["autograded"] <= MAX_AUTOGRADED, (
        f"notebooks/{lesson}.py: {b['autograded']} autograded cells (4 to {MAX_AUTOGRADED})"
    )
    assert b["explained"] == 1, (
        f"notebooks/{lesson}.py: {b['explained']} explained answers (exactly 1)"
    )


@pytest.mark.parametrize("lesson", lessons())
def test_going_further_is_last_and_optional(lesson: str) -> None:
    nb = jupytext.read(ROOT / "notebooks" / f"{lesson}.py")
    heads = [
        (i, c.source)
        for i, c in enumerate(nb.cells)
        if c.cell_type == "markdown" and re.search(r"^## ", c.source, re.M)
    ]
    further = [i for i, src in heads if GOING_FURTHER.search(src)]
    if not further:
        return
    assert len(further) == 1 and further[0] == heads[-1][0], (
        f"notebooks/{lesson}.py: '## Going further' must be the last section"
    )
    text = nb.cells[further[0]].source
    assert "optional" in text.lower(), (
        f"notebooks/{lesson}.py: say in '## Going further' that it is optional and ungraded"
    )


def _bound(tree: ast.AST) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
            out.update(a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
    return out


def _python(source: str) -> ast.AST:
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    return ast.parse("\n".join(lines))


def _loaded(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def undeclared_names(lesson: str, kind: str) -> list[str]:
    """Cells of `kind` ("grade" or "solution") reading names that neither the locked setup, an
    earlier solution cell nor the cell itself binds: "grade_id: [names]" for each."""
    nb = jupytext.read(ROOT / "notebooks" / f"{lesson}.py")
    known: set[str] = set(dir(builtins))
    problems = []
    for cell in nb.cells:
        meta = _nbgrader(cell)
        if cell.cell_type != "code":
            continue
        tree = _python(cell.source)
        role = "grade" if meta.get("grade") else "solution" if meta.get("solution") else None
        if role == kind:
            unknown = _loaded(tree) - _bound(tree) - known
            if unknown:
                problems.append(f"{meta['grade_id']}: {sorted(unknown)}")
        if role == "solution" or (meta.get("locked") and role is None):
            known |= _bound(tree)
    return problems


@pytest.mark.parametrize("lesson", lessons())
def test_grade_cells_read_only_setup_and_answers(lesson: str) -> None:
    problems = undeclared_names(lesson, "grade")
    assert not problems, (
        f"notebooks/{lesson}.py: grade cells read names that neither a locked cell nor a solution "
        f"cell binds (move them into the setup cell or the grade cell): {problems}"
    )


@pytest.mark.parametrize("lesson", lessons())
def test_solutions_read_only_setup_and_earlier_answers(lesson: str) -> None:
    """The reference solutions depend only on the locked setup and earlier solution cells, so an
    exercise states everything it needs and mutants can be graded on the graded cells alone."""
    problems = undeclared_names(lesson, "solution")
    assert not problems, (
        f"notebooks/{lesson}.py: solution cells read names that only an unlocked example cell "
        f"binds (give them in the setup cell or the exercise's own cell): {problems}"
    )
