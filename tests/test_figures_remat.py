"""Tests for course_lib.figures.remat (pipe05's figures): each draws the numbers it is given."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes

from course_lib.figures.one_f_one_b import lifetime_bars
from course_lib.figures.remat import (
    GIB,
    frontier_plot,
    mark_first_backward,
    plan_counts,
    recompute_errors,
    stage_stash_bars,
    update_choice,
    update_frontier,
)
from course_lib.pipeline import gpipe, one_f_one_b, simulate


def _by_gid(ax: Axes) -> dict[str, object]:
    artists = [*ax.collections, *ax.lines, *ax.texts, *ax.patches]
    return {a.get_gid(): a for a in artists if a.get_gid()}


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


@pytest.mark.parametrize("make, p, m, stage", [(one_f_one_b, 4, 8, 0), (one_f_one_b, 4, 8, 2),
                                               (gpipe, 3, 4, 1), (one_f_one_b, 1, 3, 0)])  # fmt: skip
def test_first_backward_marks_what_is_held_and_what_it_takes(make, p, m, stage):
    """The dotted line sits at the stage's first backward's start (s, as lifetime_bars draws); the label names the
    microbatch it takes and the newest stash held then, counted from the simulated forwards."""
    run = simulate(make(p, m), 1e-3, 2e-3)
    fig = lifetime_bars({"run": run}, stage)
    ax = mark_first_backward(fig.axes[0], run, stage)
    ev = run.events[run.events.stage == stage]
    first = ev[ev.kind == "B"].sort_values("start").iloc[0]
    held = ev[(ev.kind == "F") & (ev.start <= first.start)].microbatch
    g = _by_gid(ax)
    assert g["first_backward"].get_xdata()[0] == pytest.approx(first.start)
    assert ax.get_xlim()[1] < 2 * run.makespan  # drawn on the panel's own time axis
    label = g["first_backward_label"].get_text()
    assert f"{len(held)} held" in label
    assert f"takes mb {first.microbatch}'s" in label and f"(mb {held.max()}'s)" in label
    assert len(held) == run.peak_in_flight[stage]  # 1F1B and GPipe peak at the first backward
    assert ax.get_title(loc="left").endswith("after each bar: how long it is held")
    assert ax.get_title(loc="left").startswith(f"run, stage {stage}")  # lifetime_bars' title kept


def test_first_backward_refuses_a_stage_without_backwards():
    run = simulate(one_f_one_b(2, 2), 1.0, 2.0)
    with pytest.raises(ValueError, match="stage 5"):
        mark_first_backward(plt.gca(), run, 5)


def test_recompute_errors_bars_nonzero_and_marks_exact_zeros():
    """Nonzero errors are bars of that height (above the floor), exact zeros are markers on the
    floor; a mode with only zeros gets no bars and a legend entry saying 0."""
    errors = {"advance": [0.5, 0.2, 0.3], "reseed": [0.0, 0.4, 0.1], "restore": [0.0, 0.0, 0.0]}
    ax = recompute_errors(errors)
    groups = _by_gid(ax)
    bars = [p for p in ax.patches if p.get_gid() == "bars:advance"]
    floor = ax.get_ylim()[0]
    assert [b.get_y() for b in bars] == pytest.approx([floor] * 3)
    assert [b.get_y() + b.get_height() for b in bars] == pytest.approx([0.5, 0.2, 0.3])
    assert len(groups["zeros:reseed"].get_offsets()) == 1
    assert len(groups["zeros:restore"].get_offsets()) == 3
    assert not [p for p in ax.patches if p.get_gid() == "bars:restore"]
    assert ax.get_yscale() == "log"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(label.endswith(": 0") for label in labels)


def test_stage_stash_bars_heights_are_gib():
    per = {
        "none": [4 * GIB, 3 * GIB],
        "selective": [GIB, 0.75 * GIB],
        "full": [0.5 * GIB, 0.25 * GIB],
    }
    ax = stage_stash_bars(per, capacity=2 * GIB)
    for policy, values in per.items():
        heights = [p.get_height() for p in ax.patches if p.get_gid() == f"stash:{policy}"]
        assert heights == pytest.approx([v / GIB for v in values])
    assert _by_gid(ax)["capacity"].get_ydata()[0] == pytest.approx(2.0)


def test_frontier_plot_and_update_move_every_artist():
    """The points, staircase, budget and star are drawn at GiB and percent; update_frontier moves
    them to new data (the explorer's path); the bytes axis spans the plans."""
    points = np.array([[GIB, 0.2], [2 * GIB, 0.1], [4 * GIB, 0.0]])
    frontier = points.copy()
    labels = {"full": (GIB, 0.2), "none": (4 * GIB, 0.0)}
    ax = frontier_plot(points, frontier, 3 * GIB, (2 * GIB, 0.1), labels=labels)
    g = _by_gid(ax)
    assert np.allclose(g["plans"].get_offsets(), [[1, 20], [2, 10], [4, 0]])
    assert np.allclose(g["chosen"].get_offsets(), [[2, 10]])
    assert g["budget"].get_xdata()[0] == pytest.approx(3.0)
    assert ax.get_xscale() == "log"
    update_frontier(ax, points * [2, 1], frontier * [2, 1], labels)
    update_choice(ax, 0.5 * GIB, None)
    assert np.allclose(g["plans"].get_offsets(), [[2, 20], [4, 10], [8, 0]])
    assert len(g["chosen"].get_offsets()) == 0
    assert g["budget"].get_xdata()[0] == pytest.approx(0.5)
    assert ax.get_xlim()[0] == pytest.approx(2 / 1.6)  # the bytes axis spans the plans
    assert np.allclose(g["policy:none"].get_offsets(), [[4, 0]])
    label = g["label:full"]  # beside its point, above the star (which may sit on the same plan)
    assert label.xy == (1.0, 20.0) and label.get_zorder() > g["chosen"].get_zorder()
    assert label.xyann[0] >= 10  # points to the right: clear of the star's 220-pt² marker


def test_plan_counts():
    assert plan_counts((0, 1, 1, 2, 2, 2)) == (1, 2, 3)
    assert plan_counts((2, 2)) == (0, 0, 2)
