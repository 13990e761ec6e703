"""Mutant modules: the round trip grades exactly the lists it knows."""

from __future__ import annotations

import importlib

from tests.conftest import lessons
from tests.mutants import Mutant


def test_mutant_modules_use_the_two_known_lists() -> None:
    """A list of variants under another name would never be graded: only MUTANTS and RIGHT_ANSWERS."""
    for lesson in lessons():
        module = importlib.import_module(f"tests.mutants.{lesson}")
        lists = {
            name
            for name, value in vars(module).items()
            if name.isupper() and isinstance(value, list) and value and isinstance(value[0], Mutant)
        }
        assert lists <= {"MUTANTS", "RIGHT_ANSWERS"}, f"tests/mutants/{lesson}.py defines {lists}"
        assert "MUTANTS" in lists, f"tests/mutants/{lesson}.py has no MUTANTS"
