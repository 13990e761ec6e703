"""Issue 10: every route that once earned marks, leaked hidden tests or stopped the class, each
built as a submission and graded in one normal `course grade --jobs 2` run per lesson with honest
neighbours (tests/adversarial/routes.py), and shown defended: no unearned point (or the trick
flagged and scored 0), no hidden value in anything the submission can read back, the run going on
and exiting 0, honest neighbours graded right in the same run.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from course_lib.machinery.grader import gradebook as gbk
from course_lib.machinery.grader.notebook import read_spec
from tests.adversarial import HIDDEN_MARKER, LESSON
from tests.adversarial.routes import DELEGATION, DELEGATION_ROUTES, HIDDEN_INPUTS, ROUTES
from tests.conftest import ROOT

pytestmark = pytest.mark.slow
BY_NAME = {case.name: case for case in ROUTES}
DELEGATION_BY_NAME = {case.name: case for case in DELEGATION_ROUTES}


def _build(course: Path, lesson: str, cases) -> Path:
    from course_lib.machinery import build as chain
    from course_lib.machinery.grading import solution_sources

    course.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    (course / "notebooks").mkdir(exist_ok=True)
    shutil.copy(ROOT / "tests" / "fixtures" / "grading" / f"{lesson}.py", course / "notebooks")
    chain.build(course, [lesson])
    source = nbformat.read(course / "source" / lesson / f"{lesson}.ipynb", as_version=4)
    release = nbformat.read(course / "release" / lesson / f"{lesson}.ipynb", as_version=4)
    solutions = solution_sources(source)
    for case in cases:
        folder = course / "submitted" / case.name / lesson
        case.write(folder, release, solutions)
        written = folder / f"{LESSON}.ipynb"  # the corpus writers name it after cost99
        if lesson != LESSON and written.is_file():
            written.rename(folder / f"{lesson}.ipynb")
    return course


def _grade(course: Path, lesson: str) -> tuple[subprocess.CompletedProcess, pd.DataFrame]:
    env = {**os.environ, "COURSE_ROOT": str(course)}
    cmd = [sys.executable, "-m", "course_lib.machinery.cli", "grade", lesson, "--jobs", "2"]
    cmd += ["--timeout", "240", "--cell-timeout", "60", "--sandbox", "bwrap", "--quiet"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    rows = pd.read_csv(course / "grades" / f"{lesson}.csv", keep_default_na=False)
    return proc, rows


@pytest.fixture(scope="module")
def routes(tmp_path_factory: pytest.TempPathFactory):
    """The fixture lesson's route corpus after one `course grade --jobs 2` run."""
    course = _build(tmp_path_factory.mktemp("routes") / "course", LESSON, ROUTES)
    blocker = course / "autograded" / "unwritable_results"
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("a file where the student's autograded folder must go")
    proc, rows = _grade(course, LESSON)
    return course, proc, rows


@pytest.fixture(scope="module")
def delegation(tmp_path_factory: pytest.TempPathFactory):
    """The delegation fixture's route corpus after one `course grade --jobs 2` run."""
    course = _build(tmp_path_factory.mktemp("delegation") / "course", DELEGATION, DELEGATION_ROUTES)
    proc, rows = _grade(course, DELEGATION)
    return course, proc, rows.set_index("student")


def _row(rows: pd.DataFrame, name: str) -> pd.Series:
    shown = name.replace("\n", "\\n")
    return rows.set_index("student").loc[shown]


def _flags(row: pd.Series) -> set[str]:
    return set(filter(None, str(row["flags"]).split(";")))


def _has(flags: set[str], wanted: str) -> bool:
    return any(f == wanted or f.startswith(wanted + ":") for f in flags)


def test_the_run_goes_on_and_exits_0(routes) -> None:
    """Nothing a student did made it a grader failure: exit code 0, one row per student."""
    course, proc, rows = routes
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert len(rows) == len(ROUTES)
    assert not (rows.status == "error").any(), rows[rows.status == "error"].to_dict("records")


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_route_is_defended(routes, name: str) -> None:
    """Each route: the expected autograded score (no unearned point), status and flags."""
    case = BY_NAME[name]
    row = _row(routes[2], name)
    flags = _flags(row)
    if case.score_is_ceiling:
        assert row["score"] <= case.score and row["status"] == case.status, (case.why, dict(row))
    else:
        assert (row["score"], row["status"]) == (case.score, case.status), (case.why, dict(row))
    for wanted in case.flags:
        assert _has(flags, wanted), (wanted, flags)
    if case.honest:
        assert flags <= set(case.allowed), f"honest work flagged: {flags}"


def _outputs(course: Path, student: str, lesson: str = LESSON) -> str:
    path = course / "autograded" / student / lesson / f"{lesson}.ipynb"
    nb = nbformat.read(path, as_version=4)
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", "") + out.get("evalue", ""))
            parts.append(json.dumps(out.get("data", {})))
    return "\n".join(parts)


def _feedback(course: Path, student: str, lesson: str = LESSON) -> str:
    path = course / "feedback" / student / lesson / f"{lesson}.html"
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text("utf-8")))


def _hidden_lines(course: Path, lesson: str = LESSON) -> set[str]:
    url = f"sqlite:///{course / 'gradebook.db'}"
    return set(read_spec(url, gbk.course_id(course), lesson, None).hidden_lines())


def test_shadowing_course_lib_is_not_imported(routes) -> None:
    """The kernel imports the installed course_lib, never the submission's copy."""
    text = _outputs(routes[0], "shadow_course_lib")
    found = re.search(r"course_lib from (\S+)", text)
    assert found, text[-2000:]
    assert "/tmp/work" not in found.group(1) and "submitted" not in found.group(1)
    assert "shadowed" not in text


def test_lying_float_is_refused_by_type(routes) -> None:
    """A numpy-float subclass crosses as its type name only; the check says so."""
    text = _outputs(routes[0], "lying_float_subclass")
    assert "expected a float, got Liar" in text


def test_no_hidden_source_reaches_the_kernel(routes) -> None:
    """An audit hook that saw every source the kernel compiled saw no hidden test."""
    text = _outputs(routes[0], "audit_hook_hex")
    seen = re.search(r"seen: ([0-9a-f]*)", text)
    assert seen, text[-2000:]
    decoded = bytes.fromhex(seen.group(1)).decode("utf-8", "replace")
    assert HIDDEN_MARKER not in decoded and "BEGIN HIDDEN" not in decoded
    assert not [line for line in _hidden_lines(routes[0]) if line in decoded]
    assert "check_float(" not in decoded, "no grade cell is sent to the kernel"


def test_hidden_inputs_never_reach_the_kernel(routes) -> None:
    """A wrapper and an executor thread in the kernel recorded no call: functions are called in
    a probe, after the kernel is gone, so no later output can hold a hidden input."""
    text = _outputs(routes[0], "executor_thread")
    calls = re.search(r"calls seen: ([0-9a-f]*)", text)
    assert calls, text[-2000:]
    assert bytes.fromhex(calls.group(1)).decode() == "[]"


def test_exception_messages_of_hidden_calls_are_not_shown(routes) -> None:
    """The student's exception on a hidden input is named by type only, in the instructor's
    copy and in feedback."""
    course = routes[0]
    outputs = _outputs(course, "exception_carries_inputs")
    feedback = _feedback(course, "exception_carries_inputs")
    for text in (outputs, feedback):  # (feedback also shows the student's own source)
        assert "hidden test: scale_durations raised ValueError" in text
        assert "my inputs were [" not in text
    assert not [value for value in HIDDEN_INPUTS if value in outputs], outputs[-1500:]


def test_environment_holds_no_secret(routes) -> None:
    """The kernel's environment has no token or key of the grader's."""
    text = _outputs(routes[0], "environ_token")
    names = re.search(r"environ: (\[.*?\])", text)
    assert names, text[-2000:]
    allowed = {
        "PATH", "HOME", "LANG", "IPYTHONDIR", "JUPYTER_PLATFORM_DIRS", "JUPYTER_CONFIG_DIR",
        "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "PYTHONNOUSERSITE", "PYTHONDONTWRITEBYTECODE",
        "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NBGRADER_EXECUTION",
        "MPLCONFIGDIR", "MPLBACKEND", "PYDEVD_USE_FRAME_EVAL", "JPY_PARENT_PID", "COURSE_EXEC_DIR",
        "CLICOLOR", "CLICOLOR_FORCE", "FORCE_COLOR", "PAGER", "GIT_PAGER", "TERM", "PWD",
        "JPY_SESSION_NAME",
    }  # fmt: skip
    assert set(eval(names.group(1))) <= allowed  # noqa: S307 - a printed list of str
    raw = bytes.fromhex(re.search(r"proc environ: ([0-9a-f]*)", text).group(1)).decode()
    assert "TOKEN" not in raw and "KEY" not in raw.upper().replace("KEYBOARD", "")


def test_no_grader_descriptor_is_inherited(routes) -> None:
    """The kernel holds no descriptor of the grader's (worker logs, the course root)."""
    course = routes[0]
    text = _outputs(course, "inherited_fds")
    found = json.loads(re.search(r"fds: (\[.*\])", text).group(1))
    assert found, text[-2000:]
    assert not [f for f in found if str(course) in f or "worker-" in f or ".log" in f], found


def test_filling_the_disk_is_bounded(routes) -> None:
    """Writing until full: only the sandbox's RAM-backed /tmp took anything, the run went on,
    and the grader's disk got no file of the student's."""
    course = routes[0]
    text = _outputs(course, "fill_disk")
    written = json.loads(re.search(r"disk: (\{.*\})", text).group(1))
    total = sum(size for _, size in written.values())
    assert total <= 512 * 2**20, written
    for name, (place, size) in written.items():
        if size:
            assert place.startswith("/tmp"), (name, place, size)
    mine = [p for p in course.rglob("*") if "fill_disk" in p.parts or p.name.startswith("fill")]
    assert not [p for p in mine if p.is_file() and p.stat().st_size > 2**20], mine


def test_a_failed_write_marks_only_that_student(routes) -> None:
    """The student whose results could not be written is marked error_student; the others after
    it were written (autograded/, feedback/, gradebook)."""
    course, _, rows = routes
    row = _row(rows, "unwritable_results")
    assert row["status"] == "error_student" and "could not be written" in row["detail"]
    assert (course / "autograded" / "honest_full" / LESSON / f"{LESSON}.ipynb").is_file()
    url = f"sqlite:///{course / 'gradebook.db'}"
    scores = gbk.scores(url, gbk.course_id(course), LESSON)
    assert scores["honest_full"][0] == 6.0


def test_timestamps_are_not_the_students(routes) -> None:
    """The gradebook's submission time is when the notebook arrived, not timestamp.txt's."""
    from nbgrader.api import Gradebook

    course = routes[0]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", gbk.course_id(course)) as gb:
        forged = gb.find_submission(LESSON, "forged_timestamp").timestamp
        future = gb.find_submission(LESSON, "future_timestamp").timestamp
    assert forged is not None and forged.year >= 2024
    assert future is not None and future.year < 2999


def test_csv_cells_cannot_be_formulas(routes) -> None:
    """No CSV cell starts with =, +, - or @; control characters are shown escaped."""
    course = routes[0]
    text = (course / "grades" / f"{LESSON}.csv").read_text("utf-8")
    assert "'=HYPERLINK" in text
    cells = [c for line in text.splitlines() for c in line.split(",")]
    assert not [c for c in cells if c.lstrip('"').startswith(("=", "+", "@"))]
    assert "newline\\nname" in text


def test_resource_limits_hold(routes) -> None:
    """The fork bomb stopped at the process limit, the memory hog at the tree's memory, the CPU
    hog got one CPU at most (with cgroups; without, the rlimits and the PID namespace)."""
    from course_lib.machinery.grader import limits

    course, _, rows = routes
    forked = int(re.search(r"forked (\d+)", _outputs(course, "fork_bomb")).group(1))
    hog = _outputs(course, "memory_hog")
    cpu = float(re.search(r"cpu per wall: ([0-9.]+)", _outputs(course, "cpu_hog")).group(1))
    if limits.available():
        assert forked < limits.TREE_PIDS, forked
        assert _has(_flags(_row(rows, "fork_bomb")), "limit:pids")
        assert "exit codes" in hog and "-9" in hog, hog[-500:]
        assert _has(_flags(_row(rows, "memory_hog")), "limit:memory")
        assert cpu < 1.5, cpu
    assert _row(rows, "honest_full")["score"] == 6.0


def test_feedback_never_shows_hidden_tests(routes) -> None:
    """No feedback file holds a hidden-test line or the hidden marker."""
    course, _, rows = routes
    hidden = _hidden_lines(course)
    for path in sorted((course / "feedback").glob(f"*/{LESSON}/{LESSON}.html")):
        text = html.unescape(re.sub(r"<[^>]+>", "", path.read_text("utf-8")))
        assert not [line for line in hidden if line in text], path
        student = course / "submitted" / path.parts[-3] / LESSON
        own = "".join(p.read_text("utf-8", "replace") for p in student.glob("*.ipynb"))
        if HIDDEN_MARKER not in own:  # some attacks name the marker in their own code
            assert HIDDEN_MARKER not in text, path


# -- delegation --------------------------------------------------------------------------------


def test_delegation_run_exits_0(delegation) -> None:
    _, proc, rows = delegation
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert len(rows) == len(DELEGATION_ROUTES)


@pytest.mark.parametrize("name", sorted(DELEGATION_BY_NAME))
def test_delegation_route_is_defended(delegation, name: str) -> None:
    """Every route to the forbidden routine scores 0 on the implement exercise and is flagged;
    the data exercise (which uses that routine legitimately) keeps its point."""
    case = DELEGATION_BY_NAME[name]
    row = delegation[2].loc[name]
    flags = set(filter(None, str(row["flags"]).split(";")))
    if case.score_is_ceiling:
        assert row["score"] <= case.score and row["status"] == case.status, (case.why, dict(row))
    else:
        assert (row["score"], row["status"]) == (case.score, case.status), (case.why, dict(row))
    for wanted in case.flags:
        assert _has(flags, wanted), (wanted, flags)
    if case.honest:
        assert flags <= set(case.allowed), f"honest work flagged: {flags}"


def test_delegation_message_names_the_exercise(delegation) -> None:
    text = _outputs(delegation[0], "direct_call", DELEGATION)
    assert "DelegationError" in text or "write yourself" in text, text[-1500:]
