"""Tests for course_lib.figures.schedule_grid (pipeline schedule grids)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.colors import to_hex

from course_lib.figures.pipeline import IDLE_COLOUR, SCHEDULE_COLOURS, schedule_grid
from course_lib.pipeline import Action, Schedule, gpipe, one_f_one_b, simulate


def _groups(ax: Axes) -> dict[str, object]:
    return {c.get_gid(): c for c in ax.collections if c.get_gid()}


@pytest.mark.parametrize("generator", [gpipe, one_f_one_b])
@pytest.mark.parametrize("p, m", [(4, 8), (1, 1), (1, 5), (5, 1), (8, 32)])
def test_one_bar_group_per_rank_and_kind(generator, p, m):
    """Each rank has an idle background spanning the makespan and one box group per kind, holding
    exactly that rank's actions of that kind at their simulated start and width; ranks top-down."""
    timeline = simulate(generator(p, m), 1.0, 2.0)
    ax = schedule_grid(timeline)
    try:
        assert isinstance(ax, Axes)
        groups = _groups(ax)
        events = timeline.events
        for rank in range(p):
            background = groups[f"rank{rank}:idle"]
            assert to_hex(background.get_facecolor()[0]) == IDLE_COLOUR
            (x0, x1), _ = _extent(background)
            assert (x0, x1) == (0.0, timeline.makespan)
            for kind in "FB":
                boxes = groups[f"rank{rank}:{kind}"]
                mine = events[(events["rank"] == rank) & (events["kind"] == kind)]
                assert len(boxes.get_paths()) == len(mine)
                lefts = sorted(path.vertices[:, 0].min() for path in boxes.get_paths())
                assert lefts == pytest.approx(sorted(mine["start"]))
                assert to_hex(boxes.get_facecolor()[0]) == SCHEDULE_COLOURS[kind].lower()
                (_, _), (y0, y1) = _extent(boxes)
                assert y0 < rank < y1
        assert ax.get_ylim()[0] > ax.get_ylim()[1]  # inverted: rank 0 on top
        assert [t.get_text() for t in ax.get_yticklabels()] == [f"rank {r}" for r in range(p)]
        assert ax.get_xlabel() == "time (s)"
        assert ax.get_legend() is not None
    finally:
        plt.close(ax.figure)


def _extent(collection) -> tuple[tuple[float, float], tuple[float, float]]:
    vertices = np.concatenate([path.vertices for path in collection.get_paths()])
    return (vertices[:, 0].min(), vertices[:, 0].max()), (
        vertices[:, 1].min(),
        vertices[:, 1].max(),
    )


def test_labels_where_they_fit_and_not_when_crowded():
    """p=4, m=8: every box carries its microbatch index; p=8, m=64 on a small axes: no labels
    (they would not fit), rather than some boxes labelled and others not."""
    ax = schedule_grid(simulate(one_f_one_b(4, 8), 1.0, 2.0))
    try:
        texts = sorted(t.get_text() for t in ax.texts)
        assert texts == sorted([str(j) for j in range(8)] * 8)
    finally:
        plt.close(ax.figure)
    fig, ax = plt.subplots(figsize=(4, 3))
    try:
        schedule_grid(simulate(one_f_one_b(8, 64), 1.0, 2.0), ax=ax)
        assert len(ax.texts) == 0
    finally:
        plt.close(fig)


def test_small_times_use_milliseconds_and_given_axes_and_title():
    """A sub-second makespan is labelled in ms; a given ax and title are used."""
    fig, ax = plt.subplots()
    try:
        out = schedule_grid(simulate(gpipe(2, 2), 1e-3, 2e-3), ax=ax, title="tiny")
        assert out is ax
        assert ax.get_xlabel() == "time (ms)"
        assert ax.get_title(loc="left") == "tiny"
    finally:
        plt.close(fig)


def test_weight_actions_get_their_own_colour_and_legend_entry():
    """Split-backward schedules draw W boxes in the W colour and name B the input gradient."""
    a = Action
    schedule = Schedule(
        1,
        2,
        1,
        ((a("F", 0, 0), a("B", 0, 0), a("F", 0, 1), a("B", 0, 1), a("W", 0, 0), a("W", 0, 1)),),
    )
    ax = schedule_grid(simulate(schedule, 1.0, 1.0, 0.5))
    try:
        groups = _groups(ax)
        assert len(groups["rank0:W"].get_paths()) == 2
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert labels == ["forward (F)", "input grad (B)", "weight grad (W)", "idle"]
    finally:
        plt.close(ax.figure)


def test_default_title_names_schedule_and_idle_fraction():
    """The default title states the schedule, its shape and the idle fraction."""
    ax = schedule_grid(simulate(gpipe(4, 8), 1.0, 2.0))
    try:
        assert (
            ax.get_title(loc="left") == "GPipe: 4 stages, 8 microbatches — idle 27.3% of rank-time"
        )
    finally:
        plt.close(ax.figure)
