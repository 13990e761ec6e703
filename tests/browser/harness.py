"""Drive a learner's JupyterLab in headless Chromium: start the server, open notebooks, run, look.

JupyterLab is started exactly as `course lab` starts it (course_lib.machinery.cli.lab_command and
lab_environment: the learner's config in course_lib/machinery/learner_lab), on 127.0.0.1, a free port and a
random token, with empty user config/data/runtime folders, and stopped at the end. Chromium is
Debian's (/usr/bin/chromium, or $COURSE_CHROMIUM), driven by Playwright without any browser
download.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from course_lib.machinery import cli

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "test-output" / "browser"
CHROMIUM = Path(os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium"))
# Headless in a container on a closed network: no sandbox (root), no GPU, and none of Chromium's
# own background connections (without these flags the network refuses them and Chromium stalls).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def unavailable() -> str | None:
    """Why the browser tests cannot run here (None when they can)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return (
            "browser tests skipped: the Python package playwright is missing; "
            "run `.venv/bin/pip install -e '.[dev]'`"
        )
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        return (
            f"browser tests skipped: Debian's chromium is not installed at {CHROMIUM}; "
            "install it with `apt-get install -y chromium` (.ci/run does)"
        )
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Lab:
    """A running JupyterLab server on a learner's folder."""

    work: Path
    port: int
    token: str
    process: subprocess.Popen
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "") -> str:
        """The JupyterLab URL that opens `path` (relative to work/), logged in by token."""
        # ?reset: start from the default layout, not the tabs a previous page left open
        return f"{self.base}/lab/tree/{path}?reset&token={self.token}"

    def get(self, path: str) -> tuple[int, str]:
        """HTTP GET of a server path (with the token); returns (status, body)."""
        request = urllib.request.Request(
            f"{self.base}{path}", headers={"Authorization": f"token {self.token}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode("utf-8", "replace")

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


@contextlib.contextmanager
def jupyter_lab(work: Path, log: Path, *, startup_timeout: float = 90.0) -> Iterator[Lab]:
    """Start JupyterLab on `work` as `course lab` does; stop it (and its kernels) on exit."""
    scratch = Path(tempfile.mkdtemp(prefix="course-browser-jupyter-"))
    env = dict(os.environ)
    for name in ("config", "data", "runtime"):
        (scratch / name).mkdir()
    env.update(
        JUPYTER_CONFIG_DIR=str(scratch / "config"),  # empty: no user configuration
        JUPYTER_DATA_DIR=str(scratch / "data"),  # no user kernels or extensions
        JUPYTER_RUNTIME_DIR=str(scratch / "runtime"),
        JUPYTER_PLATFORM_DIRS="1",
        PYTHONUNBUFFERED="1",
    )
    env.pop("JUPYTER_CONFIG_PATH", None)
    env = cli.lab_environment(env)
    port, token = free_port(), secrets.token_hex(16)
    cmd = cli.lab_command(
        work,
        [
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
        ],
    )
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as log_file:
        process = subprocess.Popen(
            cmd,
            cwd=ROOT,  # as `make lab`: nbgrader's Validate reads nbgrader_config.py from here
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    lab = Lab(work, port, token, process, log)
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    f"JupyterLab exited with {process.returncode}:\n{lab.log_tail()}"
                )
            try:
                if lab.get("/api/status")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"JupyterLab did not answer in {startup_timeout} s:\n{lab.log_tail()}"
                )
            time.sleep(0.25)
        yield lab
    finally:
        _stop(process)
        shutil.rmtree(scratch, ignore_errors=True)


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM (JupyterLab shuts its kernels down), then SIGKILL the session if it lingers."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # the server's own session: leftover kernels
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)


@contextlib.contextmanager
def chromium(*, width: int = 1400, height: int = 1000) -> Iterator[object]:
    """A headless Debian Chromium browser context with a fresh profile (Playwright)."""
    from playwright.sync_api import sync_playwright

    profile = Path(tempfile.mkdtemp(prefix="course-browser-profile-"))
    try:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                str(profile),
                executable_path=str(CHROMIUM),
                headless=True,
                args=CHROMIUM_ARGS,
                viewport={"width": width, "height": height},
            )
            try:
                yield context
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


# ------------------------------------------------------------------------------ page helpers
NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden)"
ERROR_WIDGET = "Error displaying widget"


class Notebook:
    """One notebook open in JupyterLab, as a learner uses it (menus, toolbar, keyboard)."""

    def __init__(self, page, lab: Lab, path: str, shots: Path) -> None:
        self.page, self.lab, self.path, self.shots = page, lab, path, shots
        self.panel = page.locator(NOTEBOOK)

    def open(self, timeout: float = 60_000) -> Notebook:
        """Open the notebook and wait until its kernel is idle."""
        self.page.goto(self.lab.url(self.path))
        self.panel.locator(".jp-Cell").first.wait_for(timeout=timeout)
        self.wait_idle(timeout)
        return self

    def kernel_status(self) -> str:
        indicator = self.panel.locator(".jp-Notebook-ExecutionIndicator")
        return indicator.get_attribute("data-status") or ""

    def wait_idle(self, timeout: float = 60_000) -> None:
        """Wait until the kernel is idle and no cell shows the [*] busy prompt."""
        self.page.wait_for_function(
            """(sel) => {
                const panel = document.querySelector(sel);
                if (!panel) return false;
                const name = panel.querySelector('.jp-KernelName');
                if (!name || !name.textContent.trim() || name.textContent.includes('No Kernel'))
                    return false;
                const ind = panel.querySelector('.jp-Notebook-ExecutionIndicator');
                if (!ind || ind.getAttribute('data-status') !== 'idle') return false;
                return ![...panel.querySelectorAll('.jp-InputPrompt')]
                    .some(p => p.textContent.includes('*'));
            }""",
            arg=NOTEBOOK,
            timeout=timeout,
        )

    def menu(self, menu: str, item: str) -> None:
        """Click a main-menu entry by its labels, e.g. menu('Run', 'Run All Cells')."""
        self.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{menu}$")).click()
        label = self.page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$"))
        self.page.locator(".lm-Menu-item", has=label).first.click()

    def run_all(self, timeout: float = 120_000) -> float:
        """Run > Run All Cells and wait until done; returns the wall time in seconds."""
        start = time.monotonic()
        self.menu("Run", "Run All Cells")
        self.page.wait_for_timeout(500)
        self.wait_idle(timeout)
        return time.monotonic() - start

    def save(self) -> None:
        self.page.keyboard.press("Control+s")
        self.page.wait_for_function(
            "(sel) => !document.querySelector(sel + ' .jp-mod-dirty') && "
            "!document.querySelector('.jp-DocumentWidget-tab.jp-mod-dirty, "
            ".lm-TabBar-tab.jp-mod-dirty')",
            arg=NOTEBOOK,
            timeout=30_000,
        )

    def cells(self):
        return self.panel.locator(".jp-Cell")

    def cell_index(self, text: str) -> int:
        """Position of the first cell whose input contains `text` (stable when the text changes)."""
        index = self.cells().evaluate_all(
            """(cells, text) => cells.findIndex(c => {
                const input = c.querySelector('.jp-InputArea');
                return input && input.textContent.includes(text);
            })""",
            text,
        )
        if index < 0:
            raise AssertionError(f"no cell contains {text!r}")
        return index

    def shot(self, name: str, locator=None, full: bool = False) -> Path:
        """Save a screenshot (of the page, or of one element) as <shots>/<name>.png."""
        path = self.shots / f"{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        if locator is not None:
            locator.scroll_into_view_if_needed()
            locator.screenshot(path=str(path))
        else:
            self.page.screenshot(path=str(path), full_page=full)
        return path
