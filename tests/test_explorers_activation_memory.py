"""Tests for course_lib.explorers.activation_memory_explorer (cost05's explorer): its numbers are
course_lib.memory's, every control redraws, and the axes are shared by the recomputation policies."""

from __future__ import annotations

import math

import numpy as np
import pytest

from course_lib.explorers.activation_memory import (
    SEQ_LEN_OPTIONS,
    ActivationMemoryExplorer,
    _nice_ceiling,
    activation_memory_explorer,
)
from course_lib.memory import (
    STEP_CATEGORIES,
    activation_bytes_per_layer,
    live_bytes_by_category,
    peak,
    training_step_events,
)


@pytest.fixture(scope="module")
def explorer() -> ActivationMemoryExplorer:
    return activation_memory_explorer()


def _set(explorer: ActivationMemoryExplorer, **values: object) -> None:
    for name, value in values.items():
        explorer.controls[name].value = value


def test_controls_cover_the_required_ranges(explorer):
    """Sequence length from SEQ_LEN_OPTIONS, micro-batch 1..16, three recomputation policies."""
    assert list(explorer.controls) == ["seq_len", "micro_batch", "recompute"]
    s, b, r = explorer.controls.values()
    assert tuple(s.options) == SEQ_LEN_OPTIONS and (b.min, b.max) == (1, 16)
    assert list(r.options) == ["none", "selective", "full"]


@pytest.mark.parametrize(
    "control, value", [("seq_len", 512), ("micro_batch", 7), ("recompute", "selective")]
)
def test_every_control_changes_the_image_and_the_metrics(explorer, control, value):
    """Moving one control re-renders a different PNG and a different metrics table."""
    _set(explorer, seq_len=1024, micro_batch=4, recompute="none")
    image, metrics = bytes(explorer.image.value), explorer.metrics.value
    assert image.startswith(b"\x89PNG")
    _set(explorer, **{control: value})
    assert bytes(explorer.image.value).startswith(b"\x89PNG")
    assert bytes(explorer.image.value) != image
    assert explorer.metrics.value != metrics
    assert math.isfinite(explorer.last_update_ms) and explorer.last_update_ms > 0


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("s, b", [(128, 1), (256, 1), (1024, 4), (2048, 3)])
def test_metrics_are_course_lib_memory_values(explorer, s, b, recompute):
    """Peak, its time, the bytes per category at the peak and the sum of allocations equal
    memory.peak / live_bytes_by_category on the same events; the per-layer saved activations in
    the timeline equal activation_bytes_per_layer (Korthikanti et al. 2022, Table 2)."""
    _set(explorer, seq_len=s, micro_batch=b, recompute=recompute)
    got = explorer.last_metrics
    ev = training_step_events(seq_len=s, micro_batch=b, recompute=recompute)
    p = peak(ev)
    assert got["peak_bytes"] == p.bytes and got["peak_time"] == p.time
    times, levels = live_bytes_by_category(ev)
    i = int(np.flatnonzero(times == p.time)[0])
    for category in STEP_CATEGORIES:
        expected = levels[category].iloc[i] if category in levels else 0.0
        assert got[f"peak_{category}_bytes"] == expected
    formula = activation_bytes_per_layer(s, b, 768, 12, recompute=recompute)
    assert got["layer_activation_bytes"] == got["layer_activation_formula"] == formula
    assert got["sum_of_allocations"] == ev.loc[ev["kind"] == "alloc", "bytes"].sum()
    assert "(agree)" in explorer.metrics.value


def test_policies_share_both_axes_and_recomputation_costs_time(explorer):
    """At one shape the three policies draw on the same x and y limits, and the x axis holds the
    longest of their steps; full recomputation has the lowest peak and the longest step."""
    limits, peaks, steps = set(), [], []
    for recompute in ("none", "selective", "full"):
        _set(explorer, seq_len=1024, micro_batch=8, recompute=recompute)
        limits.add((explorer.axes[0].get_xlim(), explorer.axes[0].get_ylim()))
        peaks.append(explorer.last_metrics["peak_bytes"])
        steps.append(explorer.last_metrics["step_time"])
    assert len(limits) == 1
    (x_limits, _y_limits) = limits.pop()
    assert x_limits[1] >= max(steps)
    assert peaks[0] > peaks[1] > peaks[2] and steps[0] < steps[1] < steps[2]


@pytest.mark.parametrize("value", [1e-3, 0.7, 1.0, 1.01, 7.9, 8.0, 9.5, 12.3, 74.67, 99.9])
def test_nice_ceiling(value):
    """The smallest 1-1.25-1.5-2-2.5-3-4-5-6-8 step times a power of ten at or above value."""
    got = _nice_ceiling(value)
    power = 10.0 ** math.floor(math.log10(got))
    assert got >= value and round(got / power, 6) in (1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8)
    assert got / value < 1.26


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(seq_len=300), "seq_len"),
        (dict(micro_batch=0), "micro_batch"),
        (dict(micro_batch=17), "micro_batch"),
        (dict(recompute="half"), "recompute"),
        (dict(num_layers=0), "num_layers"),
        (dict(device_bytes=-1.0), "device_bytes"),
    ],
)
def test_bad_arguments_raise(kwargs, match):
    """Out-of-range controls and shapes are ValueErrors naming the argument."""
    with pytest.raises(ValueError, match=match):
        activation_memory_explorer(**kwargs)


def test_the_sweep_is_course_lib_memorys_so_forbid_reaches_it(explorer):
    """The explorer's levels come from course_lib.memory's private sweep: an exercise that
    disables live_bytes_by_category (and the private helpers it calls) disables the explorer's
    peak as well, so it cannot answer the peak-live exercise (cost05 review, finding 1)."""
    import course_lib.memory as memory
    from course_lib.checks import DelegationError, forbid

    explorer._cache.clear()
    with forbid((memory, "live_bytes_by_category"), exercise="Exercise 1"):
        with pytest.raises(DelegationError, match="live_bytes_by_category"):
            explorer.model(512, 13, "none")
    assert explorer.model(512, 13, "none")["peak_bytes"] > 0
