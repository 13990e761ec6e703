"""Issue 10's routes: crafted submissions that tried to earn marks, read hidden tests or stop the
class, each graded in a normal `course grade` run with honest neighbours (tests/test_grade_routes.py).

Two lessons: the grading fixture (cost99, 6 autograded points, see tests/adversarial/__init__.py)
and the delegation fixture (cost98: an "implement" exercise whose grade cell forbids
course_lib.graph's and networkx's longest-path routines, 2 points, and a data exercise, 1 point).
Every gaming case answers wrong (or delegates), so any point it got would be unearned; every leak
case answers honestly and the test checks that no hidden value reached anything it can read back.
"""

from __future__ import annotations

from pathlib import Path

from tests.adversarial import (
    WRONG,
    Case,
    _nb,
    _save,
    solutions_with,
    with_extra_cell,
    wrong_with,
)

DELEGATION = "cost98_delegation_fixture"
DELEGATION_FULL = 3.0
HIDDEN_INPUTS = ("0.5, 4.0, 9.0", "-8.0", "-18.0", "[0.5", "9.0]")  # scale_tests' hidden case


def with_files(files: dict[str, str | bytes], writer=None):
    """A writer: another writer's submission plus extra files in the lesson folder."""
    base = writer or solutions_with()

    def write(folder: Path, release, solutions) -> None:
        base(folder, release, solutions)
        for name, data in files.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(data, bytes):
                path.write_bytes(data)
            else:
                path.write_text(data)

    return write


def _symlinked_folder(folder: Path, release, solutions) -> None:
    root = folder.parents[2]
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.symlink_to(root / "source" / folder.name, target_is_directory=True)


def _symlinked_notebook(folder: Path, release, solutions) -> None:
    root = folder.parents[2]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{folder.name}.ipynb").symlink_to(
        root / "source" / folder.name / f"{folder.name}.ipynb"
    )


def _huge_sparse_files(folder: Path, release, solutions) -> None:
    _save(folder, _nb(release, solutions))
    for i in range(12):  # 12 x 45 MiB: more than the sandbox's /tmp (sparse: no real disk)
        with open(folder / f"data{i:02d}.bin", "wb") as fh:
            fh.truncate(45 * 2**20)


def _formula_name(folder: Path, release, solutions) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / '=HYPERLINK("evil.example","click").ipynb').write_bytes(b"{not json")


def _timestamp(text: str):
    def write(folder: Path, release, solutions) -> None:
        _save(folder, _nb(release, solutions))
        (folder / "timestamp.txt").write_text(text)

    return write


SHADOW_CHECKS = """
def check_float(*a, **k):
    return None
check_int = check_array = check_choice = check_names = check_type = check_range = check_float
def passed(*a, **k):
    print("shadowed")
class AnswerError(AssertionError):
    pass
"""

GUARD_OFF = """
k = get_ipython().kernel
k.guard = None
type(k).guard = None
import course_lib.machinery.grader.kernel as gk
gk.Guard.restore = lambda self: None
def check_float(*a, **k):
    return None
check_int = check_array = check_choice = passed = check_float
"""

SESSION_SEND = """
session = get_ipython().kernel.session
_send = session.send
def send(stream, msg_or_type, content=None, *a, **k):
    if isinstance(msg_or_type, str) and msg_or_type == "error":
        return None
    if isinstance(content, dict) and content.get("status") == "error":
        content = {**content, "status": "ok"}
    return _send(stream, msg_or_type, content, *a, **k)
session.send = send
"""

AUDIT_HOOK_ANSWERS = """
import re, sys
def _hook(event, args):
    if event in ("compile", "exec") and args:
        text = args[0] if isinstance(args[0], str) else getattr(args[0], "co_consts", "")
        text = str(text)
        m = re.search(r"_hidden_total_reference = ([0-9.]+)", text)
        if m:
            globals()["total_time"] = float(m.group(1))
        m = re.search(r"num_slow, (\\d+)", text)
        if m:
            globals()["num_slow"] = int(m.group(1))
sys.addaudithook(_hook)
"""

LIAR = """
import sys
import numpy as np
class Liar(np.float64):
    def __float__(self):
        f = sys._getframe(1)
        return float(f.f_locals.get("expected", 0.024))
class LiarInt(int):
    def __int__(self):
        return 2
    def __eq__(self, other):
        return True
    __hash__ = int.__hash__
"""

ATTRGETTER = """
import operator
_up = operator.attrgetter("f_back.f_back.f_globals")
class Sneaky(float):
    def __float__(self):
        import sys
        ns = _up(sys._getframe())
        return float(ns.get("_hidden_total_reference", 0.0))
"""

CAPTURE = """%%capture
import gc
for obj in gc.get_objects():
    if isinstance(obj, dict) and "_hidden_total_reference" in obj:
        total_time = obj["_hidden_total_reference"]
"""

HELPER_PY = """
import gc, sys
def find_expected(name):
    for obj in gc.get_objects():
        if isinstance(obj, dict) and name in obj:
            return obj[name]
    frame = sys._getframe()
    while frame is not None:
        if name in frame.f_globals:
            return frame.f_globals[name]
        frame = frame.f_back
    return None
"""

AUDIT_HOOK_HEX = """
import sys
_seen = []
sys.addaudithook(lambda e, a: _seen.append(str(a[0])) if e in ("compile", "exec") and a else None)
"""

PRINT_SEEN = "print('seen:', ''.join(_seen).encode().hex())"

EXECUTOR_SPY = """
import asyncio, concurrent.futures, time
_calls = []
_real = scale_durations
def scale_durations(values, factor):
    _calls.append((list(values), factor))
    return _real(values, factor)
def _watch():
    for _ in range(200):
        time.sleep(0.01)
asyncio.get_event_loop().run_in_executor(concurrent.futures.ThreadPoolExecutor(1), _watch)
"""

SOL_SCALE = (
    "import numpy as np\n\n\ndef scale_durations(values, factor):\n"
    "    return np.asarray(values, dtype=float) * factor\n"
)
EXECUTOR_PRINT = "import time\ntime.sleep(0.5)\nprint('calls seen:', repr(_calls).encode().hex())"

RAISES_INPUTS = """def scale_durations(values, factor):
    import numpy as np
    if factor == 3.0:
        return np.asarray(values, dtype=float) * factor
    raise ValueError(f"my inputs were {list(values)} and {factor}")"""

ENVIRON = """
import os
print("environ:", sorted(os.environ))
raw = open("/proc/self/environ", "rb").read()
print("proc environ:", raw.hex())
"""

FDS = """
import os
found = []
for name in os.listdir("/proc/self/fd"):
    try:
        target = os.readlink(f"/proc/self/fd/{name}")
    except OSError:
        continue
    found.append(target)
    for flags, mode in ((os.O_RDONLY, "r"), (os.O_WRONLY | os.O_APPEND, "a")):
        try:
            fd = os.open(f"/proc/self/fd/{name}", flags | os.O_NONBLOCK)
            os.close(fd)
            found.append(f"opened {mode}: {target}")
        except OSError:
            pass
print("fds:", json.dumps(found))
"""

FILL_DISK = """
import os, json
import ipykernel.connect
places = {"cwd": os.getcwd(), "tmp": "/tmp", "home": os.path.expanduser("~")}
try:
    places["connection"] = os.path.dirname(ipykernel.connect.get_connection_file())
except Exception:
    pass
ip = get_ipython().kernel
for name in ("shell_socket", "iopub_socket"):
    sock = getattr(ip, name, None)
    try:
        places["ipc"] = os.path.dirname(sock.getsockopt_string(32).split("://", 1)[1])
    except Exception:
        pass
written = {}
chunk = b"0" * (16 * 2**20)
for name, place in places.items():
    total = 0
    for i in range(64):
        try:
            with open(os.path.join(place, f"fill{i}.bin"), "wb") as fh:
                fh.write(chunk)
            total += len(chunk)
        except OSError:
            break
    written[name] = [place, total]
print("disk:", json.dumps(written))
"""

DEEP = "deep = 1" + "+1" * 5_000  # a RecursionError in ast.parse

FORK_BOMB = """
import os, time
children = []
for i in range(2000):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    children.append(pid)
print("forked", len(children))
for pid in children:
    try:
        os.kill(pid, 9)
    except OSError:
        pass
"""

MEMORY_HOG = """
import multiprocessing as mp
def hog():
    block = bytearray(1 << 30)
    for i in range(0, len(block), 4096):
        block[i] = 1
    import time
    time.sleep(1)
procs = [mp.get_context("fork").Process(target=hog) for _ in range(4)]
for p in procs:
    p.start()
for p in procs:
    p.join(12)
print("exit codes", [p.exitcode for p in procs])
"""

CPU_HOG = """
import threading, time
def spin(stop):
    while time.time() < stop:
        pass
start_cpu, start = time.process_time(), time.time()
threads = [threading.Thread(target=spin, args=(start + 3,)) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("cpu per wall:", round((time.process_time() - start_cpu) / (time.time() - start), 2))
"""

ROUTES: list[Case] = [
    # -- honest neighbours ----------------------------------------------------------------------
    Case("honest_full", "the reference solutions", solutions_with(), 6.0, honest=True),
    Case(
        "honest_units_wrong",
        "milliseconds instead of seconds",
        solutions_with(total_answer="total_time = float(durations.sum() * 1000)"),
        4.0,
        honest=True,
    ),
    Case("untouched", "the release as handed out", lambda f, r, s: _save(f, r), 0.0, honest=True),
    # -- marks without earning them ---------------------------------------------------------
    Case(
        "shadow_course_lib",
        "a course_lib/ package among the submission's files, with no-op checks",
        with_files(
            {
                "course_lib/__init__.py": "",
                "course_lib/checks.py": SHADOW_CHECKS,
                "course_lib/machinery/grader/kernel.py": "raise SystemExit",
            },
            with_extra_cell(
                "import course_lib, course_lib.checks\nprint('course_lib from', course_lib.__file__)",
                after="setup",
                **WRONG,
            ),
        ),
        0.0,
    ),
    Case(
        "guard_switched_off",
        "the kernel's guard reached from get_ipython() and switched off",
        wrong_with(GUARD_OFF),
        0.0,
        flags=("audit:kernel_internals",),
    ),
    Case(
        "session_send_wrapped",
        "Session.send wrapped to drop error outputs and turn error replies into ok",
        wrong_with(SESSION_SEND),
        0.0,
        flags=("audit:kernel_internals",),
    ),
    Case(
        "audit_hook_expected_values",
        "an audit hook that reads grade cells' source and writes the expected values in",
        wrong_with(AUDIT_HOOK_ANSWERS),
        0.0,
    ),
    Case(
        "lying_float_subclass",
        "numpy-float and int subclasses whose __float__/__int__ return the expected value",
        solutions_with(
            total_answer=LIAR + "total_time = Liar(24.0)",
            scale_answer=WRONG["scale_answer"],
            bottleneck_answer=WRONG["bottleneck_answer"],
            slow_answer="num_slow = LiarInt(3)",
        ),
        0.0,
        flags=("audit:introspection", "audit:custom_comparison"),
    ),
    Case(
        "frames_via_attrgetter",
        "frames and namespaces read through operator.attrgetter",
        wrong_with(ATTRGETTER + "total_time = Sneaky(24.0)"),
        0.0,
        flags=("audit:introspection",),
    ),
    Case(
        "capture_body",
        "gc searched for the hidden reference inside a %%capture cell",
        with_extra_cell(CAPTURE, after="total_answer", **WRONG),
        0.0,
        flags=("audit:introspection",),
    ),
    Case(
        "imported_helper",
        "an imported helper .py that searches gc and frames for expected values",
        with_files(
            {"helper.py": HELPER_PY},
            with_extra_cell(
                "from helper import find_expected\n"
                "total_time = find_expected('_hidden_total_reference') or 24.0",
                after="total_answer",
                **WRONG,
            ),
        ),
        0.0,
        flags=("audit:introspection",),
    ),
    Case(
        "shell_escape",
        "!cmd reading the environment and the parent folders",
        with_extra_cell("!cat /proc/self/environ\n!ls -la .. /", after="total_answer", **WRONG),
        0.0,
        flags=("audit:subprocess",),
    ),
    Case(
        "time_import",
        "%time import gc, then gc searched",
        with_extra_cell(
            "%time import gc\nfound = [o for o in gc.get_objects() if isinstance(o, float)]",
            after="total_answer",
            **WRONG,
        ),
        0.0,
        flags=("audit:introspection",),
    ),
    Case(
        "sys_modules_gc",
        'sys.modules["gc"] instead of import gc',
        with_extra_cell(
            'import sys\nobjs = sys.modules["gc"].get_objects()', after="total_answer", **WRONG
        ),
        0.0,
        flags=("audit:introspection",),
    ),
    Case(
        "name_added_to_checks",
        "names added to course_lib.checks and its functions replaced",
        wrong_with(
            "import course_lib.checks as c\n"
            "c._always = lambda *a, **k: None\n"
            "c.check_float = c.check_int = c.check_array = c.check_choice = c._always\n"
            "c.AnswerError = type('AnswerError', (Exception,), {})"
        ),
        0.0,
        flags=("audit:course_lib_patch",),
    ),
    Case(
        "symlinked_lesson_folder",
        "the lesson folder is a symlink to source/<lesson> (the instructor's notebook)",
        _symlinked_folder,
        0.0,
        "corrupt",
        flags=("symlink_refused",),
    ),
    Case(
        "symlinked_notebook",
        "the notebook is a symlink to the instructor's notebook",
        _symlinked_notebook,
        0.0,
        "corrupt",
        flags=("symlink_refused",),
    ),
    # -- leaks ------------------------------------------------------------------------------
    Case(
        "audit_hook_hex",
        "an audit hook collects every source compiled and prints it hex-encoded at the end",
        with_extra_cell(PRINT_SEEN, **{"total_answer": AUDIT_HOOK_HEX + "total_time = 0.024"}),
        6.0,
    ),
    Case(
        "executor_thread",
        "a thread from asyncio's executor and a wrapper that record the function's inputs",
        with_extra_cell(EXECUTOR_PRINT, scale_answer=SOL_SCALE + "\n" + EXECUTOR_SPY),
        6.0,
    ),
    Case(
        "exception_carries_inputs",
        "the function raises an exception whose message holds the hidden inputs",
        solutions_with(scale_answer=RAISES_INPUTS),
        4.0,
    ),
    Case(
        "environ_token",
        "reads its environment and /proc/self/environ",
        with_extra_cell(ENVIRON),
        6.0,
        flags=("audit:grading_files",),
    ),
    Case(
        "inherited_fds",
        "reopens every inherited file descriptor through /proc/self/fd",
        with_extra_cell("import json\n" + FDS),
        6.0,
        flags=("audit:grading_files",),
    ),
    # -- one student stops everyone -----------------------------------------------------------
    Case(
        "fill_disk",
        "writes until the disk is full in every folder it can reach, the socket folder included",
        with_extra_cell(FILL_DISK, after="total_answer"),
        6.0,
    ),
    Case(
        "unwritable_results",
        "(set up by the test) its autograded/ folder cannot be written: marked, the run goes on",
        solutions_with(),
        0.0,
        "error_student",
        flags=("write_failed",),
    ),
    # -- student-caused grader errors ---------------------------------------------------------
    Case(
        "deep_nesting",
        "an expression nested 5000 deep (RecursionError in ast.parse)",
        with_extra_cell(DEEP, after="total_answer"),
        6.0,
        "timeout",  # IPython cannot run it either: the student's own cell times out
        flags=("audit:too_deep",),
        score_is_ceiling=True,
    ),
    Case(
        "bad_timestamp",
        "an unparsable timestamp.txt",
        _timestamp("the day before the deadline, honest"),
        6.0,
        flags=("timestamp:unparsable",),
    ),
    Case(
        "future_timestamp",
        "a timestamp.txt in the future",
        _timestamp("2999-01-01 00:00:00.000000 UTC"),
        6.0,
        flags=("timestamp:future",),
    ),
    Case(
        "forged_timestamp",
        "a timestamp.txt far in the past (it must not become the submission time)",
        _timestamp("2001-01-01 00:00:00.000000 UTC"),
        6.0,
    ),
    Case(
        "huge_extra_files",
        "540 MB of extra files, more than the sandbox's /tmp",
        _huge_sparse_files,
        6.0,
        flags=("files_skipped:too_large",),
    ),
    Case(
        "newline\nname",
        "a newline in the student folder name",
        solutions_with(),
        6.0,
        flags=("student_name:control_characters",),
    ),
    Case(
        "formula_file_name",
        "a notebook named =HYPERLINK(...).ipynb (it would be a formula in the CSV)",
        _formula_name,
        0.0,
        "corrupt",
    ),
    # -- resource limits ----------------------------------------------------------------------
    Case(
        "fork_bomb",
        "forks until refused (bounded at 2000)",
        with_extra_cell(FORK_BOMB),
        6.0,
    ),
    Case(
        "memory_hog",
        "four processes touching 1 GiB each (more than the tree may hold)",
        with_extra_cell(MEMORY_HOG),
        6.0,
    ),
    Case("cpu_hog", "four threads spinning for 3 s", with_extra_cell(CPU_HOG), 6.0),
]

# -- delegation: the "implement" exercise of cost98, by every route --------------------------
HONEST_LENGTH = """def longest_length(durations, deps):
    order, preds = [], {op: [] for op in durations}
    for u, v in deps:
        preds[v].append(u)
    end = {}
    pending = list(durations)
    while pending:
        for op in list(pending):
            if all(p in end for p in preds[op]):
                end[op] = durations[op] + max((end[p] for p in preds[op]), default=0.0)
                pending.remove(op)
    return max(end.values())"""

GRAPH = "g = G.step_graph(durations, deps)"


def delegating(body: str, prelude: str = "") -> dict[str, str]:
    """Answers whose longest_length delegates by some route; the data exercise is right."""
    source = prelude + "\ndef longest_length(durations, deps):\n"
    source += "".join(f"    {line}\n" for line in body.strip().splitlines())
    return {"length_answer": source}


DELEGATION_ROUTES: list[Case] = [
    Case(
        "honest_implementation",
        "a correct implementation by hand",
        solutions_with(length_answer=HONEST_LENGTH),
        DELEGATION_FULL,
        honest=True,
    ),
    Case(
        "reference_solutions",
        "the reference solutions",
        solutions_with(),
        DELEGATION_FULL,
        honest=True,
    ),
    Case(
        "direct_call",
        "calls course_lib.graph.step_time",
        solutions_with(**delegating(f"{GRAPH}\nreturn G.step_time(g)")),
        1.0,
        flags=("runtime:delegation",),
    ),
    Case(
        "wrapped_alias",
        "networkx's undecorated alias (__wrapped__)",
        solutions_with(
            **delegating(
                "g = nx.DiGraph()\nfor op, d in durations.items():\n    g.add_node(op)\n"
                "for u, v in deps:\n    g.add_edge(u, v, weight=durations[u])\n"
                "path = nx.dag_longest_path.__wrapped__(g)\nreturn sum(durations[op] for op in path)"
            )
        ),
        1.0,
        flags=("runtime:delegation",),
    ),
    Case(
        "earlier_reference",
        "a reference to step_time taken in an earlier cell",
        solutions_with(
            **delegating(f"{GRAPH}\nreturn _my_step_time(g)", prelude="_my_step_time = G.step_time")
        ),
        1.0,
        flags=("runtime:delegation",),
    ),
    Case(
        "earlier_code_object",
        "step_time's code object copied in an earlier cell",
        solutions_with(
            **delegating(
                f"{GRAPH}\nimport types\nf = types.FunctionType(_code, vars(G))\nreturn f(g)",
                prelude="_code = G.step_time.__code__",
            )
        ),
        1.0,
        flags=("runtime:delegation",),
    ),
    Case(
        "private_helper",
        "course_lib.graph's private helper _passes",
        solutions_with(**delegating(f"{GRAPH}\nreturn float(G._passes(g).step_time)")),
        1.0,
        flags=("runtime:delegation",),
    ),
    Case(
        "other_public_route",
        "what_if, which calls step_time",
        solutions_with(**delegating(f"{GRAPH}\nreturn G.what_if(g, {{}})")),
        1.0,
        flags=("runtime:delegation",),
    ),
    Case(
        "reload",
        "importlib.reload of course_lib.graph",
        solutions_with(
            **delegating(
                f"import importlib\nfresh = importlib.reload(G)\n{GRAPH}\nreturn fresh.step_time(g)"
            )
        ),
        1.0,
        flags=("runtime:delegation",),
    ),
    Case(
        "spec_from_file",
        "a fresh copy through spec_from_file_location",
        solutions_with(
            **delegating(
                "import importlib.util\nspec = importlib.util.spec_from_file_location('g2', G.__file__)\n"
                "m = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(m)\n"
                "return m.step_time(m.step_graph(durations, deps))"
            )
        ),
        1.0,
        flags=("runtime:delegation",),
    ),
    Case(
        "read_source",
        "reads graph.py and executes its text",
        solutions_with(
            **delegating(
                "ns = {}\nexec(open(G.__file__).read(), ns)\n"
                "return ns['step_time'](ns['step_graph'](durations, deps))"
            )
        ),
        1.0,
        flags=("runtime:delegation",),
    ),
    Case(
        "reimport",
        "drops course_lib.graph from sys.modules and imports it again",
        solutions_with(
            **delegating(
                "import sys, importlib\nsys.modules.pop('course_lib.graph', None)\n"
                "m = importlib.import_module('course_lib.graph')\n"
                "return m.step_time(m.step_graph(durations, deps))"
            )
        ),
        1.0,
        flags=("runtime:delegation",),
    ),
    Case(
        "subprocess",
        "runs another Python that computes it",
        solutions_with(
            **delegating(
                "import subprocess, sys, json\n"
                "code = 'import json,sys; from course_lib import graph as G; d, e = json.load(sys.stdin); '"
                " 'print(G.step_time(G.step_graph(d, [tuple(x) for x in e])))'\n"
                "out = subprocess.run([sys.executable, '-c', code], input=json.dumps([durations, deps]),"
                " capture_output=True, text=True)\nreturn float(out.stdout)"
            )
        ),
        1.0,
        flags=("runtime:delegation",),
    ),
    Case(
        "ctypes",
        "ctypes to reach the interpreter",
        solutions_with(
            **delegating(
                "import ctypes\nctypes.pythonapi.Py_IncRef(ctypes.py_object(G))\n"
                f"{GRAPH}\nreturn G.step_time(g)"
            )
        ),
        1.0,
        flags=("runtime:delegation",),
    ),
    Case(
        "gc_referrers",
        "gc.get_referrers to find the original code",
        solutions_with(**delegating("import gc\nrefs = gc.get_referrers(G.step_time)\nreturn 0.0")),
        1.0,
        flags=("runtime:delegation",),
    ),
    Case(
        "copy_in_tmp",
        "a student cell copies graph.py into /tmp; the function loads the copy",
        with_extra_cell(
            "import shutil\nshutil.copy(G.__file__, '/tmp/g_copy.py')",
            after="setup",
            **delegating(
                "import sys\nsys.path.insert(0, '/tmp')\nimport g_copy\n"
                "return g_copy.step_time(g_copy.step_graph(durations, deps))"
            ),
        ),
        1.0,
    ),
    Case(
        "catch_and_fallback",
        "tries the routine, falls back to a wrong answer on error",
        solutions_with(
            **delegating(
                f"try:\n    {GRAPH}\n    return G.step_time(g)\nexcept Exception:\n    return 5.0"
            )
        ),
        1.0,
        flags=("runtime:delegation",),
    ),
]
