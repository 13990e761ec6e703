"""Tests for course_lib.clocks: offset intervals from message causality, ordering certainty,
interval-valued differences and drift fits (cost02)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from course_lib.clocks import (
    DriftFit,
    OffsetInterval,
    fit_drift,
    interval_difference,
    offset_bounds,
    order_certainty,
)
from tests.strategies import message_exchanges

# --- offset bounds ------------------------------------------------------------------------------


@given(message_exchanges())
def test_bounds_contain_true_offset(ex):
    """With strictly positive delays the true θ lies strictly inside (lower, upper)."""
    theta, a_to_b, b_to_a, _, _ = ex
    iv = offset_bounds(a_to_b, b_to_a)
    assert iv.lower < theta < iv.upper
    assert iv.contains(theta)


@given(message_exchanges())
def test_width_is_sum_of_smallest_one_way_delays(ex):
    """lower = θ - min delay(A->B), upper = θ + min delay(B->A): the width is the smallest
    round trip, whatever the send times."""
    theta, a_to_b, b_to_a, d_ab, d_ba = ex
    iv = offset_bounds(a_to_b, b_to_a)
    assert iv.lower == pytest.approx(theta - min(d_ab), abs=1e-9)
    assert iv.upper == pytest.approx(theta + min(d_ba), abs=1e-9)
    assert iv.width == pytest.approx(min(d_ab) + min(d_ba), abs=1e-9)


@given(message_exchanges(max_messages=10))
def test_bounds_tighten_with_more_messages(ex):
    """Adding messages never widens the interval: lower never falls, upper never rises."""
    _, a_to_b, b_to_a, _, _ = ex
    prev = None
    for k in range(1, max(len(a_to_b), len(b_to_a)) + 1):
        iv = offset_bounds(a_to_b[: max(k, 1)], b_to_a[: max(k, 1)])
        if prev is not None:
            assert iv.lower >= prev.lower
            assert iv.upper <= prev.upper
            assert iv.width <= prev.width
        prev = iv


def test_bounds_by_hand():
    """Two messages each way: lower = max(S_A - R_B), upper = min(R_A - S_B)."""
    iv = offset_bounds([[10.0, 9.5], [20.0, 19.6]], [[5.0, 5.7], [8.0, 8.9]])
    assert iv.lower == pytest.approx(0.5)
    assert iv.upper == pytest.approx(0.7)
    assert iv.midpoint == pytest.approx(0.6)
    assert iv.width == pytest.approx(0.2)


def test_one_direction_gives_half_bounded_interval():
    """Messages one way only bound θ on one side; the midpoint is then undefined."""
    iv = offset_bounds([[10.0, 9.5]], [])
    assert iv.lower == pytest.approx(0.5) and iv.upper == math.inf
    with pytest.raises(ValueError, match="unbounded"):
        _ = iv.midpoint
    iv = offset_bounds(np.empty((0, 2)), [[5.0, 5.7]])
    assert iv.lower == -math.inf and iv.upper == pytest.approx(0.7)


def test_inconsistent_messages_name_the_conflict():
    """lower > upper raises a ValueError naming both conflicting messages."""
    with pytest.raises(ValueError, match=r"a_to_b\[1\].*b_to_a\[0\]"):
        offset_bounds([[10.0, 9.5], [20.0, 19.2]], [[5.0, 5.6]])


@pytest.mark.parametrize(
    "a_to_b, b_to_a, match",
    [
        ([], [], "at least one message"),
        ([[1.0, 2.0, 3.0]], [], r"shape \(N, 2\)"),
        ([[1.0, 2.0], [np.nan, 1.0]], [], r"a_to_b\[1\]"),
        ([[1.0, 2.0]], [[0.0, np.inf]], r"b_to_a\[0\]"),
    ],
)
def test_malformed_messages_raise(a_to_b, b_to_a, match):
    """Empty, mis-shaped and non-finite inputs are rejected with a message naming the problem."""
    with pytest.raises(ValueError, match=match):
        offset_bounds(a_to_b, b_to_a)


def test_offset_interval_validates():
    """An interval with lower > upper or NaN bounds cannot be built."""
    with pytest.raises(ValueError):
        OffsetInterval(1.0, 0.0)
    with pytest.raises(ValueError):
        OffsetInterval(math.nan, 1.0)


# --- ordering certainty -------------------------------------------------------------------------


def _brute_order(t_a: float, t_b: float, iv: OffsetInterval) -> str:
    """Classify "a before b" by trying θ on a fine grid strictly inside the interval."""
    u = np.concatenate(([1e-9, 1e-6], np.linspace(1e-3, 1 - 1e-3, 999), [1 - 1e-6, 1 - 1e-9]))
    thetas = iv.lower + (iv.upper - iv.lower) * u
    thetas = thetas[(thetas > iv.lower) & (thetas < iv.upper)]
    before = (t_a - thetas) < t_b
    return "certain" if before.all() else "impossible" if not before.any() else "undetermined"


@given(
    message_exchanges(max_messages=4),
    st.lists(
        st.one_of(st.sampled_from(["lower", "upper", "mid"]), st.floats(-600, 600)),
        min_size=1,
        max_size=8,
    ),
)
def test_order_certainty_matches_brute_force(ex, positions):
    """certain/impossible/undetermined agrees with trying every θ inside the interval,
    including events exactly at the interval's ends; arrays give the elementwise answers."""
    _, a_to_b, b_to_a, _, _ = ex
    iv = offset_bounds(a_to_b, b_to_a)
    t_b = 0.0
    t_as = []
    for p in positions:
        t_a = {"lower": iv.lower, "upper": iv.upper, "mid": iv.midpoint}.get(p, p)
        # a θ grid cannot resolve points within a hair of an end; exact ends are tested
        for end in (iv.lower, iv.upper):
            assume(t_a == end or abs(t_a - end) > 1e-3 * iv.width)
        t_as.append(t_a)
    scalar = [order_certainty(t_a, t_b, iv) for t_a in t_as]
    assert scalar == [_brute_order(t_a, t_b, iv) for t_a in t_as]
    vector = order_certainty(np.array(t_as), np.zeros(len(t_as)), iv)
    assert list(vector) == scalar


def test_order_certainty_by_hand():
    """θ in (0.5, 0.7): a at 10.4 (A) is certainly before b at 10.0 (B) only if 10.4 - θ < 10."""
    iv = OffsetInterval(0.5, 0.7)
    assert order_certainty(10.4, 10.0, iv) == "certain"  # 10.4 - θ < 9.9
    assert order_certainty(10.8, 10.0, iv) == "impossible"  # 10.8 - θ > 10.1
    assert order_certainty(10.6, 10.0, iv) == "undetermined"
    # naive subtraction (θ = 0) would call the first "after"
    assert 10.4 > 10.0


def test_point_interval_treats_simultaneous_as_not_before():
    """With an exactly known offset, simultaneous events are not "before"."""
    iv = OffsetInterval(0.0, 0.0)
    assert list(order_certainty([-1.0, 0.0, 1.0], [0.0, 0.0, 0.0], iv)) == [
        "certain",
        "impossible",
        "impossible",
    ]


# --- interval-valued differences -----------------------------------------------------------------


@given(message_exchanges(max_messages=4), st.floats(-1000, 1000), st.floats(-1000, 1000))
def test_interval_difference_contains_true_difference(ex, t_true_a, t_true_b):
    """For events at true times (B's timeline), the elapsed time lies within the bounds computed
    from their local timestamps, and the bounds' width equals the offset interval's."""
    theta, a_to_b, b_to_a, _, _ = ex
    iv = offset_bounds(a_to_b, b_to_a)
    t_a = t_true_a + theta  # read on A's clock
    d = interval_difference(t_a, t_true_b, iv)
    assert d.lower <= t_true_a - t_true_b + 1e-9
    assert t_true_a - t_true_b - 1e-9 <= d.upper
    assert d.width == pytest.approx(iv.width, abs=1e-9)


def test_interval_difference_vectorized():
    """Array inputs broadcast and give array bounds."""
    iv = OffsetInterval(0.5, 0.7)
    d = interval_difference([1.0, 2.0], 0.0, iv)
    np.testing.assert_allclose(d.lower, [0.3, 1.3])
    np.testing.assert_allclose(d.upper, [0.5, 1.5])
    np.testing.assert_allclose(d.midpoint, [0.4, 1.4])


# --- drift ----------------------------------------------------------------------------------------


@given(
    st.floats(-100.0, 100.0),
    st.floats(-200.0, 200.0),
    st.integers(2, 50),
    st.floats(1.0, 1000.0),
)
def test_drift_fit_recovers_exact_line(offset, drift_ppm, n, span):
    """Noise-free sync points on local = offset + (1 + ppm·1e-6)·reference are fitted exactly."""
    ref = np.linspace(0.0, span, n)
    local = offset + (1 + drift_ppm * 1e-6) * ref
    fit = fit_drift(local, ref)
    assert fit.offset == pytest.approx(offset, abs=1e-9)
    assert fit.drift_ppm == pytest.approx(drift_ppm, abs=1e-5)
    assert fit.residual < 1e-9
    np.testing.assert_allclose(fit.to_reference(local), ref, atol=1e-8)


def test_drift_fit_with_noise_is_close_and_reports_jitter():
    """With 1 µs jitter on 2000 sync points over 1000 s, offset and drift are recovered to
    well within the jitter, and the residual estimates the jitter."""
    rng = np.random.default_rng(7)
    ref = np.sort(rng.uniform(0, 1000, 2000))
    local = 0.3 + (1 + 25e-6) * ref + rng.normal(0, 1e-6, ref.size)
    fit = fit_drift(local, ref)
    assert fit.offset == pytest.approx(0.3, abs=2e-7)
    assert fit.drift_ppm == pytest.approx(25.0, abs=5e-4)
    assert fit.residual == pytest.approx(1e-6, rel=0.1)
    t = np.array([0.0, 500.0, 1000.0])
    np.testing.assert_allclose(fit.to_reference(fit.to_local(t)), t, atol=1e-9)


def test_drift_fit_errors():
    """Too few points, constant reference times, unequal lengths and NaN are rejected."""
    with pytest.raises(ValueError, match="at least 2"):
        fit_drift([1.0], [1.0])
    with pytest.raises(ValueError, match="all equal"):
        fit_drift([1.0, 2.0], [3.0, 3.0])
    with pytest.raises(ValueError, match="equal length"):
        fit_drift([1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(ValueError, match=r"local_times\[1\]"):
        fit_drift([1.0, np.nan], [1.0, 2.0])


def test_drift_fit_to_local_and_rate():
    """DriftFit maps both ways with rate 1 + ppm·1e-6."""
    fit = DriftFit(offset=2.0, drift_ppm=100.0, residual=0.0)
    assert fit.rate == pytest.approx(1.0001)
    assert fit.to_local(10.0) == pytest.approx(2.0 + 10.001)
    assert fit.to_reference(fit.to_local(10.0)) == pytest.approx(10.0)
