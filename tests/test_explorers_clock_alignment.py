"""Tests for course_lib.explorers.clock_alignment_explorer (cost02's explorer)."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.colors import to_rgba

from course_lib.clocks import offset_bounds, order_certainty, simulate_messages
from course_lib.explorers.clock_alignment import (
    BOUND_COLOURS,
    ClockAlignmentExplorer,
    clock_alignment_explorer,
)

OFFSET = 1.44e-3


@pytest.fixture(scope="module")
def explorer() -> ClockAlignmentExplorer:
    return clock_alignment_explorer()


def _set(explorer: ClockAlignmentExplorer, **values: object) -> None:
    for name, value in values.items():
        explorer.controls[name].value = value


def _messages(explorer, n, min_delay_us, jitter_us, drift_ppm):
    return simulate_messages(
        n,
        offset=explorer.offset,
        drift_ppm=drift_ppm,
        min_delay=min_delay_us * 1e-6,
        mean_extra_delay=jitter_us * 1e-6,
        span=explorer.span,
        seed=explorer.seed,
    )


def test_controls_cover_the_required_ranges(explorer):
    """Messages 1..200 each way, delay floor 1..50 µs, jitter 0..200 µs, drift 0..50 ppm."""
    assert list(explorer.controls) == ["num_messages", "min_delay_us", "jitter_us", "drift_ppm"]
    n, floor, jitter, drift = explorer.controls.values()
    assert (n.min, n.max, floor.min, floor.max) == (1, 200, 1.0, 50.0)
    assert (jitter.min, jitter.max, drift.min, drift.max) == (0.0, 200.0, 0.0, 50.0)


@pytest.mark.parametrize(
    "control, value",
    [("num_messages", 40), ("min_delay_us", 12.0), ("jitter_us", 60.0), ("drift_ppm", 20.0)],
)
def test_every_control_changes_the_image_and_the_metrics(explorer, control, value):
    """Moving one control re-renders a different PNG and a different metrics table."""
    _set(explorer, num_messages=10, min_delay_us=5.0, jitter_us=20.0, drift_ppm=0.0)
    image, metrics = bytes(explorer.image.value), explorer.metrics.value
    assert image.startswith(b"\x89PNG")
    _set(explorer, **{control: value})
    assert bytes(explorer.image.value).startswith(b"\x89PNG")
    assert bytes(explorer.image.value) != image
    assert explorer.metrics.value != metrics


def test_blitting_leaves_no_trace_of_earlier_states(explorer):
    """A state rendered after visiting others (and another zoom level) gives the same pixels."""
    _set(explorer, num_messages=10, min_delay_us=5.0, jitter_us=20.0, drift_ppm=0.0)
    first = np.asarray(explorer._canvas.buffer_rgba()).copy()
    _set(explorer, num_messages=150, jitter_us=150.0, drift_ppm=35.0)
    _set(explorer, num_messages=10, jitter_us=20.0, drift_ppm=0.0)
    assert np.array_equal(np.asarray(explorer._canvas.buffer_rgba()), first)


@pytest.mark.parametrize(
    "n, floor, jitter, drift",
    [(1, 5.0, 20.0, 0.0), (10, 5.0, 20.0, 0.0), (200, 2.0, 5.0, 0.0), (50, 10.0, 0.0, 3.0)],
)
def test_interval_and_verdicts_match_course_lib_clocks(explorer, n, floor, jitter, drift):
    """The shown interval is offset_bounds of the same messages; the verdicts are order_certainty
    of the seven event pairs read on the two clocks."""
    _set(explorer, num_messages=n, min_delay_us=floor, jitter_us=jitter, drift_ppm=drift)
    a_to_b, b_to_a = _messages(explorer, n, floor, jitter, drift)
    iv = offset_bounds(a_to_b, b_to_a)
    assert explorer.last_metrics["interval"] == pytest.approx((iv.lower, iv.upper), abs=1e-15)
    assert explorer.last_metrics["width"] == pytest.approx(iv.width, abs=1e-15)
    t_b = explorer.EVENT_TIME_FRACTION * explorer.span
    gaps = np.array(explorer.GAPS_US) * 1e-6
    t_a = explorer.offset + (1 + drift * 1e-6) * (t_b + gaps)
    expected = order_certainty(t_a, t_b, iv)
    counts = explorer.last_metrics["verdict_counts"]
    for verdict in ("certain", "impossible", "undetermined"):
        assert counts[verdict] == int(np.sum(expected == verdict))


def test_bars_are_coloured_by_verdict(explorer):
    """Each bar of the right panel has the colour of its verdict."""
    _set(explorer, num_messages=10, min_delay_us=5.0, jitter_us=20.0, drift_ppm=0.0)
    m = explorer.model(10, 5.0, 20.0, 0.0)
    faces = explorer._bars.get_facecolors()
    assert len(faces) == len(explorer.GAPS_US)
    for face, verdict in zip(faces, m["verdicts"], strict=True):
        assert tuple(face[:3]) == pytest.approx(to_rgba(BOUND_COLOURS[verdict])[:3])


@pytest.mark.parametrize("n", [1, 3, 10, 60, 200])
@pytest.mark.parametrize("jitter", [0.0, 20.0, 200.0])
def test_without_drift_no_verdict_is_ever_wrong(explorer, n, jitter):
    """With constant clocks the causal interval holds the true offset, so a verdict of certain or
    impossible always agrees with the truth (it may only be undetermined)."""
    m = explorer.model(n, 5.0, jitter, 0.0)
    assert m["interval"].contains(explorer.offset)
    assert not m["wrong"].any()


def test_drift_gives_confident_wrong_verdicts_then_an_empty_interval(explorer):
    """20 ppm over 1 s with 10 messages: the constant-offset interval is narrow, misses the true
    offset at t = 0.9 s and two verdicts are wrong; at 30 ppm and 50 messages it is empty and
    no verdict is given; the drift fit through window midpoints is then close to the truth."""
    _set(explorer, num_messages=10, min_delay_us=5.0, jitter_us=20.0, drift_ppm=20.0)
    assert explorer.last_metrics["contains_true_offset_at_event"] is False
    assert explorer.last_metrics["wrong_verdicts"] == 2
    _set(explorer, num_messages=50, drift_ppm=30.0)
    assert explorer.last_metrics["interval"] is None
    assert sum(explorer.last_metrics["verdict_counts"].values()) == 0
    assert "empty" in explorer.metrics.value
    assert explorer.last_metrics["fitted_drift_ppm"] == pytest.approx(30.0, abs=3.0)


def test_the_drift_row_says_how_many_messages_each_window_has(explorer):
    """The table's fitted drift comes with the messages per window behind it: with 10 messages
    in five windows it is far off (2 each way per window), with 200 it is close."""
    _set(explorer, num_messages=10, min_delay_us=5.0, jitter_us=20.0, drift_ppm=0.0)
    assert "about 2 messages each way per window" in explorer.metrics.value
    assert abs(explorer.last_metrics["fitted_drift_ppm"]) > 5.0
    _set(explorer, num_messages=200)
    assert "about 40 messages each way per window" in explorer.metrics.value
    assert abs(explorer.last_metrics["fitted_drift_ppm"]) < 1.0


def test_more_messages_never_widen_the_interval(explorer):
    """The interval is an intersection: more messages (same seed stream) can only shrink it."""
    widths = []
    for n in (1, 2, 5, 20, 100, 200):
        a_to_b, b_to_a = _messages(explorer, n, 5.0, 20.0, 0.0)
        widths.append(explorer.model(n, 5.0, 20.0, 0.0)["interval"].width)
        assert widths[-1] == pytest.approx(offset_bounds(a_to_b, b_to_a).width)
    assert widths[-1] < widths[0]
    assert widths[-1] >= 2 * 5e-6


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_messages": 0}, "num_messages"),
        ({"num_messages": 2.5}, "num_messages"),
        ({"min_delay": 0.0}, "min_delay"),
        ({"jitter": 1e-3}, "jitter"),
        ({"drift_ppm": -1.0}, "drift_ppm"),
        ({"span": 0.0}, "span"),
    ],
)
def test_bad_arguments_raise(kwargs, match):
    """Out-of-range arguments raise a ValueError naming the argument."""
    with pytest.raises(ValueError, match=match):
        clock_alignment_explorer(**kwargs)
