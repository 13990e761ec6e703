"""Tests for course_lib.explorers.partition_explorer (pipe01's explorer)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from course_lib.explorers.partition import PartitionExplorer, partition_explorer
from course_lib.pipeline import one_f_one_b, simulate
from course_lib.pipeline.partition import (
    even_blocks,
    gpt_spec,
    min_max_partition,
    stage_costs,
    stage_memory,
    stage_sums,
    stage_times,
)

SPEC = gpt_spec()
GIB = 2.0**30


@pytest.fixture(scope="module")
def explorer() -> PartitionExplorer:
    return partition_explorer()


def _set(explorer, **values) -> None:
    for name, value in values.items():
        explorer.controls[name].value = value


def test_controls_cover_the_ranges(explorer):
    c = explorer.controls
    assert list(c) == [
        "num_stages",
        "num_microbatches",
        "partition",
        "link_gbs",
        "memory_limit_gib",
    ]
    assert (c["num_stages"].min, c["num_stages"].max) == (2, 8)
    assert (c["num_microbatches"].min, c["num_microbatches"].max) == (1, 32)
    assert list(c["partition"].options) == ["equal blocks", "min-max", "min-max within limit"]
    assert (c["memory_limit_gib"].min, c["memory_limit_gib"].max) == (4, 40)


@pytest.mark.parametrize(
    "control, value",
    [("num_stages", 6), ("num_microbatches", 2), ("partition", "min-max"), ("link_gbs", 5.0),
     ("memory_limit_gib", 12)],
)  # fmt: skip
def test_every_control_changes_the_image_and_the_metrics(explorer, control, value):
    _set(explorer, num_stages=4, num_microbatches=8, partition="equal blocks", link_gbs=25.0,
         memory_limit_gib=16)  # fmt: skip
    image, metrics = bytes(explorer.image.value), explorer.metrics.value
    _set(explorer, **{control: value})
    assert bytes(explorer.image.value).startswith(b"\x89PNG")
    assert bytes(explorer.image.value) != image
    assert explorer.metrics.value != metrics
    assert math.isfinite(explorer.last_update_ms) and explorer.last_update_ms > 0


@pytest.mark.parametrize("p, m", [(2, 1), (4, 8), (8, 32), (5, 3)])
@pytest.mark.parametrize("partition", ["equal blocks", "min-max", "min-max within limit"])
def test_metrics_are_the_models(explorer, p, m, partition):
    """The numbers shown are the partition module's and the simulator's for that setting."""
    _set(explorer, num_stages=p, num_microbatches=m, partition=partition, link_gbs=25.0,
         memory_limit_gib=20)  # fmt: skip
    r = explorer.last_metrics
    costs = stage_costs(SPEC, p, 25e9, m)
    expected = {
        "equal blocks": even_blocks(SPEC, p),
        "min-max": min_max_partition(costs, p).boundaries,
    }
    if partition == "min-max within limit":
        try:
            expected[partition] = min_max_partition(costs, p, memory_limit=20 * GIB).boundaries
            assert r["feasible"]
        except ValueError:
            expected[partition] = expected["min-max"]
            assert not r["feasible"] and r["smallest_limit"] > 20 * GIB
    bounds = expected[partition]
    assert r["boundaries"] == bounds
    times = stage_times(SPEC, bounds, 25e9)
    assert r["stage_times"] == pytest.approx(times)
    assert r["bottleneck"] == pytest.approx(times.max())
    assert r["stage_memory"] == pytest.approx(stage_memory(SPEC, bounds, m)["total"])
    f = stage_sums(SPEC.forward_times, bounds)
    b = stage_sums(SPEC.backward_times, bounds)
    x = (times - f - b) / 2
    assert r["simulated_step"] == pytest.approx(simulate(one_f_one_b(p, m), f + x, b + x).makespan)
    assert r["simulated_step"] >= m * r["bottleneck"] - 1e-12
    visible = [rect for rect in explorer._time_bars["transfer"] if rect.get_visible()]
    tops = [rect.get_y() + rect.get_height() for rect in visible]
    assert tops == pytest.approx(times * 1e3)


def test_an_unmeetable_limit_says_the_smallest_feasible_one(explorer):
    _set(explorer, num_stages=4, num_microbatches=8, link_gbs=25.0, memory_limit_gib=8,
         partition="min-max within limit")  # fmt: skip
    assert not explorer.last_metrics["feasible"]
    assert "smallest feasible limit is 11.77 GiB" in explorer.metrics.value
    _set(explorer, memory_limit_gib=16)
    assert explorer.last_metrics["feasible"]
    assert np.diff(explorer.last_metrics["boundaries"]).tolist() == [6, 7, 7, 7]


@pytest.mark.parametrize(
    "kwargs, message",
    [({"num_stages": 1}, "num_stages must be >= 2"), ({"num_stages": 9}, "num_stages 2..8"),
     ({"link_gbs": 0.5}, "link_gbs must be in"), ({"memory_limit_gib": 41}, "memory_limit_gib"),
     ({"partition": "greedy"}, "partition must be one of")],
)  # fmt: skip
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        partition_explorer(**kwargs)


def test_cached_layouts_and_settings_draw_what_a_fresh_explorer_draws():
    """Coming back to a setting through others (cached numbers and axis backgrounds) gives the
    same image, pixel for pixel, as a new explorer opened at that setting; bars stay in the axes."""
    setting = {"num_stages": 5, "num_microbatches": 3, "partition": "min-max within limit",
               "link_gbs": 10.0, "memory_limit_gib": 14}  # fmt: skip
    travelled = partition_explorer()
    _set(travelled, **setting)
    for other in ({"num_stages": 8}, {"memory_limit_gib": 30}, {"partition": "equal blocks"}):
        _set(travelled, **other)
    _set(travelled, num_stages=5, memory_limit_gib=14, partition="min-max within limit")
    fresh = partition_explorer(**setting)
    assert bytes(travelled.image.value) == bytes(fresh.image.value)
    assert travelled.metrics.value == fresh.metrics.value
    left, right = travelled.axes
    r = travelled.last_metrics
    assert left.get_ylim()[1] >= r["stage_times"].max() * 1e3
    assert right.get_ylim()[1] >= max(r["stage_memory"].max(), r["limit"]) / GIB
