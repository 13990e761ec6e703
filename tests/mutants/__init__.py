"""Plausible wrong answers, one module per lesson, graded by tests/test_grading.py.

Each lesson module defines ``MUTANTS``: a list of ``Mutant``. A mutant replaces the named solution
cells of the student notebook with wrong code (wrong units, an off-by-one, the naive formula the
lesson warns about); the grading round trip must score the listed grade cells below full marks.

A module may also define ``RIGHT_ANSWERS``: ``Mutant`` objects whose code is a *different right
answer* (a numerically found optimum, an equivalent formula); the round trip must give the listed
grade cells full marks.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    """A wrong answer: new sources for solution cells, and the grade cells that must lose points."""

    name: str
    why: str
    cells: dict[str, str]
    grades: tuple[str, ...]


def mutants_for(lesson: str) -> list[Mutant]:
    """The mutants of a lesson (an empty list if the lesson has no mutant module)."""
    try:
        module = importlib.import_module(f"tests.mutants.{lesson}")
    except ModuleNotFoundError:
        return []
    return list(module.MUTANTS)


def right_answers_for(lesson: str) -> list[Mutant]:
    """The alternative right answers of a lesson (empty if none are listed)."""
    try:
        module = importlib.import_module(f"tests.mutants.{lesson}")
    except ModuleNotFoundError:
        return []
    return list(getattr(module, "RIGHT_ANSWERS", []))
