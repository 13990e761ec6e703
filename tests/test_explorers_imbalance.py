"""Tests for course_lib.explorers.imbalance_explorer (pipe08's explorer)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from course_lib.explorers.imbalance import (
    LINK_BANDWIDTH,
    NUM_BLOCKS,
    PAUSE,
    ImbalanceExplorer,
    imbalance_explorer,
)
from course_lib.pipeline import gpipe, one_f_one_b, simulate
from course_lib.pipeline.imbalance import (
    bottleneck_stage,
    break_even_steps,
    busiest_stage,
    gpipe_makespan,
    makespan_lower_bound,
    repartition_cost,
    slowest_stage_makespan,
    stage_forward_backward,
)
from course_lib.pipeline.partition import even_blocks, gpt_spec

SPEC = gpt_spec(num_blocks=NUM_BLOCKS)
EVEN = even_blocks(SPEC, 4)


@pytest.fixture(scope="module")
def explorer() -> ImbalanceExplorer:
    return imbalance_explorer()


def _set(explorer, **values):
    for name, value in values.items():
        explorer.controls[name].value = value


def test_defaults_are_the_even_split(explorer):
    assert list(explorer.controls) == ["schedule", "num_microbatches", "cut_1", "cut_2", "cut_3"]
    assert tuple(explorer.controls[c].value for c in ("cut_1", "cut_2", "cut_3")) == EVEN[1:-1]
    assert explorer.last_metrics["move cost"] == 0.0
    assert "this is the even split" in explorer.metrics.value


@pytest.mark.parametrize("schedule", ["1F1B", "GPipe"])
@pytest.mark.parametrize("m, cuts", [(8, (6, 9, 12)), (3, (4, 8, 13)), (16, (5, 10, 14))])
def test_metrics_are_the_models_numbers(explorer, schedule, m, cuts):
    """Every number in last_metrics is the model's: simulated step, closed forms and bound of the
    partition's stage costs, bottleneck/busiest of the simulated run, and the move's cost,
    gain and break-even from the even split."""
    _set(explorer, schedule=schedule, num_microbatches=m)
    _set(explorer, cut_1=cuts[0], cut_2=cuts[1], cut_3=cuts[2])
    bounds = (0, *cuts, SPEC.num_layers)
    f, b = stage_forward_backward(SPEC, bounds, LINK_BANDWIDTH)
    generator = {"GPipe": gpipe, "1F1B": one_f_one_b}[schedule]
    run = simulate(generator(4, m), f, b)
    base = simulate(generator(4, m), *stage_forward_backward(SPEC, EVEN, LINK_BANDWIDTH))
    got = explorer.last_metrics
    assert got["simulated step"] == pytest.approx(run.makespan)
    assert got["average-stage estimate"] == pytest.approx((m + 3) * np.mean(f + b))
    assert got["slowest-stage shortcut"] == pytest.approx(slowest_stage_makespan(f, b, m))
    assert got["GPipe formula"] == pytest.approx(gpipe_makespan(f, b, m))
    assert got["lower bound"] == pytest.approx(makespan_lower_bound(f, b, m))
    assert got["lower bound"] <= got["simulated step"] * (1 + 1e-12)
    if schedule == "GPipe":
        assert got["GPipe formula"] == pytest.approx(got["simulated step"])
    assert got["bottleneck stage"] == bottleneck_stage(run)
    assert got["busiest stage"] == busiest_stage(run)
    cost = repartition_cost(SPEC, EVEN, bounds, LINK_BANDWIDTH, pause=PAUSE)
    assert got["move cost"] == pytest.approx(cost.total)
    assert got["gain per step"] == pytest.approx(base.makespan - run.makespan)
    assert got["break-even steps"] == break_even_steps(cost.total, base.makespan, run.makespan)
    assert f"bottleneck stage {bottleneck_stage(run)}" in explorer.figure.axes[0].get_title("left")


def test_cuts_stay_increasing_and_redraw_once(explorer):
    """Dragging a cut past its neighbour pushes the neighbour along, in one redraw."""
    _set(explorer, cut_1=3, cut_2=8, cut_3=12)
    calls = []
    original = explorer.update
    explorer.update = lambda: calls.append(1) or original()
    try:
        explorer.controls["cut_1"].value = 12
    finally:
        del explorer.update
    assert len(calls) == 1
    cuts = [explorer.controls[c].value for c in ("cut_1", "cut_2", "cut_3")]
    assert cuts == [12, 13, 14]
    explorer.controls["cut_3"].value = 2
    cuts = [explorer.controls[c].value for c in ("cut_1", "cut_2", "cut_3")]
    assert cuts == [1, 2, 3]


def test_every_control_changes_the_image(explorer):
    _set(explorer, schedule="1F1B", num_microbatches=8, cut_1=5, cut_2=9, cut_3=12)
    for name, value in [("schedule", "GPipe"), ("num_microbatches", 12), ("cut_2", 10)]:
        image = bytes(explorer.image.value)
        _set(explorer, **{name: value})
        assert bytes(explorer.image.value).startswith(b"\x89PNG")
        assert bytes(explorer.image.value) != image
        assert math.isfinite(explorer.last_update_ms)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"schedule": "zb"}, "schedule must be"),
        ({"num_microbatches": 0}, "num_microbatches"),
        ({"num_microbatches": 2.0}, "num_microbatches"),
        ({"cuts": (5, 5, 9)}, "cuts must be three increasing"),
        ({"cuts": (5, 9, 17)}, "cuts must be three increasing"),
        ({"cuts": (5, 9)}, "cuts must be three increasing"),
    ],
)
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        imbalance_explorer(**kwargs)
