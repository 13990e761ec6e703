"""Tests for cost02's figures: launch_timeline (launches joined to kernels by correlation id),
launch_match_plot (correlation vs time-proximity matches), offset_bounds_plot (each message's
bound on the offset, and the interval) and drift_fit_plot (per-window intervals and a drift fit)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.collections import LineCollection, PolyCollection

from course_lib.clocks import fit_drift, offset_bounds, simulate_messages
from course_lib.figures.clocks import (
    drift_fit_plot,
    launch_match_plot,
    launch_timeline,
    offset_bounds_plot,
)
from course_lib.trace import link_launches
from course_lib.tracegen import generate_dp_profile


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def rank0():
    return generate_dp_profile(num_ranks=2, num_layers=4, num_buckets=2, num_steps=2, seed=1)[0]


def test_every_event_in_the_window_is_drawn_on_its_lane(rank0):
    """Kernels, launches and cpu_ops overlapping the window appear once each, at their times (ms
    from the window start), and the lanes are the host lanes plus one per GPU stream."""
    df = rank0
    t0 = float(df.loc[df["name"] == "ProfilerStep#1", "ts"].iloc[0])
    t1 = t0 + 0.02
    ax = launch_timeline(df, t0, t1)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["CPU annotations", "CPU ops", "CPU launches", "GPU stream 7", "GPU stream 20"]
    end = df["ts"] + df["dur"]
    for cats, gids in (
        (["cuda_runtime", "cuda_driver"], ("trace:launch",)),
        (["cpu_op"], ("trace:cpu_op",)),
        (["kernel", "gpu_memcpy", "gpu_memset"], (":kernel:", ":gpu_mem", ":comm:")),
    ):
        sel = df[df["cat"].isin(cats) & (end > t0) & (df["ts"] < t1) & (df["ph"] == "X")]
        want = sorted(
            (float((a - t0) * 1e3), float((a + d - t0) * 1e3))
            for a, d in zip(sel["ts"], sel["dur"], strict=True)
        )
        got = sorted(
            bar
            for coll in ax.collections
            if isinstance(coll, PolyCollection) and any(g in str(coll.get_gid()) for g in gids)
            for bar in _bars_of(coll)
        )
        assert len(got) == len(want) > 0
        np.testing.assert_allclose(np.array(got), np.array(want), rtol=0, atol=1e-9)


def test_every_annotation_in_the_window_is_named():
    """Each annotation bar (not the ProfilerStep background) carries its name, inside the bar or
    below it, also one cut by the window's left edge and narrow ones next to a long name: the
    lesson's window holds the end of DataLoader, the forward and the optimizer step."""
    from course_lib.tracegen import load_dp_profile

    df = load_dp_profile()[0]
    step = df[df["name"] == "ProfilerStep#1"].iloc[0]
    fwd = df[(df["name"] == "DistributedDataParallel.forward") & (df["ts"] >= step["ts"])].iloc[0]
    t0, t1 = fwd["ts"] - 0.3e-3, fwd["ts"] + 13.5e-3
    ax = launch_timeline(df, t0, t1)
    end = df["ts"] + df["dur"]
    inside = df[(df["cat"] == "user_annotation") & (end > t0) & (df["ts"] < t1)]
    names = {n for n in inside["name"] if not n.startswith("ProfilerStep")}
    assert {"DataLoader", "DistributedDataParallel.forward", "Optimizer.step#AdamW.step"} <= names
    texts = {t.get_text() for t in ax.texts}
    assert names <= texts, names - texts


def _bars_of(coll) -> list[tuple[float, float]]:
    """(left, right) of every bar of a broken_barh collection, in data units."""
    return [
        (float(p.vertices[:, 0].min()), float(p.vertices[:, 0].max())) for p in coll.get_paths()
    ]


def test_links_join_launch_end_to_kernel_start_by_correlation(rank0):
    """Each grey line runs from a launch's end to the start of the GPU event with the SAME
    correlation id; with a large max_links every pair inside the window is drawn."""
    df = rank0
    t0 = float(df.loc[df["name"] == "DistributedDataParallel.forward", "ts"].iloc[0])
    t1 = t0 + 0.05
    ax = launch_timeline(df, t0, t1, max_links=10_000)
    (lines,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    got = sorted((float(s[0, 0]), float(s[1, 0])) for s in lines.get_segments())
    links = link_launches(df)
    inside = links[
        (links["launch_end"] >= t0)
        & (links["launch_end"] < t1)
        & (links["kernel_start"] >= t0)
        & (links["kernel_start"] < t1)
    ]
    want = sorted(
        (float((a - t0) * 1e3), float((b - t0) * 1e3))
        for a, b in zip(inside["launch_end"], inside["kernel_start"], strict=True)
    )
    assert len(got) == len(want) > 10
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=0, atol=1e-9)
    # fewer links when asked, each still one of the correlation pairs
    ax = launch_timeline(df, t0, t1, max_links=5)
    (lines,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    some = [(float(s[0, 0]), float(s[1, 0])) for s in lines.get_segments()]
    assert len(some) == 5
    assert all(any(np.allclose(p, w) for w in want) for p in some)


def test_launch_timeline_rejects_an_empty_window(rank0):
    """start >= end (or a negative max_links) raises a ValueError."""
    with pytest.raises(ValueError, match="start < end"):
        launch_timeline(rank0, 0.2, 0.1)
    with pytest.raises(ValueError, match="max_links"):
        launch_timeline(rank0, 0.0, 0.1, max_links=-1)


def test_offset_bounds_plot_draws_the_interval_and_every_bound():
    """The band is offset_bounds' interval in µs; each message appears once (inside the axis as a
    filled marker, beyond it as a hollow one at the edge)."""
    a_to_b = np.array([[1.0020, 1.0005], [2.0021, 2.0009], [3.0020, 3.1000]])  # (S_A, R_B)
    b_to_a = np.array([[1.5, 1.50175], [2.5, 2.5016], [3.5, 3.9]])  # (S_B, R_A)
    ax = offset_bounds_plot(a_to_b, b_to_a, true_offset=1.4e-3)
    iv = offset_bounds(a_to_b, b_to_a)
    (band,) = [p for p in ax.patches if p.get_gid() == "bounds:interval"]
    ys = band.get_path().transformed(band.get_patch_transform()).vertices[:, 1]
    assert (ys.min(), ys.max()) == pytest.approx((iv.lower * 1e6, iv.upper * 1e6))
    lines = {ln.get_gid(): ln for ln in ax.lines}
    n_low = len(lines["bounds:lower"].get_xdata()) + len(lines["bounds:lower:beyond"].get_xdata())
    n_up = len(lines["bounds:upper"].get_xdata()) + len(lines["bounds:upper:beyond"].get_xdata())
    assert (n_low, n_up) == (3, 3)
    assert len(lines["bounds:lower:beyond"].get_xdata()) == 1  # the one 98 ms below
    assert lines["bounds:true"].get_ydata()[0] == pytest.approx(1400.0)


def test_offset_bounds_plot_needs_both_directions():
    """Messages one way only leave the interval unbounded: a clear ValueError."""
    with pytest.raises(ValueError, match="both directions"):
        offset_bounds_plot(np.array([[1.0, 0.9]]), np.empty((0, 2)))


def test_launch_match_plot_puts_each_match_at_its_times():
    """Dots: (event start, end of its launch by correlation id); crosses: (event start, end of the
    time-matched launch); both in ms from the origin."""
    start = np.array([1.010, 1.020, 1.030])
    right = np.array([1.001, 1.002, 1.003])
    guess = np.array([1.003, 1.003, 1.003])
    ax = launch_match_plot(start, right, guess, origin=1.0)
    lines = {ln.get_gid(): ln for ln in ax.lines}
    np.testing.assert_allclose(lines["match:correlation"].get_xdata(), [10.0, 20.0, 30.0])
    np.testing.assert_allclose(lines["match:correlation"].get_ydata(), [1.0, 2.0, 3.0])
    np.testing.assert_allclose(lines["match:time"].get_ydata(), [3.0, 3.0, 3.0])


def test_launch_match_plot_needs_one_entry_per_event():
    """Arrays of different lengths are a ValueError, not a silently shifted plot."""
    with pytest.raises(ValueError, match="equal length"):
        launch_match_plot(np.zeros(3), np.zeros(2), np.zeros(3))


def test_drift_fit_plot_shows_each_interval_around_the_fitted_line():
    """Right panel: each window's interval minus the fitted θ(t), in µs, and the title counts the
    windows whose interval holds the line; left: midpoints in ms and the first one held constant."""
    windows = [
        simulate_messages(20, offset=1e-3, drift_ppm=10.0, span=0.01, start=60.0 * k, seed=k)
        for k in range(5)
    ]
    t = np.array([w[1][:, 0].mean() for w in windows])
    ivs = [offset_bounds(*w) for w in windows]
    lo, hi = np.array([iv.lower for iv in ivs]), np.array([iv.upper for iv in ivs])
    fit = fit_drift(t + 0.5 * (lo + hi), t)
    left, right = drift_fit_plot(t, lo, hi, fit)
    (bars,) = [c for c in right.collections if c.get_gid() == "drift:residuals"]
    segments = bars.get_segments()
    line = fit.to_local(t) - t
    np.testing.assert_allclose([s[0, 1] for s in segments], (lo - line) * 1e6, atol=1e-9)
    np.testing.assert_allclose([s[1, 1] for s in segments], (hi - line) * 1e6, atol=1e-9)
    assert right.get_title(loc="left") == "Zoomed: 5 of 5 intervals hold the line"
    lines = {ln.get_gid(): ln for ln in left.lines}
    np.testing.assert_allclose(lines["drift:windows"].get_ydata(), 0.5 * (lo + hi) * 1e3)
    np.testing.assert_allclose(
        lines["drift:constant"].get_ydata(), [0.5 * (lo[0] + hi[0]) * 1e3] * 2
    )


def test_drift_fit_plot_rejects_bad_intervals():
    """Mismatched lengths or an interval with lower > upper raise a ValueError."""
    fit = fit_drift([0.0, 1.0], [0.0, 1.0])
    with pytest.raises(ValueError, match="equal length"):
        drift_fit_plot(np.zeros(2), np.zeros(3), np.zeros(2), fit)
    with pytest.raises(ValueError, match="lower <= upper"):
        drift_fit_plot(np.zeros(1), np.ones(1), np.zeros(1), fit)
