"""The learner's path in a real browser: START_HERE, the exemplar lessons, their checks, Validate.

One JupyterLab (started as `course lab` starts it) serves a temporary learner's work/: the two
exemplar lessons answered the way a learner who solved every exercise would have them (solution
cells filled in from source/, grade cells as released: visible checks only), and START_HERE.
Headless Debian Chromium opens the notebooks and works through them with the UI: menus, toolbar,
keyboard, sliders. Screenshots go to test-output/browser/ (git-ignored); look at them.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from course_lib.machinery import home
from course_lib.machinery.grading import fill_cells, solution_sources
from tests.browser import harness
from tests.browser.harness import ERROR_WIDGET, OUTPUT, ROOT, Notebook

pytestmark = pytest.mark.browser

LESSONS = ("cost01_critical_path", "pipe02_fill_drain")
# The lessons each test broke on purpose (filled by test_lesson_in_browser, read by the last test).
BROKEN: dict[str, str] = {}


def _answered(lesson: str) -> nbformat.NotebookNode:
    """The released lesson with every solution cell filled in as a learner who solved it would."""
    release = nbformat.read(ROOT / "release" / lesson / f"{lesson}.ipynb", as_version=4)
    source = nbformat.read(ROOT / "source" / lesson / f"{lesson}.ipynb", as_version=4)
    return fill_cells(release, solution_sources(source))


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A learner's work/ holding the exemplar lessons, answered, and START_HERE.

    Only the exemplars, so that the time START_HERE's `course progress` cell takes does not grow
    with the course (tests/test_cli.py and tests/test_home.py cover what `course lab` copies).
    """
    shutil.rmtree(OUTPUT, ignore_errors=True)
    OUTPUT.mkdir(parents=True)
    folder = tmp_path_factory.mktemp("learner") / "work"
    for lesson in LESSONS:
        if not (ROOT / "release" / lesson / f"{lesson}.ipynb").is_file():
            pytest.fail(f"{lesson} has no release/ notebook: run `course build {lesson}`")
        path = home.lesson_path(folder, lesson)
        path.parent.mkdir(parents=True)
        nbformat.write(_answered(lesson), path)
    assert home.write_home(folder).status == "created"
    return folder


@pytest.fixture(scope="module")
def lab(work: Path) -> Iterator[harness.Lab]:
    with harness.jupyter_lab(work, OUTPUT / "jupyterlab.log") as server:
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with harness.chromium() as context:
        yield context


@pytest.fixture
def page(browser, request: pytest.FixtureRequest):
    """A fresh tab; uncaught page errors fail the test, the console log is saved."""
    tab = browser.new_page()
    console: list[str] = []
    errors: list[str] = []
    tab.on("console", lambda m: console.append(f"[{m.type}] {m.text}"))
    tab.on("pageerror", lambda e: errors.append(str(e)))
    yield tab
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    (OUTPUT / f"console-{name}.log").write_text("\n".join(console + errors) + "\n")
    tab.close()
    assert not errors, f"uncaught errors in the page: {errors}"


def _grade_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [
        c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")
    ]


def _wrong_answer(nb: nbformat.NotebookNode) -> tuple[str, str, str]:
    """(first line of a solution cell, the name it assigns, a wrong answer a learner might type).

    The first solution cell that assigns a plain name at top level and is followed by a grade cell;
    the wrong answer is that name set to the string "42" (a number typed in quotes).
    """
    cells = nb.cells
    for cell, after in zip(cells, cells[1:], strict=False):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("solution"):
            continue
        if not after.metadata.get("nbgrader", {}).get("grade"):
            continue
        for stmt in ast.parse(cell.source).body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
                name = stmt.targets[0].id
                first = next(line for line in cell.source.splitlines() if line.strip())
                return first, name, f'{name} = "42"\n'
    raise AssertionError("no solution cell assigns a plain name; cannot try a wrong answer")


def _validate(nb: Notebook, timeout: float = 120_000) -> tuple[str, float]:
    """Click Validate in the notebook toolbar; returns the dialog's text and the seconds it took."""
    start = time.monotonic()
    nb.panel.locator(".validate-button").click()
    dialog = nb.page.locator(".jp-Dialog")
    dialog.wait_for(timeout=timeout)
    nb.page.wait_for_timeout(300)
    return dialog.inner_text(), time.monotonic() - start


def _close_dialog(nb: Notebook, name: str) -> None:
    nb.shot(name)
    nb.page.locator(".jp-Dialog button", has_text=re.compile("^(Ok|OK)$")).click()
    nb.page.locator(".jp-Dialog").wait_for(state="detached")


def test_learner_sees_no_instructor_ui(lab: harness.Lab, page) -> None:
    """A learner's lab has Validate but no formgrader, exchange lists or instructor menus."""
    assert lab.get("/nbgrader_version?version=0.9.6")[0] == 200, "Validate's server extension"
    for path in ("/formgrader", "/assignments", "/courses"):
        assert lab.get(path)[0] == 404, f"{path} is an instructor/exchange page; learners get 404"
    page.goto(lab.url("START_HERE.ipynb"))
    page.locator(".jp-NotebookPanel .jp-MarkdownCell").first.wait_for(timeout=60_000)
    page.wait_for_timeout(1000)
    menus = page.locator(".lm-MenuBar-itemLabel").all_inner_texts()
    assert "Run" in menus and "Nbgrader" not in menus, menus
    assert page.locator(".validate-button").count() == 1, "the Validate button is in the toolbar"
    assert page.locator(".jp-Dialog").count() == 0, page.locator(".jp-Dialog").all_inner_texts()
    right = " ".join(page.locator(".jp-SideBar.jp-mod-right .lm-TabBar-tab").all_inner_texts())
    titles = page.locator(".jp-SideBar .lm-TabBar-tab").evaluate_all(
        "tabs => tabs.map(t => t.getAttribute('title') || t.textContent)"
    )
    assert not any("Create Assignment" in t or "nbgrader" in t.lower() for t in titles), titles
    assert "Create Assignment" not in right
    page.screenshot(path=str(OUTPUT / "lab-learner-ui.png"))


def test_start_here(lab: harness.Lab, page, work: Path) -> None:
    """START_HERE shows both modules, every lesson with claim and time, questions and links."""
    nb = Notebook(page, lab, home.HOME_NAME, OUTPUT / "start_here").open()
    nb.shot("01-top")
    text = nb.panel.text_content()
    for module in home.MODULES:
        assert module.title in text and module.objective in text
        for lesson in module.lessons:
            assert lesson.claim in text, lesson.id
    assert "Begin with a question" in text and "How to check your answers" in text
    for question in home.QUESTIONS:
        assert question.text in text
    for lesson in LESSONS:
        link = nb.panel.locator(f'.jp-MarkdownCell a[href*="{lesson}/{lesson}.ipynb"]')
        assert link.count() >= 1, f"no link to {lesson}"
    # The last cell runs `course progress`: the answered exemplar lessons pass every visible check.
    seconds = nb.run_all(timeout=300_000)
    table = nb.panel.locator(".jp-OutputArea-output table").last
    table.wait_for()
    rows = table.locator("tbody tr").all_text_contents()
    for lesson in LESSONS:
        row = next((r for r in rows if lesson in r), None)
        assert row is not None and "complete" in row, (lesson, rows)
    (OUTPUT / "start_here" / "timings.json").write_text(json.dumps({"progress_cell_s": seconds}))
    nb.shot("02-progress-cell", table)
    for cell_index, name in ((1, "03-questions"), (2, "04-module1"), (3, "05-module2")):
        nb.shot(name, nb.cells().nth(cell_index))
    nb.shot("06-how-to-check", nb.cells().nth(4))
    # A lesson link opens the lesson in JupyterLab.
    link = nb.panel.locator(
        '.jp-MarkdownCell a[href*="cost01_critical_path/cost01_critical_path.ipynb"]'
    )
    link.first.scroll_into_view_if_needed()
    link.first.click()
    tab = page.locator(".lm-TabBar-tab", has_text="cost01_critical_path.ipynb")
    tab.wait_for(timeout=30_000)
    nb.shot("07-link-opened")


@pytest.mark.parametrize("lesson", LESSONS)
def test_lesson_in_browser(lesson: str, lab: harness.Lab, page, work: Path) -> None:
    """Run a lesson as a learner: figures, explorer, checks pass and fail readably, Validate."""
    shots = OUTPUT / lesson
    path = home.lesson_path(work, lesson)
    saved = nbformat.read(path, as_version=4)
    entry = next(x for x in home.all_lessons() if x.id == lesson)
    timings: dict[str, object] = {}
    nb = Notebook(page, lab, f"{lesson}/{lesson}.ipynb", shots).open()

    # First screen: title with the claim, objective, time, what you need.
    first = nb.cells().first
    first_text = first.text_content()
    nb.shot("01-first-screen")
    problems = [
        f"missing {what!r}"
        for what, ok in (
            ("claim", entry.claim in first_text),
            ("objective", entry.objective in " ".join(first_text.split())),
            ("Time", "Time" in first_text),
            ("What you need", "what you need" in first_text.lower()),
        )
        if not ok
    ]
    assert not problems, f"{lesson} first cell: {problems}"

    # Run all, as a learner does: every code cell runs, nothing fails.
    timings["run_all_s"] = round(nb.run_all(), 2)
    prompts = [
        p.strip() for p in nb.panel.locator(".jp-CodeCell .jp-InputPrompt").all_text_contents()
    ]
    not_run = [i for i, p in enumerate(prompts) if not re.fullmatch(r"\[\d+\]:", p)]
    assert not not_run, (
        f"code cells that did not run (an earlier cell failed?): {not_run} {prompts}"
    )
    assert nb.panel.get_by_text(ERROR_WIDGET).count() == 0, "a widget failed to display"

    # Figures render as images.
    figures = nb.panel.locator(".jp-RenderedImage img")
    assert figures.count() >= 1, "no figure rendered"
    sizes = figures.evaluate_all("imgs => imgs.map(i => [i.naturalWidth, i.naturalHeight])")
    assert all(w > 50 and h > 50 for w, h in sizes), f"figures that did not load: {sizes}"
    nb.shot("02-figure", nb.panel.locator(".jp-RenderedImage:has(img)").first)

    # Explorers: each renders, and each slider change redraws the plot.
    explorers = nb.panel.locator(".jp-OutputArea-output", has=page.locator("img.widget-image"))
    assert explorers.count() >= 1, "no explorer (ipywidgets Image) rendered"
    latencies = []
    for e in range(explorers.count()):
        explorer = explorers.nth(e)
        image = explorer.locator("img.widget-image").first
        nb.shot(f"03-explorer{e}-before", explorer)
        handles = explorer.locator(".noUi-handle")
        assert handles.count() >= 1, "the explorer has no slider"
        for s in range(handles.count()):
            handle = handles.nth(s)
            value = handle.get_attribute("aria-valuenow")
            src, pixels = image.get_attribute("src"), image.screenshot()
            key = "Home" if value == handle.get_attribute("aria-valuemax") else "End"
            start = time.monotonic()
            handle.focus()
            page.keyboard.press(key)
            page.wait_for_function(
                "([img, src]) => img.getAttribute('src') !== src",
                arg=[image.element_handle(), src],
                timeout=15_000,
            )
            latencies.append(round((time.monotonic() - start) * 1e3, 1))
            page.wait_for_timeout(200)
            assert handle.get_attribute("aria-valuenow") != value, "the slider did not move"
            assert image.screenshot() != pixels, "the plot looks the same after the slider moved"
            nb.shot(f"04-explorer{e}-slider{s}-{key.lower()}", explorer)
    timings["slider_to_new_image_ms"] = latencies
    assert nb.panel.get_by_text(ERROR_WIDGET).count() == 0

    # Visible checks print a readable pass message, one per autograded exercise.
    grade_cells = _grade_cells(saved)
    passes = nb.panel.locator(".jp-OutputArea-output", has_text=re.compile(r"✔ Exercise"))
    assert passes.count() == len(grade_cells), (
        f"{passes.count()} ✔ messages for {len(grade_cells)} check cells"
    )
    nb.shot("05-check-passes", passes.first)

    # Validate (saves, then runs the whole notebook on the server): all pass.
    text, seconds = _validate(nb)
    timings["validate_pass_s"] = round(seconds, 2)
    assert "Success! Your notebook passes all the tests." in text, text[:2000]
    _close_dialog(nb, "06-validate-success")

    # A wrong answer: the check says what is wrong, readably.
    first_line, name, wrong = _wrong_answer(saved)
    index = nb.cell_index(first_line)
    answer, check = nb.cells().nth(index), nb.cells().nth(index + 1)
    answer.scroll_into_view_if_needed()
    answer.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(wrong)
    page.keyboard.press("Shift+Enter")  # runs the answer, moves to its check cell
    page.keyboard.press("Shift+Enter")  # runs the check
    nb.wait_idle()
    error = check.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
    error.first.wait_for()
    last = [line for line in error.first.inner_text().splitlines() if line.strip()][-1]
    assert re.match(rf"AnswerError: {re.escape(name)}\b.*\S", last), last
    nb.shot("07-check-fails", check)
    BROKEN[lesson] = name

    # Validate again: it names the failing check.
    text, seconds = _validate(nb)
    timings["validate_fail_s"] = round(seconds, 2)
    assert "failed" in text and "AnswerError" in text, text[:2000]
    _close_dialog(nb, "08-validate-failure")

    # Last screen: takeaways, three to five points.
    takeaways = nb.panel.locator(".jp-MarkdownCell", has=page.locator("h2", has_text="Takeaways"))
    assert takeaways.count() == 1, "no '## Takeaways' cell"
    takeaways.scroll_into_view_if_needed()
    points = takeaways.locator("li").count()
    nb.shot("09-takeaways", takeaways)
    assert 3 <= points <= 5, f"takeaways has {points} points (3 to 5 expected)"
    (shots / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")


def test_start_here_counts_saved_progress(lab: harness.Lab, page, work: Path) -> None:
    """After working in the browser, START_HERE's progress is what the learner saved."""
    if set(BROKEN) != set(LESSONS):
        pytest.skip("needs test_lesson_in_browser to have run for every exemplar lesson first")
    table = home.saved_progress(work, LESSONS).set_index("lesson")
    for lesson in LESSONS:
        row = table.loc[lesson]
        assert row["failed"] == 1, (lesson, row.to_dict())  # the wrong answer typed above
        assert row["passed"] == row["exercises"] - 1, (lesson, row.to_dict())
    assert home.write_home(work).status == "updated"
    nb = Notebook(page, lab, home.HOME_NAME, OUTPUT / "start_here").open()
    module2 = nb.cells().nth(3)
    # What the learner sees: the rendered table, scrolled into view (JupyterLab skips rendering
    # cells outside the viewport, and innerText is empty there).
    module1 = nb.cells().nth(2).locator(".jp-RenderedMarkdown")
    module1.scroll_into_view_if_needed()
    module1.filter(has_text="failing").wait_for(timeout=30_000)
    assert "failing" in module1.inner_text()
    nb.shot("08-progress-after-work-module1", nb.cells().nth(2))
    nb.shot("09-progress-after-work-module2", module2)
