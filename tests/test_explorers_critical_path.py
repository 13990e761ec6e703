"""Tests for explorers.critical_path (cost01): the controls drive the model and the picture."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_rgba

from course_lib import graph as G
from course_lib.explorers.critical_path import (
    MAX_EXPLORER_OPS,
    CriticalPathExplorer,
    critical_path_explorer,
)
from course_lib.figures.graph import GANTT_CRITICAL_COLOUR
from tests.test_graph import example_step

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def explorer_for(g, op: str | None = None) -> CriticalPathExplorer:
    durations = {n: g.nodes[n]["duration"] for n in g}
    lanes = {n: g.nodes[n]["lane"] for n in g}
    return critical_path_explorer(durations, list(g.edges), lanes, op=op)


@pytest.fixture(scope="module")
def step():
    return example_step()


@pytest.fixture
def explorer(step):
    return explorer_for(step, op="bwd_2")


def current_point(explorer: CriticalPathExplorer) -> tuple[float, float]:
    """The filled dot on the T(d) panel: (duration, step time) in seconds."""
    (line,) = [ln for ln in explorer.axes[1].lines if ln.get_gid() == "what_if:current"]
    return float(line.get_xdata()[0]), float(line.get_ydata()[0])


def set_duration(explorer: CriticalPathExplorer, value_ms: float) -> None:
    explorer.controls["duration_ms"].value = value_ms


def test_slider_changes_the_image_and_the_metrics(explorer):
    """Moving the duration slider re-renders a different PNG and reports the new step time."""
    image, html = bytes(explorer.image.value), explorer.metrics.value
    assert image.startswith(PNG_SIGNATURE)
    assert "40.2 ms" in html
    set_duration(explorer, 1.0)
    assert bytes(explorer.image.value).startswith(PNG_SIGNATURE)
    assert bytes(explorer.image.value) != image
    assert explorer.metrics.value != html
    assert "<b>37.2 ms</b>" in explorer.metrics.value  # bwd_2 at 1 ms: the comm path sets T
    assert explorer.last_update_ms > 0


@pytest.mark.parametrize(
    ("op", "values_ms"),
    [
        ("bwd_2", [0.0, 1.0, 2.0, 2.5, 5.0, 9.9, 15.0]),
        ("allreduce_2", [0.0, 3.5, 5.0, 7.25, 10.5]),
        ("load_batch", [0.0, 3.0, 8.8]),
        ("optimizer", [0.3, 4.5]),
    ],
)
def test_curve_point_is_the_what_if_step_time(step, op, values_ms):
    """The current point on T(d) sits at (d, what_if(g, {op: d})) for every slider value, and the
    metrics panel reports that same step time."""
    explorer = explorer_for(step, op=op)
    for v in values_ms:
        set_duration(explorer, v)
        d, t = current_point(explorer)
        assert d == pytest.approx(v * 1e-3, rel=1e-12, abs=1e-15)
        assert t == pytest.approx(G.what_if(step, {op: v * 1e-3}), rel=1e-12)
        assert f"<b>{t * 1e3:.4g} ms</b>" in explorer.metrics.value


def test_bars_follow_the_schedule_and_the_critical_path(explorer, step):
    """After a change, the Gantt bars are the what-if schedule, bar for bar, and exactly the
    critical path's ops are drawn in the critical colour."""
    set_duration(explorer, 1.0)
    g = G.with_durations(step, {"bwd_2": 1e-3})
    sched = G.schedule(g)
    path = set(G.critical_path(g).ops)
    (bars,) = [c for c in explorer.axes[0].collections if isinstance(c, PolyCollection)]
    spans = [(p.vertices[:, 0].min(), p.vertices[:, 0].max()) for p in bars.get_paths()]
    assert len(spans) == len(sched)
    np.testing.assert_allclose([s for s, _ in spans], sched["start"], rtol=0, atol=1e-15)
    np.testing.assert_allclose([e for _, e in spans], sched["end"], rtol=0, atol=1e-15)
    crit = to_rgba(GANTT_CRITICAL_COLOUR)
    faces = [tuple(f) for f in bars.get_facecolors()]
    assert {op for op, f in zip(sched["op"], faces, strict=True) if f == crit} == path
    assert "allreduce_3" in path and "bwd_1" not in path  # the path moved to the comm stream


def test_changing_the_op_resets_the_slider(explorer, step):
    """Picking another op sets the slider to that op's measured duration (ms) on 0..3x it and
    redraws T(d) for the new op."""
    set_duration(explorer, 12.0)
    explorer.controls["op"].value = "allreduce_4"
    slider = explorer.controls["duration_ms"]
    assert slider.value == pytest.approx(3.5)
    assert slider.min == 0.0 and slider.max == pytest.approx(10.5)
    assert explorer.curve_label() == "duration of allreduce_4 (ms)"
    d, t = current_point(explorer)
    assert d == pytest.approx(3.5e-3) and t == pytest.approx(G.step_time(step), rel=1e-12)
    # Back to an op with a longer range: the value is not clamped by the old maximum.
    explorer.controls["op"].value = "bwd_1"
    assert slider.value == pytest.approx(5.0) and slider.max == pytest.approx(15.0)


def test_metrics_say_critical_slack_and_tie(step):
    """The panel reports slack for an op off the path, the useful reduction for a critical op,
    and a tie when cutting an op alone cannot help."""
    explorer = explorer_for(step, op="allreduce_2")
    assert "can grow by 1.5 ms" in explorer.metrics.value
    explorer.controls["op"].value = "bwd_2"
    assert "for the next 3 ms" in explorer.metrics.value
    tie = G.step_graph(
        {"a": 1e-3, "b": 2e-3, "c": 2e-3, "d": 1e-3},
        [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")],
    )
    assert "tied with another path" in explorer_for(tie, op="b").metrics.value


def test_default_op_and_bad_input(step):
    """Without op, the explorer starts on the longest critical op; an unknown op or a bad graph
    is a ValueError that names the problem."""
    assert explorer_for(step).controls["op"].value == "bwd_4"
    with pytest.raises(ValueError, match="ghost"):
        explorer_for(step, op="ghost")
    with pytest.raises(ValueError, match="cycle"):
        critical_path_explorer({"a": 1e-3, "b": 1e-3}, [("a", "b"), ("b", "a")])
    many = {f"op{i}": 1e-3 for i in range(MAX_EXPLORER_OPS + 1)}
    with pytest.raises(ValueError, match=f"at most {MAX_EXPLORER_OPS} ops"):
        critical_path_explorer(many, [])


def test_zero_duration_op_gets_a_usable_slider():
    """An op measured at 0 s still gets a slider range (0..1 ms) and a correct curve point."""
    g = G.step_graph({"a": 2e-3, "z": 0.0, "b": 1e-3}, [("a", "z"), ("z", "b")])
    explorer = explorer_for(g, op="z")
    slider = explorer.controls["duration_ms"]
    assert slider.value == 0.0 and slider.max == pytest.approx(1.0)
    set_duration(explorer, 0.5)
    assert current_point(explorer)[1] == pytest.approx(3.5e-3, rel=1e-12)


def test_curve_panel_is_t_of_d_on_one_scale_for_every_op(explorer, step):
    """The T(d) panel keeps one frame for every op (so slopes compare at a glance) and draws
    max(A, B + d): flat up to the kink, slope 1 above it, checked against what_if."""
    limits = (explorer.axes[1].get_xlim(), explorer.axes[1].get_ylim())
    for op in ("allreduce_2", "load_batch", "bwd_2"):
        explorer.controls["op"].value = op
        assert (explorer.axes[1].get_xlim(), explorer.axes[1].get_ylim()) == limits
        art = explorer._curve_artists
        xs = np.concatenate([art["flat"].get_xdata(), art["slope"].get_xdata()])
        ys = np.concatenate([art["flat"].get_ydata(), art["slope"].get_ydata()])
        for x, y in zip(xs, ys, strict=True):
            assert y == pytest.approx(G.what_if(step, {op: float(x)}), rel=1e-12)
    lo, hi = limits[1]
    assert lo <= G.what_if(step, {"bwd_2": 0.0}) and hi >= G.what_if(step, {"bwd_2": 15e-3})


def test_op_names_are_drawn_on_their_bars(explorer, step):
    """A critical op whose name fits its bar gets white lettering inside the bar (the names are
    pasted as cached bitmaps, so check the pixels)."""
    set_duration(explorer, 5.0)
    sched = G.schedule(step).set_index("op")
    ax = explorer.axes[0]
    buffer = np.asarray(explorer._canvas.buffer_rgba())
    height = buffer.shape[0]
    row = explorer.lanes.index("compute stream")
    (x0, y0), (x1, y1) = ax.transData.transform(
        [(sched.loc["bwd_4", "start"], row - 0.25), (sched.loc["bwd_4", "end"], row + 0.25)]
    )
    inside = buffer[int(height - y0) : int(height - y1), int(x0) + 2 : int(x1) - 2, :3]
    whiteish = (inside > 230).all(axis=-1)
    assert 20 < whiteish.sum() < whiteish.size / 2  # lettering, not an empty or blank bar
