"""Tests for course_lib.figures.stats (cost10): what is drawn is the model's numbers."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from course_lib.figures.stats import comparison_plot, power_curves, trace_diff_bars
from course_lib.stats import bootstrap_diff_ci, detection_power, runs_to_detect, trace_diff


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _trace(rows):
    return pd.DataFrame(
        {
            "name": [r[0] for r in rows],
            "cat": "cpu_op",
            "ph": "X",
            "ts": [r[1] for r in rows],
            "dur": [r[2] for r in rows],
            "pid": 1,
            "tid": 1,
        }
    )


def test_comparison_plot_draws_the_runs_and_the_bootstrap_interval():
    rng = np.random.default_rng(0)
    before, after = rng.normal(0.1, 0.004, 12), rng.normal(0.103, 0.004, 15)
    fig = comparison_plot(before, after, num_resamples=2000, seed=4)
    runs_ax, boot_ax = fig.axes
    by_gid = {c.get_gid(): c for c in runs_ax.collections}
    drawn_before = by_gid["before"].get_offsets()[:, 1]
    drawn_after = by_gid["after"].get_offsets()[:, 1]
    np.testing.assert_allclose(drawn_before, before * 1e3)
    np.testing.assert_allclose(drawn_after, after * 1e3)
    low, high = bootstrap_diff_ci(before, after, num_resamples=2000, seed=4)
    assert fig.interval == (low, high)
    (span,) = [p for p in boot_ax.patches if p.get_gid() == "interval"]
    x0, x1 = span.get_bbox().x0, span.get_bbox().x1
    assert x0 == pytest.approx(low * 1e3) and x1 == pytest.approx(high * 1e3)
    assert f"{low * 1e3:.3g}" in boot_ax.get_title(loc="left")


def test_power_curves_are_detection_power_with_runs_to_detect_marked():
    fig = power_curves([0.02, 0.05], 0.03, max_runs=50)
    ax = fig.axes[0]
    lines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 2]
    for line, delta in zip(lines, [0.02, 0.05], strict=True):
        np.testing.assert_allclose(line.get_ydata(), detection_power(line.get_xdata(), delta, 0.03))
    dots = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == 1]
    assert [int(d.get_xdata()[0]) for d in dots] == [
        runs_to_detect(0.02, 0.03),
        runs_to_detect(0.05, 0.03),
    ]


def test_trace_diff_bars_are_the_diff_sorted_by_total_growth():
    before = _trace([("step", 0, 10), ("linear", 1, 5), ("mm", 2, 3), ("relu", 7, 1)])
    after = _trace([("step", 0, 16), ("linear", 1, 9), ("mm", 2, 7), ("cast", 11, 2)])
    diff = trace_diff(before, after)
    fig = trace_diff_bars(diff, top=3, unit="s")
    ax = fig.axes[0]
    total, own = ax.containers
    assert [t.get_text() for t in ax.get_yticklabels()] == ["step", "linear", "mm"]
    np.testing.assert_allclose([b.get_width() for b in total], [6, 4, 4])
    np.testing.assert_allclose([b.get_width() for b in own], diff["diff_self_duration"][:3])
    only_total = trace_diff_bars(diff, top=4, unit="s", show_self=False).axes[0]
    assert len(only_total.containers) == 1
    assert "cast  (+new)" in [t.get_text() for t in only_total.get_yticklabels()]
