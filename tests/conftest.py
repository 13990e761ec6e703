"""Test set-up shared by every test: an empty Jupyter config, quiet nbgrader, the course root."""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path

# No user or system Jupyter configuration may change results; set before any Jupyter import.
os.environ["JUPYTER_CONFIG_DIR"] = tempfile.mkdtemp(prefix="course-jupyter-config-")
os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import pytest  # noqa: E402

try:  # nbgrader's SQLAlchemy warnings are noise
    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings("ignore", category=SAWarning)
except ImportError:  # pragma: no cover
    pass

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def root() -> Path:
    """The course root (the repository)."""
    return ROOT


def lessons() -> list[str]:
    """Every lesson with a master, for parametrizing."""
    from course_lib.machinery.build import lesson_ids

    return lesson_ids(ROOT)
