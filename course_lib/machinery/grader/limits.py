"""Resource limits for one student's whole sandboxed process tree: a cgroup, or rlimits.

`course grade` puts each student's sandbox (kernel, probes, anything they start) in a cgroup of
its own when the machine lets it create one — cgroup v2 (memory.max, pids.max, cpu.max) or the v1
memory, pids and cpu controllers (memory.limit_in_bytes, pids.max, cpu.cfs_quota_us):

  memory   TREE_MEMORY bytes for the whole tree (page cache and the sandbox's RAM-backed /tmp
           included); past it the kernel's OOM killer ends a process (status kernel_died)
  pids     TREE_PIDS processes and threads at once (a fork bomb stops there)
  cpu      one CPU at most, so a student never takes a concurrently graded student's core; with
           the wall-clock limit per student this also caps the tree's CPU time

Where no cgroup can be made, the documented equivalent is per-process rlimits (address space,
CPU seconds, file size; set by the zygote), the sandbox's PID namespace (everything dies with it)
and the wall-clock limit. `describe()` says which applies.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

TREE_MEMORY = 3 * 2**30
TREE_PIDS = 256
CPU_PERIOD = 100_000  # microseconds
ROOT = Path("/sys/fs/cgroup")
PREFIX = "course-grade-"


def _write(path: Path, value: str) -> bool:
    try:
        path.write_text(value)
    except OSError:
        return False
    return True


def _v1_dirs() -> dict[str, Path] | None:
    dirs = {c: ROOT / c for c in ("memory", "pids", "cpu")}
    if all((d / "cgroup.procs").is_file() and os.access(d, os.W_OK) for d in dirs.values()):
        return dirs
    return None


def _v2_base() -> Path | None:
    if not (ROOT / "cgroup.controllers").is_file():
        return None
    try:
        rel = next(
            line.split("::", 1)[1].strip()
            for line in Path("/proc/self/cgroup").read_text().splitlines()
            if line.startswith("0::")
        )
    except (OSError, StopIteration):
        return None
    base = ROOT / rel.lstrip("/")
    try:
        enabled = (base / "cgroup.subtree_control").read_text().split()
    except OSError:
        return None
    if not {"memory", "pids", "cpu"} <= set(enabled) or not os.access(base, os.W_OK):
        return None
    return base


@dataclass
class TreeLimits:
    """One student's cgroup(s); `procs` are the files a process writes its pid to, to enter."""

    name: str
    dirs: list[Path] = field(default_factory=list)
    version: int = 0

    @property
    def procs(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    def exceeded(self) -> list[str]:
        """Which limits the tree ran into (for the student's flags)."""
        hits = []
        for d in self.dirs:
            if self.version == 1 and d.parent.name == "memory":
                oom = _read_int(d / "memory.oom_control", key="oom_kill")
                if oom > 0 or _read_int(d / "memory.failcnt") > 0:
                    hits.append("memory")
            elif self.version == 1 and d.parent.name == "pids":
                if _read_int(d / "pids.events", key="max") > 0:
                    hits.append("pids")
            elif self.version == 2:
                if _read_int(d / "memory.events", key="oom_kill") > 0:
                    hits.append("memory")
                if _read_int(d / "pids.events", key="max") > 0:
                    hits.append("pids")
        return hits

    def close(self) -> None:
        """Kill whatever is still in the cgroup, then remove it."""
        for d in self.dirs:
            for _ in range(50):
                pids = _pids(d)
                if not pids:
                    break
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
                time.sleep(0.02)
            try:
                d.rmdir()
            except OSError:
                pass


def _read_int(path: Path, key: str | None = None) -> int:
    try:
        text = path.read_text()
    except OSError:
        return 0
    if key is None:
        return int(text.strip() or 0)
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key:
            return int(parts[1])
    return 0


def _pids(d: Path) -> list[int]:
    try:
        return [int(p) for p in (d / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def available() -> int:
    """2 or 1 if this process can make cgroups (v2 or v1), else 0."""
    if _v2_base() is not None:
        return 2
    if _v1_dirs() is not None:
        return 1
    return 0


def describe() -> str:
    """One line: what bounds a student's process tree here."""
    version = available()
    if version:
        return (
            f"cgroup v{version} per student: {TREE_MEMORY / 2**30:g} GiB memory, "
            f"{TREE_PIDS} processes, 1 CPU"
        )
    return (
        "no cgroup (cannot create one here): per-process rlimits (memory, CPU time, file size), "
        "the PID namespace and the wall-clock limit"
    )


def create(name: str, memory: int = TREE_MEMORY, pids: int = TREE_PIDS) -> TreeLimits:
    """A fresh cgroup for one student's tree (an empty TreeLimits if none can be made)."""
    name = PREFIX + name
    base = _v2_base()
    if base is not None:
        d = base / name
        try:
            d.mkdir()
        except OSError:
            return TreeLimits(name)
        ok = (
            _write(d / "memory.max", str(memory))
            and _write(d / "pids.max", str(pids))
            and _write(d / "cpu.max", f"{CPU_PERIOD} {CPU_PERIOD}")
        )
        _write(d / "memory.swap.max", "0")
        limits = TreeLimits(name, [d], 2)
        if not ok:
            limits.close()
            return TreeLimits(name)
        return limits
    v1 = _v1_dirs()
    if v1 is None:
        return TreeLimits(name)
    made = []
    try:
        for kind, root in v1.items():
            d = root / name
            d.mkdir()
            made.append(d)
            if kind == "memory":
                ok = _write(d / "memory.limit_in_bytes", str(memory))
                _write(d / "memory.memsw.limit_in_bytes", str(memory))
            elif kind == "pids":
                ok = _write(d / "pids.max", str(pids))
            else:
                ok = _write(d / "cpu.cfs_period_us", str(CPU_PERIOD)) and _write(
                    d / "cpu.cfs_quota_us", str(CPU_PERIOD)
                )
            if not ok:
                raise OSError(f"cannot set the {kind} limit")
    except OSError:
        TreeLimits(name, made, 1).close()
        return TreeLimits(name)
    return TreeLimits(name, made, 1)


def remove_stale() -> None:
    """Remove empty cgroups left by a grader that was killed (their processes are gone)."""
    roots = []
    base = _v2_base()
    if base is not None:
        roots.append(base)
    v1 = _v1_dirs()
    if v1 is not None:
        roots += list(v1.values())
    for root in roots:
        try:
            entries = list(root.glob(PREFIX + "*"))
        except OSError:
            continue
        for d in entries:
            owner = d.name[len(PREFIX) :].split("-")[0]
            if owner.isdigit() and Path(f"/proc/{owner}").exists():
                continue  # its grader is still running
            if not _pids(d):
                try:
                    d.rmdir()
                except OSError:
                    pass


ENTER = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 97; shift; n=$((n-1)); done; exec "$@"'


def enter_command(limits: TreeLimits, cmd: list[str]) -> list[str]:
    """`cmd` run so that it starts inside the cgroup (a shell writes its pid, then execs)."""
    if not limits.dirs:
        return cmd
    return ["/bin/sh", "-c", ENTER, "sh", str(len(limits.procs)), *limits.procs, *cmd]
