"""Tests for course_lib.figures.profiling (cost09): what is drawn is the model's numbers."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from course_lib.figures.profiling import hiding_curves, overhead_bars, schedule_strip
from course_lib.profiling import ACTIONS, overhead_summary, schedule_actions, tracing_overhead


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


RUNS = pd.DataFrame(
    {
        "workload": ["calls"] * 6 + ["numpy"] * 6,
        "observer": ["none", "none", "none", "cProfile", "cProfile", "cProfile"] * 2,
        "seconds": [1.0, 1.2, 0.9, 4.0, 5.0, 4.5, 2.0, 2.0, 2.2, 2.1, 2.0, 2.4],
    }
)


def test_bar_heights_are_median_over_unobserved_median():
    """Each bar is median(observer) / median(none) of its workload (overhead + 1)."""
    summary = overhead_summary(RUNS)
    ax = overhead_bars(summary)
    bars = {p.get_gid(): p.get_height() for p in ax.patches if p.get_gid()}
    want = {f"{w}|{o}": 1 + v for w, o, v in summary[["workload", "observer", "overhead"]].values}
    assert bars.keys() == want.keys()
    for gid, height in bars.items():
        assert height == pytest.approx(want[gid])
    assert bars["calls|cProfile"] == pytest.approx(4.5)


def test_bars_need_a_baseline():
    """No 'none' rows: a ValueError that says so."""
    summary = overhead_summary(RUNS)
    with pytest.raises(ValueError, match="'none'"):
        overhead_bars(summary[summary["observer"] != "none"])


def test_hiding_curves_are_tracing_overhead():
    """Each line's y is tracing_overhead × 100 at its x; the compute-bound line is 0 up to its
    kink (gpu − cpu) / c."""
    steps = [("launch", 0.06, 0.04), ("compute", 0.06, 0.1)]
    ax = hiding_curves(steps, 2e-6, 40_000)
    lines = {line.get_gid(): line for line in ax.lines if line.get_gid()}
    for label, cpu, gpu in steps:
        x, y = lines[label].get_xdata(), lines[label].get_ydata()
        want = [100 * tracing_overhead(cpu, gpu, int(n), 2e-6) for n in x]
        np.testing.assert_allclose(y, want)
    x, y = lines["compute"].get_xdata(), lines["compute"].get_ydata()
    assert np.all(y[x <= 20_000] == 0) and y[-1] == pytest.approx(40.0)


def test_schedule_strip_draws_the_actions():
    """The image's data are the action codes of schedule_actions, in ACTIONS order."""
    actions = schedule_actions(60, wait=5, warmup=1, active=3, repeat=2, skip_first=4)
    ax = schedule_strip(actions)
    (image,) = [im for im in ax.images if im.get_gid() == "actions"]
    np.testing.assert_array_equal(image.get_array()[0], [ACTIONS.index(a) for a in actions])


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: schedule_strip([]), "no steps"),
        (lambda: schedule_strip(["NONE", "PAUSE"]), "unknown action 'PAUSE'"),
        (lambda: hiding_curves([], 1e-6, 10), "at least one"),
        (lambda: hiding_curves([("a", 1.0, 1.0)], 1e-6, 0), "max_events"),
    ],
)
def test_bad_input_raises(call, match):
    """Nothing to draw or an unknown action: a ValueError that says so."""
    with pytest.raises(ValueError, match=match):
        call()
