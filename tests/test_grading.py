"""Grading round trip per lesson, in a temporary course with nbgrader's own autograde.

The instructor's solutions score full marks, the untouched student notebook scores zero on every
autograded cell, and every mutant (a plausible wrong answer in tests/mutants/) scores below full
on the grade cells it targets. Every autograded grade cell is targeted by at least one mutant.

Mutants (and alternative right answers) that cannot affect one another's cells or grade cells share
one graded notebook (tests/mutants/batching.py decides this statically); each is judged on its own
grade cells only.
"""

from __future__ import annotations

import nbformat
import pandas as pd
import pytest

from course_lib.machinery import grading
from tests.conftest import ROOT, lessons
from tests.mutants import mutants_for, right_answers_for
from tests.mutants.batching import LessonCells, batches

LESSONS = lessons()


@pytest.fixture(scope="module", params=LESSONS)
def graded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Autograde solutions, the untouched release and every mutant of one lesson (once)."""
    lesson = request.param
    course = grading.open_course(tmp_path_factory.mktemp(f"course-{lesson}"), ROOT)
    source = ROOT / "source" / lesson / f"{lesson}.ipynb"
    grading.setup_lesson(course, source, lesson)
    release = nbformat.read(ROOT / "release" / lesson / f"{lesson}.ipynb", as_version=4)
    solutions = grading.solution_sources(nbformat.read(source, as_version=4))
    mutants = mutants_for(lesson)
    rights = right_answers_for(lesson)
    grading.submit(course, lesson, "solutions", grading.fill_cells(release, solutions))
    grading.submit(course, lesson, "untouched", release)
    students = ["solutions", "untouched"]
    variants = [("mutant", i, m) for i, m in enumerate(mutants)]
    variants += [("right", i, r) for i, r in enumerate(rights)]
    cells_of = LessonCells.from_source(nbformat.read(source, as_version=4), solutions)
    rename: dict[str, str] = {}  # f"{prefix}{i:02d}" -> the batch notebook it is graded in
    for k, group in enumerate(batches(cells_of, [v for _, _, v in variants])):
        student = f"batch{k:02d}"
        cells = dict(solutions)
        for index in group:
            prefix, i, variant = variants[index]
            cells.update(variant.cells)
            rename[f"{prefix}{i:02d}"] = student
        grading.submit(course, lesson, student, grading.fill_cells(release, cells))
        students.append(student)
    scores = grading.autograde(course, lesson, students)
    # One row per (variant, grade cell it is judged on), under the variant's own name.
    parts = [scores[scores.student.isin(["solutions", "untouched"])]]
    for prefix, i, variant in variants:
        name = f"{prefix}{i:02d}"
        rows = scores[(scores.student == rename[name]) & scores.grade_id.isin(variant.grades)]
        parts.append(rows.assign(student=name))
    scores = pd.concat(parts, ignore_index=True)
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
