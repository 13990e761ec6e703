"""Tests for course_lib.explorers.profiling (cost09's explorer): its numbers are the model's."""

from __future__ import annotations

import re

import numpy as np
import pytest

from course_lib.explorers.profiling import (
    NUM_STEPS,
    SKIP_FIRST,
    STEP_TIME,
    CaptureExplorer,
    capture_explorer,
)
from course_lib.profiling import ACTIONS, capture_overhead, schedule_actions


@pytest.fixture(scope="module")
def explorer() -> CaptureExplorer:
    return capture_explorer()


def _set(explorer: CaptureExplorer, **values: object) -> None:
    for name, value in values.items():
        explorer.controls[name].value = value


def _cell(html: str, label: str) -> str:
    row = re.search(rf"<td[^>]*>{re.escape(label)}[^<]*</td><td[^>]*>(.*?)</td>", html)
    assert row, f"no metrics row {label!r}"
    return re.sub("<[^>]+>", "", row.group(1))


@pytest.mark.parametrize(
    "values",
    [
        {"wait": 40, "warmup": 2, "active": 4, "repeat": 0, "overhead_pct": 40.0, "save_time": 3.0},
        {"wait": 40, "warmup": 2, "active": 4, "repeat": 1, "overhead_pct": 40.0, "save_time": 3.0},
        {"wait": 0, "warmup": 0, "active": 7, "repeat": 0, "overhead_pct": 100.0, "save_time": 0.0},
        {
            "wait": 200,
            "warmup": 5,
            "active": 50,
            "repeat": 3,
            "overhead_pct": 5.0,
            "save_time": 20.0,
        },
    ],
)
def test_metrics_and_drawing_follow_the_model(explorer, values):
    """The metrics are capture_overhead's; the strip is schedule_actions'; the cumulative line
    ends at the run's overhead fraction."""
    _set(explorer, **values)
    o = values["overhead_pct"] / 100
    kw = {k: values[k] for k in ("wait", "warmup", "active", "repeat")}
    plan = capture_overhead(
        NUM_STEPS, STEP_TIME, o, values["save_time"], skip_first=SKIP_FIRST, **kw
    )
    assert explorer.last_plan == plan
    html = explorer.metrics.value
    assert _cell(html, "steps recorded") == str(plan.recorded_steps)
    assert _cell(html, "traces saved") == str(plan.saves)
    assert _cell(html, "overhead of the run").startswith(f"{plan.overhead_fraction:.2%}")
    actions = schedule_actions(NUM_STEPS, skip_first=SKIP_FIRST, **kw)
    np.testing.assert_array_equal(
        explorer._image.get_array()[0], [ACTIONS.index(a) for a in actions]
    )
    assert explorer._line.get_ydata()[-1] == pytest.approx(100 * plan.overhead_fraction)
    assert explorer.image.value[:8] == b"\x89PNG\r\n\x1a\n"
