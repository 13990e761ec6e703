"""The trusted checker's parts, without a class run: the wire format, the checker's hidden-test
messages, the probe's disabled routines and its audit hook, and the grader's data hygiene."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from course_lib import checks
from course_lib.machinery.grader import audit, runner, wire
from course_lib.machinery.grader.checker import Checker, Fetched, hidden_lines
from course_lib.machinery.grader.notebook import CellSpec, LessonSpec
from course_lib.machinery.grader.worker import (
    RefusedSubmission,
    arrival_time,
    check_folder,
    copy_files,
)

# -- wire --------------------------------------------------------------------------------------


def _round_trip(value):
    return wire.loads(wire.dumps(value))


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        3,
        2**70,
        0.1,
        -0.0,
        float("inf"),
        "text ✔",
        (1, "a", (2.5,)),
        [1, [2, [3]]],
        {1: "a", (1, 2): 3.0, "k": None},
        {1, 2},
        frozenset({"a"}),
        np.float64(0.1),
        np.float32(0.1),
        np.int64(-3),
        np.bool_(True),
        np.array([[1.0, 2.0]]),
        np.array([1, 2], dtype=np.int32),
        np.array(["ab", "c"]),
        np.empty((0, 2)),
    ],
)
def test_wire_keeps_value_and_exact_type(value) -> None:
    got = _round_trip(value)
    assert type(got) is type(value)
    if isinstance(value, np.ndarray):
        assert got.dtype == value.dtype and got.shape == value.shape
        assert np.array_equal(got, value)
    else:
        assert got == value


def test_wire_keeps_nan() -> None:
    assert math.isnan(_round_trip(float("nan")))
    assert math.isnan(_round_trip(np.float64("nan")))


def test_wire_keeps_lesson_frames_exactly() -> None:
    """The DataFrames lessons pass to student functions cross with values, dtypes and index."""
    from course_lib.memory import training_step_events
    from course_lib.tracegen import load_dp_profile

    frames = [df for df in load_dp_profile().values()]
    frames.append(frames[2].sample(frac=1.0, random_state=7))
    frames.append(training_step_events(2, 16, 1, 8, 2, 32, recompute="selective"))
    frames.append(pd.DataFrame({"c": pd.Categorical(["x", "y", "x"])}, index=["a", "b", "c"]))
    for df in frames:
        got = _round_trip(df)
        pd.testing.assert_frame_equal(got, df, check_exact=True)
        assert list(got.dtypes) == list(df.dtypes)
    series = pd.Series([1.0, 2.0], index=pd.Index(["a", "b"], name="op"), name="d")
    pd.testing.assert_series_equal(_round_trip(series), series)


def test_wire_keeps_graphs_and_course_dataclasses() -> None:
    from course_lib.pipeline import gpipe

    g = nx.DiGraph()
    g.add_node("a", duration=1.0)
    g.add_edge("a", "b", kind="data")
    assert nx.utils.graphs_equal(_round_trip(g), g)
    schedule = gpipe(2, 3)
    assert _round_trip(schedule) == schedule


def test_subclasses_and_objects_cross_as_their_type_name_only() -> None:
    """A numpy-float subclass whose __float__ lies, an always-equal object: refused by type."""

    class Liar(np.float64):
        def __float__(self) -> float:
            return 0.024

    class AlwaysEqual:
        def __eq__(self, other) -> bool:
            return True

    for value, name in ((Liar(24.0), "Liar"), (AlwaysEqual(), "AlwaysEqual"), ([Liar(1.0)], None)):
        got = _round_trip(value)
        inner = got[0] if isinstance(got, list) else got
        assert isinstance(inner, wire.Unsupported)
        if name:
            assert type(inner).__name__ == name
    with pytest.raises(checks.AnswerError, match="expected a float, got Liar"):
        checks.check_float("x", _round_trip(Liar(24.0)), 0.024)


@pytest.mark.parametrize(
    "text",
    [
        "[1]",
        '{"$": "nope"}',
        '{"$": "ndarray", "dtype": "O", "shape": [1], "b64": ""}',
        '{"$": "ndarray", "dtype": "<f8", "shape": [3], "b64": "AAAA"}',
        '{"$": "ndarray", "dtype": "<f8", "shape": [100000000000], "b64": ""}',
        '{"$": "dataclass", "cls": "os:system", "f": {}}',
        '{"$": "dict", "k": [1], "v": []}',
        "NaN",
        "[" * 100_000 + "]" * 100_000,
        '{"$": "float", "v": "1e400"}',
    ],
)
def test_wire_refuses_malformed_data(text: str) -> None:
    with pytest.raises(wire.WireError):
        wire.loads(text)


def test_wire_bounds_size() -> None:
    with pytest.raises(wire.WireError, match="bytes"):
        wire.loads("1" * (wire.MAX_BYTES + 1))


# -- the checker -------------------------------------------------------------------------------

GRADE = '''"""A grade cell."""
check_float("total_time", total_time, 0.024, rtol=0.5, unit="s")
passed("Exercise 1")
### BEGIN HIDDEN TESTS
print("hidden value", 0.024)
_ref = 0.024
check_float("total_time", total_time, _ref, known_wrong={24.0: "milliseconds"})
### END HIDDEN TESTS
'''
CALL = """_v = scale([1.0], 3.0)
### BEGIN HIDDEN TESTS
_w = scale([0.5, 4.0], -2.0)
### END HIDDEN TESTS
"""


def _spec() -> LessonSpec:
    setup = (
        "import numpy as np\nfrom course_lib.checks import check_float, passed\n%matplotlib inline"
    )
    return LessonSpec(
        "cost97",
        "cost97",
        (
            CellSpec("setup", "code", False, False, True, False, 0.0, setup, "c"),
            CellSpec("t", "code", True, False, True, False, 2.0, GRADE, "c"),
            CellSpec("c", "code", True, False, True, False, 1.0, CALL, "c"),
        ),
    )


class _Session:
    """A stand-in for the probes: the student's function raises on the hidden input."""

    def __init__(self) -> None:
        self.calls = []

    def call(self, name, upto, targets, args, kwargs):
        from course_lib.machinery.grader.checker import _student_exception

        self.calls.append((name, args))
        if args[1] < 0:
            raise _student_exception("ValueError", "MyError", f"inputs {args}", name)
        return np.asarray(args[0]) * args[1]


def test_checker_reads_only_answers_and_hides_hidden_values() -> None:
    checker = Checker(_spec())
    assert checker.request_names("t") == ["total_time"]
    assert checker.request_names("c") == ["scale"]
    checker.setup()
    wrong = checker.run("t", Fetched(1, {"total_time": 0.0241}), _Session())
    text = json.dumps(wrong)
    assert "hidden test: total_time is wrong" in text
    assert "0.024" not in text.replace("0.0241", "")  # no expected value, no "hidden value"
    assert "Exercise 1" in text  # the visible part's output is kept
    known = checker.run("t", Fetched(1, {"total_time": np.float64(24.0)}), _Session())
    assert known[-1]["evalue"].startswith("total_time: expected 0.024 s, got 24 s")  # visible
    assert not [o for o in checker.run("t", Fetched(1, {"total_time": 0.024}), _Session())
                if o["output_type"] == "error"]  # fmt: skip


def test_checker_names_student_exceptions_by_type_in_hidden_tests() -> None:
    checker = Checker(_spec())
    checker.setup()
    fetched = Fetched(2, functions={"scale"})
    outputs = checker.run("c", fetched, _Session())
    assert outputs[-1]["ename"] == "MyError"
    assert outputs[-1]["evalue"] == "hidden test: scale raised MyError"
    assert "0.5" not in json.dumps(outputs)


def test_checker_refuses_unreadable_answers() -> None:
    checker = Checker(_spec())
    checker.setup()
    fetched = checker.receive("t", 1, '{"values": {"total_time": [1]}}')
    assert fetched.failure and fetched.flag.startswith("wire:")
    assert checker.run("t", fetched, _Session())[-1]["ename"] == "WireError"
    assert checker.receive("t", 1, None).flag == "wire:no_answer"
    missing = checker.receive("t", 1, '{"values": {}, "missing": ["total_time"]}')
    assert checker.run("t", missing, _Session())[-1]["ename"] == "NameError"


def test_hidden_lines() -> None:
    assert hidden_lines(GRADE) == frozenset({5, 6, 7})


# -- the probe ---------------------------------------------------------------------------------

PROBE_SETUP = "from course_lib import graph as G\nimport networkx as nx"
FORBID = [["course_lib.graph", "step_time", "Exercise 1 asks you to write this yourself"]]


def _probe(cells: list[str]) -> tuple[subprocess.Popen, socket.socket]:
    mine, theirs = socket.socketpair()
    init = {
        "setup": [PROBE_SETUP],
        "targets": FORBID,
        "cells": [[i, src] for i, src in enumerate(cells)],
    }
    code = (
        "import json, sys\nfrom course_lib.machinery.grader import probe\n"
        f"probe.run({theirs.fileno()}, json.loads(sys.argv[1]))"
    )
    proc = subprocess.Popen(
        [sys.executable, "-I", "-c", code, json.dumps(init)], pass_fds=[theirs.fileno()]
    )
    theirs.close()
    return proc, mine


def _lines(sock: socket.socket):
    buffer = b""
    while True:
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield json.loads(line)
        chunk = sock.recv(1 << 20)
        if not chunk:
            return
        buffer += chunk


def _call(cells: list[str]) -> dict:
    proc, sock = _probe(cells)
    lines = _lines(sock)
    try:
        ready = next(lines)
        assert ready.get("ready"), ready
        args = wire.dumps([{"a": 1.0, "b": 2.0}, [("a", "b")]])
        request = {"op": "call", "fn": "f", "upto": 99, "args": args, "kwargs": wire.dumps({})}
        sock.sendall((json.dumps(request) + "\n").encode())
        return next(lines, {"closed": True})
    finally:
        sock.close()
        proc.kill()
        proc.wait()


HONEST = "def f(d, deps):\n    return max(d.values()) + min(d.values())"


@pytest.mark.parametrize(
    ("cells", "reason"),
    [
        (["def f(d, deps):\n    return G.step_time(G.step_graph(d, deps))"], "called"),
        (["s = G.step_time", "def f(d, deps):\n    return s(G.step_graph(d, deps))"], "called"),
        (
            [
                "code = G._passes.__code__",
                "import types\ndef f(d, deps):\n"
                "    return types.FunctionType(code, vars(G))(G.step_graph(d, deps)).step_time",
            ],
            "called",
        ),
        (["def f(d, deps):\n    return G.what_if(G.step_graph(d, deps), {})"], "called"),
        (["import importlib\ndef f(d, deps):\n    importlib.reload(G)"], "source"),
        (["def f(d, deps):\n    return open(G.__file__).read()"], "source"),
        (["import gc\ndef f(d, deps):\n    gc.get_referrers(G.step_time)"], "gc.get_referrers"),
        (["import subprocess\ndef f(d, deps):\n    subprocess.run(['true'])"], "subprocess"),
        (["import os\ndef f(d, deps):\n    os.system('true')"], "os.system"),
        (["import ctypes\ndef f(d, deps):\n    ctypes.pythonapi.Py_IncRef"], "ctypes"),
        (
            [
                "def f(d, deps):\n    try:\n        return G.step_time(G.step_graph(d, deps))\n"
                "    except Exception:\n        return 3.0"
            ],
            "called",
        ),
    ],
)
def test_probe_stops_every_route_to_a_forbidden_routine(cells: list[str], reason: str) -> None:
    reply = _call(cells)
    assert "killed" in reply, reply
    assert reply["killed"].startswith("delegation") and reason in reply["killed"], reply


def test_probe_calls_honest_code_and_keeps_other_exercises_cells() -> None:
    """A cell for another exercise that uses the routine does not stop the probe; the function
    defined after it in the same cell exists."""
    cells = ["x = G.step_time(G.step_graph({'a': 1.0}, []))\n" + HONEST]
    reply = _call(cells)
    assert wire.loads(reply["ok"]) == 3.0, reply
    assert reply["cell_errors"] == ["cell 0: DelegationError"]


def test_probe_reports_student_exceptions_as_data() -> None:
    reply = _call(["def f(d, deps):\n    raise KeyError('nope')"])
    assert reply["raised"] == ["KeyError", "KeyError", "'nope'"]


# -- audit -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "flag"),
    [
        ("%%capture\nimport gc\ngc.get_objects()", "audit:introspection"),
        ("%time import gc", "audit:introspection"),
        ("!cat /etc/passwd", "audit:subprocess"),
        ("%%bash\nls", "audit:subprocess"),
        ('import sys\nsys.modules["gc"].get_objects()', "audit:introspection"),
        ('import operator\nf = operator.attrgetter("f_back.f_globals")', "audit:introspection"),
        ("x = 1" + "+1" * 200_000, "audit:too_deep"),
    ],
)
def test_audit_reads_what_it_used_to_miss(source: str, flag: str) -> None:
    assert flag in audit.audit_sources([source]), audit.audit_sources([source])


# -- data hygiene ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cell", "shown"),
    [
        ('=HYPERLINK("x")', '\'=HYPERLINK("x")'),
        ("+1", "'+1"),
        ("-2", "'-2"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("new\nline", "new\\nline"),
        ("plain", "plain"),
        (3.5, 3.5),
    ],
)
def test_csv_cells_are_escaped(cell, shown) -> None:
    assert runner.csv_cell(cell) == shown
    if isinstance(cell, str) and "\n" not in cell:
        assert runner.csv_uncell(runner.csv_cell(cell)) == cell


def test_symlinked_lesson_folders_are_refused(tmp_path: Path) -> None:
    source = tmp_path / "source" / "l"
    source.mkdir(parents=True)
    (tmp_path / "submitted" / "ann").mkdir(parents=True)
    (tmp_path / "submitted" / "ann" / "l").symlink_to(source, target_is_directory=True)
    with pytest.raises(RefusedSubmission, match="symbolic link"):
        check_folder(tmp_path, "ann", "l", tmp_path / "submitted" / "ann" / "l")
    (tmp_path / "submitted" / "bob" / "l").mkdir(parents=True)
    check_folder(tmp_path, "bob", "l", tmp_path / "submitted" / "bob" / "l")


def test_timestamp_txt_is_checked_never_trusted(tmp_path: Path) -> None:
    nb = tmp_path / "l.ipynb"
    nb.write_text("{}")
    stamp, flags = arrival_time(nb, tmp_path)
    assert flags == [] and stamp.startswith("20")
    for text, flag in (
        ("garbage", "timestamp:unparsable"),
        ("2999-01-01 00:00:00", "timestamp:future"),
    ):
        (tmp_path / "timestamp.txt").write_text(text)
        assert arrival_time(nb, tmp_path)[1] == [flag]
    (tmp_path / "timestamp.txt").write_text("2001-01-01 00:00:00")
    stamp, flags = arrival_time(nb, tmp_path)
    assert flags == [] and not stamp.startswith("2001")


def test_extra_files_are_copied_within_a_total_budget(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    for i in range(3):
        with open(src / f"f{i}.bin", "wb") as fh:
            fh.truncate(40)
    (src / "timestamp.txt").write_text("2001-01-01 00:00:00")
    copied, flags = copy_files(src, dst, budget=100)
    assert copied == ["f0.bin", "f1.bin"] and flags == ["files_skipped:too_large"]
    assert not (dst / "timestamp.txt").exists()


def test_forbid_routes_to_the_grader_when_grading() -> None:
    """In the checker, forbid hands its targets to the grader and disables nothing here."""
    from course_lib import graph

    seen = []
    original = graph.step_time.__code__

    def hook(targets, exercise):
        import contextlib

        seen.append((targets, exercise))
        return contextlib.nullcontext()

    checks._grading_forbid = hook
    try:
        with checks.forbid((graph, "step_time"), exercise="Exercise 9"):
            assert graph.step_time.__code__ is original
    finally:
        checks._grading_forbid = None
    assert seen == [(((graph, "step_time"),), "Exercise 9")]
    assert os.environ.get("COURSE_GUARD_TOKEN") is None
