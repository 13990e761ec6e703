"""Grading with a PostgreSQL gradebook (nbgrader's db_url), against a real server started here.

Two "machines" (two course folders, each with its own share of the class in submitted/) grade
the same lesson at the same time into one PostgreSQL gradebook; every student ends up recorded
once with the right score. Needs PostgreSQL's server binaries (Debian: postgresql); skipped when
they are missing unless COURSE_REQUIRE_POSTGRES=1 (as .ci/run sets), where that is an error.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from course_lib.machinery.grader import gradebook as gbk
from tests.adversarial import LESSON, make_course
from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def _pg_bin() -> Path | None:
    for candidate in [os.path.dirname(shutil.which("initdb") or "")] + sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), reverse=True
    ):
        if candidate and (Path(candidate) / "initdb").is_file():
            return Path(candidate)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user(cmd: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run it as the postgres user then."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *cmd]
    return cmd


@pytest.fixture(scope="module")
def postgres():
    """A throwaway PostgreSQL server on a free loopback port; yields its gradebook URL."""
    pg = _pg_bin()
    if pg is None:
        if os.environ.get("COURSE_REQUIRE_POSTGRES"):
            pytest.fail("PostgreSQL server binaries are not installed (Debian: postgresql)")
        pytest.skip("PostgreSQL server binaries are not installed (Debian: postgresql)")
    base = Path(tempfile.mkdtemp(prefix="course-pg-"))  # under /tmp: the server user can reach it
    data, sockets = base / "data", base / "sock"
    data.mkdir()
    sockets.mkdir()
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
        for p in (data, sockets):
            shutil.chown(p, "postgres")
    port = _free_port()
    subprocess.run(
        _as_server_user([str(pg / "initdb"), "-D", str(data), "-U", "grader", "--auth=trust"]),
        check=True,
        capture_output=True,
    )
    opts = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off"
    log = sockets / "server.log"  # the server must not hold our pipes open
    start = [str(pg / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", opts, "-w", "start"]
    subprocess.run(
        _as_server_user(start),
        check=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=120,
    )
    try:
        import psycopg

        with psycopg.connect(
            f"host=127.0.0.1 port={port} user=grader dbname=postgres", autocommit=True
        ) as conn:
            conn.execute("CREATE DATABASE gradebook")
        yield f"postgresql+psycopg://grader@127.0.0.1:{port}/gradebook"
    finally:
        subprocess.run(
            _as_server_user([str(pg / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=120,
        )
        shutil.rmtree(base, ignore_errors=True)


def _machine(folder: Path, keep: set[str]) -> Path:
    """A course folder that holds only the students in `keep` (one grading machine's share)."""
    course = make_course(folder, ROOT)
    for student in (course / "submitted").iterdir():
        if student.name not in keep:
            shutil.rmtree(student)
    return course


def _grade(course: Path, db_url: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "course_lib.machinery.cli", "grade", LESSON, "--jobs", "1"]
    cmd += ["--db-url", db_url, "--sandbox", "bwrap", "--quiet", "--timeout", "120"]
    env = {**os.environ, "COURSE_ROOT": str(course)}
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_machines_grade_into_one_postgres_gradebook(postgres: str, tmp_path: Path) -> None:
    """Both halves of the class land in the shared gradebook, each student once, scores right."""
    first = _machine(tmp_path / "a", {"honest_full", "os_exit"})
    second = _machine(tmp_path / "b", {"honest_units_wrong", "untouched"})
    gbk.ensure_lesson(first, postgres, LESSON)  # set up once, as an instructor would
    start = time.monotonic()
    procs = [_grade(first, postgres), _grade(second, postgres)]
    outs = [p.communicate(timeout=900) for p in procs]
    for proc, (out, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, out + err[-3000:]
    assert time.monotonic() - start < 900
    cid = gbk.course_id(first)
    scores = {s: v[0] for s, v in gbk.scores(postgres, cid, LESSON).items()}
    assert scores == {
        "honest_full": 6.0,
        "os_exit": 5.0,
        "honest_units_wrong": 4.0,
        "untouched": 0.0,
    }
    assert f"gradebook: {postgres}" in outs[0][0]


def test_setting_up_a_lesson_twice_is_harmless(postgres: str, tmp_path: Path) -> None:
    """ensure_lesson on a gradebook that has the lesson changes nothing."""
    course = _machine(tmp_path / "c", set())
    gbk.ensure_lesson(course, postgres, LESSON)
    assert gbk.ensure_lesson(course, postgres, LESSON) is False
    assert gbk.max_score(postgres, gbk.course_id(course), LESSON) == 8.0
