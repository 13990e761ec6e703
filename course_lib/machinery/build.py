"""The one-way build chain: notebooks/<id>.py -> source/<id>/<id>.ipynb -> release/<id>/<id>.ipynb.

jupytext reads the percent-format master; the master's nbgrader metadata is checked here (so a
broken master fails with the lesson, the cell and the problem named); nbgrader's
generate_assignment makes the student version in a throwaway course directory with a throwaway
gradebook. Outputs are written only after every requested lesson built, each file atomically, and
byte for byte the same on every run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import jupytext
import nbformat

NBGRADER_KEYS = {"grade", "grade_id", "locked", "points", "schema_version", "solution", "task"}
GRADE_ID = re.compile(r"^[a-z][a-z0-9_]{2,62}$")
LESSON_ID = re.compile(r"^(cost|pipe)\d\d_[a-z0-9_]+$")
MARKERS = {
    "SOLUTION": ("### BEGIN SOLUTION", "### END SOLUTION"),
    "HIDDEN TESTS": ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"),
}
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
LANGUAGE_INFO = {"name": "python", "pygments_lexer": "ipython3"}


class BuildError(ValueError):
    """A master notebook cannot be built; the message names the lesson, the cell and the problem."""


@dataclass(frozen=True)
class BuildResult:
    """What a build produced (or, with check=True, would change)."""

    lessons: tuple[str, ...]
    written: tuple[Path, ...]
    differing: tuple[Path, ...]


def find_root(start: Path | None = None) -> Path:
    """The course root: the nearest folder above `start` holding nbgrader_config.py and notebooks/."""
    env = os.environ.get("COURSE_ROOT")
    if env:
        return Path(env).resolve()
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "nbgrader_config.py").is_file() and (folder / "notebooks").is_dir():
            return folder
    package_parent = Path(__file__).resolve().parents[2]
    if (package_parent / "nbgrader_config.py").is_file():
        return package_parent
    raise BuildError(
        f"no course root (a folder with nbgrader_config.py and notebooks/) above {here}"
    )


def lesson_ids(root: Path) -> list[str]:
    """Every lesson that has a master in notebooks/, in id order."""
    return sorted(p.stem for p in (root / "notebooks").glob("*.py") if LESSON_ID.match(p.stem))


def _cell_label(index: int, cell: dict, line: int | None) -> str:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    where = f"cell {index}" + (f" (master line {line})" if line else "")
    gid = meta.get("grade_id") if isinstance(meta, dict) else None
    return where + (f" '{gid}'" if gid else "")


def _cell_lines(text: str) -> list[int]:
    """1-based master line number of each `# %%` cell header (jupytext's cell boundaries)."""
    return [i + 1 for i, line in enumerate(text.splitlines()) if line.startswith("# %%")]


def _check_markers(source: str) -> list[str]:
    """Problems with BEGIN/END marker balance and order in one cell's source."""
    problems = []
    for what, (begin, end) in MARKERS.items():
        depth = 0
        for line in source.splitlines():
            stripped = line.strip()
            if stripped.startswith(begin):
                if depth:
                    problems.append(f"nested '{begin}'")
                depth += 1
            elif stripped.startswith(end):
                if not depth:
                    problems.append(f"'{end}' without a matching '{begin}'")
                else:
                    depth -= 1
        if depth:
            problems.append(f"'{begin}' without a matching '{end}'")
        del what
    return problems


def check_master(lesson: str, nb: nbformat.NotebookNode, text: str) -> None:
    """Raise BuildError listing every problem with the master's nbgrader metadata and markers."""
    problems: list[str] = []
    lines = _cell_lines(text)
    seen: dict[str, str] = {}
    for index, cell in enumerate(nb.cells):
        # Text before the first `# %%` (if any) becomes extra leading cells without a header line.
        offset = len(nb.cells) - len(lines)
        line = lines[index - offset] if index >= offset else None
        label = _cell_label(index, cell, line)
        meta = cell.metadata
        if "incorrectly_encoded_metadata" in meta:
            problems.append(
                f"{label}: malformed cell metadata (not valid JSON): "
                f"{meta['incorrectly_encoded_metadata']}"
            )
            continue
        source = cell.source
        marker_problems = _check_markers(source)
        nbg = meta.get("nbgrader")
        if nbg is None:
            if any(m in source for pair in MARKERS.values() for m in pair):
                problems.append(
                    f"{label}: solution/hidden-test markers in a cell without nbgrader metadata"
                )
            problems.extend(f"{label}: {p}" for p in marker_problems)
            continue
        if not isinstance(nbg, dict):
            problems.append(f"{label}: nbgrader metadata must be a JSON object, got {nbg!r}")
            continue
        unknown = set(nbg) - NBGRADER_KEYS
        missing = {"grade", "grade_id", "locked", "schema_version", "solution"} - set(nbg)
        if unknown:
            problems.append(f"{label}: unknown nbgrader keys {sorted(unknown)}")
        if missing:
            problems.append(f"{label}: missing nbgrader keys {sorted(missing)}")
            continue
        if nbg["schema_version"] != 3:
            problems.append(f"{label}: schema_version must be 3, got {nbg['schema_version']!r}")
        for key in ("grade", "locked", "solution", "task"):
            if key in nbg and not isinstance(nbg[key], bool):
                problems.append(f"{label}: '{key}' must be true or false, got {nbg[key]!r}")
        gid = nbg["grade_id"]
        if not isinstance(gid, str) or not GRADE_ID.match(gid):
            problems.append(
                f"{label}: grade_id {gid!r} must be a readable snake_case name "
                "(lower-case letters, digits and _; 3-63 characters)"
            )
        elif gid in seen:
            problems.append(f"{label}: duplicate grade_id '{gid}' (first used in {seen[gid]})")
        else:
            seen[gid] = label
        if nbg.get("grade"):
            points = nbg.get("points")
            if isinstance(points, bool) or not isinstance(points, (int, float)) or points <= 0:
                problems.append(f"{label}: a grade cell needs positive 'points', got {points!r}")
        solution, grade = nbg.get("solution"), nbg.get("grade")
        if cell.cell_type == "code":
            has_solution = MARKERS["SOLUTION"][0] in source
            if solution and not has_solution:
                problems.append(f"{label}: a solution code cell without '### BEGIN SOLUTION'")
            if has_solution and not solution:
                problems.append(
                    f"{label}: '### BEGIN SOLUTION' in a cell that is not a solution cell"
                )
            if MARKERS["HIDDEN TESTS"][0] in source and not (grade and not solution):
                problems.append(f"{label}: hidden tests outside an autograded test cell")
            if grade and not solution and not nbg.get("locked"):
                problems.append(f"{label}: an autograded test cell must be locked")
        elif cell.cell_type == "markdown" and any(
            m in source for pair in MARKERS.values() for m in pair
        ):
            problems.append(f"{label}: solution/hidden-test markers in a markdown cell")
        problems.extend(f"{label}: {p}" for p in marker_problems)
    if problems:
        raise BuildError(f"notebooks/{lesson}.py:\n  " + "\n  ".join(problems))


def read_master(root: Path, lesson: str) -> nbformat.NotebookNode:
    """The instructor notebook for `lesson`: the checked master with stable ids and no stray metadata."""
    path = root / "notebooks" / f"{lesson}.py"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BuildError(f"notebooks/{lesson}.py: cannot read the master ({exc.strerror})") from exc
    try:
        nb = jupytext.reads(text, fmt="py:percent")
    except Exception as exc:  # jupytext raises several types for unparsable text
        raise BuildError(f"notebooks/{lesson}.py: jupytext cannot read it: {exc}") from exc
    check_master(lesson, nb, text)
    nb.metadata = nbformat.from_dict({"kernelspec": KERNELSPEC, "language_info": LANGUAGE_INFO})
    for index, cell in enumerate(nb.cells):
        nbg = cell.metadata.get("nbgrader")
        cell.metadata = nbformat.from_dict({"nbgrader": nbg} if nbg else {})
        cell.id = nbg["grade_id"].replace("_", "-") if nbg else f"{lesson[:6]}-{index:03d}"
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nbformat.validate(nb)
    return nb


def _dumps(nb: nbformat.NotebookNode) -> str:
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def generate_release(
    source_nb: nbformat.NotebookNode, lesson: str, config_root: Path
) -> nbformat.NotebookNode:
    """The student version of `source_nb`, made by nbgrader generate_assignment in a temp course."""
    from course_lib.machinery._nbgrader import course_api, course_config

    with tempfile.TemporaryDirectory(prefix="course-build-") as tmp:
        course = Path(tmp)
        (course / "source" / lesson).mkdir(parents=True)
        (course / "source" / lesson / f"{lesson}.ipynb").write_text(_dumps(source_nb), "utf-8")
        api = course_api(course_config(config_root), course)
        result = api.generate_assignment(lesson, force=True, create=True)
        out = course / "release" / lesson / f"{lesson}.ipynb"
        if not result.get("success") or not out.is_file():
            detail = (result.get("error") or result.get("log") or "").strip().splitlines()
            raise BuildError(
                f"notebooks/{lesson}.py: nbgrader generate_assignment failed: "
                + (detail[-1] if detail else "no release notebook written")
            )
        release = nbformat.read(out, as_version=4)
    release.metadata = nbformat.from_dict(
        {"kernelspec": KERNELSPEC, "language_info": LANGUAGE_INFO}
    )
    for cell in release.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return release


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def build(root: Path, lessons: Sequence[str] | None = None, check: bool = False) -> BuildResult:
    """Run the chain for `lessons` (default: all masters); with check=True write nothing."""
    known = lesson_ids(root)
    wanted = list(lessons) if lessons else known
    unknown = [lesson for lesson in wanted if lesson not in known]
    if unknown:
        raise BuildError(
            f"no master notebooks/<id>.py for {', '.join(unknown)} (known: {', '.join(known)})"
        )
    outputs: dict[Path, str] = {}
    for lesson in wanted:
        source_nb = read_master(root, lesson)
        release_nb = generate_release(source_nb, lesson, root)
        outputs[root / "source" / lesson / f"{lesson}.ipynb"] = _dumps(source_nb)
        outputs[root / "release" / lesson / f"{lesson}.ipynb"] = _dumps(release_nb)
    differing = [
        p for p, text in outputs.items() if not p.is_file() or p.read_text("utf-8") != text
    ]
    if not lessons:
        differing += _orphans(root, known)
    written: list[Path] = []
    if not check:
        for path in differing:
            if path in outputs:
                _write_atomic(path, outputs[path])
                written.append(path)
        remove_orphans(p for p in differing if p not in outputs)
    return BuildResult(tuple(wanted), tuple(written), tuple(differing))


def _orphans(root: Path, known: Iterable[str]) -> list[Path]:
    """Generated files with no master behind them (a deleted or renamed lesson)."""
    known = set(known)
    stray = []
    for top in ("source", "release"):
        for folder in sorted((root / top).glob("*/")):
            if folder.name.startswith("."):
                continue
            if folder.is_dir() and folder.name not in known:
                stray.append(folder)
            elif folder.is_dir():
                expected = {f"{folder.name}.ipynb"}
                stray += [
                    p
                    for p in sorted(folder.iterdir())
                    if p.name not in expected and not p.name.startswith(".")
                ]
    return stray


def remove_orphans(paths: Iterable[Path]) -> None:
    """Delete generated folders/files whose master is gone."""
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
