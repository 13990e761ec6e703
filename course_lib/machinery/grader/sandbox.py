"""Where a submission's kernel runs: a bubblewrap sandbox that sees only its own folder.

The kernel gets read-only views of the operating system (/usr), the Python installation, the
course_lib package and its submission's non-notebook files (copied into /tmp/work, where it runs),
a private /tmp of 512 MiB, and the folder of its IPC sockets. It does not see the course root (gradebook, source/, release/,
submitted/, other students' work), has no network (the grader talks to it over Unix sockets), runs
in its own PID, IPC and UTS namespaces as an unprivileged uid, and is killed with everything it
started when its grader dies. Without bubblewrap (mode "none") the kernel runs as a plain process
with the same clean environment and no barrier at all; `course grade` says so loudly.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager
from traitlets import Any as AnyTrait

MODES = ("auto", "bwrap", "none")
KERNEL_MEMORY = 6 * 2**30  # bytes of address space per kernel (RLIMIT_AS)
KERNEL_FSIZE = 256 * 2**20  # largest file a kernel may write (RLIMIT_FSIZE)
TMP_BYTES = 512 * 2**20  # the sandbox's /tmp (RAM-backed): home, caches and the working copy
WORKDIR = "/tmp/work"  # where the kernel works on its copy of the submission's files


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
        self, cmd: Sequence[str], *, cwd: str, rw: Sequence[str], env: Mapping[str, str]
    ) -> list[str]:
        """The command line that runs `cmd` in this sandbox with working folder `cwd`."""
        if self.mode == "none":
            prefix = []
            setpriv = shutil.which("setpriv")
            if setpriv:  # the kernel dies with its grader, as under bwrap
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
        for path in self.ro_paths:
            args += ["--ro-bind", path, path]
        for path in rw:
            if path != cwd:
                args += ["--bind", path, path]
        # The submission's files are read-only; the kernel copies them into the size-capped /tmp
        # and works there, so what it writes cannot fill the grader's disk.
        args += ["--ro-bind", cwd, cwd, "--chdir", cwd, "--clearenv"]
        for key, value in {**env, "COURSE_KERNEL_WORKDIR": WORKDIR}.items():
            args += ["--setenv", key, value]
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
    cmd = sandbox.wrap([sys.executable, "-c", "pass"], cwd=sys.prefix, rw=[], env=kernel_env())
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap failed to start ({exc})"
    if proc.returncode != 0:
        return (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
    return None


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager that starts the guarded kernel inside a Sandbox over IPC sockets."""

    sandbox = AnyTrait(None)
    extra_env = AnyTrait(None)

    def __init__(self, *, run_dir: Path, **kwargs: Any) -> None:
        run_dir.mkdir(parents=True, exist_ok=True)
        super().__init__(
            transport="ipc",
            ip=str(run_dir / "kernel"),
            connection_file=str(run_dir / "kernel.json"),
            **kwargs,
        )
        self.run_dir = run_dir

    @property
    def kernel_spec(self) -> KernelSpec:
        """Always the guarded Python kernel, whatever kernel the notebook names."""
        if self._kernel_spec is None:
            self._kernel_spec = KernelSpec(
                argv=[
                    sys.executable,
                    "-m",
                    "course_lib.machinery.grader.kernel",
                    "-f",
                    "{connection_file}",
                ],
                display_name="Python 3 (graded)",
                language="python",
                interrupt_mode="message",  # a signal would reach bwrap, not the kernel
            )
        return self._kernel_spec

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        """The kernel command wrapped in the sandbox, with its working folder writable."""
        cmd = super().format_kernel_cmd(extra_arguments)
        cwd = str(self._launch_args.get("cwd") or self.run_dir)
        sandbox = self.sandbox or Sandbox("none")
        home = "/tmp/home" if sandbox.mode == "bwrap" else str(self.run_dir / "home")
        env = kernel_env(self.extra_env or {}, home=home)
        return sandbox.wrap(cmd, cwd=cwd, rw=[str(self.run_dir), cwd], env=env)
