"""The grading engine's parts, without kernels: reading and repairing submissions, the static
audit, feedback without hidden tests, the CSV table, the sandbox command line."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from course_lib.machinery.grader import audit, notebook, runner
from course_lib.machinery.grader.gradebook import GradeRecord, StudentResult
from course_lib.machinery.grader.notebook import CellSpec, CorruptNotebook, LessonSpec
from course_lib.machinery.grader.sandbox import Sandbox, kernel_env
from course_lib.machinery.grader.worker import copy_files, find_notebook

HIDDEN = "check_float('x', x, 0.125)  # the hidden reference"
SPEC = LessonSpec(
    "cost99_t",
    "cost99_t",
    (
        CellSpec("setup", "code", False, False, True, False, 0.0, "import math", "c1"),
        CellSpec("x_answer", "code", False, True, False, False, 0.0, "x = ...", "c2"),
        CellSpec(
            "x_tests",
            "code",
            True,
            False,
            True,
            False,
            2.0,
            f"assert x > 0\n### BEGIN HIDDEN TESTS\n{HIDDEN}\n### END HIDDEN TESTS",
            "c3",
        ),
        CellSpec("explain_x", "markdown", True, True, False, False, 1.0, "YOUR ANSWER", "c4"),
    ),
)


def _student_nb() -> nbformat.NotebookNode:
    """A submission as the release would give it: cell ids from grade ids, nbgrader metadata."""
    cells = []
    for spec in SPEC.cells:
        source = spec.source.split("### BEGIN HIDDEN")[0] if spec.grade else spec.source
        cell = (
            nbformat.v4.new_code_cell(source)
            if spec.cell_type == "code"
            else nbformat.v4.new_markdown_cell(source)
        )
        cell.id = spec.name.replace("_", "-")
        cell.metadata["nbgrader"] = spec.metadata()
        cells.append(cell)
    return nbformat.v4.new_notebook(cells=cells)


def _names(nb: nbformat.NotebookNode) -> list[str | None]:
    return [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]


def test_repair_leaves_a_clean_submission_alone() -> None:
    """An unmodified submission needs no repair and raises no flag."""
    nb, flags = notebook.repair(_student_nb(), SPEC)
    assert flags == [] and _names(nb) == ["setup", "x_answer", "x_tests", "explain_x"]


def test_repair_restores_deleted_locked_and_grade_cells_in_place() -> None:
    """Deleted setup and grade cells come back from the gradebook, after their neighbours."""
    nb = _student_nb()
    del nb.cells[2], nb.cells[0]
    nb, flags = notebook.repair(nb, SPEC)
    assert _names(nb) == ["setup", "x_answer", "x_tests", "explain_x"]
    assert nb.cells[2].source == SPEC.cells[2].source
    assert sorted(flags) == ["cell_restored:setup", "cell_restored:x_tests"]


def test_repair_undoes_renamed_ids_schema_points_and_types() -> None:
    """grade_id renamed (found again by cell id), schema and points changed, cell re-typed."""
    nb = _student_nb()
    nb.cells[1].metadata.nbgrader["grade_id"] = "mine"
    nb.cells[2].metadata.nbgrader.update(schema_version=1, points=99, grade=False)
    nb.cells[2].cell_type = "markdown"
    del nb.cells[2]["outputs"], nb.cells[2]["execution_count"]
    nb, flags = notebook.repair(nb, SPEC)
    assert _names(nb) == ["setup", "x_answer", "x_tests", "explain_x"]
    assert nb.cells[2].cell_type == "code" and nb.cells[2].metadata.nbgrader["points"] == 2.0
    assert {"metadata_changed:x_answer", "metadata_changed:x_tests", "cell_retyped:x_tests"} <= set(
        flags
    )


def test_repair_keeps_the_last_of_duplicated_cells() -> None:
    """Like nbgrader's DeduplicateIds: the last copy keeps the metadata, earlier ones lose it."""
    nb = _student_nb()
    copy = nbformat.from_dict(json.loads(json.dumps(nb.cells[1])))
    copy.id = "early"
    nb.cells.insert(1, copy)
    nb, flags = notebook.repair(nb, SPEC)
    assert _names(nb) == ["setup", None, "x_answer", "x_tests", "explain_x"]
    assert flags == ["duplicate_cell:x_answer"]


def test_repair_strips_unknown_nbgrader_cells() -> None:
    """A cell claiming an unknown grade id is demoted to an ordinary cell and flagged."""
    nb = _student_nb()
    extra = nbformat.v4.new_code_cell("y = 1")
    extra.metadata["nbgrader"] = {"grade_id": "invented", "grade": True, "points": 50}
    nb.cells.append(extra)
    nb, flags = notebook.repair(nb, SPEC)
    assert "nbgrader" not in nb.cells[-1].metadata and flags == ["unknown_cell:invented"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "not valid JSON"),
        (b'{"cells": [', "not valid JSON"),
        (b"\xff\xfe\x00", "not UTF-8"),
        (b"[1, 2]", "not a Jupyter notebook"),
        (b'{"cells": [], "nbformat": 3}', "nbformat 3"),
        (b'{"cells": [{"cell_type": "video"}], "nbformat": 4}', "not a notebook cell"),
    ],
)
def test_read_submission_names_what_is_wrong(tmp_path: Path, data: bytes, message: str) -> None:
    """Unreadable files raise CorruptNotebook with the problem in the message."""
    path = tmp_path / "a.ipynb"
    path.write_bytes(data)
    with pytest.raises(CorruptNotebook, match=message):
        notebook.read_submission(path)


def test_read_submission_fills_missing_fields(tmp_path: Path) -> None:
    """A hand-edited notebook with code cells lacking outputs still reads and validates."""
    path = tmp_path / "a.ipynb"
    raw = {"cells": [{"cell_type": "code", "source": ["x = 1\n", "y = 2"]}], "nbformat": 4}
    path.write_text(json.dumps(raw))
    nb = notebook.read_submission(path)
    nbformat.validate(nb)
    assert nb.cells[0].source == "x = 1\ny = 2"


def test_strip_hidden_tests_removes_source_and_quoting_tracebacks() -> None:
    """Feedback keeps the visible checks and the error name, never a hidden-test line."""
    nb = _student_nb()
    nb.cells[2].source = SPEC.cells[2].source
    nb.cells[2].outputs = [
        nbformat.v4.new_output(
            "error",
            ename="AnswerError",
            evalue="x: expected 0.125",
            traceback=[f"----> 3 {HIDDEN}"],
        ),
        nbformat.v4.new_output("stream", name="stdout", text=f"echo {HIDDEN}\nok\n"),
    ]
    clean = notebook.strip_hidden_tests(nb, SPEC)
    text = json.dumps(clean)
    assert HIDDEN not in text and "BEGIN HIDDEN" not in text
    assert "assert x > 0" in clean.cells[2].source
    assert clean.cells[2].outputs[0].traceback[0] == "AnswerError: x: expected 0.125"
    assert clean.cells[2].outputs[1].text.endswith("ok\n")


HONEST = '''
import numpy as np
import matplotlib.pyplot as plt
from collections import defaultdict

def critical_path(durations, edges):
    """Longest path by dynamic programming."""
    finish = defaultdict(float)
    for a, b in edges:
        finish[b] = max(finish[b], finish[a] + durations[a])
    return max(finish.values())

class Stage:
    def __init__(self, name):
        self.name = name

events = trace.events[trace.events.kernel > 0]
step_time = float(np.max(durations)) / 1e3
plt.plot([1, 2])
print(f"step {step_time:.3f} s ...")
'''

TRICKS = {
    "get_ipython().input_transformers_post.append(f)": "audit:input_transformer",
    "ip = get_ipython()\nip.ast_transformers.append(T())": "audit:ast_transformer",
    "get_ipython().set_custom_exc((Exception,), h)": "audit:exception_handler",
    "import sys\nsys.excepthook = h": "audit:exception_handler",
    "get_ipython().showtraceback = lambda *a: None": "audit:traceback_display",
    "%xmode Minimal": "audit:traceback_display",
    "ip = get_ipython()\nip.kernel.do_execute = f": "audit:kernel_internals",
    "import builtins\nbuiltins.abs = f": "audit:builtins",
    "def isinstance(a, b):\n    return True": "audit:builtins",
    "import numpy as np\nnp.allclose = f": "audit:comparison_patch",
    "setattr(math, 'isclose', f)": "audit:comparison_patch",
    "class A:\n    def __eq__(self, o):\n        return True": "audit:custom_comparison",
    "import course_lib.checks as c\nc.check_float = f": "audit:course_lib_patch",
    "def check_float(*a, **k):\n    pass": "audit:course_lib_patch",
    "f.__code__ = g.__code__": "audit:code_patch",
    "open('../../gradebook.db')": "audit:grading_files",
    "import os\nos._exit(0)": "audit:kernel_exit",
    "exit()": "audit:kernel_exit",
    "raise SystemExit": "audit:kernel_exit",
    "import signal": "audit:kernel_exit",
    "exec(base64.b64decode(s))": "audit:dynamic_code",
    "getattr(obj, name)": "audit:dynamic_code",
    "import sys\nf = sys._getframe(1)": "audit:introspection",
    "print(In[-1])": "audit:introspection",
    "import subprocess": "audit:subprocess",
    "import threading": "audit:threads",
}


def test_audit_passes_honest_code() -> None:
    """Plain numerical code — numpy, plots, classes, attribute names like kernel — raises no flag."""
    assert audit.audit_sources([HONEST], protected_names={"check_float", "np", "passed"}) == []


@pytest.mark.parametrize("source", sorted(TRICKS))
def test_audit_flags_each_trick(source: str) -> None:
    """Each way of touching the grading machinery raises its flag."""
    flags = audit.audit_sources([source], protected_names={"check_float", "passed"})
    assert TRICKS[source] in flags, flags


def test_bound_names_are_the_setup_cells_machinery() -> None:
    """Names the locked cells import or define (not their data) are protected."""
    names = audit.bound_names(["import numpy as np\nfrom m import a, b as c\nx = 1\ndef f(): pass"])
    assert names == {"np", "a", "c", "f"}


def test_find_notebook_accepts_one_renamed_notebook(tmp_path: Path) -> None:
    """One notebook under another name is used (and flagged); two are ambiguous."""
    (tmp_path / "mine.ipynb").write_text("{}")
    path, flags, problem = find_notebook(tmp_path, "cost99_t")
    assert path == tmp_path / "mine.ipynb" and flags == ["renamed_notebook"] and not problem
    (tmp_path / "other.ipynb").write_text("{}")
    path, flags, problem = find_notebook(tmp_path, "cost99_t")
    assert path is None and "2 notebooks" in problem


def test_copy_files_never_follows_symlinks(tmp_path: Path) -> None:
    """A symlink in a submission (to the gradebook, say) is skipped, not copied."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    (tmp_path / "secret.db").write_text("secret")
    (src / "data.csv").write_text("a,b")
    (src / "link.db").symlink_to(tmp_path / "secret.db")
    copied, flags = copy_files(src, dst)
    assert copied == ["data.csv"] and flags == ["symlink_skipped"]
    assert not (dst / "link.db").exists()


def test_table_has_one_row_per_student_and_keeps_earlier_rows() -> None:
    """Students graded now get their new row; others keep the previous CSV row."""
    results = {
        "ann": StudentResult("ann", "graded", grades=(GradeRecord("n", "t", 2.0, 2.0, False),)),
        "bob": StudentResult("bob", "missing", "no folder"),
    }
    previous = pd.DataFrame(
        [
            {
                "student": "cy",
                "score": 1.0,
                "max_score": 2.0,
                "status": "timeout",
                "flags": "x",
                "manual_pending": 0.0,
                "seconds": 3.0,
                "detail": "d",
            }
        ]
    )
    rows = runner.table(
        ["ann", "bob", "cy", "dee"],
        results,
        {"ann": (2.0, 2.0, 0.0), "cy": (1.0, 2.0, 0.0)},
        2.0,
        previous,
    )
    assert list(rows.columns[:5]) == ["student", "score", "max_score", "status", "flags"]
    assert list(rows.student) == ["ann", "bob", "cy", "dee"]
    assert list(rows.status) == ["graded", "missing", "timeout", "not_graded"]
    assert list(rows.score) == [2.0, 0.0, 1.0, 0.0]


def test_sandbox_command_lines() -> None:
    """bwrap: no network, own namespaces, the zygote as PID 1, every folder read-only (the only
    writable space is the sandbox's size-capped /tmp); none: a clean environment."""
    env = kernel_env({"X": "1"})
    cmd = Sandbox("bwrap", ("/opt/py",)).wrap(
        ["python"], cwd="/w/exec", ro=["/w/run/conn"], env=env, info_fd=7
    )
    assert cmd[0] == "bwrap" and "--unshare-all" in cmd and "--die-with-parent" in cmd
    assert "--as-pid-1" in cmd and cmd[cmd.index("--cap-drop") + 1] == "ALL"
    for path in ("/opt/py", "/w/exec", "/w/run/conn"):
        i = cmd.index(path)
        assert cmd[i - 1 : i + 2] == ["--ro-bind", path, path]
    assert "--bind" not in cmd, "nothing of the grader's disk is writable"
    assert "--clearenv" in cmd and cmd[-2:] == ["--", "python"]
    assert cmd[cmd.index("--tmpfs") - 2] == "--size"
    assert cmd[cmd.index("--info-fd") + 1] == "7"
    plain = Sandbox("none").wrap(["python"], cwd="/w", env={"A": "b"})
    assert plain[-4:] == ["env", "-i", "A=b", "python"]


def test_redact_hides_passwords() -> None:
    """The summary never prints a database password."""
    assert (
        runner._redact("postgresql+psycopg://u:s3cret@h:5/db")
        == "postgresql+psycopg://u:***@h:5/db"
    )


def test_record_keeps_manual_grades_and_flags_submissions(tmp_path: Path, root: Path) -> None:
    """Re-grading writes new autograded scores but keeps a grader's manual score; a flagged
    result marks the notebook for review in formgrader; release/ is never touched."""
    import shutil

    from nbgrader.api import Gradebook

    from course_lib.machinery import build as chain
    from course_lib.machinery.grader import gradebook as gbk

    lesson = "cost99_grading_fixture"
    shutil.copy(root / "nbgrader_config.py", tmp_path)
    (tmp_path / "notebooks").mkdir()
    shutil.copy(root / "tests" / "fixtures" / "grading" / f"{lesson}.py", tmp_path / "notebooks")
    chain.build(tmp_path, [lesson])
    release = (tmp_path / "release" / lesson / f"{lesson}.ipynb").read_bytes()
    url, cid = f"sqlite:///{tmp_path / 'gradebook.db'}", gbk.course_id(tmp_path)
    assert gbk.ensure_lesson(tmp_path, url, lesson) is True
    assert gbk.ensure_lesson(tmp_path, url, lesson) is False
    assert (tmp_path / "release" / lesson / f"{lesson}.ipynb").read_bytes() == release

    def result(points: float, flags: tuple[str, ...] = ()) -> StudentResult:
        grades = (
            GradeRecord(lesson, "total_tests", points, 2.0, False),
            GradeRecord(lesson, "explain_bottleneck", None, 2.0, True),
        )
        return StudentResult("ann", "graded", flags=flags, grades=grades)

    gbk.record(tmp_path, url, cid, lesson, result(2.0))
    with Gradebook(url, cid) as gb:
        gb.find_grade("explain_bottleneck", lesson, lesson, "ann").manual_score = 1.5
        gb.db.commit()
    gbk.record(tmp_path, url, cid, lesson, result(0.0, ("audit:builtins",)))
    assert gbk.scores(url, cid, lesson)["ann"] == (1.5, 8.0, 2.0)
    with Gradebook(url, cid) as gb:
        assert gb.find_submission_notebook(lesson, lesson, "ann").flagged


def test_auto_sandbox_falls_back_loudly(monkeypatch) -> None:
    """Without bubblewrap, auto grades unsandboxed and says so; bwrap mode refuses."""
    from course_lib.machinery.grader import sandbox

    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    box, text = sandbox.make_sandbox("auto")
    assert box.mode == "none" and "NONE" in text and "bubblewrap" in text
    with pytest.raises(sandbox.SandboxError, match="not installed"):
        sandbox.make_sandbox("bwrap")
    with pytest.raises(ValueError, match="sandbox mode"):
        sandbox.make_sandbox("docker")


def test_global_reads_leave_out_parameters_and_locals() -> None:
    """A probe runs the cells that bind what the solution cells read as globals: a function's
    parameters and locals (`durations`, `path`) bring in no cell; what its body, its defaults,
    a class body or a comprehension reads from the module does."""
    from course_lib.machinery.grader.checker import global_reads

    source = (
        "import graphlib\n"
        "def longest_path(durations, deps, limit=LIMIT):\n"
        "    path = []\n"
        "    for u, v in deps:\n"
        "        path.append(durations[u] * SCALE)\n"
        "    return helper(path), [x for x in path if x > CUT]\n"
        "class Step:\n"
        "    unit = UNIT\n"
        "total = sum(totals)\n"
    )
    reads = global_reads(source)
    assert {"LIMIT", "SCALE", "helper", "CUT", "UNIT", "totals", "sum"} <= reads
    assert not {"durations", "deps", "path", "u", "v", "x", "limit"} & reads
    assert global_reads("def f(:\n") == set()  # unparsable: nothing (the cell fails anyway)


def test_forbid_blocks_with_the_same_routines_share_a_probe() -> None:
    """The probe for a forbid block is keyed by the routines it disables, not by the message."""
    from course_lib.machinery.grader.checker import _disabled

    visible = (("course_lib.graph", "critical_path", "Exercise 2 asks you to write this"),)
    hidden = (("course_lib.graph", "critical_path", "Exercise 2 (hidden cases) asks you"),)
    other = (("course_lib.graph", "useful_reduction", "Exercise 3 asks you to write this"),)
    assert _disabled(visible) == _disabled(hidden)
    assert _disabled(visible) != _disabled(other)
    assert _disabled(()) == ()
