"""Class-scale grading with nbgrader that no submission can break or game (`course grade`).

Processes: the runner (the parent: pool, gradebook writes, CSV, summary) starts N workers; a
worker grades one student at a time and never runs student code. Per student it starts a sandbox
(sandbox.py, bubblewrap) whose first process, the zygote (zygote.py), forks the student's kernel
(kernel.py: runs the student's cells, answers the worker's requests for values) and, after the
kernel and all it started are killed, probes (probe.py: call the student's functions, with the
routines a `forbid` names disabled). The verdict is computed in the worker: execute.py drives the
kernel and, at each grade cell's position, fetches the cell's answers as plain data (wire.py);
checker.py runs the grade cells on them in the lesson's setup namespace. Also: limits (a cgroup
per student), notebook (lesson spec, strict reading and repair, feedback without hidden tests),
audit (static tamper audit), gradebook (template, merge, lock), cli.

This package imports nothing at start-up: the sandbox's processes import parts of it and must
stay light.
"""

from __future__ import annotations

from typing import Any

__all__ = ["GradeOptions", "GradeReport", "grade_lesson", "summary"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from course_lib.machinery.grader import runner

        return getattr(runner, name)
    raise AttributeError(name)
