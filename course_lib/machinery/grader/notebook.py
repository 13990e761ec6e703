"""What a lesson's graded cells are, how a submitted notebook is read and repaired, and how
feedback loses the hidden tests.

The gradebook is the truth about a lesson's nbgrader cells (`LessonSpec`). A submission is read
strictly (`read_submission` raises `CorruptNotebook` naming the problem) and then repaired against
the spec (`repair`): duplicated, re-typed, renamed or re-labelled cells get their nbgrader metadata
back, deleted locked and grade cells are restored from the gradebook, and every change is
reported as a flag. `strip_hidden_tests` removes hidden-test source and any output that quotes it.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode

BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
HIDDEN_NOTE = "# [hidden tests are not shown in feedback]"
MIN_SECRET = 10  # hidden-test lines shorter than this are too generic to scrub from outputs
MAX_NOTEBOOK_BYTES = 50 * 2**20


class CorruptNotebook(ValueError):
    """A submitted file is not a readable Jupyter notebook; the message says why."""


@dataclass(frozen=True)
class CellSpec:
    """One nbgrader cell of a lesson as the gradebook records it."""

    name: str
    cell_type: str
    grade: bool
    solution: bool
    locked: bool
    task: bool
    points: float
    source: str
    checksum: str | None

    def metadata(self) -> dict[str, Any]:
        """The nbgrader cell metadata this cell must carry."""
        meta: dict[str, Any] = {
            "grade": self.grade,
            "grade_id": self.name,
            "locked": self.locked,
            "schema_version": 3,
            "solution": self.solution,
            "task": self.task,
        }
        if self.grade or self.task:
            meta["points"] = self.points
        return meta


@dataclass(frozen=True)
class LessonSpec:
    """The nbgrader cells of one lesson notebook, in notebook order."""

    lesson: str
    notebook: str
    cells: tuple[CellSpec, ...]

    @property
    def max_score(self) -> float:
        """Points available in the notebook (grade and task cells)."""
        return float(sum(c.points for c in self.cells if c.grade or c.task))

    def by_name(self) -> dict[str, CellSpec]:
        """The cells by grade_id."""
        return {c.name: c for c in self.cells}

    def hidden_lines(self) -> frozenset[str]:
        """Lines of hidden tests long enough to be recognised when quoted in an output."""
        found = set()
        for cell in self.cells:
            hidden = hidden_block(cell.source)
            found.update(line.strip() for line in hidden if len(line.strip()) >= MIN_SECRET)
        public = "\n".join(_visible_source(cell.source) for cell in self.cells)
        return frozenset(s for s in found if s not in public)  # text students see is no secret

    def to_json(self) -> str:
        """The spec as JSON (for worker processes)."""
        return json.dumps(asdict(self))

    @staticmethod
    def from_json(text: str) -> LessonSpec:
        """Inverse of to_json."""
        data = json.loads(text)
        cells = tuple(CellSpec(**c) for c in data["cells"])
        return LessonSpec(data["lesson"], data["notebook"], cells)


def read_spec(db_url: str, course_id: str, lesson: str, order_from: Path | None) -> LessonSpec:
    """The lesson's cells from the gradebook, ordered as in `order_from` (the source notebook)."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url, course_id) as gb:
        assignment = gb.find_assignment(lesson)
        notebooks = list(assignment.notebooks)
        if len(notebooks) != 1:
            names = [n.name for n in notebooks]
            raise ValueError(f"{lesson}: expected one notebook in the gradebook, found {names}")
        nb = notebooks[0]
        grades = {c.name: c for c in nb.grade_cells}
        tasks = {c.name: c for c in nb.task_cells}
        solutions = {c.name for c in nb.solution_cells}
        cells = []
        for src in nb.source_cells:
            scored = grades.get(src.name) or tasks.get(src.name)
            cells.append(
                CellSpec(
                    name=src.name,
                    cell_type=src.cell_type,
                    grade=src.name in grades,
                    solution=src.name in solutions,
                    locked=bool(src.locked),
                    task=src.name in tasks,
                    points=float(scored.max_score) if scored else 0.0,
                    source=src.source or "",
                    checksum=src.checksum,
                )
            )
        name = nb.name
    if order_from is not None and order_from.is_file():
        order = [
            c.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            for c in json.loads(order_from.read_text("utf-8"))["cells"]
        ]
        rank = {gid: i for i, gid in enumerate(order) if gid}
        cells.sort(key=lambda c: rank.get(c.name, len(rank)))
    return LessonSpec(lesson, name, tuple(cells))


def hidden_block(source: str) -> list[str]:
    """The lines between BEGIN and END HIDDEN TESTS markers."""
    out, inside = [], False
    for line in source.splitlines():
        s = line.strip()
        if s.startswith(BEGIN_HIDDEN):
            inside = True
        elif s.startswith(END_HIDDEN):
            inside = False
        elif inside:
            out.append(line)
    return out


# -- reading ---------------------------------------------------------------------------------


def read_submission(path: Path) -> NotebookNode:
    """The notebook at `path`, or CorruptNotebook naming what is wrong with the file."""
    size = path.stat().st_size
    if size > MAX_NOTEBOOK_BYTES:
        raise CorruptNotebook(f"the file is {size} bytes (limit {MAX_NOTEBOOK_BYTES})")
    data = path.read_bytes()
    try:
        raw = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CorruptNotebook(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise CorruptNotebook(f"not valid JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        raise CorruptNotebook("JSON nested too deeply to be a notebook") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise CorruptNotebook("valid JSON but not a Jupyter notebook (no list of cells)")
    if raw.get("nbformat") != 4:
        raise CorruptNotebook(f"nbformat {raw.get('nbformat')!r} (the course uses version 4)")
    try:
        return nbformat.from_dict(_fix_structure(raw))
    except Exception as exc:  # nbformat raises assorted errors on odd structures
        raise CorruptNotebook(f"not a readable notebook ({type(exc).__name__}: {exc})") from None


def _fix_structure(raw: dict[str, Any]) -> dict[str, Any]:
    """Fill in what nbformat requires of each cell (a hand-edited file often lacks it)."""
    cells = []
    for cell in raw["cells"]:
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            raise CorruptNotebook(f"a cell that is not a notebook cell: {str(cell)[:80]!r}")
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(str(s) for s in source)
        if not isinstance(source, str):
            raise CorruptNotebook(f"a cell whose source is a {type(source).__name__}")
        meta = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        fixed: dict[str, Any] = {
            "cell_type": cell["cell_type"],
            "metadata": meta,
            "source": source,
        }
        fixed["id"] = cell["id"] if isinstance(cell.get("id"), str) else uuid.uuid4().hex[:12]
        if cell["cell_type"] == "code":
            fixed["outputs"], fixed["execution_count"] = [], None
        elif isinstance(cell.get("attachments"), dict):
            fixed["attachments"] = cell["attachments"]
        cells.append(fixed)
    meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    return {"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}


# -- repairing -------------------------------------------------------------------------------


def _cell_id(name: str) -> str:
    return name.replace("_", "-")


def _claim(cell: NotebookNode, by_name: dict[str, CellSpec], by_id: dict[str, str]) -> str | None:
    """The grade_id a submitted cell stands for: its own, else the one its cell id names."""
    nbg = cell.metadata.get("nbgrader")
    gid = nbg.get("grade_id") if isinstance(nbg, dict) else None
    if isinstance(gid, str) and gid in by_name:
        return gid
    return by_id.get(cell.get("id", ""))


def _set_type(cell: NotebookNode, cell_type: str) -> None:
    cell.cell_type = cell_type
    if cell_type == "code":
        cell.outputs, cell.execution_count = [], None
        cell.pop("attachments", None)
    else:
        cell.pop("outputs", None)
        cell.pop("execution_count", None)


def _new_cell(spec: CellSpec) -> NotebookNode:
    cell: dict[str, Any] = {
        "cell_type": spec.cell_type,
        "id": _cell_id(spec.name),
        "metadata": {"nbgrader": spec.metadata()},
        "source": spec.source,
    }
    if spec.cell_type == "code":
        cell["outputs"], cell["execution_count"] = [], None
    return nbformat.from_dict(cell)


def repair(nb: NotebookNode, spec: LessonSpec) -> tuple[NotebookNode, list[str]]:
    """Give every lesson cell its nbgrader metadata back; restore deleted locked/grade cells."""
    flags: list[str] = []
    by_name = spec.by_name()
    by_id = {_cell_id(n): n for n in by_name} | {n: n for n in by_name}
    claims: dict[str, list[int]] = {}
    for index, cell in enumerate(nb.cells):
        gid = _claim(cell, by_name, by_id)
        nbg = cell.metadata.get("nbgrader")
        if gid is None and nbg is not None:
            old = nbg.get("grade_id") if isinstance(nbg, dict) else None
            flags.append(f"unknown_cell:{old}" if isinstance(old, str) else "bad_metadata")
            del cell.metadata["nbgrader"]
        if gid is not None:
            claims.setdefault(gid, []).append(index)
    for gid, indices in claims.items():
        for index in indices[:-1]:  # like nbgrader's DeduplicateIds: the last copy counts
            nb.cells[index].metadata.pop("nbgrader", None)
            flags.append(f"duplicate_cell:{gid}")
        cell, want = nb.cells[indices[-1]], by_name[gid]
        if cell.cell_type != want.cell_type:
            _set_type(cell, want.cell_type)
            flags.append(f"cell_retyped:{gid}")
        nbg = cell.metadata.get("nbgrader")
        have = (
            {k: v for k, v in nbg.items() if k not in ("checksum", "cell_type")}
            if isinstance(nbg, dict)
            else None
        )
        if have != want.metadata():
            flags.append(f"metadata_changed:{gid}")
        cell.metadata["nbgrader"] = want.metadata()
    flags += _restore_missing(nb, spec, set(claims))
    _unique_ids(nb)
    nbformat.validate(nb)
    return nb, flags


def _restore_missing(nb: NotebookNode, spec: LessonSpec, present: set[str]) -> list[str]:
    """Insert deleted locked and grade cells after the nearest earlier lesson cell."""
    flags = []
    for pos, want in enumerate(spec.cells):
        if want.name in present:
            continue
        if not (want.locked or want.grade):
            flags.append(f"cell_deleted:{want.name}")
            continue
        index = 0
        for earlier in reversed(spec.cells[:pos]):
            if earlier.name in present:
                index = 1 + max(
                    i
                    for i, c in enumerate(nb.cells)
                    if c.metadata.get("nbgrader", {}).get("grade_id") == earlier.name
                )
                break
        nb.cells.insert(index, _new_cell(want))
        present.add(want.name)
        flags.append(f"cell_restored:{want.name}")
    return flags


def _unique_ids(nb: NotebookNode) -> None:
    seen: set[str] = set()
    for cell in nb.cells:
        cid = cell.get("id")
        if not isinstance(cid, str) or not re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", cid) or cid in seen:
            cid = uuid.uuid4().hex[:12]
            cell["id"] = cid
        seen.add(cid)


# -- feedback --------------------------------------------------------------------------------


def _scrub(text: str, secrets: Iterable[str]) -> str:
    secrets = tuple(secrets)
    lines = text.splitlines(keepends=True)
    return "".join(
        "[line removed: it quotes a hidden test]\n" if any(s in line for s in secrets) else line
        for line in lines
    )


def _visible_source(source: str) -> str:
    out, inside, cut = [], False, False
    for line in source.splitlines():
        s = line.strip()
        if s.startswith(BEGIN_HIDDEN):
            inside, cut = True, True
        elif s.startswith(END_HIDDEN):
            inside = False
        elif not inside:
            out.append(line)
    if cut:
        out.append(HIDDEN_NOTE)
    return "\n".join(out)


def strip_hidden_tests(nb: NotebookNode, spec: LessonSpec) -> NotebookNode:
    """A copy of an autograded notebook fit for feedback: no hidden-test source or quotes of it."""
    nb = nbformat.from_dict(nb)
    secrets = spec.hidden_lines()
    for cell in nb.cells:
        has_hidden = BEGIN_HIDDEN in cell.source
        cell.source = _visible_source(cell.source)
        if has_hidden:  # displays made while hidden tests ran (values they computed) are dropped
            cell.outputs = [o for o in cell.outputs if o.output_type in ("stream", "error")]
        for out in cell.get("outputs", []):
            if out.output_type == "error":
                evalue = _scrub(str(out.get("evalue", "")), secrets).strip()
                text = "\n".join(str(t) for t in out.get("traceback", []))
                if has_hidden or any(s in text for s in secrets):
                    out.evalue = evalue
                    out.traceback = [
                        f"{out.ename}: {evalue}",
                        "(traceback removed from feedback: it would quote hidden tests)",
                    ]
            elif out.output_type == "stream":
                out.text = _scrub(out.text, secrets)
            elif "data" in out:
                for mime, value in list(out.data.items()):
                    if mime.startswith("text/") or mime == "application/json":
                        text = value if isinstance(value, str) else json.dumps(value)
                        if any(s in text for s in secrets):
                            out.data[mime] = _scrub(text, secrets)
    return nb
