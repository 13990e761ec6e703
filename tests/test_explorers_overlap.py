"""Tests for course_lib.explorers.overlap_explorer (cost03's explorer)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from course_lib.explorers.overlap import (
    BUCKET_MIB_OPTIONS,
    MIB,
    OverlapExplorer,
    overlap_explorer,
)
from course_lib.overlap import (
    bucket_step_graph,
    bucketed_allreduce_timeline,
    exposed_on_critical_path,
    intersection,
    subtract,
    transformer_grad_tensors,
)

W, G = transformer_grad_tensors()
OPT = 7 * G.sum() / 1.5e12


@pytest.fixture(scope="module")
def explorer() -> OverlapExplorer:
    return overlap_explorer()


def _set(explorer: OverlapExplorer, **values: object) -> None:
    for name, value in values.items():
        explorer.controls[name].value = value


def _reference(bucket_mib, bandwidth_gbs, contention, comm_contention):
    return bucketed_allreduce_timeline(
        W,
        G,
        bucket_mib * MIB,
        bandwidth_gbs * 1e9,
        50e-6,
        contention,
        OPT,
        first_bucket_bytes=MIB,  # DDP's first bucket, the explorer's default
        comm_contention=comm_contention,
    )


def _cell(html: str, label: str) -> str:
    """Second column of the metrics row whose first column starts with label."""
    row = re.search(rf"<td[^>]*>{re.escape(label)}[^<]*</td><td[^>]*>(.*?)</td>", html)
    assert row, f"no metrics row {label!r}"
    return re.sub("<[^>]+>", "", row.group(1))


def _ms(text: str) -> float:
    return float(re.search(r"(-?[\d.]+) ms", text).group(1)) * 1e-3


def _boxes(collection) -> np.ndarray:
    """[start, end) of the rectangles of a PolyCollection."""
    rows = [[p.vertices[:, 0].min(), p.vertices[:, 0].max()] for p in collection.get_paths()]
    return np.array(rows, dtype=float).reshape(-1, 2)


def test_controls_cover_the_required_ranges(explorer):
    """Bucket cap (MiB, DDP's 25 among the options), bandwidth 4-50 GB/s, c and c′ in 0-1.5."""
    assert list(explorer.controls) == [
        "bucket_mib",
        "bandwidth_gbs",
        "contention",
        "comm_contention",
    ]
    assert tuple(explorer.controls["bucket_mib"].options) == BUCKET_MIB_OPTIONS
    assert 25 in BUCKET_MIB_OPTIONS
    bw = explorer.controls["bandwidth_gbs"]
    assert (bw.min, bw.max) == (4.0, 50.0)
    for name in ("contention", "comm_contention"):
        c = explorer.controls[name]
        assert (c.min, c.max) == (0.0, 1.5)


@pytest.mark.parametrize(
    "control, value",
    [("bucket_mib", 200), ("bandwidth_gbs", 30.0), ("contention", 0.6), ("comm_contention", 0.5)],
)
def test_every_control_changes_the_image_and_the_metrics(explorer, control, value):
    """Moving one control re-renders a different PNG and a different metrics table."""
    _set(explorer, bucket_mib=25, bandwidth_gbs=12.0, contention=0.2, comm_contention=0.0)
    image, metrics = bytes(explorer.image.value), explorer.metrics.value
    assert image.startswith(b"\x89PNG")
    _set(explorer, **{control: value})
    assert bytes(explorer.image.value).startswith(b"\x89PNG")
    assert bytes(explorer.image.value) != image
    assert explorer.metrics.value != metrics
    assert math.isfinite(explorer.last_update_ms) and explorer.last_update_ms > 0


@pytest.mark.parametrize(
    "state",
    [
        dict(bucket_mib=25, bandwidth_gbs=12.0, contention=0.2, comm_contention=0.0),
        dict(bucket_mib=1, bandwidth_gbs=50.0, contention=0.0, comm_contention=0.0),
        dict(bucket_mib=1600, bandwidth_gbs=4.0, contention=1.5, comm_contention=1.5),
        dict(bucket_mib=5, bandwidth_gbs=20.0, contention=1.2, comm_contention=1.0),
    ],
)
def test_figure_and_metrics_show_the_model(explorer, state):
    """The bars are the model's intervals, the sweep is the model at every cap, and the metrics are
    the model's step time, serial step, overlap ratio, exposed and critical-path communication."""
    _set(explorer, **state)
    tl = _reference(**state)
    np.testing.assert_allclose(_boxes(explorer._compute), tl.compute, atol=1e-12)
    np.testing.assert_allclose(_boxes(explorer._comm), tl.comm, atol=1e-12)
    np.testing.assert_allclose(
        _boxes(explorer._exposed), subtract(tl.comm, tl.compute).reshape(-1, 2), atol=1e-12
    )
    np.testing.assert_allclose(
        _boxes(explorer._shade), intersection(tl.compute, tl.comm).reshape(-1, 2), atol=1e-12
    )
    assert explorer._step_line.get_xdata()[0] == pytest.approx(tl.step_time)
    others = {k: v for k, v in state.items() if k != "bucket_mib"}
    steps = [_reference(cap, **others).step_time for cap in BUCKET_MIB_OPTIONS]
    np.testing.assert_allclose(explorer._sweep_line.get_ydata(), steps)

    html = explorer.metrics.value
    assert _ms(_cell(html, "step time")) == pytest.approx(tl.step_time, abs=6e-6)
    assert _ms(_cell(html, "no overlap")) == pytest.approx(tl.serial_step_time, abs=6e-6)
    ratio = float(_cell(html, "overlap ratio").rstrip("%")) / 100
    assert ratio == pytest.approx(tl.overlap_ratio, abs=6e-4)
    assert _ms(_cell(html, "non-overlapped comm")) == pytest.approx(tl.exposed_comm, abs=6e-6)
    critical = exposed_on_critical_path(bucket_step_graph(tl))
    assert _ms(_cell(html, "comm on the critical path")) == pytest.approx(critical, abs=6e-6)
    loses = state["contention"] * state["comm_contention"] > 1
    assert ("overlapping loses" in html) == loses
    if tl.overlap_ratio > 0:
        assert (tl.step_time > tl.serial_step_time) == loses
    else:  # one bucket: nothing overlaps, so overlapping neither wins nor loses
        assert tl.step_time == pytest.approx(tl.serial_step_time)


def test_bucket_slider_reuses_the_sweep(explorer):
    """Moving only the bucket slider does not recompute the sweep (it is cached by bandwidth and
    contention), and the shown timeline is the sweep's entry for that cap."""
    _set(explorer, bucket_mib=25, bandwidth_gbs=15.0, contention=0.3, comm_contention=0.1)
    sweep = explorer.sweep(15.0, 0.3, 0.1)
    _set(explorer, bucket_mib=100)
    assert explorer.sweep(15.0, 0.3, 0.1) is sweep
    np.testing.assert_array_equal(_boxes(explorer._comm), sweep[BUCKET_MIB_OPTIONS.index(100)].comm)


def test_first_bucket_is_ddps_1_mib_unless_told_otherwise():
    """By default the first bucket holds 1 MiB's worth (one weight matrix here); with None it
    takes the slider's cap like every other bucket."""
    default = overlap_explorer().model(25, 12.0, 0.0, 0.0)
    plain = overlap_explorer(first_bucket_bytes=None).model(25, 12.0, 0.0, 0.0)
    assert default.buckets[0] == (95,)
    assert len(plain.buckets[0]) > 1
    assert (
        default.buckets
        == bucketed_allreduce_timeline(W, G, 25 * MIB, 12e9, first_bucket_bytes=MIB).buckets
    )


def test_custom_model_and_bad_arguments():
    """A model of one's own is accepted; bad arguments are ValueErrors naming the argument."""
    e = overlap_explorer([1e-3] * 4, [8 * MIB] * 4, latency=0.0, optimizer_time=1e-3)
    assert len(e.sweep(12.0, 0.2, 0.0)) == len(BUCKET_MIB_OPTIONS)
    for kwargs, match in (
        (dict(layer_backward_times=[1e-3]), "both"),
        (dict(layer_backward_times=[1e-3, 1e-3], layer_grad_bytes=[1.0]), "differ in length"),
        (dict(layer_backward_times=[1e-3], layer_grad_bytes=[0.0]), "nothing to all-reduce"),
        (dict(bucket_mib=3), "bucket_mib"),
        (dict(bandwidth_gbs=100.0), "bandwidth_gbs"),
        (dict(contention=2.0), "contention"),
        (dict(comm_contention=-0.1), "comm_contention"),
        (dict(latency=-1.0), "latency"),
        (dict(first_bucket_bytes=0.0), "first_bucket_bytes"),
    ):
        with pytest.raises(ValueError, match=match):
            overlap_explorer(**kwargs)


def test_cached_sweep_axis_draws_the_same_pixels():
    """The sweep panel's y axis comes from a cache of rendered regions on a revisit; the frame is
    pixel for pixel the one a fresh explorer draws for the same state."""
    state = dict(bucket_mib=50, bandwidth_gbs=20.0, contention=0.4, comm_contention=0.3)
    fresh = overlap_explorer(**state)
    revisit = overlap_explorer()
    _set(revisit, **state)
    _set(revisit, bandwidth_gbs=30.0)
    _set(revisit, bandwidth_gbs=20.0)  # same limits as before: the cached region is used
    assert revisit.axes[1].get_ylim() in revisit._axis_regions
    a = np.asarray(fresh._canvas.buffer_rgba())
    b = np.asarray(revisit._canvas.buffer_rgba())
    np.testing.assert_array_equal(a, b)
