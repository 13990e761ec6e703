"""Tests for course_lib.figures.imbalance (pipe08): what is drawn is the model's numbers."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pytest

from course_lib.figures.imbalance import break_even_curve, critical_path_grid, stage_time_bars
from course_lib.pipeline import gpipe, one_f_one_b, simulate
from course_lib.pipeline.imbalance import (
    break_even_steps,
    critical_path,
    critical_time,
    jittered_timeline,
    makespan_lower_bound,
    stage_busy,
)

MS = 1e-3
F = np.array([1.00, 1.05, 0.95, 1.40]) * MS
B = np.array([2.00, 3.15, 1.90, 2.30]) * MS


def _boxes(ax, gid):
    """(x, width, row centre) of every box in the collections with ``gid``."""
    out = []
    for coll in ax.collections:
        if coll.get_gid() != gid:
            continue
        for path in coll.get_paths():
            xs, ys = path.vertices[:, 0], path.vertices[:, 1]
            out.append((xs.min(), xs.max() - xs.min(), round((ys.min() + ys.max()) / 2)))
    return sorted(out)


@pytest.mark.parametrize("generator", [gpipe, one_f_one_b])
def test_outlined_boxes_are_the_critical_path(generator):
    """The outlined boxes (path:F, path:B) are exactly critical_path's actions, on their rank's
    row, with a black edge; the title names the bottleneck and busiest stages."""
    run = jittered_timeline(generator(4, 6), F, B, 0.05, 2)
    ax = critical_path_grid(run)
    path = critical_path(run)
    for kind in "FB":
        rows = path[path["kind"] == kind]
        want = sorted(zip(rows["start"], rows["end"] - rows["start"], rows["rank"], strict=True))
        got = _boxes(ax, f"path:{kind}")
        assert len(got) == len(want)
        for (x, w, r), (x0, w0, r0) in zip(got, want, strict=True):
            assert (x, w, r) == (pytest.approx(x0), pytest.approx(w0), r0)
    edge = [c for c in ax.collections if c.get_gid() == "path:B"][0].get_edgecolor()[0]
    assert tuple(edge[:3]) == (0.0, 0.0, 0.0)
    busy = np.asarray(stage_busy(run))
    on_path = np.asarray(critical_time(run))
    title = ax.get_title(loc="left")
    assert f"bottleneck stage {int(np.argmax(on_path))}" in title
    assert f"busiest stage {int(np.argmax(busy))}" in title
    plt.close("all")


def test_gpipe_path_runs_slowest_forward_then_slowest_backward():
    """In the worked example the path holds all 8 forwards of stage 3 and all 8 backwards of
    stage 1 (the slowest forward and the slowest backward)."""
    ax = critical_path_grid(simulate(gpipe(4, 8), F, B))
    forward_rows = [r for _, _, r in _boxes(ax, "path:F")]
    backward_rows = [r for _, _, r in _boxes(ax, "path:B")]
    assert forward_rows.count(3) == 8 and backward_rows.count(1) == 8
    plt.close("all")


def test_stage_bars_are_busy_and_on_path_times():
    """Bar heights (ms) are stage_busy and critical_time; the step line is the makespan and the
    dashed line the average-stage estimate (m + p - 1) * mean(f + b)."""
    run = simulate(one_f_one_b(4, 8), F, B)
    ax = stage_time_bars(run)
    heights = {
        gid: [p.get_height() for p in ax.patches if p.get_gid() == gid]
        for gid in ("busy", "on-path")
    }
    assert heights["busy"] == pytest.approx(np.asarray(stage_busy(run)) / MS)
    assert heights["on-path"] == pytest.approx(np.asarray(critical_time(run)) / MS)
    lines = {line.get_gid(): line.get_ydata()[0] for line in ax.lines}
    assert lines["step"] == pytest.approx(run.makespan / MS)
    assert lines["average"] == pytest.approx(11 * np.mean(F + B) / MS)
    assert "bound" not in lines
    plt.close("all")


def test_stage_bars_draw_the_lower_bound_when_given():
    """The dotted line (gid bound) sits at makespan_lower_bound, below the 1F1B step."""
    run = simulate(one_f_one_b(4, 8), F, B)
    bound = makespan_lower_bound(F, B, 8)
    ax = stage_time_bars(run, lower_bound=bound)
    lines = {line.get_gid(): line.get_ydata()[0] for line in ax.lines}
    assert lines["bound"] == pytest.approx(bound / MS) and lines["bound"] < lines["step"]
    with pytest.raises(ValueError, match="lower_bound"):
        stage_time_bars(run, lower_bound="fast")
    plt.close("all")


def test_path_grid_legend_explains_outlined_and_faded_boxes():
    ax = critical_path_grid(simulate(gpipe(4, 8), F, B))
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "on the critical path" in labels and "off the path (faded)" in labels
    assert {"forward (F)", "backward (B)", "idle"} <= set(labels)
    plt.close("all")


@pytest.mark.parametrize(
    "cost, before, after", [(5.13, 0.0413, 0.0386), (4.0, 0.75, 0.5), (2.0, 0.3, 0.25)]
)
def test_break_even_curve_crosses_zero_at_break_even_steps(cost, before, after):
    """The net line starts at -cost with slope = the gain; the marker sits at break_even_steps,
    the first n whose net is >= 0."""
    ax = break_even_curve(cost, before, after, max_steps=3000)
    net = [line for line in ax.lines if line.get_gid() == "net"][0]
    y = net.get_ydata()
    assert y[0] == pytest.approx(-cost)
    assert (y[1] - y[0]) == pytest.approx(before - after)
    marker = [line for line in ax.lines if line.get_gid() == "break-even"][0]
    steps = break_even_steps(cost, before, after)
    assert marker.get_xdata()[0] == steps
    assert y[steps] >= -1e-9 and y[steps - 1] < 0
    assert math.isfinite(steps)
    plt.close("all")


def test_break_even_curve_without_gain_has_no_marker():
    ax = break_even_curve(3.0, 0.04, 0.05, max_steps=100)
    assert not [line for line in ax.lines if line.get_gid() == "break-even"]
    plt.close("all")
