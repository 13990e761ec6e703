"""Tests for course_lib.explorers.scaling.batch_tradeoff_explorer (cost08's explorer)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from course_lib.explorers.scaling import (
    DEVICE_OPTIONS,
    MAX_ACCUMULATION,
    NOISE_SCALE_OPTIONS,
    BatchTradeoffExplorer,
    batch_tradeoff_explorer,
)
from course_lib.scaling import best_accumulation_steps, steps_to_target


@pytest.fixture(scope="module")
def explorer() -> BatchTradeoffExplorer:
    return batch_tradeoff_explorer()


def _set(explorer, **values):
    for name, value in values.items():
        explorer.controls[name].value = value


def _cells(html: str, label: str) -> list[str]:
    row = re.search(rf"<tr><td[^>]*>{re.escape(label)}</td>(.*?)</tr>", html)
    assert row, f"no metrics row {label!r}"
    return [re.sub("<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))]


def test_controls(explorer):
    assert list(explorer.controls) == ["noise_scale", "allreduce_time", "num_devices"]
    assert tuple(explorer.controls["noise_scale"].options) == NOISE_SCALE_OPTIONS
    assert tuple(explorer.controls["num_devices"].options) == DEVICE_OPTIONS
    ar = explorer.controls["allreduce_time"]
    assert (ar.min, ar.max) == (0.0, 2.0)


@pytest.mark.parametrize(
    "control, value", [("noise_scale", 65536), ("allreduce_time", 0.0), ("num_devices", 512)]
)
def test_every_control_changes_the_image_and_metrics(explorer, control, value):
    _set(explorer, noise_scale=4096, allreduce_time=0.6, num_devices=64)
    image, metrics = bytes(explorer.image.value), explorer.metrics.value
    _set(explorer, **{control: value})
    assert bytes(explorer.image.value).startswith(b"\x89PNG")
    assert bytes(explorer.image.value) != image
    assert explorer.metrics.value != metrics
    assert math.isfinite(explorer.last_update_ms)


@pytest.mark.parametrize(
    "state",
    [
        dict(noise_scale=4096, allreduce_time=0.6, num_devices=64),
        dict(noise_scale=256, allreduce_time=0.0, num_devices=8),
        dict(noise_scale=65536, allreduce_time=2.0, num_devices=1024),
    ],
)
def test_lines_and_metrics_are_the_model(explorer, state):
    """The curves are throughput ÷ max, steps ÷ steps at k = 1 and time ÷ the best time; the
    circle and the metrics' best batch are best_accumulation_steps."""
    _set(explorer, **state)
    n, bn, ta = state["num_devices"], state["noise_scale"], state["allreduce_time"]
    k = np.arange(1, MAX_ACCUMULATION + 1, dtype=float)
    batch, step = n * 8 * k, k * 0.25 + ta
    steps = steps_to_target(batch, 20_000, bn)
    time = steps * step
    best = best_accumulation_steps(n, 8, 0.25, ta, bn, MAX_ACCUMULATION)
    np.testing.assert_allclose(explorer._throughput.get_xdata(), batch)
    thr = batch / step
    np.testing.assert_allclose(explorer._throughput.get_ydata(), thr / thr.max())
    np.testing.assert_allclose(explorer._steps.get_ydata(), steps / steps[0])
    np.testing.assert_allclose(explorer._time.get_ydata(), time / time[best - 1])
    assert list(explorer._best.get_xdata()) == [batch[best - 1]]
    cells = _cells(explorer.metrics.value, "fastest to target")
    assert cells[0] == f"B = {int(batch[best - 1]):,} (k = {best})"
    assert cells[1] == f"{time[best - 1] / 3600:.1f} h"
    assert _cells(explorer.metrics.value, "highest throughput")[0].startswith(
        f"B = {int(batch[-1]):,}"
    )


def test_bad_arguments():
    for kwargs, match in (
        (dict(noise_scale=1000), "noise_scale"),
        (dict(num_devices=7), "num_devices"),
        (dict(allreduce_time=3.0), "allreduce_time"),
        (dict(micro_time=0.0), "micro_time"),
        (dict(min_steps=-1), "min_steps"),
    ):
        with pytest.raises(ValueError, match=match):
            batch_tradeoff_explorer(**kwargs)
