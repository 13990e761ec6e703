"""The trusted checker: grade cells run here, in the grader, never in the student's kernel.

For each student the checker executes the lesson's locked setup cells — the instructor's code,
from the gradebook — once, in a fresh namespace (IPython magics dropped, matplotlib drawing into
memory). At a grade cell's position in the notebook the grader asks the student's kernel for the
*answers*: the names the grade cell reads that neither the setup nor the cell itself binds
(tests/test_lesson_budget.py keeps grade cells to those). They arrive as plain data (wire.py); a
student function arrives as a name. After the notebook has run and the kernel with everything it
started is gone, each grade cell runs here on a copy of the setup namespace plus its answers:

- ``check_float(...)`` and friends are course_lib.checks, unchanged; a value of a type that may not
  cross is an ``Unsupported`` stand-in named after its type, which every check refuses;
- calling a student function sends data to a probe (probe.py) in the student's sandbox and brings
  data back; inside ``forbid(...)`` the probe is one whose forbidden routines are disabled, so
  delegating by any route fails that cell (flag ``runtime:delegation``);
- the cell's outputs are built here: what its visible part prints (the passed() line), and on
  failure one error output. A failure in the hidden part (between the HIDDEN TESTS markers) says
  which answer is wrong and, for a known mistake, which one — never an expected value, an input
  or the student's value; an exception the student's function raised there is named by type only.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import json
import symtable
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from nbformat import NotebookNode

from course_lib import checks
from course_lib.machinery.grader import wire
from course_lib.machinery.grader.notebook import BEGIN_HIDDEN, END_HIDDEN, LessonSpec

MAX_EXPORT_BYTES = wire.MAX_BYTES


class GraderError(RuntimeError):
    """The lesson itself cannot be checked (its setup fails in the grader): not the student's."""


def python_lines(source: str) -> str:
    """Cell source as plain Python: IPython magic and shell lines become blank lines (the line
    numbers stay, so hidden-test regions keep their place)."""
    return "\n".join(
        "" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()
    )


def hidden_lines(source: str) -> frozenset[int]:
    """1-based line numbers between the BEGIN and END HIDDEN TESTS markers."""
    out, inside = set(), False
    for number, line in enumerate(source.splitlines(), start=1):
        s = line.strip()
        if s.startswith(BEGIN_HIDDEN):
            inside = True
        elif s.startswith(END_HIDDEN):
            inside = False
        elif inside:
            out.add(number)
    return frozenset(out)


def _bound(tree: ast.AST) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
            out.update(a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
    return out


def loaded_names(source: str) -> set[str]:
    """Names a piece of code reads anywhere (function bodies included)."""
    try:
        tree = ast.parse(python_lines(source))
        return {
            n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()


def global_reads(source: str) -> set[str]:
    """Module-level names a piece of code can read: every name its top level and its class
    bodies read, and the globals its functions and comprehensions read — not a function's
    parameters or locals (a local named like another cell's global does not need that cell)."""
    try:
        table = symtable.symtable(python_lines(source), "<cell>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return loaded_names(source)
    out: set[str] = set()
    scopes = [table]
    while scopes:
        scope = scopes.pop()
        every = scope.get_type() in ("module", "class")
        for symbol in scope.get_symbols():
            if symbol.is_referenced() and (every or symbol.is_global()):
                out.add(symbol.get_name())
        scopes.extend(scope.get_children())
    return out


def bound_names(source: str) -> set[str]:
    """Names a piece of code binds anywhere."""
    try:
        return _bound(ast.parse(python_lines(source)))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()


@dataclass
class CellPlan:
    """One grade cell, compiled once per lesson: what it reads from the student, where it hides."""

    name: str
    source: str
    code: Any
    answers: tuple[str, ...]
    hidden: frozenset[int]
    filename: str


@dataclass
class Fetched:
    """What the kernel answered at a grade cell's position."""

    index: int
    values: dict[str, Any] = field(default_factory=dict)
    functions: set[str] = field(default_factory=set)
    failure: str | None = None  # why the answers could not be read (the cell fails)
    flag: str | None = None


class StudentCallError(Exception):
    """Raised in a grade cell when the student's function raised; carries its type and message."""


def _student_exception(base: str, own: str, message: str, function: str) -> BaseException:
    """An exception of the builtin type the student's raised (so ``except ValueError`` works)."""
    cls = getattr(builtins, base, None)
    exc: BaseException
    if (
        isinstance(cls, type)
        and issubclass(cls, Exception)
        and not issubclass(cls, (checks.AnswerError,))
    ):
        try:
            exc = cls(message)
        except Exception:  # noqa: BLE001 - a builtin that wants other arguments
            exc = StudentCallError(message)
    else:
        exc = StudentCallError(message)
    exc._course_student = (own, message, function)  # type: ignore[attr-defined]
    return exc


class ProbeSession:
    """The grader's side of the probes of one student's sandbox (one probe alive at a time)."""

    def __init__(self, link: Any, init: dict[str, Any], timeout: float, budget: Any) -> None:
        self.link = link
        self.init = init  # setup sources, cells, exec_dir
        self.timeout = timeout  # per call
        self.budget = budget  # callable: seconds left for this student
        self.current: tuple[tuple[str, str], ...] | None = None  # the live probe's disabled set
        self.probe_id = 0
        self.flags: set[str] = set()
        self.dead_reason: str | None = None

    def _deadline(self, base: float) -> float:
        return max(0.5, min(base, self.budget()))

    def _spawn(self, targets: tuple[tuple[str, str, str], ...]) -> str | None:
        if self.link is None or self.link.closed:
            return "the sandbox is gone"
        self.probe_id += 1
        init = {**self.init, "targets": [list(t) for t in targets]}
        reply = self.link.op({"op": "probe", "id": self.probe_id, "init": init}, 30.0)
        if not reply or not reply.get("ok"):
            return "the probe did not start"
        line = self.link.from_probe(self.probe_id, self._deadline(60.0))
        if line is None:
            return "the probe did not get ready in time"
        msg = _json(line)
        if not isinstance(msg, dict) or not msg.get("ready"):
            return _death(msg)
        if msg.get("setup_errors"):
            self.flags.add("probe:setup_failed")
        self.current = _disabled(targets)
        return None

    def call(
        self, name: str, upto: int, targets: tuple[tuple[str, str, str], ...], args: Any, kw: Any
    ) -> Any:
        try:
            args_text, kw_text = wire.dumps(list(args)), wire.dumps(dict(kw))
        except wire.WireError as exc:
            raise GraderError(f"a grade cell passed arguments that cannot cross: {exc}") from None
        if self.current != _disabled(targets):  # the same routines disabled: the same probe
            if self.current is not None:
                self.link.op({"op": "kill_probe"}, 10.0)
                self.current = None
            problem = self._spawn(targets)
            if problem is not None:
                return self._failed(problem, targets)
        cells = sum(1 for i, _ in self.init.get("cells", []) if int(i) < upto)
        deadline = self._deadline(self.timeout * (1 + cells))
        request = {"op": "call", "fn": name, "upto": upto, "args": args_text, "kwargs": kw_text}
        if not self.link.to_probe(self.probe_id, request):
            return self._failed("the sandbox is gone", targets)
        line = self.link.from_probe(self.probe_id, deadline)
        if line is None:
            self.link.op({"op": "kill_probe"}, 10.0)
            self.current = None
            exc = TimeoutError(f"{name} did not return within {deadline:.0f} s")
            exc._course_student = ("TimeoutError", str(exc), name)  # type: ignore[attr-defined]
            raise exc
        msg = _json(line)
        if not isinstance(msg, dict):
            return self._failed("the probe sent something unreadable", targets)
        for reason in msg.get("blocked") or ():
            self.flags.add(f"runtime:probe_blocked:{str(reason)[:50]}")
        if "ok" in msg:
            try:
                return wire.loads(msg["ok"])
            except wire.WireError as exc:
                self.flags.add(f"wire:{_kind(exc)}")
                raise wire.WireError(
                    f"the value {name} returned could not be read: {exc}"
                ) from None
        if "raised" in msg:
            base, own, message = (list(msg["raised"]) + ["", "", ""])[:3]
            raise _student_exception(str(base), str(own), str(message), name)
        if "missing" in msg:
            raise NameError(f"name {name!r} is not defined")
        if "unsendable" in msg:
            self.flags.add("wire:unsendable")
            raise wire.WireError(f"the value {name} returned cannot be checked")
        self.current = None
        return self._failed(_death(msg), targets)

    def _failed(self, reason: str, targets: tuple) -> Any:
        self.current = None
        if reason.startswith("delegation"):
            self.flags.add("runtime:delegation:" + reason.split(":", 1)[-1].strip()[:60])
            what = "your code reached a routine this exercise asks you to write yourself"
            raise checks.DelegationError(f"{what} ({reason.split(':', 1)[-1].strip()})")
        self.flags.add("runtime:probe_failed")
        raise RuntimeError(f"your function could not be called: {reason}")


def _disabled(targets: tuple[tuple[str, str, str], ...]) -> tuple[tuple[str, str], ...]:
    """The routines a probe for these forbid targets has disabled, without the messages (which
    name the exercise, "Exercise 2" or "Exercise 2 (hidden cases)"): a grade cell's visible and
    hidden forbid blocks, and two cells that forbid the same routines, share one probe."""
    return tuple(sorted({(owner, attr) for owner, attr, _ in targets}))


def _kind(exc: Exception) -> str:
    return str(exc).split(" ")[0].strip(":(")[:30] or "malformed"


def _json(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _death(msg: Any) -> str:
    if isinstance(msg, dict):
        if isinstance(msg.get("killed"), str):
            return msg["killed"]
        if isinstance(msg.get("failed"), str):
            return "the probe failed: " + msg["failed"]
        if "dead" in msg:
            return f"the probe ended ({msg.get('why') or 'exit status ' + str(msg['dead'])})"
    return "the probe ended"


_ACTIVE: list[tuple[tuple[str, str, str], ...]] = []  # forbid blocks open in the checker


@contextlib.contextmanager
def _grading_forbid(targets: tuple, exercise: str) -> Iterator[None]:
    """course_lib.checks.forbid in the checker: calls in the block go to a probe that has the
    targets disabled."""
    described = []
    for owner, attr in targets:
        label = f"{getattr(owner, '__name__', owner)}.{attr}"
        message = f"{exercise} asks you to write this yourself; your code called {label}"
        described.append((_owner_path(owner), str(attr), message))
    _ACTIVE.append(tuple(described))
    try:
        yield
    finally:
        _ACTIVE.pop()


def _owner_path(owner: Any) -> str:
    import types

    if isinstance(owner, types.ModuleType):
        return owner.__name__
    if isinstance(owner, type):
        return f"{owner.__module__}:{owner.__qualname__}"
    raise GraderError(
        f"forbid target owner must be a module or a class, got {type(owner).__name__}"
    )


def active_targets() -> tuple[tuple[str, str, str], ...]:
    """The (owner, attribute, message) targets of every forbid block open now, sorted."""
    return tuple(sorted({t for block in _ACTIVE for t in block}))


class CheckedFunction:
    """Stands for a student function in a grade cell: a call runs it in a probe."""

    def __init__(self, name: str, upto: int, session: ProbeSession) -> None:
        self.__name__ = self.name = name
        self.upto = upto
        self.session = session

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.session.call(self.name, self.upto, active_targets(), args, kwargs)

    def __repr__(self) -> str:
        return f"<function {self.name}>"


class _CellOutput:
    """sys.stdout while a grade cell runs: keeps what the cell's visible part prints."""

    def __init__(self, filename: str, hidden: frozenset[int]) -> None:
        self.filename, self.hidden = filename, hidden
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        if not _in_hidden(sys._getframe(1), self.filename, self.hidden):
            self.parts.append(str(text))
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def _in_hidden(frame: Any, filename: str, hidden: frozenset[int]) -> bool:
    """Whether the outermost frame of the grade cell on this stack is on a hidden line."""
    line = None
    while frame is not None:
        if frame.f_code.co_filename == filename:
            line = frame.f_lineno
        frame = frame.f_back
    return line is not None and line in hidden


def _raised_in_hidden(exc: BaseException, filename: str, hidden: frozenset[int]) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            return tb.tb_lineno in hidden
        tb = tb.tb_next
    return False


def _error(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(
        output_type="error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"]
    )


class Checker:
    """Runs one student's grade cells in the grader (see the module docstring)."""

    def __init__(self, spec: LessonSpec) -> None:
        self.spec = spec
        setup = [c.source for c in spec.cells if c.locked and not c.grade and c.cell_type == "code"]
        self.setup_sources = setup
        self.setup_code = [
            compile(python_lines(s), f"<setup {i}>", "exec") for i, s in enumerate(setup)
        ]
        self.setup_names: set[str] = set()
        for source in setup:
            self.setup_names |= bound_names(source)
        self.plans: dict[str, CellPlan] = {}
        for cell in spec.cells:
            if cell.grade and cell.cell_type == "code":
                self.plans[cell.name] = self._plan(cell.name, cell.source)
        self.namespace: dict[str, Any] | None = None

    def _plan(self, name: str, source: str) -> CellPlan:
        filename = f"<grade cell {name}>"
        text = python_lines(source)
        code = compile(text, filename, "exec")
        tree = ast.parse(text)
        loaded = {
            n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        answers = loaded - _bound(tree) - self.setup_names - set(dir(builtins))
        return CellPlan(name, source, code, tuple(sorted(answers)), hidden_lines(source), filename)

    def preload_modules(self) -> list[str]:
        """Modules the setup and grade cells import (the sandbox imports them before any student
        code, for the kernel and the probes)."""
        found = []
        sources = self.setup_sources + [p.source for p in self.plans.values()]
        for source in sources:
            try:
                tree = ast.parse(python_lines(source))
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    found += [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    found.append(node.module)
        return list(dict.fromkeys(found))

    # -- set-up -------------------------------------------------------------------------------
    def setup(self) -> None:
        """Execute the setup cells (instructor code) in a fresh namespace; once per student."""
        _quiet_matplotlib()
        ns: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
        out = sys.stdout
        sys.stdout = _Discard()
        try:
            for code in self.setup_code:
                exec(code, ns)
        except Exception as exc:
            raise GraderError(
                f"the lesson's setup cell fails in the grader: {type(exc).__name__}: {exc}"
            ) from None
        finally:
            sys.stdout = out
            _close_figures()
        self.namespace = ns

    # -- answers ------------------------------------------------------------------------------
    def request_names(self, grade_id: str) -> list[str]:
        plan = self.plans.get(grade_id)
        return list(plan.answers) if plan else []

    def receive(self, grade_id: str, index: int, text: Any) -> Fetched:
        """Decode what the kernel answered for a grade cell (strictly: it is untrusted data)."""
        fetched = Fetched(index)
        if not isinstance(text, str):
            fetched.failure = "the kernel did not answer the grader"
            fetched.flag = "wire:no_answer"
            return fetched
        if len(text) > MAX_EXPORT_BYTES:
            fetched.failure, fetched.flag = "your answers are too large to check", "wire:too_large"
            return fetched
        try:
            data = json.loads(text, parse_constant=_no_constant)
        except (ValueError, RecursionError):
            fetched.failure, fetched.flag = "the kernel's answer was malformed", "wire:malformed"
            return fetched
        if not isinstance(data, dict) or not isinstance(data.get("values"), dict):
            fetched.failure, fetched.flag = "the kernel's answer was malformed", "wire:malformed"
            return fetched
        wanted = set(self.request_names(grade_id))
        for name, raw in data["values"].items():
            if name not in wanted:
                continue
            if isinstance(raw, dict) and raw.get("$") == "function":
                fetched.functions.add(name)
                continue
            try:
                fetched.values[name] = wire.decode(raw)
            except wire.WireError as exc:
                fetched.failure = f"{name} could not be read: {exc}"
                fetched.flag = f"wire:{_kind(exc)}"
        errors = data.get("errors")
        if isinstance(errors, dict):
            for name, why in errors.items():
                if name in wanted:
                    fetched.failure = f"{name} could not be read: {str(why)[:200]}"
                    fetched.flag = "wire:unsendable"
        return fetched

    # -- running a grade cell -----------------------------------------------------------------
    def run(self, grade_id: str, fetched: Fetched, session: ProbeSession) -> list[NotebookNode]:
        """The outputs of one grade cell, checked here."""
        plan = self.plans[grade_id]
        if fetched.failure:
            return [_error("WireError", f"your answers could not be checked: {fetched.failure}")]
        assert self.namespace is not None
        ns = dict(self.namespace)
        ns.update(fetched.values)
        for name in fetched.functions:
            ns[name] = CheckedFunction(name, fetched.index, session)
        stdout = _CellOutput(plan.filename, plan.hidden)
        saved_out, saved_err = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = stdout, _Discard()
        previous = checks._grading_forbid
        checks._grading_forbid = _grading_forbid
        error = None
        try:
            exec(plan.code, ns)
        except GraderError:
            raise
        except Exception as exc:  # noqa: BLE001 - the cell fails; the message is built below
            error = self._error_output(exc, plan, fetched)
        finally:
            sys.stdout, sys.stderr = saved_out, saved_err
            checks._grading_forbid = previous
            _ACTIVE.clear()
            _close_figures()
        outputs: list[NotebookNode] = []
        text = "".join(stdout.parts)
        if text:
            outputs.append(NotebookNode(output_type="stream", name="stdout", text=text))
        if error is not None:
            outputs.append(error)
        return outputs

    def _error_output(self, exc: BaseException, plan: CellPlan, fetched: Fetched) -> NotebookNode:
        hidden = _raised_in_hidden(exc, plan.filename, plan.hidden)
        student = getattr(exc, "_course_student", None)
        if student is not None:  # the student's function raised
            own, message, function = student
            if hidden:
                return _error(own, f"hidden test: {function} raised {own}")
            return _error(own, message)
        if not hidden:
            return _error(type(exc).__name__, str(exc))
        if isinstance(exc, checks.DelegationError):
            return _error(type(exc).__name__, str(exc))
        if isinstance(exc, checks.AnswerError):
            label = self._label(getattr(exc, "name", None), plan, fetched)
            safe = getattr(exc, "safe", None) or " is wrong"
            return _error(type(exc).__name__, f"hidden test: {label}{safe}")
        if isinstance(exc, NameError) and getattr(exc, "name", None) in plan.answers:
            return _error("NameError", str(exc))
        if isinstance(exc, wire.WireError):
            return _error("WireError", "hidden test: a value could not be checked")
        return _error(type(exc).__name__, f"hidden test failed ({type(exc).__name__})")

    @staticmethod
    def _label(name: Any, plan: CellPlan, fetched: Fetched) -> str:
        """A name for the answer a hidden check is about that shows no input."""
        import re

        if isinstance(name, str):
            match = re.match(r"[A-Za-z_][A-Za-z0-9_]*", name.strip())
            if match and match.group(0) in plan.answers:
                return match.group(0)
        functions = sorted(fetched.functions)
        if len(functions) == 1:
            return functions[0]
        if len(plan.answers) == 1:
            return plan.answers[0]
        return "an answer"


class _Discard:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def _quiet_matplotlib() -> None:
    if "matplotlib" in sys.modules:
        import matplotlib

        if matplotlib.get_backend().lower() != "agg":
            matplotlib.use("Agg", force=True)


def _close_figures() -> None:
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")
