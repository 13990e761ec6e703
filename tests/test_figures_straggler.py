"""Tests for course_lib.figures.straggler (cost06): what is drawn is the model's numbers."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

from course_lib.figures.straggler import (
    barrier_waits,
    expected_max_curve,
    extrapolation_curves,
    slow_step_curves,
)
from course_lib.straggler import (
    barrier_times,
    expected_max_monte_carlo,
    expected_max_normal,
    prob_slow_step,
    prob_slow_step_hosts,
    synthetic_completion,
)

JOB = synthetic_completion(10, 4, mean=0.1, rank_std=0.005, seed=3)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _line(ax, gid):
    lines = [line for line in ax.get_lines() if line.get_gid() == gid]
    assert len(lines) == 1, f"expected one line with gid {gid!r}, got {len(lines)}"
    return np.asarray(lines[0].get_xdata(), float), np.asarray(lines[0].get_ydata(), float)


def test_barrier_waits_draws_work_waits_and_barriers_step_after_step():
    """Work bars are the completion times (ms); each wait ends at its step's barrier; the next
    step starts at the previous barrier; the dashed lines are the cumulative barriers."""
    steps = (0, 3, 5)
    ax = barrier_waits(JOB, steps=steps)
    work = [p for p in ax.patches if p.get_gid() == "work"]
    wait = [p for p in ax.patches if p.get_gid() == "wait"]
    assert len(work) == len(wait) == 3 * 4
    barrier = barrier_times(JOB)
    start = 0.0
    for k, s in enumerate(steps):
        for r in range(4):
            w, h = work[4 * k + r], wait[4 * k + r]
            assert w.get_x() == pytest.approx(start)
            assert w.get_width() == pytest.approx(JOB[s, r] * 1e3)
            assert h.get_x() + h.get_width() == pytest.approx(start + barrier[s] * 1e3)
        start += barrier[s] * 1e3
    lines = [line.get_xdata()[0] for line in ax.get_lines() if line.get_gid() == "barrier"]
    np.testing.assert_allclose(lines, np.cumsum(barrier[list(steps)]) * 1e3)


def test_barrier_waits_rejects_a_step_outside_the_matrix():
    with pytest.raises(ValueError, match="steps: step 10"):
        barrier_waits(JOB, steps=(10,))


def test_slow_step_curves_are_one_minus_one_minus_p_to_the_n():
    ax = slow_step_curves(p_values=(0.001, 0.01), max_ranks=4096)
    for p in (0.001, 0.01):
        n, y = _line(ax, f"p={p:g}")
        assert n[0] == 1 and n[-1] == 4096
        np.testing.assert_allclose(y, [prob_slow_step(p, int(k)) for k in n])
    marked = [line for line in ax.get_lines() if line.get_marker() == "o"]
    assert marked[0].get_ydata()[0] == pytest.approx(0.634, abs=5e-4)


def test_expected_max_curve_is_the_integral_and_the_points_the_estimates():
    mc = {
        n: expected_max_monte_carlo(n, lambda r, s: r.standard_normal(s), num_trials=500, seed=n)
        for n in (8, 64)
    }
    ax = expected_max_curve(max_ranks=1024, monte_carlo=mc)
    n, y = _line(ax, "integral")
    np.testing.assert_allclose(y, [expected_max_normal(int(k)) for k in n])
    x_mc, y_mc = _line(ax, "monte_carlo")
    np.testing.assert_array_equal(x_mc, [8, 64])
    np.testing.assert_allclose(y_mc, [mc[8].mean, mc[64].mean])
    labels = {t.get_text() for t in ax.texts}
    assert {"n = 8: 1.4236", "n = 100: 2.5076", "n = 1024: 3.2482"} <= labels
    for k in (8, 100, 1024):  # each label sits at a marker on the curve at its n
        x_k, y_k = _line(ax, f"marked n={k}")
        assert x_k[0] == k and y_k[0] == pytest.approx(expected_max_normal(k))
        (text,) = [t for t in ax.texts if t.get_text().startswith(f"n = {k}:")]
        assert text.xy == pytest.approx((k, expected_max_normal(k)))


def test_extrapolation_curves_share_the_per_rank_rate():
    ax = extrapolation_curves(1e-4, 4e-4, 8, max_ranks=4096, measured_ranks=64)
    n, iid = _line(ax, "iid")
    n2, host = _line(ax, "host")
    np.testing.assert_array_equal(n, n2)
    assert (n % 8 == 0).all() and n[-1] == 4096
    marginal = 1 - (1 - 4e-4) * (1 - 1e-4)
    np.testing.assert_allclose(iid, [prob_slow_step(marginal, int(k)) for k in n])
    np.testing.assert_allclose(host, [prob_slow_step_hosts(1e-4, 4e-4, int(k), 8) for k in n])
    assert (host <= iid + 1e-15).all()  # sharing a host makes slow steps rarer
