"""nbgrader's Execute preprocessor made safe for one untrusted submission.

`GuardedExecute` replaces nbgrader's Execute in the autograde step. It
- starts the guarded kernel (course_lib.machinery.grader.kernel) in the sandbox, in a working folder that
  holds the submission's own files but no notebook (the sanitized notebook on disk contains the
  hidden tests);
- holds a per-student wall-clock budget: each cell gets at most what is left; a kernel that does
  not answer an interrupt (a loop that ignores SIGINT) or dies (``os._exit``) stops execution;
- gives every grade cell that did not run an error output, so it scores 0 (nbgrader would give
  full marks to a grade cell without outputs);
- marks locked cells for the kernel's guard, runs grade cells outside the input history, ignores
  the ``skip-execution`` tag, and asks the kernel for its runtime tamper flags at the end;
- caps outputs in bytes (each text output, and each cell in total) as they arrive;
- drops the value a grade cell's last expression displays (``check_float(...)`` returns the
  checked value): nbgrader would read a number there as partial credit.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from time import monotonic
from typing import Any

from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Float, Integer, Unicode

from course_lib.machinery.grader.kernel import MARK
from course_lib.machinery.grader.sandbox import Sandbox, SandboxedKernelManager, python_paths

NOT_RUN = "NotExecuted"


def _error(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(
        output_type="error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"]
    )


def _cut(text: str, limit: int) -> str:
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    kept = data[:limit].decode("utf-8", "ignore")
    return f"{kept}\n[... output cut: {len(data) - limit} more bytes]\n"


def _nbgrader(cell: NotebookNode) -> dict[str, Any]:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


class GuardedExecute(Execute):
    """Execute one submission under a time budget, in the sandbox, with the kernel's guard."""

    budget = Float(600.0, help="wall-clock seconds for the whole notebook").tag(config=True)
    run_dir = Unicode("", help="folder for the kernel's sockets and home").tag(config=True)
    exec_dir = Unicode("", help="the kernel's working folder").tag(config=True)
    report_path = Unicode("", help="where the execution report (JSON) is written").tag(config=True)
    sandbox_mode = Unicode("none", help="'bwrap' or 'none'").tag(config=True)
    max_text_bytes = Integer(20_000, help="bytes kept of one text output").tag(config=True)
    max_cell_bytes = Integer(4_000_000, help="bytes kept of one cell's outputs").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: Any = None, km: Any = None):
        """Execute `nb`; whatever happens, write the report and zero the grade cells not run."""
        self._start = monotonic()
        self._token = secrets.token_hex(16)
        self._stopped: str | None = None
        self._status, self._detail = "graded", ""
        self._flags: set[str] = set()
        self._cell_bytes: dict[int, int] = {}
        self._ran: set[int] = set()  # cells whose execution finished (with or without error)
        self._cell_timeout = int(self.timeout or 120)
        code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
        self._last_code = code[-1] if code else -1
        resources = dict(resources or {})
        resources["metadata"] = {**resources.get("metadata", {}), "path": self.exec_dir}
        self.shutdown_kernel = "immediate"
        self.skip_cells_with_tag = f"never-{self._token}"
        try:
            nb, resources = super().preprocess(nb, resources, km)
        except (CellTimeoutError, DeadKernelError) as exc:
            self._stop("kernel_died", f"the kernel stopped: {type(exc).__name__}")
        except Exception as exc:  # the kernel could not start, or nbclient failed
            self._stop("error", f"execution failed: {type(exc).__name__}: {exc}"[:500])
        finally:
            for index, cell in enumerate(nb.cells):
                grade = _nbgrader(cell).get("grade") and cell.cell_type == "code"
                if grade and index not in self._ran:
                    self._mark_not_run(cell)
            self._write_report()
        return nb, resources

    # -- kernel ----------------------------------------------------------------------------
    def create_kernel_manager(self):
        """The sandboxed, guarded kernel (ignores the kernel named in the notebook)."""
        sandbox = Sandbox(self.sandbox_mode, python_paths() if self.sandbox_mode == "bwrap" else ())
        run_dir = Path(self.run_dir)
        self.km = SandboxedKernelManager(run_dir=run_dir, config=self.config)
        self.km.kernel_name = "python3"
        self.km.sandbox = sandbox
        env = {"COURSE_GUARD_TOKEN": self._token}
        if (run_dir / "mpl").is_dir():
            env["MPLCONFIGDIR"] = str(run_dir / "mpl")
        self.km.extra_env = env
        return self.km

    # -- cells -----------------------------------------------------------------------------
    def preprocess_cell(self, cell: NotebookNode, resources: Any, index: int):
        """Run one cell within the remaining budget, marked for the guard if it is locked."""
        if self._stopped or cell.cell_type != "code":
            return cell, self.resources
        remaining = self.budget - (monotonic() - self._start)
        if remaining < 1:
            self._stop("timeout", f"the time limit of {self.budget:.0f} s ran out")
            return cell, self.resources
        self.timeout = int(max(1, min(self._cell_timeout, remaining)))
        meta = _nbgrader(cell)
        role = "grade" if meta.get("grade") else "locked" if meta.get("locked") else None
        original = cell.source
        if role:
            cell.source = f"{MARK} {self._token} {role}\n{original}"
        try:
            cell = self.execute_cell(cell, index, store_history=role != "grade")
            self._ran.add(index)
        except CellTimeoutError:
            self._stop("timeout", f"cell {index} ran past its time limit and ignored interrupts")
            cell.outputs.append(_error("CellTimeoutError", "no reply from the kernel in time"))
            self._ran.add(index)
        except DeadKernelError:
            self._stop("kernel_died", f"the kernel died in cell {index}")
            self._flags.add("runtime:kernel_exit")
            cell.outputs.append(_error("DeadKernelError", "the kernel died while this cell ran"))
            self._ran.add(index)
        finally:
            cell.source = original
        if role == "grade":  # nbgrader reads a numeric execute_result as partial credit
            cell.outputs = [o for o in cell.outputs if o.output_type != "execute_result"]
        if any(o.get("ename") == "CellTimeoutError" for o in cell.outputs):
            self._status = "timeout"
            self._detail = self._detail or f"cell {index} was interrupted at its time limit"
        if index == self._last_code and not self._stopped:
            self._collect_report()
        return cell, self.resources

    def on_cell_executed(self, **kwargs: Any) -> None:
        """An error reply without an error output means the display was suppressed: flag it."""
        cell, reply = kwargs["cell"], kwargs["execute_reply"]
        if reply["content"].get("status") == "error" and reply["content"].get("ename") not in (
            "CellTimeoutError",
        ):
            if not any(o.output_type == "error" for o in cell.outputs):
                self._flags.add("runtime:suppressed_error")
        super().on_cell_executed(**kwargs)

    def output(self, outs: list, msg: dict, display_id: str | None, cell_index: int):
        """Keep an output, cut to max_text_bytes per text and max_cell_bytes per cell."""
        content = msg.get("content", {})
        kind = msg.get("msg_type")
        if kind == "stream":
            content["text"] = self._cut(content.get("text", ""))
            size = len(content["text"])
        elif kind == "error":
            content["evalue"] = self._cut(str(content.get("evalue", "")))
            tb = [self._cut(str(line)) for line in content.get("traceback", [])]
            content["traceback"] = tb[:50]
            size = sum(len(line) for line in content["traceback"])
        elif kind in ("display_data", "execute_result", "update_display_data"):
            data = content.get("data", {})
            for mime, value in list(data.items()):
                if isinstance(value, str) and mime.startswith("text/"):
                    data[mime] = self._cut(value)
            size = sum(len(v) if isinstance(v, str) else len(json.dumps(v)) for v in data.values())
        else:
            size = 0
        used = self._cell_bytes.get(cell_index, 0)
        self._cell_bytes[cell_index] = used + size
        if used + size > self.max_cell_bytes and kind != "error":
            self._flags.add("output_truncated")
            stderr = kind == "stream" and content.get("name") == "stderr"
            has_stderr = any(o.get("name") == "stderr" for o in outs)
            if used > self.max_cell_bytes and not (stderr and not has_stderr):
                return None  # the note was already added; stderr stays visible once (it fails)
            note = f"[... outputs of this cell cut at {self.max_cell_bytes} bytes]\n"
            name = content.get("name", "stdout") if kind == "stream" else "stdout"
            msg = {**msg, "msg_type": "stream", "content": {"name": name, "text": note}}
        return super().output(outs, msg, display_id, cell_index)

    def _cut(self, text: str) -> str:
        """`text` cut to max_text_bytes (flagged when it was cut)."""
        cut = _cut(text, self.max_text_bytes)
        if cut is not text:
            self._flags.add("output_truncated")
        return cut

    # -- bookkeeping -----------------------------------------------------------------------
    def _stop(self, status: str, detail: str) -> None:
        if not self._stopped:
            self._stopped = status
            self._status, self._detail = status, detail

    def _mark_not_run(self, cell: NotebookNode) -> None:
        why = self._detail or "execution stopped before this cell"
        cell.outputs = [_error(NOT_RUN, f"this grade cell did not run: {why}")]

    def _collect_report(self) -> None:
        """Ask the guarded kernel which defences it had to apply (runtime tamper flags)."""
        try:
            msg_id = self.kc.execute(
                f"{MARK} {self._token} report\n", silent=True, store_history=False
            )
            reply = self.wait_for_reply(msg_id)
        except Exception:  # a wedged or dead kernel gives no report
            reply = None
        flags = (reply or {}).get("content", {}).get("course_audit")
        if isinstance(flags, list):
            self._flags.update(f"runtime:{f}" for f in flags if isinstance(f, str))
        else:
            self._flags.add("runtime:no_report")

    def _write_report(self) -> None:
        if not self.report_path:
            return
        report = {
            "status": self._status,
            "detail": self._detail,
            "flags": sorted(self._flags),
            "seconds": round(monotonic() - self._start, 3),
        }
        Path(self.report_path).write_text(json.dumps(report), encoding="utf-8")
