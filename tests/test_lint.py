"""ruff lint and format over the library, the tests, the benchmarks and the lesson masters."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

TARGETS = ["course_lib", "tests", "notebooks", "benchmarks", "nbgrader_config.py"]


@pytest.mark.parametrize("args", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_ruff(args: list[str]) -> None:
    targets = [t for t in TARGETS if (ROOT / t).exists()]
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", *args, *targets], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
