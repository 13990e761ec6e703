"""Tests for course_lib.explorers.triage (cost10's explorer): it shows the model's numbers."""

from __future__ import annotations

import numpy as np
import pytest

from course_lib.explorers.triage import MAX_RUNS, NUM_RESAMPLES, triage_explorer
from course_lib.stats import compare, detection_power, runs_to_detect


@pytest.fixture(scope="module")
def explorer():
    return triage_explorer()


def _set(explorer, **values):
    for name, value in values.items():
        explorer.controls[name].value = value


def test_controls(explorer):
    assert list(explorer.controls) == ["cv_percent", "change_percent", "runs", "seed"]
    assert explorer.controls["runs"].max == MAX_RUNS


def test_comparison_is_compare_on_the_simulated_runs(explorer):
    _set(explorer, cv_percent=2.0, change_percent=3.0, runs=25, seed=3)
    before, after = explorer.simulate(2.0, 3.0, 25, 3)
    assert before.size == after.size == 25
    assert explorer.last_comparison == compare(before, after, num_resamples=NUM_RESAMPLES, seed=3)
    assert explorer.last_comparison.verdict in explorer.metrics.value
    np.testing.assert_allclose(explorer._before.get_offsets()[:, 1], before * 1e3)


def test_power_panel_is_detection_power(explorer):
    _set(explorer, cv_percent=3.0, change_percent=2.0, runs=10, seed=0)
    np.testing.assert_allclose(
        explorer._power.get_ydata(), detection_power(np.arange(2, MAX_RUNS + 1), 0.02, 0.03)
    )
    assert explorer.last_runs_to_detect == runs_to_detect(0.02, 0.03) == 36
    assert explorer._here.get_ydata()[0] == pytest.approx(detection_power(10, 0.02, 0.03))
    assert "36" in explorer.metrics.value


def test_zero_change_has_nothing_to_detect(explorer):
    _set(explorer, change_percent=0.0)
    assert explorer.last_runs_to_detect == 0
    assert "nothing to detect" in explorer._pw_title.get_text()
    assert explorer.png()[:4] == b"\x89PNG"


def test_more_runs_never_change_the_first_runs(explorer):
    """Runs are drawn for MAX_RUNS and cut: dragging runs adds runs, it does not redraw them all."""
    a, _ = explorer.simulate(3.0, 2.0, 10, 5)
    b, _ = explorer.simulate(3.0, 2.0, 40, 5)
    np.testing.assert_array_equal(a, b[:10])
