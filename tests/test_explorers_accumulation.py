"""Tests for course_lib.explorers.accumulation_explorer (pipe06's explorer): its best m is the brute
force over the power-of-two sizes, the simulator agrees with the formula where it runs, every
control redraws, and bad arguments are named."""

from __future__ import annotations

import math

import numpy as np
import pytest

from course_lib.explorers.accumulation import (
    BATCH_OPTIONS,
    MAX_SIMULATED_ACTIONS,
    AccumulationExplorer,
    accumulation_explorer,
)


@pytest.fixture(scope="module")
def explorer() -> AccumulationExplorer:
    return accumulation_explorer()


def _set(explorer: AccumulationExplorer, **values: object) -> None:
    for name, value in values.items():
        explorer.controls[name].value = value


def test_controls_cover_the_required_ranges(explorer):
    assert list(explorer.controls) == ["num_stages", "batch_size", "fixed_time_ms"]
    p, b, t0 = explorer.controls.values()
    assert (p.min, p.max) == (1, 32)
    assert tuple(b.options) == BATCH_OPTIONS
    assert (t0.min, t0.max) == (0.0, 5.0)


@pytest.mark.parametrize(
    "control, value", [("num_stages", 16), ("batch_size", 256), ("fixed_time_ms", 3.0)]
)
def test_every_control_changes_the_image_and_the_metrics(explorer, control, value):
    _set(explorer, num_stages=8, batch_size=64, fixed_time_ms=1.5)
    image, metrics = bytes(explorer.image.value), explorer.metrics.value
    assert image.startswith(b"\x89PNG")
    _set(explorer, **{control: value})
    assert bytes(explorer.image.value) != image
    assert explorer.metrics.value != metrics
    assert math.isfinite(explorer.last_update_ms) and explorer.last_update_ms > 0


def test_lesson_setting_gives_section_4s_numbers(explorer):
    """p = 8, B = 64, t0 = 1.5 ms, t1 = 0.5 ms: best m = 16 at 80.5 ms, m* = 12.2, 142 ms for
    64 microbatches, 268 ms for one; the simulator gives 80.5 ms too."""
    _set(explorer, num_stages=8, batch_size=64, fixed_time_ms=1.5)
    r = explorer.last_metrics
    assert r["best_m"] == 16
    assert r["step_time"] == pytest.approx(80.5e-3)
    assert r["simulated"] == pytest.approx(80.5e-3)
    assert r["continuous_m"] == pytest.approx(math.sqrt(64 * 7 / 3))
    assert r["max_m_step_time"] == pytest.approx(142e-3)
    assert r["one_microbatch_step_time"] == pytest.approx(268e-3)
    assert "16 microbatches of 4 sequences" in explorer.metrics.value


@pytest.mark.parametrize("p", [1, 4, 32])
@pytest.mark.parametrize("batch", [8, 128, 1024])
@pytest.mark.parametrize("t0_ms", [0.0, 0.7, 5.0])
def test_best_m_is_the_brute_force_minimum(explorer, p, batch, t0_ms):
    _set(explorer, num_stages=p, batch_size=batch, fixed_time_ms=t0_ms)
    t0, t1 = t0_ms * 1e-3, 0.5e-3
    steps = {
        m: (m + p - 1) * (t0 + batch // m * t1) for m in (2**k for k in range(11)) if m <= batch
    }
    best = min(steps, key=lambda m: (steps[m], m))
    r = explorer.last_metrics
    assert r["best_m"] == best
    assert r["step_time"] == pytest.approx(steps[best])
    if 2 * p * best <= MAX_SIMULATED_ACTIONS:
        assert r["simulated"] == pytest.approx(steps[best], rel=1e-9)
    else:
        assert np.isnan(r["simulated"])
        assert "not run" in explorer.metrics.value


def test_no_fixed_cost_wants_the_most_microbatches(explorer):
    _set(explorer, num_stages=8, batch_size=64, fixed_time_ms=0.0)
    assert explorer.last_metrics["best_m"] == 64
    assert "∞" in explorer.metrics.value
    assert "64 microbatches of 1 sequence<" in explorer.metrics.value


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"num_stages": 33}, ValueError, "num_stages"),
        ({"num_stages": 0}, ValueError, "num_stages"),
        ({"batch_size": 100}, ValueError, "batch_size"),
        ({"fixed_time": 6e-3}, ValueError, "fixed_time"),
        ({"fixed_time": -1.0}, ValueError, "fixed_time"),
        ({"sample_time": 0.0}, ValueError, "sample_time"),
        ({"sample_time": "1"}, TypeError, "sample_time"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        accumulation_explorer(**kwargs)


def test_png_is_the_two_canvases_side_by_side(explorer):
    """The PNG is the bars' canvas and the efficiency canvas, of one height, side by side."""
    png = explorer.png()
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    (w1, h1), (w2, h2) = (
        explorer._canvas.get_width_height(),
        explorer._eff_canvas.get_width_height(),
    )
    assert (width, height) == (w1 + w2, h1) and h1 == h2


def test_the_efficiency_panel_follows_the_fixed_cost(explorer):
    """The blitted line is E(b) = b·t1/(t0 + b·t1) over 1..1024; the star sits at the best b."""
    _set(explorer, num_stages=8, batch_size=64, fixed_time_ms=2.0)
    line = explorer._eff["efficiency"]
    sizes = 2.0 ** np.arange(11)
    assert np.allclose(line.get_xdata(), np.arange(11))
    assert np.allclose(line.get_ydata(), sizes * 0.5 / (2.0 + sizes * 0.5))
    ((x, _),) = explorer._eff["best_size"].get_offsets()
    assert 2**x == 64 / explorer.last_metrics["best_m"]
