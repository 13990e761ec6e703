"""Tests for viz.gantt (cost01): what is drawn matches graph.schedule, bar by bar."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_rgba

from course_lib import graph as G
from course_lib import viz
from tests.test_graph import example_step


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def drawn_bars(ax: Axes) -> dict[tuple[str, float, float], tuple[float, ...]]:
    """(lane, start, end) -> RGBA face colour of every bar drawn by broken_barh, read back from
    the polygons' vertices and the y tick labels (the lane names)."""
    lane_at = {
        round(t): lab.get_text()
        for t, lab in zip(ax.get_yticks(), ax.get_yticklabels(), strict=True)
    }
    bars = {}
    for coll in ax.collections:
        if not isinstance(coll, PolyCollection):
            continue
        paths = coll.get_paths()
        faces = coll.get_facecolors()
        faces = np.broadcast_to(faces, (len(paths), 4)) if len(faces) == 1 else faces
        for path, face in zip(paths, faces, strict=True):
            v = path.vertices
            key = (lane_at[round(v[:, 1].mean())], float(v[:, 0].min()), float(v[:, 0].max()))
            assert key not in bars, f"two bars drawn at {key}"
            bars[key] = tuple(face)
    return bars


def expected_bars(sched) -> dict[tuple[str, float, float], str]:
    return {
        (lane, float(s), float(e)): op
        for op, lane, s, e in zip(sched.op, sched.lane, sched.start, sched.end, strict=True)
    }


def test_gantt_draws_a_bar_for_every_op_and_highlights_exactly_the_critical_ops():
    """One bar per op at (lane, start, end); critical ops (schedule's critical column) in the
    critical colour, all others in the muted colour; legend colours match the bars."""
    sched = G.schedule(example_step())
    ax = viz.gantt(sched)
    assert isinstance(ax, Axes)
    bars = drawn_bars(ax)
    want = expected_bars(sched)
    assert set(bars) == set(want)
    crit_rgba = to_rgba(viz.GANTT_CRITICAL_COLOUR)
    other_rgba = to_rgba(viz.GANTT_OTHER_COLOUR)
    highlighted = {want[k] for k, face in bars.items() if face == crit_rgba}
    muted = {want[k] for k, face in bars.items() if face == other_rgba}
    assert highlighted == set(sched.op[sched.critical])
    assert muted == set(sched.op[~sched.critical])
    assert muted == {"allreduce_4", "allreduce_3", "allreduce_2"}
    leg = ax.get_legend()
    legend = {t.get_text(): h for t, h in zip(leg.texts, leg.legend_handles, strict=True)}
    assert set(legend) == {"critical path", "off the critical path"}
    assert tuple(legend["critical path"].get_facecolor()) == crit_rgba
    assert tuple(legend["off the critical path"].get_facecolor()) == other_rgba


def test_gantt_highlights_the_ops_passed_as_critical():
    """With critical=ops, exactly those ops are highlighted (here after a what-if that moves the
    critical path onto the comm stream)."""
    g = G.with_durations(example_step(), {f"bwd_{i}": 2.5e-3 for i in range(1, 5)})
    cp = G.critical_path(g)
    assert "allreduce_4" in cp.ops and "bwd_3" not in cp.ops
    sched = G.schedule(g)
    ax = viz.gantt(sched, critical=cp.ops, title="what if backward ran 2x faster")
    bars = drawn_bars(ax)
    want = expected_bars(sched)
    crit_rgba = to_rgba(viz.GANTT_CRITICAL_COLOUR)
    assert {want[k] for k, face in bars.items() if face == crit_rgba} == set(cp.ops)
    assert ax.get_title(loc="left") == "what if backward ran 2x faster"
    # Two tied branches: the schedule marks both critical, critical= picks one path.
    tie = G.step_graph(
        {"a": 1e-3, "b": 2e-3, "c": 2e-3, "d": 1e-3},
        [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")],
    )
    sched = G.schedule(tie)
    assert sched.critical.all()
    bars = drawn_bars(viz.gantt(sched, critical=G.critical_path(tie).ops))
    want = expected_bars(sched)
    assert {want[k] for k, face in bars.items() if face == crit_rgba} == {"a", "b", "d"}


def test_gantt_lanes_axis_names_and_step_time_line():
    """Lanes top to bottom in order of first appearance, x axis in ms for a 40 ms step, every op
    named on the figure, a dashed vertical line at the step time labelled with it."""
    g = example_step()
    sched = G.schedule(g)
    fig, ax = plt.subplots(figsize=(11, 4))
    assert viz.gantt(sched, ax=ax) is ax
    lanes = [t.get_text() for t in ax.get_yticklabels()]
    assert lanes == ["data loader (CPU)", "copy stream", "compute stream", "comm stream"]
    assert ax.get_ylim()[0] > ax.get_ylim()[1]  # first lane on top
    assert ax.get_xlabel() == "time (ms)"
    texts = {t.get_text() for t in ax.texts}
    assert set(sched.op) <= texts
    t = G.step_time(g)
    dashed = [ln for ln in ax.lines if ln.get_linestyle() == "--"]
    assert len(dashed) == 1 and np.allclose(dashed[0].get_xdata(), t)
    assert "step time 40.2 ms" in texts
    assert ax.get_xlim()[1] > t


def test_gantt_rejects_bad_input():
    """Missing columns, an empty schedule and unknown critical ops are ValueErrors naming them."""
    sched = G.schedule(example_step())
    with pytest.raises(ValueError, match="lane"):
        viz.gantt(sched.drop(columns=["lane"]))
    with pytest.raises(ValueError, match="no ops"):
        viz.gantt(sched.iloc[:0])
    with pytest.raises(ValueError, match="ghost"):
        viz.gantt(sched, critical=["fwd_1", "ghost"])
