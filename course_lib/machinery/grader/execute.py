"""nbgrader's Execute preprocessor made safe for one untrusted submission.

`GuardedExecute` replaces nbgrader's Execute in the autograde step. It
- starts the student's sandbox (sandbox.py): its zygote forks the kernel, which runs the student's
  cells and the lesson's locked cells in a working folder that holds the submission's own files
  but no notebook;
- never sends a grade cell to the kernel: at a grade cell's position it asks the kernel for the
  values of the names the cell reads (plain data), and after the last cell — once the kernel and
  everything it started are killed — runs every grade cell in the trusted checker (checker.py),
  which calls student functions in probes (probe.py) and writes the grade cell's outputs;
- holds a per-student wall-clock budget: each cell gets at most what is left; a kernel that does
  not answer an interrupt (a loop that ignores SIGINT) or dies (``os._exit``) stops execution;
  grade cells whose position was not reached score 0 (an error output says why);
- marks locked cells for the kernel's guard, ignores the ``skip-execution`` tag, and asks the
  kernel for its runtime tamper flags at the end;
- caps outputs in bytes (each text output, and each cell in total) as they arrive.
"""

from __future__ import annotations

import json
from pathlib import Path
from time import monotonic
from typing import Any

from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Float, Integer, Unicode

from course_lib.machinery.grader.checker import Checker, Fetched, GraderError, ProbeSession
from course_lib.machinery.grader.kernel import MARK
from course_lib.machinery.grader.notebook import LessonSpec
from course_lib.machinery.grader.sandbox import Sandbox, SandboxedKernelManager, python_paths

NOT_RUN = "NotExecuted"
BASE_PRELOAD = (  # with the modules the lesson's setup and grade cells import
    "numpy",
    "ipykernel.kernelapp",
    "course_lib.checks",
    "course_lib.machinery.grader.wire",
    "course_lib.machinery.grader.kernel",
    "course_lib.machinery.grader.probe",
)


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
    """Execute one submission under a time budget, in the sandbox; grade cells in the checker."""

    budget = Float(600.0, help="wall-clock seconds for the whole notebook").tag(config=True)
    run_dir = Unicode("", help="folder for the kernel's connection file").tag(config=True)
    exec_dir = Unicode("", help="the kernel's working folder").tag(config=True)
    report_path = Unicode("", help="where the execution report (JSON) is written").tag(config=True)
    sandbox_mode = Unicode("none", help="'bwrap' or 'none'").tag(config=True)
    spec_path = Unicode("", help="the lesson spec (JSON)").tag(config=True)
    mpl_cache = Unicode("", help="a warm matplotlib cache folder (copied into the sandbox)").tag(
        config=True
    )
    max_text_bytes = Integer(20_000, help="bytes kept of one text output").tag(config=True)
    max_cell_bytes = Integer(4_000_000, help="bytes kept of one cell's outputs").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: Any = None, km: Any = None):
        """Execute `nb`; whatever happens, write the report and zero the grade cells not run."""
        self._start = monotonic()
        self._stopped: str | None = None
        self._status, self._detail = "graded", ""
        self._flags: set[str] = set()
        self._cell_bytes: dict[int, int] = {}
        self._fetched: dict[int, tuple[str, Fetched]] = {}
        self._checked: set[int] = set()
        self._cell_timeout = int(self.timeout or 120)
        spec = LessonSpec.from_json(Path(self.spec_path).read_text("utf-8"))
        self._checker = Checker(spec)
        resources = dict(resources or {})
        resources["metadata"] = {**resources.get("metadata", {}), "path": self.exec_dir}
        self.shutdown_kernel = "immediate"
        self.skip_cells_with_tag = "never-skip-a-cell-when-grading"
        try:
            self._checker.setup()
            self._run(nb, resources, km)
        except GraderError as exc:
            self._stop("error", str(exc)[:500])
        except (CellTimeoutError, DeadKernelError) as exc:
            self._stop("kernel_died", f"the kernel stopped: {type(exc).__name__}")
        except Exception as exc:  # the kernel could not start, or nbclient failed
            self._stop("error", f"execution failed: {type(exc).__name__}: {exc}"[:500])
        finally:
            for index, cell in enumerate(nb.cells):
                grade = _nbgrader(cell).get("grade") and cell.cell_type == "code"
                if grade and index not in self._checked:
                    self._mark_not_run(cell)
            self._write_report()
        return nb, resources

    def _run(self, nb: NotebookNode, resources: Any, km: Any) -> None:
        NotebookClient.__init__(self, nb, km)
        self.reset_execution_trackers()
        self._check_assign_resources(resources)
        with self.setup_kernel():
            try:
                info = self.wait_for_reply(self.kc.kernel_info())
                if info:
                    self.nb.metadata["language_info"] = info["content"]["language_info"]
                for index, cell in enumerate(self.nb.cells):
                    self.preprocess_cell(cell, resources, index)
            finally:
                self._finish()
        self.set_widgets_metadata()

    # -- kernel ----------------------------------------------------------------------------
    def create_kernel_manager(self):
        """The sandbox and its guarded kernel (ignores the kernel named in the notebook)."""
        sandbox = Sandbox(self.sandbox_mode, python_paths() if self.sandbox_mode == "bwrap" else ())
        self.km = SandboxedKernelManager(
            run_dir=Path(self.run_dir), sandbox=sandbox, config=self.config
        )
        self.km.kernel_name = "python3"
        self.km.extra_env = {"COURSE_KERNEL_CPU": str(int(self.budget) + 60)}  # per process
        self.km.preload = list(dict.fromkeys(BASE_PRELOAD + tuple(self._checker.preload_modules())))
        self.km.mpl_cache = self.mpl_cache or None
        return self.km

    def _remaining(self) -> float:
        return self.budget - (monotonic() - self._start)

    # -- cells -----------------------------------------------------------------------------
    def preprocess_cell(self, cell: NotebookNode, resources: Any, index: int):
        """Run one cell within the remaining budget; at a grade cell, fetch its answers."""
        if self._stopped or cell.cell_type != "code":
            return cell, self.resources
        remaining = self._remaining()
        if remaining < 1:
            self._stop("timeout", f"the time limit of {self.budget:.0f} s ran out")
            return cell, self.resources
        self.timeout = int(max(1, min(self._cell_timeout, remaining)))
        meta = _nbgrader(cell)
        if meta.get("grade"):
            self._fetch(cell, meta.get("grade_id", ""), index)
            return cell, self.resources
        original = cell.source
        if meta.get("locked"):
            cell.source = f"{MARK} locked\n{original}"
        try:
            cell = self.execute_cell(cell, index, store_history=True)
        except CellTimeoutError:
            self._stop("timeout", f"cell {index} ran past its time limit and ignored interrupts")
            cell.outputs.append(_error("CellTimeoutError", "no reply from the kernel in time"))
        except DeadKernelError:
            self._stop("kernel_died", f"the kernel died in cell {index}")
            self._flags.add("runtime:kernel_exit")
            cell.outputs.append(_error("DeadKernelError", "the kernel died while this cell ran"))
        finally:
            cell.source = original
        if any(o.get("ename") == "CellTimeoutError" for o in cell.outputs):
            self._status = "timeout"
            self._detail = self._detail or f"cell {index} was interrupted at its time limit"
        return cell, self.resources

    def _request(self, role: str, payload: str = "") -> dict[str, Any] | None:
        """Ask the kernel (one of the grader's requests, not a cell); its reply content."""
        try:
            msg_id = self.kc.execute(f"{MARK} {role}\n{payload}", silent=True, store_history=False)
            reply = self.wait_for_reply(msg_id)
        except (CellTimeoutError, DeadKernelError):
            raise
        except Exception:  # a wedged or broken kernel gives no answer
            return None
        return (reply or {}).get("content")

    def _fetch(self, cell: NotebookNode, grade_id: str, index: int) -> None:
        """The answers a grade cell reads, as the kernel holds them at this position."""
        cell.outputs = []
        if grade_id not in self._checker.plans:
            return
        names = self._checker.request_names(grade_id)
        try:
            content = self._request("export", json.dumps({"names": names}))
        except DeadKernelError:
            self._stop("kernel_died", f"the kernel died before grade cell {index}")
            self._flags.add("runtime:kernel_exit")
            return
        except CellTimeoutError:
            self._stop("timeout", f"the kernel did not answer at grade cell {index}")
            return
        text = (content or {}).get("course_export")
        fetched = self._checker.receive(grade_id, index, text)
        if fetched.flag:
            self._flags.add(fetched.flag)
        self._fetched[index] = (grade_id, fetched)

    def _finish(self) -> None:
        """After the last cell: tamper report, kill the kernel's tree, run the grade cells."""
        if not self._stopped:
            self._collect_report()
        link = getattr(self.km, "link", None)
        if link is not None:
            link.op({"op": "purge"}, 30.0)
        init = {
            "setup": self._checker.setup_sources,
            "cells": self._probe_cells(),
            "exec_dir": self.exec_dir,
        }
        session = ProbeSession(link, init, float(self._cell_timeout), self._remaining)
        for index, (grade_id, fetched) in sorted(self._fetched.items()):
            cell = self.nb.cells[index]
            try:
                cell.outputs = self._checker.run(grade_id, fetched, session)
            except GraderError as exc:
                self._stop("error", str(exc)[:500])
                cell.outputs = [_error("GraderError", "this cell could not be checked")]
            self._checked.add(index)
        self._flags |= session.flags
        if link is not None and session.current is not None:
            link.op({"op": "kill_probe"}, 10.0)
        tree = getattr(self.km, "tree", None)
        if tree is not None:
            self._flags.update(f"limit:{hit}" for hit in tree.exceeded())

    def _probe_cells(self) -> list[tuple[int, str]]:
        """The student's cells a probe runs: every solution cell, and any other unlocked cell
        (the student's own or the lesson's) that binds a name those read as a global, or a
        function a grade cell calls — transitively. Scratch cells, figures and explorers stay out
        (a name a function only uses as its parameter or local brings in no cell)."""
        from course_lib.machinery.grader.audit import python_source
        from course_lib.machinery.grader.checker import bound_names, global_reads

        candidates = []
        for index, cell in enumerate(self.nb.cells):
            meta = _nbgrader(cell)
            if cell.cell_type != "code" or meta.get("grade") or meta.get("locked"):
                continue
            source = python_source(cell.source)
            candidates.append((index, source, bool(meta.get("solution"))))
        chosen = {i for i, _, solution in candidates if solution}
        needed = {n for plan in self._checker.plans.values() for n in plan.answers}
        for _, source, solution in candidates:
            if solution:
                needed |= global_reads(source)
        changed = True
        while changed:
            changed = False
            for index, source, _ in candidates:
                if index not in chosen and bound_names(source) & needed:
                    chosen.add(index)
                    needed |= global_reads(source)
                    changed = True
        return [(i, s) for i, s, _ in candidates if i in chosen]

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
        """Ask the kernel which defences it had to apply (runtime tamper flags, for review)."""
        try:
            content = self._request("report")
        except (CellTimeoutError, DeadKernelError):
            content = None
        flags = (content or {}).get("course_audit")
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
