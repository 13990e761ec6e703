"""Static tamper audit: which of a student's cells touch the grading machinery.

The audit reads the student's own cells (everything but the locked cells, which nbgrader restores)
as Python syntax trees, after IPython turns magics into calls, and flags, for manual review:

  input_transformer     IPython input transformers (rewriting cells before they run)
  ast_transformer       IPython AST transformers
  exception_handler     custom exception handlers (set_custom_exc, sys.excepthook)
  traceback_display     traceback display (showtraceback, %xmode, displayhook, InteractiveTB)
  kernel_internals      the kernel, its shell methods, its sockets or input history
  builtins              rebinding builtins (builtins.X = ..., __builtins__, def isinstance ...)
  comparison_patch      rebinding comparison functions (numpy.allclose, math.isclose, ...)
  custom_comparison     classes that define __eq__/__ne__/__instancecheck__ (always-true tricks)
  course_lib_patch      changing course_lib or names the locked cells bound (check_float ...)
  code_patch            assigning __code__, __globals__, __defaults__ of a function
  grading_files         naming the gradebook, source/, submitted/, nbgrader or other grading paths
  kernel_exit           os._exit, sys.exit, exit(), os.kill, signal handlers
  dynamic_code          exec, eval, compile, __import__, importlib, getattr with computed names
  introspection         frames, gc, inspect, linecache, tracing hooks, IPython's In/Out
  subprocess            subprocess, os.system, os.popen
  threads               threads and processes that outlive a cell
  too_deep              code nested too deeply to read (the kernel fails on it too)

It reads the bodies of ``%%capture``, ``%time`` and similar magics as Python, counts ``!cmd``
and shell cell magics as subprocesses, reads the student's own .py files, and notices frame or
namespace attributes named in strings (``operator.attrgetter("f_back.f_globals")``) and modules
fetched from ``sys.modules``. A flag asks a human to look; it never changes a score.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

HOOK_ATTRS = {
    "input_transformers_cleanup": "input_transformer",
    "input_transformers_post": "input_transformer",
    "input_transformer_manager": "input_transformer",
    "input_splitter": "input_transformer",
    "ast_transformers": "ast_transformer",
    "set_custom_exc": "exception_handler",
    "custom_exceptions": "exception_handler",
    "CustomTB": "exception_handler",
    "excepthook": "exception_handler",
    "showtraceback": "traceback_display",
    "_showtraceback": "traceback_display",
    "showsyntaxerror": "traceback_display",
    "InteractiveTB": "traceback_display",
    "SyntaxTB": "traceback_display",
    "settrace": "introspection",
    "setprofile": "introspection",
    "_getframe": "introspection",
    "f_back": "introspection",
    "f_globals": "introspection",
    "f_locals": "introspection",
    "f_code": "introspection",
    "tb_frame": "introspection",
    "gi_frame": "introspection",
    "__code__": "code_patch",
    "__globals__": "code_patch",
    "__defaults__": "code_patch",
    "__kwdefaults__": "code_patch",
    "__closure__": "code_patch",
}
IPYTHON_ATTRS = {
    "displayhook": "traceback_display",
    "display_pub": "traceback_display",
    "run_cell": "kernel_internals",
    "run_cell_async": "kernel_internals",
    "run_code": "kernel_internals",
    "run_ast_nodes": "kernel_internals",
    "transform_cell": "kernel_internals",
    "do_execute": "kernel_internals",
    "kernel": "kernel_internals",
    "iopub_socket": "kernel_internals",
    "iopub_thread": "kernel_internals",
    "session": "kernel_internals",
    "shell_handlers": "kernel_internals",
    "events": "kernel_internals",
    "history_manager": "kernel_internals",
    "user_ns_hidden": "kernel_internals",
}
OS_CALLS = {
    "os._exit": "kernel_exit",
    "os.abort": "kernel_exit",
    "os.kill": "kernel_exit",
    "os.killpg": "kernel_exit",
    "sys.exit": "kernel_exit",
    "os.system": "subprocess",
    "os.popen": "subprocess",
    "os.fork": "subprocess",
    "os.execv": "subprocess",
    "os.execve": "subprocess",
    "os.execvp": "subprocess",
    "os.spawnv": "subprocess",
}
COMPARISON_ATTRS = {
    "allclose",
    "isclose",
    "array_equal",
    "array_equiv",
    "testing",
    "assert_allclose",
    "assert_array_equal",
    "isnan",
    "isfinite",
    "abs",
    "fabs",
    "eq",
    "ne",
}
MODULES = {
    "builtins": "builtins",
    "gc": "introspection",
    "inspect": "introspection",
    "linecache": "introspection",
    "traceback": "introspection",
    "dis": "introspection",
    "importlib": "dynamic_code",
    "ctypes": "dynamic_code",
    "marshal": "dynamic_code",
    "pickle": "dynamic_code",
    "codecs": "dynamic_code",
    "base64": "dynamic_code",
    "zlib": "dynamic_code",
    "subprocess": "subprocess",
    "pty": "subprocess",
    "signal": "kernel_exit",
    "threading": "threads",
    "_thread": "threads",
    "multiprocessing": "threads",
    "concurrent": "threads",
    "nbgrader": "grading_files",
    "sqlite3": "grading_files",
    "sqlalchemy": "grading_files",
    "ipykernel": "kernel_internals",
    "jupyter_client": "kernel_internals",
    "zmq": "kernel_internals",
}
CALLS = {
    "exec": "dynamic_code",
    "eval": "dynamic_code",
    "compile": "dynamic_code",
    "__import__": "dynamic_code",
    "globals": "introspection",
    "locals": "introspection",
    "vars": "introspection",
    "exit": "kernel_exit",
    "quit": "kernel_exit",
    "get_ipython": None,  # fine on its own; the attribute it reaches decides
}
HISTORY_NAMES = {"In", "Out", "_ih", "_oh", "_dh", "_i", "_ii", "_iii", "__builtins__"}
PROTECTED_BUILTINS = {
    "abs",
    "isinstance",
    "issubclass",
    "type",
    "float",
    "int",
    "bool",
    "str",
    "tuple",
    "len",
    "round",
    "all",
    "any",
    "repr",
    "print",
    "AssertionError",
    "Exception",
    "BaseException",
    "getattr",
    "hasattr",
}
DUNDERS = {"__eq__", "__ne__", "__instancecheck__", "__subclasscheck__", "__class__"}
PATH_WORDS = (
    "gradebook",
    "nbgrader",
    "submitted",
    "autograded",
    "source/",
    "release/",
    "feedback/",
    ".db",
    "/proc/",
    "/work/",
    "/root",
    "/home/",
)
WRITE_CONTEXTS = (ast.Store, ast.Del)
PYTHON_MAGICS = {"time", "timeit", "capture", "prun", "debug", "pdb"}
SHELL_MAGICS = {"bash", "sh", "script", "system", "sx", "perl", "ruby"}
INTROSPECTION_WORDS = re.compile(
    r"\b(f_back|f_globals|f_locals|f_code|tb_frame|tb_next|gi_frame|cr_frame|ag_frame|user_ns|"
    r"user_global_ns|_getframe|__code__|__globals__|__closure__|co_consts)\b"
)


def _dotted(node: ast.AST) -> str:
    """'a.b.c' for an attribute chain on a name ('' when the chain starts elsewhere)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


class _Auditor(ast.NodeVisitor):
    def __init__(self, protected_names: set[str]) -> None:
        self.flags: set[str] = set()
        self.protected = protected_names
        self.course_lib_names: set[str] = set()
        self.ipython_names: set[str] = set()
        self.depth = 0
        self.magic_depth = 0

    def flag(self, what: str | None) -> None:
        if what:
            self.flags.add(what)

    # imports
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._imported(alias.name, alias.asname or alias.name.split(".")[0])
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        self._imported(module, None)
        for alias in node.names:
            name = alias.asname or alias.name
            self._imported(f"{module}.{alias.name}", None)
            if module.startswith("course_lib"):
                self.course_lib_names.add(name)
            if self.depth == 0 and name in self.protected and not module.startswith("course_lib"):
                self.flag("course_lib_patch")
        self.generic_visit(node)

    def _imported(self, module: str, bound: str | None) -> None:
        top = module.split(".")[0]
        self.flag(MODULES.get(top))
        if module in ("os._exit", "sys.exit", "os.kill", "os.abort"):
            self.flag("kernel_exit")
        if top == "course_lib" and bound:
            self.course_lib_names.add(bound)

    # names and attributes
    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.flag(HOOK_ATTRS.get(node.attr))
        dotted = _dotted(node)
        self.flag(OS_CALLS.get(dotted))
        if node.attr in IPYTHON_ATTRS and self._from_ipython(node.value):
            self.flag(IPYTHON_ATTRS[node.attr])
        if dotted.startswith("sys.") and node.attr in ("displayhook", "excepthook"):
            self.flag("traceback_display")
        if isinstance(node.ctx, WRITE_CONTEXTS):
            self._written(node, dotted)
        self.generic_visit(node)

    def _written(self, node: ast.Attribute, dotted: str) -> None:
        base = dotted.split(".")[0] if dotted else ""
        if node.attr in COMPARISON_ATTRS:
            self.flag("comparison_patch")
        if base in ("builtins", "__builtins__"):
            self.flag("builtins")
        if base in self.course_lib_names or base == "course_lib" or base in self.protected:
            self.flag("course_lib_patch")
        if dotted.startswith("sys.") and node.attr in ("stdout", "stderr", "modules"):
            self.flag("traceback_display" if node.attr != "modules" else "course_lib_patch")

    def _from_ipython(self, node: ast.AST) -> bool:
        """Whether an attribute chain starts at get_ipython() or a name bound to it."""
        while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id == "get_ipython":
                    return True
            node = node.func if isinstance(node, ast.Call) else node.value
        return isinstance(node, ast.Name) and node.id in self.ipython_names

    def visit_Assign(self, node: ast.Assign) -> None:
        if self._from_ipython(node.value):
            for target in node.targets:
                self.ipython_names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in HISTORY_NAMES:
            self.flag("builtins" if node.id == "__builtins__" else "introspection")
        if isinstance(node.ctx, WRITE_CONTEXTS) and self.depth == 0:
            self._rebinds(node.id)
        self.generic_visit(node)

    def _rebinds(self, name: str) -> None:
        if name in PROTECTED_BUILTINS:
            self.flag("builtins")
        if name in self.protected:
            self.flag("course_lib_patch")

    # definitions
    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._define(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._define(node)

    def _define(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if self.depth == 0:
            self._rebinds(node.name)
        if node.name in DUNDERS:
            self.flag("custom_comparison")
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if self.depth == 0:
            self._rebinds(node.name)
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    # calls and constants
    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else _dotted(func)
        self.flag(CALLS.get(name))
        if name in ("setattr", "delattr", "getattr") and len(node.args) >= 2:
            target = node.args[1]
            if not isinstance(target, ast.Constant):
                self.flag("dynamic_code")
            elif name != "getattr":
                attr = str(target.value)
                self.flag(HOOK_ATTRS.get(attr))
                if self._from_ipython(node.args[0]):
                    self.flag(IPYTHON_ATTRS.get(attr))
                if attr in COMPARISON_ATTRS:
                    self.flag("comparison_patch")
                obj = _dotted(node.args[0])
                if obj in ("builtins", "__builtins__") or attr in PROTECTED_BUILTINS:
                    self.flag("builtins")
                if obj.split(".")[0] in self.course_lib_names | {"course_lib"} | self.protected:
                    self.flag("course_lib_patch")
            else:
                self.flag(HOOK_ATTRS.get(str(target.value)))
        if isinstance(func, ast.Attribute) and func.attr in ("run_line_magic", "run_cell_magic"):
            magic = node.args[0] if node.args else None
            if isinstance(magic, ast.Constant) and magic.value in ("xmode", "config"):
                self.flag("traceback_display")
            if isinstance(magic, ast.Constant) and magic.value in SHELL_MAGICS:
                self.flag("subprocess")
            body = node.args[-1] if len(node.args) >= 2 else None
            if (
                isinstance(magic, ast.Constant)
                and magic.value in PYTHON_MAGICS
                and isinstance(body, ast.Constant)
                and isinstance(body.value, str)
            ):
                self.nested(body.value)
        if isinstance(func, ast.Attribute) and func.attr in ("system", "getoutput"):
            if self._from_ipython(func.value):
                self.flag("subprocess")
        self.generic_visit(node)

    def nested(self, source: str) -> None:
        """Audit the Python body of a magic (``%time import gc``, ``%%capture``)."""
        if self.magic_depth > 5:
            return
        try:
            tree = ast.parse(python_source(source))
        except (SyntaxError, ValueError):
            return
        self.magic_depth += 1
        try:
            self.visit(tree)
        finally:
            self.magic_depth -= 1

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if _dotted(node.value) == "sys.modules":
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                self.flag(MODULES.get(key.value.split(".")[0]))
                if key.value.split(".")[0] == "course_lib":
                    self.flag("course_lib_patch")
            else:
                self.flag("dynamic_code")
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        target = exc.func if isinstance(exc, ast.Call) else exc
        if isinstance(target, ast.Name) and target.id in ("SystemExit", "KeyboardInterrupt"):
            self.flag("kernel_exit")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            text = node.value.lower()
            if any(word in text for word in PATH_WORDS):
                self.flag("grading_files")
            if INTROSPECTION_WORDS.search(node.value):
                self.flag("introspection")


def python_source(cell_source: str) -> str:
    """A cell's source as plain Python (IPython magics and shell escapes become calls)."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        return TransformerManager().transform_cell(cell_source)
    except Exception:  # an unparsable cell fails when it runs; nothing to audit
        return cell_source


def audit_sources(sources: Iterable[str], protected_names: Iterable[str] = ()) -> list[str]:
    """The sorted audit flags ('audit:<what>') raised by the given student cell sources."""
    auditor = _Auditor(set(protected_names))
    for source in sources:
        try:
            tree = ast.parse(python_source(source))
            auditor.visit(tree)
        except (SyntaxError, ValueError):
            continue
        except (RecursionError, MemoryError):  # the kernel will not run it either
            auditor.flag("too_deep")
    return sorted(f"audit:{flag}" for flag in auditor.flags)


def bound_names(sources: Iterable[str]) -> set[str]:
    """Functions, classes and modules the given (locked) cells bind at module level."""
    names: set[str] = set()
    for source in sources:
        try:
            tree = ast.parse(python_source(source))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
    names.discard("*")
    return names
