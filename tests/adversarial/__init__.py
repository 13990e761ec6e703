"""The adversarial corpus: crafted submissions of the grading fixture lesson, each with its
expected outcome, all graded in one `course grade` run by tests/test_grade_corpus.py.

The fixture (tests/fixtures/grading/cost99_grading_fixture.py) has four autograded exercises
worth 6 points (total_tests 2, scale_tests 2, bottleneck_tests 1, slow_tests 1) and one manually
graded answer (2 points). `score` below is the autograded score the submission must get; `status`
its status; `flags` flags (prefixes) that must appear; an `honest` submission must raise no flag
other than those listed. Cases cover honest work, broken files and notebooks, kernels that crash
or hang, submissions that try to game the tests, and submissions that try to read the hidden
tests, the gradebook, source/ or other students' work.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

LESSON = "cost99_grading_fixture"
FULL = 6.0
HIDDEN_MARKER = "_hidden_" + "total_reference"  # a name that appears only in the hidden tests

# Wrong answers for every exercise (used by the gaming cases: the trick must earn nothing).
WRONG = {
    "total_answer": "total_time = 24.0",
    "scale_answer": "def scale_durations(values, factor):\n    return values",
    "bottleneck_answer": 'bottleneck = "b"',
    "slow_answer": "num_slow = 3",
}


@dataclass(frozen=True)
class Case:
    """One crafted submission: how to write it and what grading must make of it."""

    name: str
    why: str
    write: Callable[[Path, nbformat.NotebookNode, dict[str, str]], None]
    score: float
    status: str = "graded"
    flags: tuple[str, ...] = ()
    honest: bool = False
    allowed: tuple[str, ...] = field(default=())
    # The score is a ceiling, not exact: the submission's own cell times out, and how many later
    # cells still run in the student's remaining time depends on the machine's load.
    score_is_ceiling: bool = False


def _nb(release: nbformat.NotebookNode, cells: dict[str, str]) -> nbformat.NotebookNode:
    from course_lib.machinery.grading import fill_cells

    return fill_cells(release, cells)


def _save(folder: Path, nb: nbformat.NotebookNode, name: str = f"{LESSON}.ipynb") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / name)


def _index(nb: nbformat.NotebookNode, gid: str) -> int:
    return next(
        i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == gid
    )


def _code_cell(source: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_code_cell(source)


def solutions_with(**cells: str) -> Callable:
    """A writer: the reference solutions with some cells replaced."""

    def write(folder: Path, release, solutions) -> None:
        _save(folder, _nb(release, {**solutions, **cells}))

    return write


def wrong_with(prelude: str, cell: str = "total_answer") -> Callable:
    """A writer: all answers wrong, with `prelude` (a trick) put before the first wrong answer."""

    def write(folder: Path, release, solutions) -> None:
        cells = dict(WRONG)
        cells[cell] = prelude + "\n" + cells[cell]
        _save(folder, _nb(release, {**solutions, **cells}))

    return write


def with_extra_cell(source: str, after: str = "slow_tests", **answers: str) -> Callable:
    """A writer: solutions (some replaced), plus a student cell after the named cell."""

    def write(folder: Path, release, solutions) -> None:
        nb = _nb(release, {**solutions, **answers})
        nb.cells.insert(_index(nb, after) + 1, _code_cell(source))
        _save(folder, nb)

    return write


def raw_bytes(data: bytes, name: str = f"{LESSON}.ipynb") -> Callable:
    """A writer: a file with exactly these bytes."""

    def write(folder: Path, release, solutions) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)

    return write


def edit(fn: Callable[[nbformat.NotebookNode], None], **answers: str) -> Callable:
    """A writer: solutions, then `fn` edits the notebook structure."""

    def write(folder: Path, release, solutions) -> None:
        nb = _nb(release, {**solutions, **answers})
        fn(nb)
        _save(folder, nb)

    return write


def _delete_cells(nb) -> None:
    for gid in ("total_tests", "setup"):
        del nb.cells[_index(nb, gid)]


def _duplicate_cells(nb) -> None:
    i = _index(nb, "total_answer")
    first = nbformat.from_dict(json.loads(json.dumps(nb.cells[i])))
    first.source, first.id = "total_time = 24.0  # an early attempt", "early-attempt"
    nb.cells.insert(i, first)
    j = _index(nb, "scale_tests")
    copy = nbformat.from_dict(json.loads(json.dumps(nb.cells[j])))
    copy.id = "copied-tests"
    nb.cells.insert(j, copy)


def _retype_cells(nb) -> None:
    cell = nb.cells[_index(nb, "total_answer")]
    cell.cell_type = "markdown"
    del cell["outputs"], cell["execution_count"]
    test = nb.cells[_index(nb, "slow_tests")]
    test.cell_type = "raw"
    del test["outputs"], test["execution_count"]


def _change_metadata(nb) -> None:
    nb.cells[_index(nb, "total_tests")].metadata.nbgrader["schema_version"] = 1
    nb.cells[_index(nb, "scale_answer")].metadata.nbgrader["grade_id"] = "my_renamed_cell"
    nb.cells[_index(nb, "slow_tests")].metadata.nbgrader["points"] = 100
    nb.metadata["kernelspec"] = {"name": "no-such-kernel", "display_name": "x", "language": "x"}


def _skip_tests(nb) -> None:
    for gid in ("bottleneck_tests", "slow_tests"):
        cell = nb.cells[_index(nb, gid)]
        cell.metadata["tags"] = ["skip-execution", "raises-exception"]
        cell.metadata.nbgrader["grade"] = False
        cell.metadata.nbgrader.pop("points", None)


def _patch_first(nb) -> None:
    nb.cells.insert(
        0,
        _code_cell(
            "import builtins, math, numpy\nbuiltins.abs = lambda x: 0\n"
            "numpy.abs = lambda x: 0 * x\nmath.isclose = lambda *a, **k: True"
        ),
    )


def _renamed(folder: Path, release, solutions) -> None:
    _save(folder, _nb(release, solutions), name="my answers (final).ipynb")


def _no_notebook(folder: Path, release, solutions) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notes.txt").write_text("I could not finish.")


def _other_lesson_only(folder: Path, release, solutions) -> None:
    other = folder.parent / "pipe01_partition"
    other.mkdir(parents=True, exist_ok=True)
    (other / "pipe01_partition.ipynb").write_text("{}")


def _symlink_to_gradebook(folder: Path, release, solutions) -> None:
    _save(folder, _nb(release, solutions))
    root = folder.parents[2]
    (folder / "answers.db").symlink_to(root / "gradebook.db")
    (folder / "lesson_source.ipynb.txt").symlink_to(root / "source" / LESSON / f"{LESSON}.ipynb")


AE = """
class AlwaysEqual(float):
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    def __le__(self, other):
        return True
    def __ge__(self, other):
        return True
class AlwaysStr(str):
    def __eq__(self, other):
        return True
    __hash__ = str.__hash__
"""

SCAN_FILES = """
import os, socket
found = []
marker = "_hidden_" + "total_reference"
wanted = (".db", ".ipynb", ".json", ".py", ".csv", ".html")
for top, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(top, d) not in ("/proc", "/sys", "/dev", "/usr")
               and d not in ("site-packages", "__pycache__")]
    for name in files:
        path = os.path.join(top, name)
        if not name.endswith(wanted):
            continue
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        if marker.encode() in data or name.endswith(".db"):
            found.append(path)
for path in ("/work/main/gradebook.db", "../../../gradebook.db", "/proc/1/root/work/main/gradebook.db"):
    try:
        open(path, "rb").read(16)
        found.append(path)
    except OSError:
        pass
for parent in ("..", "../..", "../../..", "/tmp", os.path.expanduser("~")):
    try:
        names = os.listdir(parent)
    except OSError:
        continue
    if any(n in names for n in ("submitted", "source", "gradebook.db", "template.db", "spec.json")):
        found.append(f"listing {parent}: {sorted(names)[:12]}")
for port in (5432, 22, 80, 8888):
    s = socket.socket()
    s.settimeout(0.5)
    try:
        s.connect(("127.0.0.1", port))
        found.append(f"tcp {port}")
    except OSError:
        pass
    finally:
        s.close()
print("barrier scan found:", found)
"""

SCAN_MEMORY = """
import base64, gc, linecache, sys
marker = "_hidden_" + "total_reference"
seen = []
ns = dict(globals())
for key, value in ns.items():
    if key in ("marker", "ns", "seen") or key.startswith("_"):
        continue
    if marker in key or marker in repr(value)[:100000]:
        seen.append("global " + key)
for key, lines in list(linecache.cache.items()):
    if marker in "".join(lines[2] if isinstance(lines, tuple) and len(lines) > 2 else []):
        seen.append("linecache " + str(key))
for obj in gc.get_objects():
    try:
        if type(obj).__name__ == "code" and marker in obj.co_names + obj.co_varnames:
            seen.append("code " + obj.co_filename)
    except Exception:
        pass
for name in ("last_value", "last_traceback", "last_exc"):
    if getattr(sys, name, None) is not None:
        seen.append("sys." + name)
print("memory scan:", base64.b64encode(repr(seen).encode()).decode())
"""

CASES: list[Case] = [
    # -- honest work ------------------------------------------------------------------------
    Case("honest_full", "the reference solutions", solutions_with(), FULL, honest=True),
    Case(
        "honest_units_wrong",
        "an honest mistake: milliseconds instead of seconds",
        solutions_with(total_answer="total_time = float(durations.sum() * 1000)"),
        4.0,
        honest=True,
    ),
    Case("untouched", "the release as handed out", lambda f, r, s: _save(f, r), 0.0, honest=True),
    Case(
        "honest_scratch_cells",
        "extra cells of the student's own: prints, a plot, a helper",
        with_extra_cell(
            "import matplotlib.pyplot as plt\n"
            "def helper(x):\n    return 2 * x\n"
            "print('scratch', helper(total_time))\n"
            "plt.plot([1, 2, 3])\nplt.show()",
            after="total_tests",
        ),
        FULL,
        honest=True,
    ),
    Case(
        "renamed_notebook",
        "full solutions saved under another name",
        _renamed,
        FULL,
        flags=("renamed_notebook",),
        honest=True,
        allowed=("renamed_notebook",),
    ),
    # -- broken files and notebooks ---------------------------------------------------------
    Case(
        "corrupt_json",
        "a notebook cut off mid-file",
        raw_bytes(b'{"cells": [{"cell_t'),
        0.0,
        "corrupt",
    ),
    Case("not_a_notebook", "valid JSON, but a list", raw_bytes(b"[1, 2, 3]"), 0.0, "corrupt"),
    Case("binary_garbage", "random bytes", raw_bytes(bytes(range(256)) * 8), 0.0, "corrupt"),
    Case("empty_file", "a zero-byte file", raw_bytes(b""), 0.0, "corrupt"),
    Case("no_notebook", "a folder with notes but no notebook", _no_notebook, 0.0, "missing"),
    Case(
        "other_lesson_only",
        "a student who submitted another lesson only",
        _other_lesson_only,
        0.0,
        "missing",
    ),
    Case(
        "deleted_cells",
        "the setup cell and a grade cell deleted: both restored, graded",
        edit(_delete_cells),
        FULL,
        flags=("cell_restored:setup", "cell_restored:total_tests"),
    ),
    Case(
        "duplicated_cells",
        "a solution cell and a grade cell duplicated",
        edit(_duplicate_cells),
        FULL,
        flags=("duplicate_cell:total_answer", "duplicate_cell:scale_tests"),
    ),
    Case(
        "retyped_cells",
        "a solution cell turned into markdown and a grade cell into raw",
        edit(_retype_cells),
        FULL,
        flags=("cell_retyped:total_answer", "cell_retyped:slow_tests"),
    ),
    Case(
        "changed_metadata",
        "schema version, grade id, points and kernel changed",
        edit(_change_metadata),
        FULL,
        flags=(
            "metadata_changed:total_tests",
            "metadata_changed:scale_answer",
            "metadata_changed:slow_tests",
        ),
    ),
    Case(
        "symlinks_to_course_files",
        "symlinks to the gradebook and source/ in the submission folder: not followed",
        _symlink_to_gradebook,
        FULL,
        flags=("symlink_skipped",),
    ),
    # -- kernels that crash or hang ---------------------------------------------------------
    Case(
        "os_exit",
        "os._exit in the last answer: the kernel dies; its grade cell scores 0",
        solutions_with(slow_answer="import os\nos._exit(0)"),
        5.0,
        "kernel_died",
        flags=("audit:kernel_exit", "runtime:kernel_exit"),
    ),
    Case(
        "infinite_loop",
        "an infinite loop: interrupted at the cell time limit",
        solutions_with(bottleneck_answer="while True:\n    pass"),
        5.0,
        "timeout",
    ),
    Case(
        "loop_ignoring_sigint",
        "an infinite loop that ignores SIGINT: the kernel is stopped",
        solutions_with(
            scale_answer="import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "while True:\n    pass"
        ),
        2.0,
        "timeout",
        flags=("audit:kernel_exit",),
    ),
    Case(
        "huge_output",
        "a 30 MB line and 100000 short lines: outputs capped in bytes",
        with_extra_cell("print('x' * 30_000_000)\nfor i in range(100_000):\n    print(i)"),
        FULL,
        flags=("output_truncated",),
    ),
    Case(
        "resource_hog",
        "8 GiB of memory, a 300 MB file, 800 MB in files: refused by the kernel's limits",
        with_extra_cell(
            "try:\n    hog = bytearray(8 * 2**30)\nexcept MemoryError:\n    print('no memory')\n"
            "try:\n    with open('big.bin', 'wb') as fh:\n        fh.write(b'0' * (300 * 2**20))\n"
            "except OSError as exc:\n    print('no disk', exc.errno)\n"
            "try:\n    for i in range(4):\n        with open(f'part{i}.bin', 'wb') as fh:\n"
            "            fh.write(b'0' * (200 * 2**20))\n"
            "except OSError as exc:\n    print('tmp full', exc.errno)",
            after="total_answer",
        ),
        FULL,
    ),
    Case(
        "background_processes",
        "a thread that prints forever and a child process that sleeps: all killed at the end",
        with_extra_cell(
            "import os, threading, time\n"
            "def spam():\n    while True:\n        time.sleep(0.05)\n"
            "threading.Thread(target=spam, daemon=True).start()\n"
            "if os.fork() == 0:\n    os.execv('/bin/sleep', ['sleep', '31337'])"
        ),
        FULL,
        flags=("audit:threads", "audit:subprocess"),
    ),
    # -- gaming the tests -------------------------------------------------------------------
    Case(
        "skip_execution_tags",
        "grade cells tagged skip-execution and marked grade=false, with wrong answers",
        edit(_skip_tests, bottleneck_answer='bottleneck = "b"', slow_answer="num_slow = 3"),
        4.0,
        flags=("metadata_changed:bottleneck_tests", "metadata_changed:slow_tests"),
    ),
    Case(
        "always_equal_objects",
        "answers that compare equal to anything",
        solutions_with(
            total_answer=AE + "total_time = AlwaysEqual(0.0)",
            scale_answer="def scale_durations(values, factor):\n    return AlwaysEqual(1.0)",
            bottleneck_answer='bottleneck = AlwaysStr("b")',
            slow_answer="num_slow = AlwaysEqual(7)",
        ),
        0.0,
        flags=("audit:custom_comparison",),
    ),
    Case(
        "patched_comparisons",
        "numpy.allclose, numpy.isclose and math.isclose made always-true",
        wrong_with(
            "import math\nimport numpy\nnumpy.allclose = lambda *a, **k: True\n"
            "numpy.isclose = lambda *a, **k: True\nmath.isclose = lambda *a, **k: True"
        ),
        0.0,
        flags=("audit:comparison_patch", "runtime:patched:numpy.allclose"),
    ),
    Case(
        "rebound_check_functions",
        "check_float and friends redefined as no-ops",
        wrong_with(
            "def check_float(*a, **k):\n    return None\n"
            "check_array = check_int = check_choice = passed = check_float"
        ),
        0.0,
        flags=("audit:course_lib_patch", "runtime:rebound:check_float"),
    ),
    Case(
        "input_transformer",
        "an IPython input transformer that empties every test cell",
        wrong_with(
            "get_ipython().input_transformers_cleanup.append(\n"
            "    lambda lines: ['pass\\n'] if any('check_' in l or 'assert' in l for l in lines)"
            " else lines\n)"
        ),
        0.0,
        flags=("audit:input_transformer", "runtime:input_transformer"),
    ),
    Case(
        "ast_transformer",
        "an AST transformer that deletes every statement of test cells",
        wrong_with(
            "import ast\n"
            "class Gut(ast.NodeTransformer):\n"
            "    def visit_Module(self, node):\n"
            "        if 'check_' in ast.dump(node) or 'Assert' in ast.dump(node):\n"
            "            node.body = [ast.Pass()]\n"
            "        return node\n"
            "get_ipython().ast_transformers.append(Gut())"
        ),
        0.0,
        flags=("audit:ast_transformer", "runtime:ast_transformer"),
    ),
    Case(
        "custom_exception_handler",
        "an exception handler that swallows every failure",
        wrong_with("get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)"),
        0.0,
        flags=("audit:exception_handler", "runtime:exception_handler"),
    ),
    Case(
        "silent_tracebacks",
        "traceback display and stderr switched off",
        wrong_with(
            "import os, sys\nip = get_ipython()\n"
            "ip.showtraceback = lambda *a, **k: None\nip._showtraceback = lambda *a, **k: None\n"
            "sys.stderr = open(os.devnull, 'w')"
        ),
        0.0,
        flags=("audit:traceback_display", "runtime:traceback_display"),
    ),
    Case(
        "patched_builtins",
        "abs and round rebound in builtins",
        wrong_with("import builtins\nbuiltins.abs = lambda x: 0\nbuiltins.round = lambda *a: 0"),
        0.0,
        flags=("audit:builtins", "runtime:builtins:abs"),
    ),
    Case(
        "patched_course_lib",
        "course_lib.checks functions given a no-op code object",
        wrong_with(
            "import course_lib.checks as c\n"
            "for f in (c.check_float, c.check_array, c.check_choice, c.check_int):\n"
            "    f.__code__ = (lambda *a, **k: None).__code__"
        ),
        0.0,
        flags=("audit:code_patch", "runtime:patched:course_lib.checks.check_float"),
    ),
    Case(
        "patch_before_setup",
        "a cell above the locked setup cell patches abs and numpy before course_lib is imported",
        edit(_patch_first, **WRONG),
        0.0,
        flags=("audit:builtins", "runtime:builtins:abs", "runtime:patched:numpy.abs"),
    ),
    Case(
        "exit_call",
        "exit() in the last answer: the answer is never defined; its grade cell scores 0",
        solutions_with(slow_answer="exit()"),
        5.0,
        flags=("audit:kernel_exit",),
    ),
    # -- reading what it must not -----------------------------------------------------------
    Case(
        "reads_grading_files",
        "searches the file system and loopback for the gradebook, source/, other students",
        with_extra_cell(SCAN_FILES, after="total_answer"),
        FULL,
        flags=("audit:grading_files",),
    ),
    Case(
        "reads_hidden_from_memory",
        "after a failed hidden test, searches history, linecache, gc and sys for its code",
        with_extra_cell(SCAN_MEMORY, after="total_tests", total_answer="total_time = 24.0"),
        4.0,
        flags=("audit:introspection",),
    ),
]

UNICODE_STUDENT = "ünïcode student"  # graded with full solutions: odd names work


def make_course(course: Path, root: Path) -> Path:
    """A throwaway course at `course` with the fixture lesson built and every case submitted."""
    import shutil

    from course_lib.machinery import build as chain
    from course_lib.machinery.grading import solution_sources

    fixture = root / "tests" / "fixtures" / "grading" / f"{LESSON}.py"
    course.mkdir(parents=True, exist_ok=True)
    shutil.copy(root / "nbgrader_config.py", course / "nbgrader_config.py")
    (course / "notebooks").mkdir(exist_ok=True)
    shutil.copy(fixture, course / "notebooks" / fixture.name)
    chain.build(course, [LESSON])
    source = nbformat.read(course / "source" / LESSON / f"{LESSON}.ipynb", as_version=4)
    release = nbformat.read(course / "release" / LESSON / f"{LESSON}.ipynb", as_version=4)
    solutions = solution_sources(source)
    for case in CASES:
        case.write(course / "submitted" / case.name / LESSON, release, solutions)
    _save(course / "submitted" / UNICODE_STUDENT / LESSON, _nb(release, solutions))
    return course
