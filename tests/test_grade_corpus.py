"""`course grade` over the adversarial corpus (tests/adversarial), in one run with --jobs 2.

Every honest student is scored right, every crafted submission gets its expected score, status
and flags, every student has a CSV row and (unless missing) a gradebook entry, nothing in
submitted/ changes, feedback never shows a hidden test, the sandbox keeps the gradebook, source/
and other students out of reach, and nothing a submission started outlives the run.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from course_lib.machinery.grader import gradebook as gbk
from course_lib.machinery.grader.notebook import read_spec
from tests.adversarial import CASES, FULL, HIDDEN_MARKER, LESSON, UNICODE_STUDENT, make_course
from tests.conftest import ROOT

pytestmark = pytest.mark.slow
BY_NAME = {case.name: case for case in CASES}


def _hashes(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory):
    """The corpus course after one `course grade --jobs 2` run: (course, stdout, CSV rows)."""
    course = make_course(tmp_path_factory.mktemp("corpus") / "course", ROOT)
    before = _hashes(course / "submitted")
    env = {**os.environ, "COURSE_ROOT": str(course)}
    cmd = [sys.executable, "-m", "course_lib.machinery.cli", "grade", LESSON, "--jobs", "2"]
    cmd += ["--timeout", "120", "--cell-timeout", "15", "--sandbox", "bwrap", "--quiet"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    rows = pd.read_csv(course / "grades" / f"{LESSON}.csv", keep_default_na=False)
    return course, proc.stdout, rows.set_index("student"), before


def test_every_student_has_exactly_one_row(graded) -> None:
    course, _, rows, _ = graded
    students = {p.name for p in (course / "submitted").iterdir() if p.is_dir()}
    assert set(rows.index) == students and len(rows) == len(students) == len(CASES) + 1


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_case_gets_its_score_status_and_flags(graded, name: str) -> None:
    """Each crafted submission: the expected autograded score, status and flags."""
    case = BY_NAME[name]
    row = graded[2].loc[name]
    flags = set(filter(None, row["flags"].split(";")))
    assert (row["score"], row["status"]) == (case.score, case.status), (case.why, dict(row))
    for wanted in case.flags:
        assert any(f == wanted or f.startswith(wanted + ":") for f in flags), (wanted, flags)
    if case.honest:
        assert flags <= set(case.allowed), f"honest work flagged: {flags}"
    assert row["max_score"] == 8.0


def test_unicode_student_name(graded) -> None:
    row = graded[2].loc[UNICODE_STUDENT]
    assert (row["score"], row["status"], row["flags"]) == (FULL, "graded", "")


def test_gradebook_agrees_with_the_csv(graded) -> None:
    """Every student but the missing ones is in the gradebook with the CSV's score."""
    course, _, rows, _ = graded
    url = f"sqlite:///{course / 'gradebook.db'}"
    scores = gbk.scores(url, gbk.course_id(course), LESSON)
    expected = {s for s, r in rows.iterrows() if r["status"] != "missing"}
    assert set(scores) == expected
    for student in expected:
        assert scores[student][0] == rows.loc[student, "score"]


def test_submitted_folder_is_untouched(graded) -> None:
    """Nothing is lost: every submitted file is byte-identical after grading."""
    course, _, _, before = graded
    assert _hashes(course / "submitted") == before


def _hidden_lines(course: Path) -> set[str]:
    url = f"sqlite:///{course / 'gradebook.db'}"
    spec = read_spec(url, gbk.course_id(course), LESSON, None)
    return set(spec.hidden_lines())


def test_feedback_never_shows_hidden_tests(graded) -> None:
    """No feedback file contains a hidden-test line, even where a hidden test failed."""
    course, _, rows, _ = graded
    hidden = _hidden_lines(course)
    assert HIDDEN_MARKER in "".join(hidden)
    files = sorted((course / "feedback").glob(f"*/{LESSON}/{LESSON}.html"))
    graded_students = {s for s, r in rows.iterrows() if r["status"] not in ("missing", "corrupt")}
    assert {f.parts[-3] for f in files} == graded_students
    for path in files:
        text = html.unescape(re.sub(r"<[^>]+>", "", path.read_text("utf-8")))
        assert "BEGIN HIDDEN" not in text and HIDDEN_MARKER not in text, path
        assert not [line for line in hidden if line in text], path
    wrong = course / "feedback" / "honest_units_wrong" / LESSON / f"{LESSON}.html"
    text = html.unescape(re.sub(r"<[^>]+>", "", wrong.read_text("utf-8")))
    assert "AnswerError: total_time: expected 0.024 s, got 24 s" in text, "the failure is explained"
    assert "array([ -1." not in text, "values computed by hidden tests are not shown"


def test_instructor_copy_keeps_hidden_tests(graded) -> None:
    """autograded/ (the instructor's copy) keeps the full grade cells and outputs."""
    path = graded[0] / "autograded" / "honest_units_wrong" / LESSON / f"{LESSON}.ipynb"
    assert HIDDEN_MARKER in path.read_text("utf-8")


def _outputs(course: Path, student: str) -> str:
    path = course / "autograded" / student / LESSON / f"{LESSON}.ipynb"
    nb = nbformat.read(path, as_version=4)
    return "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))


def test_sandbox_hides_course_files_and_network(graded) -> None:
    """A submission searching the whole file system and loopback finds nothing of the course."""
    text = _outputs(graded[0], "reads_grading_files")
    assert "barrier scan found: []" in text, text[-2000:]


def test_hidden_tests_leave_no_trace_in_the_kernel(graded) -> None:
    """After a failed hidden test, history, linecache, gc and sys hold nothing of its code."""
    import base64

    text = _outputs(graded[0], "reads_hidden_from_memory")
    encoded = re.search(r"memory scan: (\S+)", text)
    assert encoded, text[-2000:]
    assert base64.b64decode(encoded.group(1)).decode() == "[]"


def test_outputs_are_capped_in_bytes(graded) -> None:
    """A 30 MB line and 100000 lines leave an autograded notebook of a few kB."""
    path = graded[0] / "autograded" / "huge_output" / LESSON / f"{LESSON}.ipynb"
    assert path.stat().st_size < 300_000
    assert "output cut" in path.read_text("utf-8")


def test_resource_limits_hold(graded) -> None:
    text = _outputs(graded[0], "resource_hog")
    assert "no memory" in text and "no disk 27" in text  # EFBIG
    assert "tmp full 28" in text  # ENOSPC: the sandbox's /tmp is capped


def test_no_process_outlives_grading(graded) -> None:
    """The child a submission forked (sleep 31337) died with its sandbox."""
    procs = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "sleep 31337" not in procs


def test_summary_table_is_printed(graded) -> None:
    _, out, _, _ = graded
    assert f"course grade {LESSON}: {len(CASES) + 1} students" in out
    assert "isolation: bubblewrap" in out and "needs attention" in out
    assert "patched_comparisons" in out and "honest_full" not in out.split("needs attention")[1]


def test_rows_are_valid_json_free_text(graded) -> None:
    """Every detail is a single line (the CSV stays one row per student)."""
    assert all("\n" not in str(d) for d in graded[2]["detail"])
    json.dumps(graded[2].reset_index().to_dict("records"))
