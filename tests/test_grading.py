"""Grading round trip per lesson, in a temporary course, graded as an instructor grades: with
`course grade` (each student's kernel in the sandbox, grade cells in the trusted checker).

The instructor's solutions score full marks, the untouched student notebook scores zero on every
autograded cell, every mutant (a plausible wrong answer in tests/mutants/) scores below full on the
grade cells it targets, and every other right answer (RIGHT_ANSWERS) keeps full marks. Every
autograded grade cell is targeted by at least one mutant. Solutions and the untouched release are
graded in full; mutants and right answers on their graded cells only (setup, solutions, grade
cells: solutions read nothing else, tests/test_lesson_budget.py), which keeps twenty lessons'
round trips within `make test`'s time.
"""

from __future__ import annotations

import nbformat
import pandas as pd
import pytest

from course_lib.machinery import grading
from tests.conftest import ROOT, lessons
from tests.mutants import mutants_for, right_answers_for

LESSONS = lessons()


@pytest.fixture(scope="module", params=LESSONS)
def graded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Grade solutions, the untouched release, every mutant and right answer of one lesson."""
    lesson = request.param
    source = ROOT / "source" / lesson / f"{lesson}.ipynb"
    release = nbformat.read(ROOT / "release" / lesson / f"{lesson}.ipynb", as_version=4)
    solutions = grading.solution_sources(nbformat.read(source, as_version=4))
    mutants = mutants_for(lesson)
    rights = right_answers_for(lesson)
    submissions = {"solutions": grading.fill_cells(release, solutions), "untouched": release}
    for prefix, variants in (("mutant", mutants), ("right", rights)):
        for i, variant in enumerate(variants):
            nb = grading.fill_cells(release, {**solutions, **variant.cells})
            submissions[f"{prefix}{i:02d}"] = grading.graded_cells_only(nb)
    course = tmp_path_factory.mktemp(f"course-{lesson}")
    scores = grading.grade_trusted(course, lesson, source, submissions, config_root=ROOT)
    return lesson, mutants, scores, rights


def _auto(scores: pd.DataFrame, student: str) -> pd.DataFrame:
    return scores[(scores.student == student) & scores.auto]


def test_solutions_score_full_marks(graded) -> None:
    lesson, _, scores, _ = graded
    auto = _auto(scores, "solutions")
    assert len(auto) >= 4
    wrong = auto[auto.score < auto.max_score]
    assert wrong.empty, f"{lesson}: solutions lose points on\n{wrong}"


def test_untouched_release_scores_zero(graded) -> None:
    lesson, _, scores, _ = graded
    auto = _auto(scores, "untouched")
    assert (auto.score == 0).all(), (
        f"{lesson}: the untouched notebook earns\n{auto[auto.score > 0]}"
    )
    # An answered explained answer waits for a human; an unanswered one (its checksum unchanged
    # since release) is scored 0 by nbgrader itself, so in the untouched notebook it is "auto".
    manual = scores[(scores.student == "solutions") & ~scores.auto]
    assert len(manual) >= 1 and manual.needs_manual_grade.all()
    unanswered = scores[(scores.student == "untouched") & scores.grade_id.isin(manual.grade_id)]
    assert len(unanswered) == len(manual) and (unanswered.score == 0).all()


def test_every_mutant_loses_points(graded) -> None:
    lesson, mutants, scores, _ = graded
    assert mutants, f"{lesson}: no mutants in tests/mutants/{lesson}.py"
    for i, mutant in enumerate(mutants):
        rows = scores[(scores.student == f"mutant{i:02d}") & scores.grade_id.isin(mutant.grades)]
        assert len(rows) == len(mutant.grades), (
            f"{mutant.name}: unknown grade cells {mutant.grades}"
        )
        assert rows.score.sum() < rows.max_score.sum(), (
            f"{lesson}: mutant '{mutant.name}' ({mutant.why}) scores full marks on {mutant.grades}"
        )


def test_every_autograded_cell_has_a_mutant(graded) -> None:
    lesson, mutants, scores, _ = graded
    auto_cells = set(_auto(scores, "solutions").grade_id)
    targeted = {g for m in mutants for g in m.grades}
    assert auto_cells <= targeted, f"{lesson}: no mutant for {sorted(auto_cells - targeted)}"


def test_every_right_answer_keeps_full_marks(graded) -> None:
    """Another right answer (a grid-searched optimum, an equivalent formula) never loses marks."""
    lesson, _, scores, rights = graded
    for i, right in enumerate(rights):
        rows = scores[(scores.student == f"right{i:02d}") & scores.grade_id.isin(right.grades)]
        assert len(rows) == len(right.grades), f"{right.name}: unknown grade cells {right.grades}"
        lost = rows[rows.score < rows.max_score]
        assert lost.empty, (
            f"{lesson}: right answer '{right.name}' ({right.why}) loses marks:\n{lost}"
        )
