"""The kernel that runs a submission's cells while it is graded: IPython's kernel, watched.

Started inside the sandbox by the zygote (zygote.py), never by a learner. It runs the student's
cells and the lesson's locked cells, and nothing else: grade cells never reach it. At a grade
cell's position the grader asks it, with a request of its own (first line ``#course-guard
export``), for the values of the names the grade cell reads; it answers with them as plain data
(wire.py). Nothing here is trusted — a student can change any of it — and nothing here decides a
grade: what it answers is only data that the grader's own checks judge.

What it still does is notice tampering, for a human to review: before each export the Guard puts
back what a submission could have changed to game checks that ran in this process — IPython's
input and AST transformers, exception handlers and traceback display, the builtins, the attributes
of ``math``, ``operator``, ``numpy`` and ``course_lib`` modules (and the code objects of
course_lib's functions), and the names the locked cells bound — and reports each as a runtime flag.
"""

from __future__ import annotations

import builtins
import importlib
import json
import sys
import threading
import types
from typing import Any

from ipykernel.ipkernel import IPythonKernel

MARK = "#course-guard"
EAGER_IMPORTS = ("math", "operator", "numpy", "course_lib.checks")
PROTECTED_MODULES = ("math", "operator", "numpy", "numpy.testing", "numpy.linalg")
SHELL_METHODS = (
    "run_cell",
    "run_cell_async",
    "run_ast_nodes",
    "run_code",
    "transform_cell",
    "transform_ast",
    "showtraceback",
    "_showtraceback",
    "showsyntaxerror",
    "showindentationerror",
    "get_exception_only",
    "should_run_async",
)
# Names IPython itself rebinds in builtins while a cell runs.
BUILTINS_SKIP = {
    "_",
    "__",
    "___",
    "get_ipython",
    "display",
    "exit",
    "quit",
    "__IPYTHON__",
    "__IPYTHON__active",
    "__spec__",
    "__loader__",
    "__doc__",
    "__name__",
    "__package__",
    "__debug__",
    "copyright",
    "credits",
    "license",
    "help",
}


def _is_machinery(obj: Any) -> bool:
    """Functions, classes and modules: rebinding one of these is tampering, not data editing."""
    return isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type))


class Guard:
    """Snapshots of what grade cells rely on, and the code that puts it back."""

    def __init__(self, shell: Any) -> None:
        for name in EAGER_IMPORTS:  # pristine before any student cell, whatever the cell order
            try:
                importlib.import_module(name)
            except ImportError:
                pass
        self.shell = shell
        self.flags: set[str] = set()
        self.protected: dict[str, Any] = {}
        self.modules: dict[str, tuple[types.ModuleType, dict[str, Any]]] = {}
        self.codes: dict[int, tuple[types.FunctionType, Any, Any, Any]] = {}
        self.builtins = {k: v for k, v in vars(builtins).items() if k not in BUILTINS_SKIP}
        tm = shell.input_transformer_manager
        self.hooks = {  # input_transformers_cleanup is the manager's list (checked below)
            "input_transformers_post": list(shell.input_transformers_post),
            "ast_transformers": list(shell.ast_transformers),
        }
        self.manager = (
            tm,
            list(tm.cleanup_transforms),
            list(tm.line_transforms),
            list(tm.token_transformers),
        )
        self.tb = {
            "InteractiveTB": shell.InteractiveTB,
            "SyntaxTB": shell.SyntaxTB,
            "CustomTB": getattr(shell, "CustomTB", None),
            "displayhook": shell.displayhook,
            "display_pub": shell.display_pub,
        }
        self.instance_methods = {n: vars(shell)[n] for n in SHELL_METHODS if n in vars(shell)}
        self.methods = {
            (cls, name): cls.__dict__[name]
            for cls in type(shell).__mro__
            for name in SHELL_METHODS
            if name in cls.__dict__
        }
        self.sys_attrs = {
            name: getattr(sys, name) for name in ("displayhook", "excepthook", "stdout", "stderr")
        }
        self.snapshot_modules()

    # -- snapshots -------------------------------------------------------------------------
    def snapshot_modules(self) -> None:
        """Record the attributes of protected modules imported so far (once per module)."""
        for name, module in list(sys.modules.items()):
            wanted = (
                name in PROTECTED_MODULES or name == "builtins" or name.startswith("course_lib")
            )
            if not wanted or name in self.modules or not isinstance(module, types.ModuleType):
                continue
            self.modules[name] = (module, dict(vars(module)))
            if name.startswith("course_lib"):
                for obj in vars(module).values():
                    if isinstance(obj, types.FunctionType) and obj.__module__ == name:
                        self.codes[id(obj)] = (
                            obj,
                            obj.__code__,
                            obj.__defaults__,
                            obj.__kwdefaults__,
                        )

    def protect(self, before: dict[str, Any]) -> None:
        """After a locked cell: protect the names it bound and snapshot newly imported modules."""
        ns = self.shell.user_ns
        for name, value in ns.items():
            if name.startswith("_"):
                continue
            if name not in before or before[name] is not value:
                self.protected[name] = value
        self.snapshot_modules()

    # -- restoring -------------------------------------------------------------------------
    def restore(self) -> None:
        """Before a grade cell: put back everything a submission may have changed; flag it."""
        for step in (
            self._restore_hooks,
            self._restore_methods,
            self._restore_sys,
            self._restore_builtins,
            self._restore_modules,
            self._restore_names,
        ):
            try:
                step()
            except Exception as exc:  # a submission broke what we restore: say so, go on
                self._flag(f"guard_failed:{step.__name__}:{type(exc).__name__}")

    def _flag(self, what: str) -> None:
        self.flags.add(what)

    def _restore_hooks(self) -> None:
        shell = self.shell
        names = {
            "input_transformers_post": "input_transformer",
            "ast_transformers": "ast_transformer",
        }
        for attr, saved in self.hooks.items():
            current = getattr(shell, attr, None)
            if not isinstance(current, list) or current != saved:
                self._flag(names[attr])
                setattr(shell, attr, list(saved))
        tm, cleanup, lines, tokens = self.manager
        if (
            shell.input_transformer_manager is not tm
            or tm.cleanup_transforms != cleanup
            or tm.line_transforms != lines
            or tm.token_transformers != tokens
        ):
            self._flag("input_transformer")
            shell.input_transformer_manager = tm
            tm.cleanup_transforms, tm.line_transforms = list(cleanup), list(lines)
            tm.token_transformers = list(tokens)
        if shell.custom_exceptions:
            self._flag("exception_handler")
            shell.custom_exceptions = ()
        for attr, saved in self.tb.items():
            if getattr(shell, attr, None) is not saved:
                kind = "exception_handler" if attr == "CustomTB" else "traceback_display"
                self._flag(f"{kind}:{attr}")
                setattr(shell, attr, saved)

    def _restore_methods(self) -> None:
        shell = self.shell
        for name in SHELL_METHODS:
            current = vars(shell).get(name, _MISSING)
            saved = self.instance_methods.get(name, _MISSING)
            if current is not saved:
                kind = "traceback_display" if "show" in name else "shell_patch"
                self._flag(f"{kind}:{name}")
                if saved is _MISSING:
                    del vars(shell)[name]
                else:
                    vars(shell)[name] = saved
        for (cls, name), saved in self.methods.items():
            if cls.__dict__.get(name) is not saved:
                self._flag(f"shell_patch:{name}")
                setattr(cls, name, saved)

    def _restore_sys(self) -> None:
        for name, saved in self.sys_attrs.items():
            if getattr(sys, name) is not saved:
                kind = "traceback_display" if "hook" in name else "output_redirect"
                self._flag(f"{kind}:sys.{name}")
                setattr(sys, name, saved)
        if sys.gettrace() is not None or sys.getprofile() is not None:
            self._flag("tracing")
            sys.settrace(None)
            sys.setprofile(None)
        if getattr(threading, "_trace_hook", None) or getattr(threading, "_profile_hook", None):
            self._flag("tracing")
            threading.settrace(None)
            threading.setprofile(None)

    def _restore_builtins(self) -> None:
        current = vars(builtins)
        for name, saved in self.builtins.items():
            if current.get(name, _MISSING) is not saved:
                self._flag(f"builtins:{name}")
                current[name] = saved

    def _restore_modules(self) -> None:
        for name, (module, attrs) in self.modules.items():
            if sys.modules.get(name) is not module:
                self._flag(f"patched:{name}")
                sys.modules[name] = module
            if name == "builtins":
                continue
            current = vars(module)
            for attr, saved in attrs.items():
                if not callable(saved):  # data (caches, constants) may change legitimately
                    continue
                if current.get(attr, _MISSING) is not saved:
                    self._flag(f"patched:{name}.{attr}")
                    setattr(module, attr, saved)
        for func, code, defaults, kwdefaults in self.codes.values():
            if (
                func.__code__ is not code
                or func.__defaults__ is not defaults
                or func.__kwdefaults__ is not kwdefaults
            ):
                self._flag(f"patched:{func.__module__}.{func.__name__}")
                func.__code__, func.__defaults__ = code, defaults
                func.__kwdefaults__ = kwdefaults

    def _restore_names(self) -> None:
        ns = self.shell.user_ns
        for name, saved in self.protected.items():
            if ns.get(name, _MISSING) is not saved:
                if _is_machinery(saved) or callable(saved):
                    self._flag(f"rebound:{name}")
                ns[name] = saved


_MISSING = object()


def export(ns: dict[str, Any], names: list[str]) -> str:
    """The named values of `ns` as JSON text: {"values": {name: data}, "missing": [...],
    "errors": {name: why}}; a callable is sent as {"$": "function"}."""
    from course_lib.machinery.grader import wire

    values, missing, errors = {}, [], {}
    for name in names:
        if not isinstance(name, str):
            continue
        if name not in ns:
            missing.append(name)
            continue
        try:
            values[name] = wire.encode(ns[name], functions=True)
        except wire.WireError as exc:
            errors[name] = str(exc)
        except Exception as exc:  # noqa: BLE001 - a value whose parts misbehave
            errors[name] = f"{type(exc).__name__} while reading it"
    return json.dumps(
        {"values": values, "missing": missing, "errors": errors},
        allow_nan=False,
        separators=(",", ":"),
    )


class GuardedKernel(IPythonKernel):
    """IPython's kernel; the grader's requests are answered, locked cells marked for the Guard."""

    guard: Guard | None = None

    def _role(self, code: str) -> tuple[str | None, str]:
        first, _, rest = code.partition("\n")
        parts = first.split()
        if len(parts) == 2 and parts[0] == MARK:
            return parts[1], rest
        return None, code

    async def do_execute(
        self,
        code: str,
        silent: bool,
        store_history: bool = True,
        user_expressions: dict | None = None,
        allow_stdin: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Run a cell; a marked locked cell runs guarded, a report request returns the flags."""
        if self.guard is None:  # the first request: the app is set up, no student code ran yet
            self.guard = Guard(self.shell)
        role, code = self._role(code)
        if role in ("report", "export"):
            reply = {
                "status": "ok",
                "execution_count": self.execution_count,
                "user_expressions": {},
                "payload": [],
            }
            if role == "report":
                reply["course_audit"] = sorted(self.guard.flags)
                return reply
            self.guard.restore()
            try:
                names = json.loads(code).get("names", [])
                reply["course_export"] = export(self.shell.user_ns, list(names))
            except Exception as exc:  # noqa: BLE001 - the grader sees a failed export
                reply["course_export"] = json.dumps({"failed": type(exc).__name__})
            return reply
        ns = self.shell.user_ns
        before = dict(ns) if role == "locked" else {}
        reply = await super().do_execute(
            code, silent, store_history, user_expressions, allow_stdin, **kwargs
        )
        try:
            if role == "locked":
                self.guard.protect(before)
        except Exception as exc:
            self.guard.flags.add(f"guard_failed:{role}:{type(exc).__name__}")
        return reply


def run(argv: list[str]) -> None:
    """Run the kernel with these command-line arguments (``-f CONNECTION_FILE``): the zygote's
    child calls this before any student code exists."""
    from ipykernel.kernelapp import IPKernelApp

    sys.argv = ["course-graded-kernel", *argv]
    IPKernelApp.launch_instance(argv=argv, kernel_class=GuardedKernel)
