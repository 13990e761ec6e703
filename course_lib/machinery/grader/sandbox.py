"""Where a submission runs: a bubblewrap sandbox that sees only its own folder, nothing writable.

The sandbox gets read-only views of the operating system (/usr), the Python installation, the
course_lib package, its submission's non-notebook files and its connection file, and a private
RAM-backed /tmp of TMP_BYTES — its only writable space (the kernel works on a copy of the files
there, its sockets and home are there). It does not see the course root (gradebook, source/,
release/, submitted/, other students' work), has no network (the grader reaches the kernel's
sockets through /proc/<pid>/root/tmp, and the zygote through two inherited pipes), runs in its
own user, PID, IPC, UTS and cgroup namespaces as an unprivileged uid with no capabilities, and
dies with everything in it when its grader dies. Its first process is the zygote (zygote.py, PID
1), which forks the kernel and, later, the probes. Its stdout and stderr are /dev/null: it holds
no descriptor of the grader's. Without bubblewrap (mode "none") the same processes run as plain
processes with the same clean environment and no barrier at all; `course grade` says so loudly.
"""

from __future__ import annotations

import json
import os
import queue
import select
import shutil
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from time import monotonic
from typing import Any

from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager
from traitlets import Any as AnyTrait

from course_lib.machinery.grader import limits as tree_limits

MODES = ("auto", "bwrap", "none")
KERNEL_MEMORY = 6 * 2**30  # bytes of address space per kernel (RLIMIT_AS)
KERNEL_FSIZE = 256 * 2**20  # largest file a kernel may write (RLIMIT_FSIZE)
TMP_BYTES = 512 * 2**20  # the sandbox's /tmp (RAM-backed): its only writable space
WORKDIR = "/tmp/work"  # where the kernel works on its copy of the submission's files
IPC_DIR = "/tmp/ipc"  # the kernel's sockets, inside the sandbox


class SandboxError(RuntimeError):
    """The requested sandbox cannot run on this machine; the message says why."""


def python_paths() -> tuple[str, ...]:
    """Folders the kernel needs read-only: the venv, the base Python and course_lib itself."""
    import course_lib

    paths = {sys.prefix, sys.base_prefix, str(Path(course_lib.__file__).resolve().parent)}
    real = {os.path.realpath(p) for p in paths}
    return tuple(sorted(paths | real))


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for etc in ("/etc/ld.so.cache", "/etc/localtime", "/etc/passwd", "/etc/group"):
        args += ["--ro-bind-try", etc, etc]
    return args


@dataclass(frozen=True)
class Sandbox:
    """How kernels are launched: mode "bwrap" (isolated) or "none" (plain process)."""

    mode: str
    ro_paths: tuple[str, ...] = ()

    def wrap(
        self,
        cmd: Sequence[str],
        *,
        cwd: str,
        ro: Sequence[str] = (),
        env: Mapping[str, str],
        info_fd: int | None = None,
    ) -> list[str]:
        """The command line that runs `cmd` in this sandbox with working folder `cwd` (read-only,
        like every folder in `ro`); the sandbox's /tmp is its only writable space."""
        if self.mode == "none":
            prefix = []
            setpriv = shutil.which("setpriv")
            if setpriv:  # the processes die with their grader, as under bwrap
                prefix = [setpriv, "--pdeathsig", "KILL", "--"]
            return [*prefix, "env", "-i", *(f"{k}={v}" for k, v in env.items()), *cmd]
        args = [
            "bwrap",
            "--unshare-all",  # user, ipc, pid, net, uts, cgroup namespaces: no network at all
            "--unshare-user",
            "--uid",
            "65534",
            "--gid",
            "65534",
            "--die-with-parent",
            "--new-session",
            "--as-pid-1",  # the zygote is PID 1: nothing in the sandbox can signal it
            "--cap-drop",
            "ALL",
            *_system_binds(),
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--size",
            str(TMP_BYTES),
            "--tmpfs",
            "/tmp",
            "--dir",
            "/tmp/home",
        ]
        for path in (*self.ro_paths, *ro):
            if path != cwd:
                args += ["--ro-bind", path, path]
        args += ["--ro-bind", cwd, cwd, "--chdir", cwd, "--clearenv"]
        for key, value in {
            **env,
            "COURSE_KERNEL_WORKDIR": WORKDIR,
            "COURSE_IPC_DIR": IPC_DIR,
        }.items():
            args += ["--setenv", key, value]
        if info_fd is not None:
            args += ["--info-fd", str(info_fd)]
        return [*args, "--", *cmd]


def kernel_env(extra: Mapping[str, str] | None = None, home: str = "/tmp/home") -> dict[str, str]:
    """The whole environment of a graded kernel (nothing is inherited from the grader)."""
    env = {
        "PATH": f"{sys.prefix}/bin:/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "LANG": "C.UTF-8",
        "IPYTHONDIR": f"{home}/.ipython",
        "JUPYTER_PLATFORM_DIRS": "1",
        "JUPYTER_CONFIG_DIR": f"{home}/.jupyter",
        "JUPYTER_DATA_DIR": f"{home}/.local/share/jupyter",
        "JUPYTER_RUNTIME_DIR": f"{home}/.local/share/jupyter/runtime",
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "NBGRADER_EXECUTION": "autograde",
        "MPLCONFIGDIR": f"{home}/.mpl",
        "COURSE_KERNEL_MEMORY": str(KERNEL_MEMORY),
        "COURSE_KERNEL_FSIZE": str(KERNEL_FSIZE),
    }
    env.update(extra or {})
    return env


def make_sandbox(mode: str) -> tuple[Sandbox, str]:
    """The sandbox for `mode` and a one-line description; "auto" falls back to "none"."""
    if mode not in MODES:
        raise ValueError(f"sandbox mode must be one of {MODES}, got {mode!r}")
    if mode in ("auto", "bwrap"):
        problem = probe_bwrap()
        if problem is None:
            return Sandbox("bwrap", python_paths()), (
                "bubblewrap: each kernel sees only its own folder, no network, no course files"
            )
        if mode == "bwrap":
            raise SandboxError(f"bubblewrap cannot run here: {problem}")
        return Sandbox("none"), (
            f"NONE ({problem}) — student code can read the gradebook, source/ and other "
            "submissions; install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)"
        )
    return Sandbox("none"), "NONE (--sandbox none) — student code can read every course file"


def probe_bwrap() -> str | None:
    """None if a bubblewrap sandbox can start here, else the reason it cannot."""
    if shutil.which("bwrap") is None:
        return "the bwrap command is not installed"
    sandbox = Sandbox("bwrap", python_paths())
    cmd = sandbox.wrap([sys.executable, "-I", "-c", "pass"], cwd=sys.prefix, env=kernel_env())
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap failed to start ({exc})"
    if proc.returncode != 0:
        return (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
    return None


class ZygoteLink:
    """The grader's end of the two pipes to a sandbox's zygote (see zygote.py)."""

    def __init__(self, rfd: int, wfd: int) -> None:
        self.rfd, self.wfd = rfd, wfd
        self.kernel_alive = True
        self.closed = False
        self.replies: queue.Queue = queue.Queue()
        self.probe_lines: queue.Queue = queue.Queue()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self.rfd, 1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                try:
                    os.close(self.rfd)
                except OSError:
                    pass
                self.closed = True
                self.kernel_alive = False
                self.replies.put(None)
                self.probe_lines.put(None)
                return
            buffer += chunk
            if len(buffer) > MAX_LINE:  # a zygote cannot send this: treat it as gone
                buffer = b""
                self.probe_lines.put((-1, b'{"dead": -1, "why": "reply too large"}'))
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                self._dispatch(line)

    def _dispatch(self, line: bytes) -> None:
        if line.startswith(b"Z "):
            try:
                msg = json.loads(line[2:])
            except ValueError:
                return
            if msg.get("event") == "kernel_exit":
                self.kernel_alive = False
            else:
                self.replies.put(msg)
        elif line.startswith(b"P "):
            parts = line.split(b" ", 2)
            if len(parts) == 3 and parts[1].isdigit():
                self.probe_lines.put((int(parts[1]), parts[2]))

    def send(self, data: bytes) -> bool:
        with self.lock:
            if self.wfd < 0:
                return False
            try:
                while data:
                    data = data[os.write(self.wfd, data) :]
            except OSError:
                return False
        return True

    def op(self, request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        """Send a zygote request; its reply, or None (no reply in time, or the sandbox is gone)."""
        if self.closed or not self.send(b"Z " + json.dumps(request).encode() + b"\n"):
            return None
        deadline = monotonic() + timeout
        while True:
            left = deadline - monotonic()
            if left <= 0:
                return None
            try:
                msg = self.replies.get(timeout=left)
            except queue.Empty:
                return None
            if msg is None:
                return None
            if msg.get("op") == request.get("op"):
                return msg

    def to_probe(self, probe_id: int, obj: dict[str, Any]) -> bool:
        line = json.dumps(obj, separators=(",", ":")).encode()
        return self.send(f"P {probe_id} ".encode() + line + b"\n")

    def from_probe(self, probe_id: int, timeout: float) -> bytes | None:
        """The next line probe `probe_id` wrote, or None in time (earlier probes' lines skipped)."""
        deadline = monotonic() + timeout
        while True:
            left = deadline - monotonic()
            if left <= 0:
                return None
            try:
                item = self.probe_lines.get(timeout=left)
            except queue.Empty:
                return None
            if item is None:
                return b'{"dead": -1, "why": "the sandbox ended"}'
            pid, line = item
            if pid in (probe_id, -1):
                return line

    def close(self) -> None:
        """Close our end towards the zygote (it then kills everything and exits); once."""
        if self.wfd >= 0:
            fd, self.wfd = self.wfd, -1
            try:
                os.close(fd)
            except OSError:
                pass


MAX_LINE = 90 * 2**20


class SandboxedKernelManager(AsyncKernelManager):
    """Starts a sandbox whose zygote forks the student's kernel; the kernel's sockets are inside
    the sandbox's /tmp, reached through /proc/<pid>/root (bwrap) or a run folder (none)."""

    sandbox = AnyTrait(None)
    extra_env = AnyTrait(None)
    preload = AnyTrait(None)
    ro_dirs = AnyTrait(None)
    mpl_cache = AnyTrait(None)
    limits_name = AnyTrait(None)

    def __init__(self, *, run_dir: Path, sandbox: Sandbox | None = None, **kwargs: Any) -> None:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "conn").mkdir(exist_ok=True)
        boxed = sandbox is not None and sandbox.mode == "bwrap"
        if not boxed:
            (run_dir / "ipc").mkdir(exist_ok=True)
        super().__init__(
            transport="ipc",
            ip=f"{IPC_DIR}/kernel" if boxed else str(run_dir / "ipc" / "kernel"),
            connection_file=str(run_dir / "conn" / "kernel.json"),
            **kwargs,
        )
        self.sandbox = sandbox or Sandbox("none")
        self.run_dir = run_dir
        self.link: ZygoteLink | None = None
        self.tree: tree_limits.TreeLimits | None = None

    @property
    def kernel_spec(self) -> KernelSpec:
        """Always the zygote and its guarded Python kernel, whatever kernel the notebook names."""
        if self._kernel_spec is None:
            self._kernel_spec = KernelSpec(
                argv=[
                    sys.executable,
                    "-I",  # isolated: the submission folder is never on sys.path first
                    "-m",
                    "course_lib.machinery.grader.zygote",
                    "-f",
                    "{connection_file}",
                ],
                display_name="Python 3 (graded)",
                language="python",
                interrupt_mode="message",  # a signal would reach bwrap, not the kernel
            )
        return self._kernel_spec

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
        """Start the sandbox with the zygote's pipes, no stdio of ours, inside the tree's cgroup."""
        cwd = str(kw.get("cwd") or self.run_dir)
        boxed = self.sandbox.mode == "bwrap"
        home = "/tmp/home" if boxed else str(self.run_dir / "home")
        env = kernel_env(self.extra_env or {}, home=home)
        to_zygote_r, to_zygote_w = os.pipe()
        from_zygote_r, from_zygote_w = os.pipe()
        info_r, info_w = os.pipe() if boxed else (-1, -1)
        env["COURSE_ZYGOTE_FDS"] = f"{to_zygote_r},{from_zygote_w}"
        env["COURSE_PRELOAD"] = ",".join(self.preload or ())
        if self.mpl_cache:
            env["COURSE_MPL_CACHE"] = str(self.mpl_cache)
        if not boxed:
            env["COURSE_IPC_DIR"] = str(self.run_dir / "ipc")
        ro = [str(self.run_dir / "conn"), *(self.ro_dirs or ())]
        if self.mpl_cache:
            ro.append(str(self.mpl_cache))
        cmd = self.sandbox.wrap(
            kernel_cmd, cwd=cwd, ro=ro, env=env, info_fd=info_w if boxed else None
        )
        self.tree = tree_limits.create(self.limits_name or f"{os.getpid()}-{id(self)}")
        cmd = tree_limits.enter_command(self.tree, cmd)
        passed = [to_zygote_r, from_zygote_w] + ([info_w] if boxed else [])
        kw.update(
            env=env,
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=passed,
            close_fds=True,
        )
        try:
            await super()._async_launch_kernel(cmd, **kw)
        finally:
            for fd in passed:
                os.close(fd)
        self.link = ZygoteLink(from_zygote_r, to_zygote_w)
        if boxed:
            pid = _read_info(info_r, 60.0)
            os.close(info_r)
            if pid is None:
                raise RuntimeError("bubblewrap did not start the sandbox")
            self.ip = f"/proc/{pid}/root{IPC_DIR}/kernel"

    async def _async_is_alive(self) -> bool:
        """The kernel process is alive (the sandbox outlives it: its zygote says when it ends)."""
        if self.link is not None and not self.link.kernel_alive:
            return False
        return await super()._async_is_alive()

    is_alive = _async_is_alive  # type: ignore[assignment]

    async def shutdown_kernel(self, now: bool = False, restart: bool = False) -> None:  # type: ignore[override]
        """End the sandbox: the zygote, told by its pipe closing, kills everything and exits (so
        the whole tree is reaped), then jupyter_client's own shutdown makes sure."""
        import asyncio

        if self.link is not None:
            self.link.close()
            process = getattr(self.provisioner, "process", None)
            for _ in range(40):
                if process is None or process.poll() is not None:
                    break
                await asyncio.sleep(0.05)
        await super().shutdown_kernel(now=now, restart=restart)

    async def cleanup_resources(self, restart: bool = False) -> None:  # type: ignore[override]
        await super().cleanup_resources(restart=restart)
        if self.link is not None:
            self.link.close()
        if self.tree is not None:
            self.tree.close()


def _read_info(fd: int, timeout: float) -> int | None:
    """The sandbox's PID (outside) from bwrap's --info-fd JSON."""
    deadline = monotonic() + timeout
    data = b""
    while monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - monotonic()))
        if not ready:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
        try:
            return int(json.loads(data)["child-pid"])
        except (ValueError, KeyError):
            continue
    return None
