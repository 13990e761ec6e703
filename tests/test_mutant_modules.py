"""tests/mutants/batching.py: mutants share a graded notebook only when they cannot interact."""

from __future__ import annotations

import nbformat

from tests.mutants import Mutant
from tests.mutants.batching import LessonCells, batches, mutated_names


def _nb(cells: list[tuple[str, str, str]]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    for role, gid, src in cells:
        meta = {"grade_id": gid, "locked": role != "solution", "schema_version": 3}
        meta.update(solution=role == "solution", grade=role == "grade", task=False)
        nb.cells.append(nbformat.v4.new_code_cell(src, metadata={"nbgrader": meta}))
    return nb


NB = _nb(
    [
        (
            "setup",
            "setup",
            "import numpy as np\nfrom course_lib.checks import check_float\nDATA = [1, 2]",
        ),
        ("solution", "a_answer", "a = sum(DATA)"),
        ("grade", "a_tests", "check_float('a', a, 3.0)"),
        ("solution", "b_answer", "b = 2.0 * np.pi"),
        ("grade", "b_tests", "check_float('b', b, 6.28)"),
        ("solution", "c_answer", "c = a + 1"),
        ("grade", "c_tests", "check_float('c', c, 4.0)"),
        ("grade", "d_tests", "check_float('d', DATA[0], 1.0)"),
    ]
)
SOLUTIONS = {"a_answer": "a = sum(DATA)", "b_answer": "b = 2.0 * np.pi", "c_answer": "c = a + 1"}
CELLS = LessonCells.from_source(NB, SOLUTIONS)


def _m(cell: str, code: str, grade: str) -> Mutant:
    return Mutant(name=f"{cell}:{code}", why="test", cells={cell: code}, grades=(grade,))


def test_independent_cells_share_a_notebook() -> None:
    """b does not read or bind anything a's grade cell reads, and the other way round."""
    groups = batches(
        CELLS, [_m("a_answer", "a = 4", "a_tests"), _m("b_answer", "b = 1", "b_tests")]
    )
    assert groups == [[0, 1]]


def test_same_cell_or_same_grade_never_share() -> None:
    variants = [_m("a_answer", "a = 4", "a_tests"), _m("a_answer", "a = 5", "a_tests")]
    assert batches(CELLS, variants) == [[0], [1]]


def test_a_later_solution_that_reads_a_changed_name_is_reached() -> None:
    """c = a + 1: a mutant of a reaches c, so it cannot share with a mutant graded on c."""
    variants = [_m("a_answer", "a = 4", "a_tests"), _m("c_answer", "c = 0", "c_tests")]
    assert batches(CELLS, variants) == [[0], [1]]


def test_in_place_mutation_of_setup_data_is_reached() -> None:
    """A mutant that changes DATA in place cannot share with one whose grade cell reads DATA."""
    mutating = _m("b_answer", "DATA.append(3)\nb = 1", "b_tests")
    reader = Mutant(name="d", why="test", cells={"a_answer": "a = 0"}, grades=("d_tests",))
    assert batches(CELLS, [mutating, reader]) == [[0], [1]]
    assert mutated_names("x[0] = 1\ny.a = 2\nz.add_edge(1, 2)\nw += 1\nv.copy()") == {
        "x",
        "y",
        "z",
        "w",
    }


def test_shared_imports_do_not_block_batching() -> None:
    """Both read np and check_float (setup imports): shared by everyone, not a dependency."""
    variants = [_m("b_answer", "b = np.e", "b_tests"), _m("a_answer", "a = float(np.e)", "a_tests")]
    assert batches(CELLS, variants) == [[0, 1]]


def test_mutant_modules_use_the_two_known_lists() -> None:
    """A list of variants under another name would never be graded: only MUTANTS and RIGHT_ANSWERS."""
    import importlib

    from tests.conftest import lessons

    for lesson in lessons():
        module = importlib.import_module(f"tests.mutants.{lesson}")
        lists = {
            name
            for name, value in vars(module).items()
            if name.isupper() and isinstance(value, list) and value and isinstance(value[0], Mutant)
        }
        assert lists <= {"MUTANTS", "RIGHT_ANSWERS"}, f"tests/mutants/{lesson}.py defines {lists}"
        assert "MUTANTS" in lists, f"tests/mutants/{lesson}.py has no MUTANTS"
