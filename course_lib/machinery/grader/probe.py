"""A probe: the one place a student's function is called while their work is graded.

The sandbox's first process (zygote.py) forks a probe when the trusted checker needs to call a
student function, after the student's kernel and everything it started have been killed. A probe
never saw the kernel; it

1. installs an audit hook (``sys.addaudithook``: it cannot be removed);
2. executes the lesson's locked setup cells (the instructor's code, from the gradebook);
3. disables, for good, every routine the grade cell's ``forbid`` names — each target, its
   ``__wrapped__`` chain and the private helpers of its module it calls
   (course_lib.checks._routines) — by giving each a new code object that, when entered, raises an
   audit event and DelegationError; the original code objects are dropped;
4. arms the hook, which from then on, while a student function is being checked, ends the probe
   (``os._exit``, with the reason sent to the grader first) — and while the student's cells are
   being run makes the operation fail (PermissionError; a disabled routine raises
   DelegationError) — on: entering a disabled routine; setting attributes of a disabled function;
   opening the source or byte-code files of the modules they come from (by path, by name or by
   inode, so reload, spec_from_file_location, linecache and copies by link all trip); compiling
   code under such a file name; gc.get_objects/get_referrers/get_referents; ctypes; starting a
   process (subprocess, os.system, exec*, spawn*, fork, posix_spawn); sockets; signals;
5. executes the student's own cells (solution cells and the cells they added or changed, and any
   lesson cell those read a name from), lazily, up to the grade cell being checked, statement by
   statement; a statement that fails is recorded, not fatal;
6. serves calls: plain data in (course_lib.machinery.grader.wire), plain data out.

Its outputs go nowhere (stdout and stderr are /dev/null) and it holds no expected value: the
checks run in the grader. Whatever it answers is only the student function's result, judged there.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

DELEGATION_EVENT_NAME = "__course_delegation__"
KILL_EXIT = 3
_PROCESS_EVENTS = {
    "subprocess.Popen",
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "os.forkpty",
    "os.startfile",
    "pty.spawn",
    "os.kill",
    "os.killpg",
    "signal.pthread_kill",
    "socket.__new__",
    "socket.bind",
    "socket.connect",
    "gc.get_objects",
    "gc.get_referrers",
    "gc.get_referents",
    "sys.remote_exec",
}
_BLOCKED_IMPORTS = {"ctypes", "_ctypes", "cffi", "_cffi_backend"}


def _write_line(fd: int, obj: Any) -> None:
    data = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
    while data:
        data = data[os.write(fd, data) :]


class _Shell:
    """Enough of get_ipython() for student cells: timing and capture magics run, others do nothing."""

    def __init__(self, ns: dict[str, Any]) -> None:
        self.ns = ns
        self.user_ns = ns

    def run_line_magic(self, name: str, line: str, *_: Any) -> Any:
        if name in ("time", "capture", "prun") and line.strip():
            exec(compile(line, "<magic>", "exec"), self.ns)
        return None

    def run_cell_magic(self, name: str, line: str, cell: str, *_: Any) -> Any:
        if name in ("time", "capture", "prun"):
            exec(compile(cell, "<magic>", "exec"), self.ns)
        return None

    def system(self, *_: Any, **__: Any) -> None:
        return None

    def getoutput(self, *_: Any, **__: Any) -> list:
        return []

    def __getattr__(self, name: str) -> Any:
        return lambda *a, **k: None


def _strip_magics(source: str) -> str:
    """Setup source as plain Python: IPython magic and shell lines become blank lines."""
    return "\n".join(
        "" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()
    )


def _resolve(owner_path: str) -> Any:
    import importlib

    module, _, qualname = owner_path.partition(":")
    obj = importlib.import_module(module)
    for part in filter(None, qualname.split(".")):
        obj = getattr(obj, part)
    return obj


def _delegation_code(like: Any, message: str) -> Any:
    """A code object that fits `like` (name, free variables) and, when run, raises the audit
    event that ends the probe (a code object being made: student code cannot suppress it), then
    DelegationError for good measure."""
    free = like.co_freevars
    source = (
        "def outer():\n"
        + "".join(f"    {name} = None\n" for name in free)
        + "    def stub(*args, **kwargs):\n"
        + (f"        ({', '.join(free)},)\n" if free else "")
        + f"        (lambda: None).__code__.replace(co_name={DELEGATION_EVENT_NAME!r})\n"
        + "        from course_lib.checks import DelegationError\n"
        + f"        raise DelegationError({message!r})\n"
        + "    return stub\n"
    )
    namespace: dict[str, Any] = {}
    exec(compile(source, "<course-forbid>", "exec"), namespace)
    stub = namespace["outer"]().__code__
    if free:
        return stub.replace(co_name=like.co_name, co_freevars=free)
    return stub.replace(co_name=like.co_name)


def _cache_files(filename: str) -> list[str]:
    import importlib.util

    out = [filename]
    if filename.endswith(".py"):
        for opt in ("", 1, 2):
            try:
                out.append(importlib.util.cache_from_source(filename, optimization=opt))
            except (NotImplementedError, ValueError):
                pass
    return out


class Probe:
    """The probe's state: namespace, cells, disabled routines and the hook's view of them."""

    def __init__(self, fd: int, init: dict[str, Any]) -> None:
        self.fd = fd
        self.init = init
        self.ns: dict[str, Any] = {"__name__": "__main__"}
        self.cells = [(int(i), str(src)) for i, src in init.get("cells", [])]
        self.done = 0  # cells executed so far
        self.cell_errors: list[str] = []
        self.disabled: set[int] = set()
        self.protected_paths: set[str] = set()
        self.protected_names: set[str] = set()
        self.protected_inodes: set[tuple[int, int]] = set()
        self.armed = False
        self.calling = False  # a student function is being called for the checker
        self.blocked: list[str] = []  # what the hook refused while the student's cells ran

    # -- the audit hook -------------------------------------------------------------------------
    def install_hook(self) -> None:
        write, exit_, stat, fspath = os.write, os._exit, os.stat, os.fspath
        dumps, realpath, basename = json.dumps, os.path.realpath, os.path.basename
        fd = self.fd
        me = self

        def kill(reason: str) -> None:
            data = (dumps({"killed": reason[:300]}) + "\n").encode()
            try:
                while data:
                    data = data[write(fd, data) :]
            finally:
                exit_(KILL_EXIT)

        def protected(path: Any) -> bool:
            try:
                path = fspath(path)
                if isinstance(path, bytes):
                    path = path.decode("utf-8", "surrogateescape")
                if not isinstance(path, str):
                    return False
                if basename(path) in me.protected_names or realpath(path) in me.protected_paths:
                    return True
                st = stat(path)
            except Exception:  # noqa: BLE001 - not a path to a file we know
                return False
            return (st.st_dev, st.st_ino) in me.protected_inodes

        def deny(reason: str) -> None:
            """While a function is checked: end the probe. Before (the student's cells are being
            run): make the operation fail, as if it were not allowed."""
            if me.calling:
                kill("delegation: " + reason)
            me.blocked.append(reason)
            raise PermissionError(f"not allowed in the grader's probe: {reason}")

        def hook(event: str, args: tuple) -> None:
            if not me.armed:
                return
            try:
                if event == "code.__new__":
                    if len(args) > 2 and args[2] == DELEGATION_EVENT_NAME and me.calling:
                        kill("delegation: a routine the exercise forbids was called")
                    return
                if event in ("open", "os.link", "os.symlink"):
                    if args and protected(args[0]):
                        reason = f"read the source of a forbidden routine ({event})"
                    else:
                        return
                elif event == "object.__setattr__":
                    if not (args and id(args[0]) in me.disabled):
                        return
                    reason = "changed a disabled routine"
                elif event == "compile":
                    if not (len(args) > 1 and protected(args[1])):
                        return
                    reason = "compiled code under a library file name"
                elif event == "import":
                    if not (args and str(args[0]).split(".")[0] in _BLOCKED_IMPORTS):
                        return
                    reason = f"imported {args[0]}"
                elif event.startswith("ctypes."):
                    reason = event
                elif event in _PROCESS_EVENTS or event.startswith(("os.exec", "os.spawn")):
                    reason = event
                else:
                    return
            except Exception:  # noqa: BLE001 - a hook that fails must still stop the probe
                reason = f"the audit hook failed on {event}"
            deny(reason)

        sys.addaudithook(hook)

    # -- set-up ---------------------------------------------------------------------------------
    def quiet(self) -> None:
        """No output anywhere: stdio to /dev/null, warnings off, plots in memory only."""
        import warnings

        null = os.open(os.devnull, os.O_RDWR)
        for std in (0, 1, 2):
            os.dup2(null, std)
        os.close(null)
        sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115
        warnings.simplefilter("ignore")
        warnings.showwarning = lambda *a, **k: None
        if "matplotlib" in sys.modules:
            try:
                import matplotlib

                matplotlib.use("Agg", force=True)
            except Exception:  # noqa: BLE001
                pass
        import linecache

        linecache.clearcache()
        linecache.getline = lambda *a, **k: ""
        linecache.getlines = lambda *a, **k: []
        linecache.updatecache = lambda *a, **k: []

    def run_setup(self) -> list[str]:
        errors = []
        self.ns["get_ipython"] = lambda: _Shell(self.ns)
        self.ns["display"] = lambda *a, **k: None
        for k, source in enumerate(self.init.get("setup", [])):
            try:
                exec(compile(_strip_magics(source), f"<setup {k}>", "exec"), self.ns)
            except BaseException as exc:  # noqa: BLE001 - reported to the grader
                errors.append(f"{type(exc).__name__}: {exc}"[:300])
        return errors

    def disable(self) -> int:
        from course_lib.checks import _routines

        count = 0
        for owner_path, attr, message in self.init.get("targets", []):
            owner = _resolve(owner_path)
            target = getattr(owner, attr)
            for obj in (target, getattr(target, "__wrapped__", None)):
                clear = getattr(obj, "cache_clear", None)
                if callable(clear):
                    clear()
            functions = _routines(target)
            for func in functions:
                if id(func) in self.disabled:
                    continue
                filename = func.__code__.co_filename
                func.__code__ = _delegation_code(func.__code__, message)
                self.disabled.add(id(func))
                self.protect(filename)
                count += 1
            if not functions:
                setattr(owner, attr, _tripwire(message))
                count += 1
        return count

    def protect(self, filename: str) -> None:
        if not filename or filename.startswith("<"):
            return
        for path in _cache_files(filename):
            self.protected_paths.add(os.path.realpath(path))
            self.protected_names.add(os.path.basename(path))
            try:
                st = os.stat(path)
            except OSError:
                continue
            self.protected_inodes.add((st.st_dev, st.st_ino))

    def no_processes(self) -> None:
        """_posixsubprocess raises no audit event: its fork_exec becomes an error."""
        module = sys.modules.get("_posixsubprocess")
        if module is not None:

            def fork_exec(*_: Any, **__: Any) -> Any:
                raise PermissionError("no processes while a function is checked")

            module.fork_exec = fork_exec

    # -- student code ---------------------------------------------------------------------------
    def catch_up(self, upto: int) -> None:
        """Execute the student's cells that come before notebook cell `upto`, statement by
        statement: a statement that fails (a forbidden routine called for another exercise, say)
        is recorded and the cell goes on, so the functions it defines still exist."""
        import ast

        while self.done < len(self.cells) and self.cells[self.done][0] < upto:
            index, source = self.cells[self.done]
            self.done += 1
            filename = f"<cell {index}>"
            try:
                statements = ast.parse(source, filename).body
            except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
                self.cell_errors.append(f"cell {index}: {type(exc).__name__}")
                continue
            for statement in statements:
                try:
                    code = compile(ast.Module([statement], []), filename, "exec")
                    exec(code, self.ns)
                except BaseException as exc:  # noqa: BLE001 - a failing cell is the student's
                    self.cell_errors.append(f"cell {index}: {type(exc).__name__}")

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        from course_lib.machinery.grader import wire

        self.catch_up(int(request.get("upto", 0)))
        name = str(request.get("fn", ""))
        if name not in self.ns:
            return {"missing": name}
        func = self.ns[name]
        try:
            args = wire.loads(request["args"])
            kwargs = wire.loads(request["kwargs"])
        except wire.WireError as exc:
            return {"raised": ["ValueError", "WireError", f"arguments did not decode: {exc}"]}
        self.calling = True
        try:
            result = func(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - the student's exception, reported as data
            return {"raised": wire.exception_data(exc)}
        finally:
            self.calling = False
        try:
            return {"ok": wire.dumps(result)}
        except wire.WireError as exc:
            return {"unsendable": str(exc)[:200]}
        except Exception as exc:  # noqa: BLE001 - a result whose parts misbehave
            return {"unsendable": f"{type(exc).__name__}"}

    def serve(self) -> None:
        buffer = b""
        while True:
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                os._exit(0)
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                try:
                    request = json.loads(line)
                except ValueError:
                    os._exit(4)
                if request.get("op") == "call":
                    reply = self.call(request)
                    reply["cell_errors"] = self.cell_errors[-20:]
                    reply["blocked"] = sorted(set(self.blocked))[:20]
                    _write_line(self.fd, reply)


def _tripwire(message: str) -> Any:
    def tripwire(*_args: Any, **_kwargs: Any) -> Any:
        (lambda: None).__code__.replace(co_name=DELEGATION_EVENT_NAME)
        from course_lib.checks import DelegationError

        raise DelegationError(message)

    return tripwire


def run(fd: int, init: dict[str, Any]) -> None:
    """The probe's whole life (in a child of the zygote); never returns."""
    try:
        probe = Probe(fd, init)
        probe.install_hook()
        probe.quiet()
        setup_errors = probe.run_setup()
        disabled = probe.disable()
        probe.no_processes()
        exec_dir = init.get("exec_dir")
        if exec_dir and os.path.isdir(exec_dir):
            os.chdir(exec_dir)
            sys.path.append(exec_dir)
        probe.armed = True
        _write_line(fd, {"ready": True, "setup_errors": setup_errors, "disabled": disabled})
    except BaseException as exc:  # noqa: BLE001 - a probe that cannot start says why
        try:
            _write_line(fd, {"failed": f"{type(exc).__name__}: {exc}"[:300]})
        finally:
            os._exit(5)
    try:
        probe.serve()
    finally:
        os._exit(0)
