"""Small, process-local adjustments that make nbgrader's API usable from library code.

nbgrader computes the gradebook schema version by running the `alembic` command in a subprocess
every time it creates a gradebook (seconds each on a loaded 2-core machine) and finds `alembic`
only through PATH. `prepare()` answers the same question in-process with alembic's own API, once.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path


@functools.lru_cache(maxsize=1)
def alembic_head() -> str:
    """The head revision of nbgrader's gradebook migrations (what `alembic heads` prints first)."""
    import nbgrader
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(Path(nbgrader.__file__).parent / "alembic"))
    return ScriptDirectory.from_config(config).get_current_head()


def prepare() -> None:
    """Make nbgrader fast and independent of PATH in this process (idempotent)."""
    import nbgrader.api

    scripts = str(Path(sys.executable).parent)
    parts = os.environ.get("PATH", "").split(os.pathsep)
    if scripts not in parts:  # nbgrader's other subprocesses (if any) find the venv's tools
        os.environ["PATH"] = os.pathsep.join([scripts, *parts])
    nbgrader.api.get_alembic_version = alembic_head


def course_config(root: Path):
    """The course's nbgrader_config.py (if `root` has one) as a traitlets Config, nbgrader prepared."""
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    prepare()
    config = Config()
    if (Path(root) / "nbgrader_config.py").is_file():
        config.merge(PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config())
    return config


def course_api(config, course: Path, db_url: str | None = None):
    """nbgrader's API bound to the course folder `course` (its own gradebook unless `db_url`)."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    course = Path(course)
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.db_url = db_url or f"sqlite:///{course / 'gradebook.db'}"
    config.NbGraderAPI.log_level = "ERROR"
    config.Exchange.root = str(course / "exchange")  # never the machine-wide exchange
    return NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
