"""`course lab`: lessons reach work/, and a learner's edits are never overwritten."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from course_lib.machinery import cli


def _course(tmp_path: Path, lessons: list[str]) -> Path:
    (tmp_path / "notebooks").mkdir()
    for lesson in lessons:
        (tmp_path / "notebooks" / f"{lesson}.py").write_text("# %%\n")
        (tmp_path / "release" / lesson).mkdir(parents=True)
        (tmp_path / "release" / lesson / f"{lesson}.ipynb").write_text(f'{{"v": "{lesson}"}}')
    shutil.copy(Path(__file__).parents[1] / "nbgrader_config.py", tmp_path)
    return tmp_path


def test_copy_new_lessons_keeps_learner_edits(tmp_path: Path) -> None:
    course = _course(tmp_path, ["cost01_a", "pipe02_b"])
    work = course / "work"
    added = cli.copy_new_lessons(course, work)
    assert sorted(p.relative_to(work).as_posix() for p in added) == [
        "cost01_a/cost01_a.ipynb",
        "pipe02_b/pipe02_b.ipynb",
    ]
    mine = work / "cost01_a" / "cost01_a.ipynb"
    mine.write_text("my edits")
    _course_more = course / "notebooks" / "cost02_c.py"
    _course_more.write_text("# %%\n")
    (course / "release" / "cost02_c").mkdir()
    (course / "release" / "cost02_c" / "cost02_c.ipynb").write_text("{}")
    added = cli.copy_new_lessons(course, work)
    assert [p.name for p in added] == ["cost02_c.ipynb"], "only the new lesson is added"
    assert mine.read_text() == "my edits"


def test_lab_subcommand_copies_without_starting(tmp_path: Path, monkeypatch, capsys) -> None:
    course = _course(tmp_path, ["cost01_a"])
    monkeypatch.chdir(course)
    monkeypatch.delenv("COURSE_ROOT", raising=False)
    assert cli.main(["lab", "--no-start"]) == 0
    assert (course / "work" / "cost01_a" / "cost01_a.ipynb").is_file()
    assert "1 new lessons copied" in capsys.readouterr().out


def test_lab_command_line(tmp_path: Path) -> None:
    cmd = cli.lab_command(tmp_path, ["--no-browser"])
    assert cmd[1:4] == ["-m", "jupyter", "lab"]
    assert f"--ServerApp.root_dir={tmp_path}" in cmd and cmd[-1] == "--no-browser"
    assert ("--allow-root" in cmd) == (os.geteuid() == 0)
