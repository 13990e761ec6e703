"""Tests for gantt (cost01): what is drawn matches graph.schedule, bar by bar."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from hypothesis import given, settings
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_rgba

from course_lib import graph as G
from course_lib.figures.graph import (
    GANTT_CRITICAL_COLOUR,
    GANTT_OTHER_COLOUR,
    dependency_graph,
    gantt,
    slack_bars,
    what_if_curve,
)
from tests.strategies import step_dags
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
    ax = gantt(sched)
    assert isinstance(ax, Axes)
    bars = drawn_bars(ax)
    want = expected_bars(sched)
    assert set(bars) == set(want)
    crit_rgba = to_rgba(GANTT_CRITICAL_COLOUR)
    other_rgba = to_rgba(GANTT_OTHER_COLOUR)
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
    ax = gantt(sched, critical=cp.ops, title="what if backward ran 2x faster")
    bars = drawn_bars(ax)
    want = expected_bars(sched)
    crit_rgba = to_rgba(GANTT_CRITICAL_COLOUR)
    assert {want[k] for k, face in bars.items() if face == crit_rgba} == set(cp.ops)
    assert ax.get_title(loc="left") == "what if backward ran 2x faster"
    # Two tied branches: the schedule marks both critical, critical= picks one path.
    tie = G.step_graph(
        {"a": 1e-3, "b": 2e-3, "c": 2e-3, "d": 1e-3},
        [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")],
    )
    sched = G.schedule(tie)
    assert sched.critical.all()
    bars = drawn_bars(gantt(sched, critical=G.critical_path(tie).ops))
    want = expected_bars(sched)
    assert {want[k] for k, face in bars.items() if face == crit_rgba} == {"a", "b", "d"}


def test_gantt_lanes_axis_names_and_step_time_line():
    """Lanes top to bottom in order of first appearance, x axis in ms for a 40 ms step, every op
    named on the figure, a dashed vertical line at the step time labelled with it."""
    g = example_step()
    sched = G.schedule(g)
    fig, ax = plt.subplots(figsize=(11, 4))
    assert gantt(sched, ax=ax) is ax
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
        gantt(sched.drop(columns=["lane"]))
    with pytest.raises(ValueError, match="no ops"):
        gantt(sched.iloc[:0])
    with pytest.raises(ValueError, match="ghost"):
        gantt(sched, critical=["fwd_1", "ghost"])


# --- dependency_graph, slack_bars, what_if_curve, gantt(xlim=) (cost01) ---------------------


def _example_kinds(g):
    data = [("load_batch", "h2d_copy"), ("h2d_copy", "fwd_1")]
    data += [(f"bwd_{k}", f"allreduce_{k}") for k in range(1, 5)]
    return {e: "data" for e in data} | {("allreduce_1", "optimizer"): "sync"}


def test_dependency_graph_draws_every_op_in_its_lane_and_every_edge_with_its_kind():
    """One box per op, centred on (topological generation, lane row) when each lane is a chain;
    one arrow per edge whose
    gid names its kind (given, else stream order within a lane); critical ops in the critical
    colour, the others white; the legend lists each kind used."""
    import networkx as nx
    from matplotlib.patches import FancyBboxPatch

    g = example_step()
    kinds = _example_kinds(g)
    cp = G.critical_path(g)
    ax = dependency_graph(g, kinds=kinds, critical=cp.ops)
    lanes = [t.get_text() for t in ax.get_yticklabels()]
    assert lanes == ["data loader (CPU)", "copy stream", "compute stream", "comm stream"]
    column = {op: i for i, layer in enumerate(nx.topological_generations(g)) for op in layer}
    boxes = {p.get_gid()[3:]: p for p in ax.patches if isinstance(p, FancyBboxPatch)}
    assert set(boxes) == set(g.nodes)
    for op, box in boxes.items():
        bb = box.get_bbox()
        assert (bb.x0 + bb.x1) / 2 == pytest.approx(column[op])
        assert (bb.y0 + bb.y1) / 2 == pytest.approx(lanes.index(g.nodes[op]["lane"]))
        expected = GANTT_CRITICAL_COLOUR if op in cp.ops else "white"
        assert tuple(box.get_facecolor()) == to_rgba(expected)
    arrows = {a.get_gid() for a in ax.patches if (a.get_gid() or "").startswith("edge:")}
    want = {f"edge:{u}->{v}:{kinds.get((u, v), 'stream order')}" for u, v in g.edges}
    assert arrows == want
    legend = {t.get_text() for t in ax.get_legend().texts}
    assert legend == {"data", "sync", "stream order", "critical path"}
    texts = {t.get_text() for t in ax.texts}
    assert "4.5 ms" in texts and "1.2 ms" in texts  # durations under the names


def _two_rank_step():
    """cost01's exercise step: two ranks, two gradient buckets, a host sync on rank 0."""
    ms = 1e-3
    order = {
        "rank 0 CPU": ["load_r0", "log_r0"],
        "rank 0 GPU": ["fwd_r0", "bwd2_r0", "bwd1_r0", "opt_r0"],
        "rank 1 CPU": ["load_r1"],
        "rank 1 GPU": ["fwd_r1", "bwd2_r1", "bwd1_r1", "opt_r1"],
        "NCCL (both ranks)": ["allreduce_2", "allreduce_1"],
    }
    durations = {op: 5 * ms for ops in order.values() for op in ops}
    lanes = {op: lane for lane, ops in order.items() for op in ops}
    deps = G.stream_order_edges(order) + [
        ("load_r0", "fwd_r0"),
        ("load_r1", "fwd_r1"),
        ("allreduce_1", "opt_r0"),
        ("allreduce_1", "opt_r1"),
        ("fwd_r0", "log_r0"),
        ("bwd2_r0", "allreduce_2"),
        ("bwd2_r1", "allreduce_2"),
        ("bwd1_r0", "allreduce_1"),
        ("bwd1_r1", "allreduce_1"),
        ("log_r0", "bwd2_r0"),
    ]
    return G.step_graph(durations, deps, lanes)


def _boxes_crossed(ax) -> dict[str, list[str]]:
    """For every arrow, the boxes (other than its own two ops') that its drawn path enters."""
    from matplotlib.patches import FancyBboxPatch

    boxes = {p.get_gid()[3:]: p.get_bbox() for p in ax.patches if isinstance(p, FancyBboxPatch)}
    crossed = {}
    for arrow in ax.patches:
        gid = arrow.get_gid() or ""
        if not gid.startswith("edge:"):
            continue
        u, v = gid[5:].rsplit(":", 1)[0].split("->")
        points = np.concatenate(
            [np.asarray(poly) for poly in arrow.get_path().to_polygons(closed_only=False)]
        )
        # Densify the polyline so that a segment crossing a box leaves a point inside it.
        t = np.linspace(0.0, 1.0, 25)[:, None]
        dense = np.concatenate([a + t * (b - a) for a, b in zip(points, points[1:], strict=False)])
        inside = [
            op
            for op, bb in boxes.items()
            if op not in (u, v)
            and (
                (dense[:, 0] > bb.x0)
                & (dense[:, 0] < bb.x1)
                & (dense[:, 1] > bb.y0)
                & (dense[:, 1] < bb.y1)
            ).any()
        ]
        if inside:
            crossed[f"{u}->{v}"] = inside
    return crossed


@pytest.mark.parametrize("which", ["lesson step", "two ranks", "two ranks, other lane order"])
def test_no_arrow_passes_through_a_box(which):
    """Every arrow's drawn path stays out of every box but its own two: an arrow through a box
    reads as a dependency on that op (cost01's bwd2_r1 -> allreduce_2 once read as bwd1_r1's)."""
    g = example_step() if which == "lesson step" else _two_rank_step()
    order = None
    if which == "two ranks":
        order = ["rank 0 CPU", "rank 0 GPU", "NCCL (both ranks)", "rank 1 GPU", "rank 1 CPU"]
    ax = dependency_graph(g, lane_order=order)
    assert _boxes_crossed(ax) == {}


@given(step_dags(max_nodes=9))
@settings(max_examples=25, deadline=None)
def test_no_arrow_passes_through_a_box_on_random_graphs(dag):
    """The same on random step graphs with several lanes."""
    ax = dependency_graph(G.step_graph(*dag))
    try:
        assert _boxes_crossed(ax) == {}
    finally:
        plt.close(ax.figure)


def test_dependency_graph_lane_order_and_errors():
    """lane_order sets the rows; a lane_order missing a lane, an edge not in the graph and an
    unknown critical op are ValueErrors naming the problem."""
    g = example_step()
    order = ["comm stream", "compute stream", "copy stream", "data loader (CPU)"]
    ax = dependency_graph(g, lane_order=order)
    assert [t.get_text() for t in ax.get_yticklabels()] == order
    with pytest.raises(ValueError, match="lane_order"):
        dependency_graph(g, lane_order=order[:3])
    with pytest.raises(ValueError, match="not in the graph"):
        dependency_graph(g, kinds={("optimizer", "load_batch"): "data"})
    with pytest.raises(ValueError, match="ghost"):
        dependency_graph(g, critical=["ghost"])


def test_slack_bars_run_from_each_end_to_its_latest_end():
    """A hatched bar for each op with positive slack, in the op's lane, from its end to its end
    plus its slack (its latest end), labelled with the slack; none for critical ops."""
    sched = G.schedule(example_step())
    ax = gantt(sched)
    slack_bars(sched, ax)
    lanes = [t.get_text() for t in ax.get_yticklabels()]
    bars = sorted(
        (round(p.get_y() + p.get_height() / 2), p.get_x(), p.get_x() + p.get_width())
        for p in ax.patches
        if p.get_gid() == "slack"
    )
    rows = sched[sched.slack > 0]
    want = sorted(
        (lanes.index(lane), e, e + s)
        for lane, e, s in zip(rows.lane, rows.end, rows.slack, strict=True)
    )
    assert len(bars) == len(want) == 3
    for (r, x0, x1), (wr, w0, w1) in zip(bars, want, strict=True):
        assert r == wr and x0 == pytest.approx(w0) and x1 == pytest.approx(w1)
    texts = {t.get_text() for t in ax.texts}
    assert {"+4.5 ms", "+3 ms", "+1.5 ms"} <= texts
    assert "slack: how late it may end" in {t.get_text() for t in ax.get_legend().texts}


def test_what_if_curve_is_max_of_a_and_b_plus_d_with_the_kink_marked():
    """The drawn polyline is T(d) = max(A, B + d) (checked against what_if at its vertices), the
    kink dot sits at (A - B, A), the current dot at (d, what_if(d))."""
    g = example_step()
    a, b = G.path_bounds(g, "bwd_2")
    ax = what_if_curve(g, "bwd_2", current=1e-3)
    lines = {ln.get_gid(): ln for ln in ax.lines if ln.get_gid()}
    xs = np.concatenate([lines["what_if:flat"].get_xdata(), lines["what_if:critical"].get_xdata()])
    ys = np.concatenate([lines["what_if:flat"].get_ydata(), lines["what_if:critical"].get_ydata()])
    for x, y in zip(xs, ys, strict=True):
        assert y == pytest.approx(G.what_if(g, {"bwd_2": float(x)}), rel=1e-12)
    assert xs.min() == 0.0 and xs.max() == pytest.approx(15e-3)
    kink = lines["what_if:kink"]
    assert kink.get_xdata()[0] == pytest.approx(a - b) and kink.get_ydata()[0] == pytest.approx(a)
    cur = lines["what_if:current"]
    assert cur.get_ydata()[0] == pytest.approx(G.what_if(g, {"bwd_2": 1e-3}), rel=1e-12)
    assert ax.get_xlabel() == "duration of bwd_2 (ms)"


def test_what_if_curve_without_a_kink_in_range():
    """An op on every path (B >= A) has no kink; an op whose kink lies beyond the range is flat."""
    g = example_step()
    ax = what_if_curve(g, "load_batch")
    assert "no kink" in " ".join(t.get_text() for t in ax.texts)
    assert not [ln for ln in ax.lines if ln.get_gid() == "what_if:kink"]
    ax = what_if_curve(g, "allreduce_4", max_duration=6e-3)  # kink at 8 ms
    assert "beyond this range" in " ".join(t.get_text() for t in ax.texts)
    assert {ln.get_gid() for ln in ax.lines} >= {"what_if:flat", "what_if:measured"}


def test_gantt_xlim_fixes_the_time_axis():
    """gantt(xlim=...) draws on exactly that time axis, so two schedules share one scale."""
    g = example_step()
    ax = gantt(G.schedule(g), xlim=(0.0, 0.05))
    assert ax.get_xlim() == (0.0, 0.05)
