"""Tests for course_lib.explorers.remat_explorer (pipe05's explorer): its plans are
course_lib.pipeline.stash's, its choice is the exact search's, and every control redraws."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from course_lib.explorers.remat import SEQ_LEN_OPTIONS, RematExplorer, remat_explorer
from course_lib.figures.remat import GIB
from course_lib.pipeline.stash import (
    best_recompute_plan,
    layer_forward_times,
    layer_options,
    plan_cost,
)


@pytest.fixture(scope="module")
def explorer() -> RematExplorer:
    return remat_explorer()


def _set(explorer: RematExplorer, **values: object) -> None:
    for name, value in values.items():
        explorer.controls[name].value = value


def test_controls_cover_the_required_ranges(explorer):
    assert list(explorer.controls) == ["seq_len", "in_flight", "budget_gib"]
    s, k, budget = explorer.controls.values()
    assert tuple(s.options) == SEQ_LEN_OPTIONS
    assert (k.min, k.max) == (1, 8)
    assert (budget.min, budget.max) == (0.0, 80.0)


@pytest.mark.parametrize(
    "control, value", [("seq_len", 8192), ("in_flight", 2), ("budget_gib", 12.0)]
)
def test_every_control_changes_the_image_and_the_metrics(explorer, control, value):
    _set(explorer, seq_len=2048, in_flight=4, budget_gib=6.0)
    image, metrics = bytes(explorer.image.value), explorer.metrics.value
    assert image.startswith(b"\x89PNG")
    _set(explorer, **{control: value})
    assert bytes(explorer.image.value) != image
    assert explorer.metrics.value != metrics
    assert math.isfinite(explorer.last_update_ms) and explorer.last_update_ms > 0


def test_lesson_setting_gives_section_4s_plan(explorer):
    """s = 2048, 4 in flight, 6 GiB: 5 selective + 3 full layers, 5.5 GiB, +14.1 %."""
    _set(explorer, seq_len=2048, in_flight=4, budget_gib=6.0)
    assert explorer.last_plan == (0, 5, 3)
    assert explorer.last_metrics["bytes"] == pytest.approx(5.5 * GIB)
    assert explorer.last_metrics["extra_fraction"] == pytest.approx(0.1410256, rel=1e-6)


@pytest.mark.parametrize("s", [1024, 4096, 16384])
@pytest.mark.parametrize("k, budget", [(1, 3.0), (4, 20.0), (8, 50.0), (2, 0.5)])
def test_choice_is_the_brute_force_optimum(explorer, s, k, budget):
    """The chosen plan's bytes fit and its time is the least over all 3^8 per-layer plans (brute
    force over the 45 multisets of options suffices: the layers are identical)."""
    _set(explorer, seq_len=s, in_flight=k, budget_gib=budget)
    t_f, t_core = layer_forward_times(s, 1, 4096, 1.0)
    options = layer_options(s, 1, 4096, 32, t_f, t_core)
    best = None
    for plan in itertools.combinations_with_replacement(range(3), 8):
        b, t = plan_cost([options] * 8, plan)
        if k * b <= budget * GIB and (best is None or t < best):
            best = t
    if best is None:
        assert explorer.last_plan is None
        assert "No plan fits" in explorer.metrics.value
        with pytest.raises(ValueError):
            best_recompute_plan([options] * 8, budget * GIB / k)
        return
    assert explorer.last_metrics["bytes"] <= budget * GIB
    assert explorer.last_metrics["extra_fraction"] == pytest.approx(best / (8 * 3 * t_f))
    assert sum(explorer.last_plan) == 8


def test_uniform_full_is_a_third_and_selective_matches_the_flop_model(explorer):
    """All full recomputation adds 1/3 of the step (t_b = 2 t_f); all selective adds
    4bs²h / (3(24bsh² + 4bs²h)) = s / (3(6h + s))."""
    for s in SEQ_LEN_OPTIONS:
        _set(explorer, seq_len=s, in_flight=1, budget_gib=80.0)
        html = explorer.metrics.value
        selective = s / (3 * (6 * 4096 + s))
        assert f"{selective:.1%} / 33.3%" in html


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"seq_len": 3000}, ValueError, "seq_len"),
        ({"in_flight": 9}, ValueError, "in_flight"),
        ({"in_flight": 0}, ValueError, "in_flight"),
        ({"budget_gib": -1.0}, ValueError, "budget_gib"),
        ({"budget_gib": "6"}, TypeError, "budget_gib"),
        ({"num_layers": 17}, ValueError, "num_layers"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        remat_explorer(**kwargs)


def test_png_is_rgb_of_the_canvas(explorer):
    """The PNG encodes the Agg canvas: its header's width and height are the canvas's."""
    png = explorer.png()
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == explorer._canvas.get_width_height()
    assert np.asarray(explorer._canvas.buffer_rgba()).shape[:2] == (height, width)


@pytest.mark.parametrize("s, k, budget", [(2048, 4, 6.0), (16384, 8, 20.0), (1024, 1, 0.5)])
def test_a_cached_background_gives_the_image_of_a_full_redraw(explorer, s, k, budget):
    """A budget drag restores the cached (s, k) background and draws only the budget line and
    the star: the image is pixel for pixel the one a full redraw of that setting gives."""
    _set(explorer, seq_len=s, in_flight=k, budget_gib=budget + 1.0)
    _set(explorer, budget_gib=budget)  # drawn over the cached background
    blitted = np.asarray(explorer._canvas.buffer_rgba()).copy()
    explorer._backgrounds.clear()
    explorer.update()  # the same setting, the figure redrawn in full
    full = np.asarray(explorer._canvas.buffer_rgba())
    assert np.array_equal(blitted, full)
