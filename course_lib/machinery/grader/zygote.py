"""The first process in a student's sandbox: it starts the kernel, then serves the grader.

``python -I -m course_lib.machinery.grader.zygote -f CONNECTION_FILE`` runs as PID 1 of the
sandbox's PID namespace (so nothing inside can signal it). Before any student code exists it
applies the resource limits, imports the modules the lesson uses, and forks the student's kernel
(kernel.py), which alone runs the student's cells. It then makes itself non-dumpable (no ptrace,
no /proc/<pid>/mem or fd access from the kernel) and talks to the grader over two pipes that only
it holds (the kernel closed its copies before it ran anything):

  Z {"op": "purge"}            kill every other process in the sandbox (the kernel and all it
                               started) and empty its writable /tmp, before any probe exists
  Z {"op": "probe", ...}       fork a probe (probe.py) from this pristine state
  Z {"op": "kill_probe"}       end the current probe
  P <id> <json line>           a line for probe <id>; the probe's lines come back the same way
  Z {"event": "kernel_exit"}   (sent unasked) the kernel process ended

Lines from the zygote start with "Z " (its own, JSON) or "P <id> " (a probe's, passed through).
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import socket
import sys
from typing import Any

MAX_LINE = 80 * 2**20


def _apply_limits() -> None:
    import resource

    for name, env in (
        ("RLIMIT_AS", "COURSE_KERNEL_MEMORY"),
        ("RLIMIT_FSIZE", "COURSE_KERNEL_FSIZE"),
        ("RLIMIT_CPU", "COURSE_KERNEL_CPU"),
        ("RLIMIT_NPROC", "COURSE_KERNEL_NPROC"),
    ):
        value = os.environ.pop(env, "")
        if value:
            limit = int(value)
            try:
                resource.setrlimit(getattr(resource, name), (limit, limit))
            except (ValueError, OSError):
                pass
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _copy_tree(src: str, dst: str) -> None:
    """Copy a folder (the submission's files, the matplotlib cache); what does not fit is left."""
    import shutil

    if not src or not os.path.isdir(src):
        return
    try:
        shutil.copytree(src, dst, dirs_exist_ok=True)
    except (OSError, shutil.Error):
        pass


def _preload(names: str) -> None:
    for name in filter(None, names.split(",")):
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001 - a module that fails to import here fails later too
            pass


def _set_dumpable(value: int) -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, value, 0, 0, 0)  # PR_SET_DUMPABLE
    except Exception:  # noqa: BLE001 - without prctl the kernel could ptrace us: said in README
        pass


class Zygote:
    """The zygote's loop: requests from the grader, lines from the probe, children ending."""

    def __init__(
        self, rfd: int, wfd: int, kernel_pid: int, scratch: str = "", mpl: str = ""
    ) -> None:
        self.rfd, self.wfd = rfd, wfd
        self.scratch, self.mpl = scratch, mpl  # the sandbox's /tmp; the matplotlib cache to restore
        self.kernel_pid = kernel_pid
        self.buffer = b""
        self.probe_pid = 0
        self.probe_id = 0
        self.probe_sock: socket.socket | None = None
        self.probe_buffer = b""

    def send(self, data: bytes) -> None:
        while data:
            data = data[os.write(self.wfd, data) :]

    def reply(self, obj: dict[str, Any]) -> None:
        self.send(b"Z " + json.dumps(obj).encode() + b"\n")

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.kernel_pid:
                self.kernel_pid = 0
                self.reply({"event": "kernel_exit", "status": status})
            elif pid == self.probe_pid:
                self.probe_pid = 0
                self.flush_probe()
                self.send(f"P {self.probe_id} ".encode() + b'{"dead": %d}\n' % status)
                self.close_probe()

    def close_probe(self) -> None:
        if self.probe_sock is not None:
            self.probe_sock.close()
        self.probe_sock, self.probe_buffer = None, b""

    def kill_probe(self) -> None:
        if self.probe_pid:
            try:
                os.kill(self.probe_pid, signal.SIGKILL)
                os.waitpid(self.probe_pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            self.probe_pid = 0
        self.close_probe()

    def purge(self) -> None:
        """Kill everything but this process: the kernel and whatever it started."""
        self.kill_probe()
        if os.getpid() == 1:
            try:
                os.kill(-1, signal.SIGKILL)  # in a PID namespace: every process but PID 1
            except ProcessLookupError:
                pass
        elif self.kernel_pid:  # no sandbox: the kernel's session only
            try:
                os.killpg(self.kernel_pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        while True:
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            if pid == self.kernel_pid:
                self.kernel_pid = 0
        self.kernel_pid = 0
        self.reset_scratch()

    def reset_scratch(self) -> None:
        """Empty the sandbox's /tmp: a probe sees the files as submitted, nothing the kernel wrote
        (a copy of a forbidden module's source there would otherwise load under a new name)."""
        import shutil

        if not self.scratch or not os.path.isdir(self.scratch):
            return
        for entry in os.scandir(self.scratch):
            try:
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)
            except OSError:
                pass
        home = os.environ.get("HOME", "")
        if home.startswith(self.scratch + "/"):
            os.makedirs(home, exist_ok=True)
        if self.mpl and os.environ.get("MPLCONFIGDIR"):
            _copy_tree(self.mpl, os.environ["MPLCONFIGDIR"])

    def spawn(self, request: dict[str, Any]) -> None:
        self.kill_probe()
        mine, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            try:
                mine.close()
                os.close(self.rfd)
                os.close(self.wfd)
                from course_lib.machinery.grader import probe

                fd = theirs.detach()
                probe.run(fd, request.get("init", {}))
            finally:
                os._exit(6)
        theirs.close()
        self.probe_pid, self.probe_id = pid, int(request.get("id", 0))
        self.probe_sock, self.probe_buffer = mine, b""
        self.reply({"op": "probe", "ok": True, "id": self.probe_id})

    def flush_probe(self) -> None:
        """Pass on every complete line the probe wrote (also after it died)."""
        if self.probe_sock is None:
            return
        while True:
            ready, _, _ = select.select([self.probe_sock], [], [], 0)
            if not ready:
                break
            chunk = self.probe_sock.recv(1 << 20)
            if not chunk:
                break
            self.take_probe(chunk)

    def take_probe(self, chunk: bytes) -> None:
        self.probe_buffer += chunk
        if len(self.probe_buffer) > MAX_LINE:
            self.kill_probe()
            self.send(f"P {self.probe_id} ".encode() + b'{"dead": -1, "why": "reply too large"}\n')
            return
        while b"\n" in self.probe_buffer:
            line, self.probe_buffer = self.probe_buffer.split(b"\n", 1)
            self.send(f"P {self.probe_id} ".encode() + line + b"\n")

    def handle(self, line: bytes) -> None:
        if line.startswith(b"P "):
            _, pid_text, rest = line.split(b" ", 2)
            if self.probe_sock is not None and int(pid_text) == self.probe_id:
                self.probe_sock.sendall(rest + b"\n")
            return
        request = json.loads(line[2:])
        op = request.get("op")
        if op == "purge":
            self.purge()
            self.reply({"op": "purge", "ok": True})
        elif op == "probe":
            self.spawn(request)
        elif op == "kill_probe":
            self.kill_probe()
            self.reply({"op": "kill_probe", "ok": True})
        elif op == "ping":
            self.reply({"op": "ping", "ok": True, "kernel": bool(self.kernel_pid)})

    def serve(self) -> None:
        while True:
            self.reap()
            watch = [self.rfd] + ([self.probe_sock] if self.probe_sock is not None else [])
            ready, _, _ = select.select(watch, [], [], 0.1)
            if self.probe_sock is not None and self.probe_sock in ready:
                chunk = self.probe_sock.recv(1 << 20)
                if chunk:
                    self.take_probe(chunk)
                else:  # the probe closed its end: it is ending; reap() reports it
                    self.probe_sock.close()
                    self.probe_sock = None
            if self.rfd in ready:
                chunk = os.read(self.rfd, 1 << 20)
                if not chunk:  # the grader is gone: so are we (and, as PID 1, the sandbox)
                    self.purge()
                    os._exit(0)
                self.buffer += chunk
                if len(self.buffer) > MAX_LINE:
                    os._exit(7)
                while b"\n" in self.buffer:
                    line, self.buffer = self.buffer.split(b"\n", 1)
                    self.handle(line)


def main() -> None:
    """Limits, preload, fork the kernel, serve the grader."""
    fds = os.environ.pop("COURSE_ZYGOTE_FDS", "")
    preload = os.environ.pop("COURSE_PRELOAD", "")
    workdir = os.environ.pop("COURSE_KERNEL_WORKDIR", "")
    mpl_src = os.environ.pop("COURSE_MPL_CACHE", "")
    ipc_dir = os.environ.pop("COURSE_IPC_DIR", "")
    _apply_limits()
    if ipc_dir:
        os.makedirs(ipc_dir, exist_ok=True)
    if mpl_src and os.environ.get("MPLCONFIGDIR"):
        _copy_tree(mpl_src, os.environ["MPLCONFIGDIR"])
    _preload(preload)
    exec_dir = os.getcwd()
    rfd, wfd = (int(x) for x in fds.split(",")) if fds else (-1, -1)
    pid = os.fork()
    if pid == 0:  # the kernel: nothing of the zygote's channel stays open
        if rfd >= 0:
            os.close(rfd)
            os.close(wfd)
        os.setsid()
        if workdir:
            _copy_tree(exec_dir, workdir)
            if os.path.isdir(workdir):
                os.chdir(workdir)
        sys.path.append(os.getcwd())  # the student's own modules, after everything installed
        from course_lib.machinery.grader import kernel

        kernel.run(sys.argv[1:])
        os._exit(0)
    _set_dumpable(0)
    if rfd < 0:  # started without a grader channel: just wait for the kernel
        os.waitpid(pid, 0)
        return
    os.environ["COURSE_EXEC_DIR"] = exec_dir
    scratch = os.path.dirname(workdir) if workdir else ""  # sandboxed: /tmp is all the kernel's
    Zygote(rfd, wfd, pid, scratch=scratch, mpl=mpl_src).serve()


if __name__ == "__main__":
    main()
