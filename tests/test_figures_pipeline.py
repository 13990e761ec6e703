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


# --- pipe02's figures: anatomy, two bubbles, stashes ---------------------------------


def test_fill_drain_critical_path_is_the_chain_that_spans_the_step():
    """The 2(m + p - 1) path actions run back to back from 0 to the makespan (no action waits)."""
    from course_lib.figures.pipeline import fill_drain_critical_path

    for p, m in [(4, 8), (1, 3), (5, 1), (3, 2)]:
        path = fill_drain_critical_path(p, m)
        assert len(path) == 2 * (m + p - 1) and len(set(path)) == len(path)
        timeline = simulate(gpipe(p, m), 1.0, 2.0)
        rows = timeline.events.set_index(["kind", "stage", "microbatch"]).loc[path]
        starts, ends = rows["start"].to_numpy(), rows["end"].to_numpy()
        assert starts[0] == 0.0 and ends[-1] == pytest.approx(timeline.makespan)
        assert starts[1:] == pytest.approx(ends[:-1])


def test_fill_drain_anatomy_outlines_the_path_and_names_the_idle():
    """Path boxes are redrawn on top (one per path action, black edges); the rest is faded; the
    three idle triangles and the two spans are labelled with the step's numbers."""
    from course_lib.figures.pipeline import fill_drain_anatomy

    timeline = simulate(gpipe(4, 8), 1e-3, 2e-3)
    ax = fill_drain_anatomy(timeline)
    try:
        path = [c for c in ax.collections if c.get_gid().startswith("path:")]
        assert sum(len(c.get_paths()) for c in path) == 22
        assert all(to_hex(c.get_edgecolor()[0]) == "#000000" for c in path)
        faded = [c for c in ax.collections if c.get_gid() in ("rank0:F", "rank3:B")]
        assert faded and all(c.get_alpha() == pytest.approx(0.35) for c in faded)
        idle = sorted(t.get_text() for t in ax.texts if t.get_gid() == "idle-label")
        assert idle == ["drain", "drain F · fill B", "fill"]
        spans = [t.get_text() for t in ax.texts if t.get_gid() == "span-label"]
        assert spans == [
            "m + p − 1 = 11 forwards: 11 ms",
            "m + p − 1 = 11 backwards: 22 ms",
        ]
        where = {t.get_text(): t.get_position() for t in ax.texts if t.get_gid() == "idle-label"}
        assert where["fill"] == pytest.approx((1.5e-3, 3))  # rank 3 waits 3 ms for its input
        assert where["drain"] == pytest.approx((30e-3, 3))  # rank 3 ends 6 ms before rank 0
    finally:
        plt.close(ax.figure)


def test_fill_drain_anatomy_single_stage_and_wrong_schedules():
    """One stage: no idle to name; a schedule with W actions is refused."""
    from course_lib.figures.pipeline import fill_drain_anatomy

    ax = fill_drain_anatomy(simulate(gpipe(1, 3), 1.0, 2.0))
    try:
        assert not [t for t in ax.texts if t.get_gid() == "idle-label"]
    finally:
        plt.close(ax.figure)
    a = Action
    split = Schedule(1, 1, 1, ((a("F", 0, 0), a("B", 0, 0), a("W", 0, 0)),))
    with pytest.raises(ValueError, match="F/B actions only"):
        fill_drain_anatomy(simulate(split, 1.0, 1.0, 0.5))


def test_bubble_curves_draw_both_formulas_and_the_simulator():
    """Solid (p - 1)/(m + p - 1), dashed (p - 1)/m; the circles are simulate()'s own values."""
    from course_lib.figures.pipeline import bubble_curves

    ax = bubble_curves(stage_counts=(4, 16), max_microbatches=64)
    try:
        lines = {line.get_gid(): line for line in ax.get_lines() if line.get_gid()}
        m = lines["idle:p=4"].get_xdata()
        assert m[0] == 1 and m[-1] == 64
        assert lines["idle:p=4"].get_ydata() == pytest.approx(3 / (m + 3))
        assert lines["overhead:p=16"].get_ydata() == pytest.approx(15 / m)
        assert lines["overhead:p=16"].get_linestyle() == "--"
        xs, ys = lines["simulated:p=4"].get_data()
        assert list(xs) == [2, 8, 32, 2, 8, 32]
        expected = [simulate(gpipe(4, k), 1e-3, 2e-3).idle_fraction for k in (2, 8, 32)]
        expected += [simulate(gpipe(4, k), 1e-3, 2e-3).overhead for k in (2, 8, 32)]
        assert list(ys) == pytest.approx(expected)
        notes = [t.get_text() for t in ax.texts]
        assert "p = 4, m = 8:\nidle 27.3%" in notes and "p = 4, m = 8:\noverhead 37.5%" in notes
    finally:
        plt.close(ax.figure)


def test_stash_curves_are_in_flight_with_peaks_and_gib_axis():
    """Each curve is Timeline.in_flight(stage); the legend gives step and peak; GiB on the right."""
    from course_lib.figures.pipeline import stash_curves

    runs = {
        "GPipe": simulate(gpipe(4, 8), 1e-3, 2e-3),
        "1F1B": simulate(one_f_one_b(4, 8), 1e-3, 2e-3),
    }
    ax = stash_curves(runs, stage=0, bytes_per_microbatch=2.125 * 2**30)
    try:
        lines = {line.get_gid(): line for line in ax.get_lines() if line.get_gid()}
        for name, run in runs.items():
            t, count = run.in_flight(0)
            xs, ys = lines[f"stash:{name}"].get_data()
            assert list(xs) == pytest.approx(list(t * 1e3)) and list(ys) == list(count)
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert labels == [
            "GPipe: step 33 ms, peak 8 microbatches",
            "1F1B: step 33 ms, peak 4 microbatches",
        ]
        (right,) = [c for c in ax.child_axes]
        assert right.get_ylabel() == "GiB at 2.125 GiB each"
        assert ax.get_xlabel() == "time (ms)"
    finally:
        plt.close(ax.figure)
