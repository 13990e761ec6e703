"""Tests for course_lib.explorers.fill_drain_explorer (pipe02's explorer)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from matplotlib.colors import to_rgb

from course_lib.explorers.fill_drain import FillDrainExplorer, fill_drain_explorer
from course_lib.figures.pipeline import IDLE_COLOUR, SCHEDULE_COLOURS
from course_lib.pipeline import (
    fill_drain_idle_fraction,
    fill_drain_makespan,
    fill_drain_overhead,
    gpipe,
    one_f_one_b,
    simulate,
)

T_F, T_B = 1e-3, 2e-3
METRICS = (
    "makespan",
    "elapsed idle fraction",
    "overhead vs ideal compute",
    "peak stashed microbatches, stage 0",
)


@pytest.fixture(scope="module")
def explorer() -> FillDrainExplorer:
    return fill_drain_explorer()


def _set(explorer: FillDrainExplorer, **values: object) -> None:
    for name, value in values.items():
        explorer.controls[name].value = value


def test_controls_cover_the_required_ranges(explorer):
    """p in 1..16, m in 1..64, latency in ms from 0 to 2·t_f, and a GPipe/1F1B toggle."""
    p, m, latency, schedule = (explorer.controls[k] for k in explorer.controls)
    assert list(explorer.controls) == ["num_stages", "num_microbatches", "latency_ms", "schedule"]
    assert (p.min, p.max, m.min, m.max) == (1, 16, 1, 64)
    assert (latency.min, latency.max) == (0.0, pytest.approx(2 * T_F * 1e3))
    assert list(schedule.options) == ["GPipe", "1F1B"]


@pytest.mark.parametrize(
    "control, value",
    [("num_microbatches", 12), ("num_stages", 6), ("latency_ms", 0.5), ("schedule", "1F1B")],
)
def test_every_control_changes_the_image_and_the_metrics(explorer, control, value):
    """Moving one control re-renders a different PNG and a different metrics table."""
    _set(explorer, num_stages=4, num_microbatches=8, latency_ms=0.0, schedule="GPipe")
    image, metrics = bytes(explorer.image.value), explorer.metrics.value
    assert image.startswith(b"\x89PNG")
    _set(explorer, **{control: value})
    assert bytes(explorer.image.value).startswith(b"\x89PNG")
    assert bytes(explorer.image.value) != image
    assert explorer.metrics.value != metrics
    assert math.isfinite(explorer.last_update_ms) and explorer.last_update_ms > 0


@pytest.mark.parametrize("p, m", [(1, 1), (1, 7), (4, 8), (6, 12), (8, 64), (16, 3), (16, 64)])
@pytest.mark.parametrize("schedule", ["GPipe", "1F1B"])
def test_metrics_at_zero_latency_equal_closed_forms_and_simulator(explorer, p, m, schedule):
    """At δ = 0 both schedules meet (m+p−1)(t_f+t_b), (p−1)/(m+p−1), (p−1)/m; peak in flight on
    stage 0 is m (GPipe) or min(m, p) (1F1B) — and the simulator column is simulate()'s value."""
    _set(explorer, num_stages=p, num_microbatches=m, latency_ms=0.0, schedule=schedule)
    metrics = explorer.last_metrics
    assert list(metrics) == list(METRICS)
    run = simulate((gpipe if schedule == "GPipe" else one_f_one_b)(p, m), T_F, T_B)
    expected_closed = (
        fill_drain_makespan(p, m, T_F, T_B),
        fill_drain_idle_fraction(p, m),
        fill_drain_overhead(p, m),
        m if schedule == "GPipe" else min(m, p),
    )
    simulated = (run.makespan, run.idle_fraction, run.overhead, run.peak_in_flight[0])
    for name, closed, sim in zip(METRICS, expected_closed, simulated, strict=True):
        assert metrics[name][0] == pytest.approx(closed, rel=1e-12, abs=1e-12), name
        assert metrics[name][1] == pytest.approx(sim, rel=1e-12, abs=1e-12), name
        assert metrics[name][0] == pytest.approx(metrics[name][1], rel=1e-9, abs=1e-12), name
    assert "<b>no</b>" not in explorer.metrics.value
    assert f"{fill_drain_makespan(p, m, T_F, T_B) * 1e3:.2f} ms" in explorer.metrics.value


@pytest.mark.parametrize("p, m, latency_ms", [(4, 8, 0.1), (8, 32, 0.25), (16, 64, 2.0)])
def test_gpipe_with_latency_meets_the_latency_closed_form(explorer, p, m, latency_ms):
    """GPipe with a per-hop latency δ: makespan (m+p−1)(t_f+t_b) + 2(p−1)δ, idle and overhead
    derived from it, all equal to the simulator's; the table shows no disagreement."""
    _set(explorer, num_stages=p, num_microbatches=m, latency_ms=latency_ms, schedule="GPipe")
    delta = latency_ms * 1e-3
    makespan = fill_drain_makespan(p, m, T_F, T_B, delta)
    ideal = m * (T_F + T_B)
    run = simulate(gpipe(p, m), T_F, T_B, p2p_latency=delta)
    metrics = explorer.last_metrics
    assert metrics["makespan"] == pytest.approx((makespan, run.makespan), rel=1e-12)
    assert metrics["elapsed idle fraction"] == pytest.approx(
        (1 - ideal / makespan, run.idle_fraction), rel=1e-9
    )
    assert metrics["overhead vs ideal compute"] == pytest.approx(
        (makespan / ideal - 1, run.overhead), rel=1e-9
    )
    assert "<b>no</b>" not in explorer.metrics.value


def test_one_f_one_b_with_latency_is_flagged_slower_than_the_formula(explorer):
    """1F1B with δ > 0 and m > 2 is slower than the fill-drain formula; the table says so."""
    _set(explorer, num_stages=4, num_microbatches=8, latency_ms=0.1, schedule="1F1B")
    closed, simulated = explorer.last_metrics["makespan"]
    assert simulated > closed
    assert "<b>no</b>" in explorer.metrics.value
    assert "1F1B with δ &gt; 0 takes" in explorer.metrics.value


def test_grid_raster_colours_what_each_rank_runs(explorer):
    """The raster of GPipe p=4, m=8 (makespan 33 ms) shows rank 0 forward at 0.5 ms, rank 3 idle at
    0.5 ms (fill) and backward at 12 ms, rank 0 idle at 12 ms (between its F and B), white gaps."""
    run = simulate(gpipe(4, 8), T_F, T_B)
    width = 3300  # 0.01 ms per column
    image = explorer.grid_raster(run, width)
    rows = FillDrainExplorer.ROWS_PER_RANK
    assert image.shape == (4 * rows, width, 3) and image.dtype == np.uint8

    def colour(rank: int, t_ms: float) -> tuple[float, ...]:
        pixel = image[rank * rows + rows // 2, int(t_ms / 33.0 * width)]
        return tuple(np.round(pixel / 255, 2))

    def rgb(name: str) -> tuple[float, ...]:
        return tuple(np.round(to_rgb(name), 2))

    assert colour(0, 0.5) == rgb(SCHEDULE_COLOURS["F"])
    assert colour(3, 0.5) == rgb(IDLE_COLOUR)
    assert colour(3, 12.0) == rgb(SCHEDULE_COLOURS["B"])
    assert colour(0, 12.0) == rgb(IDLE_COLOUR)
    assert colour(0, 32.5) == rgb(SCHEDULE_COLOURS["B"])
    assert (image[0] == 255).all() and (image[rows - 1] == 255).all()  # gap rows around rank 0
    busy = np.isin(image[rows // 2 :: rows, :, 0], [round(255 * to_rgb(SCHEDULE_COLOURS["F"])[0])])
    assert busy.sum(axis=1) == pytest.approx([8 * 100] * 4, abs=8 * 2)  # 8 forwards of 1 ms


def test_labels_where_they_fit_none_when_crowded(explorer):
    """p=4, m=8: one label group per microbatch; p=16, m=64: no labels (they would not fit)."""
    _set(explorer, num_stages=4, num_microbatches=8, latency_ms=0.0, schedule="GPipe")
    assert len(explorer._labels) == 8
    assert sum(len(group.get_offsets()) for group in explorer._labels) == 2 * 4 * 8
    _set(explorer, num_stages=16, num_microbatches=64)
    assert explorer._labels == []


def test_title_names_schedule_and_idle_fraction(explorer):
    """The title above the figure names the schedule, p, m and the simulated idle fraction."""
    _set(explorer, num_stages=6, num_microbatches=12, latency_ms=0.0, schedule="GPipe")
    title = "GPipe: 6 stages, 12 microbatches — idle 29.4% of rank-time"
    assert explorer.title == title
    assert explorer.metrics.value.startswith(f"<b>{title}</b>")


@pytest.mark.parametrize("p, m, schedule", [(1, 1, "GPipe"), (4, 8, "1F1B"), (16, 64, "GPipe")])
def test_grid_pixels_in_the_png_are_the_raster(explorer, p, m, schedule):
    """The PNG decodes to the figure size, and its grid region holds exactly grid_raster's
    pixels for the current run (written straight into the buffer, no resampling)."""
    import io

    from PIL import Image

    _set(explorer, num_stages=p, num_microbatches=m, latency_ms=0.25, schedule=schedule)
    image = np.asarray(Image.open(io.BytesIO(bytes(explorer.image.value))).convert("RGB"))
    assert image.shape == (400, 800, 3)
    left, right, top, bottom = explorer._grid_px
    gen = gpipe if schedule == "GPipe" else one_f_one_b
    run = simulate(gen(p, m), T_F, T_B, p2p_latency=0.25e-3)
    raster = explorer.grid_raster(run, right - left, bottom - top)
    region = image[top:bottom, left:right]
    if explorer._labels:  # microbatch numbers are drawn over the boxes: compare the rest
        same = (region == raster).all(axis=2)
        assert same.mean() > 0.95
    else:
        np.testing.assert_array_equal(region, raster)


def test_png_is_a_valid_rgb_png(explorer):
    """The hand-written encoder produces a PNG that PIL decodes to the canvas pixels."""
    import io

    from PIL import Image

    _set(explorer, num_stages=5, num_microbatches=9, latency_ms=0.0, schedule="GPipe")
    decoded = Image.open(io.BytesIO(explorer.png()))
    assert decoded.mode == "RGB" and decoded.size == (800, 400)
    canvas = np.asarray(explorer._canvas.buffer_rgba())[:, :, :3]
    np.testing.assert_array_equal(np.asarray(decoded), canvas)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_stages": 17}, "1..16"),
        ({"num_microbatches": 65}, "1..64"),
        ({"num_stages": 0}, "num_stages"),
        ({"schedule": "ZB-H1"}, "schedule"),
        ({"p2p_latency": 3e-3}, "p2p_latency"),
        ({"forward_time": 0.0}, "forward_time"),
        ({"backward_time": -1.0}, "backward_time"),
    ],
)
def test_bad_arguments_raise_value_errors_naming_them(kwargs, message):
    """Out-of-range or unknown arguments are rejected with a ValueError naming the argument."""
    with pytest.raises(ValueError, match=message):
        fill_drain_explorer(**kwargs)
