"""Tests for course_lib.clocks: offset intervals from message causality, ordering certainty,
interval-valued differences and drift fits (cost02)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
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
    simulate_messages,
)
from course_lib.trace import data_path
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
    """lower = θ - min delay(A->B), upper = θ + min delay(B->A): the width is the sum of the two
    smallest one-way delays (the fastest message each way), whatever the send times."""
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


# --- simulated message exchanges (cost02's explorer and exercises) ------------------------------


@given(
    st.integers(1, 60),
    st.floats(-1.0, 1.0),
    st.floats(-50.0, 50.0),
    st.floats(1e-7, 1e-3),
    st.floats(0.0, 1e-3),
    st.integers(0, 2**32 - 1),
)
def test_simulated_messages_obey_causality_at_the_true_offset(n, offset, drift, dmin, extra, seed):
    """Every simulated message satisfies the exact causal bound at its own true send time:
    S_A − R_B < θ(s) and R_A − S_B > θ(s), θ(s) = offset + drift·1e-6·s — and without drift the
    interval from offset_bounds contains the offset, its width at least 2·min_delay."""
    a_to_b, b_to_a = simulate_messages(
        n, offset=offset, drift_ppm=drift, min_delay=dmin, mean_extra_delay=extra, seed=seed
    )
    assert a_to_b.shape == b_to_a.shape == (n, 2)
    rate = 1 + drift * 1e-6
    s_ab = (a_to_b[:, 0] - offset) / rate  # true send time of A -> B messages
    s_ba = b_to_a[:, 0]
    delay_ab = a_to_b[:, 1] - s_ab
    delay_ba = (b_to_a[:, 1] - offset) / rate - s_ba
    assert np.all(delay_ab >= dmin * (1 - 1e-6)) and np.all(delay_ba >= dmin * (1 - 1e-6))
    assert np.all(np.diff(s_ab) >= 0) and np.all(np.diff(s_ba) >= 0)
    if drift == 0.0:
        iv = offset_bounds(a_to_b, b_to_a)
        assert iv.lower < offset < iv.upper
        assert iv.width >= 2 * dmin * (1 - 1e-6)


def test_simulated_messages_are_reproducible_and_tighten_with_more_messages():
    """Same seed, same arrays; with zero extra delay the width is exactly 2·min_delay."""
    a = simulate_messages(50, offset=1e-3, drift_ppm=5.0, seed=3)
    b = simulate_messages(50, offset=1e-3, drift_ppm=5.0, seed=3)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    iv = offset_bounds(*simulate_messages(5, offset=2e-3, min_delay=4e-6, mean_extra_delay=0.0))
    assert iv.width == pytest.approx(8e-6, abs=1e-12)
    assert iv.midpoint == pytest.approx(2e-3, abs=1e-12)


@given(st.integers(1, 40), st.integers(1, 40), st.integers(0, 2**32 - 1))
def test_more_simulated_messages_contain_the_fewer(n, extra, seed):
    """With one seed, the exchange of n + extra messages contains every message of the exchange of
    n (rows as sets), so its offset interval is nested inside the smaller exchange's."""
    small = simulate_messages(n, offset=1e-3, drift_ppm=0.0, seed=seed)
    large = simulate_messages(n + extra, offset=1e-3, drift_ppm=0.0, seed=seed)
    for few, many in zip(small, large, strict=True):
        assert {tuple(r) for r in few.tolist()} <= {tuple(r) for r in many.tolist()}
    iv_small, iv_large = offset_bounds(*small), offset_bounds(*large)
    assert iv_small.lower <= iv_large.lower and iv_large.upper <= iv_small.upper


def test_asymmetric_jitter_changes_only_the_b_to_a_delays():
    """mean_extra_delay_ba sets the B -> A extra delay: left out, it equals mean_extra_delay (the
    same messages as before the argument existed); given, the A -> B messages stay the same and
    the B -> A ones take longer by the ratio of the means."""
    same = simulate_messages(200, offset=1e-3, mean_extra_delay=20e-6, seed=5)
    explicit = simulate_messages(
        200, offset=1e-3, mean_extra_delay=20e-6, mean_extra_delay_ba=20e-6, seed=5
    )
    slow = simulate_messages(
        200, offset=1e-3, min_delay=3e-6, mean_extra_delay=20e-6, mean_extra_delay_ba=60e-6, seed=5
    )
    fast = simulate_messages(200, offset=1e-3, min_delay=3e-6, mean_extra_delay=20e-6, seed=5)
    for a, b in zip(same, explicit, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(slow[0], fast[0])
    extra_slow = (slow[1][:, 1] - 1e-3) - slow[1][:, 0] - 3e-6
    extra_fast = (fast[1][:, 1] - 1e-3) - fast[1][:, 0] - 3e-6
    np.testing.assert_allclose(extra_slow, 3.0 * extra_fast, rtol=1e-6, atol=1e-12)


def test_drift_makes_a_constant_offset_inconsistent():
    """20 ppm over 10 s moves θ by 200 µs, far more than the ~10 µs the fastest messages leave:
    no single offset fits every message, and offset_bounds says so."""
    msgs = simulate_messages(100, offset=0.0, drift_ppm=20.0, span=10.0, mean_extra_delay=1e-6)
    with pytest.raises(ValueError, match="inconsistent messages"):
        offset_bounds(*msgs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_messages": 0}, "num_messages"),
        ({"num_messages": 2.0}, "num_messages"),
        ({"min_delay": 0.0}, "min_delay"),
        ({"mean_extra_delay": -1e-6}, "mean_extra_delay"),
        ({"mean_extra_delay_ba": -1e-6}, "mean_extra_delay_ba"),
        ({"mean_extra_delay_ba": float("nan")}, "mean_extra_delay_ba"),
        ({"span": float("nan")}, "span"),
        ({"offset": float("inf")}, "offset"),
    ],
)
def test_simulate_messages_rejects_bad_input(kwargs, match):
    """Bad arguments raise a ValueError naming the argument."""
    args = {"num_messages": 3, "offset": 0.0, **kwargs}
    n = args.pop("num_messages")
    with pytest.raises(ValueError, match=match):
        simulate_messages(n, **args)


def test_shipped_clock_sync_file_is_reproducible(tmp_path):
    """course_lib/data/clock_sync_1h.csv is exactly what scripts/make_clock_sync.py writes, and
    each window's messages are consistent (a non-empty offset interval) while the whole hour's
    are not (the clocks drift)."""
    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "clock_sync_1h.csv"
    subprocess.run(
        [sys.executable, str(root / "scripts" / "make_clock_sync.py"), str(out)],
        check=True,
        cwd=root,
        capture_output=True,
    )
    shipped = data_path("clock_sync_1h.csv")
    assert out.read_bytes() == shipped.read_bytes()
    table = pd.read_csv(shipped)
    assert list(table.columns) == ["window", "direction", "send_ts", "recv_ts"]
    pairs = {
        d: table[table["direction"] == d][["send_ts", "recv_ts"]].to_numpy()
        for d in ("A->B", "B->A")
    }
    for _, g in table.groupby("window"):
        ab = g[g["direction"] == "A->B"][["send_ts", "recv_ts"]].to_numpy()
        ba = g[g["direction"] == "B->A"][["send_ts", "recv_ts"]].to_numpy()
        assert offset_bounds(ab, ba).width < 50e-6  # tens of µs, while the hour drifts ms
    with pytest.raises(ValueError, match="inconsistent"):
        offset_bounds(pairs["A->B"], pairs["B->A"])
    # The paths are asymmetric (mean extra delay 20 µs A -> B, 60 µs B -> A): an average over all
    # messages' bounds sits far above each window's midpoint, so only the tightest bounds help.
    excess = []
    for _, g in table.groupby("window"):
        ab = g[g["direction"] == "A->B"][["send_ts", "recv_ts"]].to_numpy()
        ba = g[g["direction"] == "B->A"][["send_ts", "recv_ts"]].to_numpy()
        mean_bound = 0.5 * ((ab[:, 0] - ab[:, 1]).mean() + (ba[:, 1] - ba[:, 0]).mean())
        excess.append(mean_bound - offset_bounds(ab, ba).midpoint)
    assert np.mean(excess) > 10e-6
