"""Class-scale grading with nbgrader that no submission can break or game (`course grade`).

Modules: runner (the parent: pool, gradebook writes, CSV, summary), worker (one student in a
throwaway nbgrader course), execute (nbgrader's Execute with a time budget, output caps and the
kernel guard), kernel (the guarded IPython kernel), sandbox (bubblewrap), notebook (lesson spec,
strict reading and repair of submissions, feedback without hidden tests), audit (static tamper
audit), gradebook (template, merge, lock).

This package imports nothing at start-up: the guarded kernel (``course_lib.machinery.grader.kernel``) starts
for every student and must stay light.
"""

from __future__ import annotations

from typing import Any

__all__ = ["GradeOptions", "GradeReport", "grade_lesson", "summary"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from course_lib.machinery.grader import runner

        return getattr(runner, name)
    raise AttributeError(name)
